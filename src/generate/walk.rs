//! One stream's walk over its games (`Walk`): stored batches taken in
//! game order, the missing ones played, until the stopping rule is met or
//! the games run out; and what `prepare` asks of the store (`Mode`). Apart
//! because it is one stream's loop; the streams' turns are
//! [`super::streams`].

use anyhow::Result;
use std::collections::BTreeMap;

use crate::core::error::bad_input;
use crate::core::shard::Shard;
use crate::generate::cost::{MiningSwitches, StreamSample};

use super::config::Sections;
use super::play::Player;
use super::report::Stop;
use super::store::{Batch, Segment, check_batch, covering, next_stored_start};
use super::target::Counter;

/// What `prepare` does with the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `run`: play batches until the stopping rule or a budget.
    Run,
    /// `run --shard`: play this shard's slice of `max_games`.
    Shard(Shard),
    /// `merge`: play nothing; the shards' batches must be in the store.
    Merge,
    /// `run` on a finished release (without `--rewrite-release`): walk as
    /// `run` does but play nothing; a game no stored batch holds means the
    /// release would now come out differently, refused before any batch
    /// is played.
    Check,
}

/// One stream's games taken in order: stored batches reused, missing ones
/// played.
pub(super) struct Walk<'a> {
    pub(super) config: &'a Sections<'a>,
    pub(super) mode: Mode,
    pub(super) player: Player<'a>,
    pub(super) batches: BTreeMap<u64, Batch>,
    pub(super) counter: Counter<'a>,
    pub(super) segments: Vec<Segment>,
    pub(super) cpu_seconds: f64,
    /// What this process played itself (not taken from the store).
    pub(super) played: Played,
    /// The stream's profile (`None`: generation's own), for the progress.
    pub(super) profile: Option<String>,
    /// The first game the walk takes, the next, and the last it may take.
    pub(super) first: u64,
    pub(super) next: u64,
    pub(super) last: u64,
    /// The most games its next played batch may hold: what a CPU budget
    /// leaves it (`None`: `generate.batch_games`).
    pub(super) games_allowed: Option<u64>,
}

/// The batches a walk played in this process: for the progress lines'
/// rates (stored batches cost no time now).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Played {
    pub(super) games: u64,
    pub(super) cpu_seconds: f64,
    /// Whether the walk's last batch was played now.
    pub(super) last_batch: bool,
}

impl Walk<'_> {
    /// Takes the next batch's games; the stop once the stopping rule is met
    /// or the games run out.
    pub(super) fn step(&mut self) -> Result<Option<Stop>> {
        let shard = matches!(self.mode, Mode::Shard(_));
        let out_of_games = if shard {
            Stop::ShardSlice
        } else {
            Stop::MaxGames
        };
        if self.next > self.last {
            return Ok(Some(out_of_games));
        }
        let batch = self.batch_at(self.next, self.last)?;
        check_batch(&batch.dir)?;
        let segment = Segment {
            first: self.next,
            last: batch.last.min(self.last),
            batch,
        };
        self.cpu_seconds += segment.batch.cpu_seconds;
        self.next = segment.last + 1;
        if let Some(game) = self.counter.add_segment(&segment, !shard)? {
            self.segments.push(Segment {
                last: game,
                ..segment
            });
            return Ok(Some(Stop::QuotasMet));
        }
        self.segments.push(segment);
        // Out of games: said on the next turn, after the budget is checked
        // (a batch that spends the budget stops the run for that reason).
        Ok(None)
    }

    /// The stored batch holding game `next`, else a new batch from it (up
    /// to `batch_games`, `last` and the next stored batch).
    fn batch_at(&mut self, next: u64, last: u64) -> Result<Batch> {
        self.played.last_batch = false;
        if let Some(batch) = covering(&self.batches, next) {
            return Ok(batch);
        }
        if self.mode == Mode::Check {
            return Err(bad_input(format!(
                "a finished release never changes, but these settings would play game {next}, \
                 which no stored batch of {} holds (a larger `max_games`, `max_cpu_hours` or \
                 target than the release was made with); no game was played. Make a new \
                 release with `--release NEW`, or rerun with --rewrite-release to replace its \
                 puzzles",
                self.player.store.display()
            )));
        }
        if self.mode == Mode::Merge {
            return Err(bad_input(format!(
                "{}: game {next} is in no stored batch: run every shard (`run --shard I/N`) with this config before `merge`, on the output folder merge reads",
                self.player.store.display()
            )));
        }
        let size = (self.config.generate.batch_games.max(1))
            .min(self.games_allowed.unwrap_or(u64::MAX))
            .max(1);
        let end = (next + size - 1)
            .min(last)
            .min(next_stored_start(&self.batches, next).map_or(u64::MAX, |s| s - 1));
        let batch = self.player.play(next, end)?;
        self.batches.insert(batch.first, batch.clone());
        self.played.games += batch.last - batch.first + 1;
        self.played.cpu_seconds += batch.cpu_seconds;
        self.played.last_batch = true;
        Ok(batch)
    }
}

impl Walk<'_> {
    /// The stream's games so far as a cost sample: the games counted, the
    /// CPU they cost, and its cells.
    pub(super) fn sample(
        &self,
        profile: Option<String>,
        store: String,
        stop: Stop,
    ) -> StreamSample {
        // A segment may take part of a batch (a budget or the stopping
        // game inside it): its games' share of the batch's CPU.
        let counted_cpu_seconds = self
            .segments
            .iter()
            .map(|s| {
                let batch_games = (s.batch.last - s.batch.first + 1) as f64;
                s.batch.cpu_seconds * (s.last - s.first + 1) as f64 / batch_games
            })
            .sum();
        StreamSample {
            profile,
            store,
            games: self.segments.iter().map(|s| s.last - s.first + 1).sum(),
            counted_cpu_seconds,
            spent_cpu_seconds: self.cpu_seconds,
            met: stop == Stop::QuotasMet,
            cells: self.counter.cell_samples(),
            mining: {
                let mine = &self.player.settings.mine;
                MiningSwitches {
                    mates: mine.mates,
                    missed_only: mine.missed_only,
                    trivial_captures: mine.trivial_captures,
                    min_solver_moves: mine.min_solver_moves,
                }
            },
        }
    }
}

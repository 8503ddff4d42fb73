//! What a release (or shard) holds of the generated games (`Generated`):
//! each stream's games up to its stop, assembled from the store, and the
//! games, puzzles and verdicts the stages write from them. Apart because it
//! is what the rest of the pipeline sees of generation.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::generate::cost::{StreamSample, UnfilledCost};
use crate::stages::release::cells::{cell_label, first_of};
use crate::stages::verify::Verdict;

use super::chain::{MineStep, RateStep, SelfplayStep, VerifyStep};
use super::report::{
    GenerateReport, GenerateSummary, GenerationFingerprint, ProfileSummary, Stop,
    StreamFingerprint, StreamReport, TargetReport,
};
use super::store::Segment;
use super::target::{Counter, RowKey, Target, game_number, row_key};

/// One profile's games in a release (or shard): games `first..=last` of
/// its store.
#[derive(Clone, Debug)]
pub(super) struct StreamPart {
    /// The profile (`None`: generation's own).
    pub(super) profile: Option<String>,
    pub(super) store: PathBuf,
    pub(super) key: String,
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) stop: Stop,
    pub(super) segments: Vec<Segment>,
    pub(super) cpu_seconds: f64,
    /// Its cells as its games filled them, for the cost of the unfilled.
    pub(super) sample: StreamSample,
}

/// The generated games and puzzles a release (or shard) holds: for each
/// profile that plays for the target, games `first..=last` of its store,
/// and which of their puzzles are kept.
#[derive(Clone, Debug)]
pub struct Generated {
    streams: Vec<StreamPart>,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) stop: Stop,
    /// Row keys of the kept puzzles (after dedup and exclusion), by stream.
    kept: HashSet<(usize, RowKey)>,
    /// The funnel and the cells, for `generate.json` and the summary.
    pub(crate) report: GenerateReport,
    /// Engine CPU seconds of the batches the games come from, as recorded
    /// when they were played (kept out of every output file: it varies).
    pub(crate) cpu_seconds: f64,
    /// The run seed (the cost projection's draws).
    seed: u64,
    /// Wall seconds this process spent playing batches, by the stage whose
    /// work it was (`selfplay`, `mine`, `rate`, `verify`): the run's table
    /// shows them as those stages' times (never written to a file).
    pub(crate) seconds_by_stage: BTreeMap<&'static str, f64>,
}

/// The store files a stage assembles from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Part {
    Mined,
    Rated,
    Verified,
}

impl Part {
    fn file(self) -> &'static str {
        match self {
            Part::Mined => MineStep::IN_BATCH,
            Part::Rated => RateStep::IN_BATCH,
            Part::Verified => VerifyStep::IN_BATCH,
        }
    }
}

impl Generated {
    /// The streams' games taken together: every kept puzzle of every
    /// stream, deduplicated across streams in stream order, and the report.
    pub(super) fn assemble(
        target: &Target,
        seed: u64,
        first: u64,
        streams: Vec<StreamPart>,
        stream_reports: Vec<TargetReport>,
    ) -> Result<Generated> {
        let mut union = Counter::new(target, seed, 0);
        for (index, stream) in streams.iter().enumerate() {
            union.stream = index;
            for segment in &stream.segments {
                union.add_segment(segment, false)?;
            }
        }
        let stop = if streams.iter().all(|s| s.stop == Stop::QuotasMet) {
            Stop::QuotasMet
        } else {
            streams
                .iter()
                .map(|s| s.stop)
                .find(|s| *s != Stop::QuotasMet)
                .unwrap_or(Stop::QuotasMet)
        };
        let last = streams.iter().map(|s| s.last).max().unwrap_or(first - 1);
        let profiles =
            (streams.len() > 1 || streams.iter().any(|s| s.profile.is_some())).then(|| {
                streams
                    .iter()
                    .zip(stream_reports)
                    .map(|(stream, counts)| StreamReport {
                        counts,
                        profile: stream.profile.clone(),
                        store: stream.key.clone(),
                    })
                    .collect()
            });
        // The settings are the caller's to fill in (`prepare`).
        let report = GenerateReport {
            counts: union.report(stop, first, last),
            profiles,
            settings: Vec::new(),
        };
        Ok(Generated {
            first,
            last,
            stop,
            kept: union.kept,
            report,
            cpu_seconds: streams.iter().map(|s| s.cpu_seconds).sum(),
            seconds_by_stage: BTreeMap::new(),
            streams,
            seed,
        })
    }

    /// What the stages' fingerprints record of the generation: the store,
    /// games and stop of each stream (one stream: as it always was).
    pub(crate) fn fingerprint(&self) -> GenerationFingerprint<'_> {
        match self.streams.as_slice() {
            [one] if one.profile.is_none() => GenerationFingerprint::OneStream {
                store: &one.key,
                first_game: one.first,
                last_game: one.last,
                stop: one.stop,
                kept: self.kept.len(),
            },
            streams => GenerationFingerprint::Streams {
                store: self.store_keys(),
                streams: streams
                    .iter()
                    .map(|s| StreamFingerprint {
                        profile: &s.profile,
                        store: &s.key,
                        first_game: s.first,
                        last_game: s.last,
                        stop: s.stop,
                    })
                    .collect(),
                kept: self.kept.len(),
            },
        }
    }

    /// The `section` (`selfplay`, `mine`) of the settings the games were
    /// played with: one profile's, or a list with each profile's.
    pub(crate) fn played_settings(&self, section: &str) -> Value {
        let all: Vec<Value> = self
            .report
            .settings
            .iter()
            .map(|s| s[section].clone())
            .collect();
        match <[Value; 1]>::try_from(all) {
            Ok([one]) => one,
            Err(all) => json!(all),
        }
    }

    /// The report with the engine CPU the games cost, overall and per
    /// profile, for a command's summary (never for a file: it varies).
    pub(crate) fn summary(&self) -> GenerateSummary<'_> {
        let report = &self.report;
        // Each profile's CPU from its stream (in the same order); a
        // single-profile report has no `profiles` key, as the merged
        // release's generate.json has none.
        let profiles = report.profiles.as_ref().map(|profiles| {
            profiles
                .iter()
                .enumerate()
                .map(|(index, profile)| ProfileSummary {
                    report: profile,
                    engine_cpu_hours: self
                        .streams
                        .get(index)
                        .map(|stream| stream.cpu_seconds / 3600.0),
                })
                .collect()
        });
        GenerateSummary {
            counts: &report.counts,
            profiles,
            settings: &report.settings,
            engine_cpu_hours: self.cpu_seconds / 3600.0,
            cost_of_unfilled: self.cost_of_unfilled().map(|(_, cost)| cost),
        }
    }

    /// The streams' store keys, joined by `+`.
    fn store_keys(&self) -> String {
        self.streams
            .iter()
            .map(|s| s.key.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The segments of every stream, in stream order, with the stream's
    /// index.
    fn segments(&self) -> impl Iterator<Item = (usize, &Segment)> {
        self.streams
            .iter()
            .enumerate()
            .flat_map(|(index, s)| s.segments.iter().map(move |segment| (index, segment)))
    }

    /// The store files the release's games and puzzles come from. The
    /// games (`part` `None`) come with each batch's `batch.json`: it holds
    /// the sha256 of every file of its batch, so a stage that records it
    /// pins them all. A shard's self-play stage records it, and `merge`
    /// checks it before reading any batch: a batch file edited after the
    /// shard played it, with its new sha256 written into `batch.json`, is
    /// refused as an edit of `batch.json` itself.
    pub(crate) fn inputs(&self, part: Option<Part>) -> Vec<PathBuf> {
        self.segments()
            .flat_map(|(_, s)| match part {
                Some(part) => vec![s.batch.dir.join(part.file())],
                None => vec![
                    s.batch.dir.join(SelfplayStep::IN_BATCH),
                    s.batch.dir.join("batch.json"),
                ],
            })
            .collect()
    }

    /// The store folders, for the stage summaries.
    pub(crate) fn stores_display(&self) -> String {
        self.streams
            .iter()
            .map(|s| s.store.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Writes every stream's games `first..=last` as one PGN file; gives
    /// the number of games written.
    pub(crate) fn write_games(&self, output: &Path) -> Result<u64> {
        let mut text = String::new();
        let mut games = 0u64;
        for (_, segment) in self.segments() {
            let path = segment.batch.dir.join(SelfplayStep::IN_BATCH);
            let all = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            for game in crate::stages::selfplay::split_games(&all) {
                let round = game
                    .lines()
                    .find_map(|l| l.strip_prefix("[Round \""))
                    .and_then(|r| r.trim_end_matches("\"]").parse::<u64>().ok())
                    .ok_or_else(|| {
                        bad_input(format!("{}: a game without a Round", path.display()))
                    })?;
                if (segment.first..=segment.last).contains(&round) {
                    text.push_str(game);
                    games += 1;
                }
            }
        }
        write_atomic(output, text.as_bytes())?;
        Ok(games)
    }

    /// The kept puzzles of the games, from the store file `part`.
    pub(crate) fn puzzles(&self, part: Part) -> Result<Vec<Puzzle>> {
        let mut puzzles = Vec::new();
        for (stream, segment) in self.segments() {
            let dir = &segment.batch.dir;
            for puzzle in read_puzzles(&dir.join(part.file()))? {
                let game = game_number(&puzzle, dir)?;
                if (segment.first..=segment.last).contains(&game)
                    && self.kept.contains(&(stream, row_key(&puzzle)))
                {
                    puzzles.push(puzzle);
                }
            }
        }
        Ok(puzzles)
    }

    /// Writes the kept puzzles of `part`; `columns` are the extra columns
    /// (all of the puzzles' when `None`).
    pub(crate) fn write_puzzles(
        &self,
        part: Part,
        output: &Path,
        columns: Option<Vec<String>>,
    ) -> Result<u64> {
        let puzzles = self.puzzles(part)?;
        let columns = columns.unwrap_or_else(|| extra_columns_of(&puzzles));
        let mut writer = PuzzleWriter::create(output, &columns)?;
        for puzzle in &puzzles {
            writer.write(puzzle)?;
        }
        writer.finish()
    }

    /// The verdicts of the kept puzzles, in order, each numbered by its
    /// line in the assembled file (the header is line 1).
    pub(crate) fn verdicts(&self) -> Result<Vec<Verdict>> {
        let mut verdicts = Vec::new();
        for (stream, segment) in self.segments() {
            let dir = &segment.batch.dir;
            let rows = read_puzzles(&dir.join(Part::Rated.file()))?;
            let report = dir.join(VerifyStep::REPORT_IN_BATCH);
            let text = std::fs::read_to_string(&report)
                .with_context(|| format!("reading {}", report.display()))?;
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() != rows.len() {
                return Err(bad_input(format!(
                    "{}: {} verdicts for {} puzzles",
                    report.display(),
                    lines.len(),
                    rows.len()
                )));
            }
            for (puzzle, line) in rows.iter().zip(lines) {
                let game = game_number(puzzle, dir)?;
                if (segment.first..=segment.last).contains(&game)
                    && self.kept.contains(&(stream, row_key(puzzle)))
                {
                    let mut verdict: Verdict = serde_json::from_str(line)
                        .map_err(|e| bad_input(format!("{}: {e}", report.display())))?;
                    verdict.line = verdicts.len() as u64 + 2;
                    verdicts.push(verdict);
                }
            }
        }
        Ok(verdicts)
    }

    /// The human line of the run summary.
    pub(crate) fn human(&self) -> String {
        let report = &self.report.counts;
        let stop_name = |stop: Stop| {
            serde_json::to_value(stop)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let mut line = format!(
            "  generate: games {}-{} ({}), cells filled {}/{}, {} engine CPU-hours, store {}\n",
            self.first,
            self.last,
            stop_name(self.stop),
            report.cells_filled,
            report.cells,
            crate::generate::cost::short(self.cpu_seconds / 3600.0),
            self.stores_display()
        );
        if self.streams.len() > 1 {
            for stream in &self.streams {
                line.push_str(&format!(
                    "    profile {}: games {}-{} ({}), {} engine CPU-hours\n",
                    stream.profile.as_deref().unwrap_or("(generation's own)"),
                    stream.first,
                    stream.last,
                    stop_name(stream.stop),
                    crate::generate::cost::short(stream.cpu_seconds / 3600.0)
                ));
            }
        }
        if self.stop != Stop::QuotasMet && self.stop != Stop::ShardSlice {
            let labels: Vec<String> = report
                .unfilled
                .iter()
                .map(|cell| {
                    format!(
                        "unfilled {}: {} + {} of {} + {}",
                        cell_label(&cell.rating_bin, cell.length, cell.mate),
                        cell.train,
                        cell.test,
                        cell.wanted.train,
                        cell.wanted.test
                    )
                })
                .collect();
            for named in first_of(&labels, 20) {
                line.push_str(&format!("    {named}\n"));
            }
        }
        if let Some((text, _)) = self.cost_of_unfilled() {
            line.push_str(&text);
        }
        line
    }

    /// Whether a budget (`max_games`, `max_cpu_hours`) ended the games.
    pub(crate) fn stop_is_budget(&self) -> bool {
        matches!(self.stop, Stop::MaxGames | Stop::MaxCpuHours)
    }

    /// When a budget stopped the run with cells unfilled: what they would
    /// cost at the rates the games measured ([`crate::generate::cost`]).
    fn cost_of_unfilled(&self) -> Option<(String, UnfilledCost)> {
        let budget = match self.stop {
            Stop::MaxGames => crate::generate::cost::Budget::MaxGames,
            Stop::MaxCpuHours => crate::generate::cost::Budget::MaxCpuHours,
            Stop::QuotasMet | Stop::ShardSlice => return None,
        };
        let samples: Vec<StreamSample> = self.streams.iter().map(|s| s.sample.clone()).collect();
        Some(crate::generate::cost::unfilled(&samples, self.seed, budget))
    }
}

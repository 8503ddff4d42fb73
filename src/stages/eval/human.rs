//! The Maia-1 human-move nets in an eval: the probability of every legal
//! move of each solver position under the nets of the given ratings (read
//! from the on-disk cache where an earlier run stored them), and the move a
//! net plays from them: its most likely move, or a seeded draw at
//! temperature 1.
//!
//! A net sees the position with its history, as it was trained: the
//! puzzle's FEN, the opponent's first move, then the reference line up to
//! the solver's turn.
//!
//! Cache: `CACHE_DIR/maia/xx/<sha256>.json`, one file per position, named
//! by the sha256 of the nets (each file's rating and sha256, in order) and
//! the position (FEN and moves played). A damaged or mismatched file is a
//! miss, never an error: the nets are run again.

use anyhow::{Context, Result};
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use shakmaty::CastlingMode;
use shakmaty::uci::UciMove;
use std::path::{Path, PathBuf};

use super::task::PositionTask;
use crate::chess::line::ucis_text;
use crate::chess::record::Puzzle;
use crate::core::fileio::{sha256_bytes, write_atomic};
use crate::maia::{History, MaiaNets, NetFile, net_files};

/// Positions handed to the nets per call: the progress bar moves between
/// calls (the results do not depend on the grouping).
const CHUNK: usize = 64;

/// The move probabilities of one position under each net.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct PositionPolicy {
    /// The legal moves, UCI, in the order the nets' results give them.
    pub moves: Vec<String>,
    /// `probabilities[net][move]`, nets in the order of [`Policies::nets`].
    pub probabilities: Vec<Vec<f32>>,
}

impl PositionPolicy {
    /// The net's most likely move (the first of equals, in move order);
    /// `None` without a legal move.
    pub fn top_move(&self, net: usize) -> Option<&str> {
        let p = &self.probabilities[net];
        let mut best: Option<usize> = None;
        for (i, value) in p.iter().enumerate() {
            if best.is_none_or(|b| *value > p[b]) {
                best = Some(i);
            }
        }
        best.map(|i| self.moves[i].as_str())
    }

    /// A move drawn from the net's probabilities (temperature 1) with
    /// `rng`; `None` without a legal move.
    pub fn sampled_move(&self, net: usize, rng: &mut ChaCha8Rng) -> Option<&str> {
        let weights = WeightedIndex::new(&self.probabilities[net]).ok()?;
        Some(self.moves[weights.sample(rng)].as_str())
    }

    fn fits(&self, nets: usize) -> bool {
        self.probabilities.len() == nets
            && self
                .probabilities
                .iter()
                .all(|p| p.len() == self.moves.len())
    }
}

/// The nets' probabilities on every position of a run.
pub(crate) struct Policies {
    pub nets: Vec<NetFile>,
    /// One per task, in task order.
    pub positions: Vec<PositionPolicy>,
    /// How many came from the cache.
    pub cached: usize,
}

impl Policies {
    /// The index of the net of `rating`.
    pub fn net_of(&self, rating: u32) -> Option<usize> {
        self.nets.iter().position(|n| n.rating == rating)
    }
}

/// A cache entry: the policy with the position it is for.
#[derive(Serialize, Deserialize)]
struct CacheEntry {
    fen: String,
    played: Vec<String>,
    #[serde(flatten)]
    policy: PositionPolicy,
}

/// The history a net sees at `task`: the puzzle's FEN and the moves up to
/// the solver's turn (its FEN and moves as written in the puzzle).
fn played_before<'a>(puzzle: &'a Puzzle, task: &PositionTask) -> &'a [UciMove] {
    &puzzle.moves[..2 * task.move_index + 1]
}

/// The probabilities of every task's legal moves under the nets of
/// `ratings` in `dir`: from `cache_dir` where it holds them, else from the
/// nets (loaded only when some position is missing), run on `threads`
/// threads. The same bits whatever the thread count and the cache.
pub(crate) fn policies(
    dir: &Path,
    ratings: &[u32],
    puzzles: &[Puzzle],
    tasks: &[PositionTask],
    cache_dir: Option<&Path>,
    threads: usize,
) -> Result<Policies> {
    let nets = net_files(dir, ratings).context("eval.maia.models_dir")?;
    // The same pins `rate` holds its nets to: a swapped net would play
    // (and be cached as) another rating.
    crate::maia::check_pinned(dir, &nets)?;
    let nets_key: String = nets
        .iter()
        .map(|n| format!("{}:{}", n.rating, n.sha256))
        .collect::<Vec<_>>()
        .join(",");
    let (keys, mut positions) = cached_policies(&nets_key, nets.len(), puzzles, tasks, cache_dir);
    let cached = positions.iter().filter(|p| p.is_some()).count();
    let missing: Vec<usize> = (0..tasks.len())
        .filter(|&i| positions[i].is_none())
        .collect();
    if !missing.is_empty() {
        let loaded = MaiaNets::load_ratings(dir, ratings)?;
        let histories = missing
            .iter()
            .map(|&i| {
                let task = &tasks[i];
                let puzzle = &puzzles[task.puzzle_index];
                History::from_read_line(&puzzle.fen, played_before(puzzle, task))
                    .with_context(|| format!("puzzle {}", puzzle.id))
            })
            .collect::<Result<Vec<_>>>()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()?;
        let bar = crate::core::progress::items(missing.len() as u64, "maia");
        for (chunk, indices) in histories.chunks(CHUNK).zip(missing.chunks(CHUNK)) {
            let results = pool.install(|| loaded.evaluate(chunk));
            for (result, &i) in results.iter().zip(indices) {
                let policy = PositionPolicy {
                    moves: result
                        .moves()
                        .iter()
                        .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                        .collect(),
                    probabilities: (0..result.nets())
                        .map(|net| result.at_net(net).to_vec())
                        .collect(),
                };
                if let Some(path) = &keys[i] {
                    let puzzle = &puzzles[tasks[i].puzzle_index];
                    let played = played_before(puzzle, &tasks[i]);
                    cache_put(path, &puzzle.fen.to_string(), played, &policy)?;
                }
                positions[i] = Some(policy);
            }
            bar.inc(indices.len() as u64);
        }
        crate::core::progress::finish(&bar);
    }
    Ok(Policies {
        nets,
        positions: positions.into_iter().flatten().collect(),
        cached,
    })
}

/// Each task's cache file (none without a cache folder) and its policy
/// where the cache holds it for these nets (`nets_key`, `net_count` nets).
fn cached_policies(
    nets_key: &str,
    net_count: usize,
    puzzles: &[Puzzle],
    tasks: &[PositionTask],
    cache_dir: Option<&Path>,
) -> (Vec<Option<PathBuf>>, Vec<Option<PositionPolicy>>) {
    let mut keys = Vec::with_capacity(tasks.len());
    let mut positions = Vec::with_capacity(tasks.len());
    for task in tasks {
        let puzzle = &puzzles[task.puzzle_index];
        let fen = puzzle.fen.to_string();
        let played = played_before(puzzle, task);
        let key = sha256_bytes(
            format!("puzzleforge-maia|{nets_key}|{fen}|{}", ucis_text(played)).as_bytes(),
        );
        let path = cache_dir.map(|dir| cache_path(dir, &key));
        positions.push(
            path.as_deref()
                .and_then(|p| cache_get(p, &fen, played, net_count)),
        );
        keys.push(path);
    }
    (keys, positions)
}

fn cache_path(dir: &Path, key: &str) -> PathBuf {
    dir.join("maia").join(&key[..2]).join(format!("{key}.json"))
}

fn cache_get(path: &Path, fen: &str, played: &[UciMove], nets: usize) -> Option<PositionPolicy> {
    let text = std::fs::read_to_string(path).ok()?;
    let entry: CacheEntry = serde_json::from_str(&text).ok()?;
    let same_played = entry.played.len() == played.len()
        && entry
            .played
            .iter()
            .zip(played)
            .all(|(a, b)| *a == b.to_string());
    (entry.fen == fen && same_played && entry.policy.fits(nets)).then_some(entry.policy)
}

fn cache_put(path: &Path, fen: &str, played: &[UciMove], policy: &PositionPolicy) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating cache folder {}", dir.display()))?;
    }
    let entry = CacheEntry {
        fen: fen.to_string(),
        played: played.iter().map(UciMove::to_string).collect(),
        policy: policy.clone(),
    };
    write_atomic(path, serde_json::to_string(&entry)?.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::seed::{self, Domain, Key};

    fn policy() -> PositionPolicy {
        PositionPolicy {
            moves: vec!["a2a3".into(), "e2e4".into(), "d2d4".into()],
            probabilities: vec![vec![0.2, 0.4, 0.4], vec![0.0, 0.0, 1.0]],
        }
    }

    #[test]
    fn the_top_move_is_the_first_most_likely_and_draws_follow_the_probabilities() {
        let p = policy();
        assert_eq!(p.top_move(0), Some("e2e4"));
        assert_eq!(p.top_move(1), Some("d2d4"));
        let draw = |i| {
            let mut rng = seed::rng(3, Domain::EvalMaiaMove, Key::Pair(0, i));
            p.sampled_move(0, &mut rng).map(str::to_string)
        };
        let draws: Vec<_> = (0..400).map(draw).collect();
        assert_eq!(draws, (0..400).map(draw).collect::<Vec<_>>());
        let share = |m: &str| draws.iter().filter(|d| d.as_deref() == Some(m)).count();
        // 80, 160, 160 expected.
        assert!((50..110).contains(&share("a2a3")), "{}", share("a2a3"));
        assert!((120..200).contains(&share("e2e4")), "{}", share("e2e4"));
        let mut rng = seed::rng(3, Domain::EvalMaiaMove, Key::Pair(0, 0));
        assert_eq!(p.sampled_move(1, &mut rng), Some("d2d4"));
        let none = PositionPolicy {
            moves: Vec::new(),
            probabilities: vec![Vec::new()],
        };
        assert_eq!(none.top_move(0), None);
        assert_eq!(none.sampled_move(0, &mut rng), None);
    }

    #[test]
    fn a_damaged_or_foreign_cache_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path(), "abcdef");
        let played = [UciMove::from_ascii(b"e2e4").unwrap()];
        cache_put(&path, "fen", &played, &policy()).unwrap();
        assert_eq!(cache_get(&path, "fen", &played, 2), Some(policy()));
        assert_eq!(cache_get(&path, "other", &played, 2), None);
        assert_eq!(cache_get(&path, "fen", &played, 9), None);
        std::fs::write(&path, "{\"fen\": ").unwrap();
        assert_eq!(cache_get(&path, "fen", &played, 2), None);
    }
}

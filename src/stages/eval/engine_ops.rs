//! Everything an eval asks Stockfish: the `engine` baseline player and the
//! regret of every answer.
//!
//! Regret of a legal move = engine eval of the best move minus eval of the
//! played move (side to move's view, mate scores as 10000 - n), at least 0;
//! a missed or allowed mate costs 100,000 cp and an illegal or unparseable
//! answer 200,000 cp (the APO paper's penalties). No-answers get none.
//!
//! Beside it, the bounded score loss: the same two evaluations as expected
//! scores (0 to 1, Lichess's win-chance curve), best minus played, at least
//! 0; an invalid answer loses 1. A missed mate costs what the position was
//! worth (at most 1), not 100,000 cp, so one mate cannot decide a mean.

use anyhow::{Context, Result};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{EnPassantMode, Position};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::{EvalConfig, EvalEngine};
use super::metrics::{
    INVALID_PENALTY_CP, INVALID_SCORE_LOSS, MATE_PENALTY_CP, PositionRecord, Verdict,
};
use super::players::Answer;
use super::task::Job;
use super::task::PositionTask;
use crate::chess::line::{legal_move, read_position};
use crate::core::seed::{self, Domain, Key};
use crate::engine::criterion::win_chances;
use crate::engine::pool::{EnginePool, Session};
use crate::engine::process::{EngineError, Limit, SearchRequest, SearchResult};
use crate::engine::uci::Score;

/// Starts the engine pool an eval or rollout uses.
pub(crate) fn start_pool(config: &EvalConfig, engine: &EvalEngine) -> Result<EnginePool> {
    let (spec, pool) = match engine {
        EvalEngine::Flags(flags) => flags.resolve(&config.engine)?,
        EvalEngine::Resolved { spec, pool } => (spec.clone(), pool.clone()),
    };
    EnginePool::new(spec, pool)
}

/// The search limit from a nodes/depth pair (depth wins when both are set).
pub(crate) fn limit_of(nodes: Option<u64>, depth: Option<u32>, default_nodes: u64) -> Limit {
    match (depth, nodes) {
        (Some(d), _) => Limit::Depth(d),
        (None, Some(n)) => Limit::Nodes(n),
        (None, None) => Limit::Nodes(default_nodes),
    }
}

/// One search of `fen` after `moves`, single line.
pub(crate) fn search(
    session: &mut Session,
    fen: Fen,
    moves: Vec<UciMove>,
    limit: Limit,
) -> Result<SearchResult, EngineError> {
    session.search(&SearchRequest {
        fen,
        moves,
        limit,
        multipv: 1,
    })
}

/// The engine baseline's answers: its best move at the given strength.
/// With `elo`, the move comes from our seeded copy of Stockfish 15.1's own
/// strength limit ([`crate::engine::weaken`], as self-play uses): the engine's
/// `UCI_LimitStrength` draws from a clock-seeded generator and could never
/// be repeated. Each answer draws from (seed, repeat, position), so it does
/// not depend on the template order or on which engine served it.
pub(crate) fn engine_answers(
    pool: &EnginePool,
    elo: Option<u32>,
    limit: Limit,
    seed: u64,
    tasks: &[PositionTask],
    jobs: &[Job],
) -> Result<Vec<Answer>> {
    let level = match elo {
        Some(elo) => {
            let elo = i32::try_from(elo).unwrap_or(i32::MAX);
            crate::engine::weaken::check_elo(elo, "the engine player's")?;
            Some(crate::engine::weaken::skill_level(elo)?)
        }
        None => None,
    };
    pool.map(jobs, |session, _, job| {
        let fen = Fen::from_position(&tasks[job.task].position, EnPassantMode::Legal);
        let reply = match level {
            Some(level) => {
                let key = Key::Pair(u64::from(job.repeat), job.task as u64);
                let mut rng = seed::rng(seed, Domain::EvalEngineMove, key);
                crate::engine::weaken::weakened_move(session, (&fen, &[]), level, &mut rng, None)?
            }
            None => search(session, fen, Vec::new(), limit)?.best_move,
        }
        .map(|uci| uci.to_string());
        Ok(Answer {
            reply,
            ..Default::default()
        })
    })
}

/// The score of a search, side to move's view.
fn score_of(result: &SearchResult) -> Option<Score> {
    result.lines.first().map(|line| line.score)
}

/// Regret of playing `played` where the engine's best scores `best`;
/// `after` is the score after the move from the opponent's view (`None`
/// when the move ends the game: `mated` says whether it mates).
pub(crate) fn regret_of(best: Score, after: Option<Score>, mated: bool) -> f64 {
    let ours = match after {
        None if mated => return 0.0,
        None => Score::Cp(0),
        Some(Score::Cp(cp)) => Score::Cp(-cp),
        Some(Score::Mate(n)) => Score::Mate(-n),
    };
    let best_mates = matches!(best, Score::Mate(n) if n > 0);
    let ours_mates = matches!(ours, Score::Mate(n) if n > 0);
    let ours_mated = matches!(ours, Score::Mate(n) if n <= 0);
    let best_mated = matches!(best, Score::Mate(n) if n <= 0);
    if best_mates && !ours_mates {
        return MATE_PENALTY_CP;
    }
    if ours_mated && !best_mated {
        return MATE_PENALTY_CP;
    }
    f64::from((best.to_cp() - ours.to_cp()).max(0))
}

/// The expected score (0 to 1) of `score` for the side it is from:
/// (1 + Lichess's winning chances) / 2; a mate for that side is 1, a mate
/// against it 0.
pub(crate) fn win_expectation(score: Score) -> f64 {
    (1.0 + win_chances(score)) / 2.0
}

/// Score loss of playing `played` where the engine's best scores `best`
/// (arguments as [`regret_of`]): the expected score given up, 0 to 1. A
/// move that ends the game scores 1 when it mates, 1/2 when it draws.
pub(crate) fn score_loss_of(best: Score, after: Option<Score>, mated: bool) -> f64 {
    let ours = match after {
        None if mated => 1.0,
        None => 0.5,
        Some(theirs) => 1.0 - win_expectation(theirs),
    };
    (win_expectation(best) - ours).max(0.0)
}

/// Fills `regret_cp` and `score_loss` of every record (except no-answers). Each distinct
/// position and each distinct (position, move) is searched once, and
/// not at all when `cache` holds its score: the cache is keyed by content
/// (the engine binary's sha256 and options, the search limit, the
/// position and the move), so every run that shares it (every eval into
/// one run folder, every release of one `run` output folder) reuses it,
/// and a changed engine or limit is searched again. Gives the searches
/// made and those read from the cache.
pub(crate) fn compute_regret(
    pool: &EnginePool,
    config: &EvalConfig,
    records: &mut [PositionRecord],
    cache: Option<&Path>,
) -> Result<RegretSearches> {
    let limit = limit_of(config.regret.nodes, config.regret.depth, 200_000);
    let cache = match cache {
        Some(dir) => Some(RegretCache::new(dir, pool, limit)?),
        None => None,
    };
    // Searched in the order the records first name them: every unit starts
    // from `ucinewgame`, so the order does not change a score.
    let mut fen_list: Vec<Fen> = Vec::new();
    let mut pair_list: Vec<(Fen, UciMove)> = Vec::new();
    let mut fens: HashMap<Fen, Option<Score>> = HashMap::new();
    let mut pairs: HashMap<(Fen, UciMove), (Option<Score>, bool)> = HashMap::new();
    for r in records.iter() {
        if let Some(played) = r.played {
            if fens.insert(r.fen.clone(), None).is_none() {
                fen_list.push(r.fen.clone());
            }
            let pair = (r.fen.clone(), played);
            if pairs.insert(pair.clone(), (None, false)).is_none() {
                pair_list.push(pair);
            }
        }
    }
    let mut searches = RegretSearches::default();
    if let Some(cache) = &cache {
        fen_list.retain(|fen| match cache.get::<Option<Score>>(fen, None) {
            Some(score) => {
                fens.insert(fen.clone(), score);
                false
            }
            None => true,
        });
        pair_list.retain(|(fen, played)| {
            match cache.get::<(Option<Score>, bool)>(fen, Some(played)) {
                Some(value) => {
                    pairs.insert((fen.clone(), *played), value);
                    false
                }
                None => true,
            }
        });
    }
    searches.cached = fens.len() + pairs.len() - fen_list.len() - pair_list.len();
    searches.searched = fen_list.len() + pair_list.len();
    let best = pool.map(&fen_list, |session, _, fen| {
        Ok(score_of(&search(session, fen.clone(), Vec::new(), limit)?))
    })?;
    for (fen, score) in fen_list.into_iter().zip(best) {
        if let Some(cache) = &cache {
            cache.put(&fen, None, &score)?;
        }
        fens.insert(fen, score);
    }
    let after = pool.map(&pair_list, |session, _, (fen, played)| {
        let over = game_over_after(fen, played);
        match over {
            Some(mated) => Ok((None, mated)),
            None => Ok((
                score_of(&search(session, fen.clone(), vec![*played], limit)?),
                false,
            )),
        }
    })?;
    for (pair, value) in pair_list.into_iter().zip(after) {
        if let Some(cache) = &cache {
            cache.put(&pair.0, Some(&pair.1), &value)?;
        }
        pairs.insert(pair, value);
    }
    mark_regret(records, &fens, &pairs);
    Ok(searches)
}

/// Sets every record's `regret_cp` and `score_loss` from the best scores
/// of `fens` and the scores after the moves of `pairs` (with whether the
/// move mates); a no-answer gets none, an invalid answer the penalty.
fn mark_regret(
    records: &mut [PositionRecord],
    fens: &HashMap<Fen, Option<Score>>,
    pairs: &HashMap<(Fen, UciMove), (Option<Score>, bool)>,
) {
    for r in records.iter_mut() {
        (r.regret_cp, r.score_loss) = match r.verdict {
            Verdict::NoAnswer => (None, None),
            Verdict::Illegal | Verdict::Unparseable => {
                (Some(INVALID_PENALTY_CP), Some(INVALID_SCORE_LOSS))
            }
            Verdict::Correct | Verdict::Wrong => {
                let best = fens.get(&r.fen).copied().flatten();
                let (after, mated) = r
                    .played
                    .and_then(|played| pairs.get(&(r.fen.clone(), played)).copied())
                    .unwrap_or((None, false));
                match best {
                    Some(b) => (
                        Some(regret_of(b, after, mated)),
                        Some(score_loss_of(b, after, mated)),
                    ),
                    None => (None, None),
                }
            }
        };
    }
}

/// The regret searches of an eval: made now, and read from the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegretSearches {
    pub searched: usize,
    pub cached: usize,
}

/// Regret's scores on disk, one small JSON file per search, named by the
/// sha256 of what decides the score: the engine binary and its options,
/// the limit, the position and the move played (none for the best move's
/// search). A file that does not read is searched again.
struct RegretCache {
    dir: PathBuf,
    /// The engine and limit part of every key.
    searcher: String,
}

impl RegretCache {
    fn new(dir: &Path, pool: &EnginePool, limit: Limit) -> Result<RegretCache> {
        let spec = pool.spec();
        let binary = crate::core::fileio::sha256_file(&spec.path)?;
        let options: Vec<String> = spec
            .options
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        Ok(RegretCache {
            dir: dir.join("regret"),
            searcher: format!("{binary}|{}|{limit:?}", options.join(",")),
        })
    }

    fn path(&self, fen: &Fen, played: Option<&UciMove>) -> PathBuf {
        let played = played.map_or("-".to_string(), ToString::to_string);
        let key = crate::core::fileio::sha256_bytes(
            format!("puzzleforge-regret|{}|{fen}|{played}", self.searcher).as_bytes(),
        );
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    fn get<T: serde::de::DeserializeOwned>(
        &self,
        fen: &Fen,
        played: Option<&UciMove>,
    ) -> Option<T> {
        let text = std::fs::read_to_string(self.path(fen, played)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn put<T: serde::Serialize>(
        &self,
        fen: &Fen,
        played: Option<&UciMove>,
        value: &T,
    ) -> Result<()> {
        let path = self.path(fen, played);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .with_context(|| format!("creating {}", folder.display()))?;
        }
        crate::core::fileio::write_atomic(&path, serde_json::to_string(value)?.as_bytes())
    }
}

/// `Some(is_checkmate)` when `played` ends the game, else `None`.
pub(crate) fn game_over_after(fen: &Fen, played: &UciMove) -> Option<bool> {
    let position = read_position(fen).ok()?;
    let m = legal_move(&position, played).ok()?;
    let mut after = position;
    after.play_unchecked(m);
    if after.is_checkmate() {
        Some(true)
    } else if after.is_stalemate() || after.is_insufficient_material() {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regret_penalties() {
        assert_eq!(
            regret_of(Score::Cp(300), Some(Score::Cp(-100)), false),
            200.0
        );
        assert_eq!(regret_of(Score::Cp(100), Some(Score::Cp(-300)), false), 0.0);
        // Missed mate.
        assert_eq!(
            regret_of(Score::Mate(2), Some(Score::Cp(-500)), false),
            MATE_PENALTY_CP
        );
        // Kept the mate, one move slower: tiny regret.
        assert_eq!(regret_of(Score::Mate(1), Some(Score::Mate(-2)), false), 1.0);
        // Allowed a mate.
        assert_eq!(
            regret_of(Score::Cp(0), Some(Score::Mate(3)), false),
            MATE_PENALTY_CP
        );
        // Delivered mate.
        assert_eq!(regret_of(Score::Mate(1), None, true), 0.0);
    }

    #[test]
    fn score_loss_is_bounded_and_follows_the_win_chance_curve() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        // 300 cp best, -100 after for the opponent (+100 for us): Lichess's
        // chances 0.5023 and 0.1823, so expected scores 0.7512 and 0.5912.
        let loss = score_loss_of(Score::Cp(300), Some(Score::Cp(-100)), false);
        assert!(close(loss, 0.16), "{loss}");
        // A better move than the best search found loses nothing.
        assert_eq!(
            score_loss_of(Score::Cp(100), Some(Score::Cp(-300)), false),
            0.0
        );
        // Missing a mate but keeping +500 costs what the mate was worth over
        // +500, not 100,000 cp.
        let missed = score_loss_of(Score::Mate(2), Some(Score::Cp(-500)), false);
        assert!(
            close(missed, 1.0 - win_expectation(Score::Cp(500))),
            "{missed}"
        );
        assert!(missed < 0.15, "{missed}");
        // Allowing a mate from an equal position loses the half point.
        assert!(close(
            score_loss_of(Score::Cp(0), Some(Score::Mate(3)), false),
            0.5
        ));
        // From a won position to being mated: the whole point, no more.
        assert_eq!(
            score_loss_of(Score::Mate(1), Some(Score::Mate(1)), false),
            1.0
        );
        // Delivered mate, and a slower mate: nothing lost.
        assert_eq!(score_loss_of(Score::Mate(1), None, true), 0.0);
        assert_eq!(
            score_loss_of(Score::Mate(1), Some(Score::Mate(-2)), false),
            0.0
        );
        // Stalemating a won position: from 1 to 1/2.
        assert_eq!(score_loss_of(Score::Mate(3), None, false), 0.5);
        assert!(INVALID_SCORE_LOSS >= score_loss_of(Score::Mate(1), Some(Score::Mate(1)), false));
    }
}

//! A weakened player that reproduces Stockfish 15.1's own strength limit
//! with our seeded RNG.
//!
//! Stockfish weakens itself (`UCI_LimitStrength` + `UCI_Elo`, or
//! `Skill Level`) in `Skill::pick_best` (search.cpp), drawing from
//! `static PRNG rng(now())`: a generator seeded from the clock, so its games
//! can never be repeated. We run the same rule outside the engine:
//!
//! * Elo to level (Stockfish 15.1, `Skill::Skill(skill_level, uci_elo)`):
//!   `level = clamp(((elo - 1346.6) / 143.4) ^ (1 / 0.806), 0, 20)`, a
//!   *fractional* level kept as a `double`. (Stockfish 11 to 14 rounded a
//!   fractional level up or down at random; 15 and 15.1 do not: they keep the
//!   double and use `int(level)` for the depth and `int(weakness)` for the
//!   modulus below.) `UCI_Elo` is a spin option with range 1350..=2850 in
//!   15.1; an Elo outside it is a configuration error, never clamped.
//! * The engine picks when iteration `1 + int(level)` completes
//!   (`time_to_pick`), from a MultiPV search with at least 4 lines
//!   (`multiPV = max(multiPV, 4)`, then `min(multiPV, rootMoves.size())`).
//!   We run a full-strength MultiPV 4 search to depth `1 + int(level)`.
//! * `pick_best`: `delta = min(top - score[multiPV-1], PawnValueMg)`,
//!   `weakness = 120 - 2 * level` (double), and for each line i in order
//!   `push = int((weakness * (top - score_i) + delta * (rand() % int(weakness))) / 128)`;
//!   the line with the highest `score_i + push` wins, a later line winning
//!   ties (`>=`). One random draw per line, as in the engine.
//!
//! Units: `pick_best` works in Stockfish's internal value units, where
//! `PawnValueMg = 126`. The UCI `info` lines print `cp = v * 100 / 361`
//! (`NormalizeToPawnValue = 361` in 15.1's uci.h, C++ integer division) and
//! mates as moves. We map each UCI score back to internal units,
//! `v = round(cp * 361 / 100)` (exact up to the engine's truncation, i.e.
//! within 3.61 internal units, about 1 UCI cp), and mate in n moves to
//! `VALUE_MATE - (2n - 1)`, mated in n to `-VALUE_MATE + 2n`
//! (`VALUE_MATE = 32000`), then apply the rule in internal units with
//! `PawnValueMg = 126` exactly as the engine does.

use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use crate::core::error::bad_input;

use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, PvLine, SearchRequest};
use crate::engine::uci::Score;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;

/// The lowest `UCI_Elo` Stockfish 15.1 accepts.
pub(crate) const MIN_ELO: i32 = 1350;
/// The highest `UCI_Elo` Stockfish 15.1 accepts.
pub(crate) const MAX_ELO: i32 = 2850;
/// Stockfish 15.1's `PawnValueMg`, in internal units.
pub(crate) const PAWN_VALUE_MG: i64 = 126;
/// Stockfish 15.1's `NormalizeToPawnValue` (internal units per 100 UCI cp).
pub(crate) const NORMALIZE_TO_PAWN_VALUE: i64 = 361;
/// Stockfish's `VALUE_MATE`.
pub(crate) const VALUE_MATE: i64 = 32000;
/// Lines the weakened search asks for (Stockfish's minimum for skill).
pub const SKILL_MULTIPV: u32 = 4;

/// Checks that `elo` is in Stockfish 15.1's `UCI_Elo` range.
pub(crate) fn check_elo(elo: i32, what: &str) -> anyhow::Result<()> {
    if !(MIN_ELO..=MAX_ELO).contains(&elo) {
        return Err(bad_input(format!(
            "{what} Elo {elo} is outside Stockfish 15.1's UCI_Elo range {MIN_ELO}..={MAX_ELO}"
        )));
    }
    Ok(())
}

/// Stockfish 15.1's fractional skill level for a `UCI_Elo`.
pub fn skill_level(elo: i32) -> anyhow::Result<f64> {
    check_elo(elo, "the")?;
    let level = ((f64::from(elo) - 1346.6) / 143.4).powf(1.0 / 0.806);
    Ok(level.clamp(0.0, 20.0))
}

/// The depth at which Stockfish picks its weakened move: `1 + int(level)`.
pub fn pick_depth(level: f64) -> u32 {
    1 + level as u32
}

/// A UCI score mapped back to Stockfish's internal units (see module docs).
pub(crate) fn internal_from_cp(cp: i32) -> i64 {
    let scaled = i64::from(cp) * NORMALIZE_TO_PAWN_VALUE;
    // Round half away from zero.
    if scaled >= 0 {
        (scaled + 50) / 100
    } else {
        (scaled - 50) / 100
    }
}

/// A UCI `mate n` score in internal units: n > 0 mates in n moves,
/// n <= 0 is mated in -n moves.
pub(crate) fn internal_from_mate(moves: i32) -> i64 {
    let n = i64::from(moves);
    if n > 0 {
        VALUE_MATE - (2 * n - 1)
    } else {
        -VALUE_MATE - 2 * n
    }
}

/// Stockfish's `pick_best`: the index of the chosen line among `scores`
/// (internal units, best first, as the engine's MultiPV lines are sorted),
/// drawing one number from `rng` per line. `None` for no lines.
pub fn pick_best(scores: &[i64], level: f64, rng: &mut impl RngCore) -> Option<usize> {
    let top = *scores.first()?;
    let last = *scores.last()?;
    let delta = (top - last).min(PAWN_VALUE_MG);
    let weakness = 120.0 - 2.0 * level;
    let modulus = (weakness as u32).max(1);
    let mut max_score = i64::MIN;
    let mut best = 0;
    for (i, &score) in scores.iter().enumerate() {
        let draw = rng.next_u32() % modulus;
        let push =
            ((weakness * (top - score) as f64 + (delta * i64::from(draw)) as f64) / 128.0) as i64;
        if score + push >= max_score {
            max_score = score + push;
            best = i;
        }
    }
    Some(best)
}

/// Internal-unit score of a UCI score (see the module comment).
pub fn internal_score(score: Score) -> i64 {
    match score {
        Score::Cp(cp) => internal_from_cp(cp),
        Score::Mate(n) => internal_from_mate(n),
    }
}

/// The weakened player's move: Stockfish 15.1's skill rule on a full-strength
/// MultiPV 4 search to depth `1 + int(level)`, with our RNG.
///
/// `avoid`: a move the player must not choose while another line is there
/// (a grown game leaving its source's line, `[selfplay.human] leave_line`);
/// the skill rule then picks among the other lines.
pub(crate) fn weakened_move(
    session: &mut Session,
    request_base: (&Fen, &[UciMove]),
    level: f64,
    rng: &mut ChaCha8Rng,
    avoid: Option<UciMove>,
) -> Result<Option<UciMove>, EngineError> {
    let request = SearchRequest {
        fen: request_base.0.clone(),
        moves: request_base.1.to_vec(),
        limit: Limit::Depth(pick_depth(level)),
        multipv: SKILL_MULTIPV,
    };
    let result = session.search(&request)?;
    let lines: Vec<&PvLine> = result
        .lines
        .iter()
        .filter(|line| !line.pv.is_empty())
        .collect();
    let others: Vec<&PvLine> = lines
        .iter()
        .copied()
        .filter(|line| avoid.is_none_or(|m| line.pv.first() != Some(&m)))
        .collect();
    let lines = if others.is_empty() { lines } else { others };
    let scores: Vec<i64> = lines
        .iter()
        .map(|line| internal_score(line.score))
        .collect();
    Ok(pick_best(&scores, level, rng)
        .and_then(|i| lines.get(i))
        .and_then(|line| line.pv.first().cloned())
        .or(result.best_move))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn levels_match_stockfish_15_1() {
        assert!(skill_level(1350).unwrap() < 0.02);
        let l2000 = skill_level(2000).unwrap();
        assert!((l2000 - 6.566).abs() < 0.01, "{l2000}");
        assert_eq!(pick_depth(l2000), 7);
        assert_eq!(pick_depth(skill_level(1600).unwrap()), 3);
        assert!(skill_level(1349).is_err());
        assert!(skill_level(2851).is_err());
    }

    #[test]
    fn mate_and_cp_units() {
        assert_eq!(internal_from_mate(1), 31999);
        assert_eq!(internal_from_mate(-1), -31998);
        assert_eq!(internal_from_mate(0), -32000);
        assert_eq!(internal_from_cp(100), 361);
        assert_eq!(internal_from_cp(-35), -126);
    }

    #[test]
    fn a_lone_move_is_always_picked_and_huge_gaps_keep_the_best() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(pick_best(&[50], 0.0, &mut rng), Some(0));
        assert_eq!(pick_best(&[], 0.0, &mut rng), None);
        for _ in 0..100 {
            assert_eq!(pick_best(&[2000, 0, -10, -20], 10.0, &mut rng), Some(0));
        }
    }
}

//! Is the best move the only good one? The uniqueness criteria shared by
//! `check` and the miner.
//!
//! * Epoch: best >= -100 cp, second <= 80 cp and best - second >= 180 cp,
//!   with mate in n scored 10000 - n ([`Score::to_cp`]).
//! * Lichess (lichess-puzzler's `is_valid_attack`): win chance of the best
//!   move exceeds the second's by more than 0.7; a mate in 1 is accepted
//!   when the best non-mating move's win chance is at most 0.6.
//!
//! A position with exactly one legal move is unique under both.

use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, SearchRequest};
use crate::engine::uci::Score;
use serde::{Deserialize, Serialize};
use shakmaty::{Chess, Position};

/// Which uniqueness rule to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Criterion {
    #[default]
    Epoch,
    Lichess,
}

impl Criterion {
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Epoch => "epoch",
            Criterion::Lichess => "lichess",
        }
    }
}

/// Epoch thresholds (centipawns, side to move).
pub(crate) const EPOCH_MIN_BEST_CP: i32 = -100;
pub(crate) const EPOCH_MAX_SECOND_CP: i32 = 80;
pub(crate) const EPOCH_MIN_GAP_CP: i32 = 180;

/// Lichess: required win-chance gap between best and second move.
pub(crate) const LICHESS_MIN_GAP: f64 = 0.7;
/// Lichess: a mate in 1 is unique if no non-mating move wins more than this.
pub(crate) const LICHESS_NON_MATE_WIN_THRESHOLD: f64 = 0.6;

/// Epoch's rule. `second` is `None` when there is no second legal move.
pub(crate) fn epoch_unique(best: Score, second: Option<Score>) -> bool {
    let Some(second) = second else { return true };
    let (best, second) = (best.to_cp(), second.to_cp());
    best >= EPOCH_MIN_BEST_CP && second <= EPOCH_MAX_SECOND_CP && best - second >= EPOCH_MIN_GAP_CP
}

/// Lichess's win chances in [-1, 1]: 2 / (1 + exp(-0.00368208 cp)) - 1,
/// mate for the side to move = 1, mated = -1.
pub(crate) fn win_chances(score: Score) -> f64 {
    match score {
        Score::Mate(n) if n > 0 => 1.0,
        Score::Mate(_) => -1.0,
        Score::Cp(cp) => 2.0 / (1.0 + (-0.00368208 * f64::from(cp)).exp()) - 1.0,
    }
}

/// True when the Lichess rule needs the best non-mating move's score: both
/// the best and the second move mate in 1.
pub(crate) fn lichess_needs_non_mating(best: Score, second: Option<Score>) -> bool {
    best == Score::Mate(1) && second == Some(Score::Mate(1))
}

/// Lichess's rule. `best_non_mating` is the best score among moves that do
/// not mate in 1; it is only read when [`lichess_needs_non_mating`] (pass
/// `None` when every legal move mates).
pub(crate) fn lichess_unique(
    best: Score,
    second: Option<Score>,
    best_non_mating: Option<Score>,
) -> bool {
    let Some(second) = second else { return true };
    if best == Score::Mate(1) {
        if second == Score::Mate(1) {
            return best_non_mating
                .is_none_or(|score| win_chances(score) <= LICHESS_NON_MATE_WIN_THRESHOLD);
        }
        if win_chances(second) <= LICHESS_NON_MATE_WIN_THRESHOLD {
            return true;
        }
    }
    win_chances(best) > win_chances(second) + LICHESS_MIN_GAP
}

/// The verdict on one position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Uniqueness {
    /// `None` when the side to move has no legal move.
    pub best_move: Option<String>,
    pub best_score: Option<Score>,
    /// `None` when there is no second legal move.
    pub second_move: Option<String>,
    pub second_score: Option<Score>,
    pub unique: bool,
    /// Nodes searched for this verdict.
    pub nodes: u64,
}

/// Searches `position` (the side to move is the solver) with MultiPV 2 and
/// judges whether its best move is unique under `criterion`. The Lichess
/// rule may take a second search (several mates in 1).
pub(crate) fn judge(
    session: &mut Session,
    fen: &str,
    position: &Chess,
    limit: Limit,
    criterion: Criterion,
) -> Result<Uniqueness, EngineError> {
    let legal = position.legal_moves();
    let mut request = SearchRequest {
        fen: fen.to_string(),
        moves: Vec::new(),
        limit,
        multipv: 2,
    };
    let result = session.search(&request)?;
    let mut nodes = result.nodes;
    if legal.is_empty() {
        // Stockfish says `score mate 0` without a pv; stalemate is a draw.
        let score = if position.is_checkmate() {
            Score::Mate(0)
        } else {
            Score::Cp(0)
        };
        return Ok(Uniqueness {
            best_move: None,
            best_score: Some(score),
            second_move: None,
            second_score: None,
            unique: false,
            nodes,
        });
    }
    let first_move = |rank: usize| -> Result<(String, Score), EngineError> {
        let line = result.lines.get(rank).ok_or_else(|| {
            EngineError::Garbage(format!(
                "search reported {} line(s) for a position with {} legal moves",
                result.lines.len(),
                legal.len()
            ))
        })?;
        let mv = line.pv.first().cloned().unwrap_or_default();
        Ok((mv, line.score))
    };
    let (best_move, best_score) = first_move(0)?;
    let second = if legal.len() >= 2 {
        Some(first_move(1)?)
    } else {
        None
    };
    let second_score = second.as_ref().map(|(_, score)| *score);
    let unique = match criterion {
        Criterion::Epoch => epoch_unique(best_score, second_score),
        Criterion::Lichess => {
            let mut best_non_mating = None;
            if lichess_needs_non_mating(best_score, second_score) {
                let mates = count_mates_in_one(position);
                if mates < legal.len() {
                    // The line after all mates in 1 is the best non-mating move.
                    request.multipv = u32::try_from(mates + 1).unwrap_or(u32::MAX);
                    let wide = session.search(&request)?;
                    nodes += wide.nodes;
                    best_non_mating = wide.lines.last().map(|line| line.score);
                }
            }
            lichess_unique(best_score, second_score, best_non_mating)
        }
    };
    let (second_move, second_score) = match second {
        Some((mv, score)) => (Some(mv), Some(score)),
        None => (None, None),
    };
    Ok(Uniqueness {
        best_move: Some(best_move),
        best_score: Some(best_score),
        second_move,
        second_score,
        unique,
        nodes,
    })
}

/// Legal moves that checkmate at once.
pub(crate) fn count_mates_in_one(position: &Chess) -> usize {
    position
        .legal_moves()
        .iter()
        .filter(|mv| {
            let mut after = position.clone();
            after.play_unchecked(**mv);
            after.is_checkmate()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_thresholds() {
        assert!(epoch_unique(Score::Cp(300), Some(Score::Cp(80))));
        assert!(!epoch_unique(Score::Cp(300), Some(Score::Cp(81))));
        assert!(!epoch_unique(Score::Cp(200), Some(Score::Cp(21))));
        assert!(epoch_unique(Score::Cp(-100), Some(Score::Cp(-280))));
        assert!(!epoch_unique(Score::Cp(-101), Some(Score::Cp(-400))));
        assert!(epoch_unique(Score::Mate(3), Some(Score::Cp(80))));
        assert!(!epoch_unique(Score::Mate(1), Some(Score::Mate(2))));
        assert!(epoch_unique(Score::Cp(-500), None));
    }

    #[test]
    fn lichess_win_chances_and_rule() {
        assert_eq!(win_chances(Score::Cp(0)), 0.0);
        assert_eq!(win_chances(Score::Mate(4)), 1.0);
        assert_eq!(win_chances(Score::Mate(-4)), -1.0);
        assert_eq!(win_chances(Score::Mate(0)), -1.0);
        assert!((win_chances(Score::Cp(300)) - 0.5023).abs() < 1e-3);
        // Gap rule: +0.7 in win chances.
        assert!(lichess_unique(Score::Cp(500), Some(Score::Cp(-20)), None));
        assert!(!lichess_unique(Score::Cp(500), Some(Score::Cp(100)), None));
        // Mate in 1 against a second move that does not win much.
        assert!(lichess_unique(Score::Mate(1), Some(Score::Cp(300)), None));
        assert!(!lichess_unique(Score::Mate(1), Some(Score::Cp(400)), None));
        // Two mates in 1: decided by the best non-mating move.
        assert!(lichess_needs_non_mating(
            Score::Mate(1),
            Some(Score::Mate(1))
        ));
        assert!(lichess_unique(
            Score::Mate(1),
            Some(Score::Mate(1)),
            Some(Score::Cp(100))
        ));
        assert!(!lichess_unique(
            Score::Mate(1),
            Some(Score::Mate(1)),
            Some(Score::Cp(600))
        ));
        assert!(lichess_unique(Score::Mate(1), Some(Score::Mate(1)), None));
        assert!(lichess_unique(Score::Cp(-900), None, None));
    }
}

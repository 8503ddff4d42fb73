//! A solver line judged move by move with the engine: each solver move's
//! search and verdict, the line cut back to its last choice, and the mates
//! in one a position holds. Apart from the verdict because it runs searches.

use super::verdict::{Decision, Rule, Scores, Turn, Why, decide, needs_non_mating};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, SearchRequest, SearchResult};
use crate::engine::uci::Score;
use serde::Serialize;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Position};

/// A line's last solver move must be a choice: a line whose last solver
/// move was forced (`forced`: per solver move, whether it was the only
/// legal move) is cut back to the last solver move that was not, keeping
/// the move count odd (solver first, solver last). Returns how many of
/// `forced`'s moves to keep; 0 when every move was forced.
pub fn ends_on_a_choice(forced: &[bool]) -> usize {
    forced.iter().rposition(|&f| !f).map_or(0, |last| last + 1)
}

/// One judged position: the search's two best moves and the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judged {
    /// `None` when the side to move has no legal move (or the engine's
    /// line had no move).
    pub best_move: Option<UciMove>,
    pub best_score: Option<Score>,
    /// `None` when there is no second legal move (or its line had none).
    pub second_move: Option<UciMove>,
    pub second_score: Option<Score>,
    pub decision: Decision,
    /// Nodes of the searches this verdict took beyond the MultiPV 2 one
    /// (Lichess's and the mate rule's wider search).
    pub extra_nodes: u64,
}

impl Judged {
    pub fn unique(&self) -> bool {
        self.decision.unique
    }
}

/// Searches `request`'s position with MultiPV 2 and judges it:
/// [`judge_result`] of that search.
pub fn judge(
    session: &mut Session,
    request: &SearchRequest,
    position: &Chess,
    rule: Rule,
    turn: Turn,
) -> Result<(Judged, SearchResult), EngineError> {
    let request = SearchRequest {
        multipv: 2,
        ..request.clone()
    };
    let result = session.search(&request)?;
    let judged = judge_result(session, &request, &result, position, rule, turn)?;
    Ok((judged, result))
}

/// Judges a MultiPV 2 `result` of `request` at `position` (the side to move
/// is the solver) under `rule`; Lichess's and the mate rule's mate-in-1
/// exception may take one wider search on `session`.
pub fn judge_result(
    session: &mut Session,
    request: &SearchRequest,
    result: &SearchResult,
    position: &Chess,
    rule: Rule,
    turn: Turn,
) -> Result<Judged, EngineError> {
    let legal = position.legal_moves();
    if legal.is_empty() {
        // Stockfish says `score mate 0` without a pv; stalemate is a draw.
        let score = if position.is_checkmate() {
            Score::Mate(0)
        } else {
            Score::Cp(0)
        };
        return Ok(Judged {
            best_move: None,
            best_score: Some(score),
            second_move: None,
            second_score: None,
            decision: Decision::no(Why::NoLegalMove),
            extra_nodes: 0,
        });
    }
    let line = |rank: usize| -> Result<(Option<UciMove>, Score), EngineError> {
        let line = result.lines.get(rank).ok_or_else(|| {
            EngineError::Garbage(format!(
                "MultiPV search reported {} line(s) for a position with {} legal moves",
                result.lines.len(),
                legal.len()
            ))
        })?;
        Ok((line.pv.first().cloned(), line.score))
    };
    let (best_move, best_score) = line(0)?;
    let second = if legal.len() >= 2 {
        Some(line(1)?)
    } else {
        None
    };
    let mut scores = Scores::new(best_score, second.as_ref().map(|(_, score)| *score));
    let mut extra_nodes = 0;
    if needs_non_mating(rule, &scores) {
        let mates = count_mates_in_one(position);
        if mates < legal.len() {
            // The line after all mates in 1 is the best non-mating move.
            let wide = SearchRequest {
                multipv: u32::try_from(mates + 1).unwrap_or(u32::MAX),
                ..request.clone()
            };
            let searched = session.search(&wide)?;
            extra_nodes += searched.nodes;
            scores.best_non_mating = searched.lines.last().map(|line| line.score);
        }
    }
    let decision = decide(rule, turn, &scores);
    let (second_move, second_score) = second.unzip();
    Ok(Judged {
        best_move,
        best_score: Some(best_score),
        second_move: second_move.flatten(),
        second_score,
        decision,
        extra_nodes,
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
    fn a_line_ends_on_its_last_choice() {
        assert_eq!(ends_on_a_choice(&[false, true, false]), 3);
        assert_eq!(ends_on_a_choice(&[false, false, true]), 2);
        assert_eq!(ends_on_a_choice(&[false, true, true]), 1);
        assert_eq!(ends_on_a_choice(&[true]), 0);
    }
}

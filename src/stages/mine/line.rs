//! The line extension (see **Lines** in the module comment of [`super`]):
//! from the first solver move, the opponent's best reply and the solver's
//! next unique winning move, until the line ends. Apart because it is the
//! one walk forward from a puzzle's position; the verdict calls it once a
//! position has passed.

use shakmaty::uci::UciMove;
use shakmaty::{Chess, Move, Position};

use super::config::MineConfig;
use super::input::{MineUnit, search_request};
use crate::chess::derive::solver_moves_from_solver_move;
use crate::chess::line::{PuzzleLine, uci_of};
use crate::engine::criterion::{self, Rule, Turn, Why};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, SearchRequest};

/// Extends the solver's line from `best` at `position` (see module docs),
/// every later solver move judged by `rule`. `None` when a mate line does
/// not reach its mate as the only good move at every step.
pub(super) fn extend_line(
    session: &mut Session,
    (unit, game): (&MineUnit, &PuzzleLine),
    history: &[UciMove],
    position: &Chess,
    best: Move,
    rule: Rule,
    config: &MineConfig,
) -> Result<Option<(Vec<UciMove>, u64)>, EngineError> {
    let mut nodes = 0;
    let mut moves: Vec<UciMove> = history.to_vec();
    let mut line = vec![uci_of(best)];
    // Per solver move: was it the only legal move?
    let mut forced = vec![false];
    moves.push(uci_of(best));
    let mut pos = position.clone();
    pos.play_unchecked(best);
    while solver_moves_from_solver_move(line.len()) < config.max_solver_moves {
        if pos.is_game_over() {
            break;
        }
        let Some((reply_uci, reply_move, mut after_reply)) =
            opponent_reply(session, (unit, game), config, &moves, &pos, &mut nodes)?
        else {
            break;
        };
        let mut next_moves = moves.clone();
        next_moves.push(uci_of(reply_move));
        let (judged, searched) = criterion::judge(
            session,
            &line_request((unit, game), config, &next_moves, 2),
            &after_reply,
            rule,
            Turn::Later,
        )?;
        nodes += searched.nodes + judged.extra_nodes;
        let (Some(next_best), Some(score), true) =
            (judged.best_move, judged.best_score, judged.decision.unique)
        else {
            break;
        };
        if score.to_cp() < config.winning_cp {
            break;
        }
        let Ok(next_move) = next_best.to_move(&after_reply) else {
            return Err(EngineError::Garbage(format!(
                "best move {next_best} is not legal"
            )));
        };
        after_reply.play_unchecked(next_move);
        pos = after_reply;
        next_moves.push(uci_of(next_move));
        moves = next_moves;
        line.push(reply_uci);
        line.push(next_best);
        forced.push(judged.decision.why == Why::Forced);
    }
    let keep = criterion::ends_on_a_choice(&forced);
    line.truncate((2 * keep).saturating_sub(1));
    if rule == Rule::Mate && !pos_after(position, &line).is_some_and(|p| p.is_checkmate()) {
        return Ok(None);
    }
    if line.is_empty() {
        return Ok(None);
    }
    Ok(Some((line, nodes)))
}

/// A search of the position after `moves` from the unit's start (`game`
/// its line), at the mining limit.
fn line_request(
    (unit, game): (&MineUnit, &PuzzleLine),
    config: &MineConfig,
    moves: &[UciMove],
    multipv: u32,
) -> SearchRequest {
    search_request(unit, game, moves, config.limit(), multipv)
}

/// The opponent's reply at `pos` (after `moves`): the engine's best move,
/// the longest resistance when it is mated, as UCI and as played, with the
/// position after it. `None` when the engine has no move or the reply ends
/// the game. Adds the search's nodes to `nodes`.
fn opponent_reply(
    session: &mut Session,
    unit: (&MineUnit, &PuzzleLine),
    config: &MineConfig,
    moves: &[UciMove],
    pos: &Chess,
    nodes: &mut u64,
) -> Result<Option<(UciMove, Move, Chess)>, EngineError> {
    let reply = session.search(&line_request(unit, config, moves, 1))?;
    *nodes += reply.nodes;
    let Some(reply_uci) = reply.best_move else {
        return Ok(None);
    };
    let Ok(reply_move) = reply_uci.to_move(pos) else {
        return Err(EngineError::Garbage(format!(
            "reply {reply_uci} is not legal"
        )));
    };
    let mut after_reply = pos.clone();
    after_reply.play_unchecked(reply_move);
    if after_reply.is_game_over() {
        return Ok(None);
    }
    Ok(Some((reply_uci, reply_move, after_reply)))
}

/// The position after `line` from `start`, when every move is legal.
fn pos_after(start: &Chess, line: &[UciMove]) -> Option<Chess> {
    let mut position = start.clone();
    for uci in line {
        let m = uci.to_move(&position).ok()?;
        position.play_unchecked(m);
    }
    Some(position)
}

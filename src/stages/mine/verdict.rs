//! The uniqueness verdict at a target: the full search, the rule it is
//! judged by (the criterion's, or the mate rule), the criterion's decision,
//! the checks that the player missed the move and that it is no trivial
//! capture, and the line extension that makes the puzzle. Apart because
//! this decides what passes, the same in the funnel and in `--exhaustive`.

use shakmaty::{Chess, Move};

use super::config::MineConfig;
use super::input::{MineUnit, Target, search_request};
use super::line::extend_line;
use super::results::{Found, UnitResult};
use crate::chess::capture::is_trivial_capture;
use crate::chess::line::{PuzzleLine, accepts_answer, position_key};
use crate::engine::criterion::{self, Criterion, Rule, Turn};
use crate::engine::pool::Session;
use crate::engine::process::EngineError;
use crate::engine::uci::Score;

/// The rule the first solver move is judged by, given the full search's
/// best score: the mate rule for a forced mate within the line's length
/// when `mates` is on (or the criterion is `mate`), else the criterion's.
pub(super) fn rule_for(best: Option<Score>, config: &MineConfig) -> Rule {
    let short_mate =
        matches!(best, Some(Score::Mate(n)) if n > 0 && n as usize <= config.max_solver_moves);
    if config.mates && short_mate {
        Rule::Mate
    } else {
        config.criterion.into()
    }
}

/// The full search at a target and, when its best move passes the
/// criterion, differs from the move played and is no trivial capture, the
/// puzzle found there with its extended line.
pub(super) fn full_search(
    session: &mut Session,
    unit: &MineUnit,
    game: &PuzzleLine,
    target: &Target,
    position: &Chess,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<Option<Found>, EngineError> {
    let history = &unit.moves[..target.after];
    if config.fresh_hash {
        // The verdict then depends on the position alone, not on what
        // the engine saw before: the funnel and --exhaustive agree.
        session.set_option("Clear Hash", "true")?;
    }
    let request = search_request(unit, game, history, config.limit(), 2);
    let before = session.usage();
    let deep = session.search(&request)?;
    result.nodes += deep.nodes;
    result.full_searches += 1;
    let rule = rule_for(deep.lines.first().map(|line| line.score), config);
    let judged = criterion::judge_result(session, &request, &deep, position, rule, Turn::First)?;
    result.nodes += judged.extra_nodes;
    result.steps.full.add(session.usage().since(before));
    let (Some(best_move), Some(best_score), true) =
        (judged.best_move, judged.best_score, judged.decision.unique)
    else {
        return Ok(None);
    };
    let Ok(best) = best_move.to_move(position) else {
        return Err(EngineError::Garbage(format!(
            "best move {best_move} is not legal"
        )));
    };
    if config.missed_only && played_an_accepted_move(position, target, best) {
        return Ok(None);
    }
    if !config.trivial_captures && is_trivial_capture(position, best) {
        return Ok(None);
    }
    let before = session.usage();
    let extended = extend_line(session, (unit, game), history, position, best, rule, config)?;
    result.steps.line.add(session.usage().since(before));
    let Some((line, line_nodes)) = extended else {
        return Ok(None);
    };
    result.nodes += line_nodes;
    Ok(Some(Found {
        after: target.after,
        best_move,
        best_score,
        second_score: judged.second_score,
        nodes: deep.nodes,
        line,
        zobrist: position_key(position),
        criterion: match rule {
            Rule::Mate => Criterion::Mate,
            _ => config.criterion,
        },
        branch: None,
    }))
}

/// Did the game's player find the move (Epoch keeps only positions where
/// the player missed it)? A move the puzzle would accept as its answer
/// ([`accepts_answer`]): the best move, or any move that checkmates.
fn played_an_accepted_move(position: &Chess, target: &Target, best: Move) -> bool {
    let Some(played) = target.played else {
        return false;
    };
    played
        .to_move(position)
        .is_ok_and(|m| accepts_answer(position, best, m))
}

//! The funnel's passes (see the module comment of [`super`]): each unit's
//! targets analysed last to first, the shallow pass and its screens (the
//! margins around the rules, the played move's loss, the line screen, the
//! played-move bound), and the full search where they let a target
//! through. Apart from the verdict because these are cheap filters that
//! decide only whether a full search runs, never what passes.

use anyhow::Result;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Position};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::config::MineConfig;
use super::input::{MineUnit, Target, search_request};
use super::results::UnitResult;
use super::verdict::{full_search, rule_for};
use crate::chess::line::{PuzzleLine, uci_of};
use crate::engine::criterion::{self, Rule, Scores, Slack};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, SearchResult};
use crate::engine::uci::Score;

/// Scores a unit's searches have already given, by position index: the
/// shallow pass's best (MultiPV 2) and the swing pass's (MultiPV 1).
/// Targets are analysed last to first, so the position after a target's
/// move has been searched when the target is.
#[derive(Default)]
pub(super) struct Seen {
    pub shallow: HashMap<usize, Score>,
    pub swing: HashMap<usize, Score>,
}

/// One target through the funnel: the played-move bound, the swing pass,
/// the shallow pass and its screens, then the full search where they let
/// it through.
pub(super) fn analyse_target(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    target: &Target,
    config: &MineConfig,
    seen: &mut Seen,
    result: &mut UnitResult,
) -> Result<Option<super::results::Found>, EngineError> {
    let Some(position) = line.position_after(target.after) else {
        return Ok(None);
    };
    if target.after == 0 || position.legal_moves().is_empty() {
        return Ok(None);
    }
    result.positions += 1;
    if !config.exhaustive
        && config.played_bound
        && played_move_rules_out(target, &seen.shallow, config)
    {
        return Ok(None);
    }
    if !config.exhaustive
        && config.swing_depth > 0
        && !swing_pass(session, unit, line, target, config, &mut seen.swing, result)?
    {
        return Ok(None);
    }
    if !config.exhaustive
        && !shallow_pass(
            session,
            unit,
            line,
            target,
            config,
            &mut seen.shallow,
            result,
        )?
    {
        return Ok(None);
    }
    full_search(session, unit, line, target, position, config, result)
}

/// The unit's moves played from its FEN, up to the first illegal one;
/// `None` when the FEN is not a legal position.
pub(super) fn unit_line(unit: &MineUnit) -> Option<PuzzleLine> {
    let mut line = PuzzleLine::from_read_fen(&unit.start_fen).ok()?;
    for uci in &unit.moves {
        if line.play_move(*uci).is_err() {
            break;
        }
    }
    Some(line)
}

/// The swing pass (`[mine] swing_depth`, with `missed_only`): one MultiPV 1
/// search at the swing depth of every target, whose best scores at the
/// target and at the position after its move give the played move's loss.
/// A player who missed a unique winning move lost at least the rule's gap
/// against it, so a target whose move lost less, within
/// `swing_margin_cp`, cannot pass and gets no MultiPV 2 search. In a game
/// most moves lose little: this drops most positions for the price of
/// the cheapest search that sees the loss.
fn swing_pass(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    target: &Target,
    config: &MineConfig,
    swing: &mut HashMap<usize, Score>,
    result: &mut UnitResult,
) -> Result<bool, EngineError> {
    if !config.missed_only || target.played.is_none() {
        return Ok(true);
    }
    let Some(best) = swing_score(session, unit, line, target.after, config, swing, result)? else {
        return Ok(true);
    };
    let next = target.after + 1;
    let Some(played) = played_value(line, next, || {
        swing_score(session, unit, line, next, config, swing, result)
    })?
    else {
        return Ok(true);
    };
    let slack = Slack {
        cp: config.swing_margin_cp,
        win_chance: config.shallow_margin_win,
    };
    Ok(criterion::played_loses_enough(
        rule_for(Some(best), config),
        best,
        played,
        slack,
    ))
}

/// The value of the move that leads to the position after `next` moves,
/// for the side that played it: a mate in one when it mates, 0 when it
/// ends the game otherwise, else minus `best_after`, the best score of the
/// side to move after it (searched only then). `None` when there is no
/// such move or no score.
fn played_value(
    line: &PuzzleLine,
    next: usize,
    best_after: impl FnOnce() -> Result<Option<Score>, EngineError>,
) -> Result<Option<Score>, EngineError> {
    Ok(match line.position_after(next) {
        None => None,
        Some(after) if after.is_checkmate() => Some(Score::Mate(1)),
        Some(after) if after.is_game_over() => Some(Score::Cp(0)),
        Some(_) => best_after()?.map(negate),
    })
}

/// The swing pass's best score at the position after `after` moves,
/// searched once per unit.
fn swing_score(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    after: usize,
    config: &MineConfig,
    swing: &mut HashMap<usize, Score>,
    result: &mut UnitResult,
) -> Result<Option<Score>, EngineError> {
    if let Some(score) = swing.get(&after) {
        return Ok(Some(*score));
    }
    let before = session.usage();
    let searched = session.search(&search_request(
        unit,
        line,
        &unit.moves[..after],
        Limit::Depth(config.swing_depth),
        1,
    ))?;
    result.nodes += searched.nodes;
    result.steps.swing.add(session.usage().since(before));
    let score = searched.lines.first().map(|line| line.score);
    if let Some(score) = score {
        swing.insert(after, score);
    }
    Ok(score)
}

/// The funnel's shallow pass at a target: can the full search still pass,
/// and did the move played lose enough against the best move? Records the
/// shallow best scores it sees in `shallow_best`.
fn shallow_pass(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    target: &Target,
    config: &MineConfig,
    shallow_best: &mut HashMap<usize, Score>,
    result: &mut UnitResult,
) -> Result<bool, EngineError> {
    let Some(position) = line.position_after(target.after) else {
        return Ok(false);
    };
    let history = &unit.moves[..target.after];
    let before = session.usage();
    let shallow = session.search(&search_request(
        unit,
        line,
        history,
        Limit::Depth(config.shallow_depth),
        2,
    ))?;
    result.nodes += shallow.nodes;
    result.steps.shallow.add(session.usage().since(before));
    if let Some(best) = shallow.lines.first() {
        shallow_best.insert(target.after, best.score);
    }
    if !shallow_may_pass(&shallow, position, config) {
        return Ok(false);
    }
    if config.line_screen && config.min_solver_moves > 1 {
        let before = session.usage();
        let reaches = shallow_line_may_reach(
            session,
            (unit, line),
            history,
            position,
            &shallow,
            config,
            result,
        )?;
        result.steps.screen.add(session.usage().since(before));
        if !reaches {
            return Ok(false);
        }
    }
    if target.played.is_none() || !config.missed_only {
        return Ok(true);
    }
    let next = target.after + 1;
    let played_value = played_value(line, next, || {
        if let Entry::Vacant(slot) = shallow_best.entry(next) {
            let reply_request = search_request(
                unit,
                line,
                &unit.moves[..next],
                Limit::Depth(config.shallow_depth),
                1,
            );
            let before = session.usage();
            let searched = session.search(&reply_request)?;
            result.nodes += searched.nodes;
            result.steps.played.add(session.usage().since(before));
            if let Some(best) = searched.lines.first() {
                slot.insert(best.score);
            }
        }
        Ok(shallow_best.get(&next).copied())
    })?;
    Ok(match (shallow.lines.first(), played_value) {
        (Some(best), Some(played)) => played_move_may_lose_enough(best.score, played, config),
        _ => true,
    })
}

/// The line screen (`[mine] line_screen`, for targets of long lines): can
/// the line from this position still reach `min_solver_moves`? The line is
/// played out at the shallow depth (the opponent's best reply, then the
/// solver's best move), each later solver move held to the rule within the
/// funnel's slack; a position whose shallow line stops short gets no full
/// search. A full search and its line extension cost far more than these
/// shallow searches, and a long-line target keeps only long lines.
fn shallow_line_may_reach(
    session: &mut Session,
    (unit, game): (&MineUnit, &PuzzleLine),
    history: &[UciMove],
    position: &Chess,
    shallow: &SearchResult,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<bool, EngineError> {
    let Some(first) = shallow.lines.first().and_then(|line| line.pv.first()) else {
        return Ok(false);
    };
    let rule = rule_for(shallow.lines.first().map(|line| line.score), config);
    let slack = Slack {
        cp: config.shallow_margin_cp,
        win_chance: config.shallow_margin_win,
    };
    let limit = Limit::Depth(config.shallow_depth);
    let mut moves = history.to_vec();
    let mut pos = position.clone();
    let mut next = *first;
    for _ in 1..config.min_solver_moves {
        let Ok(solver_move) = next.to_move(&pos) else {
            return Ok(false);
        };
        pos.play_unchecked(solver_move);
        moves.push(next);
        if pos.is_game_over() {
            return Ok(false);
        }
        let reply = session.search(&search_request(unit, game, &moves, limit, 1))?;
        result.nodes += reply.nodes;
        let Some(reply_uci) = reply.best_move else {
            return Ok(false);
        };
        let Ok(reply_move) = reply_uci.to_move(&pos) else {
            return Ok(false);
        };
        pos.play_unchecked(reply_move);
        moves.push(uci_of(reply_move));
        if pos.is_game_over() {
            return Ok(false);
        }
        let searched = session.search(&search_request(unit, game, &moves, limit, 2))?;
        result.nodes += searched.nodes;
        let (Some(best), second) = (
            searched.lines.first(),
            searched.lines.get(1).map(|line| line.score),
        ) else {
            return Ok(false);
        };
        let scores = Scores::new(best.score, second);
        if !criterion::may_pass_later(rule, &scores, slack)
            || best.score.to_cp() < config.winning_cp - slack.cp
        {
            return Ok(false);
        }
        let Some(uci) = best.pv.first() else {
            return Ok(false);
        };
        next = *uci;
    }
    Ok(true)
}

/// The played-move bound (`[mine] played_bound`): the move played is at
/// best the second-best move (Epoch keeps only positions the player
/// missed), so when the shallow search of the position after it, already
/// made (targets are analysed last to first), puts it above what any rule
/// lets a second move be worth, the position cannot pass and needs no
/// search of its own.
fn played_move_rules_out(
    target: &Target,
    shallow_best: &HashMap<usize, Score>,
    config: &MineConfig,
) -> bool {
    if !config.missed_only || target.played.is_none() {
        return false;
    }
    let Some(after) = shallow_best.get(&(target.after + 1)) else {
        return false;
    };
    let played = negate(*after);
    let mut rules = vec![Rule::from(config.criterion)];
    if config.mates {
        rules.push(Rule::Mate);
    }
    !rules
        .into_iter()
        .any(|rule| criterion::second_may_pass(rule, played, slack(config)))
}

/// The funnel's slack around the rules' thresholds (shallow scores).
fn slack(config: &MineConfig) -> Slack {
    Slack {
        cp: config.shallow_margin_cp,
        win_chance: config.shallow_margin_win,
    }
}

/// A score from the other side's point of view.
fn negate(score: Score) -> Score {
    match score {
        Score::Cp(cp) => Score::Cp(-cp),
        Score::Mate(n) if n > 0 => Score::Mate(-n),
        // Mated now or in n: the other side mates in n + 1 (close enough
        // for a filter: only the sign and size matter).
        Score::Mate(n) => Score::Mate(1 - n),
    }
}

/// The move played is at best the second-best move, so it must lose at
/// least the rule's gap against the best move. Judged on shallow scores
/// with a margin: `played` is the played move's value for the side to
/// move (minus the opponent's shallow score after it).
fn played_move_may_lose_enough(best: Score, played: Score, config: &MineConfig) -> bool {
    let slack = Slack {
        cp: config.shallow_margin_loss_cp,
        win_chance: config.shallow_margin_win,
    };
    criterion::played_loses_enough(rule_for(Some(best), config), best, played, slack)
}

/// Can the full search still pass, judging by the shallow one? A shallow
/// search that lost its second line (a fail-low) leaves it to the full one.
fn shallow_may_pass(shallow: &SearchResult, position: &Chess, config: &MineConfig) -> bool {
    let Some(best) = shallow.lines.first().map(|l| l.score) else {
        return false;
    };
    let Some(second) = shallow.lines.get(1).map(|l| l.score) else {
        return position.legal_moves().len() >= 2;
    };
    let scores = Scores::new(best, Some(second));
    criterion::may_pass(config.criterion.into(), &scores, slack(config))
        || (config.mates && criterion::may_pass(Rule::Mate, &scores, slack(config)))
}

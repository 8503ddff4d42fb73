//! Branches (`[mine] branch_moves`): a search over a game's prefixes for
//! the long non-mate lines whole games seldom reach.
//!
//! A non-mate line needs a level position that one move turns into a
//! won one, and a game between weak players is level only for a while: it
//! passes each such moment once. Where the funnel's screens passed on a
//! non-mate shallow score (the sign of a line: with `line_screen`, a line
//! that reached `min_solver_moves` at the shallow depth), the game is
//! branched at the earlier moves of the side that blundered into the
//! position (`branch_points` of them: the move that led there, then its
//! move before). At each branch point one search over every legal move
//! (`branch_depth`) ranks that side's other moves; those that lose at
//! least [`MIN_LOSS_CP`] against its best, leave the opponent between
//! [`MIN_WIN_CP`] and [`MAX_WIN_CP`] and mate nowhere are taken, the least
//! losing first (a move that loses little is one whose refutation must be
//! found, not a piece left hanging), up to `branch_moves` of them. Each
//! position a branch reaches (the opponent to move) goes through the same
//! funnel, verdict and line extension as a position of the game.
//!
//! A branch belongs to its game: its puzzles keep the game's id, so the
//! per-game cap, the dedup, the split and the release draw treat a game
//! and its branches as one game. A branch position the game (or an
//! earlier branch) already holds is not analysed again. Everything runs
//! inside the game's unit of work, in a fixed order, with node- and
//! depth-limited searches: the branches are the same run to run and with
//! any number of workers.

use shakmaty::uci::UciMove;
use shakmaty::{Chess, Move, Position};
use std::collections::{BTreeSet, HashMap, HashSet};

use super::config::MineConfig;
use super::funnel::{analyse_target, unit_line};
use super::input::{MineUnit, Target, search_request};
use super::results::UnitResult;
use crate::chess::line::{PuzzleLine, position_key, uci_of};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit};
use crate::engine::uci::Score;

/// A branch move loses at least this much (cp) against the best move.
pub(crate) const MIN_LOSS_CP: i32 = 100;
/// ... and leaves the opponent at least this (cp): room for a first
/// solver move that wins.
pub(crate) const MIN_WIN_CP: i32 = 100;
/// ... and at most this (cp): beyond it the second move wins too, which
/// no non-mate rule lets pass.
pub(crate) const MAX_WIN_CP: i32 = 1200;
/// A branch point where the side to move stands worse than this (cp) is
/// skipped: every move there leaves the opponent winning already.
pub(crate) const LOST_CP: i32 = -150;

/// Mines the branches of `unit` from its positions `signs` (indices into
/// its moves, each a position whose screens passed on a non-mate score);
/// their puzzles are added to `result.found` after the game's, in the
/// order of the branch points and moves.
pub(super) fn mine_branches(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    signs: &[usize],
    shallow_best: &HashMap<usize, Score>,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<(), EngineError> {
    let points = branch_points(signs, config.branch_points);
    let mut seen: HashSet<u64> = line.positions().iter().map(position_key).collect();
    for at in points {
        let Some(position) = line.position_after(at) else {
            continue;
        };
        // The game's shallow pass saw this position: a lost one has no
        // non-mate line for the opponent after any move.
        if shallow_best
            .get(&at)
            .is_some_and(|score| score.to_cp() < LOST_CP)
        {
            continue;
        }
        let played = unit.moves.get(at).copied();
        let history = unit.moves.get(..at).unwrap_or_default();
        for m in branch_moves(
            session,
            (unit, line),
            history,
            position,
            played,
            config,
            result,
        )? {
            let mut reached = position.clone();
            reached.play_unchecked(m);
            if reached.fullmoves().get() < config.min_fullmove
                || !seen.insert(position_key(&reached))
            {
                continue;
            }
            let mut moves = history.to_vec();
            moves.push(uci_of(m));
            let branch = MineUnit {
                moves: moves.clone(),
                targets: Vec::new(),
                ..unit.clone()
            };
            let Some(branch_line) = unit_line(&branch) else {
                continue;
            };
            let target = Target {
                after: at + 1,
                played: None,
            };
            result.branches += 1;
            let mut branch_seen = super::funnel::Seen::default();
            if let Some(mut found) = analyse_target(
                session,
                &branch,
                &branch_line,
                &target,
                config,
                &mut branch_seen,
                result,
            )? {
                found.branch = Some(moves);
                result.found.push(found);
            }
        }
    }
    Ok(())
}

/// The branch points of positions `signs`: the positions before the move
/// that led to each (its index - 1) and before that side's `per_sign - 1`
/// moves before it, each once, in game order.
pub(crate) fn branch_points(signs: &[usize], per_sign: u32) -> BTreeSet<usize> {
    let mut points = BTreeSet::new();
    for &sign in signs {
        for k in 0..per_sign as usize {
            match sign.checked_sub(1 + 2 * k) {
                Some(at) => points.insert(at),
                None => break,
            };
        }
    }
    points
}

/// The other moves of the side to move at a branch point, ranked by one
/// search over every legal move (see the module comment).
fn branch_moves(
    session: &mut Session,
    (unit, game): (&MineUnit, &PuzzleLine),
    history: &[UciMove],
    position: &Chess,
    played: Option<UciMove>,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<Vec<Move>, EngineError> {
    let legal = position.legal_moves();
    if legal.len() < 2 {
        return Ok(Vec::new());
    }
    let before = session.usage();
    let searched = session.search(&search_request(
        unit,
        game,
        history,
        Limit::Depth(config.branch_depth),
        legal.len() as u32,
    ))?;
    result.nodes += searched.nodes;
    result.steps.branch.add(session.usage().since(before));
    let scored: Vec<(UciMove, Score)> = searched
        .lines
        .iter()
        .filter_map(|line| Some((*line.pv.first()?, line.score)))
        .collect();
    Ok(
        pick_branch_moves(&scored, played, config.branch_moves as usize)
            .into_iter()
            .filter_map(|uci| uci.to_move(position).ok())
            .collect(),
    )
}

/// From the moves of a search over every legal move, each with its score
/// for the side to move (best first), the branch moves: not the move
/// played, losing at least [`MIN_LOSS_CP`] against the best, leaving the
/// opponent [`MIN_WIN_CP`] to [`MAX_WIN_CP`], no mate on either side; the
/// least losing first, at most `count`. None when the side to move is
/// lost already or is mating.
pub(crate) fn pick_branch_moves(
    scored: &[(UciMove, Score)],
    played: Option<UciMove>,
    count: usize,
) -> Vec<UciMove> {
    let Some(&(_, Score::Cp(best))) = scored.first() else {
        return Vec::new();
    };
    if best < LOST_CP {
        return Vec::new();
    }
    let mut picked: Vec<(i32, UciMove)> = scored
        .iter()
        .filter(|(uci, _)| Some(*uci) != played)
        .filter_map(|&(uci, score)| match score {
            Score::Cp(cp) => Some((cp, uci)),
            Score::Mate(_) => None,
        })
        .filter(|&(cp, _)| best - cp >= MIN_LOSS_CP && (MIN_WIN_CP..=MAX_WIN_CP).contains(&-cp))
        .collect();
    // Least losing first; the search's order breaks ties (a stable sort).
    picked.sort_by_key(|&(cp, _)| std::cmp::Reverse(cp));
    picked.into_iter().take(count).map(|(_, uci)| uci).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uci(text: &str) -> UciMove {
        text.parse().unwrap()
    }

    #[test]
    fn branch_points_are_the_blundering_sides_earlier_moves_once_each() {
        let points: Vec<usize> = branch_points(&[20, 22, 3], 2).into_iter().collect();
        // 20 -> 19, 17; 22 -> 21, 19; 3 -> 2, 0.
        assert_eq!(points, vec![0, 2, 17, 19, 21]);
        assert_eq!(
            branch_points(&[1], 3).into_iter().collect::<Vec<_>>(),
            vec![0]
        );
        assert!(branch_points(&[], 2).is_empty());
    }

    #[test]
    fn branch_moves_lose_enough_but_not_everything_the_least_losing_first() {
        let scored = [
            (uci("e2e4"), Score::Cp(40)),
            (uci("d2d4"), Score::Cp(-30)),   // loses 70: not enough
            (uci("g1f3"), Score::Cp(-90)),   // leaves the opponent 90: too little
            (uci("b1c3"), Score::Cp(-400)),  // a branch
            (uci("f2f3"), Score::Cp(-150)),  // a branch, the least losing
            (uci("h2h4"), Score::Cp(-1500)), // a piece given away
            (uci("g2g4"), Score::Mate(-2)),  // mated
            (uci("a2a3"), Score::Cp(-200)),  // the move played
        ];
        assert_eq!(
            pick_branch_moves(&scored, Some(uci("a2a3")), 5),
            vec![uci("f2f3"), uci("b1c3")]
        );
        assert_eq!(
            pick_branch_moves(&scored, None, 2),
            vec![uci("f2f3"), uci("a2a3")]
        );
        // A lost side, or one that mates, gives no branch.
        let lost = [
            (uci("e2e4"), Score::Cp(-300)),
            (uci("d2d4"), Score::Cp(-600)),
        ];
        assert!(pick_branch_moves(&lost, None, 4).is_empty());
        let mating = [
            (uci("e2e4"), Score::Mate(3)),
            (uci("d2d4"), Score::Cp(-300)),
        ];
        assert!(pick_branch_moves(&mating, None, 4).is_empty());
    }
}

//! One game's unit of work: its targets through the funnel
//! ([`super::funnel`]), last to first, then the branches of its prefix
//! where the funnel saw the sign of a non-mate line ([`super::branch`]).
//! Apart from both so that the branches can reuse the funnel without the
//! funnel knowing of them.

use anyhow::Result;

use super::checkpoint::{Checkpoint, GAMES_PER_WORKER_PER_CHUNK};
use super::config::MineConfig;
use super::funnel::{Seen, analyse_target, unit_line};
#[cfg(test)]
use super::input::Source;
use super::input::{MineUnit, Target, game_targets};
use super::results::{Found, MineRun, UnitResult};
use crate::chess::line::{PuzzleLine, position_key};
use crate::chess::novelty::Idea;
use crate::engine::pool::{EnginePool, Session};
use crate::engine::process::EngineError;
use crate::engine::uci::Score;

/// Mines every unit across the pool (one unit of work per game).
pub(crate) fn mine_units(
    units: &[MineUnit],
    config: &MineConfig,
    pool: &EnginePool,
) -> Result<MineRun> {
    let results = pool.map(units, |session, _, unit| mine_unit(session, unit, config))?;
    Ok(MineRun { results })
}

/// [`mine_units`] for a standalone `mine`: the units `checkpoint` holds
/// are not mined again, and the others are mined in chunks, each chunk's
/// results recorded as it finishes. The results are in the units' order,
/// the same as one pass's.
pub(crate) fn mine_units_resumable(
    units: &[MineUnit],
    config: &MineConfig,
    pool: &EnginePool,
    checkpoint: &mut Checkpoint,
) -> Result<MineRun> {
    let todo: Vec<usize> = (0..units.len())
        .filter(|i| !checkpoint.done.contains_key(i))
        .collect();
    let chunk = GAMES_PER_WORKER_PER_CHUNK * pool.workers().max(1);
    for indices in todo.chunks(chunk) {
        let batch: Vec<&MineUnit> = indices.iter().map(|&i| &units[i]).collect();
        let results = pool.map(&batch, |session, _, unit| mine_unit(session, unit, config))?;
        let finished: Vec<(usize, &UnitResult)> = indices.iter().copied().zip(&results).collect();
        checkpoint.record(&finished)?;
        checkpoint.done.extend(indices.iter().copied().zip(results));
    }
    let results = (0..units.len())
        .map(|i| {
            checkpoint
                .done
                .remove(&i)
                .ok_or_else(|| anyhow::anyhow!("mine: game {i} has no result after mining"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(MineRun { results })
}

/// Analyses one unit's targets, last to first, on one engine.
pub(crate) fn mine_unit(
    session: &mut Session,
    unit: &MineUnit,
    config: &MineConfig,
) -> Result<UnitResult, EngineError> {
    let mut result = UnitResult::default();
    let Some(line) = unit_line(unit) else {
        return Ok(result);
    };
    let mut targets: Vec<Target> = if unit.targets.is_empty() {
        game_targets(&line, &unit.moves, config.min_fullmove)
    } else {
        unit.targets.clone()
    };
    // A position of the human source game could only give a public puzzle
    // (dropped below): it is not searched at all. On the hard band's games
    // no kept line came from a branch of the human prefix (docs/results/
    // generation.md, "Human games").
    if !unit.public_positions.is_empty() {
        targets.retain(|target| {
            line.positions()
                .get(target.after)
                .is_none_or(|position| !unit.is_public(position_key(position)))
        });
    }
    // Scores by position index, for the played-move filters.
    let mut seen = Seen::default();
    // Positions whose screens passed on a non-mate shallow score: where
    // branches start (`[mine] branch_moves`).
    let mut signs = Vec::new();
    for target in targets.iter().rev() {
        let searched = result.full_searches;
        if let Some(found) =
            analyse_target(session, unit, &line, target, config, &mut seen, &mut result)?
        {
            result.found.push(found);
        }
        if result.full_searches > searched
            && matches!(seen.shallow.get(&target.after), Some(Score::Cp(_)))
        {
            signs.push(target.after);
        }
    }
    result.found.reverse();
    if config.branch_moves > 0 {
        super::branch::mine_branches(
            session,
            unit,
            &line,
            &signs,
            &seen.shallow,
            config,
            &mut result,
        )?;
    }
    drop_public(unit, &line, &mut result);
    Ok(result)
}

/// Drops what was found at a position of the unit's source game (a game
/// grown from a human game), and what is a near copy of its source's idea
/// ([`crate::chess::novelty`]): such a puzzle is public, not new.
fn drop_public(unit: &MineUnit, line: &PuzzleLine, result: &mut UnitResult) {
    let before = result.found.len();
    result.found.retain(|found| !unit.is_public(found.zobrist));
    result.public = (before - result.found.len()) as u64;
    let Some(source) = &unit.source_idea else {
        return;
    };
    let before = result.found.len();
    result.found.retain(|found| {
        found_idea(unit, line, found).is_none_or(|idea| idea.near_copy_of(source).is_none())
    });
    result.near_source = (before - result.found.len()) as u64;
}

/// The idea of a found puzzle: its position (on the game's line, or on
/// its branch replayed from the unit's start) and its solver line.
fn found_idea(unit: &MineUnit, line: &PuzzleLine, found: &Found) -> Option<Idea> {
    let position = match &found.branch {
        None => line.positions().get(found.after)?.clone(),
        Some(moves) => {
            let mut branch = PuzzleLine::from_read_fen(&unit.start_fen).ok()?;
            for uci in moves.get(..found.after)? {
                branch.play_move(*uci).ok()?;
            }
            branch.last_position().clone()
        }
    };
    Some(Idea::of_solver_line(&position, &found.line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::line::{read_fen, read_ucis};
    use crate::engine::uci::Score;

    fn ucis(text: &str) -> Vec<shakmaty::uci::UciMove> {
        read_ucis(text.split_whitespace().collect::<Vec<_>>()).expect("moves")
    }

    /// A game grown from a public puzzle (the mating net below) in which
    /// the players replayed the puzzle's idea two plies later: mining's
    /// find there is the same mating net and is dropped as a near copy of
    /// the source; a find with another solution is kept.
    #[test]
    fn a_find_that_replays_its_source_puzzles_idea_is_dropped() {
        let source_fen = "r4r2/p1R3R1/1p2p1pk/2p5/7P/8/P4PP1/6K1 b - - 0 26";
        let source_start = crate::chess::line::parse_position(source_fen).expect("fen");
        let game_start = "2r2r2/R5R1/1p2p1p1/2p4k/7P/8/P4PP1/6K1 b - - 0 28";
        let unit = MineUnit {
            source: Source::Selfplay,
            game_id: "selfplay-1-1".into(),
            game_url: String::new(),
            seed: "1".into(),
            white_elo: String::new(),
            black_elo: String::new(),
            first_ply: 1,
            keep_id: None,
            start_fen: read_fen(game_start).expect("fen"),
            moves: ucis("c8c6 f2f3 h5h4 g7g6 h4h5 a7g7"),
            targets: Vec::new(),
            public_positions: Vec::new(),
            source_idea: Some(Idea::of_puzzle_line(
                &source_start,
                &ucis("h6h5 f2f3 h5h4 g7g6 h4h5 c7g7"),
            )),
        };
        let line = unit_line(&unit).expect("line");
        let found = |solver_line: &str| Found {
            after: 1,
            best_move: ucis(solver_line)[0],
            best_score: Score::Mate(3),
            second_score: None,
            nodes: 1000,
            line: ucis(solver_line),
            zobrist: 1,
            criterion: Default::default(),
            branch: None,
        };
        let mut result = UnitResult {
            found: vec![found("f2f3 h5h4 g7g6 h4h5 a7g7"), found("g1h2")],
            ..UnitResult::default()
        };
        drop_public(&unit, &line, &mut result);
        assert_eq!(result.near_source, 1);
        assert_eq!(result.found.len(), 1);
        assert_eq!(result.found[0].line, ucis("g1h2"));
    }
}

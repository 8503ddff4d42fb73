//! One game's unit of work: its targets through the funnel
//! ([`super::funnel`]), last to first, then the branches of its prefix
//! where the funnel saw the sign of a non-mate line ([`super::branch`]).
//! Apart from both so that the branches can reuse the funnel without the
//! funnel knowing of them.

use anyhow::Result;
use std::collections::HashMap;

use super::checkpoint::{Checkpoint, GAMES_PER_WORKER_PER_CHUNK};
use super::config::MineConfig;
use super::funnel::{analyse_target, unit_line};
use super::input::{MineUnit, Target, game_targets};
use super::results::{MineRun, UnitResult};
use crate::chess::line::position_key;
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
    // Shallow best scores by position index, for the played-move filter.
    let mut shallow_best: HashMap<usize, Score> = HashMap::new();
    // Positions whose screens passed on a non-mate shallow score: where
    // branches start (`[mine] branch_moves`).
    let mut signs = Vec::new();
    for target in targets.iter().rev() {
        let searched = result.full_searches;
        if let Some(found) = analyse_target(
            session,
            unit,
            &line,
            target,
            config,
            &mut shallow_best,
            &mut result,
        )? {
            result.found.push(found);
        }
        if result.full_searches > searched
            && matches!(shallow_best.get(&target.after), Some(Score::Cp(_)))
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
            &shallow_best,
            config,
            &mut result,
        )?;
    }
    drop_public(unit, &mut result);
    Ok(result)
}

/// Drops what was found at a position of the unit's source game (a game
/// grown from a human game): such a puzzle is public, not new.
fn drop_public(unit: &MineUnit, result: &mut UnitResult) {
    let before = result.found.len();
    result.found.retain(|found| !unit.is_public(found.zobrist));
    result.public = (before - result.found.len()) as u64;
}

//! Running the stage: `puzzleforge mine` and its entry points for the
//! pipeline and generation, which mine loaded units, write the puzzle file
//! and report the funnel's counts per unit and in the summary. Apart
//! because it only wires the other files together.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

use super::checkpoint::{Checkpoint, CheckpointAt, checkpoint_path, fingerprint};
use super::config::{CheckedMineConfig, MineArgs, MineConfig};
use super::input::{Loaded, load_input};
use super::output::select_puzzles;
use super::results::MineRun;
use super::unit::{mine_units, mine_units_resumable};
use crate::chess::columns::{self, Column};
use crate::chess::record::PuzzleWriter;
use crate::core::settings::flags_over;
use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineConfig;

pub fn run_mine(args: &MineArgs) -> Result<Summary> {
    let config = flags_over(&MineConfig::default(), &args.overrides)?.checked()?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("games".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    run_mine_with(&config, &pool, &args.input, &args.output)
}

/// The extra columns `mine` writes, in order ([`columns::MINE`]).
pub(crate) const MINE_COLUMNS: [Column; 10] = columns::MINE;

/// Mines `input` on `pool` into `output`.
pub fn run_mine_with(
    config: &CheckedMineConfig,
    pool: &EnginePool,
    input: &Path,
    output: &Path,
) -> Result<Summary> {
    let loaded = load_input(input)?;
    let checkpoint = CheckpointAt {
        path: checkpoint_path(output),
        fingerprint: fingerprint(input, config, pool.spec())?,
    };
    let mined = mine_loaded_with(config, pool, &loaded, output, Some(&checkpoint))?;
    mined.summary.into_summary()
}

/// The stage's JSON summary: the funnel, the engine's work and the
/// settings that decide what a puzzle is.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct MineSummary {
    command: &'static str,
    games: usize,
    skipped: usize,
    /// The first 100 units skipped, each with why.
    skipped_reasons: Vec<String>,
    positions_analysed: u64,
    full_searches: u64,
    candidates: u64,
    puzzles: usize,
    puzzles_per_game: f64,
    engine_nodes: u64,
    /// None without puzzles.
    engine_nodes_per_puzzle: Option<f64>,
    engine_cpu_seconds: f64,
    engine_cpu_seconds_per_puzzle: Option<f64>,
    /// Searches by step of the funnel (swing, shallow, played, screen,
    /// full, line, branch): where the engine time went.
    searches_by_step: std::collections::BTreeMap<&'static str, u64>,
    criterion: &'static str,
    exhaustive: bool,
    /// The puzzles file (where the pipeline commits it).
    pub(crate) output: String,
}

/// One unit's (game's) funnel: positions analysed, full searches and
/// candidates (before the cap and the dedup).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitFunnel {
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
    /// Positions analysed on branches of the game (`[mine] branch_moves`),
    /// counted in `positions` too; written out only when some were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub branches: u64,
    /// Found at a position of the game's human source game and dropped
    /// (a public position); written out only when some were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub public: u64,
    /// Near copies of the game's source puzzle or game (the novelty rule,
    /// `crate::chess::novelty`), dropped; written out only when some were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub near_source: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// What [`mine_loaded_per_unit`] gives back beside the files it writes.
pub(crate) struct MinedUnits {
    pub summary: Report<MineSummary>,
    /// One funnel per unit, in the units' order.
    pub per_unit: Vec<UnitFunnel>,
    /// Puzzles written: after the per-game cap and the dedup.
    pub puzzles: u64,
}

impl MineSummary {
    /// The summary's lines for a person, with the first reasons of
    /// `skipped` games.
    fn human(&self, skipped: &[String]) -> String {
        let mut human = format!(
            "mine: {} games ({} skipped), {} positions analysed, {} full searches, {} candidates, \
             {} puzzles ({:.3} per game); {} engine nodes ({} per puzzle), {:.1} engine CPU s ({} per puzzle) -> {}",
            self.games,
            self.skipped,
            self.positions_analysed,
            self.full_searches,
            self.candidates,
            self.puzzles,
            self.puzzles_per_game,
            self.engine_nodes,
            self.engine_nodes_per_puzzle
                .map_or("-".to_string(), |v| format!("{v:.0}")),
            self.engine_cpu_seconds,
            self.engine_cpu_seconds_per_puzzle
                .map_or("-".to_string(), |v| format!("{v:.2}")),
            self.output
        );
        for reason in skipped.iter().take(10) {
            human.push_str(&format!("\n  skipped {reason}"));
        }
        human
    }
}

/// Mines already loaded units (all of an input, or a slice of it) into
/// `output`: the summary, each unit's funnel and the count of puzzles
/// written; with `checkpoint`, resuming from and recording into it (the
/// pipeline's `mine` stage). The pipeline's and generation's way in: the
/// section is checked here, once per call.
pub(crate) fn mine_loaded_per_unit(
    config: &MineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    output: &Path,
    checkpoint: Option<&CheckpointAt>,
) -> Result<MinedUnits> {
    let config = config.clone().checked()?;
    mine_loaded_with(&config, pool, loaded, output, checkpoint)
}

/// [`mine_loaded_per_unit`] with a checked section. The checkpoint, when
/// given, goes once the output is written.
fn mine_loaded_with(
    config: &CheckedMineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    output: &Path,
    checkpoint: Option<&CheckpointAt>,
) -> Result<MinedUnits> {
    let cpu_before = pool.search_cpu_seconds();
    let (run, checkpoint) = mine_checkpointed(config, pool, loaded, checkpoint)?;
    let per_unit = run
        .results
        .iter()
        .map(|r| UnitFunnel {
            positions: r.positions,
            full_searches: r.full_searches,
            candidates: r.found.len() as u64,
            branches: r.branches,
            public: r.public,
            near_source: r.near_source,
        })
        .collect();
    let cpu_seconds = pool.search_cpu_seconds() - cpu_before;
    let puzzles = select_puzzles(&loaded.units, &run, config);
    let columns = columns::names(MINE_COLUMNS).map(String::from);
    let mut writer = PuzzleWriter::create(output, &columns)?;
    for puzzle in &puzzles {
        writer.write(puzzle)?;
    }
    writer.finish()?;
    if let Some(checkpoint) = checkpoint {
        checkpoint.finish()?;
    }
    let stats = run.stats();
    let games = loaded.units.len();
    let per_game = if games == 0 {
        0.0
    } else {
        puzzles.len() as f64 / games as f64
    };
    let per_puzzle = |x: f64| {
        if puzzles.is_empty() {
            None
        } else {
            Some(x / puzzles.len() as f64)
        }
    };
    let record = MineSummary {
        command: "mine",
        games,
        skipped: loaded.skipped.len(),
        skipped_reasons: loaded.skipped.iter().take(100).cloned().collect(),
        positions_analysed: stats.positions,
        full_searches: stats.full_searches,
        candidates: stats.candidates,
        puzzles: puzzles.len(),
        puzzles_per_game: per_game,
        engine_nodes: stats.nodes,
        engine_nodes_per_puzzle: per_puzzle(stats.nodes as f64),
        engine_cpu_seconds: cpu_seconds,
        engine_cpu_seconds_per_puzzle: per_puzzle(cpu_seconds),
        searches_by_step: (stats.steps.named().into_iter())
            .map(|(step, usage)| (step, usage.searches))
            .collect(),
        criterion: config.criterion.name(),
        exhaustive: config.exhaustive,
        output: output.display().to_string(),
    };
    Ok(MinedUnits {
        summary: Report::new(record.human(&loaded.skipped), record),
        per_unit,
        puzzles: puzzles.len() as u64,
    })
}

/// Mines `loaded`'s units, resuming from and recording into the checkpoint
/// `at` when given; gives the run and the checkpoint, open until the output
/// is written.
fn mine_checkpointed(
    config: &CheckedMineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    at: Option<&CheckpointAt>,
) -> Result<(MineRun, Option<Checkpoint>)> {
    let Some(at) = at else {
        return Ok((mine_units(&loaded.units, config, pool)?, None));
    };
    let mut checkpoint = Checkpoint::open(at, loaded.units.len())?;
    if !checkpoint.done.is_empty() {
        crate::core::progress::note(&format!(
            "mine: resuming: {} of {} games already mined ({})",
            checkpoint.done.len(),
            loaded.units.len(),
            at.path.display()
        ));
    }
    let run = mine_units_resumable(&loaded.units, config, pool, &mut checkpoint)?;
    Ok((run, Some(checkpoint)))
}

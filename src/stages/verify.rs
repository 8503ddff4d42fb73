//! `puzzleforge verify`: do mined puzzles survive a deeper look?
//!
//! Each puzzle position (FEN plus the first move) is searched again with
//! MultiPV 2 at K times the nodes of its `Nodes` column (or of `--nodes`),
//! and we report whether the engine's best move is still the solution's
//! first move and whether the puzzle's criterion still holds (Epoch's
//! thresholds, or Lichess's rule, from the `Criterion` column unless
//! `--criterion` says otherwise). One JSON line per puzzle goes to the
//! report file, the totals to the summary.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use shakmaty::{Chess, Position};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::line::PuzzleLine;
use crate::chess::record::Puzzle;
use crate::core::fileio::AtomicFile;
use crate::core::settings::{flags_over, switch_on};
use crate::core::summary::Summary;
use crate::engine::criterion::{self, Criterion};
use crate::engine::pool::{EnginePool, Session};
use crate::engine::process::{EngineError, Limit, SearchRequest};
use crate::engine::settings::{EngineArgs, EngineConfig};

/// `puzzleforge verify`. The search flags set the [`VerifyConfig`] keys of
/// their names ([`crate::core::settings::flags_over`]).
#[derive(clap::Args, Debug, Serialize)]
pub struct VerifyArgs {
    /// Puzzle file written by `mine`.
    #[serde(skip)]
    pub input: PathBuf,
    /// Search K times the puzzle's nodes.
    #[arg(long, default_value_t = 4)]
    pub factor: u64,
    /// Base nodes for puzzles without a Nodes column (or for all, with
    /// --nodes-override).
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Use --nodes for every puzzle, ignoring the Nodes column.
    #[arg(long, requires = "nodes")]
    #[serde(serialize_with = "switch_on")]
    pub nodes_override: bool,
    /// Criterion to check (default: each puzzle's Criterion column, else epoch).
    #[arg(long, value_enum)]
    pub criterion: Option<Criterion>,
    /// Per-puzzle report (JSON Lines). Default: INPUT with `.verify.jsonl`.
    #[arg(short = 'o', long = "output")]
    #[serde(skip)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    #[serde(skip)]
    pub engine: EngineArgs,
}

/// Settings of one verification run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Search K times the puzzle's nodes.
    pub factor: u64,
    /// Base nodes for puzzles without a Nodes column (or for all, with
    /// `nodes_override`).
    pub nodes: Option<u64>,
    pub nodes_override: bool,
    /// Criterion to check (default: each puzzle's Criterion column, else
    /// epoch).
    pub criterion: Option<Criterion>,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            factor: 4,
            nodes: None,
            nodes_override: false,
            criterion: None,
        }
    }
}

pub fn run_verify(args: &VerifyArgs) -> Result<Summary> {
    let config = flags_over(&VerifyConfig::default(), args)?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("puzzles".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_report_path(&args.input));
    run_verify_with(&config, &pool, &args.input, &output)
}

/// `puzzles.csv` -> `puzzles.verify.jsonl`, next to the input.
pub(crate) fn default_report_path(input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .trim_end_matches(".zst")
        .trim_end_matches(".csv")
        .trim_end_matches(".jsonl")
        .to_string();
    input.with_file_name(format!("{stem}.verify.jsonl"))
}

/// The verdict on one puzzle.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct Verdict {
    #[serde(rename = "PuzzleId")]
    pub id: String,
    pub line: u64,
    /// Why the puzzle could not be checked, if so.
    pub error: Option<String>,
    pub nodes: u64,
    pub expected_move: String,
    pub best_move: Option<String>,
    pub best_score: Option<i32>,
    pub second_score: Option<i32>,
    pub criterion: String,
    pub best_holds: bool,
    pub criterion_holds: bool,
}

struct Item {
    line: u64,
    puzzle: Puzzle,
    /// Position after the first move, or why there is none.
    setup: Result<(Chess, u64, Criterion), String>,
}

pub fn run_verify_with(
    config: &VerifyConfig,
    pool: &EnginePool,
    input: &Path,
    output: &Path,
) -> Result<Summary> {
    if config.factor == 0 {
        crate::bail_input!("--factor must be at least 1");
    }
    let mut items = Vec::new();
    let mut unreadable = Vec::new();
    crate::chess::record::for_each_row(input, |(line, row)| {
        match row {
            Ok(puzzle) => {
                let setup = prepare(&puzzle, config);
                items.push(Item {
                    line,
                    puzzle,
                    setup,
                });
            }
            Err(e) => unreadable.push(format!("{} line {line}: {e}", input.display())),
        }
        Ok(())
    })?;
    let verdicts = pool.map(&items, |session, _, item| check(session, item))?;
    let mut file = AtomicFile::create(output)?;
    for verdict in &verdicts {
        let text = serde_json::to_string(verdict)?;
        writeln!(file, "{text}").with_context(|| format!("writing {}", output.display()))?;
    }
    file.commit()?;
    let checked = verdicts.iter().filter(|v| v.error.is_none()).count();
    let best_holds = verdicts.iter().filter(|v| v.best_holds).count();
    let both = verdicts
        .iter()
        .filter(|v| v.best_holds && v.criterion_holds)
        .count();
    let errors = verdicts.len() - checked;
    let mut human = format!(
        "verify: {} puzzles, {checked} checked at {}x nodes: best move holds {best_holds}, best move and criterion hold {both}; {errors} not checkable, {} unreadable rows -> {}",
        verdicts.len(),
        config.factor,
        unreadable.len(),
        output.display()
    );
    for problem in unreadable.iter().take(10) {
        human.push_str(&format!("\n  {problem}"));
    }
    let json = json!({
        "command": "verify",
        "puzzles": verdicts.len(),
        "checked": checked,
        "factor": config.factor,
        "best_holds": best_holds,
        "best_and_criterion_hold": both,
        "not_checkable": errors,
        "unreadable_rows": unreadable.len(),
        "report": output.display().to_string(),
    });
    Ok(Summary::new(human, json))
}

fn prepare(puzzle: &Puzzle, config: &VerifyConfig) -> Result<(Chess, u64, Criterion), String> {
    let line = PuzzleLine::of_puzzle(puzzle).map_err(|e| e.to_string())?;
    let position = line.first_solver_position().clone();
    let column_nodes = puzzle
        .get(Column::Nodes)
        .and_then(|n| n.trim().parse::<u64>().ok());
    let base = if config.nodes_override {
        config.nodes
    } else {
        column_nodes.or(config.nodes)
    }
    .ok_or("no Nodes column value and no --nodes")?;
    let criterion = match config.criterion {
        Some(c) => c,
        None => match puzzle.get(Column::Criterion).unwrap_or("epoch") {
            "lichess" => Criterion::Lichess,
            _ => Criterion::Epoch,
        },
    };
    Ok((
        position,
        base.saturating_mul(config.factor).max(1),
        criterion,
    ))
}

fn check(session: &mut Session, item: &Item) -> Result<Verdict, EngineError> {
    let puzzle = &item.puzzle;
    let mut verdict = Verdict {
        id: puzzle.id.clone(),
        line: item.line,
        error: None,
        nodes: 0,
        expected_move: puzzle.moves.get(1).cloned().unwrap_or_default(),
        best_move: None,
        best_score: None,
        second_score: None,
        criterion: String::new(),
        best_holds: false,
        criterion_holds: false,
    };
    let (position, nodes, which) = match &item.setup {
        Ok(setup) => setup.clone(),
        Err(error) => {
            verdict.error = Some(error.clone());
            return Ok(verdict);
        }
    };
    verdict.criterion = which.name().to_string();
    let request = SearchRequest {
        fen: puzzle.fen.clone(),
        moves: vec![puzzle.moves[0].clone()],
        limit: Limit::Nodes(nodes),
        multipv: 2,
    };
    let result = session.search(&request)?;
    verdict.nodes = result.nodes;
    let legal = position.legal_moves().len();
    let best = result.lines.first();
    let second = if legal >= 2 {
        result.lines.get(1).map(|l| l.score)
    } else {
        None
    };
    verdict.best_move = best.and_then(|l| l.pv.first().cloned());
    verdict.best_score = best.map(|l| l.score.to_cp());
    verdict.second_score = second.map(|s| s.to_cp());
    verdict.best_holds = verdict.best_move.as_deref() == Some(verdict.expected_move.as_str());
    if let Some(best) = best.map(|l| l.score) {
        verdict.criterion_holds = match which {
            Criterion::Epoch => second.is_some() && criterion::epoch_unique(best, second),
            Criterion::Lichess => {
                let mut best_non_mating = None;
                if criterion::lichess_needs_non_mating(best, second) {
                    let mates = criterion::count_mates_in_one(&position);
                    if mates < legal {
                        let mut wide = request.clone();
                        wide.multipv = u32::try_from(mates + 1).unwrap_or(u32::MAX);
                        let searched = session.search(&wide)?;
                        verdict.nodes += searched.nodes;
                        best_non_mating = searched.lines.last().map(|line| line.score);
                    }
                }
                criterion::lichess_unique(best, second, best_non_mating)
            }
        };
    }
    Ok(verdict)
}

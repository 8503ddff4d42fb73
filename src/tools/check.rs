//! `puzzleforge check`: is the best move in each position unique?
//!
//! Reads `FEN` or `FEN,move` lines, analyses each position with MultiPV 2
//! across the engine pool (one position = one unit) and prints one JSON
//! object per position on stdout, in input order.

use crate::chess::line::{parse_move, read_fen, read_position};
use crate::core::summary::{Report, Summary};
use crate::engine::criterion::{self, Criterion, Judged, Turn};
use crate::engine::pool::{EnginePool, EngineStats};
use crate::engine::process::{Limit, SearchRequest};
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::engine::uci::Score;
use anyhow::Context;
use serde::Serialize;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// `puzzleforge check`'s flags (their help: `cli::check`).
#[derive(Debug, Clone)]
pub struct CheckArgs {
    pub input: PathBuf,
    /// `--puzzle`, repeated.
    pub puzzles: Vec<String>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    pub criterion: Criterion,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// One line of `check`'s output: the engine's verdict on one position,
/// and on the given move when there is one.
#[derive(Serialize)]
struct CheckLine<'a> {
    fen: String,
    best_move: &'a Option<UciMove>,
    best_score: Option<Score>,
    second_move: &'a Option<UciMove>,
    second_score: Option<Score>,
    unique: bool,
    why: &'a criterion::Why,
    criterion: &'static str,
    #[serde(rename = "PuzzleId", skip_serializing_if = "Option::is_none")]
    puzzle_id: Option<&'a String>,
    #[serde(rename = "move", skip_serializing_if = "Option::is_none")]
    given_move: Option<&'a UciMove>,
    #[serde(skip_serializing_if = "Option::is_none")]
    move_is_best: Option<bool>,
}

struct CheckItem {
    line: usize,
    /// The puzzle's id, for a puzzle file.
    id: Option<String>,
    /// The position as read (a puzzle's: its solver position): what the
    /// engine is sent and the report names.
    fen: Fen,
    /// The same position, to judge the engine's answer in.
    position: Chess,
    /// The given move, normalized to standard UCI.
    given_move: Option<UciMove>,
}

/// The items of a puzzle file or release: each puzzle's solver position
/// and first solver move (the Lichess convention puts the opponent's move
/// first); `None` when the input holds `FEN[,move]` lines.
fn puzzle_items(args: &CheckArgs) -> anyhow::Result<Option<Vec<CheckItem>>> {
    if args.input.as_os_str() == "-" {
        return Ok(None);
    }
    let Some((files, _)) = crate::tools::recheck::puzzle_files(&args.input)? else {
        if !args.puzzles.is_empty() {
            crate::bail_input!("--puzzle needs a puzzle file or a release folder");
        }
        return Ok(None);
    };
    let mut items = Vec::new();
    for (index, (file, puzzle)) in crate::tools::recheck::read_selected(&files, &args.puzzles)?
        .into_iter()
        .enumerate()
    {
        let line = puzzle.line().map_err(|e| {
            crate::core::error::bad_input(
                e.at(format_args!("{} puzzle {}", file.display(), puzzle.id))
                    .to_string(),
            )
        })?;
        let (Some(position), Some(solver_move)) = (line.positions().get(1), line.moves().get(1))
        else {
            crate::bail_input!(
                "{} puzzle {}: Moves needs the opponent's move and a solver move",
                file.display(),
                puzzle.id
            );
        };
        items.push(CheckItem {
            line: index + 1,
            id: Some(puzzle.id.clone()),
            fen: Fen::from_position(position, EnPassantMode::Legal),
            position: position.clone(),
            given_move: Some(UciMove::from_move(*solver_move, CastlingMode::Standard)),
        });
    }
    Ok(Some(items))
}

fn read_items(args: &CheckArgs) -> anyhow::Result<Vec<CheckItem>> {
    if let Some(items) = puzzle_items(args)? {
        return Ok(items);
    }
    let name = args.input.display().to_string();
    let reader: Box<dyn BufRead> = if args.input.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        crate::core::fileio::open_input(&args.input)?
    };
    let mut items = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let number = index + 1;
        let line = line.with_context(|| format!("cannot read {name} line {number}"))?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let (fen, given) = match text.split_once(',') {
            Some((fen, mv)) => (fen.trim(), Some(mv.trim())),
            None => (text, None),
        };
        let bad_line = |error: crate::chess::line::LineError| {
            crate::core::error::bad_input(
                error.at(format_args!("{name} line {number}")).to_string(),
            )
        };
        let fen = read_fen(fen).map_err(bad_line)?;
        let position = read_position(&fen).map_err(bad_line)?;
        let given_move = match given {
            None => None,
            Some(text) => {
                let mv = parse_move(&position, text).map_err(bad_line)?;
                Some(UciMove::from_move(mv, CastlingMode::Standard))
            }
        };
        items.push(CheckItem {
            line: number,
            id: None,
            fen,
            position,
            given_move,
        });
    }
    Ok(items)
}

/// Runs `puzzleforge check`.
pub fn run_check(args: &CheckArgs) -> anyhow::Result<Summary> {
    let limit = match (args.depth, args.nodes) {
        (Some(depth), None) if depth > 0 => Limit::Depth(depth),
        (None, Some(nodes)) if nodes > 0 => Limit::Nodes(nodes),
        _ => crate::bail_input!("give exactly one of --depth D or --nodes N (positive)"),
    };
    let items = read_items(args)?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.workers = pool_config.workers.min(items.len().max(1));
    pool_config.progress = Some("check".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    let criterion = args.criterion;
    let verdicts = judge_items(&pool, &items, limit, criterion, args)?;
    let Tally {
        unique: unique_count,
        best_matches,
        with_move,
    } = write_lines(&items, &verdicts, criterion)?;

    let stats = pool.stats();
    let total_nodes: u64 = stats.iter().map(|s| s.nodes).sum();
    let cpu: f64 = stats.iter().map(|s| s.cpu_seconds).sum();
    let restarts: u64 = stats.iter().map(|s| s.restarts).sum();
    let human = format!(
        "check: {} position{}, {} unique ({}), {}/{} given moves are best; engine {} x{}, {} nodes, {:.1} engine CPU s, {} restart{}",
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        unique_count,
        criterion.name(),
        best_matches,
        with_move,
        pool.engine_id(),
        pool.workers(),
        total_nodes,
        cpu,
        restarts,
        if restarts == 1 { "" } else { "s" },
    );
    let record = CheckSummary {
        command: "check",
        positions: items.len(),
        unique: unique_count,
        criterion: criterion.name(),
        limit,
        with_move,
        move_is_best: best_matches,
        engine: pool.engine_id(),
        engines: stats,
    };
    Report::new(human, record).into_summary()
}

/// The `check` summary (`--json`).
#[derive(Serialize)]
struct CheckSummary<'a> {
    command: &'static str,
    positions: usize,
    unique: u64,
    criterion: &'static str,
    limit: Limit,
    with_move: u64,
    move_is_best: u64,
    engine: &'a str,
    engines: Vec<EngineStats>,
}

/// Judges every item's position with the engines of `pool` (a position on
/// its own as a puzzle's first move); a failure names the input line.
fn judge_items(
    pool: &EnginePool,
    items: &[CheckItem],
    limit: Limit,
    criterion: Criterion,
    args: &CheckArgs,
) -> anyhow::Result<Vec<Judged>> {
    pool.map(items, |session, _, item| {
        let request = SearchRequest {
            fen: item.fen.clone(),
            moves: Vec::new(),
            limit,
            multipv: 2,
        };
        criterion::judge(
            session,
            &request,
            &item.position,
            criterion.into(),
            Turn::First,
        )
        .map(|(judged, _)| judged)
    })
    .map_err(
        |error| match error.downcast_ref::<crate::engine::pool::UnitFailed>() {
            Some(failed) => {
                let line = items.get(failed.item).map_or(0, |item| item.line);
                error.context(format!("checking {} line {line}", args.input.display()))
            }
            None => error,
        },
    )
}

/// What the lines written say in all.
struct Tally {
    /// Positions with a unique best move.
    unique: u64,
    /// Given moves that are the best move.
    best_matches: u64,
    /// Items with a given move.
    with_move: u64,
}

/// Writes one JSON line per item to stdout: the engine's verdict, and
/// whether the given move (if any) is the best.
fn write_lines(
    items: &[CheckItem],
    verdicts: &[Judged],
    criterion: Criterion,
) -> anyhow::Result<Tally> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut tally = Tally {
        unique: 0,
        best_matches: 0,
        with_move: 0,
    };
    for (item, verdict) in items.iter().zip(verdicts) {
        let mut line = CheckLine {
            fen: item.fen.to_string(),
            best_move: &verdict.best_move,
            best_score: verdict.best_score,
            second_move: &verdict.second_move,
            second_score: verdict.second_score,
            unique: verdict.unique(),
            why: &verdict.decision.why,
            criterion: criterion.name(),
            puzzle_id: item.id.as_ref(),
            given_move: None,
            move_is_best: None,
        };
        tally.unique += u64::from(verdict.unique());
        if let Some(given) = &item.given_move {
            let is_best = verdict.best_move.as_ref() == Some(given);
            tally.with_move += 1;
            tally.best_matches += u64::from(is_best);
            line.given_move = Some(given);
            line.move_is_best = Some(is_best);
        }
        let object = serde_json::to_value(&line)?;
        writeln!(out, "{object}").context("cannot write to stdout")?;
    }
    out.flush().context("cannot write to stdout")?;
    Ok(tally)
}

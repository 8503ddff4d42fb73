//! `puzzleforge recheck RELEASE` (or a puzzle file; `verify RELEASE`, and
//! `verify` with `--puzzle ID` or `--recheck`, are its alias): a release's
//! puzzles searched again by today's engines, with the settings the
//! release records, and per puzzle whether they agree with what the
//! release recorded.
//!
//! The settings are the release manifest's `settings.verify` (a release
//! `run` wrote; a puzzle file inside a release folder reads its folder's),
//! else `[verify]` of `--config`, else `verify`'s defaults; the command's
//! flags override them. Each puzzle is verified as the pipeline verified
//! it (the deeper search at `factor` times its `Nodes`, the second engine
//! on every solver move) and the verdict columns it would get now
//! (`VerifyDeeper`, `VerifySecond`, `Margin`, `Verified`) are compared with
//! the recorded ones. The margin is computed from the recorded mining
//! scores (`BestScore`, `SecondScore`) and the deeper search, so it also
//! checks that the search reproduces.
//!
//! One JSON line per puzzle on stdout; the summary on stderr (with `--json`
//! also on stdout, last). A puzzle that disagrees makes the command exit 2
//! after every puzzle is reported.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use shakmaty::uci::UciMove;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::record::{Puzzle, read_puzzles};
use crate::core::error::bad_input;
use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineConfig;
use crate::stages::release::folder::ReleaseFolder;
use crate::stages::release::manifest::{MANIFEST_FILE, ReleaseManifest};
use crate::stages::verify::{Verdict, VerifyArgs, VerifyConfig, verify_puzzles};

/// The verdict columns a re-check compares.
const COMPARED: [Column; 4] = [
    Column::VerifyDeeper,
    Column::VerifySecond,
    Column::Margin,
    Column::Verified,
];

/// The puzzle files `input` stands for, and the release folder they belong
/// to: a release folder's `train` and `test` (checked against its
/// manifest first), or a puzzle file (CSV with a `PuzzleId` header, JSON
/// Lines). `None` for anything else (`check`'s `FEN[,move]` lines).
pub(crate) fn puzzle_files(input: &Path) -> Result<Option<(Vec<PathBuf>, Option<PathBuf>)>> {
    if input.is_dir() {
        if !ReleaseFolder::at(input).is_release() {
            return Err(bad_input(format!(
                "{}: a folder without a puzzleforge release manifest.json",
                input.display()
            )));
        }
        ReleaseFolder::at(input).check()?;
        return Ok(Some((
            ReleaseFolder::at(input).split_files(),
            Some(input.to_path_buf()),
        )));
    }
    let name = input.to_string_lossy();
    let name = name.trim_end_matches(".zst");
    let is_puzzles = if name.ends_with(".jsonl") {
        true
    } else if name.ends_with(".csv") && input.is_file() {
        let mut first = String::new();
        crate::core::fileio::open_input(input)?
            .read_line(&mut first)
            .with_context(|| format!("reading {}", input.display()))?;
        first.trim_start_matches('\u{feff}').starts_with("PuzzleId")
    } else {
        false
    };
    if !is_puzzles {
        return Ok(None);
    }
    let folder = input
        .parent()
        .filter(|dir| ReleaseFolder::at(dir).is_release())
        .map(Path::to_path_buf);
    if let Some(folder) = &folder {
        ReleaseFolder::at(folder).check()?;
    }
    Ok(Some((vec![input.to_path_buf()], folder)))
}

/// The puzzles of `files` whose id is in `ids` (all when empty), each with
/// its file; an id found nowhere is an error naming it.
pub(crate) fn read_selected(files: &[PathBuf], ids: &[String]) -> Result<Vec<(PathBuf, Puzzle)>> {
    let mut selected = Vec::new();
    for file in files {
        for puzzle in read_puzzles(file)? {
            if ids.is_empty() || ids.contains(&puzzle.id) {
                selected.push((file.clone(), puzzle));
            }
        }
    }
    for id in ids {
        if !selected.iter().any(|(_, p)| &p.id == id) {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            return Err(bad_input(format!(
                "--puzzle {id}: no such puzzle in {}",
                names.join(", ")
            )));
        }
    }
    Ok(selected)
}

/// Whether `verify` re-checks, as the alias of `recheck` (a release
/// folder, `--puzzle`, `--recheck`), rather than writing a report for a
/// puzzle file.
pub fn is_recheck(args: &VerifyArgs) -> bool {
    args.input.is_dir() || args.recheck || !args.puzzles.is_empty()
}

/// The settings to re-check with: the release's recorded ones, else
/// `--config`'s `[verify]`, else the defaults; the flags over them.
fn settings(args: &VerifyArgs, release: Option<&Path>) -> Result<(VerifyConfig, String)> {
    let recorded = match release.filter(|_| args.config.is_none()) {
        Some(dir) => {
            let path = dir.join(MANIFEST_FILE);
            ReleaseManifest::load(dir)?
                .and_then(|manifest| manifest.settings?.verify)
                .map(|v| (v, path))
        }
        None => None,
    };
    let (base, from) = match (recorded, &args.config) {
        (Some((value, path)), _) => (
            serde_json::from_value::<VerifyConfig>(value)
                .map_err(|e| bad_input(format!("{}: settings.verify: {e}", path.display())))?,
            format!("{} settings.verify", path.display()),
        ),
        (None, Some(config)) => (
            crate::stages::verify::load_verify_section(config)?,
            format!("{} [verify]", config.display()),
        ),
        (None, None) => (VerifyConfig::default(), "verify's defaults".to_string()),
    };
    let config = crate::core::settings::flags_over(&base, &args.overrides)?;
    Ok((config, from))
}

/// Runs the re-check.
pub fn run_recheck(args: &VerifyArgs) -> Result<Summary> {
    let (files, release) = puzzle_files(&args.input)?.ok_or_else(|| {
        bad_input(format!(
            "{}: neither a release folder nor a puzzle file (CSV with a PuzzleId header, or JSON Lines)",
            args.input.display()
        ))
    })?;
    let (config, from) = settings(args, release.as_deref())?;
    let selected = read_selected(&files, &args.puzzles)?;
    // A puzzle puzzleforge did not mine has no Nodes to search from.
    let (checkable, skipped): (Vec<_>, Vec<_>) = selected.into_iter().partition(|(_, p)| {
        config.nodes.is_some() || p.get(Column::Nodes).is_some_and(|n| !n.trim().is_empty())
    });
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.workers = pool_config.workers.min(checkable.len().max(1));
    pool_config.progress = Some("puzzles".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    let second = match &config.second_engine {
        Some(second) => Some(second.pool(&pool)?),
        None => None,
    };
    let puzzles: Vec<Puzzle> = checkable.iter().map(|(_, p)| p.clone()).collect();
    let verdicts = verify_puzzles(&config, &pool, second.as_ref(), &puzzles)?;

    let differing = write_lines(&checkable, &skipped, &verdicts)?;
    let outcome = Outcome {
        checked: verdicts.len(),
        differing,
        skipped: skipped.len(),
    };
    recheck_summary(args, &config, &from, &outcome, &pool, second.as_ref())
}

/// What a re-check found.
struct Outcome {
    checked: usize,
    /// The ids of the puzzles whose verdict differs from the recorded one.
    differing: Vec<String>,
    /// Puzzles without a Nodes column to search from.
    skipped: usize,
}

/// Writes one JSON line per puzzle to stdout: each checked puzzle's
/// recorded and current verdict columns, then each skipped puzzle. Returns
/// the ids of the puzzles that differ.
fn write_lines(
    checkable: &[(PathBuf, Puzzle)],
    skipped: &[(PathBuf, Puzzle)],
    verdicts: &[Verdict],
) -> Result<Vec<String>> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut differing = Vec::new();
    for ((file, recorded), verdict) in checkable.iter().zip(verdicts) {
        let line = compare_line(file, recorded, verdict);
        if !line.agrees {
            differing.push(recorded.id.clone());
        }
        writeln!(out, "{}", serde_json::to_string(&line)?).context("cannot write to stdout")?;
    }
    for (file, puzzle) in skipped {
        let line = SkippedLine {
            puzzle_id: &puzzle.id,
            file: file.display().to_string(),
            skipped: "no Nodes column (not a puzzle puzzleforge mined): give --nodes N to search it",
        };
        writeln!(out, "{}", serde_json::to_string(&line)?).context("cannot write to stdout")?;
    }
    out.flush().context("cannot write to stdout")?;
    Ok(differing)
}

/// A puzzle the re-check could not search: its line on stdout.
#[derive(Serialize)]
struct SkippedLine<'a> {
    #[serde(rename = "PuzzleId")]
    puzzle_id: &'a str,
    file: String,
    skipped: &'static str,
}

/// One re-checked puzzle's line on stdout: its verdict columns as recorded
/// and as the search marks them now, and those that differ.
#[derive(Serialize)]
struct CompareLine<'a> {
    #[serde(rename = "PuzzleId")]
    puzzle_id: &'a str,
    file: String,
    expected_move: &'a str,
    recorded: RecordedVerdict,
    now: CurrentVerdict<'a>,
    differs: Vec<&'static str>,
    agrees: bool,
}

/// The compared verdict columns ([`COMPARED`]) of one puzzle, typed as the
/// release's JSON Lines hold them (booleans, numbers, null where empty); a
/// cell its type cannot read stays as written.
#[derive(Serialize)]
struct VerdictColumns {
    #[serde(rename = "VerifyDeeper")]
    verify_deeper: Value,
    #[serde(rename = "VerifySecond")]
    verify_second: Value,
    #[serde(rename = "Margin")]
    margin: Value,
    #[serde(rename = "Verified")]
    verified: Value,
}

impl VerdictColumns {
    fn of(puzzle: &Puzzle) -> VerdictColumns {
        VerdictColumns {
            verify_deeper: typed_cell(puzzle, Column::VerifyDeeper),
            verify_second: typed_cell(puzzle, Column::VerifySecond),
            margin: typed_cell(puzzle, Column::Margin),
            verified: typed_cell(puzzle, Column::Verified),
        }
    }
}

/// What the release recorded: the verdict columns and the mining search
/// the margin is computed from.
#[derive(Serialize)]
struct RecordedVerdict {
    #[serde(flatten)]
    columns: VerdictColumns,
    #[serde(rename = "BestScore")]
    best_score: Value,
    #[serde(rename = "SecondScore")]
    second_score: Value,
    #[serde(rename = "Nodes")]
    nodes: Value,
}

/// What the search says now: the verdict columns it would write and the
/// deeper search itself.
#[derive(Serialize)]
struct CurrentVerdict<'a> {
    #[serde(flatten)]
    columns: VerdictColumns,
    best_move: &'a Option<UciMove>,
    best_score: Option<i32>,
    second_score: Option<i32>,
    nodes: u64,
    error: &'a Option<String>,
}

/// A puzzle's cell of `column`, trimmed ("" where absent).
fn cell(puzzle: &Puzzle, column: Column) -> String {
    puzzle.get(column).unwrap_or_default().trim().to_string()
}

/// A puzzle's cell of `column` typed as the release's JSON Lines hold it;
/// a cell its type cannot read stays as written.
fn typed_cell(puzzle: &Puzzle, column: Column) -> Value {
    let text = cell(puzzle, column);
    column
        .kind()
        .json_value(&text)
        .unwrap_or(Value::String(text))
}

/// One re-checked puzzle's line: its verdict columns as recorded and as
/// `verdict` marks them now, and those that differ.
fn compare_line<'a>(file: &Path, recorded: &'a Puzzle, verdict: &'a Verdict) -> CompareLine<'a> {
    let mut now = recorded.clone();
    verdict.mark(&mut now);
    let differs: Vec<&'static str> = COMPARED
        .iter()
        .filter(|&&c| !same_cell(c, &cell(recorded, c), &cell(&now, c)))
        .map(|c| c.name())
        .collect();
    CompareLine {
        puzzle_id: &recorded.id,
        file: file.display().to_string(),
        expected_move: &verdict.expected_move,
        recorded: RecordedVerdict {
            columns: VerdictColumns::of(recorded),
            best_score: typed_cell(recorded, Column::BestScore),
            second_score: typed_cell(recorded, Column::SecondScore),
            nodes: typed_cell(recorded, Column::Nodes),
        },
        now: CurrentVerdict {
            columns: VerdictColumns::of(&now),
            best_move: &verdict.best_move,
            best_score: verdict.best_score,
            second_score: verdict.second_score,
            nodes: verdict.nodes,
            error: &verdict.error,
        },
        agrees: differs.is_empty(),
        differs,
    }
}

/// The re-check's summary (`verify --recheck --json`).
#[derive(Serialize)]
struct RecheckSummary<'a> {
    command: &'static str,
    recheck: bool,
    input: String,
    settings_from: &'a str,
    settings: &'a VerifyConfig,
    puzzles: usize,
    agree: usize,
    differ: &'a [String],
    skipped: usize,
    engine: &'a str,
    second_engine: Option<&'a str>,
}

/// The re-check's summary; a shortfall when any puzzle differs.
fn recheck_summary(
    args: &VerifyArgs,
    config: &VerifyConfig,
    from: &str,
    outcome: &Outcome,
    pool: &EnginePool,
    second: Option<&EnginePool>,
) -> Result<Summary> {
    let Outcome {
        checked,
        differing,
        skipped,
    } = outcome;
    let agree = checked - differing.len();
    let human = format!(
        "verify: re-checked {checked} puzzle{} of {} with {from} (factor {}, second engine {}): {agree} agree{} with what was recorded, {} differ{}{}{}; engine {}",
        if *checked == 1 { "" } else { "s" },
        args.input.display(),
        config.factor,
        config
            .second_engine
            .as_ref()
            .map_or("none".to_string(), |s| format!(
                "{} depth {}",
                second.map_or("?", |p| p.engine_id()),
                s.depth
            )),
        if agree == 1 { "s" } else { "" },
        differing.len(),
        if differing.len() == 1 { "s" } else { "" },
        if differing.is_empty() {
            String::new()
        } else {
            format!(" ({})", differing.join(", "))
        },
        if *skipped == 0 {
            String::new()
        } else {
            format!("; {skipped} skipped (no Nodes)")
        },
        pool.engine_id(),
    );
    let record = RecheckSummary {
        command: "verify",
        recheck: true,
        input: args.input.display().to_string(),
        settings_from: from,
        settings: config,
        puzzles: *checked,
        agree,
        differ: differing,
        skipped: *skipped,
        engine: pool.engine_id(),
        second_engine: second.map(|p| p.engine_id()),
    };
    let mut summary = Report::new(human, record).into_summary()?;
    if !differing.is_empty() {
        summary.shortfall = Some(format!(
            "verify: {} of {checked} puzzles differ from what {} recorded: {}",
            differing.len(),
            args.input.display(),
            differing.join(", ")
        ));
    }
    Ok(summary)
}

/// Two cells of `column` say the same: margins as numbers, verdicts as
/// their booleans (`pass` in older files is `True`).
fn same_cell(column: Column, recorded: &str, now: &str) -> bool {
    if column == Column::Margin {
        return match (recorded.parse::<f64>(), now.parse::<f64>()) {
            (Ok(a), Ok(b)) => (a - b).abs() < 1e-6,
            _ => recorded == now,
        };
    }
    let kind = column.kind();
    kind.json_value(recorded).ok() == kind.json_value(now).ok()
}

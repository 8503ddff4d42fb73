//! `puzzleforge export`: a release's puzzles in the formats evaluation
//! frameworks read. Every format but `lichess` has one record per solver
//! position: the line's moves are played with shakmaty between positions.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::{Value, json};
use shakmaty::{CastlingMode, Color, Position};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::chess::columns::{self, Column};
use crate::chess::line::{LineError, fen_of};
use crate::chess::record::{LICHESS_COLUMNS, Puzzle, for_each_row};
use crate::core::fileio::{AtomicFile, write_atomic};
use crate::core::summary::{Report, Summary};
use crate::stages::release::card::{fill_lichess_defaults, split_files};

/// Output formats of `export`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Inspect AI `Sample`s (JSON Lines: input, target, id, metadata).
    Inspect,
    /// DSPy examples with the APO paper's fields (JSON Lines).
    Dspy,
    /// OpenAI evals samples (JSON Lines: input chat messages, ideal).
    OpenaiEvals,
    /// The ten Lichess columns (CSV), then Source and RatingSource, one
    /// row per puzzle.
    Lichess,
}

/// One split of a release: the part of its puzzles in `train.csv` or in
/// `test.csv`. `eval --split` takes one; `export --split` one or both
/// ([`SplitChoice`]).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    Train,
    Test,
}

impl Split {
    /// The split's name: its files' stem (`test.csv`) and what reports say.
    pub const fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

/// Which split(s) to export.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitChoice {
    Train,
    Test,
    Both,
}

impl SplitChoice {
    /// The splits chosen, train before test.
    pub const fn splits(self) -> &'static [Split] {
        match self {
            SplitChoice::Train => &[Split::Train],
            SplitChoice::Test => &[Split::Test],
            SplitChoice::Both => &[Split::Train, Split::Test],
        }
    }
}

/// Command-line arguments of `puzzleforge export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// A release folder, as `run` or `split` writes it.
    pub release: PathBuf,
    /// The format to write: Inspect samples, DSPy examples, OpenAI evals
    /// samples, or Lichess-format CSV (see each value below).
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output folder; gets `train.jsonl`/`test.jsonl` (`.csv` for lichess).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Both splits by default, as `run`'s `[export]` does.
    #[arg(long, value_enum, default_value = "both")]
    pub split: SplitChoice,
}

/// One position the solver must answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolverPosition {
    /// 0-based index among the puzzle's solver positions.
    pub index: usize,
    /// Full FEN of the position (with clocks as played from the puzzle FEN).
    pub fen: String,
    pub side_to_move: Color,
    /// Every legal move in UCI, sorted.
    pub legal_moves: Vec<String>,
    /// The solution's move.
    pub expected: String,
    /// Moves accepted as correct (`PuzzleLine::accepted_moves`, the rule
    /// eval scores by): the expected move first, then every other move that
    /// checkmates (sorted).
    pub accepted: Vec<String>,
}

/// The solver positions of a puzzle, in order.
pub fn solver_positions(puzzle: &Puzzle) -> std::result::Result<Vec<SolverPosition>, LineError> {
    let line = puzzle.line()?;
    let positions = line
        .solver_turns()
        .enumerate()
        .map(|(index, (ply, position, solution))| {
            // The puzzle's own spelling of the move, as the release has it.
            let expected = puzzle.moves[ply].to_string();
            let legal = position.legal_moves();
            let mut legal_moves: Vec<String> = legal
                .iter()
                .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                .collect();
            legal_moves.sort();
            let mut accepted = vec![expected.clone()];
            let mut others: Vec<String> = line
                .accepted_moves(ply)
                .into_iter()
                .filter(|&m| m != solution)
                .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                .collect();
            others.sort();
            accepted.extend(others);
            SolverPosition {
                index,
                fen: fen_of(position),
                side_to_move: position.turn(),
                legal_moves,
                expected,
                accepted,
            }
        })
        .collect();
    Ok(positions)
}

fn color_name(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

const SYSTEM_PROMPT: &str = "You are a strong chess player. Find the best move in the given position. Answer with the move in UCI notation only (for example e2e4 or e7e8q).";

fn prompt(position: &SolverPosition) -> String {
    format!(
        "Position (FEN): {}\nSide to move: {}\nLegal moves (UCI): {}\nWhat is the best move? Answer in UCI.",
        position.fen,
        color_name(position.side_to_move),
        position.legal_moves.join(" ")
    )
}

fn target(position: &SolverPosition) -> Value {
    if position.accepted.len() == 1 {
        Value::from(position.expected.clone())
    } else {
        Value::from(position.accepted.clone())
    }
}

/// The puzzle's metadata every export with metadata carries, typed from
/// the release schema, with where the puzzle and its rating come from
/// (`source`: `lichess`, `selfplay`, ...; `rating_source`: `lichess` or
/// `estimated`), so a user can tell a Lichess rating from an estimate.
fn metadata(puzzle: &Puzzle, split: &str, position: &SolverPosition) -> Result<Value, String> {
    let mut map = serde_json::Map::new();
    map.insert("puzzle_id".into(), Value::from(puzzle.id.clone()));
    map.insert("position_index".into(), Value::from(position.index));
    map.insert("split".into(), Value::from(split));
    map.insert("fen".into(), Value::from(position.fen.clone()));
    map.insert(
        "normalized_fen".into(),
        Value::from(position_key_fen(&position.fen)),
    );
    for (key, column) in METADATA_COLUMNS {
        map.insert(key.into(), puzzle.typed_cell(column.name(), column.kind())?);
    }
    // The solver moves of the line itself, whatever the release says.
    map.insert("num_moves".into(), Value::from(puzzle.solver_moves()));
    Ok(Value::Object(map))
}

/// The release columns in every export's metadata, by metadata key.
const METADATA_COLUMNS: [(&str, Column); 13] = [
    ("rating", Column::Rating),
    ("rating_deviation", Column::RatingDeviation),
    ("rating_source", Column::RatingSource),
    ("rating_bin", Column::RatingBin),
    ("themes", Column::Themes),
    ("opening_tags", Column::OpeningTags),
    ("mate", Column::Mate),
    ("source", Column::Source),
    ("game_id", Column::GameId),
    // The `verify` verdicts; null for puzzles that were not verified.
    ("verify_deeper", Column::VerifyDeeper),
    ("verify_second", Column::VerifySecond),
    ("margin", Column::Margin),
    ("verified", Column::Verified),
];

/// The metadata keys DSPy examples carry beside their inputs and label.
const DSPY_METADATA: [&str; 9] = [
    "puzzle_id",
    "position_index",
    "rating",
    "rating_source",
    "themes",
    "mate",
    "num_moves",
    "source",
    "game_id",
];

fn record(
    format: ExportFormat,
    puzzle: &Puzzle,
    split: &str,
    position: &SolverPosition,
) -> Result<Value, String> {
    let id = format!("{}-{}", puzzle.id, position.index);
    let metadata = metadata(puzzle, split, position)?;
    Ok(match format {
        ExportFormat::Inspect => json!({
            "input": prompt(position),
            "target": target(position),
            "id": id,
            "metadata": metadata,
        }),
        ExportFormat::Dspy => {
            let mut example = json!({
                "position_fen": position.fen,
                "side_to_move": color_name(position.side_to_move),
                "legal_moves_uci": position.legal_moves.join(" "),
                "move": position.expected,
                "accepted_moves": position.accepted,
            });
            for key in DSPY_METADATA {
                example[key] = metadata[key].clone();
            }
            example
        }
        ExportFormat::OpenaiEvals => json!({
            "input": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt(position)},
            ],
            "ideal": target(position),
            "id": id,
            "metadata": metadata,
        }),
        ExportFormat::Lichess => Value::Null,
    })
}

fn position_key_fen(fen: &str) -> String {
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}

/// The DSPy field note: which keys are inputs and which is the label.
pub(crate) const DSPY_FIELDS_NOTE: &str = "DSPy: inputs are position_fen, side_to_move, legal_moves_uci; the label is move (accepted_moves lists every accepted answer; the other keys are ids and metadata). dspy_load.py loads them: dspy.Example(**row).with_inputs(\"position_fen\", \"side_to_move\", \"legal_moves_uci\").";

fn release_split_file(release: &Path, split: &str) -> Result<PathBuf> {
    split_files(release)
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{split}.")))
        })
        .ok_or_else(|| {
            crate::core::error::bad_input(format!(
                "{}: no {split}.csv or {split}.jsonl (is it a release folder?)",
                release.display()
            ))
        })
}

/// Runs `puzzleforge export`.
pub fn run_export(args: &ExportArgs) -> Result<Summary> {
    export_report(args)?.into_summary()
}

/// The JSON summary of an export.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct ExportSummary {
    command: &'static str,
    format: String,
    /// The export's folder (where the pipeline commits it).
    pub(crate) output: String,
    /// Each split exported, in the order exported.
    #[serde(serialize_with = "crate::core::summary::serialize_pairs")]
    splits: Vec<(String, SplitTotals)>,
    files: Vec<String>,
}

/// One split's puzzles read, records written and puzzles skipped.
#[derive(Serialize, Debug, Clone)]
struct SplitTotals {
    puzzles: usize,
    records: usize,
    skipped: usize,
}

/// [`run_export`], its record typed.
pub(crate) fn export_report(args: &ExportArgs) -> Result<Report<ExportSummary>> {
    if !args.release.is_dir() {
        bail_input!("export: {} is not a folder", args.release.display());
    }
    crate::stages::release::card::check_release_files(&args.release)?;
    let mut human = String::new();
    let mut files = Vec::new();
    let mut totals = Vec::new();
    let splits: Vec<&str> = args.split.splits().iter().map(|s| s.name()).collect();
    for split in &splits {
        let input = release_split_file(&args.release, split)?;
        let mut puzzles = Vec::new();
        let mut skipped = Vec::new();
        for_each_row(&input, |(line, row)| {
            match row {
                Ok(p) => puzzles.push(p),
                Err(e) => skipped.push(format!("{} line {line}: {e}", input.display())),
            }
            Ok(())
        })?;
        let (name, records) = match args.format {
            ExportFormat::Lichess => {
                let name = format!("{split}.csv");
                write_lichess(&args.output.join(&name), &puzzles)?;
                (name, puzzles.len())
            }
            format => {
                let name = format!("{split}.jsonl");
                let path = args.output.join(&name);
                let mut file = AtomicFile::create(&path)?;
                let mut count = 0usize;
                for puzzle in &puzzles {
                    let positions = match solver_positions(puzzle) {
                        Ok(p) => p,
                        Err(e) => {
                            let place = format!("{}: puzzle {}", input.display(), puzzle.id);
                            skipped.push(e.at(place).to_string());
                            continue;
                        }
                    };
                    for position in &positions {
                        let value = record(format, puzzle, split, position).map_err(|why| {
                            crate::core::error::bad_input(format!("{}: {why}", input.display()))
                        })?;
                        let mut line = serde_json::to_vec(&value)?;
                        line.push(b'\n');
                        file.write_all(&line)
                            .with_context(|| format!("writing {}", path.display()))?;
                        count += 1;
                    }
                }
                file.commit()?;
                (name, count)
            }
        };
        human.push_str(&format!(
            "export: {split}: {} puzzles -> {records} records in {}\n",
            puzzles.len(),
            args.output.join(&name).display()
        ));
        for problem in skipped.iter().take(5) {
            human.push_str(&format!("export: skipped {problem}\n"));
        }
        totals.push((
            split.to_string(),
            SplitTotals {
                puzzles: puzzles.len(),
                records,
                skipped: skipped.len(),
            },
        ));
        files.push(name);
    }
    write_tool_files(args, &splits, &mut human, &mut files)?;
    let record = ExportSummary {
        command: "export",
        format: format_name(args.format),
        output: args.output.display().to_string(),
        splits: totals,
        files,
    };
    Ok(Report::new(human, record))
}

/// Writes what the format's tool runs ([`tool_files`]) and, for DSPy, the
/// field note, adding each file to `files` and a line to `human`.
fn write_tool_files(
    args: &ExportArgs,
    splits: &[&str],
    human: &mut String,
    files: &mut Vec<String>,
) -> Result<()> {
    for (name, text) in tool_files(args.format, splits) {
        let path = args.output.join(&name);
        write_atomic(&path, text.as_bytes())?;
        human.push_str(&format!("export: {} runs it\n", path.display()));
        files.push(name);
    }
    if args.format == ExportFormat::Dspy {
        let note = json!({
            "inputs": ["position_fen", "side_to_move", "legal_moves_uci"],
            "label": "move",
            "metadata": std::iter::once("accepted_moves").chain(DSPY_METADATA).collect::<Vec<_>>(),
            "note": DSPY_FIELDS_NOTE,
        });
        let mut text = serde_json::to_string_pretty(&note)?;
        text.push('\n');
        write_atomic(&args.output.join("dspy_fields.json"), text.as_bytes())?;
        human.push_str(DSPY_FIELDS_NOTE);
        human.push('\n');
        files.push("dspy_fields.json".to_string());
    }
    Ok(())
}

/// The format's name as the CLI and `[export]` spell it (`openai-evals`),
/// which is also the folder `run` writes it to.
fn format_name(format: ExportFormat) -> String {
    format
        .to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_else(|| format!("{format:?}").to_lowercase())
}

/// The Inspect task file and the DSPy loader, templates with the export's
/// splits and prompt filled in.
const INSPECT_TASK: &str = include_str!("export_tools/inspect_task.py");
const DSPY_LOAD: &str = include_str!("export_tools/dspy_load.py");

/// What each format's tool needs to run the export unchanged, by file name
/// under the export folder: an Inspect task, an OpenAI evals registry entry
/// (the basic match eval, one per split), a DSPy loader. `splits` are the
/// splits written; the default split is `test` when it is one of them.
fn tool_files(format: ExportFormat, splits: &[&str]) -> Vec<(String, String)> {
    let default = if splits.contains(&"test") {
        "test"
    } else {
        splits.first().copied().unwrap_or("test")
    };
    let python_list = format!(
        "[{}]",
        splits
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let fill = |template: &str| {
        template
            .replace("__SPLITS__", &python_list)
            .replace("__DEFAULT_SPLIT__", &format!("{default:?}"))
            .replace("__SYSTEM_PROMPT__", &format!("{SYSTEM_PROMPT:?}"))
    };
    match format {
        ExportFormat::Inspect => vec![("task.py".to_string(), fill(INSPECT_TASK))],
        ExportFormat::Dspy => vec![("dspy_load.py".to_string(), fill(DSPY_LOAD))],
        ExportFormat::OpenaiEvals => vec![
            (
                "registry/evals/puzzleforge.yaml".to_string(),
                evals_registry(splits, default),
            ),
            (
                "registry/data/README.md".to_string(),
                EVALS_DATA_NOTE.to_string(),
            ),
        ],
        ExportFormat::Lichess => Vec::new(),
    }
}

/// evals looks for a relative `samples_jsonl` under the registry's `data`
/// folder, so the entry names the export's files from there.
const EVALS_DATA_NOTE: &str = "The samples of the evals in ../evals/puzzleforge.yaml are the \
export's train.jsonl and test.jsonl, two folders up: evals resolves a relative samples_jsonl \
under this folder.\n";

/// The OpenAI evals registry entry: `puzzleforge` (the default split) and
/// `puzzleforge.<split>.v0` for each split, all the basic match eval,
/// which accepts a sample when the answer starts with any listed `ideal`.
fn evals_registry(splits: &[&str], default: &str) -> String {
    let mut yaml = String::from(
        "# OpenAI evals registry entry written by `puzzleforge export --format openai-evals`.\n\
         # From the export folder: oaieval gpt-4o-mini puzzleforge --registry_path registry\n",
    );
    yaml.push_str(&format!(
        "puzzleforge:\n  id: puzzleforge.{default}.v0\n  description: puzzleforge chess puzzles, \
         the best move in UCI, matched against every accepted move\n  metrics: [accuracy]\n"
    ));
    for split in splits {
        yaml.push_str(&format!(
            "puzzleforge.{split}.v0:\n  class: evals.elsuite.basic.match:Match\n  args:\n    \
             samples_jsonl: ../../{split}.jsonl\n"
        ));
    }
    yaml
}

/// What the Lichess export writes after the ten Lichess columns: where
/// the puzzle and its rating come from, so a generated puzzle says so in
/// its own columns (the ten always hold values Lichess's format allows).
const LICHESS_EXTRA: [Column; 2] = [Column::Source, Column::RatingSource];

fn write_lichess(path: &Path, puzzles: &[Puzzle]) -> Result<()> {
    let file = AtomicFile::create(path)?;
    let mut csv = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(file);
    let header = LICHESS_COLUMNS
        .iter()
        .copied()
        .chain(LICHESS_EXTRA.iter().map(|c| c.name()));
    csv.write_record(header)?;
    for puzzle in puzzles {
        // A release drawn before the Lichess columns were always filled
        // still exports as Lichess's format wants.
        let mut puzzle = puzzle.clone();
        fill_lichess_defaults(&mut puzzle);
        let row: Vec<String> = columns::LICHESS
            .iter()
            .map(|c| puzzle.lichess_cell(*c).unwrap_or_default())
            .chain(
                LICHESS_EXTRA
                    .iter()
                    .map(|c| puzzle.get(c).unwrap_or_default().to_string()),
            )
            .collect();
        csv.write_record(&row)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let file = csv
        .into_inner()
        .map_err(|e| anyhow::anyhow!("flushing {}: {}", path.display(), e.error()))?;
    file.commit()
}

//! `puzzleforge export`: a release's puzzles in the formats evaluation
//! frameworks read. Every format but `lichess` has one record per solver
//! position: the line's moves are played with shakmaty between positions.
//! The pipeline's `export` stage reads its formats and splits from
//! `[export]` ([`ExportSection`]), checked here.

use anyhow::{Context, Result};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shakmaty::{CastlingMode, Color, Position};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::chess::columns::{self, Column};
use crate::chess::derive::fill_lichess_defaults;
use crate::chess::line::{LineError, fen_of};
use crate::chess::record::{LICHESS_COLUMNS, Puzzle, for_each_row};
use crate::core::error::bad_input;
use crate::core::fileio::{AtomicFile, write_atomic};
use crate::core::summary::{Report, Summary};
use crate::stages::release::folder::ReleaseFolder;

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "export-1";

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

/// `[export]`: the formats and splits the pipeline's `export` stage
/// writes, by name as `pipeline.toml` spells them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExportSection {
    /// Formats to export: inspect, dspy, openai-evals, lichess.
    pub formats: Vec<String>,
    /// Which split(s): train, test or both.
    pub split: String,
}

impl Default for ExportSection {
    fn default() -> Self {
        Self {
            formats: vec![
                "inspect".into(),
                "dspy".into(),
                "openai-evals".into(),
                "lichess".into(),
            ],
            split: "both".into(),
        }
    }
}

/// `[export]` checked: each format by its name, and the splits.
pub(crate) struct CheckedExport {
    pub(crate) formats: Vec<(String, ExportFormat)>,
    pub(crate) split: SplitChoice,
}

impl ExportSection {
    /// Checks the names of formats and splits (errors name `config_path`).
    pub(crate) fn checked(&self, config_path: &Path) -> Result<CheckedExport> {
        let split = SplitChoice::from_str(&self.split, true).map_err(|_| {
            bad_input(format!(
                "{}: export.split must be train, test or both, not {:?}",
                config_path.display(),
                self.split
            ))
        })?;
        let formats = self
            .formats
            .iter()
            .map(|name| {
                let format = ExportFormat::from_str(name, true).map_err(|_| {
                    bad_input(format!(
                        "{}: export.formats has unknown format {name:?} (inspect, dspy, openai-evals, lichess)",
                        config_path.display()
                    ))
                })?;
                Ok((name.clone(), format))
            })
            .collect::<Result<_>>()?;
        Ok(CheckedExport { formats, split })
    }
}

/// `puzzleforge export`'s flags (their help: `cli::export`).
#[derive(Debug, Clone)]
pub struct ExportArgs {
    pub release: PathBuf,
    pub format: ExportFormat,
    pub output: PathBuf,
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
#[derive(Serialize)]
struct Metadata<'a> {
    puzzle_id: &'a str,
    position_index: usize,
    split: &'a str,
    fen: &'a str,
    normalized_fen: String,
    rating: Value,
    rating_deviation: Value,
    rating_source: Value,
    rating_bin: Value,
    themes: Value,
    opening_tags: Value,
    mate: Value,
    source: Value,
    game_id: Value,
    // The `verify` verdicts; null for puzzles that were not verified.
    verify_deeper: Value,
    verify_second: Value,
    margin: Value,
    verified: Value,
    /// The solver moves of the line itself, whatever the release says.
    num_moves: usize,
}

impl<'a> Metadata<'a> {
    fn of(
        puzzle: &'a Puzzle,
        split: &'a str,
        position: &'a SolverPosition,
    ) -> Result<Metadata<'a>, String> {
        let cell = |column: Column| puzzle.typed_cell(column.name(), column.kind());
        Ok(Metadata {
            puzzle_id: &puzzle.id,
            position_index: position.index,
            split,
            fen: &position.fen,
            normalized_fen: position_key_fen(&position.fen),
            rating: cell(Column::Rating)?,
            rating_deviation: cell(Column::RatingDeviation)?,
            rating_source: cell(Column::RatingSource)?,
            rating_bin: cell(Column::RatingBin)?,
            themes: cell(Column::Themes)?,
            opening_tags: cell(Column::OpeningTags)?,
            mate: cell(Column::Mate)?,
            source: cell(Column::Source)?,
            game_id: cell(Column::GameId)?,
            verify_deeper: cell(Column::VerifyDeeper)?,
            verify_second: cell(Column::VerifySecond)?,
            margin: cell(Column::Margin)?,
            verified: cell(Column::Verified)?,
            num_moves: puzzle.solver_moves(),
        })
    }
}

/// The metadata keys DSPy examples carry beside their inputs and label
/// (the fields of [`DspyExample`] after `accepted_moves`).
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

/// One solver position as an export writes it, by format.
#[derive(Serialize)]
#[serde(untagged)]
enum ExportRecord<'a> {
    /// Inspect: a sample with its input, target, id and metadata.
    Inspect {
        input: String,
        target: Value,
        id: String,
        metadata: Metadata<'a>,
    },
    Dspy(DspyExample<'a>),
    /// OpenAI evals: the chat, the ideal answer, id and metadata.
    OpenaiEvals {
        input: [ChatTurn; 2],
        ideal: Value,
        id: String,
        metadata: Metadata<'a>,
    },
    /// Lichess exports write CSV rows, not records.
    Lichess,
}

/// A DSPy example: its inputs, label and accepted answers, then the
/// metadata keys of [`DSPY_METADATA`].
#[derive(Serialize)]
struct DspyExample<'a> {
    position_fen: &'a str,
    side_to_move: &'static str,
    legal_moves_uci: String,
    #[serde(rename = "move")]
    expected: &'a str,
    accepted_moves: &'a [String],
    puzzle_id: &'a str,
    position_index: usize,
    rating: Value,
    rating_source: Value,
    themes: Value,
    mate: Value,
    num_moves: usize,
    source: Value,
    game_id: Value,
}

/// One message of an OpenAI evals chat.
#[derive(Serialize)]
struct ChatTurn {
    role: &'static str,
    content: String,
}

fn record<'a>(
    format: ExportFormat,
    puzzle: &'a Puzzle,
    split: &'a str,
    position: &'a SolverPosition,
) -> Result<ExportRecord<'a>, String> {
    let id = format!("{}-{}", puzzle.id, position.index);
    let metadata = Metadata::of(puzzle, split, position)?;
    Ok(match format {
        ExportFormat::Inspect => ExportRecord::Inspect {
            input: prompt(position),
            target: target(position),
            id,
            metadata,
        },
        ExportFormat::Dspy => ExportRecord::Dspy(DspyExample {
            position_fen: &position.fen,
            side_to_move: color_name(position.side_to_move),
            legal_moves_uci: position.legal_moves.join(" "),
            expected: &position.expected,
            accepted_moves: &position.accepted,
            puzzle_id: metadata.puzzle_id,
            position_index: metadata.position_index,
            rating: metadata.rating,
            rating_source: metadata.rating_source,
            themes: metadata.themes,
            mate: metadata.mate,
            num_moves: metadata.num_moves,
            source: metadata.source,
            game_id: metadata.game_id,
        }),
        ExportFormat::OpenaiEvals => ExportRecord::OpenaiEvals {
            input: [
                ChatTurn {
                    role: "system",
                    content: SYSTEM_PROMPT.to_string(),
                },
                ChatTurn {
                    role: "user",
                    content: prompt(position),
                },
            ],
            ideal: target(position),
            id,
            metadata,
        },
        ExportFormat::Lichess => ExportRecord::Lichess,
    })
}

fn position_key_fen(fen: &str) -> String {
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}

/// The DSPy field note: which keys are inputs and which is the label.
pub(crate) const DSPY_FIELDS_NOTE: &str = "DSPy: inputs are position_fen, side_to_move, legal_moves_uci; the label is move (accepted_moves lists every accepted answer; the other keys are ids and metadata). dspy_load.py loads them: dspy.Example(**row).with_inputs(\"position_fen\", \"side_to_move\", \"legal_moves_uci\").";

fn release_split_file(release: &Path, split: &str) -> Result<PathBuf> {
    ReleaseFolder::at(release)
        .split_files()
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
    ReleaseFolder::at(&args.release).check()?;
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
                let count = write_records(
                    format,
                    split,
                    &puzzles,
                    &input,
                    &args.output.join(&name),
                    &mut skipped,
                )?;
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

/// Writes the records of every solver position of `puzzles` (of `split`,
/// read from `input`) to `path` as JSON Lines; returns how many. A puzzle
/// whose line does not play is added to `skipped`.
fn write_records(
    format: ExportFormat,
    split: &str,
    puzzles: &[Puzzle],
    input: &Path,
    path: &Path,
    skipped: &mut Vec<String>,
) -> Result<usize> {
    let mut file = AtomicFile::create(path)?;
    let mut count = 0usize;
    for puzzle in puzzles {
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
    Ok(count)
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
        let note = DspyFieldsNote {
            inputs: ["position_fen", "side_to_move", "legal_moves_uci"],
            label: "move",
            metadata: std::iter::once("accepted_moves")
                .chain(DSPY_METADATA)
                .collect(),
            note: DSPY_FIELDS_NOTE,
        };
        let mut text = serde_json::to_string_pretty(&note)?;
        text.push('\n');
        write_atomic(&args.output.join("dspy_fields.json"), text.as_bytes())?;
        human.push_str(DSPY_FIELDS_NOTE);
        human.push('\n');
        files.push("dspy_fields.json".to_string());
    }
    Ok(())
}

/// `dspy_fields.json`: which keys of a DSPy example are inputs, which is
/// the label and which are metadata.
#[derive(Serialize)]
struct DspyFieldsNote {
    inputs: [&'static str; 3],
    label: &'static str,
    metadata: Vec<&'static str>,
    note: &'static str,
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

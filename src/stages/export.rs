//! `puzzleforge export`: a release's puzzles in the formats evaluation
//! frameworks read. Every format but `lichess` has one record per solver
//! position: the line's moves are played with shakmaty between positions.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use shakmaty::{CastlingMode, Color, Position};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::chess::columns::{self, Column};
use crate::chess::line::{LineError, PuzzleLine, fen_of};
use crate::chess::record::{LICHESS_COLUMNS, Puzzle, for_each_row};
use crate::core::fileio::{AtomicFile, write_atomic};
use crate::core::summary::Summary;
use crate::stages::release::card::split_files;

/// Output formats of `export`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Inspect AI `Sample`s (JSON Lines: input, target, id, metadata).
    Inspect,
    /// DSPy examples with the APO paper's fields (JSON Lines).
    Dspy,
    /// OpenAI evals samples (JSON Lines: input chat messages, ideal).
    OpenaiEvals,
    /// The ten Lichess columns (CSV), one row per puzzle.
    Lichess,
}

/// Which split(s) to export.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitChoice {
    Train,
    Test,
    Both,
}

/// Command-line arguments of `puzzleforge export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// A release folder written by `split`.
    pub release: PathBuf,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output folder; gets `train.jsonl`/`test.jsonl` (`.csv` for lichess).
    #[arg(short, long)]
    pub output: PathBuf,
    #[arg(long, value_enum, default_value = "test")]
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
    /// Moves accepted as correct: the expected move first, then, on the
    /// puzzle's final move when it mates, every other mating move (sorted).
    pub accepted: Vec<String>,
}

/// The solver positions of a puzzle, in order.
pub fn solver_positions(puzzle: &Puzzle) -> std::result::Result<Vec<SolverPosition>, LineError> {
    let line = PuzzleLine::of_puzzle(puzzle)?;
    let turns = line.solver_moves();
    let positions = line
        .solver_turns()
        .enumerate()
        .map(|(index, (ply, position, _))| {
            // The puzzle's own spelling of the move, as the release has it.
            let expected = puzzle.moves[ply].clone();
            let legal = position.legal_moves();
            let mut legal_moves: Vec<String> = legal
                .iter()
                .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                .collect();
            legal_moves.sort();
            let mut accepted = vec![expected.clone()];
            if index + 1 == turns && line.ends_in_checkmate() {
                let mut mates: Vec<String> = legal
                    .iter()
                    .filter(|m| position.clone().play(**m).is_ok_and(|p| p.is_checkmate()))
                    .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                    .filter(|uci| *uci != expected)
                    .collect();
                mates.sort();
                accepted.extend(mates);
            }
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

/// The `verify` verdicts of a mined puzzle, into an Inspect sample's
/// metadata (puzzles that were not verified have none).
fn add_verdicts(metadata: &mut Value, puzzle: &Puzzle) {
    for (key, column) in [
        ("verify_deeper", Column::VerifyDeeper),
        ("verify_second", Column::VerifySecond),
        ("margin", Column::Margin),
        ("verified", Column::Verified),
    ] {
        if let Some(value) = puzzle.get(column) {
            metadata[key] = json!(value);
        }
    }
}

fn record(format: ExportFormat, puzzle: &Puzzle, split: &str, position: &SolverPosition) -> Value {
    let id = format!("{}-{}", puzzle.id, position.index);
    match format {
        ExportFormat::Inspect => {
            let mut sample = json!({
                "input": prompt(position),
                "target": target(position),
                "id": id,
                "metadata": {
                    "puzzle_id": puzzle.id,
                    "position_index": position.index,
                    "split": split,
                    "fen": position.fen,
                    "normalized_fen": position_key_fen(&position.fen),
                    "rating": puzzle.rating,
                    "themes": puzzle.themes.join(" "),
                    "rating_bin": puzzle.get(Column::RatingBin),
                    "num_moves": puzzle.solver_moves(),
                    "mate": puzzle.get(Column::Mate),
                    "game_id": puzzle.get(Column::GameId),
                },
            });
            add_verdicts(&mut sample["metadata"], puzzle);
            sample
        }
        ExportFormat::Dspy => json!({
            "position_fen": position.fen,
            "side_to_move": color_name(position.side_to_move),
            "legal_moves_uci": position.legal_moves.join(" "),
            "move": position.expected,
            "accepted_moves": position.accepted,
            "puzzle_id": puzzle.id,
            "position_index": position.index,
            "rating": puzzle.rating,
        }),
        ExportFormat::OpenaiEvals => json!({
            "input": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt(position)},
            ],
            "ideal": target(position),
            "id": id,
        }),
        ExportFormat::Lichess => Value::Null,
    }
}

fn position_key_fen(fen: &str) -> String {
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}

/// The DSPy field note: which keys are inputs and which is the label.
pub(crate) const DSPY_FIELDS_NOTE: &str = "DSPy: inputs are position_fen, side_to_move, legal_moves_uci; the label is move (accepted_moves lists every accepted answer; puzzle_id, position_index, rating are ids/metadata). Use dspy.Example(**row).with_inputs(\"position_fen\", \"side_to_move\", \"legal_moves_uci\").";

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
    if !args.release.is_dir() {
        bail_input!("export: {} is not a folder", args.release.display());
    }
    crate::stages::release::card::check_release_files(&args.release)?;
    let splits: &[&str] = match args.split {
        SplitChoice::Train => &["train"],
        SplitChoice::Test => &["test"],
        SplitChoice::Both => &["train", "test"],
    };
    let mut human = String::new();
    let mut files = Vec::new();
    let mut totals = serde_json::Map::new();
    for split in splits {
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
                        let mut line =
                            serde_json::to_vec(&record(format, puzzle, split, position))?;
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
        totals.insert(
            split.to_string(),
            json!({"puzzles": puzzles.len(), "records": records, "skipped": skipped.len()}),
        );
        files.push(name);
    }
    if args.format == ExportFormat::Dspy {
        let note = json!({
            "inputs": ["position_fen", "side_to_move", "legal_moves_uci"],
            "label": "move",
            "metadata": ["accepted_moves", "puzzle_id", "position_index", "rating"],
            "note": DSPY_FIELDS_NOTE,
        });
        let mut text = serde_json::to_string_pretty(&note)?;
        text.push('\n');
        write_atomic(&args.output.join("dspy_fields.json"), text.as_bytes())?;
        human.push_str(DSPY_FIELDS_NOTE);
        human.push('\n');
        files.push("dspy_fields.json".to_string());
    }
    Ok(Summary::new(
        human,
        json!({
            "command": "export",
            "format": format!("{:?}", args.format).to_lowercase(),
            "output": args.output.display().to_string(),
            "splits": totals,
            "files": files,
        }),
    ))
}

fn write_lichess(path: &Path, puzzles: &[Puzzle]) -> Result<()> {
    let file = AtomicFile::create(path)?;
    let mut csv = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(file);
    csv.write_record(LICHESS_COLUMNS)?;
    for puzzle in puzzles {
        let row: Vec<String> = columns::LICHESS
            .iter()
            .map(|c| puzzle.lichess_cell(*c).unwrap_or_default())
            .collect();
        csv.write_record(&row)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let file = csv
        .into_inner()
        .map_err(|e| anyhow::anyhow!("flushing {}: {}", path.display(), e.error()))?;
    file.commit()
}

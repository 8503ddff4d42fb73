//! Reading puzzle files, CSV or JSON Lines, compressed or not: the header
//! and its required columns, a row's cells into a [`Puzzle`], and the row
//! by row walk every stage reads through.

use anyhow::Result;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use crate::chess::columns::{Column, ColumnType};
use crate::chess::line::{read_fen, read_ucis};
use crate::chess::record::puzzle::{LICHESS_COLUMNS, Puzzle};
use crate::chess::record::row_error::{RowError, check_puzzle_id};
use crate::core::csv_reader::{MAX_ROW_BYTES, RecordReader, Row, read_line_bounded};
use crate::core::error::bad_input;
use crate::core::fileio::open_input;

/// The columns every puzzle file must have.
const REQUIRED_COLUMNS: [Column; 3] = [Column::PuzzleId, Column::Fen, Column::Moves];

/// Maps header names to column positions for one file.
#[derive(Clone, Debug)]
pub(crate) struct Header {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Header {
    /// Builds the map; `PuzzleId`, `FEN` and `Moves` are required.
    pub fn new(names: Vec<String>) -> std::result::Result<Self, String> {
        let names: Vec<String> = names
            .into_iter()
            .map(|n| n.trim_start_matches('\u{feff}').trim().to_string())
            .collect();
        let mut index = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            if index.insert(name.clone(), i).is_some() {
                return Err(format!("column {name} appears twice in the header"));
            }
        }
        for required in REQUIRED_COLUMNS {
            if !index.contains_key(required.name()) {
                return Err(format!("the header has no {required} column"));
            }
        }
        Ok(Self { names, index })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Reads one row of cells into a puzzle, checking only the shape of
    /// each field (integers parse, the cell count matches). Chess legality
    /// is the ingest stage's job.
    pub(crate) fn parse_row(&self, cells: &[&str]) -> std::result::Result<Puzzle, RowError> {
        if cells.len() != self.names.len() {
            return Err(RowError::new(
                "wrong_column_count",
                format!("{} columns, header has {}", cells.len(), self.names.len()),
            ));
        }
        let cell = |column: Column| {
            Cow::Borrowed(self.position(column.name()).map(|i| cells[i]).unwrap_or(""))
        };
        let mut extra = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            if !LICHESS_COLUMNS.contains(&name.as_str()) {
                extra.push((name.clone(), cells[i].to_string()));
            }
        }
        puzzle_from_cells(cell, extra)
    }
}

/// A puzzle from its Lichess cells as the CSV spells them (`cell` gives an
/// absent column as empty) and its other columns: integers parse, lists
/// split at whitespace, the FEN and the moves are read as shakmaty's types
/// (syntax only; `bad_fen`, `bad_move`). One rule for CSV rows and JSON
/// Lines objects.
fn puzzle_from_cells<'a>(
    cell: impl Fn(Column) -> Cow<'a, str>,
    extra: Vec<(String, String)>,
) -> std::result::Result<Puzzle, RowError> {
    let id = cell(Column::PuzzleId);
    check_puzzle_id(&id)?;
    puzzle_from_checked_cells(&cell, extra).map_err(|e| e.with_id(&id))
}

/// [`puzzle_from_cells`] after the id's check.
fn puzzle_from_checked_cells<'a>(
    cell: &impl Fn(Column) -> Cow<'a, str>,
    extra: Vec<(String, String)>,
) -> std::result::Result<Puzzle, RowError> {
    let int = |name: Column| -> std::result::Result<Option<i32>, RowError> {
        let cell = cell(name);
        let text = cell.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<i32>().map(Some).map_err(|_| {
            RowError::new("bad_integer", format!("{name} is not an integer: {text:?}"))
        })
    };
    let words = |column: Column| -> Vec<String> {
        cell(column)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let rating = int(Column::Rating)?;
    let rating_deviation = int(Column::RatingDeviation)?;
    let popularity = int(Column::Popularity)?;
    let nb_plays = int(Column::NbPlays)?;
    let fen = read_fen(&cell(Column::Fen))?;
    let moves = read_ucis(cell(Column::Moves).split_whitespace())?;
    Ok(Puzzle {
        id: cell(Column::PuzzleId).trim().to_string(),
        fen,
        moves,
        rating,
        rating_deviation,
        popularity,
        nb_plays,
        themes: words(Column::Themes),
        game_url: cell(Column::GameUrl).trim().to_string(),
        opening_tags: words(Column::OpeningTags),
        extra,
    })
}

/// Reads a puzzle from one JSON Lines object.
pub(crate) fn puzzle_from_json(value: &Value) -> std::result::Result<Puzzle, RowError> {
    let object = value
        .as_object()
        .ok_or_else(|| RowError::new("not_an_object", "the line is not a JSON object"))?;
    let id = object
        .get(Column::PuzzleId.name())
        .map(ColumnType::cell_of)
        .unwrap_or_default();
    for required in REQUIRED_COLUMNS {
        if !object.contains_key(required.name()) {
            return Err(RowError::new("missing_column", format!("no {required} key")).with_id(&id));
        }
    }
    let extra = object
        .iter()
        .filter(|(key, _)| !LICHESS_COLUMNS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), ColumnType::cell_of(value)))
        .collect();
    // Typed JSON Lines (a release's) read back as the CSV spells them.
    let cell = |column: Column| {
        Cow::Owned(
            object
                .get(column.name())
                .map(ColumnType::cell_of)
                .unwrap_or_default(),
        )
    };
    puzzle_from_cells(cell, extra)
}

/// One row as read from a puzzle file: its 1-based line number and either
/// the puzzle or why it could not be read.
pub(crate) type ReadRow = (u64, std::result::Result<Puzzle, RowError>);

/// Reads every row of a puzzle file (CSV or JSON Lines, plain or zstd),
/// calling `on_row` for each in file order. Rows that cannot be read are
/// passed on as errors with their line number; only an unreadable file
/// (missing, bad header, corrupt compression) is an error of the call.
pub(crate) fn for_each_row(path: &Path, on_row: impl FnMut(ReadRow) -> Result<()>) -> Result<()> {
    let mut input = open_input(path)?;
    let first = crate::core::fileio::first_content_byte(&mut input, path)?;
    match first {
        None => Err(bad_input(format!("{}: the file is empty", path.display()))),
        Some(b'{') => for_each_json_row(input, path, on_row),
        Some(_) => for_each_csv_row(input, path, on_row),
    }
}

/// [`for_each_row`] of a JSON Lines file: one object a line, blank lines
/// skipped.
fn for_each_json_row(
    mut input: Box<dyn std::io::BufRead + Send>,
    path: &Path,
    mut on_row: impl FnMut(ReadRow) -> Result<()>,
) -> Result<()> {
    let mut line = Vec::new();
    let mut line_number = 0u64;
    loop {
        line.clear();
        let (passed, too_long) =
            read_line_bounded(&mut input, &mut line, MAX_ROW_BYTES).map_err(|e| {
                bad_input(format!(
                    "{}: read failed at line {}: {e}",
                    path.display(),
                    line_number + 1
                ))
            })?;
        if passed == 0 {
            return Ok(());
        }
        line_number += 1;
        if too_long {
            on_row((line_number, Err(RowError::too_long())))?;
            continue;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(t) => t.trim(),
            Err(_) => {
                on_row((line_number, Err(RowError::new("invalid_utf8", "not UTF-8"))))?;
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        let row = serde_json::from_str::<Value>(text)
            .map_err(|e| RowError::new("bad_json", e.to_string()))
            .and_then(|value| puzzle_from_json(&value));
        on_row((line_number, row))?;
    }
}

/// [`for_each_row`] of a CSV file: its header, then each row by the
/// header's columns.
fn for_each_csv_row(
    input: Box<dyn std::io::BufRead + Send>,
    path: &Path,
    mut on_row: impl FnMut(ReadRow) -> Result<()>,
) -> Result<()> {
    // Every CSV goes through the one bounded reader: no row is held
    // beyond its bound, however long, and memory stays flat.
    let mut reader = RecordReader::new(Box::new(input));
    let mut record = Row::new();
    match reader.read(&mut record) {
        Ok(Some(_)) if record.too_long => {
            return Err(bad_input(format!(
                "{}: the header is longer than {MAX_ROW_BYTES} bytes",
                path.display()
            )));
        }
        Ok(Some(line)) => {
            if let Some(quote) = record.open_quote {
                return Err(bad_input(format!(
                    "{} line {line}: bad header: {}",
                    path.display(),
                    RowError::open_quote(quote, line)
                )));
            }
        }
        Ok(None) => return Err(bad_input(format!("{}: no header", path.display()))),
        Err(e) => {
            return Err(bad_input(format!("{}: bad header: {e}", path.display())));
        }
    }
    let names = record
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let header = Header::new(names).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    let id_at = header.position(Column::PuzzleId.name());
    loop {
        match reader.read(&mut record) {
            Ok(None) => return Ok(()),
            Ok(Some(line)) => {
                // The id of a row that cannot be read, where its own cell
                // can be: a reject names its puzzle.
                let id = id_at
                    .and_then(|i| record.get(i))
                    .and_then(|cell| std::str::from_utf8(cell).ok())
                    .unwrap_or_default()
                    .to_string();
                if let Some(error) = RowError::of_unread(&record, line) {
                    on_row((line, Err(error.with_id(&id))))?;
                    continue;
                }
                let cells: std::result::Result<Vec<&str>, _> =
                    record.iter().map(std::str::from_utf8).collect();
                let row = match cells {
                    Ok(cells) => header.parse_row(&cells),
                    Err(_) => Err(RowError::new("invalid_utf8", "the row is not UTF-8")),
                };
                on_row((line, row.map_err(|e| e.with_id(&id))))?;
            }
            Err(e) => {
                return Err(bad_input(format!(
                    "{}: unreadable after line {}: {e}",
                    path.display(),
                    reader.line()
                )));
            }
        }
    }
}

/// Reads a puzzle file that must be clean (our own intermediate outputs):
/// the first bad row is an error naming the file, line and reason.
pub fn read_puzzles(path: &Path) -> Result<Vec<Puzzle>> {
    let mut puzzles = Vec::new();
    for_each_row(path, |(line, row)| match row {
        Ok(puzzle) => {
            puzzles.push(puzzle);
            Ok(())
        }
        Err(e) => Err(bad_input(format!("{} line {line}: {e}", path.display()))),
    })?;
    Ok(puzzles)
}

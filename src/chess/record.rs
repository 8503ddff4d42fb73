//! The one puzzle record every stage reads and writes.
//!
//! The convention is Lichess's: `FEN` is the position *before* the
//! opponent's move, `Moves` is UCI with the opponent's move first, then the
//! solver and the opponent alternating. The ten Lichess columns come first,
//! in Lichess's order; every other column (`DailyDate`, the APO benchmark's
//! `NumMoves`/`RatingBin`/..., the columns our stages add) follows in
//! [`Puzzle::extra`], in the order it was first seen.
//!
//! What a puzzle's cells mean (its length in solver moves, whether it is a
//! mate, its source game, where its rating comes from) are its methods in
//! [`crate::chess::derive`], the home of a puzzle's rules.
//!
//! Files are CSV or JSON Lines, either optionally zstd-compressed. On input
//! the compression is detected from magic bytes and the format from the
//! first byte of content (`{` means JSON Lines); on output the file name
//! decides (`.csv`, `.jsonl`, each optionally followed by `.zst`).

use anyhow::{Context, Result};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;

use crate::chess::columns::{self, Column, ColumnType};
use crate::chess::line::{LineError, PuzzleLine, read_fen, read_ucis, ucis_text};
use crate::core::csv_reader::{
    MAX_ROW_BYTES, OpenQuote, Reach, RecordReader, Row, read_line_bounded,
};
use crate::core::error::bad_input;
use crate::core::fileio::{AtomicFile, open_input};

/// The Lichess puzzle CSV columns' names, in order.
pub const LICHESS_COLUMNS: [&str; 10] = columns::names(columns::LICHESS);

/// A chess puzzle in the Lichess convention, plus any further columns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Puzzle {
    pub id: String,
    /// Position before the opponent's first move, read once where the
    /// text entered (a file's row, a mined position) and printed back by
    /// the writers; it prints as it was read for every FEN Lichess and we
    /// write (the round-trip test below holds the test data to that).
    pub fen: Fen,
    /// UCI moves: opponent, solver, opponent, ..., solver (syntax checked
    /// where read, legality by [`crate::chess::line::PuzzleLine`]).
    pub moves: Vec<UciMove>,
    /// Lichess Glicko rating; `None` until a puzzle is rated.
    pub rating: Option<i32>,
    pub rating_deviation: Option<i32>,
    pub popularity: Option<i32>,
    pub nb_plays: Option<i32>,
    pub themes: Vec<String>,
    pub game_url: String,
    pub opening_tags: Vec<String>,
    /// Columns after the Lichess ten, in order.
    pub extra: Vec<(String, String)>,
}

impl Puzzle {
    /// The moves as the `Moves` column spells them: UCI, single spaces.
    pub fn moves_text(&self) -> String {
        ucis_text(&self.moves)
    }

    /// The puzzle's line played on the board: the FEN must be a legal
    /// position, every move legal where it is played, and the line a
    /// puzzle's shape ([`PuzzleLine::of_read`]).
    pub(crate) fn line(&self) -> Result<PuzzleLine, LineError> {
        PuzzleLine::of_read(&self.fen, &self.moves)
    }

    /// The value of an extra column (a [`Column`] or any other name).
    pub fn get(&self, column: impl AsRef<str>) -> Option<&str> {
        let column = column.as_ref();
        self.extra
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, value)| value.as_str())
    }

    /// Sets an extra column, replacing its value or appending it.
    pub fn set(&mut self, column: impl AsRef<str>, value: impl Into<String>) {
        let column = column.as_ref();
        let value = value.into();
        match self.extra.iter_mut().find(|(name, _)| name == column) {
            Some(slot) => slot.1 = value,
            None => self.extra.push((column.to_string(), value)),
        }
    }

    /// A check's verdict column (`Verified`, `VerifyDeeper`,
    /// `VerifySecond`): `Some(true)` for `True` (or an older file's
    /// `pass`), `Some(false)` for `False` (`fail`), `None` when the check
    /// did not run (empty, `none`, no such column) or the cell is not a
    /// verdict.
    pub fn check(&self, column: Column) -> Option<bool> {
        ColumnType::Check
            .json_value(self.get(column)?)
            .ok()
            .and_then(|value| value.as_bool())
    }

    /// True when the puzzle has the given theme.
    pub fn has_theme(&self, theme: &str) -> bool {
        self.themes.iter().any(|t| t == theme)
    }

    /// The value of a column by its header name, as it is written to CSV.
    pub fn column(&self, column: &str) -> Option<String> {
        Column::from_name(column)
            .and_then(|known| self.lichess_cell(known))
            .or_else(|| self.get(column).map(str::to_string))
    }

    /// The value of one of the ten Lichess columns as it is written to CSV;
    /// `None` for any other column (those live in [`Puzzle::extra`]).
    pub(crate) fn lichess_cell(&self, column: Column) -> Option<String> {
        let int = |v: Option<i32>| v.map(|n| n.to_string()).unwrap_or_default();
        Some(match column {
            Column::PuzzleId => self.id.clone(),
            Column::Fen => self.fen.to_string(),
            Column::Moves => self.moves_text(),
            Column::Rating => int(self.rating),
            Column::RatingDeviation => int(self.rating_deviation),
            Column::Popularity => int(self.popularity),
            Column::NbPlays => int(self.nb_plays),
            Column::Themes => self.themes.join(" "),
            Column::GameUrl => self.game_url.clone(),
            Column::OpeningTags => self.opening_tags.join(" "),
            _ => return None,
        })
    }

    /// The record as a JSON object: the same keys and values as the CSV
    /// columns, with the four integer columns as numbers (or null).
    pub(crate) fn to_json(&self) -> Value {
        let mut map = Map::new();
        let int = |v: Option<i32>| v.map(Value::from).unwrap_or(Value::Null);
        for column in columns::LICHESS {
            let value = match column {
                Column::Rating => int(self.rating),
                Column::RatingDeviation => int(self.rating_deviation),
                Column::Popularity => int(self.popularity),
                Column::NbPlays => int(self.nb_plays),
                text => self.lichess_cell(text).unwrap_or_default().into(),
            };
            map.insert(column.name().into(), value);
        }
        for (name, value) in &self.extra {
            map.insert(name.clone(), value.clone().into());
        }
        Value::Object(map)
    }

    /// The record as a typed JSON object with exactly the Lichess ten and
    /// `extra_columns`, in order: each value of its column's
    /// [`ColumnType`] (numbers, booleans, lists of strings), `null` where
    /// the cell is empty or the puzzle lacks the column. An error names
    /// the column and what it held.
    pub(crate) fn to_typed_json(&self, extra_columns: &[String]) -> Result<Value, RowError> {
        let mut map = Map::new();
        let lichess = columns::LICHESS.iter().map(|c| (c.name(), c.kind()));
        let extra = extra_columns
            .iter()
            .map(|name| (name.as_str(), ColumnType::of(name)));
        for (name, kind) in lichess.chain(extra) {
            let value = self
                .typed_cell(name, kind)
                .map_err(|why| RowError::new("bad_value", why))?;
            map.insert(name.to_string(), value);
        }
        Ok(Value::Object(map))
    }

    /// The column `name` as a JSON value of type `kind` (`null` when empty
    /// or absent); an error names the puzzle, the column and what it held.
    pub(crate) fn typed_cell(&self, name: &str, kind: ColumnType) -> Result<Value, String> {
        let cell = self.column(name).unwrap_or_default();
        kind.json_value(&cell)
            .map_err(|why| format!("puzzle {}: {name} {why}", self.id))
    }
}

/// The line of each PuzzleId first met in a file: a repeated id is a
/// reject naming the line of the first, which is kept, so that a file keys
/// one puzzle by one id (as `ingest puzzles` does; `rate` and `tag` read
/// through this).
#[derive(Default)]
pub(crate) struct FirstLines(HashMap<String, u64>);

impl FirstLines {
    /// `Ok`, recording `id` at `line`, when the id is new; else the
    /// `duplicate_id` reject naming the line of its first row.
    pub(crate) fn admit(&mut self, id: &str, line: u64) -> std::result::Result<(), RowError> {
        if let Some(first) = self.0.get(id) {
            return Err(RowError::new(
                "duplicate_id",
                format!("the PuzzleId appeared on line {first}, which is kept"),
            ));
        }
        self.0.insert(id.to_string(), line);
        Ok(())
    }
}

/// Why one row could not be read as a puzzle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    /// Short machine-friendly reason, used for counting (`bad_integer`, ...).
    pub reason: &'static str,
    /// Human detail: which column and what it held.
    pub detail: String,
}

impl RowError {
    pub fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }

    /// The reject of a row the CSV reader could not read whole (too long,
    /// or a quote its line ended inside), or `None` for a row read whole.
    pub(crate) fn of_unread(row: &Row, line: u64) -> Option<Self> {
        if row.too_long {
            return Some(Self::too_long());
        }
        row.open_quote.map(|quote| Self::open_quote(quote, line))
    }

    /// The reject of a row whose line ends inside a quoted field: the line
    /// the quote opened on, and how many lines the csv grammar would have
    /// read into the field, the rows among them lost.
    pub(crate) fn open_quote(quote: OpenQuote, line: u64) -> Self {
        let OpenQuote { column, reach } = quote;
        let lines = |n: u64| match n {
            1 => "1 line".to_string(),
            n => format!("{n} lines"),
        };
        let read_on = match reach {
            Reach::EndsOn(end) => format!(
                "read on, it would take {}, to line {end}",
                lines(end - line + 1)
            ),
            Reach::EndOfInput(after) => format!(
                "read on, it would take {}, to the end of the file",
                lines(after + 1)
            ),
            Reach::Beyond(after) => format!(
                "read on, it would take more than {} ({MAX_ROW_BYTES} bytes)",
                lines(after + 1)
            ),
        };
        RowError::new(
            "unclosed_quote",
            format!(
                "a quoted field opens in column {column} on line {line} and is not closed by \
                 the end of that line ({read_on}); puzzle rows hold no line break inside a \
                 field, so line {line} is rejected alone and the next line read as the next row"
            ),
        )
    }

    /// The reject of a row longer than the reader holds.
    pub(crate) fn too_long() -> Self {
        use crate::core::csv_reader::{MAX_ROW_BYTES, TOO_LONG_KEPT};
        RowError::new(
            "row_too_long",
            format!(
                "the row is longer than {MAX_ROW_BYTES} bytes; its first {TOO_LONG_KEPT} bytes are kept for this line"
            ),
        )
    }
}

/// A bad line is a bad row: same reason code and detail (the row's file
/// and line are the reader's to add).
impl From<LineError> for RowError {
    fn from(error: LineError) -> Self {
        RowError::new(error.code(), error.detail)
    }
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.detail)
    }
}

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
    for required in REQUIRED_COLUMNS {
        if !object.contains_key(required.name()) {
            return Err(RowError::new(
                "missing_column",
                format!("no {required} key"),
            ));
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

/// File formats for puzzle files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// The format an output file name asks for: `.csv`, `.jsonl` (or
    /// `.json`), each optionally followed by `.zst`.
    pub(crate) fn from_output_path(path: &Path) -> Result<Self> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let name = name.strip_suffix(".zst").unwrap_or(&name);
        if name.ends_with(".csv") {
            Ok(Format::Csv)
        } else if name.ends_with(".jsonl") || name.ends_with(".json") {
            Ok(Format::Jsonl)
        } else {
            Err(bad_input(format!(
                "{}: cannot tell the output format from the name; use .csv, .jsonl, .csv.zst or .jsonl.zst",
                path.display()
            )))
        }
    }
}

/// Streams puzzles into a CSV or JSON Lines file, written atomically.
pub(crate) struct PuzzleWriter {
    sink: Sink,
    extra_columns: Vec<String>,
    written: u64,
}

enum Sink {
    Csv(Box<csv::Writer<AtomicFile>>),
    /// Every puzzle whole, its cells as text (the stages' working files).
    Jsonl(AtomicFile),
    /// Exactly the writer's columns, typed (a release's files).
    TypedJsonl(AtomicFile),
}

impl PuzzleWriter {
    /// Creates the writer. For CSV, `extra_columns` are the columns written
    /// after the Lichess ten (a puzzle's other extra columns are dropped,
    /// missing ones are empty); JSON Lines writes every puzzle whole.
    pub(crate) fn create(path: &Path, extra_columns: &[String]) -> Result<Self> {
        Self::open(path, extra_columns, false)
    }

    /// Creates a writer whose CSV and JSON Lines both hold exactly the
    /// Lichess ten and `extra_columns`: JSON Lines objects have every one
    /// of them as a key, typed by its [`ColumnType`] (`null` where empty),
    /// so every row of a release has one schema.
    pub(crate) fn create_typed(path: &Path, extra_columns: &[String]) -> Result<Self> {
        Self::open(path, extra_columns, true)
    }

    fn open(path: &Path, extra_columns: &[String], typed: bool) -> Result<Self> {
        let file = AtomicFile::create(path)?;
        let sink = match Format::from_output_path(path)? {
            Format::Csv => {
                let mut csv = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::Any(b'\n'))
                    .from_writer(file);
                let header: Vec<&str> = LICHESS_COLUMNS
                    .iter()
                    .copied()
                    .chain(extra_columns.iter().map(String::as_str))
                    .collect();
                csv.write_record(&header)
                    .with_context(|| format!("writing {}", path.display()))?;
                Sink::Csv(Box::new(csv))
            }
            Format::Jsonl if typed => Sink::TypedJsonl(file),
            Format::Jsonl => Sink::Jsonl(file),
        };
        Ok(Self {
            sink,
            extra_columns: extra_columns.to_vec(),
            written: 0,
        })
    }

    /// Appends one puzzle.
    pub fn write(&mut self, puzzle: &Puzzle) -> Result<()> {
        match &mut self.sink {
            Sink::Csv(csv) => {
                let mut row: Vec<String> = columns::LICHESS
                    .iter()
                    .map(|c| puzzle.lichess_cell(*c).unwrap_or_default())
                    .collect();
                for column in &self.extra_columns {
                    row.push(puzzle.get(column).unwrap_or("").to_string());
                }
                csv.write_record(&row)
                    .with_context(|| format!("writing {}", csv.get_ref().path().display()))?;
            }
            Sink::Jsonl(file) => {
                let mut line = serde_json::to_vec(&puzzle.to_json())?;
                line.push(b'\n');
                file.write_all(&line)
                    .with_context(|| format!("writing {}", file.path().display()))?;
            }
            Sink::TypedJsonl(file) => {
                let record = puzzle.to_typed_json(&self.extra_columns).map_err(|e| {
                    bad_input(format!("writing {}: {}", file.path().display(), e.detail))
                })?;
                let mut line = serde_json::to_vec(&record)?;
                line.push(b'\n');
                file.write_all(&line)
                    .with_context(|| format!("writing {}", file.path().display()))?;
            }
        }
        self.written += 1;
        Ok(())
    }

    /// Flushes and renames the file into place.
    pub fn finish(self) -> Result<u64> {
        let file = match self.sink {
            Sink::Csv(csv) => {
                let path = csv.get_ref().path().to_path_buf();
                csv.into_inner()
                    .map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), e.error()))?
            }
            Sink::Jsonl(file) | Sink::TypedJsonl(file) => file,
        };
        file.commit()?;
        Ok(self.written)
    }
}

/// The union of the puzzles' extra columns, in first-seen order.
pub(crate) fn extra_columns_of(puzzles: &[Puzzle]) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    for puzzle in puzzles {
        for (name, _) in &puzzle.extra {
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
    }
    columns
}

/// Writes puzzles to `path` (format from the name), atomically.
pub fn write_puzzles(path: &Path, puzzles: &[Puzzle]) -> Result<u64> {
    let mut writer = PuzzleWriter::create(path, &extra_columns_of(puzzles))?;
    for puzzle in puzzles {
        writer.write(puzzle)?;
    }
    writer.finish()
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
    loop {
        match reader.read(&mut record) {
            Ok(None) => return Ok(()),
            Ok(Some(line)) => {
                if let Some(error) = RowError::of_unread(&record, line) {
                    on_row((line, Err(error)))?;
                    continue;
                }
                let cells: std::result::Result<Vec<&str>, _> =
                    record.iter().map(std::str::from_utf8).collect();
                let row = match cells {
                    Ok(cells) => header.parse_row(&cells),
                    Err(_) => Err(RowError::new("invalid_utf8", "the row is not UTF-8")),
                };
                on_row((line, row))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Puzzle {
        Puzzle {
            id: "00008".into(),
            fen: "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24"
                .parse()
                .unwrap(),
            moves: read_ucis("f2g3 e6e7 b2b1 b3c1 b1c1 h6c1".split(' ')).unwrap(),
            rating: Some(1913),
            rating_deviation: Some(75),
            popularity: Some(94),
            nb_plays: Some(6230),
            themes: vec!["crushing".into(), "hangingPiece".into()],
            game_url: "https://lichess.org/787zsVup/black#48".into(),
            opening_tags: vec![],
            extra: vec![("DailyDate".into(), String::new())],
        }
    }

    #[test]
    fn csv_and_jsonl_round_trip_with_and_without_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let mut unrated = sample();
        unrated.id = "x1".into();
        unrated.rating = None;
        unrated.set("Source", "selfplay");
        let puzzles = vec![sample(), unrated];
        for name in ["p.csv", "p.jsonl", "p.csv.zst", "p.jsonl.zst"] {
            let path = dir.path().join(name);
            write_puzzles(&path, &puzzles).unwrap();
            let back = read_puzzles(&path).unwrap();
            assert_eq!(back.len(), 2, "{name}");
            assert_eq!(back[0].moves, puzzles[0].moves, "{name}");
            assert_eq!(back[1].rating, None, "{name}");
            assert_eq!(back[1].get("Source"), Some("selfplay"), "{name}");
            assert_eq!(
                back[0].game_id_and_ply(),
                Some(("787zsVup".into(), Some(48)))
            );
        }
    }

    #[test]
    fn bad_row_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csv");
        std::fs::write(
            &path,
            "PuzzleId,FEN,Moves,Rating\na,8/8/8/8/8/8/8/8 w - - 0 1,e2e4 e7e5,12x\n",
        )
        .unwrap();
        let error = read_puzzles(&path).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("Rating"), "{error}");
    }

    #[test]
    fn a_bad_fen_or_move_is_an_error_naming_its_row_and_the_good_rows_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.csv");
        let good = "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24";
        std::fs::write(
            &path,
            format!(
                "PuzzleId,FEN,Moves\n\
                 a,{good},f2g3 e6e7\n\
                 b,r6k/pp2r2p/9/8/8/8/8/7K b - - 0 24,f2g3 e6e7\n\
                 c,{good},f2g3 e6\n\
                 d,{good},f2g3 e6e7\n"
            ),
        )
        .unwrap();
        let mut rows = Vec::new();
        for_each_row(&path, |(line, row)| {
            rows.push((line, row.map(|p| p.id).map_err(|e| e.to_string())));
            Ok(())
        })
        .unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0], (2, Ok("a".to_string())));
        let (line, bad_fen) = &rows[1];
        assert_eq!(*line, 3);
        assert!(
            bad_fen.as_ref().is_err_and(|e| e.starts_with("bad_fen: ")),
            "{bad_fen:?}"
        );
        assert_eq!(
            rows[2],
            (4, Err("bad_move: move 2 is not UCI: \"e6\"".to_string()))
        );
        assert_eq!(rows[3], (5, Ok("d".to_string())));
        let error = read_puzzles(&path).unwrap_err().to_string();
        assert!(error.contains("p.csv line 3: bad_fen"), "{error}");
    }

    /// The bytes guard: every FEN and move in the puzzle files of
    /// tests/data (Lichess's dump, the APO benchmark's, ours) prints back
    /// from shakmaty's types exactly as the file spells it, so a file read
    /// into [`Puzzle`]s and written again keeps its lines.
    #[test]
    fn test_data_fens_and_moves_print_back_as_read() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let copies = tempfile::tempdir().unwrap();
        let mut csvs: Vec<_> = std::fs::read_dir(&data)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "csv"))
            .collect();
        csvs.sort();
        let (mut fens, mut moves) = (0, 0);
        for path in &csvs {
            let mut reader = csv::Reader::from_path(path).unwrap();
            let header = reader.headers().unwrap().clone();
            let column = |name| header.iter().position(|c| c == name).unwrap();
            let (fen_at, moves_at) = (column("FEN"), column("Moves"));
            for row in reader.records() {
                let row = row.unwrap();
                let text = &row[fen_at];
                assert_eq!(
                    read_fen(text).unwrap().to_string(),
                    text,
                    "{}",
                    path.display()
                );
                fens += 1;
                for word in row[moves_at].split(' ') {
                    let uci = read_ucis([word]).unwrap();
                    assert_eq!(uci[0].to_string(), word, "{}", path.display());
                    moves += 1;
                }
            }
            let copy = copies.path().join(path.file_name().unwrap());
            write_puzzles(&copy, &read_puzzles(path).unwrap()).unwrap();
            let (written, original) = (
                std::fs::read_to_string(&copy).unwrap(),
                std::fs::read_to_string(path).unwrap(),
            );
            for (number, (a, b)) in written.lines().zip(original.lines()).enumerate() {
                assert_eq!(a, b, "{} line {}", path.display(), number + 1);
            }
            // Line by line: the APO file ends its lines with CRLF, ours LF.
            assert_eq!(
                written.lines().count(),
                original.lines().count(),
                "{}",
                path.display()
            );
        }
        assert!(
            csvs.len() >= 4 && fens >= 6000 && moves >= 30_000,
            "{fens} {moves}"
        );
    }
}

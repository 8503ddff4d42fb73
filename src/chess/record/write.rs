//! Writing puzzle files: the format an output name asks for, and the
//! writer that streams puzzles into CSV or JSON Lines atomically with the
//! columns in one order.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

use crate::chess::columns;
use crate::chess::record::puzzle::{LICHESS_COLUMNS, Puzzle};
use crate::core::error::bad_input;
use crate::core::fileio::AtomicFile;

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

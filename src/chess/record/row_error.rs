//! Why a row of a puzzle file is refused: the reason's code and words a
//! rejects file records, and the one repeated-PuzzleId rule. Apart because
//! the readers and every stage that keeps a rejects file share it.

use std::collections::HashMap;

use crate::chess::line::LineError;
use crate::core::csv_reader::{MAX_ROW_BYTES, OpenQuote, Reach, Row};

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

/// The one PuzzleId rule of every reader (`ingest puzzles`, `tag`,
/// `rate`, and every file read through [`super::for_each_row`]): an empty
/// id is `missing_id`, and an id holding a control character (a NUL, a
/// line break) is `bad_id`, since files, logs and exclusion lists carry
/// it as a name.
pub(crate) fn check_puzzle_id(id: &str) -> std::result::Result<(), RowError> {
    if id.trim().is_empty() {
        return Err(RowError::new("missing_id", "PuzzleId is empty"));
    }
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(RowError::new(
            "bad_id",
            format!(
                "PuzzleId {id:?} holds the control character U+{:04X}",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// Why one row could not be read as a puzzle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    /// Short machine-friendly reason, used for counting (`bad_integer`, ...).
    pub reason: &'static str,
    /// Human detail: which column and what it held.
    pub detail: String,
    /// The row's PuzzleId where it could be read although the row could
    /// not (empty otherwise), so that a rejects file names the puzzle.
    pub id: String,
}

impl RowError {
    pub fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
            id: String::new(),
        }
    }

    /// The error with the row's PuzzleId `id` (trimmed), unless it
    /// already has one.
    pub(crate) fn with_id(mut self, id: &str) -> Self {
        if self.id.is_empty() {
            self.id = id.trim().to_string();
        }
        self
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

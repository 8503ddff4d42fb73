//! The encoder: accepted rows formatted into output bytes, CSV assembled
//! field by field or JSON Lines. Apart because it is the hot path of the
//! output and knows the output format, which validation does not.

use anyhow::Result;

use super::row::{CheckedRow, ExtraCell, MOVES, OPENING_TAGS, RowLayout, THEMES};
use crate::chess::derive;
use crate::chess::record::{Format, LICHESS_COLUMNS};

/// Formats accepted rows into output bytes (CSV or JSON Lines).
///
/// CSV rows are assembled field by field: csv's own quoting rule decides
/// whether a field needs quotes (almost none do), and a field that does not
/// is copied as it is. Going through `csv::Writer` per field cost about a
/// tenth of the whole ingest in its per-byte state machine and buffer.
pub(super) struct Encoder<'a> {
    layout: &'a RowLayout,
    format: Format,
    bytes: Vec<u8>,
    /// csv's rule for `QuoteStyle::Necessary` with a `\n` terminator, the
    /// settings every puzzleforge CSV writer uses.
    quoting: csv_core::Writer,
    scratch: Vec<u8>,
}

impl<'a> Encoder<'a> {
    pub(super) fn new(layout: &'a RowLayout, format: Format, mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        Self {
            layout,
            format,
            bytes: buffer,
            quoting: csv_core::WriterBuilder::new()
                .terminator(csv_core::Terminator::Any(b'\n'))
                .build(),
            scratch: Vec::new(),
        }
    }

    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Appends one row; returns the span of its bytes.
    /// `plain`: no input cell holds a byte csv quotes for.
    pub(super) fn encode(
        &mut self,
        plain: bool,
        cells: &[&str],
        row: &CheckedRow,
    ) -> Result<std::ops::Range<usize>> {
        let start = self.bytes.len();
        match self.format {
            Format::Csv => self.encode_csv(plain, cells, row),
            Format::Jsonl => self.encode_jsonl(cells, row)?,
        }
        Ok(start..self.bytes.len())
    }

    /// Appends a field (after a delimiter unless it is the row's first);
    /// `quoting` is `None` for a field known to need no quotes.
    fn push_field(
        bytes: &mut Vec<u8>,
        quoting: Option<&csv_core::Writer>,
        field: &[u8],
        first: bool,
    ) {
        if !first {
            bytes.push(b',');
        }
        if !quoting.is_some_and(|q| q.should_quote(field)) {
            bytes.extend_from_slice(field);
            return;
        }
        bytes.push(b'"');
        let mut input = field;
        let mut block = [0u8; 256];
        loop {
            let (result, read, written) = csv_core::quote(input, &mut block, b'"', b'\\', true);
            bytes.extend_from_slice(&block[..written]);
            input = &input[read..];
            if result == csv_core::WriteResult::InputEmpty {
                break;
            }
        }
        bytes.push(b'"');
    }

    fn encode_csv(&mut self, plain: bool, cells: &[&str], row: &CheckedRow) {
        let layout = self.layout;
        let bytes = &mut self.bytes;
        let quoting = if plain { None } else { Some(&self.quoting) };
        for column in 0..LICHESS_COLUMNS.len() {
            let cell = layout.text(cells, column).as_bytes();
            let first = column == 0;
            match column {
                MOVES | THEMES | OPENING_TAGS if !is_single_spaced(cell) => {
                    // Normalise whitespace as Puzzle does: single spaces.
                    self.scratch.clear();
                    for word in cell
                        .split(|b| b.is_ascii_whitespace())
                        .filter(|w| !w.is_empty())
                    {
                        if !self.scratch.is_empty() {
                            self.scratch.push(b' ');
                        }
                        self.scratch.extend_from_slice(word);
                    }
                    Self::push_field(bytes, quoting, &self.scratch, first);
                }
                MOVES | THEMES | OPENING_TAGS => Self::push_field(bytes, quoting, cell, first),
                _ => Self::push_field(bytes, quoting, cell.trim_ascii(), first),
            }
        }
        for extra in &layout.extra {
            match extra {
                ExtraCell::Input(i) => {
                    Self::push_field(bytes, quoting, cells[*i].as_bytes(), false)
                }
                ExtraCell::Derived(column) => {
                    // Written in place; only the rating bins, `(1400, 1500]`,
                    // need quotes, and they get them by the general rule.
                    bytes.push(b',');
                    let start = bytes.len();
                    row.derived.write(*column, bytes);
                    if self.quoting.should_quote(&bytes[start..]) {
                        self.scratch.clear();
                        self.scratch.extend_from_slice(&bytes[start..]);
                        bytes.truncate(start);
                        bytes.pop();
                        Self::push_field(bytes, Some(&self.quoting), &self.scratch, false);
                    }
                }
                ExtraCell::Source(input) => {
                    let input = input.map(|i| cells[i].as_bytes()).unwrap_or(b"");
                    Self::push_field(bytes, quoting, derive::source_cell(input), false);
                }
            }
        }
        bytes.push(b'\n');
    }

    fn encode_jsonl(&mut self, cells: &[&str], row: &CheckedRow) -> Result<()> {
        let mut puzzle = self
            .layout
            .header
            .parse_row(cells)
            .map_err(|e| anyhow::anyhow!("re-reading a checked row: {e}"))?;
        derive::apply_derived(&mut puzzle, &row.derived, derive::LICHESS);
        serde_json::to_writer(&mut self.bytes, &puzzle.to_json())?;
        self.bytes.push(b'\n');
        Ok(())
    }
}

/// True when a space-separated cell is already as `Puzzle` writes it:
/// words separated by single spaces, none at either end.
fn is_single_spaced(cell: &[u8]) -> bool {
    let mut after_space = true;
    for &b in cell {
        let space = b == b' ';
        if (space && after_space) || (!space && b.is_ascii_whitespace()) {
            return false;
        }
        after_space = space;
    }
    cell.is_empty() || !after_space
}

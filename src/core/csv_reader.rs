//! The one CSV reader of every CSV puzzleforge reads (puzzle files of
//! `ingest`, `split`, `eval`, exclusion files, the batches `merge` takes):
//! the file's records, each read into a recycled [`Row`] with the line it
//! starts on.
//!
//! A quote-free line (every line of the Lichess dump) is split at its
//! commas in place; from the first line with a quote or a carriage return
//! on, `csv_core` reads the rest by the full csv grammar. No record is held
//! beyond [`MAX_ROW_BYTES`] (counting every byte of the record, the line
//! breaks inside its quoted fields too), and its line number is counted,
//! not looked up in a list of line ends, so memory stays flat whatever the
//! input's longest record.

use std::io::{BufRead, Read};

/// The longest row read (bytes, its line break left out): a longer one is
/// rejected as `row_too_long` without being held whole, so memory never
/// grows with the input's longest line.
pub(crate) const MAX_ROW_BYTES: usize = 1 << 20;
/// How much of a too-long row is kept, for its reject line.
pub(crate) const TOO_LONG_KEPT: usize = 64;

/// One input row: its cells' bytes and where each cell lies in them.
/// A quote-free CSV line is kept whole, commas included, with its cells
/// as ranges between the commas: splitting it copies nothing cell by cell.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) bytes: Vec<u8>,
    pub(crate) cells: Vec<std::ops::Range<usize>>,
    /// Known to hold none of the bytes csv quotes for.
    pub(crate) plain: bool,
    /// Longer than [`MAX_ROW_BYTES`]: `bytes` holds its first
    /// [`TOO_LONG_KEPT`] bytes only.
    pub(crate) too_long: bool,
}

impl Row {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::with_capacity(256),
            cells: Vec::with_capacity(16),
            plain: false,
            too_long: false,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.cells.clear();
        self.plain = false;
        self.too_long = false;
    }

    /// Makes the row a too-long one: its first bytes kept (split at their
    /// commas, for the PuzzleId of its reject line), the rest dropped.
    pub(crate) fn cut(&mut self) {
        self.bytes.truncate(TOO_LONG_KEPT);
        self.split_plain_line();
        self.too_long = true;
    }

    /// Appends a cell (a row read by the csv crate, or built from JSON).
    pub(crate) fn push_field(&mut self, cell: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(cell);
        self.cells.push(start..self.bytes.len());
    }

    /// Makes the row a CSV line without quotes or line breaks (its bytes
    /// already in `bytes`): the cells are the text between its commas.
    pub(crate) fn split_plain_line(&mut self) {
        self.cells.clear();
        let mut start = 0;
        for comma in memchr::memchr_iter(b',', &self.bytes) {
            self.cells.push(start..comma);
            start = comma + 1;
        }
        self.cells.push(start..self.bytes.len());
        self.plain = true;
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        self.cells.get(i).map(|range| &self.bytes[range.clone()])
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.cells.iter().map(|range| &self.bytes[range.clone()])
    }

    /// True when no cell holds a delimiter, a quote or a line break (`\n`
    /// or a lone `\r`), the bytes csv quotes for: nearly every row, settled
    /// by one scan (a row read as a plain line holds none of them).
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
            || (memchr::memchr3(b',', b'"', b'\n', &self.bytes).is_none()
                && memchr::memchr(b'\r', &self.bytes).is_none())
    }
}

/// The CSV records of the puzzle file, with the line each starts on.
///
/// Lines without a quote or a carriage return (every line of the Lichess
/// dump) are records whose fields are the text between commas: the csv
/// grammar leaves nothing else to decide, so such a line is read straight
/// into its [`Row`] and split at its commas. From the first line that holds
/// either byte, everything left goes through the `csv` crate's reader, so
/// quoting, multi-line fields and CRLF endings follow it exactly. Blank
/// lines are skipped, as csv does. Line numbers are exact on both: on the
/// csv reader's they are counted from the line breaks it consumed, because
/// csv's own count runs one short after a CRLF ending or a blank line.
pub(crate) struct RecordReader {
    /// The input until the switch to the csv reader.
    lines: Option<Box<dyn BufRead + Send>>,
    csv: Option<CsvRecords>,
    /// Lines read before the csv reader took over.
    lines_before_csv: u64,
    line: u64,
}

impl RecordReader {
    pub(crate) fn new(input: Box<dyn BufRead + Send>) -> Self {
        Self {
            lines: Some(input),
            csv: None,
            lines_before_csv: 0,
            line: 0,
        }
    }

    /// Reads the next record into `row`; its line number, or `None` at the
    /// end of the input. A row longer than [`MAX_ROW_BYTES`] comes back cut
    /// ([`Row::too_long`]).
    pub(crate) fn read(&mut self, row: &mut Row) -> Result<Option<u64>, String> {
        if let Some(input) = self.lines.as_mut() {
            loop {
                row.clear();
                let (n, cut) = read_line_bounded(input.as_mut(), &mut row.bytes, MAX_ROW_BYTES)
                    .map_err(|e| e.to_string())?;
                if n == 0 {
                    return Ok(None);
                }
                self.line += 1;
                if cut {
                    // Its end is its line's: a line this long is no puzzle,
                    // whatever quotes it holds.
                    row.cut();
                    return Ok(Some(self.line));
                }
                if row.bytes.last() == Some(&b'\n') {
                    row.bytes.pop();
                }
                if memchr::memchr2(b'"', b'\r', &row.bytes).is_some() {
                    break;
                }
                if row.bytes.is_empty() {
                    continue;
                }
                row.split_plain_line();
                return Ok(Some(self.line));
            }
            // This line needs the full csv grammar: hand it and the rest of
            // the input to the csv reader.
            let rest = self.lines.take().ok_or("the input is gone")?;
            let mut line = std::mem::take(&mut row.bytes);
            line.push(b'\n');
            let chained: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(line).chain(rest));
            self.lines_before_csv = self.line - 1;
            self.csv = Some(CsvRecords::new(chained));
        }
        let Some(csv) = self.csv.as_mut() else {
            return Ok(None);
        };
        row.clear();
        match csv.read(row).map_err(|e| e.to_string())? {
            Some(line) => {
                self.line = self.lines_before_csv + line;
                Ok(Some(self.line))
            }
            None => Ok(None),
        }
    }

    /// The last line read.
    pub(crate) fn line(&self) -> u64 {
        self.line
    }
}

/// Reads one line (its `\n` included) into `buffer`, keeping at most
/// `max` bytes of it and passing over the rest up to the line's end
/// without holding it. Returns the bytes passed (0 at the end of the input)
/// and whether the line was longer than `max` (then `buffer` holds its
/// first `max` bytes).
pub(crate) fn read_line_bounded(
    input: &mut dyn BufRead,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    let mut passed = 0;
    let mut cut = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((passed, cut));
        }
        let (taken, done) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = max.saturating_sub(buffer.len());
        let line_bytes = taken - usize::from(done);
        if line_bytes > room {
            cut = true;
        }
        buffer.extend_from_slice(&available[..taken.min(room)]);
        input.consume(taken);
        passed += taken;
        if done {
            return Ok((passed, cut));
        }
    }
}

/// CSV records by the csv grammar (`csv_core`, as the `csv` crate reads
/// them: `,` delimited, `"` quoted, any line end), a record's bytes kept
/// only up to [`MAX_ROW_BYTES`]: the rest of a longer record is parsed
/// through and dropped. Lines are counted as the bytes are consumed, so
/// nothing grows with the line breaks inside a record.
struct CsvRecords {
    input: Box<dyn BufRead + Send>,
    core: csv_core::Reader,
    /// `\n` bytes consumed so far.
    newlines: u64,
    ends: Vec<usize>,
    /// Where a too-long record's dropped bytes go.
    spill: Vec<u8>,
}

/// Whether `byte` ends a line for csv.
fn is_line_end(byte: &u8) -> bool {
    matches!(byte, b'\n' | b'\r')
}

impl CsvRecords {
    fn new(input: Box<dyn BufRead + Send>) -> Self {
        Self {
            input,
            core: csv_core::Reader::new(),
            newlines: 0,
            ends: vec![0; 32],
            spill: vec![0; 1 << 16],
        }
    }

    /// Reads the next record into `row`; the line (1-based) it starts on:
    /// csv reads the line ends before a record (the `\n` of a CRLF, blank
    /// lines) as part of it, so its line is the one of its first byte that
    /// is no line end. `None` at the end.
    fn read(&mut self, row: &mut Row) -> std::io::Result<Option<u64>> {
        use csv_core::ReadRecordResult as Read;
        let (mut out_len, mut ends_len) = (0, 0);
        let mut line: Option<u64> = None;
        row.bytes.resize(256, 0);
        loop {
            let input = self.input.fill_buf()?;
            let (result, read, written, ended) = if row.too_long {
                // Parsed through, nothing kept.
                let mut ends = [0usize; 64];
                self.core.read_record(input, &mut self.spill, &mut ends)
            } else {
                self.core
                    .read_record(input, &mut row.bytes[out_len..], &mut self.ends[ends_len..])
            };
            let consumed = &input[..read];
            if line.is_none()
                && let Some(at) = consumed.iter().position(|b| !is_line_end(b))
            {
                let before = memchr::memchr_iter(b'\n', &consumed[..at]).count() as u64;
                line = Some(self.newlines + before + 1);
            }
            self.newlines += memchr::memchr_iter(b'\n', consumed).count() as u64;
            self.input.consume(read);
            if !row.too_long {
                out_len += written;
                ends_len += ended;
            }
            match result {
                Read::InputEmpty => {}
                Read::OutputFull if row.too_long => {}
                Read::OutputFull if row.bytes.len() > MAX_ROW_BYTES => {
                    // The first cell's first bytes, for the reject line.
                    let first = if ends_len > 0 { self.ends[0] } else { out_len };
                    row.bytes.truncate(first.min(TOO_LONG_KEPT));
                    row.cells.clear();
                    row.cells.push(0..row.bytes.len());
                    row.too_long = true;
                }
                Read::OutputFull => {
                    let grown = (row.bytes.len() * 2).min(MAX_ROW_BYTES + 1);
                    row.bytes.resize(grown, 0);
                }
                Read::OutputEndsFull if row.too_long => {}
                Read::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                Read::Record => {
                    if !row.too_long {
                        row.bytes.truncate(out_len);
                        let mut from = 0;
                        for &end in &self.ends[..ends_len] {
                            row.cells.push(from..end);
                            from = end;
                        }
                    }
                    return Ok(Some(line.unwrap_or(self.newlines + 1)));
                }
                Read::End => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text` as (line, cells).
    fn records(text: &str) -> Vec<(u64, Vec<String>)> {
        let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.to_string()));
        let mut reader = RecordReader::new(input);
        let mut row = Row::new();
        let mut out = Vec::new();
        while let Some(line) = reader.read(&mut row).unwrap() {
            let cells = row
                .iter()
                .map(|c| String::from_utf8_lossy(c).into())
                .collect();
            out.push((line, cells));
        }
        out
    }

    fn cells(list: &[&str]) -> Vec<String> {
        list.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn plain_lines_are_split_at_their_commas_blank_lines_skipped() {
        assert_eq!(
            records("a,b\n\nc,,d\n"),
            [(1, cells(&["a", "b"])), (3, cells(&["c", "", "d"]))]
        );
    }

    #[test]
    fn quotes_and_crlf_go_through_the_csv_grammar_with_exact_lines() {
        let text = "id,x\nplain,1\r\n\r\n\"two\nlines\",\"a,b\"\r\nlast,\"q\"\"q\"\n";
        assert_eq!(
            records(text),
            [
                (1, cells(&["id", "x"])),
                (2, cells(&["plain", "1"])),
                (4, cells(&["two\nlines", "a,b"])),
                (6, cells(&["last", "q\"q"])),
            ]
        );
    }

    #[test]
    fn a_too_long_row_keeps_its_first_bytes_and_the_next_row_its_line() {
        let long = format!("id{},x\nnext,1\n", "y".repeat(MAX_ROW_BYTES + 10));
        let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(long));
        let mut reader = RecordReader::new(input);
        let mut row = Row::new();
        assert_eq!(reader.read(&mut row).unwrap(), Some(1));
        assert!(row.too_long);
        assert_eq!(row.bytes.len(), TOO_LONG_KEPT);
        assert_eq!(reader.read(&mut row).unwrap(), Some(2));
        assert!(!row.too_long);
        assert_eq!(row.get(0), Some(&b"next"[..]));
    }

    #[test]
    fn a_too_long_record_under_the_csv_grammar_is_parsed_through() {
        // The quoted header hands the rest to the csv grammar.
        let text = format!(
            "\"h\",x\n\"id\",\"{}\"\nnext,1\n",
            "y".repeat(MAX_ROW_BYTES + 10)
        );
        let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text));
        let mut reader = RecordReader::new(input);
        let mut row = Row::new();
        assert_eq!(reader.read(&mut row).unwrap(), Some(1));
        assert_eq!(reader.read(&mut row).unwrap(), Some(2));
        assert!(row.too_long);
        assert_eq!(row.get(0), Some(&b"id"[..]));
        assert_eq!(reader.read(&mut row).unwrap(), Some(3));
        assert!(!row.too_long);
        assert_eq!(row.get(0), Some(&b"next"[..]));
        assert_eq!(reader.read(&mut row).unwrap(), None);
    }

    #[test]
    fn a_row_with_any_byte_csv_quotes_for_is_not_plain() {
        for cell in ["a,b", "a\"b", "a\nb", "a\rb"] {
            let mut row = Row::new();
            row.push_field(b"id");
            row.push_field(cell.as_bytes());
            assert!(!row.is_plain(), "{cell:?}");
        }
        let mut row = Row::new();
        row.push_field(b"id");
        row.push_field(b"a b");
        assert!(row.is_plain());
    }
}

//! The fast CSV reader of `ingest puzzles`: the puzzle file's records,
//! each read into a recycled [`Row`] with the line it starts on.
//!
//! A quote-free line (every line of the Lichess dump) is split at its
//! commas in place; from the first line with a quote or a carriage return
//! on, `csv_core` reads the rest by the full csv grammar. No record is held
//! beyond [`MAX_ROW_BYTES`], so memory never grows with the input's longest
//! line.

use std::io::{BufRead, Read};

use crate::chess::record::RowError;

/// The longest row read (bytes, its line break left out): a longer one is
/// rejected as `row_too_long` without being held whole, so memory never
/// grows with the input's longest line.
pub(super) const MAX_ROW_BYTES: usize = 1 << 20;
/// How much of a too-long row is kept, for its reject line.
const TOO_LONG_KEPT: usize = 64;

/// One input row: its cells' bytes and where each cell lies in them.
/// A quote-free CSV line is kept whole, commas included, with its cells
/// as ranges between the commas: splitting it copies nothing cell by cell.
#[derive(Clone, Debug)]
pub(super) struct Row {
    pub(super) bytes: Vec<u8>,
    pub(super) cells: Vec<std::ops::Range<usize>>,
    /// Known to hold none of the bytes csv quotes for.
    pub(super) plain: bool,
    /// Longer than [`MAX_ROW_BYTES`]: `bytes` holds its first
    /// [`TOO_LONG_KEPT`] bytes only.
    pub(super) too_long: bool,
}

impl Row {
    pub(super) fn new() -> Self {
        Self {
            bytes: Vec::with_capacity(256),
            cells: Vec::with_capacity(16),
            plain: false,
            too_long: false,
        }
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.cells.clear();
        self.plain = false;
        self.too_long = false;
    }

    /// Makes the row a too-long one: its first bytes kept (split at their
    /// commas, for the PuzzleId of its reject line), the rest dropped.
    pub(super) fn cut(&mut self) {
        self.bytes.truncate(TOO_LONG_KEPT);
        self.split_plain_line();
        self.too_long = true;
    }

    /// The reject of a too-long row.
    pub(super) fn too_long_error() -> RowError {
        RowError::new(
            "row_too_long",
            format!(
                "the row is longer than {MAX_ROW_BYTES} bytes; its first {TOO_LONG_KEPT} bytes are kept for this line"
            ),
        )
    }

    /// Appends a cell (a row read by the csv crate, or built from JSON).
    pub(super) fn push_field(&mut self, cell: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(cell);
        self.cells.push(start..self.bytes.len());
    }

    /// Makes the row a CSV line without quotes or line breaks (its bytes
    /// already in `bytes`): the cells are the text between its commas.
    pub(super) fn split_plain_line(&mut self) {
        self.cells.clear();
        let mut start = 0;
        for comma in memchr::memchr_iter(b',', &self.bytes) {
            self.cells.push(start..comma);
            start = comma + 1;
        }
        self.cells.push(start..self.bytes.len());
        self.plain = true;
    }

    pub(super) fn len(&self) -> usize {
        self.cells.len()
    }

    pub(super) fn get(&self, i: usize) -> Option<&[u8]> {
        self.cells.get(i).map(|range| &self.bytes[range.clone()])
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.cells.iter().map(|range| &self.bytes[range.clone()])
    }

    /// True when no cell holds a delimiter, a quote or a line break (`\n`
    /// or a lone `\r`), the bytes csv quotes for: nearly every row, settled
    /// by one scan (a row read as a plain line holds none of them).
    pub(super) fn is_plain(&self) -> bool {
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
/// csv reader's they come from [`LineEnds`], because csv's own count runs
/// one short after a CRLF ending or a blank line.
pub(super) struct RecordReader {
    /// The input until the switch to the csv reader.
    lines: Option<Box<dyn BufRead + Send>>,
    csv: Option<CsvRecords>,
    /// Where the csv reader's input has its line ends.
    line_ends: std::sync::Arc<std::sync::Mutex<LineEndOffsets>>,
    /// Lines read before the csv reader took over.
    lines_before_csv: u64,
    line: u64,
}

impl RecordReader {
    pub(super) fn new(input: Box<dyn BufRead + Send>) -> Self {
        Self {
            lines: Some(input),
            csv: None,
            line_ends: Default::default(),
            lines_before_csv: 0,
            line: 0,
        }
    }

    /// Reads the next record into `row`; its line number, or `None` at the
    /// end of the input. A row longer than [`MAX_ROW_BYTES`] comes back cut
    /// ([`Row::too_long`]).
    pub(super) fn read(&mut self, row: &mut Row) -> Result<Option<u64>, String> {
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
            let chained = LineEnds {
                inner: chained,
                offset: 0,
                ends: std::sync::Arc::clone(&self.line_ends),
            };
            self.csv = Some(CsvRecords::new(chained));
        }
        let Some(csv) = self.csv.as_mut() else {
            return Ok(None);
        };
        row.clear();
        match csv.read(row).map_err(|e| e.to_string())? {
            Some(start) => {
                let mut ends = match self.line_ends.lock() {
                    Ok(ends) => ends,
                    Err(poisoned) => poisoned.into_inner(),
                };
                self.line = self.lines_before_csv + ends.line_of(start);
                Ok(Some(self.line))
            }
            None => Ok(None),
        }
    }

    /// The last line read.
    pub(super) fn line(&self) -> u64 {
        self.line
    }
}

/// Reads one line (its `\n` included) into `buffer`, keeping at most
/// `max` bytes of it and passing over the rest up to the line's end
/// without holding it. Returns the bytes passed (0 at the end of the input)
/// and whether the line was longer than `max` (then `buffer` holds its
/// first `max` bytes).
pub(super) fn read_line_bounded(
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
/// through and dropped.
struct CsvRecords {
    input: std::io::BufReader<LineEnds<Box<dyn BufRead + Send>>>,
    core: csv_core::Reader,
    /// Bytes consumed so far: where the next record starts.
    offset: u64,
    ends: Vec<usize>,
    /// Where a too-long record's dropped bytes go.
    spill: Vec<u8>,
}

impl CsvRecords {
    fn new(input: LineEnds<Box<dyn BufRead + Send>>) -> Self {
        Self {
            input: std::io::BufReader::with_capacity(1 << 16, input),
            core: csv_core::Reader::new(),
            offset: 0,
            ends: vec![0; 32],
            spill: vec![0; 1 << 16],
        }
    }

    /// Reads the next record into `row`; the byte offset it starts at, or
    /// `None` at the end.
    fn read(&mut self, row: &mut Row) -> std::io::Result<Option<u64>> {
        use csv_core::ReadRecordResult as Read;
        let start = self.offset;
        let (mut out_len, mut ends_len) = (0, 0);
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
            self.input.consume(read);
            self.offset += read as u64;
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
                    return Ok(Some(start));
                }
                Read::End => return Ok(None),
            }
        }
    }
}

/// The offsets of the line-end bytes (`\n`, `\r`) that the csv reader has
/// read ahead but no record has passed yet, and the lines passed so far.
#[derive(Default)]
struct LineEndOffsets {
    newlines: std::collections::VecDeque<u64>,
    returns: std::collections::VecDeque<u64>,
    lines_passed: u64,
}

impl LineEndOffsets {
    /// The line (1-based) of the record csv says starts at byte `start`.
    /// csv puts a record's start before the line ends it skipped (the `\n`
    /// of the previous CRLF, blank lines), so those are stepped over first.
    fn line_of(&mut self, mut start: u64) -> u64 {
        loop {
            while self.newlines.front().is_some_and(|&at| at < start) {
                self.newlines.pop_front();
                self.lines_passed += 1;
            }
            while self.returns.front().is_some_and(|&at| at < start) {
                self.returns.pop_front();
            }
            let at_line_end =
                self.newlines.front() == Some(&start) || self.returns.front() == Some(&start);
            if !at_line_end {
                return self.lines_passed + 1;
            }
            start += 1;
        }
    }
}

/// A reader that notes where its bytes hold line ends, for exact line
/// numbers on the csv reader's records.
struct LineEnds<R> {
    inner: R,
    offset: u64,
    ends: std::sync::Arc<std::sync::Mutex<LineEndOffsets>>,
}

impl<R: Read> Read for LineEnds<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut ends = match self.ends.lock() {
            Ok(ends) => ends,
            Err(poisoned) => poisoned.into_inner(),
        };
        for at in memchr::memchr2_iter(b'\n', b'\r', &buf[..n]) {
            let offset = self.offset + at as u64;
            if buf[at] == b'\n' {
                ends.newlines.push_back(offset);
            } else {
                ends.returns.push_back(offset);
            }
        }
        self.offset += n as u64;
        Ok(n)
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

//! The one CSV reader of every CSV file a stage takes from outside or from
//! another stage (puzzle files of `ingest`, `release`, `eval`, exclusion
//! files, the batches `merge` takes): the file's records, each read into a
//! recycled [`Row`] with the line it starts on. Two readers use the csv
//! crate instead, on files no stage hands on: the rating model's feature
//! store reads its own zstd parts whole (`stages::rate::store`), and the
//! `bench` commands read their sample file whole into memory
//! (`tools::bench::ingest`, `tools::bench::maia`).
//!
//! Every record is one line: a quote-free line (every line of the Lichess
//! dump) is split at its commas in place, a line with a quote or a
//! carriage return is read by `csv_core`, the full csv grammar, and a
//! quote its line ends inside is reported with the line, never read on
//! into the lines after it ([`RecordReader`]). No line is held beyond
//! [`MAX_ROW_BYTES`], so memory stays flat whatever the input's longest
//! line.

use std::io::BufRead;

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
    /// A quoted field its line ended inside: the row holds the fields
    /// before it only ([`RecordReader`]).
    pub(crate) open_quote: Option<OpenQuote>,
}

/// A quoted field left open at its line's end, and how far the csv grammar
/// would have read it on: what its reject line tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenQuote {
    /// The field's column, from 1.
    pub(crate) column: usize,
    pub(crate) reach: Reach,
}

/// How far a quote left open at a line's end would run, read on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Its record would end on this line (the quote closed by another).
    EndsOn(u64),
    /// To the end of the input, this many lines after the quote's.
    EndOfInput(u64),
    /// Past the [`MAX_ROW_BYTES`] looked at: more than this many lines.
    Beyond(u64),
}

impl Row {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::with_capacity(256),
            cells: Vec::with_capacity(16),
            plain: false,
            too_long: false,
            open_quote: None,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.cells.clear();
        self.plain = false;
        self.too_long = false;
        self.open_quote = None;
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
/// A record is one line: no puzzle file holds a line break inside a field
/// (Lichess's dump has none; a puzzle's cells are ids, a FEN, moves,
/// numbers, words and URLs), so a quote left open at a line's end is a stray quote, not a
/// field running on. Read by the full csv grammar, that one quote would
/// swallow every line up to the next quote in the file (or to its end)
/// into a single record, and the good rows among them would vanish into
/// one reject. Instead the line is given back as a row with
/// [`Row::open_quote`] set, and the next line is read as the next record.
///
/// Lines without a quote or a carriage return (every line of the Lichess
/// dump) are records whose fields are the text between commas: the csv
/// grammar leaves nothing else to decide, so such a line is read straight
/// into its [`Row`] and split at its commas. A line that holds either byte
/// goes through `csv_core`, the `csv` crate's grammar, so quoting and CRLF
/// endings follow it exactly (a lone carriage return ends a record there,
/// as csv reads it, so one line may hold several). Blank lines are
/// skipped, as csv does. Every line is read bounded ([`MAX_ROW_BYTES`]),
/// so memory stays flat whatever the input's longest line.
pub(crate) struct RecordReader {
    input: Rewound,
    /// The csv grammar, reset at each line.
    core: csv_core::Reader,
    /// A line being read by the csv grammar, its `\n` kept (the grammar
    /// needs it to end the line's last record), and how far it is read.
    pending: Vec<u8>,
    at: usize,
    /// Where each field of a record read by the grammar ends.
    ends: Vec<usize>,
    line: u64,
}

impl RecordReader {
    pub(crate) fn new(input: Box<dyn BufRead + Send>) -> Self {
        Self {
            input: Rewound {
                front: Vec::new(),
                at: 0,
                rest: input,
            },
            core: csv_core::Reader::new(),
            pending: Vec::new(),
            at: 0,
            ends: vec![0; 32],
            line: 0,
        }
    }

    /// Reads the next record into `row`; its line number, or `None` at the
    /// end of the input. A row longer than [`MAX_ROW_BYTES`] comes back cut
    /// ([`Row::too_long`]), one whose line ends inside a quoted field with
    /// [`Row::open_quote`] set.
    pub(crate) fn read(&mut self, row: &mut Row) -> Result<Option<u64>, String> {
        loop {
            row.clear();
            if self.at < self.pending.len() {
                if self.read_pending(row).map_err(|e| e.to_string())? {
                    return Ok(Some(self.line));
                }
                continue;
            }
            self.skip_blank_lines().map_err(|e| e.to_string())?;
            let (n, cut) = read_line_bounded(&mut self.input, &mut row.bytes, MAX_ROW_BYTES)
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
                // Handed to the grammar, the buffers swapped (no copy).
                std::mem::swap(&mut self.pending, &mut row.bytes);
                self.pending.push(b'\n');
                self.at = 0;
                self.core.reset();
                continue;
            }
            if row.bytes.is_empty() {
                continue;
            }
            row.split_plain_line();
            return Ok(Some(self.line));
        }
    }

    /// Reads the next record of the pending line into `row` by the csv
    /// grammar; false when the rest of the line holds none (only line
    /// ends). The line is at most [`MAX_ROW_BYTES`] long, so its fields
    /// are too.
    fn read_pending(&mut self, row: &mut Row) -> std::io::Result<bool> {
        use csv_core::ReadRecordResult as Read;
        let start = self.at;
        let (mut out_len, mut ends_len) = (0, 0);
        row.bytes.resize(self.pending.len().max(1), 0);
        loop {
            let input = &self.pending[self.at..];
            let (result, read, written, ended) =
                self.core
                    .read_record(input, &mut row.bytes[out_len..], &mut self.ends[ends_len..]);
            self.at += read;
            out_len += written;
            ends_len += ended;
            match result {
                Read::OutputFull => {
                    let grown = row.bytes.len() * 2;
                    row.bytes.resize(grown, 0);
                }
                Read::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                Read::Record => {
                    row.bytes.truncate(out_len);
                    let mut from = 0;
                    for &end in &self.ends[..ends_len] {
                        row.cells.push(from..end);
                        from = end;
                    }
                    return Ok(true);
                }
                Read::InputEmpty | Read::End => {
                    // The whole line is read and its `\n` did not end a
                    // record: either nothing but line ends was left, or
                    // the `\n` fell inside a quoted field that never
                    // closed. The line is that field's row, its complete
                    // fields kept (the PuzzleId, for its reject line).
                    self.core.reset();
                    let left = &self.pending[start..];
                    if left.iter().all(is_line_end) {
                        return Ok(false);
                    }
                    let complete = if ends_len > 0 {
                        self.ends[ends_len - 1]
                    } else {
                        0
                    };
                    row.bytes.truncate(complete);
                    let mut from = 0;
                    for &end in &self.ends[..ends_len] {
                        row.cells.push(from..end);
                        from = end;
                    }
                    row.open_quote = Some(OpenQuote {
                        column: ends_len + 1,
                        reach: self.reach_of_open_quote()?,
                    });
                    return Ok(true);
                }
            }
        }
    }

    /// How far the csv grammar would read on the quoted field the current
    /// line left open, for its reject line: the lines after it are looked
    /// at (at most [`MAX_ROW_BYTES`] of them, so memory stays bounded) and
    /// put back, to be read as the rows they are.
    fn reach_of_open_quote(&mut self) -> std::io::Result<Reach> {
        use csv_core::ReadRecordResult as Read;
        let mut grammar = csv_core::Reader::new();
        // Scratch: the field's bytes are not kept, only where it ends.
        let (mut out, mut ends) = ([0u8; 4096], [0usize; 64]);
        // Into the quoted field, as the line left it.
        let _ = grammar.read_record(b"\"", &mut out, &mut ends);
        let mut looked = Vec::new();
        let mut newlines = 0u64;
        let reach = 'look: loop {
            let room = MAX_ROW_BYTES.saturating_sub(looked.len());
            if room == 0 {
                break Reach::Beyond(newlines);
            }
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                let unended = looked.last().is_some_and(|&b| b != b'\n');
                break Reach::EndOfInput(newlines + u64::from(unended));
            }
            let taken = available.len().min(room);
            looked.extend_from_slice(&available[..taken]);
            self.input.consume(taken);
            let mut fed = looked.len() - taken;
            while fed < looked.len() {
                let chunk = &looked[fed..];
                let (result, read, _, _) = grammar.read_record(chunk, &mut out, &mut ends);
                let consumed = &chunk[..read];
                fed += read;
                if result == Read::Record {
                    // The line break that ended the record is its line's.
                    let inside = consumed.strip_suffix(b"\n").unwrap_or(consumed);
                    newlines += memchr::memchr_iter(b'\n', inside).count() as u64;
                    break 'look Reach::EndsOn(self.line + 1 + newlines);
                }
                newlines += memchr::memchr_iter(b'\n', consumed).count() as u64;
                if result == Read::InputEmpty {
                    break;
                }
            }
        };
        self.input.put_back(looked);
        Ok(reach)
    }

    /// Passes over the blank lines (`\n` alone) at the input's front in
    /// bulk, counting them: a broken file may hold millions of them (the
    /// line breaks of a stray quote's field), and one read per line would
    /// be slow.
    fn skip_blank_lines(&mut self) -> std::io::Result<()> {
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let blank = available.iter().take_while(|&&b| b == b'\n').count();
            if blank == 0 {
                return Ok(());
            }
            self.line += blank as u64;
            self.input.consume(blank);
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

/// The input, with what a look-ahead read put back in front of it.
struct Rewound {
    front: Vec<u8>,
    at: usize,
    rest: Box<dyn BufRead + Send>,
}

impl Rewound {
    /// Puts `bytes` back, to be read again before anything else.
    fn put_back(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.front[self.at..]);
        self.front = bytes;
        self.at = 0;
    }
}

impl std::io::Read for Rewound {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buffer.len());
        buffer[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Rewound {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at < self.front.len() {
            Ok(&self.front[self.at..])
        } else {
            self.rest.fill_buf()
        }
    }

    fn consume(&mut self, amount: usize) {
        if self.at < self.front.len() {
            // `fill_buf` gave the front, so `amount` lies within it.
            self.at += amount;
            if self.at >= self.front.len() {
                self.front.clear();
                self.at = 0;
            }
        } else {
            self.rest.consume(amount);
        }
    }
}

/// Whether `byte` ends a line for csv.
fn is_line_end(byte: &u8) -> bool {
    matches!(byte, b'\n' | b'\r')
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
        let text = "id,x\nplain,1\r\n\r\n\"two\",\"a,b\"\r\nlast,\"q\"\"q\"\nx,1\ry,2\n";
        assert_eq!(
            records(text),
            [
                (1, cells(&["id", "x"])),
                (2, cells(&["plain", "1"])),
                (4, cells(&["two", "a,b"])),
                (5, cells(&["last", "q\"q"])),
                // A lone carriage return ends a record, as csv reads it.
                (6, cells(&["x", "1"])),
                (6, cells(&["y", "2"])),
            ]
        );
    }

    /// A quote left open at its line's end is that line's row, marked with
    /// the column it opened in and holding the fields before it; the next
    /// line is the next row, with its own line number, whether the quote
    /// would have closed lines later or never.
    #[test]
    fn a_quote_open_at_its_lines_end_is_that_lines_row_alone() {
        let text = "id,a,b\nP1,\"x,1\nP2,2,3\n\"two\nlines\",4,5\nP3,6,7\nP4,\"";
        let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.to_string()));
        let mut reader = RecordReader::new(input);
        let mut row = Row::new();
        let mut out = Vec::new();
        let open = |column, reach| Some(OpenQuote { column, reach });
        while let Some(line) = reader.read(&mut row).unwrap() {
            let cells: Vec<String> = row
                .iter()
                .map(|c| String::from_utf8_lossy(c).into())
                .collect();
            out.push((line, cells, row.open_quote));
        }
        assert_eq!(
            out,
            [
                (1, cells(&["id", "a", "b"]), None),
                // Read on, its quote would close on line 4.
                (2, cells(&["P1"]), open(2, Reach::EndsOn(4))),
                (3, cells(&["P2", "2", "3"]), None),
                (4, cells(&[]), open(1, Reach::EndsOn(5))),
                // The stray closing quote of line 5 is a plain byte.
                (5, cells(&["lines\"", "4", "5"]), None),
                (6, cells(&["P3", "6", "7"]), None),
                (7, cells(&["P4"]), open(2, Reach::EndOfInput(0))),
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
    fn a_too_long_quoted_line_is_cut_before_the_csv_grammar() {
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
        assert!(row.bytes.starts_with(b"\"id\",\"yyy"));
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

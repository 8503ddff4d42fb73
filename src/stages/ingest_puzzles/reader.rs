//! The streaming reader: the reader thread's work, which reads the input's
//! header (CSV) or first object (JSON Lines) for the row layout and then
//! sends the rows in recycled batches ([`Batch`]). Apart because it is the
//! only part that parses the input's bytes and runs on its own thread.

use serde_json::Value;
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::mpsc;

use super::row::RowLayout;
use crate::chess::columns::Column;
use crate::chess::record::{self, LICHESS_COLUMNS, RowError};
use crate::core::csv_reader::{MAX_ROW_BYTES, RecordReader, Row, read_line_bounded};
use crate::core::error::bad_input;
use anyhow::Result;

/// Rows per batch handed from the reader thread to the validators.
const BATCH_ROWS: usize = 8192;

/// A batch of input rows from the reader thread.
pub(super) struct Batch {
    pub(super) records: Vec<Row>,
    pub(super) lines: Vec<u64>,
    /// Rows the reader already knows are bad (unparseable JSON lines).
    pub(super) prerejected: Vec<Option<RowError>>,
    pub(super) len: usize,
}

impl Batch {
    fn new() -> Self {
        Self {
            records: Vec::new(),
            lines: Vec::new(),
            prerejected: Vec::new(),
            len: 0,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.lines.clear();
        self.prerejected.clear();
    }

    /// The next record slot to fill (reusing its allocation).
    fn next_slot(&mut self) -> &mut Row {
        if self.len == self.records.len() {
            self.records.push(Row::new());
        }
        &mut self.records[self.len]
    }
}

pub(super) type BatchResult = std::result::Result<Batch, (u64, String)>;

/// Reads CSV rows into batches until the end or the first read error
/// (reported with the line it happened after).
fn read_csv_batches(
    mut reader: RecordReader,
    sender: mpsc::SyncSender<BatchResult>,
    recycled: mpsc::Receiver<Batch>,
) {
    loop {
        let mut batch = recycled.try_recv().unwrap_or_else(|_| Batch::new());
        batch.clear();
        while batch.len < BATCH_ROWS {
            let slot = batch.next_slot();
            match reader.read(slot) {
                Ok(Some(line)) => {
                    let unread = RowError::of_unread(slot, line);
                    batch.lines.push(line);
                    batch.prerejected.push(unread);
                    batch.len += 1;
                }
                Ok(None) => {
                    if batch.len > 0 {
                        let _ = sender.send(Ok(batch));
                    }
                    return;
                }
                Err(error) => {
                    if batch.len > 0 && sender.send(Ok(batch)).is_err() {
                        return;
                    }
                    let _ = sender.send(Err((reader.line(), error)));
                    return;
                }
            }
        }
        if sender.send(Ok(batch)).is_err() {
            return;
        }
    }
}

/// Reads puzzleforge JSON Lines into batches of records laid out as
/// `names`.
fn read_jsonl_batches(
    mut input: Box<dyn BufRead + Send>,
    names: Vec<String>,
    sender: mpsc::SyncSender<BatchResult>,
    recycled: mpsc::Receiver<Batch>,
) {
    let mut line_number = 0u64;
    let mut line = Vec::new();
    loop {
        let mut batch = recycled.try_recv().unwrap_or_else(|_| Batch::new());
        batch.clear();
        while batch.len < BATCH_ROWS {
            line.clear();
            let too_long = match read_line_bounded(input.as_mut(), &mut line, MAX_ROW_BYTES) {
                Ok((0, _)) => {
                    if batch.len > 0 {
                        let _ = sender.send(Ok(batch));
                    }
                    return;
                }
                Ok((_, cut)) => {
                    line_number += 1;
                    cut
                }
                Err(error) => {
                    if batch.len > 0 && sender.send(Ok(batch)).is_err() {
                        return;
                    }
                    let _ = sender.send(Err((line_number, error.to_string())));
                    return;
                }
            };
            if line.trim_ascii().is_empty() {
                continue;
            }
            let parsed = if too_long {
                Err(RowError::too_long())
            } else {
                serde_json::from_slice::<Value>(&line)
                    .map_err(|e| RowError::new("bad_json", e.to_string()))
                    .and_then(|value| record::puzzle_from_json(&value))
            };
            let slot = batch.next_slot();
            slot.clear();
            let pre = match parsed {
                Ok(puzzle) => {
                    for name in &names {
                        slot.push_field(puzzle.column(name).unwrap_or_default().as_bytes());
                    }
                    None
                }
                Err(error) => {
                    // The id where it was readable, in its own cell: the
                    // reject names its puzzle.
                    for name in &names {
                        let id = name == Column::PuzzleId.name();
                        slot.push_field(if id { error.id.as_bytes() } else { b"" });
                    }
                    Some(error)
                }
            };
            batch.lines.push(line_number);
            batch.prerejected.push(pre);
            batch.len += 1;
        }
        if sender.send(Ok(batch)).is_err() {
            return;
        }
    }
}

/// Reads the input's header (CSV) or first object (JSON Lines): the row
/// layout, and the reader thread's work, which sends the rest in batches.
pub(super) fn start_reader(
    input: &Path,
    mut reader: Box<dyn BufRead + Send>,
    sender: mpsc::SyncSender<BatchResult>,
    recycled: mpsc::Receiver<Batch>,
) -> Result<(RowLayout, Box<dyn FnOnce() + Send>)> {
    match crate::core::fileio::first_content_byte(&mut reader, input)? {
        None => Err(bad_input(format!("{}: the file is empty", input.display()))),
        Some(b'{') => start_jsonl_reader(input, reader, sender, recycled),
        Some(_) => start_csv_reader(input, reader, sender, recycled),
    }
}

/// [`start_reader`] for JSON Lines: the layout is the Lichess columns and
/// then the first object's other keys.
fn start_jsonl_reader(
    input: &Path,
    mut reader: Box<dyn BufRead + Send>,
    sender: mpsc::SyncSender<BatchResult>,
    recycled: mpsc::Receiver<Batch>,
) -> Result<(RowLayout, Box<dyn FnOnce() + Send>)> {
    // Peek the first object for its extra columns.
    let mut first_line = Vec::new();
    let (_, cut) = read_line_bounded(reader.as_mut(), &mut first_line, MAX_ROW_BYTES)
        .map_err(|e| bad_input(format!("{}: cannot read: {e}", input.display())))?;
    if cut {
        bail_input_header(
            input,
            &format!("line 1 is longer than {MAX_ROW_BYTES} bytes"),
        )?;
    }
    let value: Value = serde_json::from_slice(&first_line).map_err(|e| {
        bad_input(format!(
            "{} line 1: not a JSON object: {e}",
            input.display()
        ))
    })?;
    let object = value
        .as_object()
        .ok_or_else(|| bad_input(format!("{} line 1: not a JSON object", input.display())))?;
    let names: Vec<String> = LICHESS_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(
            object
                .keys()
                .filter(|k| !LICHESS_COLUMNS.contains(&k.as_str()))
                .cloned(),
        )
        .collect();
    let layout = RowLayout::new(names.clone(), false).map_err(|e| layout_error(input, e))?;
    let rest: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(first_line).chain(reader));
    Ok((
        layout,
        Box::new(move || read_jsonl_batches(rest, names, sender, recycled)),
    ))
}

/// [`start_reader`] for CSV: the layout is the header's.
fn start_csv_reader(
    input: &Path,
    reader: Box<dyn BufRead + Send>,
    sender: mpsc::SyncSender<BatchResult>,
    recycled: mpsc::Receiver<Batch>,
) -> Result<(RowLayout, Box<dyn FnOnce() + Send>)> {
    let mut csv_reader = RecordReader::new(reader);
    let mut record = Row::new();
    match csv_reader.read(&mut record) {
        Ok(Some(_)) if record.too_long => bail_input_header(
            input,
            &format!("the header is longer than {MAX_ROW_BYTES} bytes"),
        )?,
        Ok(Some(line)) => {
            if let Some(quote) = record.open_quote {
                let error = RowError::open_quote(quote, line);
                bail_input_header(input, &format!("line {line}: {error}"))?;
            }
        }
        Ok(None) => bail_input_header(input, "no header")?,
        Err(e) => bail_input_header(input, &e)?,
    }
    let names = record
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let layout = RowLayout::new(names, true).map_err(|e| layout_error(input, e))?;
    Ok((
        layout,
        Box::new(move || read_csv_batches(csv_reader, sender, recycled)),
    ))
}

/// A header that makes no row layout.
fn layout_error(input: &Path, why: String) -> anyhow::Error {
    bad_input(format!("{}: {why}", input.display()))
}

fn bail_input_header(input: &Path, why: &str) -> Result<()> {
    Err(bad_input(format!("{}: bad header: {why}", input.display())))
}

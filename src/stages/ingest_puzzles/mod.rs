//! `puzzleforge ingest puzzles`: validates the Lichess puzzle dump (or the
//! APO benchmark's files, or puzzleforge JSON Lines), derives our columns
//! and writes the accepted puzzles, filtered and optionally sampled.
//!
//! The dump has about 5.5 million rows, so the run streams: a reader thread
//! parses CSV into batches of [`Row`]s (recycled, so a row costs
//! no allocation there), the main thread validates each batch in parallel
//! with rayon, each worker formatting its accepted rows straight into an
//! output buffer, and then walks the batch in input order: duplicate ids,
//! reservoir sampling and writing are sequential, so the output order is the
//! input order whatever the thread timing.

use anyhow::{Context, Result};
use foldhash::HashSetExt;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use crate::chess::columns::{self, Column};
use crate::chess::derive::{self, DerivedFields};
use crate::chess::line::PuzzleLine;
use crate::chess::record::{self, Format, Header, LICHESS_COLUMNS, RowError};
use crate::core::error::bad_input;
use crate::core::fileio::{AtomicFile, open_input_with};
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::flags_over;
use crate::core::summary::Summary;

use crate::core::csv_reader::{MAX_ROW_BYTES, RecordReader, Row, read_line_bounded};

/// Rows per batch handed from the reader thread to the validators.
const BATCH_ROWS: usize = 8192;
/// Rows per parallel task inside a batch.
const CHUNK_ROWS: usize = 256;
/// Which puzzles to keep by their mate flag.
#[derive(clap::ValueEnum, Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MateFilter {
    /// Mating and non-mating puzzles.
    #[default]
    Any,
    /// Only puzzles whose final position is checkmate.
    Only,
    /// Only puzzles whose final position is not checkmate.
    Exclude,
}

/// Filters and sampling of `ingest puzzles` (the `pipeline.toml` section;
/// CLI flags override its fields).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct IngestPuzzlesConfig {
    /// Keep puzzles rated at least this.
    pub min_rating: Option<i32>,
    /// Keep puzzles rated at most this.
    pub max_rating: Option<i32>,
    /// Keep puzzles whose RatingDeviation is at most this.
    pub max_rating_deviation: Option<i32>,
    /// Keep puzzles whose Popularity is at least this.
    pub min_popularity: Option<i32>,
    /// Keep puzzles played at least this many times.
    pub min_nb_plays: Option<i32>,
    /// Keep puzzles with at least one of these themes (empty: no filter).
    pub themes_any: Vec<String>,
    /// Keep puzzles with all of these themes.
    pub themes_all: Vec<String>,
    /// Drop puzzles with any of these themes.
    pub themes_none: Vec<String>,
    /// Keep puzzles whose solver length (NumMoves) is one of these (empty: all).
    pub solver_lengths: Vec<usize>,
    /// Keep mating puzzles, non-mating ones, or both.
    pub mate: MateFilter,
    /// Keep at most this many puzzles, chosen uniformly (reservoir sampling).
    pub sample: Option<u64>,
    /// Seed of the sample.
    pub seed: u64,
}

impl Default for IngestPuzzlesConfig {
    fn default() -> Self {
        Self {
            min_rating: None,
            max_rating: None,
            max_rating_deviation: None,
            min_popularity: None,
            min_nb_plays: None,
            themes_any: Vec::new(),
            themes_all: Vec::new(),
            themes_none: Vec::new(),
            solver_lengths: Vec::new(),
            mate: MateFilter::Any,
            sample: None,
            seed: 0,
        }
    }
}

/// Validate the Lichess puzzle dump (CSV or CSV.zst), derive our columns,
/// filter and write the accepted puzzles. Each filter flag overrides the
/// `[ingest.puzzles]` key of its name
/// ([`crate::core::settings::flags_over`]).
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct PuzzlesArgs {
    /// The puzzle file: Lichess CSV (10 or 11 columns), the APO benchmark's
    /// 15-column CSV, or puzzleforge JSON Lines; plain or zstd.
    #[serde(skip)]
    pub input: PathBuf,
    /// Output file; `.csv`, `.jsonl`, either with `.zst`.
    #[arg(short, long)]
    #[serde(skip)]
    pub output: PathBuf,
    /// Where rejected rows go (default: OUTPUT + `.rejects.csv`).
    #[arg(long)]
    #[serde(skip)]
    pub rejects: Option<PathBuf>,
    /// Keep puzzles rated at least this.
    #[arg(long)]
    pub min_rating: Option<i32>,
    /// Keep puzzles rated at most this.
    #[arg(long)]
    pub max_rating: Option<i32>,
    /// Keep puzzles whose RatingDeviation is at most this.
    #[arg(long)]
    pub max_rating_deviation: Option<i32>,
    /// Keep puzzles whose Popularity is at least this (-100..100).
    #[arg(long)]
    pub min_popularity: Option<i32>,
    /// Keep puzzles played at least this many times on Lichess.
    #[arg(long)]
    pub min_nb_plays: Option<i32>,
    /// Keep puzzles with any of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_any: Vec<String>,
    /// Keep puzzles with all of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_all: Vec<String>,
    /// Drop puzzles with any of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_none: Vec<String>,
    /// Keep these solver lengths only (comma-separated, e.g. 1,2,3).
    #[arg(long, value_delimiter = ',')]
    pub solver_lengths: Vec<usize>,
    /// Keep mating puzzles only, non-mating ones only, or both.
    #[arg(long, value_enum)]
    pub mate: Option<MateFilter>,
    /// Keep a uniform sample of at most N puzzles (input order kept).
    #[arg(long)]
    pub sample: Option<u64>,
    /// Seed of the sample.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Runs `ingest puzzles` from the command line (flags over the defaults).
pub fn run_puzzles(args: &PuzzlesArgs) -> Result<Summary> {
    let config = flags_over(&IngestPuzzlesConfig::default(), args)?;
    run_puzzles_with(&config, &args.input, &args.output, args.rejects.as_deref())
}

/// Runs `ingest puzzles` with a configuration (the pipeline runner's entry).
pub(crate) fn run_puzzles_with(
    config: &IngestPuzzlesConfig,
    input: &Path,
    output: &Path,
    rejects: Option<&Path>,
) -> Result<Summary> {
    let stats = ingest_puzzles(config, input, output, rejects)?;
    Ok(stats.summary())
}

/// What one ingest run did.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct IngestStats {
    pub input: PathBuf,
    pub output: PathBuf,
    pub rejects: PathBuf,
    pub rows_read: u64,
    /// Rows that passed validation (before filters and sampling).
    pub accepted: u64,
    pub rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    pub filtered: u64,
    pub filtered_by_filter: BTreeMap<String, u64>,
    pub written: u64,
    /// Accepted puzzles whose mate themes and final position disagree.
    pub mate_disagreements: u64,
    pub seconds: f64,
    pub rows_per_sec: f64,
}

impl IngestStats {
    pub fn summary(&self) -> Summary {
        let mut human = format!(
            "ingest puzzles: {} rows read, {} accepted, {} rejected, {} filtered out, {} written to {}\n\
             {:.2} s, {:.0} rows/s\n",
            self.rows_read,
            self.accepted,
            self.rejected,
            self.filtered,
            self.written,
            self.output.display(),
            self.seconds,
            self.rows_per_sec
        );
        for (reason, n) in &self.rejected_by_reason {
            human.push_str(&format!("  rejected {reason}: {n}\n"));
        }
        for (filter, n) in &self.filtered_by_filter {
            human.push_str(&format!("  filtered {filter}: {n}\n"));
        }
        if self.rejected > 0 {
            human.push_str(&format!("rejects: {}\n", self.rejects.display()));
        }
        if self.mate_disagreements > 0 {
            human.push_str(&format!(
                "{} puzzles' mate themes disagree with their final position (column MateCheck)\n",
                self.mate_disagreements
            ));
        }
        let json = serde_json::to_value(self).unwrap_or(Value::Null);
        Summary::new(human, json)
    }
}

// Positions of the Lichess columns in `LICHESS_COLUMNS`.
const ID: usize = 0;
const FEN: usize = 1;
const MOVES: usize = 2;
const RATING: usize = 3;
const RATING_DEVIATION: usize = 4;
const POPULARITY: usize = 5;
const NB_PLAYS: usize = 6;
const THEMES: usize = 7;
const GAME_URL: usize = 8;
const OPENING_TAGS: usize = 9;

/// Where an output extra column's value comes from.
#[derive(Clone, Debug)]
enum ExtraCell {
    /// An input column copied unchanged.
    Input(usize),
    /// A derived column (replacing an input column of that name, if any).
    Derived(Column),
    /// `Source`: the input's value when it has one, else ours.
    Source(Option<usize>),
}

/// How one input file's columns map to the checks and the output.
#[derive(Clone, Debug)]
pub struct RowLayout {
    header: Header,
    lichess: [Option<usize>; 10],
    extra: Vec<ExtraCell>,
    extra_names: Vec<String>,
    /// Rating, RatingDeviation, Popularity and NbPlays must be present.
    require_stats: bool,
}

impl RowLayout {
    /// Builds the layout for a header. With `require_stats` (Lichess CSV
    /// input) the four integer columns must exist and be filled.
    pub fn new(names: Vec<String>, require_stats: bool) -> std::result::Result<Self, String> {
        let header = Header::new(names)?;
        let mut lichess = [None; 10];
        for (i, name) in LICHESS_COLUMNS.iter().enumerate() {
            lichess[i] = header.position(name);
        }
        if require_stats {
            for i in [RATING, RATING_DEVIATION, POPULARITY, NB_PLAYS] {
                if lichess[i].is_none() {
                    return Err(format!("the header has no {} column", LICHESS_COLUMNS[i]));
                }
            }
        }
        let mut extra = Vec::new();
        let mut extra_names = Vec::new();
        for (i, name) in header.names().iter().enumerate() {
            if LICHESS_COLUMNS.contains(&name.as_str()) {
                continue;
            }
            let cell = match Column::from_name(name) {
                Some(Column::Source) => ExtraCell::Source(Some(i)),
                Some(column) if DerivedFields::fills(column) => ExtraCell::Derived(column),
                _ => ExtraCell::Input(i),
            };
            extra.push(cell);
            extra_names.push(name.clone());
        }
        for derived in columns::DERIVED {
            if header.position(derived.name()).is_none() {
                extra.push(if derived == Column::Source {
                    ExtraCell::Source(None)
                } else {
                    ExtraCell::Derived(derived)
                });
                extra_names.push(derived.name().to_string());
            }
        }
        Ok(Self {
            header,
            lichess,
            extra,
            extra_names,
            require_stats,
        })
    }

    fn text<'a>(&self, cells: &[&'a str], column: usize) -> &'a str {
        match self.lichess[column] {
            Some(i) => cells.get(i).copied().unwrap_or(""),
            None => "",
        }
    }
}

/// A row that passed validation.
#[derive(Clone, Debug)]
pub struct CheckedRow {
    pub rating: Option<i32>,
    pub rating_deviation: Option<i32>,
    pub popularity: Option<i32>,
    pub nb_plays: Option<i32>,
    pub derived: DerivedFields,
}

fn words(cell: &str) -> impl Iterator<Item = &str> + Clone {
    cell.split_ascii_whitespace()
}

/// Validates one row's cells: column count, UTF-8, PuzzleId present,
/// integers, FEN, the legality of every move, an even move count >= 2.
/// Duplicate ids are the caller's (it sees every row in order).
pub fn check_row(layout: &RowLayout, cells: &[&[u8]]) -> std::result::Result<CheckedRow, RowError> {
    let mut text = Vec::with_capacity(cells.len());
    text_cells(layout, cells.iter().copied(), &mut text)?;
    check_text_row(layout, &text, &mut PuzzleLine::default())
}

/// Checks the cell count and UTF-8 of a row, filling `text` with its cells.
fn text_cells<'a>(
    layout: &RowLayout,
    cells: impl ExactSizeIterator<Item = &'a [u8]>,
    text: &mut Vec<&'a str>,
) -> std::result::Result<(), RowError> {
    text.clear();
    if cells.len() != layout.header.len() {
        return Err(RowError::new(
            "wrong_column_count",
            format!(
                "{} columns, the header has {}",
                cells.len(),
                layout.header.len()
            ),
        ));
    }
    for (i, cell) in cells.enumerate() {
        match std::str::from_utf8(cell) {
            Ok(cell) => text.push(cell),
            Err(_) => {
                return Err(RowError::new(
                    "invalid_utf8",
                    format!("column {} is not UTF-8", layout.header.names()[i]),
                ));
            }
        }
    }
    Ok(())
}

/// [`text_cells`] for a whole CSV record: one UTF-8 check over all its
/// bytes instead of one per cell (a row has 11 short cells); the slow
/// per-cell path runs only to name the column of a bad row.
fn record_cells<'a>(
    layout: &RowLayout,
    record: &'a Row,
    text: &mut Vec<&'a str>,
) -> std::result::Result<(), RowError> {
    text.clear();
    if record.len() == layout.header.len()
        && let Ok(all) = std::str::from_utf8(&record.bytes)
    {
        for range in &record.cells {
            // A cell boundary inside a multi-byte character leaves the
            // cells invalid although the whole is valid.
            match all.get(range.clone()) {
                Some(cell) => text.push(cell),
                None => return text_cells(layout, record.iter(), text),
            }
        }
        return Ok(());
    }
    text_cells(layout, record.iter(), text)
}

/// [`check_row`] after the cell count and UTF-8 checks; `line` is a
/// buffer the FEN and moves are played into.
fn check_text_row(
    layout: &RowLayout,
    cells: &[&str],
    line: &mut PuzzleLine,
) -> std::result::Result<CheckedRow, RowError> {
    let text = |column: usize| -> &str { layout.text(cells, column) };
    if text(ID).trim().is_empty() {
        return Err(RowError::new("missing_id", "PuzzleId is empty"));
    }
    // An id is a name that files, logs and exclusion lists carry: a NUL or
    // another control character in it is a damaged row, not a puzzle.
    if let Some(c) = text(ID).chars().find(|c| c.is_control()) {
        return Err(RowError::new(
            "bad_id",
            format!(
                "PuzzleId {:?} holds the control character U+{:04X}",
                text(ID),
                u32::from(c)
            ),
        ));
    }
    let int = |column: usize| -> std::result::Result<Option<i32>, RowError> {
        let value = text(column).trim();
        if value.is_empty() {
            if layout.require_stats {
                return Err(RowError::new(
                    "missing_integer",
                    format!("{} is empty", LICHESS_COLUMNS[column]),
                ));
            }
            return Ok(None);
        }
        value.parse::<i32>().map(Some).map_err(|_| {
            RowError::new(
                "bad_integer",
                format!("{} is not an integer: {value:?}", LICHESS_COLUMNS[column]),
            )
        })
    };
    let rating = int(RATING)?;
    let rating_deviation = int(RATING_DEVIATION)?;
    let popularity = int(POPULARITY)?;
    let nb_plays = int(NB_PLAYS)?;
    // Integers no puzzle can have: a rating outside what a release bins
    // (a rating of -500 would sit in no cell, or in a made-up one), and a
    // negative deviation or play count.
    let ratings = derive::RATING_RANGE;
    if let Some(r) = rating.filter(|r| !ratings.contains(r)) {
        return Err(RowError::new(
            "out_of_range",
            format!(
                "Rating {r} is outside {}..={}",
                ratings.start(),
                ratings.end()
            ),
        ));
    }
    for (column, value) in [(RATING_DEVIATION, rating_deviation), (NB_PLAYS, nb_plays)] {
        if let Some(v) = value.filter(|v| *v < 0) {
            return Err(RowError::new(
                "out_of_range",
                format!("{} {v} is negative", LICHESS_COLUMNS[column]),
            ));
        }
    }
    line.parse_cells(text(FEN).as_bytes(), text(MOVES).as_bytes())?;
    let derived = DerivedFields::new(line, rating, words(text(THEMES)), text(GAME_URL).trim());
    Ok(CheckedRow {
        rating,
        rating_deviation,
        popularity,
        nb_plays,
        derived,
    })
}

/// The first filter a checked row fails, by name.
fn filter_out(
    config: &IngestPuzzlesConfig,
    row: &CheckedRow,
    themes: &str,
) -> Option<&'static str> {
    let below =
        |value: Option<i32>, min: Option<i32>| min.is_some_and(|m| value.is_none_or(|v| v < m));
    let above =
        |value: Option<i32>, max: Option<i32>| max.is_some_and(|m| value.is_none_or(|v| v > m));
    if below(row.rating, config.min_rating) || above(row.rating, config.max_rating) {
        return Some("rating");
    }
    if above(row.rating_deviation, config.max_rating_deviation) {
        return Some("rating_deviation");
    }
    if below(row.popularity, config.min_popularity) {
        return Some("popularity");
    }
    if below(row.nb_plays, config.min_nb_plays) {
        return Some("nb_plays");
    }
    let has = |theme: &String| words(themes).any(|t| t == theme);
    if !config.themes_any.is_empty() && !config.themes_any.iter().any(has) {
        return Some("themes_any");
    }
    if !config.themes_all.iter().all(has) {
        return Some("themes_all");
    }
    if config.themes_none.iter().any(has) {
        return Some("themes_none");
    }
    if !config.solver_lengths.is_empty() && !config.solver_lengths.contains(&row.derived.num_moves)
    {
        return Some("solver_length");
    }
    match (config.mate, row.derived.mate) {
        (MateFilter::Only, false) | (MateFilter::Exclude, true) => Some("mate"),
        _ => None,
    }
}

/// Compact key of a PuzzleId for the duplicate check: ids up to 15 bytes
/// (all Lichess ids are 5) pack into a u128 without allocating.
#[derive(PartialEq, Eq, Clone, Debug)]
enum IdKey {
    Short(u128),
    Long(Box<[u8]>),
}

fn id_key(id: &[u8]) -> IdKey {
    if id.len() <= 15 {
        let mut bytes = [0u8; 16];
        bytes[..id.len()].copy_from_slice(id);
        bytes[15] = id.len() as u8;
        IdKey::Short(u128::from_le_bytes(bytes))
    } else {
        IdKey::Long(id.into())
    }
}

/// Outcome of one row after the parallel stage.
enum RowOutcome {
    Rejected(RowError),
    Valid {
        id: IdKey,
        mate_disagrees: bool,
        /// The filter it failed, or the span of its encoded output.
        kept: std::result::Result<std::ops::Range<usize>, &'static str>,
    },
}

/// Spare output buffers shared by the validators and the commit thread.
type BufferPool = std::sync::Mutex<Vec<Vec<u8>>>;

struct ChunkOut {
    bytes: Vec<u8>,
    rows: Vec<RowOutcome>,
}

/// A batch of input rows from the reader thread.
struct Batch {
    records: Vec<Row>,
    lines: Vec<u64>,
    /// Rows the reader already knows are bad (unparseable JSON lines).
    prerejected: Vec<Option<RowError>>,
    len: usize,
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

/// Formats accepted rows into output bytes (CSV or JSON Lines).
///
/// CSV rows are assembled field by field: csv's own quoting rule decides
/// whether a field needs quotes (almost none do), and a field that does not
/// is copied as it is. Going through `csv::Writer` per field cost about a
/// tenth of the whole ingest in its per-byte state machine and buffer.
struct Encoder<'a> {
    layout: &'a RowLayout,
    format: Format,
    bytes: Vec<u8>,
    /// csv's rule for `QuoteStyle::Necessary` with a `\n` terminator, the
    /// settings every puzzleforge CSV writer uses.
    quoting: csv_core::Writer,
    scratch: Vec<u8>,
}

impl<'a> Encoder<'a> {
    fn new(layout: &'a RowLayout, format: Format, mut buffer: Vec<u8>) -> Self {
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

    fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Appends one row; returns the span of its bytes.
    /// `plain`: no input cell holds a byte csv quotes for.
    fn encode(
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
                    let value = input
                        .map(|i| cells[i].trim_ascii().as_bytes())
                        .unwrap_or(b"");
                    let value: &[u8] = if value.is_empty() { b"lichess" } else { value };
                    Self::push_field(bytes, quoting, value, false);
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
        derive::apply_derived(&mut puzzle, &row.derived, "lichess");
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

fn process_chunk(
    layout: &RowLayout,
    format: Format,
    config: &IngestPuzzlesConfig,
    records: &[Row],
    prerejected: &[Option<RowError>],
    buffers: &BufferPool,
) -> Result<ChunkOut> {
    // Output buffers come back from the commit thread: reusing them keeps
    // the allocator from returning and re-faulting pages every chunk.
    let buffer = buffers
        .lock()
        .ok()
        .and_then(|mut pool| pool.pop())
        .unwrap_or_else(|| Vec::with_capacity(CHUNK_ROWS * 512));
    let mut encoder = Encoder::new(layout, format, buffer);
    let mut rows = Vec::with_capacity(records.len());
    let mut cells: Vec<&str> = Vec::with_capacity(layout.header.len());
    let mut line = PuzzleLine::default();
    for (record, pre) in records.iter().zip(prerejected) {
        if let Some(error) = pre {
            rows.push(RowOutcome::Rejected(error.clone()));
            continue;
        }
        let checked = record_cells(layout, record, &mut cells)
            .and_then(|()| check_text_row(layout, &cells, &mut line));
        let outcome = match checked {
            Err(error) => RowOutcome::Rejected(error),
            Ok(row) => {
                let themes = layout.text(&cells, THEMES);
                let kept = match filter_out(config, &row, themes) {
                    Some(filter) => Err(filter),
                    None => Ok(encoder.encode(record.is_plain(), &cells, &row)?),
                };
                RowOutcome::Valid {
                    id: id_key(layout.text(&cells, ID).trim_ascii().as_bytes()),
                    mate_disagrees: matches!(row.derived.mate_check, "themes_only" | "board_only"),
                    kept,
                }
            }
        };
        rows.push(outcome);
    }
    Ok(ChunkOut {
        bytes: encoder.into_bytes(),
        rows,
    })
}

type BatchResult = std::result::Result<Batch, (u64, String)>;

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
                    let too_long = slot.too_long;
                    batch.lines.push(line);
                    batch.prerejected.push(too_long.then(RowError::too_long));
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
                Err(error) => Some(error),
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

/// Where rejected rows go: line, PuzzleId, reason, detail.
struct RejectsFile {
    csv: csv::Writer<AtomicFile>,
}

impl RejectsFile {
    fn create(path: &Path) -> Result<Self> {
        let mut csv = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(AtomicFile::create(path)?);
        csv.write_record(["line", "PuzzleId", "reason", "detail"])
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Self { csv })
    }

    fn write(&mut self, line: u64, id: &[u8], error: &RowError) -> Result<()> {
        // Control characters escaped (`\0`), so the rejects file stays text
        // a user can read and grep.
        let id: String = String::from_utf8_lossy(id.trim_ascii())
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        self.csv
            .write_record([line.to_string().as_str(), &id, error.reason, &error.detail])
            .with_context(|| format!("writing {}", self.csv.get_ref().path().display()))?;
        Ok(())
    }

    fn commit(self) -> Result<()> {
        let path = self.csv.get_ref().path().to_path_buf();
        let file = self
            .csv
            .into_inner()
            .map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), e.error()))?;
        file.commit()
    }
}

/// The default rejects path: the output's name plus `.rejects.csv`.
pub(crate) fn default_rejects_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".rejects.csv");
    PathBuf::from(name)
}

/// Uniform sample of at most `capacity` rows (Algorithm R) from a seeded
/// ChaCha8 stream: the same input and seed always choose the same rows.
struct Reservoir {
    capacity: u64,
    seen: u64,
    rng: ChaCha8Rng,
    rows: Vec<(u64, Vec<u8>)>,
}

impl Reservoir {
    fn new(capacity: u64, seed: u64) -> Self {
        Self {
            capacity,
            seen: 0,
            rng: seed::rng(seed, Domain::IngestSample, Key::Run),
            rows: Vec::new(),
        }
    }

    fn offer(&mut self, index: u64, bytes: &[u8]) {
        if self.seen < self.capacity {
            self.rows.push((index, bytes.to_vec()));
        } else {
            let slot = self.rng.random_range(0..=self.seen);
            if slot < self.capacity {
                self.rows[slot as usize] = (index, bytes.to_vec());
            }
        }
        self.seen += 1;
    }

    /// The chosen rows in input order.
    fn into_sorted(mut self) -> Vec<(u64, Vec<u8>)> {
        self.rows.sort_unstable_by_key(|(index, _)| *index);
        self.rows
    }
}

/// The sequential stage: duplicate ids, counts, sampling and writing, in
/// input order.
struct Committer<'a> {
    layout: &'a RowLayout,
    output: &'a Path,
    stats: IngestStats,
    /// Ids of up to 15 bytes (every Lichess id) packed into a u128, so the
    /// check allocates nothing; longer ids go to `long_ids`.
    short_ids: foldhash::HashSet<u128>,
    long_ids: foldhash::HashSet<Box<[u8]>>,
    reservoir: Option<Reservoir>,
    kept_index: u64,
    out: AtomicFile,
    rejects: RejectsFile,
}

impl Committer<'_> {
    /// Writes the sample (when sampling), commits the output and rejects
    /// files, and returns the counts.
    fn finish(self) -> Result<IngestStats> {
        let Committer {
            mut stats,
            reservoir,
            mut out,
            rejects,
            output,
            ..
        } = self;
        if let Some(reservoir) = reservoir {
            let dropped = reservoir.seen.saturating_sub(reservoir.capacity);
            if dropped > 0 {
                stats.filtered += dropped;
                stats
                    .filtered_by_filter
                    .insert("sample".to_string(), dropped);
            }
            for (_, bytes) in reservoir.into_sorted() {
                out.write_all(&bytes)
                    .with_context(|| format!("writing {}", output.display()))?;
                stats.written += 1;
            }
        }
        out.commit()?;
        rejects.commit()?;
        Ok(stats)
    }

    fn first_time(&mut self, id: &IdKey) -> bool {
        match id {
            IdKey::Short(key) => self.short_ids.insert(*key),
            IdKey::Long(key) => self.long_ids.insert(key.clone()),
        }
    }

    fn flush(&mut self, bytes: &[u8], run: Option<std::ops::Range<usize>>) -> Result<()> {
        if let Some(run) = run {
            self.out
                .write_all(&bytes[run])
                .with_context(|| format!("writing {}", self.output.display()))?;
        }
        Ok(())
    }

    fn take(&mut self, batch: &Batch, chunks: &[ChunkOut]) -> Result<()> {
        let mut row_index = 0;
        for chunk in chunks {
            let mut pending: Option<std::ops::Range<usize>> = None;
            for outcome in &chunk.rows {
                let line = batch.lines[row_index];
                let record = &batch.records[row_index];
                row_index += 1;
                self.stats.rows_read += 1;
                let id_cell = self.layout.lichess[ID]
                    .and_then(|i| record.get(i))
                    .unwrap_or(b"");
                let (id, mate_disagrees, kept) = match outcome {
                    RowOutcome::Rejected(error) => {
                        reject(&mut self.stats, &mut self.rejects, line, id_cell, error)?;
                        continue;
                    }
                    RowOutcome::Valid {
                        id,
                        mate_disagrees,
                        kept,
                    } => (id, mate_disagrees, kept),
                };
                if !self.first_time(id) {
                    let error =
                        RowError::new("duplicate_id", "the PuzzleId appeared on an earlier row");
                    reject(&mut self.stats, &mut self.rejects, line, id_cell, &error)?;
                    continue;
                }
                self.stats.accepted += 1;
                self.stats.mate_disagreements += u64::from(*mate_disagrees);
                match kept {
                    Err(filter) => {
                        self.stats.filtered += 1;
                        *self
                            .stats
                            .filtered_by_filter
                            .entry(filter.to_string())
                            .or_default() += 1;
                    }
                    Ok(span) => {
                        match self.reservoir.as_mut() {
                            Some(reservoir) => {
                                reservoir.offer(self.kept_index, &chunk.bytes[span.clone()])
                            }
                            None => {
                                // Kept rows of a chunk are mostly one run of
                                // bytes: write runs, not rows.
                                match &mut pending {
                                    Some(run) if run.end == span.start => run.end = span.end,
                                    _ => {
                                        self.flush(&chunk.bytes, pending.take())?;
                                        pending = Some(span.clone());
                                    }
                                }
                                self.stats.written += 1;
                            }
                        }
                        self.kept_index += 1;
                    }
                }
            }
            self.flush(&chunk.bytes, pending)?;
        }
        Ok(())
    }
}

/// Validates, derives, filters and writes; the library entry point.
pub fn ingest_puzzles(
    config: &IngestPuzzlesConfig,
    input: &Path,
    output: &Path,
    rejects: Option<&Path>,
) -> Result<IngestStats> {
    let started = Instant::now();
    let format = Format::from_output_path(output)?;
    let rejects_path = rejects
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_rejects_path(output));
    let total_bytes = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let bar = crate::core::progress::bytes(total_bytes, "puzzles");
    let wrap_bar = bar.clone();
    let reader = open_input_with(input, move |file| Box::new(wrap_bar.wrap_read(file)))?;
    let (sender, batches) = mpsc::sync_channel::<BatchResult>(2);
    let (recycle, recycled) = mpsc::channel::<Batch>();
    let (layout, reader_thread) = start_reader(input, reader, sender, recycled)?;
    let out = create_output(output, format, &layout)?;
    let rejects_file = RejectsFile::create(&rejects_path)?;

    let stats = IngestStats {
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        rejects: rejects_path.clone(),
        ..IngestStats::default()
    };
    let committer = Committer {
        layout: &layout,
        output,
        stats,
        // Sized from the input so the set rarely rehashes (a compressed dump
        // row is about 45 bytes, a plain one about 180).
        short_ids: foldhash::HashSet::with_capacity(
            (total_bytes / 16).clamp(1 << 16, 1 << 23) as usize
        ),
        long_ids: foldhash::HashSet::new(),
        reservoir: config.sample.map(|n| Reservoir::new(n, config.seed)),
        kept_index: 0,
        out,
        rejects: rejects_file,
    };

    // Three stages overlap: the reader thread parses, this thread validates
    // batch N+1 in parallel while the commit thread writes batch N.
    let buffers: &BufferPool = &std::sync::Mutex::new(Vec::new());
    let result = std::thread::scope(|scope| -> Result<Committer> {
        // Named, so profilers and debuggers tell the stages apart.
        std::thread::Builder::new()
            .name("ingest-read".into())
            .spawn_scoped(scope, reader_thread)
            .context("starting the reader thread")?;
        let (to_commit, commits) = mpsc::sync_channel::<(Batch, Vec<ChunkOut>)>(1);
        let progress = bar.clone();
        let commit_thread = std::thread::Builder::new()
            .name("ingest-commit".into())
            .spawn_scoped(scope, move || {
                commit_batches(committer, commits, recycle, buffers, progress, started)
            })
            .context("starting the commit thread")?;
        let failure =
            validate_batches(batches, &layout, format, config, buffers, &to_commit, input).err();
        drop(to_commit);
        let committed = commit_thread
            .join()
            .map_err(|_| anyhow::anyhow!("the commit thread panicked"))?;
        match failure {
            Some(error) => Err(error),
            None => committed,
        }
    });
    bar.finish_and_clear();
    let mut stats = result?.finish()?;
    stats.seconds = started.elapsed().as_secs_f64();
    stats.rows_per_sec = stats.rows_read as f64 / stats.seconds.max(1e-9);
    Ok(stats)
}

/// Reads the input's header (CSV) or first object (JSON Lines): the row
/// layout, and the reader thread's work, which sends the rest in batches.
fn start_reader(
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
        Ok(Some(_)) => {}
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

/// Creates the output file and, for CSV, writes its header.
fn create_output(output: &Path, format: Format, layout: &RowLayout) -> Result<AtomicFile> {
    let mut out = AtomicFile::create(output)?;
    if format == Format::Csv {
        let mut header = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let names: Vec<&str> = LICHESS_COLUMNS
            .iter()
            .copied()
            .chain(layout.extra_names.iter().map(String::as_str))
            .collect();
        header.write_record(&names)?;
        let header = header
            .into_inner()
            .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
        out.write_all(&header)
            .with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(out)
}

/// The validators' loop: checks each batch in parallel and hands it to the
/// commit thread; stops at a read error or when the commit thread stopped.
fn validate_batches(
    batches: mpsc::Receiver<BatchResult>,
    layout: &RowLayout,
    format: Format,
    config: &IngestPuzzlesConfig,
    buffers: &BufferPool,
    to_commit: &mpsc::SyncSender<(Batch, Vec<ChunkOut>)>,
    input: &Path,
) -> Result<()> {
    let mut rows_validated = 0u64;
    for batch in batches {
        let batch = batch.map_err(|(line, error)| {
            bad_input(format!(
                "{}: the input is truncated or corrupt after {rows_validated} rows (line {line}): {error}",
                input.display(),
            ))
        })?;
        let chunks = batch.records[..batch.len]
            .par_chunks(CHUNK_ROWS)
            .zip(batch.prerejected.par_chunks(CHUNK_ROWS))
            .map(|(records, pre)| process_chunk(layout, format, config, records, pre, buffers))
            .collect::<Result<Vec<ChunkOut>>>()?;
        rows_validated += batch.len as u64;
        if to_commit.send((batch, chunks)).is_err() {
            // The commit thread stopped on an error; join reports it.
            break;
        }
    }
    Ok(())
}

/// The commit thread's loop: commits each validated batch in input order,
/// gives its buffers back for reuse and reports progress.
fn commit_batches<'a>(
    mut committer: Committer<'a>,
    commits: mpsc::Receiver<(Batch, Vec<ChunkOut>)>,
    recycle: mpsc::Sender<Batch>,
    buffers: &BufferPool,
    progress: indicatif::ProgressBar,
    started: Instant,
) -> Result<Committer<'a>> {
    for (batch, chunks) in commits {
        committer.take(&batch, &chunks)?;
        if let Ok(mut pool) = buffers.lock() {
            for chunk in chunks {
                let mut bytes = chunk.bytes;
                bytes.clear();
                pool.push(bytes);
            }
        }
        let rows = committer.stats.rows_read;
        let seconds = started.elapsed().as_secs_f64();
        progress.set_message(format!(
            "{rows} rows, {:.0} rows/s",
            rows as f64 / seconds.max(1e-9)
        ));
        let _ = recycle.send(batch);
    }
    Ok(committer)
}

fn bail_input_header(input: &Path, why: &str) -> Result<()> {
    Err(bad_input(format!("{}: bad header: {why}", input.display())))
}

fn reject(
    stats: &mut IngestStats,
    rejects: &mut RejectsFile,
    line: u64,
    id: &[u8],
    error: &RowError,
) -> Result<()> {
    stats.rejected += 1;
    *stats
        .rejected_by_reason
        .entry(error.reason.to_string())
        .or_default() += 1;
    rejects.write(line, id, error)
}

//! Row validation: how an input file's columns map to the checks and the
//! output ([`RowLayout`]), and the checks one row passes ([`check_row`]:
//! cell count, UTF-8, id, integers, FEN and moves). Apart because it is
//! the one place that says what a valid puzzle row is; the readers, the
//! filters and the encoder only use its layout.

use crate::chess::columns::{self, Column};
use crate::chess::derive::{self, DerivedFields};
use crate::chess::line::PuzzleLine;
use crate::chess::record::{Header, LICHESS_COLUMNS, RowError};
use crate::core::csv_reader::Row;

// Positions of the Lichess columns in `LICHESS_COLUMNS`.
pub(super) const ID: usize = 0;
const FEN: usize = 1;
pub(super) const MOVES: usize = 2;
const RATING: usize = 3;
const RATING_DEVIATION: usize = 4;
const POPULARITY: usize = 5;
const NB_PLAYS: usize = 6;
pub(super) const THEMES: usize = 7;
const GAME_URL: usize = 8;
pub(super) const OPENING_TAGS: usize = 9;

/// Where an output extra column's value comes from.
#[derive(Clone, Debug)]
pub(super) enum ExtraCell {
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
    pub(super) header: Header,
    pub(super) lichess: [Option<usize>; 10],
    pub(super) extra: Vec<ExtraCell>,
    pub(super) extra_names: Vec<String>,
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

    pub(super) fn text<'a>(&self, cells: &[&'a str], column: usize) -> &'a str {
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

pub(super) fn words(cell: &str) -> impl Iterator<Item = &str> + Clone {
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
pub(super) fn record_cells<'a>(
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
pub(super) fn check_text_row(
    layout: &RowLayout,
    cells: &[&str],
    line: &mut PuzzleLine,
) -> std::result::Result<CheckedRow, RowError> {
    let text = |column: usize| -> &str { layout.text(cells, column) };
    // The one id rule of every reader.
    crate::chess::record::check_puzzle_id(text(ID))?;
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

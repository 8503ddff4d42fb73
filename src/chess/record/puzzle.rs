//! The puzzle record: the ten Lichess columns as typed fields, every other
//! column as text in order, and the record's cells as CSV and JSON write
//! them. Apart from the files so that what a puzzle holds reads without
//! how it is stored.

use anyhow::Result;
use serde_json::{Map, Value};

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;

use crate::chess::columns::{self, Column, ColumnType};
use crate::chess::line::{LineError, PuzzleLine, ucis_text};
use crate::chess::record::row_error::RowError;

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

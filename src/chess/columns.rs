//! Every column puzzleforge reads or writes, by name and type, and the
//! ordered sets of columns each stage writes after the ten Lichess columns.
//!
//! A column's header name and type are spelled once, in its line of
//! [`columns!`]; files, stages and lookups use the enum. The sets fix the
//! column order of every output file, so changing one changes the bytes a
//! stage writes. A release carries every column declared here but the
//! games ingest's own ([`CANDIDATE_ONLY`]), so a new column is one line:
//! its name and its type.
//!
//! May use nothing else in the crate: the record, the stages and the
//! pipeline all build on it.

use serde_json::Value;
use std::fmt;

/// What a column holds: how JSON Lines write it and how a release's
/// dataset card declares it. CSV cells are always text, spelled as Lichess
/// and the APO files spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Text; an empty cell is JSON `null`.
    Text,
    /// A 64-bit integer; an empty cell is `null`.
    Int,
    /// A 64-bit float; an empty cell is `null`.
    Float,
    /// `True`/`False` in CSV (the APO files' spelling), a JSON boolean;
    /// an empty cell is `null`.
    Bool,
    /// A check's verdict (`verify`'s columns): `True`/`False` in CSV as
    /// [`ColumnType::Bool`], a JSON boolean; an empty cell (the check did
    /// not run: no second engine, a Lichess puzzle) is `null`. Files
    /// written before the verdicts were booleans spell them `pass`/`fail`
    /// and `none`; they read as `true`/`false` and `null`.
    Check,
    /// Space-separated words in CSV (Lichess's `Themes`), a JSON list of
    /// strings; an empty cell is the empty list.
    TextList,
}

impl ColumnType {
    /// The type of the column with this header name: a known column's own,
    /// text for any other (a pool's `DailyDate`, the APO files' `GameSAN`).
    pub fn of(name: &str) -> ColumnType {
        Column::from_name(name).map_or(ColumnType::Text, Column::kind)
    }

    /// The JSON value of a CSV cell of this type, or why the cell does not
    /// hold one.
    pub fn json_value(self, cell: &str) -> Result<Value, String> {
        let text = cell.trim();
        if text.is_empty() && self != ColumnType::TextList {
            return Ok(Value::Null);
        }
        match self {
            ColumnType::Text => Ok(Value::from(cell)),
            ColumnType::Int => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{text:?} is not an integer")),
            ColumnType::Float => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{text:?} is not a finite number")),
            ColumnType::Bool => match text.to_ascii_lowercase().as_str() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(format!("{text:?} is not True or False")),
            },
            ColumnType::Check => match text.to_ascii_lowercase().as_str() {
                "true" | "pass" => Ok(Value::Bool(true)),
                "false" | "fail" => Ok(Value::Bool(false)),
                "none" => Ok(Value::Null),
                _ => Err(format!(
                    "{text:?} is not True or False (or an older file's pass, fail, none)"
                )),
            },
            ColumnType::TextList => Ok(Value::from(
                text.split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            )),
        }
    }

    /// The CSV cell of a JSON Lines value of any type: `null` is empty,
    /// booleans are `True`/`False`, lists are joined by spaces.
    pub fn cell_of(value: &Value) -> String {
        match value {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
            Value::Array(items) => items
                .iter()
                .map(ColumnType::cell_of)
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        }
    }

    /// The Hugging Face `datasets` feature of this type as JSON Lines
    /// hold it, in the dataset card's YAML (`dtype: int64`, `list: string`).
    pub fn feature(self) -> &'static str {
        match self {
            ColumnType::Text => "dtype: string",
            ColumnType::Int => "dtype: int64",
            ColumnType::Float => "dtype: float64",
            ColumnType::Bool | ColumnType::Check => "dtype: bool",
            ColumnType::TextList => "list: string",
        }
    }
}

macro_rules! columns {
    ($($(#[$doc:meta])* $variant:ident = $name:literal: $kind:ident,)*) => {
        /// A column of a puzzle file.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Column {
            $($(#[$doc])* $variant,)*
        }

        impl Column {
            /// Every column, in declaration order.
            pub(crate) const ALL: &'static [Column] = &[$(Column::$variant,)*];

            /// The header name, as it appears in CSV headers and JSON keys.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Column::$variant => $name,)*
                }
            }

            /// What the column holds.
            pub const fn kind(self) -> ColumnType {
                match self {
                    $(Column::$variant => ColumnType::$kind,)*
                }
            }
        }
    };
}

columns! {
    // The Lichess puzzle dump's ten, in its order.
    PuzzleId = "PuzzleId": Text,
    /// The position before the opponent's first move.
    Fen = "FEN": Text,
    /// UCI, the opponent's move first.
    Moves = "Moves": Text,
    Rating = "Rating": Int,
    RatingDeviation = "RatingDeviation": Int,
    Popularity = "Popularity": Int,
    NbPlays = "NbPlays": Int,
    Themes = "Themes": TextList,
    GameUrl = "GameUrl": Text,
    OpeningTags = "OpeningTags": TextList,
    // Derived from the line and the cells, by the rules in chess::derive.
    /// Solver moves.
    NumMoves = "NumMoves": Int,
    /// `True` when the line ends in checkmate.
    Mate = "Mate": Bool,
    /// How the theme-based and the board-based mate flags compare.
    MateCheck = "MateCheck": Text,
    /// The rating bin, `(1900, 2000]`: of 100 points as `ingest puzzles`
    /// writes it, of `[release] bin_width` in a release.
    RatingBin = "RatingBin": Text,
    /// The 200-point rating bin.
    RatingBin200 = "RatingBin200": Text,
    /// opening, middlegame or endgame.
    Phase = "Phase": Text,
    /// The source game's id.
    GameId = "GameId": Text,
    /// The ply of the source game the puzzle starts at.
    Ply = "Ply": Int,
    /// Which stage or source made the puzzle (`lichess`, `selfplay`, ...).
    Source = "Source": Text,
    // Written by the games ingest and the miner.
    /// The self-play game's seed.
    Seed = "Seed": Int,
    WhiteElo = "WhiteElo": Int,
    BlackElo = "BlackElo": Int,
    /// The game's date.
    Date = "Date": Text,
    /// The position after the candidate's move.
    FenAfter = "FenAfter": Text,
    /// The game's evaluation before and after the candidate's move.
    EvalBefore = "EvalBefore": Text,
    EvalAfter = "EvalAfter": Text,
    TimeControl = "TimeControl": Text,
    /// Why the games ingest picked the position.
    Kind = "Kind": Text,
    /// The miner's search: best and second score, criterion, nodes.
    BestScore = "BestScore": Int,
    SecondScore = "SecondScore": Int,
    Criterion = "Criterion": Text,
    Nodes = "Nodes": Int,
    // Written by rate.
    /// Where the rating comes from: `lichess` or `estimated`.
    RatingSource = "RatingSource": Text,
    // Written by verify.
    /// Whether the same engine at K times the nodes agrees.
    VerifyDeeper = "VerifyDeeper": Check,
    /// Whether the second engine agrees on every solver move; empty
    /// (`null`) without a second engine.
    VerifySecond = "VerifySecond": Check,
    /// Least room to the criterion's thresholds over the searches (cp, or win chance).
    Margin = "Margin": Float,
    /// `True` when every check that ran passed.
    Verified = "Verified": Check,
}

impl Column {
    /// The column with this header name, if puzzleforge knows it.
    pub(crate) fn from_name(name: &str) -> Option<Column> {
        Column::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AsRef<str> for Column {
    fn as_ref(&self) -> &str {
        self.name()
    }
}

/// The header names of a set of columns, in order.
pub const fn names<const N: usize>(columns: [Column; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = columns[i].name();
        i += 1;
    }
    out
}

/// The Lichess puzzle CSV columns, in order: the first ten of every file.
pub(crate) const LICHESS: [Column; 10] = [
    Column::PuzzleId,
    Column::Fen,
    Column::Moves,
    Column::Rating,
    Column::RatingDeviation,
    Column::Popularity,
    Column::NbPlays,
    Column::Themes,
    Column::GameUrl,
    Column::OpeningTags,
];

/// The columns derived from a puzzle's line and cells
/// ([`crate::chess::derive`]), plus `Source`: what `ingest puzzles` appends
/// after the input's columns (those the input already has are filled in
/// place).
pub(crate) const DERIVED: [Column; 9] = [
    Column::NumMoves,
    Column::Mate,
    Column::MateCheck,
    Column::RatingBin,
    Column::RatingBin200,
    Column::Phase,
    Column::GameId,
    Column::Ply,
    Column::Source,
];

/// What `ingest games` writes after the Lichess ten.
pub(crate) const INGEST_GAMES: [Column; 11] = [
    Column::Source,
    Column::GameId,
    Column::Ply,
    Column::WhiteElo,
    Column::BlackElo,
    Column::Date,
    Column::FenAfter,
    Column::EvalBefore,
    Column::EvalAfter,
    Column::TimeControl,
    Column::Kind,
];

/// What `mine` writes after the Lichess ten.
pub(crate) const MINE: [Column; 10] = [
    Column::Source,
    Column::GameId,
    Column::Ply,
    Column::Seed,
    Column::WhiteElo,
    Column::BlackElo,
    Column::BestScore,
    Column::SecondScore,
    Column::Criterion,
    Column::Nodes,
];

/// What a release writes right after the Lichess ten, before its other
/// columns: the cell, where the puzzle and its rating come from, its game.
pub(crate) const RELEASE: [Column; 6] = [
    Column::NumMoves,
    Column::RatingBin,
    Column::Mate,
    Column::Source,
    Column::RatingSource,
    Column::GameId,
];

/// The columns only `ingest games` candidates carry (the miner turns a
/// candidate into a puzzle without them): a release has them only when its
/// pool does.
const CANDIDATE_ONLY: [Column; 6] = [
    Column::Date,
    Column::FenAfter,
    Column::EvalBefore,
    Column::EvalAfter,
    Column::TimeControl,
    Column::Kind,
];

/// Every column a release has after the Lichess ten, whatever its pool
/// holds, in order: [`RELEASE`], then every other declared column but
/// [`CANDIDATE_ONLY`], in declaration order. A column declared in
/// [`columns!`] is in every release from then on, with its type.
pub(crate) fn release_columns() -> Vec<Column> {
    let rest = Column::ALL
        .iter()
        .copied()
        .filter(|c| !LICHESS.contains(c) && !RELEASE.contains(c) && !CANDIDATE_ONLY.contains(c));
    RELEASE.iter().copied().chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, column) in Column::ALL.iter().enumerate() {
            assert_eq!(Column::from_name(column.name()), Some(*column));
            assert!(
                Column::ALL[..i].iter().all(|c| c.name() != column.name()),
                "{column} twice"
            );
        }
        assert_eq!(Column::from_name("DailyDate"), None);
    }

    #[test]
    fn typed_cells_become_json_and_back() {
        let cases = [
            (ColumnType::Int, "42", json!(42)),
            (ColumnType::Int, "", Value::Null),
            (ColumnType::Float, "0.5", json!(0.5)),
            (ColumnType::Bool, "True", json!(true)),
            (ColumnType::Bool, "False", json!(false)),
            (ColumnType::Text, "", Value::Null),
            (ColumnType::Text, "(400, 500]", json!("(400, 500]")),
            (ColumnType::TextList, "fork pin", json!(["fork", "pin"])),
            (ColumnType::TextList, "", json!([])),
        ];
        for (kind, cell, value) in cases {
            assert_eq!(
                kind.json_value(cell),
                Ok(value.clone()),
                "{kind:?} {cell:?}"
            );
            assert_eq!(ColumnType::cell_of(&value), cell, "{kind:?} {value}");
        }
        assert!(ColumnType::Int.json_value("1.5").is_err());
        assert!(ColumnType::Bool.json_value("maybe").is_err());
        // Verdicts: booleans, null where the check did not run; older
        // files' pass/fail/none still read.
        for (cell, value) in [
            ("True", json!(true)),
            ("False", json!(false)),
            ("", Value::Null),
            ("pass", json!(true)),
            ("fail", json!(false)),
            ("none", Value::Null),
        ] {
            assert_eq!(ColumnType::Check.json_value(cell), Ok(value), "{cell:?}");
        }
        assert!(ColumnType::Check.json_value("maybe").is_err());
        assert!(ColumnType::Bool.json_value("pass").is_err());
        assert_eq!(ColumnType::of("Verified"), ColumnType::Check);
        assert_eq!(ColumnType::Check.feature(), "dtype: bool");
        assert_eq!(ColumnType::of("NbPlays"), ColumnType::Int);
        assert_eq!(ColumnType::of("GameSAN"), ColumnType::Text);
    }

    #[test]
    fn a_release_has_every_column_but_the_candidates_own() {
        let release = release_columns();
        assert_eq!(release[..RELEASE.len()], RELEASE);
        for column in Column::ALL {
            let expected = !LICHESS.contains(column) && !CANDIDATE_ONLY.contains(column);
            assert_eq!(release.contains(column), expected, "{column}");
        }
    }
}

//! Every column puzzleforge reads or writes, by name, and the ordered sets
//! of columns each stage writes after the ten Lichess columns.
//!
//! A column's header name is spelled once, in [`Column::name`]; files,
//! stages and lookups use the enum. The sets fix the column order of every
//! output file, so changing one changes the bytes a stage writes.
//!
//! May use nothing else in the crate: the record, the stages and the
//! pipeline all build on it.

use std::fmt;

macro_rules! columns {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
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
        }
    };
}

columns! {
    // The Lichess puzzle dump's ten, in its order.
    PuzzleId = "PuzzleId",
    /// The position before the opponent's first move.
    Fen = "FEN",
    /// UCI, the opponent's move first.
    Moves = "Moves",
    Rating = "Rating",
    RatingDeviation = "RatingDeviation",
    Popularity = "Popularity",
    NbPlays = "NbPlays",
    Themes = "Themes",
    GameUrl = "GameUrl",
    OpeningTags = "OpeningTags",
    // Derived from the line and the cells (chess::derive, the release).
    /// Solver moves.
    NumMoves = "NumMoves",
    /// `True` when the line ends in checkmate.
    Mate = "Mate",
    /// How the theme-based and the board-based mate flags compare.
    MateCheck = "MateCheck",
    /// The 100-point rating bin, `(1900, 2000]`.
    RatingBin = "RatingBin",
    /// The 200-point rating bin.
    RatingBin200 = "RatingBin200",
    /// opening, middlegame or endgame.
    Phase = "Phase",
    /// The source game's id.
    GameId = "GameId",
    /// The ply of the source game the puzzle starts at.
    Ply = "Ply",
    /// Which stage or source made the puzzle (`lichess`, `selfplay`, ...).
    Source = "Source",
    // Written by the games ingest and the miner.
    /// The self-play game's seed.
    Seed = "Seed",
    WhiteElo = "WhiteElo",
    BlackElo = "BlackElo",
    /// The game's date.
    Date = "Date",
    /// The position after the candidate's move.
    FenAfter = "FenAfter",
    /// The game's evaluation before and after the candidate's move.
    EvalBefore = "EvalBefore",
    EvalAfter = "EvalAfter",
    TimeControl = "TimeControl",
    /// Why the games ingest picked the position.
    Kind = "Kind",
    /// The miner's search: best and second score, criterion, nodes.
    BestScore = "BestScore",
    SecondScore = "SecondScore",
    Criterion = "Criterion",
    Nodes = "Nodes",
    // Written by rate.
    /// Where the rating comes from: `lichess` or `estimated`.
    RatingSource = "RatingSource",
    VerifyDeeper = "VerifyDeeper", // verify: pass/fail, same engine at K times the nodes
    VerifySecond = "VerifySecond", // verify: pass/fail/none, the second engine on every solver move
    Margin = "Margin", // verify: least room to the criterion's thresholds (cp, or win chance)
    Verified = "Verified", // verify: pass when every check passed, else fail
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

/// What a release writes right after the Lichess ten, before the
/// puzzles' other columns.
pub(crate) const RELEASE: [Column; 5] = [
    Column::NumMoves,
    Column::RatingBin,
    Column::Mate,
    Column::Source,
    Column::GameId,
];

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! A game as the PGN reader yields it: its tags, its replayed moves with
//! their evaluations and clocks, or why it was filtered or could not be
//! read. Apart from the reader so that the stages that take games read
//! these types without the parser.

use pgn_reader::{Nag, Outcome, SanPlus};
use shakmaty::{Chess, Color, Move, Position};
use std::fmt;

use crate::chess::wincalc::Eval;

/// The tags of one game, in the order they appear.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tags {
    /// Filled by the visitor as the tags come.
    pub(super) entries: Vec<(String, String)>,
}

impl Tags {
    /// The value of a tag, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// All tags in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One mainline move with the annotations that followed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// The move as written.
    pub san: SanPlus,
    /// The move, checked legal in the position before it.
    pub mv: Move,
    /// `[%eval]` after the move, from White's point of view.
    pub eval: Option<Eval>,
    /// `[%clk]` after the move: the mover's remaining time in milliseconds.
    pub clock_ms: Option<u64>,
    /// The last move annotation glyph (`?` is 2, `??` is 4).
    pub nag: Option<Nag>,
}

/// A game read in full.
#[derive(Clone, Debug)]
pub struct GameRecord {
    /// 1-based position of the game in the input.
    pub number: u64,
    pub tags: Tags,
    /// The starting position (standard, or from the `FEN` tag).
    pub initial: Chess,
    /// The mainline, in order; ply `k` (1-based) is `moves[k - 1]`.
    pub moves: Vec<PlayedMove>,
    /// The position after the last move.
    pub last: Chess,
    /// The game termination marker (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub outcome: Outcome,
}

impl GameRecord {
    /// True when at least one move carries an `[%eval]`.
    pub(crate) fn has_evals(&self) -> bool {
        self.moves.iter().any(|m| m.eval.is_some())
    }

    /// The mainline replayed: for each ply (1-based), the position before
    /// the move and the move.
    pub fn plies(&self) -> Plies<'_> {
        Plies {
            position: self.initial.clone(),
            moves: self.moves.iter(),
            ply: 0,
        }
    }
}

/// Iterator over a game's plies; see [`GameRecord::plies`].
#[derive(Debug)]
pub struct Plies<'a> {
    position: Chess,
    moves: std::slice::Iter<'a, PlayedMove>,
    ply: u32,
}

/// One step of [`Plies`].
#[derive(Debug)]
pub struct Ply<'a> {
    /// 1-based ply number of the move.
    pub ply: u32,
    /// The position before the move.
    pub before: Chess,
    pub played: &'a PlayedMove,
}

impl Ply<'_> {
    /// The position after the move.
    pub fn after(&self) -> Chess {
        let mut position = self.before.clone();
        position.play_unchecked(self.played.mv);
        position
    }

    /// The side that played the move.
    pub(crate) fn mover(&self) -> Color {
        self.before.turn()
    }
}

impl<'a> Iterator for Plies<'a> {
    type Item = Ply<'a>;

    fn next(&mut self) -> Option<Ply<'a>> {
        let played = self.moves.next()?;
        self.ply += 1;
        let before = self.position.clone();
        self.position.play_unchecked(played.mv);
        Some(Ply {
            ply: self.ply,
            before,
            played,
        })
    }
}

/// A game that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidGame {
    /// 1-based position of the game in the input.
    pub number: u64,
    /// Short reason used for counting: `illegal_san`, `truncated`,
    /// `bad_tag`, `bad_eval`, `bad_fen`, `moves_after_result`, `garbage`, ...
    pub reason: &'static str,
    /// What was wrong, for a person.
    pub detail: String,
    /// The game's `Site` tag, when it was read, to find the game.
    pub site: Option<String>,
}

impl fmt::Display for InvalidGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "game {}", self.number)?;
        if let Some(site) = &self.site {
            write!(f, " ({site})")?;
        }
        write!(f, ": {}: {}", self.reason, self.detail)
    }
}

/// Why a tag filter turned a game down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The game is fine but not wanted (reason for counting).
    Filtered(&'static str),
    /// A tag the caller needs is malformed (reason, detail).
    Invalid(&'static str, String),
}

/// What reading one game produced.
#[derive(Clone, Debug)]
pub enum GameItem {
    Game(Box<GameRecord>),
    /// Turned down by the variant check or the tag filter.
    Filtered {
        number: u64,
        reason: &'static str,
    },
    Invalid(InvalidGame),
}

//! Chess knowledge shared by the stages: the puzzle record and its files,
//! its columns, a puzzle's line played on the board, what is derived from
//! it (length, mate, rating bin, phase), Lichess's themes (`tagger`), the trivial-capture rule,
//! win chances and PGN reading.
//!
//! May use: [`crate::core`]. Must not reach into engines, stages or the
//! pipeline: nothing here runs a search.

pub mod capture;
pub(crate) mod columns;
pub mod derive;
pub mod human_games;
pub mod novelty;
pub(crate) mod line;
pub mod pgn;
pub mod record;
pub mod tagger;
pub(crate) mod wincalc;

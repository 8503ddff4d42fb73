//! The generation funnel: how many games, positions and puzzles each step
//! of a release generated to order passed. `run` under `[generate]` adds it
//! up (`generate`), writes it into `generate.json` and the
//! manifest's `generate.figures`, and the card reads it back from there:
//! one type for the writer and the reader.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::stages::mine::UnitFunnel;

/// The funnel's counts, in the order of the steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct GenerationFunnel {
    /// Games played (or read from the store).
    pub games: u64,
    /// Positions mining analysed.
    pub positions: u64,
    /// Positions the full search looked at.
    pub full_searches: u64,
    /// Positions that passed the verdict, before the per-game cap and the
    /// dedup.
    pub candidates: u64,
    /// Found at a position of the game's human source game and dropped
    /// before `candidates` (public, not new).
    pub public: u64,
    /// Near copies of the game's source puzzle or game (the novelty rule),
    /// dropped before `candidates` (not new).
    pub near_source: u64,
    /// Puzzles mined (after the cap and the dedup).
    pub mined: u64,
    /// Puzzles whose position could not be read back.
    pub unreadable: u64,
    /// Puzzles whose position is in an excluded file or an earlier release.
    pub excluded: u64,
    /// Near copies of a puzzle of an excluded file, an earlier release or
    /// a public index (the novelty rule).
    pub near_excluded: u64,
    /// Puzzles whose position an earlier puzzle has.
    pub repeated_position: u64,
    /// Near copies of a puzzle kept before them (one idea once).
    pub near_kept: u64,
    pub kept: u64,
    pub verified: u64,
    /// Kept puzzles that fall in a cell of the target.
    pub in_target_cells: u64,
}

impl GenerationFunnel {
    /// Counts one game, with mining's funnel on it.
    pub fn add_game(&mut self, game: UnitFunnel) {
        self.games += 1;
        self.positions += game.positions;
        self.full_searches += game.full_searches;
        self.candidates += game.candidates;
        self.public += game.public;
        self.near_source += game.near_source;
    }

    /// The counts by the names the JSON gives them, in the JSON's order
    /// (alphabetical), each with whether the JSON has it: the game counts
    /// once a game was counted, a puzzle step once a puzzle reached it.
    /// (The files have always been written that way.)
    fn named(&self) -> [(&'static str, u64, bool); 15] {
        let played = self.games > 0;
        [
            ("candidates", self.candidates, played),
            ("excluded", self.excluded, self.excluded > 0),
            ("full_searches", self.full_searches, played),
            ("games", self.games, played),
            (
                "in_target_cells",
                self.in_target_cells,
                self.in_target_cells > 0,
            ),
            ("kept", self.kept, self.kept > 0),
            ("mined", self.mined, self.mined > 0),
            ("near_excluded", self.near_excluded, self.near_excluded > 0),
            ("near_kept", self.near_kept, self.near_kept > 0),
            ("near_source", self.near_source, self.near_source > 0),
            ("positions", self.positions, played),
            ("public", self.public, self.public > 0),
            (
                "repeated_position",
                self.repeated_position,
                self.repeated_position > 0,
            ),
            ("unreadable", self.unreadable, self.unreadable > 0),
            ("verified", self.verified, self.verified > 0),
        ]
    }
}

impl Serialize for GenerationFunnel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let present = self.named().into_iter().filter(|(_, _, present)| *present);
        let mut map = serializer.serialize_map(None)?;
        for (name, count, _) in present {
            map.serialize_entry(name, &count)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The JSON names a count once it was counted, in alphabetical order,
    /// and reads back as the same counts.
    #[test]
    fn a_funnel_writes_what_was_counted_and_reads_back() {
        assert_eq!(
            serde_json::to_value(GenerationFunnel::default()).unwrap(),
            json!({})
        );
        let mut funnel = GenerationFunnel::default();
        funnel.add_game(UnitFunnel {
            positions: 60,
            full_searches: 0,
            candidates: 0,
            ..UnitFunnel::default()
        });
        funnel.add_game(UnitFunnel {
            positions: 40,
            full_searches: 7,
            candidates: 2,
            ..UnitFunnel::default()
        });
        funnel.mined = 2;
        funnel.kept = 1;
        funnel.repeated_position = 1;
        let text = serde_json::to_string(&funnel).unwrap();
        assert_eq!(
            text,
            r#"{"candidates":2,"full_searches":7,"games":2,"kept":1,"mined":2,"positions":100,"repeated_position":1}"#
        );
        let back: GenerationFunnel = serde_json::from_str(&text).unwrap();
        assert_eq!(back, funnel);
    }
}

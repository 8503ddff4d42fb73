//! What to try for target cells the games never reached, beside more
//! games: the `[mine]` switches that make such puzzles, advised only where
//! the stream that plays for a cell still has them off.

use crate::stages::release::cells::Cell;

/// The `[mine]` switches that make the puzzles of a kind of cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MiningSwitches {
    pub mates: bool,
    pub missed_only: bool,
    pub trivial_captures: bool,
    pub min_solver_moves: usize,
}

impl Default for MiningSwitches {
    /// `[mine]`'s own defaults.
    fn default() -> MiningSwitches {
        MiningSwitches {
            mates: false,
            missed_only: true,
            trivial_captures: false,
            min_solver_moves: 1,
        }
    }
}

/// What a user can try for cells never reached beside more games, by the
/// kinds among them, each with the mining switches of the stream that
/// plays for it: a setting is advised only where it is still off, and
/// one already on is said to be (empty when there is nothing to add).
pub(crate) fn reach_advice(cells: &[(&Cell, MiningSwitches)]) -> String {
    let mut ways = Vec::new();
    let mut already_on = Vec::new();
    let mates: Vec<_> = cells.iter().filter(|(c, _)| c.mate).collect();
    if mates.iter().any(|(_, m)| !m.mates) {
        ways.push("mate cells: `mine.mates = true`");
    } else if !mates.is_empty() {
        already_on.push("`mine.mates`");
    }
    let easy: Vec<_> = cells.iter().filter(|(c, _)| c.bin_hi <= 900).collect();
    if easy.iter().any(|(_, m)| m.missed_only) {
        ways.push("ratings of 900 or below: `mine.missed_only = false`");
    } else if !easy.is_empty() {
        already_on.push("`mine.missed_only = false`");
    }
    if easy.iter().any(|(_, m)| !m.trivial_captures) {
        ways.push("ratings of 900 or below: `mine.trivial_captures = true`");
    } else if !easy.is_empty() {
        already_on.push("`mine.trivial_captures`");
    }
    let long: Vec<_> = cells.iter().filter(|(c, _)| c.length >= 3).collect();
    if long.iter().any(|(_, m)| m.min_solver_moves < 3) {
        ways.push("3+ moves: `mine.min_solver_moves = 3` (the `hard` tier's profile)");
    } else if !long.is_empty() {
        already_on.push("`mine.min_solver_moves = 3`");
    }
    let mut advice = String::new();
    if !ways.is_empty() {
        advice.push_str(&format!(
            ", or hand them to a profile that makes such puzzles ([[generate.bands]] with \
             [generate.profiles.NAME.selfplay] and .mine): {}",
            ways.join("; ")
        ));
    }
    if !already_on.is_empty() {
        already_on.dedup();
        advice.push_str(&format!(
            "; {} already on where they are played for: such puzzles are rare in these games \
             (weaker players leave more)",
            already_on.join(", ")
        ));
    }
    advice
}

//! Themes that cost nothing but replaying the line.
//!
//! Names follow Lichess where one exists: `mate` and `mateInN` (the line
//! ends in checkmate after N solver moves), `oneMove` / `short` / `long` /
//! `veryLong` (1, 2, 3, 4+ solver moves). `check`, `capture` and `promotion`
//! say what the first solver move does (promotion: any solver move), and
//! `quietMove` marks a first solver move that is none of these, as Epoch's
//! "Quiet Move" tag does (neither check nor capture).

use shakmaty::{Chess, Move, Position};

/// Themes of a line of moves played from `puzzle_position` (the solver to
/// move), solver first. The moves must be legal.
pub(crate) fn cheap_themes(puzzle_position: &Chess, line: &[Move]) -> Vec<String> {
    let mut themes = Vec::new();
    let mut position = puzzle_position.clone();
    let mut first_check = false;
    let mut promotes = false;
    for (i, m) in line.iter().enumerate() {
        let solver = i % 2 == 0;
        if solver && m.is_promotion() {
            promotes = true;
        }
        position.play_unchecked(*m);
        if i == 0 {
            first_check = position.is_check();
        }
    }
    let solver_moves = line.len().div_ceil(2);
    if position.is_checkmate() && line.len() % 2 == 1 {
        themes.push("mate".to_string());
        if solver_moves <= 5 {
            themes.push(format!("mateIn{solver_moves}"));
        }
    }
    themes.push(
        match solver_moves {
            0 | 1 => "oneMove",
            2 => "short",
            3 => "long",
            _ => "veryLong",
        }
        .to_string(),
    );
    if let Some(first) = line.first() {
        if first_check {
            themes.push("check".to_string());
        }
        if first.is_capture() {
            themes.push("capture".to_string());
        }
        if !first_check && !first.is_capture() && !first.is_promotion() {
            themes.push("quietMove".to_string());
        }
    }
    if promotes {
        themes.push("promotion".to_string());
    }
    themes.sort();
    themes
}

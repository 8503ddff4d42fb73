//! The release card's theme mix: the share of the release's puzzles with
//! each Lichess theme, beside the share Lichess's own puzzles of the same
//! cells have. Apart from the card because it carries its reference, the
//! Lichess mix per cell (`models/lichess_theme_mix.json`, made by
//! `scripts/lichess_theme_mix.py` from the database), built into the
//! binary so that a release never depends on a file beside it.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::chess::record::Puzzle;
use crate::chess::tagger::{ThemeKind, theme_kind};

/// Lichess's tagged puzzles per cell, and how many carry each theme.
#[derive(Deserialize)]
struct Reference {
    source: String,
    rows: u64,
    cells: BTreeMap<String, CellMix>,
}

#[derive(Deserialize)]
struct CellMix {
    rows: u64,
    themes: BTreeMap<String, u64>,
}

const REFERENCE_JSON: &str = include_str!("../../../models/lichess_theme_mix.json");

/// The reference, parsed once; `None` if it does not parse (a build with a
/// damaged file), so the card says the comparison is missing rather than
/// failing the release.
fn reference() -> Option<&'static Reference> {
    static REFERENCE: OnceLock<Option<Reference>> = OnceLock::new();
    REFERENCE
        .get_or_init(|| serde_json::from_str(REFERENCE_JSON).ok())
        .as_ref()
}

/// A puzzle's cell in the reference's notation: the 100-point bin
/// `(low, low + 100]`, the solver length (5 for five or more), mate.
fn cell_key(puzzle: &Puzzle) -> Option<String> {
    let rating = puzzle.rating?;
    let low = (rating - 1).div_euclid(100) * 100;
    let length = puzzle.solver_moves().min(5);
    Some(format!(
        "{low}-{}/{length}/{}",
        low + 100,
        u8::from(puzzle.is_mate())
    ))
}

/// Themes listed at most; the rest are in the release files.
const MAX_ROWS: usize = 30;

/// The card's `## Theme mix` section.
pub(crate) fn theme_mix_section(train: &[Puzzle], test: &[Puzzle]) -> String {
    let mut text = String::from("## Theme mix\n\n");
    let Some(reference) = reference() else {
        text.push_str("The Lichess reference mix could not be read; no comparison.\n\n");
        return text;
    };
    let puzzles: Vec<&Puzzle> = train.iter().chain(test).collect();
    let mut ours: BTreeMap<&str, f64> = BTreeMap::new();
    let mut lichess: BTreeMap<&str, f64> = BTreeMap::new();
    let mut matched = 0usize;
    for puzzle in &puzzles {
        let Some(cell) = cell_key(puzzle).and_then(|key| reference.cells.get(&key)) else {
            continue;
        };
        matched += 1;
        for theme in &puzzle.themes {
            if compared(theme) {
                *ours.entry(theme.as_str()).or_default() += 1.0;
            }
        }
        for (theme, count) in &cell.themes {
            if compared(theme) {
                *lichess.entry(theme.as_str()).or_default() += *count as f64 / cell.rows as f64;
            }
        }
    }
    text.push_str(&format!(
        "Lichess's puzzle themes of this release's puzzles (decided from FEN and moves by \
         puzzleforge, as its docs/themes.md says), beside the share of Lichess's own puzzles with \
         each theme in the same cells (rating bin, solver length, mate), weighted by this \
         release's puzzles per cell. {matched} of the release's {} puzzles have a cell in the \
         reference ({} tagged Lichess puzzles, `{}`; in bins 400-2700 it holds too few puzzles \
         whose every theme is among the commonest).\n\n",
        puzzles.len(),
        reference.rows,
        reference.source
    ));
    if matched == 0 {
        return text;
    }
    let share = |map: &BTreeMap<&str, f64>, theme: &str| {
        map.get(theme).copied().unwrap_or(0.0) / matched as f64
    };
    let mut themes: Vec<&str> = ours.keys().chain(lichess.keys()).copied().collect();
    themes.sort_unstable();
    themes.dedup();
    // Most common first (by the larger share), then by name.
    themes.sort_by(|a, b| {
        let key = |t: &str| share(&ours, t).max(share(&lichess, t));
        key(b).total_cmp(&key(a)).then(a.cmp(b))
    });
    text.push_str("| theme | this release | Lichess, same cells |\n|---|---:|---:|\n");
    for theme in themes.iter().take(MAX_ROWS) {
        text.push_str(&format!(
            "| {theme} | {:.1}% | {:.1}% |\n",
            100.0 * share(&ours, theme),
            100.0 * share(&lichess, theme)
        ));
    }
    if themes.len() > MAX_ROWS {
        text.push_str(&format!(
            "\n{} rarer themes are left out of this table.\n",
            themes.len() - MAX_ROWS
        ));
    }
    text.push('\n');
    text
}

/// The themes compared: those the board or a score decides (the players'
/// themes and zugzwang are Lichess's alone).
fn compared(theme: &str) -> bool {
    matches!(theme_kind(theme), Some(ThemeKind::Board | ThemeKind::Score))
}

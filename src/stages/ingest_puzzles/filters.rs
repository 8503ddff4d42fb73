//! The filters and sampling options (`[ingest.puzzles]`,
//! [`IngestPuzzlesConfig`]) and the first filter a valid row fails
//! ([`filter_out`]). Apart because the options are the pipeline's to set,
//! while the rest of the stage only streams rows past them.

use serde::{Deserialize, Serialize};

use super::row::{CheckedRow, words};
use crate::core::bounds::{Bound, Bounded};

/// Which puzzles to keep by their mate flag.
#[derive(clap::ValueEnum, Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MateFilter {
    /// Mating and non-mating puzzles.
    #[default]
    Any,
    /// Only puzzles whose final position is checkmate.
    Only,
    /// Only puzzles whose final position is not checkmate.
    Exclude,
}

/// Filters and sampling of `ingest puzzles` (the `pipeline.toml` section;
/// CLI flags override its fields).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct IngestPuzzlesConfig {
    /// Keep puzzles rated at least this.
    pub min_rating: Option<i32>,
    /// Keep puzzles rated at most this.
    pub max_rating: Option<i32>,
    /// Keep puzzles whose RatingDeviation is at most this.
    pub max_rating_deviation: Option<i32>,
    /// Keep puzzles whose Popularity is at least this.
    pub min_popularity: Option<i32>,
    /// Keep puzzles played at least this many times.
    pub min_nb_plays: Option<i32>,
    /// Keep puzzles with at least one of these themes (empty: no filter).
    pub themes_any: Vec<String>,
    /// Keep puzzles with all of these themes.
    pub themes_all: Vec<String>,
    /// Drop puzzles with any of these themes.
    pub themes_none: Vec<String>,
    /// Keep puzzles whose solver length (NumMoves) is one of these (empty: all).
    pub solver_lengths: Vec<usize>,
    /// Keep mating puzzles, non-mating ones, or both.
    pub mate: MateFilter,
    /// Keep at most this many puzzles, chosen uniformly (reservoir sampling).
    pub sample: Option<u64>,
    /// Seed of the sample.
    pub seed: u64,
}

impl Bounded for IngestPuzzlesConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("min_rating", 0.0, 4000.0, "a Lichess rating"),
        Bound::within("max_rating", 0.0, 4000.0, "a Lichess rating"),
        Bound::within("max_rating_deviation", 0.0, 1000.0, "a Glicko deviation"),
        Bound::within(
            "min_popularity",
            -100.0,
            100.0,
            "Lichess popularity, -100 to 100",
        ),
        Bound::within("min_nb_plays", 0.0, 10000000000.0, "plays"),
        Bound::within("sample", 1.0, 10000000000.0, "rows kept"),
        Bound::within("solver_lengths", 1.0, 10.0, "solver moves"),
    ];
}

impl Default for IngestPuzzlesConfig {
    fn default() -> Self {
        Self {
            min_rating: None,
            max_rating: None,
            max_rating_deviation: None,
            min_popularity: None,
            min_nb_plays: None,
            themes_any: Vec::new(),
            themes_all: Vec::new(),
            themes_none: Vec::new(),
            solver_lengths: Vec::new(),
            mate: MateFilter::Any,
            sample: None,
            seed: 0,
        }
    }
}

/// The first filter a checked row fails, by name.
pub(super) fn filter_out(
    config: &IngestPuzzlesConfig,
    row: &CheckedRow,
    themes: &str,
) -> Option<&'static str> {
    let below =
        |value: Option<i32>, min: Option<i32>| min.is_some_and(|m| value.is_none_or(|v| v < m));
    let above =
        |value: Option<i32>, max: Option<i32>| max.is_some_and(|m| value.is_none_or(|v| v > m));
    if below(row.rating, config.min_rating) || above(row.rating, config.max_rating) {
        return Some("rating");
    }
    if above(row.rating_deviation, config.max_rating_deviation) {
        return Some("rating_deviation");
    }
    if below(row.popularity, config.min_popularity) {
        return Some("popularity");
    }
    if below(row.nb_plays, config.min_nb_plays) {
        return Some("nb_plays");
    }
    let has = |theme: &String| words(themes).any(|t| t == theme);
    if !config.themes_any.is_empty() && !config.themes_any.iter().any(has) {
        return Some("themes_any");
    }
    if !config.themes_all.iter().all(has) {
        return Some("themes_all");
    }
    if config.themes_none.iter().any(has) {
        return Some("themes_none");
    }
    if !config.solver_lengths.is_empty() && !config.solver_lengths.contains(&row.derived.num_moves)
    {
        return Some("solver_length");
    }
    match (config.mate, row.derived.mate) {
        (MateFilter::Only, false) | (MateFilter::Exclude, true) => Some("mate"),
        _ => None,
    }
}

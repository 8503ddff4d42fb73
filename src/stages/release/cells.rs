//! The cells a release is stratified into and their quotas: the `[release]`
//! section (bands, explicit cells, tiers), a puzzle's cell (rating bin x
//! solver length x mate) and its contamination key.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::bail_input;
use crate::chess::derive::{rating_bin_edges, rating_bin_label};
use crate::chess::line::{LineError, normalized_fen, ucis_text};
use crate::chess::record::Puzzle;
use crate::core::bounds::{Bound, Bounded, Many, Nested};

/// Which mate cells a band or tier covers.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum MateRule {
    /// Mate and non-mate puzzles (two separate cells per bin and length).
    #[default]
    Both,
    /// Mating puzzles only.
    Mate,
    /// Non-mating puzzles only.
    NoMate,
}

impl MateRule {
    pub(crate) fn admits(self, mate: bool) -> bool {
        match self {
            MateRule::Both => true,
            MateRule::Mate => mate,
            MateRule::NoMate => !mate,
        }
    }
}

/// How a puzzle is matched against an excluded (earlier) release.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExcludeBy {
    /// Same position after the opponent's first move, whatever the solution
    /// (the stricter guard: a model has seen the position).
    #[default]
    Position,
    /// Same position and the same solution moves.
    PositionAndSolution,
}

/// A rectangle of cells with one quota: every bin of `bin_width` inside
/// `ratings` (as `(lo, hi]` bins), every solver length in `lengths`
/// (inclusive), mate and/or non-mate.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// `[lo, hi]`: bins `(lo, lo + w]`, ..., `(hi - w, hi]`.
    pub ratings: [i32; 2],
    /// `[min, max]` solver moves, inclusive.
    pub lengths: [usize; 2],
    #[serde(default)]
    pub mate: MateRule,
    /// Overrides the section's `train_per_cell` for this band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_per_cell: Option<usize>,
    /// Overrides the section's `test_per_cell` for this band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_per_cell: Option<usize>,
}

impl Bounded for Band {
    const BOUNDS: &'static [Bound] = &[
        Bound::pair("ratings", 0.0, 4000.0, "Lichess ratings"),
        Bound::pair("lengths", 1.0, 10.0, "solver moves"),
        Bound::within("train_per_cell", 0.0, 100000.0, "puzzles per cell"),
        Bound::within("test_per_cell", 0.0, 100000.0, "puzzles per cell"),
    ];
}

/// One cell with an explicit quota (a quota table row). Overrides a band's
/// quota for the same cell; `train = 0, test = 0` removes the cell.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CellQuota {
    /// `[lo, hi]` meaning the rating bin `(lo, hi]`.
    pub bin: [i32; 2],
    pub length: usize,
    pub mate: bool,
    pub train: usize,
    pub test: usize,
}

impl Bounded for CellQuota {
    const BOUNDS: &'static [Bound] = &[
        Bound::pair("bin", 0.0, 4000.0, "Lichess ratings"),
        Bound::within("length", 1.0, 10.0, "solver moves"),
        Bound::within("train", 0.0, 100000.0, "puzzles"),
        Bound::within("test", 0.0, 100000.0, "puzzles"),
    ];
}

/// A named subset of the pool with its own quotas (`release --tier NAME`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Tier {
    /// Inclusive lower rating bound.
    pub min_rating: Option<i32>,
    /// Inclusive upper rating bound.
    pub max_rating: Option<i32>,
    pub min_solver_moves: Option<usize>,
    pub max_solver_moves: Option<usize>,
    pub mate: MateRule,
    /// Keep puzzles with at least one of these themes (empty: any).
    pub themes_any: Vec<String>,
    /// Keep puzzles with every one of these themes (empty: any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub themes_all: Vec<String>,
    /// Quotas for the tier; when absent the section's quotas are used,
    /// restricted to cells the tier can hold (bin midpoint inside the rating
    /// bounds, length inside the move bounds, mate rule admitting the cell).
    pub train_per_cell: Option<usize>,
    pub test_per_cell: Option<usize>,
    pub bands: Option<Vec<Band>>,
    pub cells: Option<Vec<CellQuota>>,
    /// What the tier was aimed at, for a tier `run --aim` made (its
    /// rating bounds come from it). Never read from a config file.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub aim: Option<Aim>,
}

impl Bounded for Tier {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("min_rating", 0.0, 4000.0, "a rating"),
        Bound::within("max_rating", 0.0, 4000.0, "a rating"),
        Bound::within("min_solver_moves", 1.0, 10.0, "solver moves"),
        Bound::within("max_solver_moves", 1.0, 10.0, "solver moves"),
        Bound::within("train_per_cell", 0.0, 100000.0, "puzzles per cell"),
        Bound::within("test_per_cell", 0.0, 100000.0, "puzzles per cell"),
    ];
}

/// A tier aimed at a model: the eval run its window was read from, the
/// solve rate asked for, the model's solve curve there and the rating
/// where the curve gives that rate, with its 95% interval (the window).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Aim {
    /// The model the eval run measured.
    pub model: String,
    /// The eval run's folder as given, and the sha256 of its
    /// `positions.jsonl` (the results the curve was fitted on).
    pub run: String,
    pub positions_sha256: String,
    /// The model's puzzle rating in that run, as its report words it.
    pub puzzle_rating: Option<String>,
    /// The share of the tier's puzzles the model should solve.
    pub solve_rate: f64,
    /// The model's solve curve: half solved at `curve_midpoint`, the odds
    /// of a solve falling e-fold every `curve_spread` points; fitted on
    /// `attempts` rated puzzle attempts, `solved` of them solved.
    pub curve_midpoint: f64,
    pub curve_spread: f64,
    pub attempts: usize,
    pub solved: usize,
    /// The rating where the curve gives `solve_rate`, and its 95% interval.
    pub rating: f64,
    pub low: f64,
    pub high: f64,
}

// The numbers are finite (a fit that is not gives no aim), so equality is
// an equivalence, as `Tier`'s `Eq` needs.
impl Eq for Aim {}

impl Tier {
    /// True when the puzzle belongs to the tier.
    pub(crate) fn admits(&self, puzzle: &Puzzle) -> bool {
        let Some(rating) = puzzle.rating else {
            return false;
        };
        let length = puzzle.solver_moves();
        self.min_rating.is_none_or(|m| rating >= m)
            && self.max_rating.is_none_or(|m| rating <= m)
            && self.min_solver_moves.is_none_or(|m| length >= m)
            && self.max_solver_moves.is_none_or(|m| length <= m)
            && self.mate.admits(puzzle.is_mate())
            && (self.themes_any.is_empty() || self.themes_any.iter().any(|t| puzzle.has_theme(t)))
            && self.themes_all.iter().all(|t| puzzle.has_theme(t))
    }

    /// The key and the reason when the tier's bounds admit no puzzle at
    /// all (a minimum above its maximum); `None` when they can. Said up
    /// front: drawn from the pool, such a tier only ever reported "the
    /// pool has too few puzzles", which points at the pool, not the tier.
    /// A theme that is not a Lichess theme is refused the same way.
    pub(crate) fn empty_bounds(&self) -> Option<(&'static str, String)> {
        let bounds = [
            (
                "min_rating",
                "max_rating",
                self.min_rating.map(i64::from),
                self.max_rating.map(i64::from),
            ),
            (
                "min_solver_moves",
                "max_solver_moves",
                self.min_solver_moves.map(|n| n as i64),
                self.max_solver_moves.map(|n| n as i64),
            ),
        ];
        let crossed = bounds
            .into_iter()
            .find_map(|(low, high, lo, hi)| match (lo, hi) {
                (Some(lo), Some(hi)) if lo > hi => Some((
                    low,
                    format!("{lo} is above {high} {hi}: no puzzle would be in the tier"),
                )),
                _ => None,
            });
        // A misspelt theme would empty the tier just as surely.
        let unknown_theme = [
            ("themes_any", &self.themes_any),
            ("themes_all", &self.themes_all),
        ]
        .into_iter()
        .find_map(|(key, themes)| {
            let unknown = themes
                .iter()
                .find(|t| crate::chess::tagger::theme_kind(t).is_none())?;
            Some((
                key,
                format!("{unknown:?} is not a Lichess theme (docs/themes.md lists them)"),
            ))
        });
        crossed.or(unknown_theme)
    }

    fn holds_cell(&self, cell: &Cell) -> bool {
        let middle = (cell.bin_lo + cell.bin_hi) / 2;
        self.min_rating.is_none_or(|m| middle >= m)
            && self.max_rating.is_none_or(|m| middle <= m)
            && self.min_solver_moves.is_none_or(|m| cell.length >= m)
            && self.max_solver_moves.is_none_or(|m| cell.length <= m)
            && self.mate.admits(cell.mate)
    }
}

/// The release stage's section of pipeline.toml, `[release]`.
pub(crate) const RELEASE_SECTION: &str = "release";
/// Its name before 2026-12-07, still read as it (`[split]`).
pub(crate) const RELEASE_SECTION_FORMERLY: &str = "split";

/// The `[release]` section of pipeline.toml. The default is the APO paper's
/// release: 5 + 5 puzzles per (mate x length x 100-point bin) cell, bins
/// 400-2000 with 1-2 solver moves and 2000-2800 with 3-5.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ReleaseConfig {
    /// Rating bin width (100 or 200 are usual); bins are `(lo, hi]`.
    pub bin_width: i32,
    pub seed: u64,
    pub train_per_cell: usize,
    pub test_per_cell: usize,
    pub exclude_by: ExcludeBy,
    pub bands: Vec<Band>,
    pub cells: Vec<CellQuota>,
    pub tiers: BTreeMap<String, Tier>,
    /// The fewest puzzles (train + test) a release may hold: a release the
    /// exclusions or filters left with fewer is an error, not an empty
    /// release. Written out only when set to other than 1, so releases keep
    /// their bytes.
    #[serde(skip_serializing_if = "is_one")]
    pub min_puzzles: usize,
}

impl Bounded for ReleaseConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("bin_width", 1.0, 4000.0, "rating points"),
        Bound::within("train_per_cell", 0.0, 100000.0, "puzzles per cell"),
        Bound::within("test_per_cell", 0.0, 100000.0, "puzzles per cell"),
        Bound::within("min_puzzles", 0.0, 10000000.0, "puzzles a release needs"),
    ];
    const NESTED: &'static [Nested] = &[
        Nested::of::<Band>("bands", Many::Each),
        Nested::of::<CellQuota>("cells", Many::Each),
        Nested::of::<Tier>("tiers", Many::Named),
    ];
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

impl Default for ReleaseConfig {
    fn default() -> Self {
        let band = |ratings, lengths| Band {
            ratings,
            lengths,
            mate: MateRule::Both,
            train_per_cell: None,
            test_per_cell: None,
        };
        let mut tiers = BTreeMap::new();
        tiers.insert(
            "hard".to_string(),
            Tier {
                min_rating: Some(2000),
                min_solver_moves: Some(3),
                ..Tier::default()
            },
        );
        Self {
            bin_width: 100,
            seed: 0,
            train_per_cell: 5,
            test_per_cell: 5,
            exclude_by: ExcludeBy::Position,
            bands: vec![band([400, 2000], [1, 2]), band([2000, 2800], [3, 5])],
            cells: Vec::new(),
            tiers,
            min_puzzles: 1,
        }
    }
}

/// Ratings a band, a cell or a tier may name: those a puzzle may have.
pub(crate) const RATING_RANGE: std::ops::RangeInclusive<i32> = crate::chess::derive::RATING_RANGE;
/// Solver lengths a band, a cell or a tier may name: a Lichess puzzle has
/// at most 8 solver moves.
pub(crate) const LENGTH_RANGE: std::ops::RangeInclusive<usize> = 1..=10;
/// The most cells a release may have (the APO release has 112): a table
/// larger than this is a mistake in the bands, refused before it is built.
pub(crate) const MAX_CELLS: usize = 10_000;

/// Wanted puzzles per side for one cell.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub train: usize,
    pub test: usize,
}

impl ReleaseConfig {
    /// The quota per cell, for the whole pool or for a tier.
    pub fn quota_table(&self, tier: Option<&Tier>) -> Result<BTreeMap<Cell, Quota>> {
        let width = self.bin_width;
        if width <= 0 {
            bail_input!("release: bin_width must be positive, not {width}");
        }
        let train = tier
            .and_then(|t| t.train_per_cell)
            .unwrap_or(self.train_per_cell);
        let test = tier
            .and_then(|t| t.test_per_cell)
            .unwrap_or(self.test_per_cell);
        let bands = tier.and_then(|t| t.bands.as_ref()).unwrap_or(&self.bands);
        let cells = tier.and_then(|t| t.cells.as_ref()).unwrap_or(&self.cells);
        let mut table = BTreeMap::new();
        let mut cell_count = 0usize;
        for band in bands {
            check_band(band, width)?;
            let [lo, hi] = band.ratings;
            let [short, long] = band.lengths;
            let mates = [false, true]
                .iter()
                .filter(|m| band.mate.admits(**m))
                .count();
            cell_count += ((hi - lo) / width) as usize * (long - short + 1) * mates;
            if cell_count > MAX_CELLS {
                bail_input!(
                    "release: the bands make more than {MAX_CELLS} cells (band ratings [{lo}, {hi}] \
                     lengths [{short}, {long}] at bin_width {width} among them): narrow the bands \
                     or widen bin_width"
                );
            }
            let quota = Quota {
                train: band.train_per_cell.unwrap_or(train),
                test: band.test_per_cell.unwrap_or(test),
            };
            let mut bin_lo = lo;
            while bin_lo < hi {
                for length in short..=long {
                    for mate in [false, true] {
                        if band.mate.admits(mate) {
                            let cell = Cell {
                                bin_lo,
                                bin_hi: bin_lo + width,
                                length,
                                mate,
                            };
                            table.insert(cell, quota);
                        }
                    }
                }
                bin_lo += width;
            }
        }
        apply_cell_rows(cells, width, &mut table)?;
        table.retain(|_, q| q.train + q.test > 0);
        // A tier without its own quotas keeps only the section's cells it can hold.
        if let Some(tier) = tier
            && tier.bands.is_none()
            && tier.cells.is_none()
        {
            table.retain(|cell, _| tier.holds_cell(cell));
        }
        Ok(table)
    }
}

/// Checks that a band's ratings are increasing multiples of `width` within
/// [`RATING_RANGE`] and its lengths an increasing range within
/// [`LENGTH_RANGE`].
fn check_band(band: &Band, width: i32) -> Result<()> {
    let [lo, hi] = band.ratings;
    let [short, long] = band.lengths;
    if !RATING_RANGE.contains(&lo) || !RATING_RANGE.contains(&hi) {
        bail_input!(
            "release: band ratings [{lo}, {hi}] must lie within {}..={}",
            RATING_RANGE.start(),
            RATING_RANGE.end()
        );
    }
    if lo >= hi || lo.rem_euclid(width) != 0 || hi.rem_euclid(width) != 0 {
        bail_input!(
            "release: band ratings [{lo}, {hi}] must be increasing multiples of bin_width {width}"
        );
    }
    if short == 0 || short > long || long > *LENGTH_RANGE.end() {
        bail_input!(
            "release: band lengths [{short}, {long}] must be 1 <= min <= max <= {}",
            LENGTH_RANGE.end()
        );
    }
    Ok(())
}

/// One stratum: rating bin `(bin_lo, bin_hi]`, solver length, mate or not.
/// The derived order (bin, length, mate) is the release's row order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub bin_lo: i32,
    pub bin_hi: i32,
    pub length: usize,
    pub mate: bool,
}

impl Cell {
    /// The cell a puzzle falls in: its rating's bin at the release's
    /// `bin_width`, its solver moves and whether it is a mate, each by its
    /// rule in [`crate::chess::derive`]. The bin is the release's own (its
    /// quotas are bins of `bin_width`), not the 100-point `RatingBin` the
    /// ingest wrote; `None` for a puzzle without a rating.
    pub fn of(puzzle: &Puzzle, bin_width: i32) -> Option<Cell> {
        let (bin_lo, bin_hi) = rating_bin_edges(puzzle.rating?, bin_width);
        Some(Cell {
            bin_lo,
            bin_hi,
            length: puzzle.solver_moves(),
            mate: puzzle.is_mate(),
        })
    }

    /// The pandas-style interval label, `(1900, 2000]`.
    pub(crate) fn bin_label(&self) -> String {
        rating_bin_label(self.bin_lo, self.bin_hi)
    }

    /// The cell for people, the one notation every summary, error, plan
    /// and dataset card writes: `(1900, 2000] 1 move`, `(1900, 2000] 2
    /// moves`, `(400, 500] mate in 1`.
    pub fn label(&self) -> String {
        cell_label(&self.bin_label(), self.length, self.mate)
    }

    /// A stable text key, the input of the cell's RNG seed (never shown
    /// to people: [`Cell::label`] is).
    pub fn key(&self) -> String {
        format!(
            "rating={}|length={}|mate={}",
            self.bin_label(),
            self.length,
            self.mate
        )
    }
}

/// [`Cell::label`] of a cell as a report records it (its bin's label,
/// solver moves, mate).
pub(crate) fn cell_label(rating_bin: &str, length: usize, mate: bool) -> String {
    let moves = match (mate, length) {
        (true, n) => format!("mate in {n}"),
        (false, 1) => "1 move".to_string(),
        (false, n) => format!("{n} moves"),
    };
    format!("{rating_bin} {moves}")
}

/// The first `shown` of `labels`, then `... N more` when there are more:
/// how every list of cells is cut.
pub(crate) fn first_of(labels: &[String], shown: usize) -> Vec<String> {
    let mut named: Vec<String> = labels.iter().take(shown).cloned().collect();
    if labels.len() > shown {
        named.push(format!("... {} more", labels.len() - shown));
    }
    named
}

/// The contamination key of a puzzle: normalized FEN after the opponent's
/// first move, plus the solution moves when `by` asks for them.
pub(crate) fn position_key(
    puzzle: &Puzzle,
    by: ExcludeBy,
) -> std::result::Result<String, LineError> {
    let line = puzzle.line()?;
    let fen = normalized_fen(line.first_solver_position());
    Ok(match by {
        ExcludeBy::Position => fen,
        ExcludeBy::PositionAndSolution => format!("{fen}|{}", ucis_text(&puzzle.moves[1..])),
    })
}

/// Lays the `[[release.cells]]` rows over the bands' table: each sets one
/// cell's quota (a bin of the table's width, named once).
fn apply_cell_rows(
    cells: &[CellQuota],
    width: i32,
    table: &mut BTreeMap<Cell, Quota>,
) -> Result<()> {
    if cells.len() > MAX_CELLS {
        bail_input!(
            "release: {} cell rows are more than the {MAX_CELLS} cells a release may have",
            cells.len()
        );
    }
    let mut rows_seen = std::collections::BTreeSet::new();
    for row in cells {
        let [lo, hi] = row.bin;
        let in_range = RATING_RANGE.contains(&lo)
            && RATING_RANGE.contains(&hi)
            && LENGTH_RANGE.contains(&row.length);
        if !in_range || hi - lo != width || lo.rem_euclid(width) != 0 {
            bail_input!(
                "release: cell bin [{lo}, {hi}] length {} is not a bin of width {width} within \
                 {}..={} with length {}..={}",
                row.length,
                RATING_RANGE.start(),
                RATING_RANGE.end(),
                LENGTH_RANGE.start(),
                LENGTH_RANGE.end()
            );
        }
        let cell = Cell {
            bin_lo: lo,
            bin_hi: hi,
            length: row.length,
            mate: row.mate,
        };
        if !rows_seen.insert(cell) {
            bail_input!(
                "release: two cell rows name the cell bin [{lo}, {hi}] length {} mate {}: \
                 keep one",
                row.length,
                row.mate
            );
        }
        table.insert(
            cell,
            Quota {
                train: row.train,
                test: row.test,
            },
        );
    }
    Ok(())
}

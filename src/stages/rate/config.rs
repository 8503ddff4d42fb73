//! The `[rate]` settings, the rating range, and the human-move nets a
//! model reads: what every part of rating (the stage, calibration, the
//! model) shares, kept apart from the stage so that none imports it.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::maia::MaiaNets;

use super::model::TreeConfig;
use crate::core::bounds::{Bound, Bounded, Many, Nested};

/// Lowest and highest rating the model may give (Lichess's puzzle range).
pub(crate) const RATING_FLOOR: f64 = 400.0;
pub(crate) const RATING_CEILING: f64 = 3300.0;
/// Version of the model file format.
pub(crate) const MODEL_FORMAT: u32 = 6;

/// Settings of the `[rate]` section of pipeline.toml; CLI flags override.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RateConfig {
    /// Seed for the calibration folds and the calibration sample.
    pub seed: u64,
    /// A fitted model to rate with (written by `--save-model`).
    pub model: Option<PathBuf>,
    /// Folds for the held-out figures of a calibration.
    pub folds: u32,
    /// Use at most this many calibration rows (a seeded sample); 0 = all.
    pub calibrate_max_rows: usize,
    /// Calibrate also on the single-move version of every multi-move
    /// puzzle (its position and first solver move, the whole puzzle's
    /// rating as the target). Generated puzzles are mostly single-move and
    /// not mates, a shape the Lichess file holds few of.
    pub proxies: bool,
    /// The share of the multi-move puzzles whose proxy is added (picked by
    /// the puzzle's content hash, the same at every run).
    pub proxy_share: f64,
    /// The folder of the human-move nets (`maia-1100.pb.gz` ...). Unset:
    /// `maia/` beside the model file when rating with one and it is there,
    /// else `models/maia`. A model checks they are the nets it was fitted
    /// with (sha256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maia: Option<PathBuf>,
    /// The trees a calibration fits.
    pub trees: TreeConfig,
}

impl Bounded for RateConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("folds", 2.0, 100.0, "cross-validation folds"),
        Bound::within(
            "calibrate_max_rows",
            0.0,
            1000000000.0,
            "rows of a fit; 0 = all",
        ),
        Bound::within("proxy_share", 0.0, 1.0, "a share"),
    ];
    const NESTED: &'static [Nested] = &[Nested::of::<TreeConfig>("trees", Many::One)];
}

impl Default for RateConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            model: None,
            folds: 5,
            calibrate_max_rows: 0,
            proxies: true,
            proxy_share: 0.25,
            maia: None,
            trees: TreeConfig::default(),
        }
    }
}

/// The human-move nets the features read: the lowest and the highest
/// Maia-1 rating. Each net costs about 1.5 ms a position on one core, and
/// the nets between them add little a tree cannot read off these two
/// (docs/rating.md, "What the features cost").
pub(crate) const RATE_NETS: [u32; 2] = [1100, 1900];

/// Filters of the nets' residual towers (every Maia-1 net has 64): the
/// pooled features of one net at one position
/// ([`super::features::feature_values`]).
pub(crate) const POOLED_FILTERS: usize = 64;

/// The folder of the nets, beside a model file.
pub(crate) const NETS_BESIDE_THE_MODEL: &str = "maia";

/// The human-move nets a model was fitted with: their ratings and the
/// sha256 of each weight file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MaiaSpec {
    pub ratings: Vec<u32>,
    pub sha256: Vec<String>,
}

impl MaiaSpec {
    /// The rating nets' files in `dir` ([`RATE_NETS`]).
    pub(crate) fn of_dir(dir: &Path) -> Result<Self> {
        let files = crate::maia::net_files(dir, &RATE_NETS)
            .context("rate: the human-move nets (--maia DIR, or [rate] maia)")?;
        Ok(Self {
            ratings: files.iter().map(|f| f.rating).collect(),
            sha256: files.into_iter().map(|f| f.sha256).collect(),
        })
    }
}

/// Loads the rating nets ([`RATE_NETS`]) from `dir`; with `expected`,
/// checks they are the files the model was fitted with.
pub(crate) fn load_nets(dir: &Path, expected: Option<&MaiaSpec>) -> Result<MaiaNets> {
    let found = MaiaSpec::of_dir(dir)?;
    if let Some(expected) = expected
        && *expected != found
    {
        return Err(bad_input(format!(
            "rate: the human-move nets in {} are not those the model was fitted with \
             (sha256 differ); give the model's nets (--maia DIR) or calibrate again",
            dir.display()
        )));
    }
    let nets = MaiaNets::load_ratings(dir, &RATE_NETS)
        .with_context(|| format!("loading the human-move nets in {}", dir.display()))?;
    // The pooled features are named per filter: another width would shift
    // every name after the first net's.
    let filters = nets.filters();
    if filters.iter().any(|&f| f != POOLED_FILTERS) {
        return Err(bad_input(format!(
            "rate: the human-move nets in {} have {filters:?} filters; the rating features \
             read Maia-1 nets of {POOLED_FILTERS}",
            dir.display()
        )));
    }
    Ok(nets)
}

//! The arguments of `puzzleforge release`: the pool, the exclusions, the
//! release folder and what the manifest records of the run. Apart so the
//! run, the pool reading and the manifest read one plain struct.

use serde::Serialize;
use std::path::PathBuf;

use super::manifest::RunProvenance;

/// Command-line arguments of `puzzleforge release`: the files, the switches
/// and what the manifest records, and apart from them the flags that
/// override keys of `[release]`.
#[derive(Debug, Clone)]
pub struct ReleaseArgs {
    /// Puzzle files (CSV or JSON Lines, plain or zstd): the Lichess dump,
    /// APO files, or what ingest/mine/rate wrote.
    pub pool: Vec<PathBuf>,
    /// The release folder to write.
    pub output: PathBuf,
    /// pipeline.toml whose [release] section configures quotas and tiers:
    /// bin_width, train_per_cell, test_per_cell; [[release.bands]] with
    /// ratings = [lo, hi] (bins of bin_width), lengths = [min, max] (solver
    /// moves) and mate = "both" | "mate" | "no_mate"; [[release.cells]] rows
    /// (bin, length, mate, train, test); [release.tiers.NAME].
    pub config: Option<PathBuf>,
    /// Produce this named tier of the config (filter the pool, then use the
    /// tier's quotas).
    pub tier: Option<String>,
    /// The flags that override keys of `[release]`.
    pub overrides: ReleaseOverrides,
    /// Fail (exit 2) when a cell cannot be filled.
    pub strict: bool,
    /// Earlier releases or any puzzle files whose puzzles must not reappear.
    pub exclude: Vec<PathBuf>,
    /// Also exclude every release (a folder with a puzzleforge
    /// manifest.json) found up to three levels under this folder. Without
    /// it (or `--exclude`), `release` excludes nothing; `run` excludes the
    /// releases already under its `output_dir`.
    pub exclude_releases_under: Option<PathBuf>,
    /// Ignore `--exclude-releases-under`.
    pub no_release_exclusion: bool,
    /// Engine identity to record in the manifest (e.g. "Stockfish 15.1").
    pub engine_id: Option<String>,
    /// Engine option NAME=VALUE to record in the manifest (repeatable).
    pub engine_option: Vec<String>,
    /// A JSON file of verification figures to embed in the manifest.
    pub verify: Option<PathBuf>,
    /// Leave out puzzles whose `Verified` column (from `verify
    /// --puzzles-out`) says `False` (`fail` in older files).
    pub drop_unverified: bool,
    /// The generation funnel (`run` under `[generate]`) to embed in the
    /// manifest.
    pub generate: Option<PathBuf>,
    /// Self-play PGN files (`run`): the games the released self-play
    /// puzzles came from go into the release as `games.pgn`, and each such
    /// puzzle's `GameUrl` points into it.
    pub games: Vec<PathBuf>,
    /// What `run` records of itself in the manifest: `sources`, `engine`,
    /// `second_engine`, `settings`.
    pub(crate) provenance: Option<RunProvenance>,
}

/// The flags of `puzzleforge release` that override the key of `[release]` of
/// the same name; the only part of [`ReleaseArgs`] that
/// [`crate::core::settings::flags_over`] lays over the section.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseOverrides {
    /// Overrides the config's seed.
    pub seed: Option<u64>,
    /// Overrides the config's rating bin width.
    pub bin_width: Option<i32>,
    /// Overrides the config's train quota per cell.
    pub train_per_cell: Option<usize>,
    /// Overrides the config's test quota per cell.
    pub test_per_cell: Option<usize>,
}

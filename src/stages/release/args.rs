//! The arguments of `puzzleforge release`: the pool, the exclusions, the
//! release folder and what the manifest records of the run. Apart so the
//! run, the pool reading and the manifest read one plain struct.

use serde::Serialize;
use std::path::PathBuf;

use super::manifest::RunProvenance;

/// `puzzleforge release`'s flags (their help: `cli::release`), and what
/// only `run`'s release stage gives (`generate`, `games`, `provenance`).
#[derive(Debug, Clone)]
pub struct ReleaseArgs {
    pub pool: Vec<PathBuf>,
    pub output: PathBuf,
    pub config: Option<PathBuf>,
    pub tier: Option<String>,
    /// The flags laid over `[release]` by [`crate::core::settings::flags_over`].
    pub overrides: ReleaseOverrides,
    pub strict: bool,
    pub exclude: Vec<PathBuf>,
    pub exclude_releases_under: Option<PathBuf>,
    pub no_release_exclusion: bool,
    pub engine_id: Option<String>,
    pub engine_option: Vec<String>,
    pub verify: Option<PathBuf>,
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

/// `release`'s flags (their help: `cli::release`) over the `[release]` key
/// of the same name.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseOverrides {
    pub seed: Option<u64>,
    pub bin_width: Option<i32>,
    pub train_per_cell: Option<usize>,
    pub test_per_cell: Option<usize>,
}

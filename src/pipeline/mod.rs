//! `puzzleforge run` and `puzzleforge merge`: `pipeline.toml` parsed into
//! typed sections, the stage contract and each stage's adapter,
//! fingerprints and `stage.json` manifests, scratch folders, the release
//! lock, and the shards of one release merged into the bytes of a single
//! run.
//!
//! - `run`: the stages of one release in order, skipping those unchanged.
//! - `closing`: the run's closing text: the stages' table and the summary.
//! - `merge`: the shards of `run --shard I/N` merged into one release (the
//!   self-play chain's stages each by its step's rule,
//!   [`crate::generate::chain`]).
//! - `session`: what `run` and `merge` both open before the first stage.
//! - `aim`: `run --aim`'s arguments, and the tier aimed at a model's solve
//!   rate added to the config (the eval stage works the tier out,
//!   [`crate::stages::eval::aim`]).
//! - `config`, `stage`, `seeds`, `adapters`, `manifest`, `lock`: the typed
//!   config, the stage contract, the run's seeds, each stage's adapter,
//!   `stage.json`, the lock.
//! - `generated_adapters`: the self-play chain's stages under `[generate]`,
//!   holding the games that generation ([`crate::generate`]) played.
//!
//! May use: [`crate::generate`], [`crate::stages`] and everything below.
//! Nothing below uses it; [`crate::reproduce`] above it repeats its runs.

pub(crate) mod stage;
pub(crate) mod closing;
pub(crate) mod seeds;
pub(crate) mod summary;
pub(crate) mod adapters;
pub mod aim;
pub(crate) mod config;
mod config_check;
pub(crate) mod generated_adapters;
pub(crate) mod lock;
pub(crate) mod provenance;
pub(crate) mod manifest;
pub mod merge;
pub(crate) mod releases;
pub mod run;
pub(crate) mod session;

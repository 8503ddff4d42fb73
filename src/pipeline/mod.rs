//! `puzzleforge run` and `puzzleforge merge`: `pipeline.toml` parsed into
//! typed sections, the stage trait and each stage's adapter, fingerprints
//! and `stage.json` manifests, scratch folders, the release lock, and the
//! shards of one release merged into the bytes of a single run.
//!
//! - `run`: the stages of one release in order, skipping those unchanged.
//! - `merge`: the shards of `run --shard I/N` merged into one release.
//! - `reproduce`: a release's recorded run repeated into a scratch folder,
//!   every file compared byte for byte.
//! - `aim`: `run --aim`, a tier whose rating window is where a model's
//!   solve curve (from its eval) gives the asked solve rate.
//! - `plan`: `run --plan`, a short sample of a generation target's games.
//! - `cost`: the engine CPU-hours a generation target's cells are projected
//!   to cost, with an interval, from the games counted (a plan's or a
//!   budget-stopped run's).
//! - `generate`: generating to order; `generate_bench`: `bench generate`.
//! - `config`, `stage`, `stage_name`, `seeds`, `adapters`, `manifest`,
//!   `lock`: the typed config, the stage contract, the stages' names and
//!   order, the run's seeds, each stage's adapter, `stage.json`, the lock.
//! - `chain`: the self-play chain's steps (selfplay, mine, rate, verify),
//!   run by the plain stages and by generation's batches alike;
//!   `generated_adapters`: the chain's stages under `[generate]`.
//!
//! May use: [`crate::stages`] and everything below. Nothing below uses it.

pub(crate) mod stage;
pub(crate) mod stage_name;
pub(crate) mod chain;
pub(crate) mod seeds;
pub(crate) mod summary;
pub(crate) mod adapters;
pub mod aim;
pub(crate) mod config;
mod config_check;
pub(crate) mod cost;
pub(crate) mod generate;
pub(crate) mod generated_adapters;
pub mod generate_bench;
pub(crate) mod lock;
pub(crate) mod provenance;
pub(crate) mod manifest;
pub mod merge;
pub mod plan;
pub(crate) mod releases;
pub mod reproduce;
pub mod run;

//! Generating to order (`[generate]`): `run` plays self-play games in
//! batches until the generated puzzles fill the release's quotas (or a
//! named tier's), or a budget ends. The room between the stages and the
//! pipeline: it uses the stages and what is below them, and the pipeline
//! (the run, its config, `merge`, the stage contract) uses it.
//!
//! **The room.** [`chain`]: the self-play chain's steps, one type each
//! with its files, its work and its shard-merge rule, which the pipeline's
//! stages and `merge` run too. The batch loop, its store and the target (the files
//! below). [`plan`]: `run --plan`'s short sample. [`cost`]: the engine
//! CPU-hours a target's cells are projected to cost. [`bench`]:
//! `bench generate`, generation's profiles against Epoch's procedure.
//!
//! **The batch store.** Each batch of games is played, mined, rated and
//! verified (the self-play chain's steps, [`crate::generate::chain`], which
//! the pipeline's stages run too) into
//! `<output_dir>/.generate/<key>/batch-FIRST-LAST/`, written
//! in a scratch folder and renamed into place when the batch is done, so an
//! interrupted run resumes after its last finished batch. The key hashes
//! what a game's results depend on (the self-play, mine, rate and verify
//! settings, the run seed, the engines' builds, the tool version) and
//! nothing of the target, so a larger target, another release or a shard
//! reuses the games already played.
//!
//! **The stopping rule.** A game's results depend only on (settings, seed,
//! engine, game number), never on its batch. The games' puzzles are taken
//! in game order (position repeats dropped, the first occurrence winning;
//! excluded positions dropped), and the stopping game is the first game
//! number at which the release draw over the generated puzzles alone fills
//! every quota. Batches only decide how far ahead games are played, so the
//! result does not depend on the batch size or the worker count. A
//! `max_games` budget stops at that game; `max_cpu_hours` stops after the
//! batch that spends it (recorded per batch, so a rerun decides the same).
//!
//! **The release's stages** then hold the games up to the stopping game and
//! their puzzles, assembled from the store (`Generated`): the run swaps the
//! chain's stages for their generated forms
//! ([`crate::pipeline::generated_adapters`]), so `run --shard` (its slice
//! of `max_games`, no stopping rule) and `merge` (the stopping rule over
//! the shards' batches) write the bytes of a single run.
//!
//! **The files.** [`config`]: the settings and profiles, and the store key
//! they hash to. [`report`]: what generation reports. [`store`]: the
//! batches on disk and their records. [`play`]: playing one batch
//! through the chain.
//! [`target`]: the target and the count that finds the stopping game.
//! [`walk`]: one stream's walk over its batches. [`progress`]: the progress
//! lines. [`generated`]: what a release holds of the games. [`streams`]:
//! the streams' turns, and `prepare`, `sample` and `store_key`.

pub(crate) mod chain;
pub(crate) mod cost;
pub mod plan;
pub mod bench;

mod config;
mod report;
mod store;
mod play;
mod target;
mod walk;
mod progress;
mod generated;
mod streams;

pub(crate) use config::{ALGORITHM, Engine, GenerateConfig, Sections};
pub(crate) use generated::{Generated, Part};
pub(crate) use play::play_one_batch;
pub(crate) use report::{CellReport, GenerateReport, GenerateSummary, recorded_store};
pub(crate) use store::{StepSeconds, read_batch_record};
pub(crate) use streams::{check_profiles, kept_stores, prepare, sample, store_key};
pub(crate) use walk::Mode;

//! `puzzleforge eval`: asks a model (or a baseline player) every solver
//! position of a puzzle set and reports accuracy, illegal and unparseable
//! rates and engine regret, broken down by rating, theme, solver length,
//! move index and template, and places the player on the human ladder (the
//! nine Maia-1 nets on the same positions). `compare` tests two runs
//! against each other; `rollout` plays short games against Stockfish;
//! `aim` turns a run's solve curve into the release tier `run --aim` asks
//! for.

pub(crate) mod aim;
pub(crate) mod charts;
pub(crate) mod client;
pub mod compare;
pub mod config;
pub(crate) mod engine_ops;
pub(crate) mod human;
pub(crate) mod ladder;
pub(crate) mod ladder_chart;
pub(crate) mod metrics;
pub mod parse;
pub(crate) mod players;
pub(crate) mod prompt;
pub mod puzzle_rating;
pub mod solve_curve;
pub(crate) mod report;
pub(crate) mod scoring;
pub mod rollout;
pub(crate) mod sample;
pub mod task;

mod answers;
mod args;
mod inputs;
mod run;
mod section;

pub use args::{EvalArgs, EvalOverrides};
pub(crate) use prompt::BASELINE_TEMPLATE;
pub use run::run_eval;
pub(crate) use run::run_eval_with;
pub use scoring::classify;

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "eval-1";
pub(crate) use section::{keeps_a_cache, maia_inputs, section_for_records};

//! The arguments of `puzzleforge eval`: the set, the player and its prompt,
//! the run folder and the engine flags. Apart so the run and its inputs read
//! one plain struct.

use serde::Serialize;
use std::path::PathBuf;

use super::config::EvalEngine;
use crate::core::settings::switch_off;
use crate::engine::settings::EngineArgs;
use crate::stages::export::Split;

/// `puzzleforge eval`'s flags (their help: `cli::eval`).
#[derive(Debug, Clone)]
pub struct EvalArgs {
    pub set: PathBuf,
    /// The flags laid over `[eval]` by [`crate::core::settings::flags_over`].
    pub overrides: EvalOverrides,
    pub prompt: Option<PathBuf>,
    pub output: PathBuf,
    pub split: Split,
    pub limit: Option<usize>,
    pub config: Option<PathBuf>,
    /// With `engine_workers`, laid over `[eval.engine]` ([`Self::engine_flags`]).
    pub engine: Option<PathBuf>,
    pub engine_workers: Option<usize>,
}

/// `eval`'s flags (their help: `cli::eval`), each over the `[eval]` key its
/// serde name gives.
#[derive(Default, Debug, Clone, Serialize)]
pub struct EvalOverrides {
    pub model: Option<String>,
    pub templates: Vec<String>,
    pub repeats: Option<u32>,
    pub seed: Option<u64>,
    #[serde(rename = "client.workers")]
    pub workers: Option<usize>,
    #[serde(rename = "regret.enabled", serialize_with = "switch_off")]
    pub no_regret: bool,
    #[serde(rename = "maia.ladder", serialize_with = "switch_off")]
    pub no_ladder: bool,
    #[serde(rename = "maia.models_dir")]
    pub maia_models: Option<PathBuf>,
}

impl EvalArgs {
    /// The engine flags, over the `[eval.engine]` section.
    pub(super) fn engine_flags(&self) -> EvalEngine {
        EvalEngine::Flags(EngineArgs {
            engine: self.engine.clone(),
            workers: self.engine_workers,
            deadline: None,
            handshake_deadline: None,
        })
    }
}

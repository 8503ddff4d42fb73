//! The arguments of `puzzleforge eval`: the set, the player and its prompt,
//! the run folder and the engine flags. Apart so the run and its inputs read
//! one plain struct.

use serde::Serialize;
use std::path::PathBuf;

use super::config::EvalEngine;
use crate::core::settings::switch_off;
use crate::engine::settings::EngineArgs;
use crate::stages::export::Split;

/// `puzzleforge eval`: the set, the prompt, the run folder and the engine
/// flags (over `[eval.engine]`), and apart from them ([`EvalOverrides`])
/// the flags that override `[eval]` keys.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    /// A release folder (its test split unless --split train) or a puzzle file (CSV/JSONL, .zst ok).
    pub set: PathBuf,
    /// The flags that override keys of `[eval]`.
    pub overrides: EvalOverrides,
    /// JSON file with an instruction and few-shot demos.
    pub prompt: Option<PathBuf>,
    /// Run folder for the report, logs and cache.
    pub output: PathBuf,
    /// Split of a release folder (ignored for a puzzle file).
    pub split: Split,
    /// Only N puzzles, drawn with the run's seed across the set's cells
    /// (rating bin x solver moves x mate) as evenly as they allow, not the
    /// first N rows (a release's first rows are its lowest-rated cells).
    pub limit: Option<usize>,
    /// Pipeline config (TOML) with an [eval] section.
    pub config: Option<PathBuf>,
    /// Engine executable or definition file (default: config, /usr/games/stockfish, PATH).
    pub engine: Option<PathBuf>,
    /// Engine processes for regret and the engine baseline.
    pub engine_workers: Option<usize>,
}

/// The flags of `puzzleforge eval` that override the key of `[eval]` their
/// serde name gives; the only part of [`EvalArgs`] that
/// [`crate::core::settings::flags_over`] lays over the section.
#[derive(Default, Debug, Clone, Serialize)]
pub struct EvalOverrides {
    /// openai:MODEL@BASE_URL, engine:stockfish?elo=E&nodes=N, maia:RATING
    /// (1100..1900; ?sample=1 to draw at temperature 1), or random (default:
    /// the config's eval.model).
    pub model: Option<String>,
    /// paper-json, epoch, or a template file; repeat the flag to run several
    /// (default: the config's eval.templates, else paper-json).
    pub templates: Vec<String>,
    /// Asks every position K times; each repeat draws its own seeds from the run's seed.
    pub repeats: Option<u32>,
    /// The run's seed: every random choice of the eval (the puzzles of
    /// --limit, a sampling player's draws, each repeat's seeds) derives
    /// from it (default: the config's [eval] seed; 0 without one).
    pub seed: Option<u64>,
    /// Concurrent model calls (threads of the Maia nets).
    #[serde(rename = "client.workers")]
    pub workers: Option<usize>,
    /// Skip the engine regret computation.
    #[serde(rename = "regret.enabled", serialize_with = "switch_off")]
    pub no_regret: bool,
    /// Skip the human ladder (the nine Maia nets on the same positions).
    #[serde(rename = "maia.ladder", serialize_with = "switch_off")]
    pub no_ladder: bool,
    /// Folder of the Maia nets (default: the config's eval.maia.models_dir, models/maia).
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

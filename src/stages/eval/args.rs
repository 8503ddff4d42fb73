//! The arguments of `puzzleforge eval`: the set, the player and its prompt,
//! the run folder and the engine flags. Apart so the run and its inputs read
//! one plain struct.

use serde::Serialize;
use std::path::PathBuf;

use super::config::EvalEngine;
use crate::core::settings::switch_off;
use crate::engine::settings::EngineArgs;
use crate::stages::export::Split;

/// `puzzleforge eval`. The flags that set a key of `[eval]` override it
/// ([`crate::core::settings::flags_over`]); the engine flags override
/// `[eval.engine]`.
#[derive(Debug, Clone, Serialize)]
pub struct EvalArgs {
    /// A release folder (its test split unless --split train) or a puzzle file (CSV/JSONL, .zst ok).
    #[serde(skip)]
    pub set: PathBuf,
    /// openai:MODEL@BASE_URL, engine:stockfish?elo=E&nodes=N, maia:RATING
    /// (1100..1900; ?sample=1 to draw at temperature 1), or random (default:
    /// the config's eval.model).
    pub model: Option<String>,
    /// paper-json, epoch, or a template file; repeat the flag to run several
    /// (default: the config's eval.templates, else paper-json).
    pub templates: Vec<String>,
    /// JSON file with an instruction and few-shot demos.
    #[serde(skip)]
    pub prompt: Option<PathBuf>,
    /// Run folder for the report, logs and cache.
    #[serde(skip)]
    pub output: PathBuf,
    /// Split of a release folder (ignored for a puzzle file).
    #[serde(skip)]
    pub split: Split,
    /// Asks every position K times; each repeat draws its own seeds from the run's seed.
    pub repeats: Option<u32>,
    /// The run's seed: every random choice of the eval (the puzzles of
    /// --limit, a sampling player's draws, each repeat's seeds) derives
    /// from it (default: the config's [eval] seed; 0 without one).
    pub seed: Option<u64>,
    /// Only N puzzles, drawn with the run's seed across the set's cells
    /// (rating bin x solver moves x mate) as evenly as they allow, not the
    /// first N rows (a release's first rows are its lowest-rated cells).
    #[serde(skip)]
    pub limit: Option<usize>,
    /// Concurrent model calls (threads of the Maia nets).
    #[serde(rename = "client.workers")]
    pub workers: Option<usize>,
    /// Pipeline config (TOML) with an [eval] section.
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Skip the engine regret computation.
    #[serde(rename = "regret.enabled", serialize_with = "switch_off")]
    pub no_regret: bool,
    /// Skip the human ladder (the nine Maia nets on the same positions).
    #[serde(rename = "maia.ladder", serialize_with = "switch_off")]
    pub no_ladder: bool,
    /// Folder of the Maia nets (default: the config's eval.maia.models_dir, models/maia).
    #[serde(rename = "maia.models_dir")]
    pub maia_models: Option<PathBuf>,
    /// Engine executable or definition file (default: config, /usr/games/stockfish, PATH).
    #[serde(skip)]
    pub engine: Option<PathBuf>,
    /// Engine processes for regret and the engine baseline.
    #[serde(skip)]
    pub engine_workers: Option<usize>,
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

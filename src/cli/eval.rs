//! `puzzleforge eval`'s flags (the prompt, run-folder and engine groups
//! shared with `rollout`), laid into `stages::eval`'s arguments.

use std::path::PathBuf;

use crate::stages::eval::EvalArgs;
use crate::stages::export::Split;

use super::groups::{EvalEngineFlags, ModelRunFlags};

/// `puzzleforge eval`. The flags that set a key of `[eval]` override it;
/// the engine flags override `[eval.engine]`.
#[derive(clap::Args, Debug, Clone)]
pub struct EvalFlags {
    /// A release folder (its test split unless --split train) or a puzzle file (CSV/JSONL, .zst ok).
    pub set: PathBuf,
    /// openai:MODEL@BASE_URL, engine:stockfish?elo=E&nodes=N, maia:RATING
    /// (1100..1900; ?sample=1 to draw at temperature 1), or random (default:
    /// the config's eval.model).
    #[arg(long)]
    pub model: Option<String>,
    /// paper-json, epoch, or a template file; repeat the flag to run several
    /// (default: the config's eval.templates, else paper-json).
    #[arg(long = "template")]
    pub templates: Vec<String>,
    #[command(flatten)]
    pub run: ModelRunFlags,
    /// Split of a release folder (ignored for a puzzle file).
    #[arg(long, value_enum, default_value = "test")]
    pub split: Split,
    /// Asks every position K times; each repeat draws its own seeds from the run's seed.
    #[arg(long)]
    pub repeats: Option<u32>,
    /// The run's seed: every random choice of the eval (the puzzles of
    /// --limit, a sampling player's draws, each repeat's seeds) derives
    /// from it (default: the config's [eval] seed; 0 without one).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only N puzzles, drawn with the run's seed across the set's cells
    /// (rating bin x solver moves x mate) as evenly as they allow, not the
    /// first N rows (a release's first rows are its lowest-rated cells).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Concurrent model calls (threads of the Maia nets).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Pipeline config (TOML) with an [eval] section.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Skip the engine regret computation.
    #[arg(long)]
    pub no_regret: bool,
    /// Skip the human ladder (the nine Maia nets on the same positions).
    #[arg(long)]
    pub no_ladder: bool,
    /// Folder of the Maia nets (default: the config's eval.maia.models_dir, models/maia).
    #[arg(long, value_name = "DIR")]
    pub maia_models: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EvalEngineFlags,
}

impl EvalFlags {
    /// The eval's arguments, as its flags give them.
    pub fn args(&self) -> EvalArgs {
        let Self {
            set,
            model,
            templates,
            run: ModelRunFlags { prompt, output },
            split,
            repeats,
            seed,
            limit,
            workers,
            config,
            no_regret,
            no_ladder,
            maia_models,
            engine:
                EvalEngineFlags {
                    engine,
                    engine_workers,
                },
        } = self.clone();
        EvalArgs {
            set,
            overrides: crate::stages::eval::EvalOverrides {
                model,
                templates,
                repeats,
                seed,
                workers,
                no_regret,
                no_ladder,
                maia_models,
            },
            prompt,
            output,
            split,
            limit,
            config,
            engine,
            engine_workers,
        }
    }
}

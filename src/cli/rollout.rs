//! `puzzleforge rollout`'s flags (the prompt, run-folder and engine groups
//! shared with `eval`, their help worded for games), laid into
//! `stages::eval::rollout`'s arguments.

use std::path::PathBuf;

use crate::stages::eval::rollout::RolloutArgs;

use super::groups::{EvalEngineFlags, ModelRunFlags};

/// `puzzleforge rollout`. `--seed` overrides `[eval]`'s seed; the engine
/// flags override `[eval.engine]`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    mut_arg("output", |arg| arg.help("Run folder")),
    mut_arg("engine", |arg| arg.help("Engine executable or definition file")),
    mut_arg("engine_workers", |arg| {
        arg.help("Engine processes (games played in parallel)")
    })
)]
pub struct RolloutFlags {
    /// The player: `openai:MODEL@BASE_URL` (any OpenAI-compatible
    /// endpoint; the API key from [eval.client] api_key_env) or `random`.
    /// Engine and Maia players are eval players, not rollout players.
    #[arg(long)]
    pub model: String,
    /// paper-json, epoch, or a template file.
    #[arg(long, default_value = "paper-json")]
    pub template: String,
    #[command(flatten)]
    pub run: ModelRunFlags,
    /// Pipeline config (TOML) with [eval] and [rollout] sections.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The run's seed: every request's sampling seed derives from it
    /// (default: the config's [eval] seed; 0 without one).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub engine: EvalEngineFlags,
}

impl RolloutFlags {
    /// The rollout's arguments, as its flags give them.
    pub fn args(&self) -> RolloutArgs {
        let Self {
            model,
            template,
            run: ModelRunFlags { prompt, output },
            config,
            seed,
            engine:
                EvalEngineFlags {
                    engine,
                    engine_workers,
                },
        } = self.clone();
        RolloutArgs {
            model,
            template,
            prompt,
            output,
            config,
            overrides: crate::stages::eval::rollout::RolloutOverrides { seed },
            engine,
            engine_workers,
        }
    }
}

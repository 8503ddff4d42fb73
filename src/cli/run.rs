//! `puzzleforge run`'s flags (the pipeline group shared with `merge`, and
//! `--plan`'s and `--aim`'s groups), laid into `pipeline::run`'s arguments.

use std::path::PathBuf;

use crate::core::shard::Shard;
use crate::generate::plan::PlanArgs;
use crate::pipeline::aim::AimArgs;
use crate::pipeline::run::RunArgs;

use super::groups::PipelineFlags;

/// `puzzleforge run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunFlags {
    #[command(flatten)]
    pub pipeline: PipelineFlags,
    /// Release name: the run writes into `<output_dir>/<release>/`.
    #[arg(long)]
    pub release: Option<String>,
    /// Redo every stage even when its inputs and config are unchanged; a
    /// finished release is only checked, never changed (see
    /// `--rewrite-release`).
    #[arg(long)]
    pub force: bool,
    /// Replace a finished release's puzzles when its inputs or settings
    /// changed (or its files were damaged). Without it a published release
    /// never changes: a rerun only checks it, and refuses (exit 2) when it
    /// would now come out differently.
    #[arg(long)]
    pub rewrite_release: bool,
    /// Do slice I of N (0 <= I < N) of the expensive stages (ingest,
    /// selfplay, mine, rate) into `<output_dir>/<release>.shard-I-of-N/`;
    /// `puzzleforge merge` then combines the N slices and runs the rest.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Exit 2 (as `release --strict`) when a target cell stays unfilled:
    /// the cells `[generate]` was to fill with generated puzzles, else the
    /// release's `[release]` cells. The release is written first; the error
    /// names the unfilled cells (the `--json` summary lists them under
    /// `strict`).
    #[arg(long, conflicts_with = "shard")]
    pub strict: bool,
    /// Keep stored work made by other algorithm versions (a stage's outputs,
    /// `[generate]`'s stored batches) instead of redoing it; each one kept
    /// is printed and recorded in the release's manifest (`run.kept_work`).
    #[arg(long)]
    pub keep_stored_work: bool,
    #[command(flatten)]
    pub plan: PlanFlags,
    #[command(flatten)]
    pub aim: AimFlags,
}

/// `run --plan`: project a generation target's cost instead of running.
#[derive(clap::Args, Debug, Clone)]
pub struct PlanFlags {
    /// Instead of running, project what the `[generate]` target costs:
    /// play (or reuse from the store) a short sample of each generation
    /// profile's first games, then print the engine CPU-hours per cell and
    /// in total, with a 90% interval, and the cells the sample never
    /// reached; written to `<output_dir>/<release>.plan.json`. The run
    /// afterwards plays none of the sample's games again.
    #[arg(long, conflicts_with_all = ["shard", "strict", "force", "rewrite_release"])]
    pub plan: bool,
    /// Sample games per profile, rounded up to whole batches (default:
    /// one batch, `generate.batch_games`; with only --plan-cpu-hours, up to
    /// `generate.max_games`).
    #[arg(long, requires = "plan", value_name = "N")]
    pub plan_games: Option<u64>,
    /// Sample about this many engine CPU-hours in all, split evenly across
    /// the profiles (each stops after the batch that spends its share);
    /// with --plan-games, whichever ends first.
    #[arg(long, requires = "plan", value_name = "HOURS")]
    pub plan_cpu_hours: Option<f64>,
}

/// `run --aim`: the release's tier aimed at a model's solve rate.
#[derive(clap::Args, Debug, Clone)]
pub struct AimFlags {
    /// Aim the release's tier at a model: the folder of an `eval` run of it
    /// (its `positions.jsonl` and `report.json`). The tier holds the
    /// rating window where the model's solve curve, fitted on that run,
    /// gives --solve-rate.
    #[arg(
        long,
        value_name = "EVAL_RUN",
        requires = "solve_rate",
        conflicts_with_all = ["tier", "shard"]
    )]
    pub aim: Option<PathBuf>,
    /// The share of the aimed tier's puzzles the model should solve,
    /// between 0 and 1 (with --aim).
    #[arg(
        long,
        value_name = "RATE",
        requires = "aim",
        value_parser = crate::pipeline::aim::parse_solve_rate
    )]
    pub solve_rate: Option<f64>,
}

impl RunFlags {
    /// The run's arguments, as its flags give them.
    pub fn args(&self) -> RunArgs {
        let Self {
            pipeline:
                PipelineFlags {
                    config,
                    engine,
                    tier,
                },
            release,
            force,
            rewrite_release,
            shard,
            strict,
            keep_stored_work,
            plan:
                PlanFlags {
                    plan,
                    plan_games,
                    plan_cpu_hours,
                },
            aim: AimFlags { aim, solve_rate },
        } = self.clone();
        RunArgs {
            config,
            release,
            engine,
            tier,
            force,
            rewrite_release,
            shard,
            strict,
            keep_stored_work,
            plan: PlanArgs {
                plan,
                plan_games,
                plan_cpu_hours,
            },
            aim: AimArgs { aim, solve_rate },
        }
    }
}

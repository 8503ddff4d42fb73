//! The stage's run: the `[eval]` section with the flags over it, the inputs,
//! the answers, the scores and the report's files.

use anyhow::{Context, Result};
use std::time::Instant;

use super::answers::{answer_jobs, check_failed_calls, compute_regret, ladder_policies};
use super::args::EvalArgs;
use super::client::default_cache_dir;
use super::config::{EvalConfig, EvalEngine};
use super::engine_ops::RegretSearches;
use super::human::Policies;
use super::inputs::{EvalInputs, jobs_of};
use super::metrics::PositionRecord;
use super::players::ModelSpec;
use super::report::{EnginePin, EvalSummary, RunOutput};
use crate::core::error::bad_input;
use crate::core::settings::{flags_over, load_section};
use crate::core::summary::{Report, Summary};

/// `puzzleforge eval`: the `[eval]` section of `--config` (or the
/// defaults) with the flags over it.
pub fn run_eval(args: &EvalArgs) -> Result<Summary> {
    let section: EvalConfig = load_section(args.config.as_deref(), "eval")?;
    let config = flags_over(&section, &args.overrides)?;
    // The response cache (and the Maia policies kept in it) is written
    // too, wherever the config or -o puts it: through the same gate as -o.
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&args.output));
    crate::stages::release::folder::guard_output(
        &cache,
        crate::stages::release::folder::Target::Folder,
        "eval",
        "eval.cache_dir (by default --output's cache/)",
    )?;
    // One eval at a time per output folder: two would pay every call twice
    // and the last to write would win. (Under `run`, the release lock
    // already keeps a second run out of the stage's folder.)
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating run folder {}", args.output.display()))?;
    let lock_path = args.output.join(".lock");
    let Some(_lock) = crate::core::lock::FileLock::try_take(&lock_path)? else {
        let owner = crate::core::lock::holder(&lock_path);
        return Err(bad_input(format!(
            "{} is being written by another eval (lock {}: {owner}); wait for it to finish, \
             or give this one another -o",
            args.output.display(),
            lock_path.display()
        )));
    };
    run_eval_with(args, config, &args.engine_flags())?.into_summary()
}

/// Evaluates with the `[eval]` settings `config` and `engine` (the pipeline
/// runner's entry; `args.config` and the section flags are not read). The
/// run's files are written even when too many calls failed; then the eval
/// fails (a rerun asks the failed calls again).
pub(crate) fn run_eval_with(
    args: &EvalArgs,
    config: EvalConfig,
    engine: &EvalEngine,
) -> Result<Report<EvalSummary>> {
    let started = Instant::now();
    let inputs = EvalInputs::load(args, &config)?;
    let EvalInputs {
        model,
        puzzles,
        tasks,
        prompt,
        templates,
        ..
    } = &inputs;
    let jobs = jobs_of(templates.len(), config.repeats, tasks.len());
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating run folder {}", args.output.display()))?;

    let mut notes = Vec::new();
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&args.output));
    let ladder_policies = ladder_policies(&config, puzzles, tasks, &cache, &mut notes)?;
    let own_policies = maia_player_policies(model, &config, &inputs, &cache, &ladder_policies)?;
    let (answers, http_requests, mut engine_pin) = answer_jobs(
        model,
        &config,
        args,
        engine,
        templates,
        prompt,
        tasks,
        &jobs,
        own_policies.as_ref().or(ladder_policies.as_ref()),
        &mut notes,
    )?;
    let mut records = inputs.position_records(&jobs, &answers);
    let regret_searches = regret(
        &config,
        engine,
        &cache,
        &mut records,
        &mut engine_pin,
        &mut notes,
    );
    let maia_positions = own_policies
        .as_ref()
        .or(ladder_policies.as_ref())
        .map(|p| (p.cached, p.positions.len() - p.cached));
    let nets = nets_read(own_policies.iter().chain(ladder_policies.iter()));
    let ladder = ladder_policies.map(|policies| ladder_of(&policies, &config, &inputs));
    let puzzle_rating = super::puzzle_rating::report(&records, puzzles);
    let output = RunOutput {
        puzzle_rating,
        records,
        answers,
        jobs,
        http_requests,
        notes,
        engine: engine_pin,
        ladder,
        maia_positions,
        nets,
        regret_searches: regret_searches.map(|s| (s.cached, s.searched)),
    };
    let run = inputs.run_info(args, &config)?;
    let summary = super::report::write_run(&args.output, &run, &output, tasks, started.elapsed())?;
    check_failed_calls(
        &output.answers,
        config.client.max_failed_share,
        &args.output,
    )?;
    Ok(summary)
}

/// The regret of each record's answer when `[eval.regret]` is on, with
/// the engine's pin when the player's answers left none: regret needs
/// Stockfish, and without one the run still reports accuracy (a note says
/// why regret is missing).
fn regret(
    config: &EvalConfig,
    engine: &EvalEngine,
    cache: &std::path::Path,
    records: &mut [PositionRecord],
    engine_pin: &mut Option<EnginePin>,
    notes: &mut Vec<String>,
) -> Option<RegretSearches> {
    if !config.regret.enabled {
        return None;
    }
    match compute_regret(config, engine, records, cache) {
        Ok((pin, searches)) => {
            *engine_pin = engine_pin.take().or(Some(pin));
            Some(searches)
        }
        Err(e) => {
            notes.push(format!("regret not computed: {e:#}"));
            None
        }
    }
}

/// A Maia player's policies when the ladder did not run (it reads its net
/// among the ladder's nine, `ladder`, when they ran); `None` for other
/// players.
fn maia_player_policies(
    model: &ModelSpec,
    config: &EvalConfig,
    inputs: &EvalInputs,
    cache: &std::path::Path,
    ladder: &Option<Policies>,
) -> Result<Option<Policies>> {
    Ok(match model {
        ModelSpec::Maia { rating, .. } if ladder.is_none() => Some(super::human::policies(
            &config.maia.models_dir,
            &[*rating],
            &inputs.puzzles,
            &inputs.tasks,
            Some(cache),
            config.client.workers,
        )?),
        _ => None,
    })
}

/// The human ladder of the set, from the ladder's `policies`.
fn ladder_of(
    policies: &Policies,
    config: &EvalConfig,
    inputs: &EvalInputs,
) -> super::ladder::Ladder {
    super::ladder::ladder(
        policies,
        &config.maia.models_dir,
        &inputs.puzzles,
        &inputs.tasks,
        config.rating_bin_width,
    )
}

/// Every net the run read, by file and sha256, the player's first.
fn nets_read<'p>(policies: impl Iterator<Item = &'p Policies>) -> Vec<crate::maia::NetFile> {
    let mut nets: Vec<crate::maia::NetFile> = Vec::new();
    for policies in policies {
        for net in &policies.nets {
            if !nets.contains(net) {
                nets.push(net.clone());
            }
        }
    }
    nets
}

//! `puzzleforge run`: the configured stages, in order, into
//! `output/<release>/<stage>/`.
//!
//! Each stage writes into a scratch folder that is renamed into place when
//! the stage succeeds, with a `stage.json` recording its inputs' sha256,
//! its config section, the engine, counts, seconds and its outputs' sha256.
//! A rerun skips a stage whose fingerprint (inputs, config, engine, tool
//! version, the stage's algorithm version) is unchanged and whose outputs
//! are intact, and redoes the rest; a stage redone because this build's
//! algorithm differs from the recorded one says so. The build that wrote
//! a stage is recorded but decides nothing.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::generate::{Generated, Mode, prepare};
use crate::pipeline::closing::{self, FinishedRun, HintFlags, StageReport};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::generated_adapters::on_generated_route;
use crate::pipeline::manifest::{
    EnginePath, Fingerprint, StageManifest, Standing, checkpoint_dir, commit_stage_dir,
    fingerprint, fresh_scratch, manifest_seconds, output_hashes,
};
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::session::{self, Opening, Session, check_release_name};
use crate::pipeline::stage::{
    BeforeWork, Invocation, RunContext, RunEngine, Stage, StageFolder, Stages,
};
use crate::stages::StageName;

/// `puzzleforge run`'s flags (their help: `cli::run`); `reproduce` fills them
/// from what a release records.
#[derive(Debug, Clone)]
pub struct RunArgs {
    pub config: PathBuf,
    pub release: Option<String>,
    pub engine: Option<PathBuf>,
    pub tier: Option<String>,
    pub force: bool,
    pub rewrite_release: bool,
    pub shard: Option<Shard>,
    pub strict: bool,
    pub keep_stored_work: bool,
    pub plan: crate::generate::plan::PlanArgs,
    pub aim: crate::pipeline::aim::AimArgs,
}

/// Runs the pipeline.
pub fn run_pipeline(args: &RunArgs) -> Result<Summary> {
    let text = PipelineConfig::read_text(&args.config)?;
    run_pipeline_from(args, &text, None)
}

/// Runs the pipeline of the config text `text` (as the file `args.config`
/// holds it, which need not exist), writing under `output_dir` instead of
/// the config's `pipeline.output_dir` when given (`reproduce`'s scratch
/// folder).
pub(crate) fn run_pipeline_from(
    args: &RunArgs,
    text: &str,
    output_dir: Option<&Path>,
) -> Result<Summary> {
    let RunConfig {
        config,
        tier,
        planned_off,
    } = run_config(args, text, output_dir)?;
    let tier = tier.as_deref();
    let release = release_name(args, &config)?;
    let seeds = RunSeeds::of(&config.pipeline, &release);
    let (stages, rest) =
        session::configured_stages(&config, &seeds, &args.config, args.shard.is_some())?;
    let left_for_merge: Vec<StageName> = rest.iter().map(|s| s.name()).collect();
    let engine = session::checked_engine(&config, &args.config, args.engine.as_ref(), &stages)?;
    let release_dir = match &args.shard {
        Some(shard) => config.pipeline.output_dir.join(shard.folder_name(&release)),
        None => config.pipeline.output_dir.join(&release),
    };
    if args.plan.plan {
        return run_plan(args, &config, engine, release_dir, tier, planned_off);
    }
    let mut session = Session::open(Opening {
        config,
        seeds,
        stages,
        engine,
        release_dir,
        tier,
        shard: args.shard,
        keep_stored_work: args.keep_stored_work,
        invocation: Invocation {
            config_path: args.config.clone(),
            config_text: text.to_string(),
            release: release.clone(),
            tier_flag: args.tier.clone(),
            engine_flag: args.engine.is_some(),
        },
    })?;
    let generated = generate_first(args, &mut session, tier)?;
    let generated = generated.as_deref();
    check_strict_target(args, &session.stages, generated)?;
    let redo = Redo {
        force: args.force,
        rewrite_release: args.rewrite_release,
    };
    let ctx = &mut session.ctx;
    let (human, report) = match run_stages(ctx, &session.stages, redo) {
        Ok(done) => done,
        Err(error) => return closing::generation_fell_short(ctx, generated, &release, error),
    };
    closing::run_summary(
        FinishedRun {
            ctx,
            release: &release,
            generated,
            shard: args.shard.map(|shard| (shard, left_for_merge)),
            hint_flags: hint_flags(args),
            strict: args.strict,
        },
        human,
        report,
    )
}

/// The config of `run`, with its flags laid over it.
struct RunConfig {
    config: PipelineConfig,
    /// The tier the run produces: `--aim`'s, else `--tier`.
    tier: Option<String>,
    /// `run --plan` on a config with `[generate]` off, planned as if on.
    planned_off: bool,
}

/// Reads the config text `text` (as the file `args.config` holds it), its
/// output folder `output_dir` when given, with `run --plan` and `--aim`
/// laid over it, and validates it.
fn run_config(args: &RunArgs, text: &str, output_dir: Option<&Path>) -> Result<RunConfig> {
    let mut config = PipelineConfig::from_text(text, &args.config)?;
    if let Some(output_dir) = output_dir {
        config.pipeline.output_dir = output_dir.to_path_buf();
    }
    // A plan only prices generation: it samples with [generate] on whether
    // or not the config runs it, so `run --plan` works on a config that
    // has not turned generation on yet.
    let planned_off = args.plan.plan && !config.generate.enabled;
    config.generate.enabled |= planned_off;
    // `--aim` adds its tier to [release.tiers]; from here on it is the tier
    // the run produces, as a `--tier` would be.
    let tier = crate::pipeline::aim::add_aimed_tier(&args.aim, &mut config, &args.config)?
        .or_else(|| args.tier.clone());
    config.validate(&args.config, tier.as_deref())?;
    Ok(RunConfig {
        config,
        tier,
        planned_off,
    })
}

/// Under `[generate]` the games are played in batches first, and the
/// self-play chain's stages become those of the generated route, holding
/// them: the generation, when the session generates.
fn generate_first(
    args: &RunArgs,
    session: &mut Session,
    tier: Option<&str>,
) -> Result<Option<Rc<Generated>>> {
    let Session {
        config,
        seeds,
        stages,
        ctx,
        ..
    } = session;
    if !config.generate.enabled {
        return Ok(None);
    }
    let generated = Rc::new(prepare_generation(args, config, ctx, stages, tier)?);
    if args.keep_stored_work {
        let mut sections = config.generate_sections();
        sections.keep_stored_work = true;
        ctx.kept_work.extend(crate::generate::kept_stores(
            &sections,
            ctx.generate_engine()?,
            tier,
        )?);
    }
    *stages = on_generated_route(std::mem::take(stages), config, seeds, &generated)?;
    Ok(Some(generated))
}

/// `run --strict` checks the cells of `[generate]`'s target, else those of
/// the release stage: refused (exit 2) with neither.
fn check_strict_target(
    args: &RunArgs,
    stages: &Stages,
    generated: Option<&Generated>,
) -> Result<()> {
    if args.strict && generated.is_none() && !stages.iter().any(|s| s.name() == StageName::Release)
    {
        return Err(bad_input(format!(
            "run --strict checks the release's cells, but {} has no release stage in pipeline.stages (and [generate] is off)",
            args.config.display()
        )));
    }
    Ok(())
}

/// The flags of `args` a closing hint's command repeats.
fn hint_flags(args: &RunArgs) -> HintFlags<'_> {
    HintFlags {
        config: &args.config,
        tier: args.tier.as_deref(),
        aim: &args.aim,
    }
}

/// Generation's walk, set up before any stage runs: a finished release
/// is checked against the store its games came from before any game is
/// played.
fn prepare_generation(
    args: &RunArgs,
    config: &PipelineConfig,
    ctx: &RunContext,
    stages: &[Box<dyn Stage>],
    tier: Option<&str>,
) -> Result<Generated> {
    let kept = !args.rewrite_release && release_is_finished(&ctx.release_dir);
    let mode = match args.shard {
        Some(shard) => Mode::Shard(shard),
        // A finished release is walked from the store alone: a game to
        // play is refused before any batch is played.
        None if kept => Mode::Check,
        None => Mode::Run,
    };
    let mut sections = config.generate_sections();
    sections.keep_stored_work = args.keep_stored_work;
    if kept {
        // Refused before any game is played: the ingest stages, and
        // the store the kept release's games came from.
        let ingest = stages.iter().filter(|s| s.name().properties().ingest);
        check_kept(ctx, ingest)?;
        let key = crate::generate::store_key(&sections, ctx.generate_engine()?, tier)?;
        check_kept_store(ctx, &key)?;
    }
    let earlier = crate::pipeline::adapters::earlier_releases(ctx)?;
    let generated = prepare(&sections, ctx.generate_engine()?, mode, tier, &earlier);
    match mode {
        Mode::Check => {
            generated.with_context(|| ctx.stage_dir(StageName::Release).display().to_string())
        }
        _ => generated,
    }
}

/// `run --plan`: samples and projects instead of running the stages (no
/// release folder is written); `planned_off`: the config has `[generate]`
/// off, and the plan says so.
fn run_plan(
    args: &RunArgs,
    config: &PipelineConfig,
    engine: Option<RunEngine>,
    release_dir: PathBuf,
    tier: Option<&str>,
    planned_off: bool,
) -> Result<Summary> {
    let ctx = session::unopened_context(config, &args.config, release_dir, engine, tier);
    let command = format!("puzzleforge run{}", hint_flags(args).text());
    let earlier = crate::pipeline::adapters::earlier_releases(&ctx)?;
    let mut summary = crate::generate::plan::run_plan(
        &args.plan,
        &config.generate_sections(),
        ctx.generate_engine()?,
        &earlier,
        &ctx.release_dir,
        tier,
        &command,
    )?;
    if planned_off {
        summary.human.push_str(&format!(
            "  [generate] is off in {}: planned as if on; set `[generate] enabled = true` \
             there to generate\n",
            args.config.display()
        ));
    }
    Ok(summary)
}

/// The release `run` writes: `--release`, else `pipeline.release`.
fn release_name(args: &RunArgs, config: &PipelineConfig) -> Result<String> {
    let release = args
        .release
        .clone()
        .unwrap_or_else(|| config.pipeline.release.clone());
    check_release_name(&release)?;
    crate::stages::release::folder::check_registry(&config.pipeline.output_dir)?;
    Ok(release)
}

/// Whether `release_dir` holds a finished release (its release stage
/// committed).
pub(crate) fn release_is_finished(release_dir: &Path) -> bool {
    crate::stages::release::folder::run_release_is_finished(release_dir)
}

/// What a run redoes beyond the stages whose fingerprint changed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Redo {
    /// `--force`: every stage but a finished release.
    pub force: bool,
    /// `--rewrite-release`: a finished release too, when it would differ.
    pub rewrite_release: bool,
}

/// Runs `stages` in order (skipping unchanged ones unless `redo` says
/// otherwise); returns the human lines and the JSON report of each stage.
///
/// A finished release is immutable as a whole: unless `redo` rewrites it,
/// every stage up to and including the release is checked first and kept
/// as it is, and when one would now come out differently (or its files
/// were damaged) the run stops (exit 2) before writing anything; the
/// stages after the release (export, eval) run as usual.
pub(crate) fn run_stages(
    ctx: &mut RunContext,
    stages: &[Box<dyn Stage>],
    redo: Redo,
) -> Result<(String, Vec<StageReport>)> {
    let mut human = format!("release {}\n", ctx.release_dir.display());
    let mut report = Vec::new();
    let kept = !redo.rewrite_release && release_is_finished(&ctx.release_dir);
    let is_kept = |stage: StageName| kept && stage <= StageName::Release;
    if kept {
        check_kept(ctx, stages.iter().filter(|s| is_kept(s.name())))?;
    }
    for stage in stages {
        let outcome = if is_kept(stage.name()) {
            let previous = StageManifest::previous(&ctx.stage_dir(stage.name()));
            StageOutcome::kept(previous.map(|p| p.counts).unwrap_or_default(), None)
        } else {
            run_stage(stage.as_ref(), ctx, redo)
                .with_context(|| format!("stage {}", stage.name()))?
        };
        // Under `[generate]` the stages' work was done when the batches
        // were played, before the stages ran: their time is theirs.
        let outcome = StageOutcome {
            seconds: outcome.seconds + stage.seconds_spent_before(),
            ..outcome
        };
        let ended = StageReport {
            stage: stage.name(),
            skipped: outcome.skipped,
            seconds: outcome.seconds,
            counts: outcome.counts,
            why: outcome.why,
        };
        human.push_str(&ended.ended_row());
        report.push(ended);
    }
    Ok((human, report))
}

/// How one stage's turn ended: done, or its stored outputs kept.
struct StageOutcome {
    skipped: bool,
    seconds: f64,
    counts: Value,
    why: Option<String>,
}

impl StageOutcome {
    /// Stored outputs kept (`counts`: those they recorded), with the line
    /// saying why when a choice of the run decided it.
    fn kept(counts: Value, why: Option<String>) -> StageOutcome {
        StageOutcome {
            skipped: true,
            seconds: 0.0,
            counts,
            why,
        }
    }
}

/// One stage's turn: its own step before the work, its stored outputs
/// weighed, and when they do not stand its work done and committed.
fn run_stage(stage: &dyn Stage, ctx: &mut RunContext, redo: Redo) -> Result<StageOutcome> {
    // Held until the turn ends, after the stage's step after the commit.
    let _hold = match stage.before_work(ctx, redo.force)? {
        BeforeWork::Stands(counts) => return Ok(StageOutcome::kept(counts, None)),
        BeforeWork::Weigh(hold) => hold,
    };
    match weigh_stored(stage, ctx, redo.force)? {
        Weighed::Stands(outcome) => Ok(outcome),
        Weighed::Redo { print, why } => work_and_commit(stage, ctx, print, why),
    }
}

/// What weighing a stage's stored outputs decided.
enum Weighed {
    /// They stand: kept as they are, or under `--keep-stored-work`.
    Stands(StageOutcome),
    /// The stage is redone under the fingerprint `print`; `why`: the line
    /// saying so when its algorithm version decided it.
    Redo {
        print: Fingerprint,
        why: Option<String>,
    },
}

/// Weighs the stage's stored outputs (none under `force`) against this
/// run's fingerprint of it.
fn weigh_stored(stage: &dyn Stage, ctx: &mut RunContext, force: bool) -> Result<Weighed> {
    let dir = ctx.stage_dir(stage.name());
    let Some(previous) = StageManifest::previous(&dir).filter(|_| !force) else {
        let print = fingerprint(stage, ctx)?;
        return Ok(Weighed::Redo { print, why: None });
    };
    let standing = previous.standing(&dir, || fingerprint(stage, ctx), EnginePath::Compared)?;
    Ok(match standing {
        Standing::Current => Weighed::Stands(StageOutcome::kept(previous.counts, None)),
        Standing::OtherAlgorithm(print) if ctx.keep_stored_work => {
            Weighed::Stands(keep_stored_work(stage, ctx, previous, &print))
        }
        Standing::OtherAlgorithm(print) | Standing::Changed(print) => {
            let why = previous.fingerprint.algorithm_change(&print, stage.name());
            if let Some(line) = &why {
                crate::core::progress::note(line);
            }
            Weighed::Redo { print, why }
        }
        // Outputs changed or gone since they were recorded: redone.
        Standing::Damaged(_) => Weighed::Redo {
            print: fingerprint(stage, ctx)?,
            why: None,
        },
    })
}

/// `--keep-stored-work`: keeps a stage whose stored outputs differ from
/// this build's (`print`) only in the algorithm version, says so, and
/// adds it to the stored work the release records.
fn keep_stored_work(
    stage: &dyn Stage,
    ctx: &mut RunContext,
    previous: StageManifest,
    print: &Fingerprint,
) -> StageOutcome {
    let line = format!(
        "{}: kept (--keep-stored-work), recorded algorithm {}, this build {}",
        stage.name(),
        previous.fingerprint.algorithm,
        print.algorithm
    );
    crate::core::progress::note(&line);
    ctx.kept_work
        .push(crate::stages::release::manifest::KeptWork {
            what: format!("stage {}", stage.name()),
            recorded: previous.fingerprint.algorithm.clone(),
            this_build: print.algorithm.clone(),
        });
    StageOutcome::kept(previous.counts, Some(line))
}

/// Does the stage's work into a scratch folder, commits it with its
/// `stage.json` (`print`; `why`: why it was redone, for the summary), and
/// takes the stage's step after the commit.
fn work_and_commit(
    stage: &dyn Stage,
    ctx: &RunContext,
    print: Fingerprint,
    why: Option<String>,
) -> Result<StageOutcome> {
    // A line per stage as it starts its work (timestamped; on a terminal
    // as well as in a cron log), so that a long stage is never silent from
    // its start; a stage skipped above starts nothing and says nothing.
    crate::core::progress::note(&format!("stage {}: started", stage.name()));
    let folder = StageFolder {
        scratch: fresh_scratch(&ctx.release_dir, stage.name())?,
        committed: ctx.stage_dir(stage.name()),
        checkpoints: checkpoint_dir(&ctx.release_dir, stage.name()),
        work_key: print.work_key()?,
    };
    let started = Instant::now();
    let counts = stage.execute(ctx, &folder)?;
    let seconds = started.elapsed().as_secs_f64();
    let manifest = StageManifest {
        stage: stage.name(),
        fingerprint: print,
        counts: counts.clone(),
        seconds: manifest_seconds(seconds),
        shard: ctx.shard,
        merged_from: None,
        run: stage
            .records_invocation()
            .then(|| {
                ctx.invocation
                    .as_ref()
                    .map(crate::pipeline::manifest::RunAsked::of)
            })
            .flatten(),
        outputs: output_hashes(&folder.scratch)?,
    };
    commit_stage_dir(&folder.scratch, &folder.committed, &manifest)?;
    remove_checkpoints(&folder.checkpoints)?;
    stage.after_commit(ctx, &folder.committed)?;
    Ok(StageOutcome {
        skipped: false,
        seconds,
        counts,
        why,
    })
}

/// Removes a committed stage's checkpoint folder: its work is in the
/// stage's outputs now (each file's checkpoint went as its output was
/// written; what is left is a former run's of other work).
fn remove_checkpoints(folder: &Path) -> Result<()> {
    match std::fs::remove_dir_all(folder) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", folder.display()))
        }
        _ => Ok(()),
    }
}

/// Checks that every stage of a finished release in `stages` would be
/// kept as it is: committed, its outputs intact, its fingerprint unchanged
/// (the engine's path may differ between machines, its build and options
/// may not); else the run stops (exit 2) naming `--rewrite-release`.
pub(crate) fn check_kept<'a>(
    ctx: &RunContext,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<()> {
    for stage in stages {
        let name = stage.name();
        let dir = ctx.stage_dir(name);
        let Some(previous) = StageManifest::previous(&dir) else {
            return Err(kept_error(
                ctx,
                &format!("it would now come out differently (it has no {name} stage)"),
            ));
        };
        let now = || fingerprint(stage.as_ref(), ctx).with_context(|| format!("stage {name}"));
        // The engine may lie elsewhere on this machine; its build and
        // options decide.
        let why = match previous.standing(&dir, now, EnginePath::Ignored)? {
            Standing::Damaged(files) => {
                let damaged: Vec<String> = files
                    .iter()
                    .map(|file| dir.join(file).display().to_string())
                    .collect();
                Some(format!(
                    "its files no longer match its manifest: {}",
                    damaged.join(", ")
                ))
            }
            Standing::Current => None,
            Standing::OtherAlgorithm(_) if ctx.keep_stored_work => None,
            Standing::OtherAlgorithm(print) | Standing::Changed(print) => Some(format!(
                "it would now come out differently ({name}: {})",
                fingerprint_changes(&previous.fingerprint, &print)
            )),
        };
        if let Some(why) = why {
            return Err(kept_error(ctx, &why));
        }
    }
    Ok(())
}

/// Under `[generate]`: the finished release's games came from the store
/// `key` names (checked before anything is played into another). A
/// finished release whose puzzles were not generated at all would come out
/// differently too: refused here, before the first game, not after a
/// minute of play when its release stage is checked.
fn check_kept_store(ctx: &RunContext, key: &str) -> Result<()> {
    let dir = ctx.stage_dir(StageName::Selfplay);
    let recorded = StageManifest::previous(&dir)
        .and_then(|previous| crate::generate::recorded_store(&previous.fingerprint.config));
    let Some(recorded) = recorded else {
        return Err(kept_error(
            ctx,
            &format!(
                "it would now come out differently (its puzzles were not generated, and \
                 [generate] is on: these settings generate into {key}); make a new release \
                 with `--release NEW`"
            ),
        ));
    };
    if recorded != key {
        // As JSON (quoted), as the message always named it.
        let recorded = Value::String(recorded);
        return Err(kept_error(
            ctx,
            &format!(
                "it would now come out differently (its games came from the store {recorded}, these settings generate into {key})"
            ),
        ));
    }
    Ok(())
}

fn kept_error(ctx: &RunContext, why: &str) -> anyhow::Error {
    bad_input(format!(
        "{} is a finished release and never changes, but {why}; nothing was written. Rerun with --rewrite-release to replace its puzzles",
        ctx.stage_dir(StageName::Release).display()
    ))
}

/// What differs between two fingerprints, for messages.
fn fingerprint_changes(before: &Fingerprint, now: &Fingerprint) -> String {
    let mut changes = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        before.inputs.keys().chain(now.inputs.keys()).collect();
    for name in names {
        match (before.inputs.get(name), now.inputs.get(name)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(_), Some(_)) => changes.push(format!("input {name} changed")),
            (None, _) => changes.push(format!("new input {name}")),
            (_, None) => changes.push(format!("input {name} is gone")),
        }
    }
    if before.config != now.config {
        changes.push("its settings changed".to_string());
    }
    let build = |print: &Fingerprint| {
        print
            .engine
            .as_ref()
            .map(|e| (e.sha256.clone(), e.options.clone()))
    };
    if build(before) != build(now) {
        changes.push("its engine changed".to_string());
    }
    if before.algorithm != now.algorithm {
        changes.push(format!(
            "recorded algorithm {}, this build {}",
            match before.algorithm.as_str() {
                "" => "none",
                other => other,
            },
            now.algorithm
        ));
    }
    if before.tool_version != now.tool_version {
        changes.push(format!(
            "puzzleforge {} wrote it, this is {}",
            before.tool_version, now.tool_version
        ));
    }
    if changes.is_empty() {
        changes.push("its fingerprint changed".to_string());
    }
    changes.join("; ")
}

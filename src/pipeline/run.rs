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
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::fileio::{left_by_dead_process, sha256_file};
use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::engine::pool::PoolConfig;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::generate::{CellReport, GenerateSummary, Generated, Mode, prepare};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::generated_adapters::on_generated_route;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::manifest::{
    EnginePath, Fingerprint, StageManifest, Standing, commit_stage_dir, fingerprint, fresh_scratch,
    manifest_seconds, output_hashes,
};
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::{BeforeWork, RunContext, RunEngine, Stage, StageFolder};
use crate::stages::StageName;
use crate::stages::release::cells::{cell_label, first_of};
use crate::stages::release::folder::holding_folder;
use crate::stages::release::manifest::{MANIFEST_FILE, ReleaseManifest, UnfilledCell};

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
    let tier = tier.as_deref();
    config.validate(&args.config, tier)?;
    let release = release_name(args, &config)?;
    let seeds = RunSeeds::of(&config.pipeline, &release);
    let mut stages = crate::pipeline::adapters::configured(&config, &seeds, &args.config)?;
    let mut left_for_merge = Vec::new();
    if args.shard.is_some() {
        let (sharded, rest) = split_sharded(stages, &args.config)?;
        stages = sharded;
        left_for_merge = rest.iter().map(|s| s.name()).collect();
    }
    let engine = resolve_engine(&config.engine, args.engine.clone(), &stages)?;
    check_engines(
        &config,
        &args.config,
        args.engine.is_some(),
        engine.as_ref(),
        &stages,
    )?;
    let release_dir = match &args.shard {
        Some(shard) => config.pipeline.output_dir.join(shard.folder_name(&release)),
        None => config.pipeline.output_dir.join(&release),
    };
    if args.plan.plan {
        let mut summary = run_plan(args, &config, &stages, release_dir, tier)?;
        if planned_off {
            summary.human.push_str(&format!(
                "  [generate] is off in {}: planned as if on; set `[generate] enabled = true` \
                 there to generate\n",
                args.config.display()
            ));
        }
        return Ok(summary);
    }
    refuse_linked_release(&release_dir)?;
    std::fs::create_dir_all(&release_dir)
        .with_context(|| format!("creating {}", release_dir.display()))?;
    let _lock = ReleaseLock::acquire(&release_dir)?;
    remove_leftovers(&release_dir)?;

    let mut ctx = RunContext {
        release_dir: release_dir.clone(),
        engine,
        tier: config.generate.release_tier(tier),
        shard: args.shard,
        config_dir: config_dir(&args.config),
        invocation: Some(crate::pipeline::stage::Invocation {
            config_path: args.config.clone(),
            config_text: text.to_string(),
            release: release.clone(),
            tier_flag: args.tier.clone(),
            engine_flag: args.engine.is_some(),
        }),
        keep_stored_work: args.keep_stored_work,
        kept_work: Vec::new(),
    };
    // Under `[generate]` the games are played in batches first, and the
    // self-play chain's stages are those of the generated route, holding
    // them.
    let generated = if config.generate.enabled {
        let generated = Rc::new(prepare_generation(args, &config, &ctx, &stages, tier)?);
        if args.keep_stored_work {
            let mut sections = config.generate_sections();
            sections.keep_stored_work = true;
            ctx.kept_work.extend(crate::generate::kept_stores(
                &sections,
                ctx.generate_engine()?,
                tier,
            )?);
        }
        stages = on_generated_route(stages, &config, &seeds, &generated)?;
        Some(generated)
    } else {
        None
    };
    let generated = generated.as_deref();
    if args.strict && generated.is_none() && !stages.iter().any(|s| s.name() == StageName::Release)
    {
        return Err(bad_input(format!(
            "run --strict checks the release's cells, but {} has no release stage in pipeline.stages (and [generate] is off)",
            args.config.display()
        )));
    }
    let redo = Redo {
        force: args.force,
        rewrite_release: args.rewrite_release,
    };
    let (mut human, report) = match run_stages(&mut ctx, &stages, redo) {
        Ok(done) => done,
        Err(error) => return generation_fell_short(&ctx, generated, &release, error),
    };
    let eval_line = eval_result_line(&report);
    let mut record = RunSummary {
        release: release.clone(),
        release_dir,
        stages: Some(report),
        generate: None,
        error: None,
        shard: None,
        left_for_merge: None,
        strict: None,
    };
    if let Some(generated) = generated {
        human.push_str(&generated.human());
        record.generate = Some(generated.summary());
    }
    if let Some(shard) = &args.shard {
        human.push_str(&shard_line(shard, &left_for_merge));
        record.shard = Some(*shard);
        record.left_for_merge = Some(left_for_merge);
    }
    human.push_str(&what_it_made(&ctx, generated, &release, args)?);
    human.push_str(&eval_line);
    let mut shortfall = None;
    if args.strict {
        let (error, strict) = strict_shortfall(&ctx, generated)?;
        shortfall = error;
        record.strict = Some(strict);
    }
    let mut summary = Summary::new(human, serde_json::to_value(&record)?);
    summary.shortfall = shortfall;
    Ok(summary)
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

/// The `run` summary (`run --json`): the release, each stage's report,
/// and as they apply the generation, the error a generation that fell
/// short ended with, the shard and `--strict`'s cells (absent keys where
/// they do not apply).
#[serde_with::skip_serializing_none]
#[derive(Serialize, Debug)]
struct RunSummary<'a> {
    release: String,
    release_dir: PathBuf,
    stages: Option<Vec<StageReport>>,
    generate: Option<GenerateSummary<'a>>,
    error: Option<String>,
    shard: Option<Shard>,
    left_for_merge: Option<Vec<StageName>>,
    strict: Option<StrictRecord>,
}

/// One stage's entry in `stages` of the `run` summary (and of `merge`'s).
#[derive(Serialize, Debug)]
pub(crate) struct StageReport {
    pub stage: StageName,
    pub skipped: bool,
    /// Wall seconds (under `[generate]`, with the stage's share of the
    /// generation's).
    pub seconds: f64,
    /// The stage's own counts.
    pub counts: Value,
    /// Why a stage with stored outputs was redone or kept, when the
    /// algorithm version decided it ("mine: redone, recorded algorithm
    /// mine-1, this build mine-2").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `strict` in the `run --strict` summary: the target's cells and its
/// unfilled ones.
#[derive(Serialize, Debug)]
struct StrictRecord {
    cells: usize,
    unfilled: UnfilledCells,
}

/// The unfilled cells `--strict` lists: `[generate]`'s (generated puzzles
/// only) or the release manifest's.
#[derive(Serialize, Debug)]
#[serde(untagged)]
enum UnfilledCells {
    Generated(Vec<CellReport>),
    Release(Vec<UnfilledCell>),
}

/// The run's last lines: what it made, the cells it left unfilled, and
/// the next command to fill them (nothing when no release was drawn);
/// `generated`: the generation, under `[generate]`.
fn what_it_made(
    ctx: &RunContext,
    generated: Option<&Generated>,
    release: &str,
    args: &RunArgs,
) -> Result<String> {
    let config_path = args.config.as_path();
    let dir = ctx.stage_dir(StageName::Release);
    let Some(manifest) = ReleaseManifest::load(&dir)? else {
        return Ok(String::new());
    };
    let counts = &manifest.counts;
    let mut text = format!(
        "made: {} train + {} test puzzles in {} (its card: {}), {} of {} cells filled\n",
        counts.train,
        counts.test,
        dir.display(),
        dir.join("README.md").display(),
        counts.cells - counts.unfilled_cells,
        counts.cells,
    );
    if manifest.unfilled.is_empty() {
        return Ok(text);
    }
    let labels: Vec<String> = manifest
        .unfilled
        .iter()
        .map(|c| cell_label(&c.rating_bin, c.length, c.mate))
        .collect();
    text.push_str(&format!(
        "unfilled: {} cells ({}; manifest.json's \"unfilled\" lists them all)\n",
        labels.len(),
        first_of(&labels, 3).join(", ")
    ));
    let config = hint_flags(args);
    // This release is finished and never changes: more puzzles go into a
    // new one, named here so that the commands run as written.
    let next = match generated {
        Some(generated) if generated.stop_is_budget() => format!(
            "next: raise [generate] max_games or max_cpu_hours in {} (the cost above says how far) and run `puzzleforge run{config} --release {}`: it reuses the games already played ({release} is finished and never changes)",
            config_path.display(),
            fresh_release_name(ctx, &format!("{release}-next")),
        ),
        Some(_) => format!(
            "next: `puzzleforge run{config} --plan --release {}` projects what a new release of the target costs, reusing the games already played",
            fresh_release_name(ctx, &format!("{release}-next")),
        ),
        None => {
            let fresh = fresh_release_name(ctx, &format!("{release}-generated"));
            // The candidates the sources held for the target's cells, and
            // the puzzles those cells want.
            let available: usize = manifest.cells.iter().map(|c| c.available).sum();
            let wanted: usize = manifest
                .cells
                .iter()
                .map(|c| c.wanted_train + c.wanted_test)
                .sum();
            if manifest.aim.is_some() {
                // An aimed tier is a narrow band: what limits it is how few
                // of the sources' puzzles fall inside it, said plainly.
                text.push_str(&format!(
                    "the pool is the limit: {available} candidate puzzle{} in the aimed band, cells need {wanted}; add puzzle sources or turn on generation\n",
                    if available == 1 { "" } else { "s" }
                ));
            }
            let limit = if available == 0 {
                format!(
                    "the puzzle sources are the limit: they hold no puzzle for any of the {} cells",
                    counts.cells
                )
            } else {
                "the puzzle sources hold too few puzzles for them".to_string()
            };
            format!(
                "next: {limit}: point [sources] puzzles in {path} at the full Lichess dump (lichess_db_puzzle.csv.zst), or generate them into a new release: see the cost with `puzzleforge run{config} --plan --release {fresh}`, then set [generate] enabled = true in {path} and run `puzzleforge run{config} --release {fresh}` (leave ingest_puzzles and ingest_games out of pipeline.stages for an all-generated release)",
                path = config_path.display()
            )
        }
    };
    text.push_str(&next);
    text.push('\n');
    Ok(text)
}

/// The flags of `run` that a hint's command repeats: the config (when it
/// is not the default) and the flags that chose the tier, so that the
/// command plans (or makes) the same tier from the same config.
fn hint_flags(args: &RunArgs) -> String {
    let mut flags = match args.config.to_str() {
        Some(crate::pipeline::config::DEFAULT_CONFIG) => String::new(),
        _ => format!(" --config {}", args.config.display()),
    };
    if let Some(tier) = &args.tier {
        flags.push_str(&format!(" --tier {tier}"));
    }
    if let (Some(aim), Some(rate)) = (&args.aim.aim, args.aim.solve_rate) {
        flags.push_str(&format!(" --aim {} --solve-rate {rate}", aim.display()));
    }
    flags
}

/// The eval's result in one plain line (`eval: puzzle accuracy 60.2% ±
/// 2.1% (n=480 puzzles)`), read off the eval stage's counts; nothing when
/// the run has no eval stage or its counts lack the accuracy.
fn eval_result_line(report: &[StageReport]) -> String {
    let Some(counts) = report
        .iter()
        .find(|r| r.stage == StageName::Eval)
        .map(|r| &r.counts)
    else {
        return String::new();
    };
    let (Some(accuracy), Some(puzzles)) = (
        counts["puzzle_accuracy"].as_f64(),
        counts["puzzles"].as_u64(),
    ) else {
        return String::new();
    };
    let se = counts["puzzle_accuracy_se"]
        .as_f64()
        .map(|se| format!(" ± {:.1}%", se * 100.0))
        .unwrap_or_default();
    format!(
        "eval: puzzle accuracy {:.1}%{se} (n={puzzles} puzzles)\n",
        accuracy * 100.0
    )
}

/// A release name beside the release folder that no folder of the output
/// folder holds yet: `base`, else `base-2`, `base-3`, ...
fn fresh_release_name(ctx: &RunContext, base: &str) -> String {
    let output_dir = holding_folder(&ctx.release_dir);
    let base = base.to_string();
    (1..)
        .map(|n| match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        })
        .find(|name| std::fs::symlink_metadata(output_dir.join(name)).is_err())
        .unwrap_or(base)
}

/// A stage refused what generation made (too few puzzles for the
/// release, say): the games were played and paid for, so the run still
/// prints the generation summary (games, CPU, the cells unfilled and what
/// they would cost) before the error, and exits 2 as the error does. Any
/// other failure, or one without generation, is returned as it is.
fn generation_fell_short(
    ctx: &RunContext,
    generated: Option<&Generated>,
    release: &str,
    error: anyhow::Error,
) -> Result<Summary> {
    let Some(generated) = generated
        .filter(|_| crate::core::error::exit_code(&error) == crate::core::error::EXIT_BAD_INPUT)
    else {
        return Err(error);
    };
    let human = format!(
        "release {}\n{}",
        ctx.release_dir.display(),
        generated.human()
    );
    let record = RunSummary {
        release: release.to_string(),
        release_dir: ctx.release_dir.clone(),
        stages: None,
        generate: Some(generated.summary()),
        error: Some(format!("{error:#}")),
        shard: None,
        left_for_merge: None,
        strict: None,
    };
    let mut summary = Summary::new(human, serde_json::to_value(&record)?);
    summary.shortfall = Some(format!("{error:#}"));
    Ok(summary)
}

/// `run --plan`: samples and projects instead of running the stages (no
/// release folder is written).
fn run_plan(
    args: &RunArgs,
    config: &PipelineConfig,
    stages: &[Box<dyn Stage>],
    release_dir: PathBuf,
    tier: Option<&str>,
) -> Result<Summary> {
    let ctx = RunContext {
        release_dir,
        engine: resolve_engine(&config.engine, args.engine.clone(), stages)?,
        tier: config.generate.release_tier(tier),
        shard: None,
        config_dir: config_dir(&args.config),
        invocation: None,
        keep_stored_work: false,
        kept_work: Vec::new(),
    };
    let command = format!("puzzleforge run{}", hint_flags(args));
    let earlier = crate::pipeline::adapters::earlier_releases(&ctx)?;
    crate::generate::plan::run_plan(
        &args.plan,
        &config.generate_sections(),
        ctx.generate_engine()?,
        &earlier,
        &ctx.release_dir,
        tier,
        &command,
    )
}

/// A shard's line of the summary: the stages it leaves for `merge`.
fn shard_line(shard: &Shard, left_for_merge: &[StageName]) -> String {
    format!(
        "  shard {}/{}: {} left for `puzzleforge merge`\n",
        shard.index,
        shard.count,
        if left_for_merge.is_empty() {
            "no stage".to_string()
        } else {
            StageName::list(left_for_merge.iter().copied())
        }
    )
}

/// `run --strict`: the target's cells and its unfilled ones, recorded in
/// the summary's `strict`, and the error naming the unfilled cells when
/// there are any. The target is `[generate]`'s (generated puzzles only)
/// when generation ran, else the release's `[release]` cells, read from
/// the release's manifest. `generated`: the generation, under
/// `[generate]`.
fn strict_shortfall(
    ctx: &RunContext,
    generated: Option<&Generated>,
) -> Result<(Option<String>, StrictRecord)> {
    // Each unfilled cell's label, the puzzles drawn for it and the puzzles
    // found (generated) for it.
    let (cells, unfilled, found_key) = match generated {
        Some(generated) => (
            generated.report.counts.cells,
            UnfilledCells::Generated(generated.report.counts.unfilled.clone()),
            "generated",
        ),
        None => {
            let dir = ctx.stage_dir(StageName::Release);
            let manifest = ReleaseManifest::load(&dir)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "run --strict: {} holds no release manifest",
                    dir.join(MANIFEST_FILE).display()
                )
            })?;
            (
                manifest.counts.cells,
                UnfilledCells::Release(manifest.unfilled),
                "found",
            )
        }
    };
    let labels: Vec<String> = match &unfilled {
        UnfilledCells::Generated(unfilled) => unfilled
            .iter()
            .map(|cell| {
                let label = cell_label(&cell.rating_bin, cell.length, cell.mate);
                let wanted = cell.wanted.train + cell.wanted.test;
                (label, cell.train + cell.test, wanted, cell.generated)
            })
            .collect::<Vec<_>>(),
        UnfilledCells::Release(unfilled) => unfilled
            .iter()
            .map(|cell| {
                let label = cell_label(&cell.rating_bin, cell.length, cell.mate);
                (label, cell.train + cell.test, cell.wanted, cell.found)
            })
            .collect(),
    }
    .into_iter()
    .map(|(label, drawn, wanted, found)| {
        format!("{label}: {drawn} of {wanted} drawn ({found} {found_key})")
    })
    .collect();
    let strict = StrictRecord { cells, unfilled };
    if labels.is_empty() {
        return Ok((None, strict));
    }
    let error = format!(
        "run --strict: {} of {} target cells unfilled: {}; the run's files are written in {}",
        labels.len(),
        strict.cells,
        first_of(&labels, 10).join("; "),
        ctx.release_dir.display()
    );
    Ok((Some(error), strict))
}

/// Removes what killed or failed runs left in a release folder: stage
/// scratch folders (`.NAME.partial`) and temporary files (`.NAME.tmp-PID`)
/// of processes that are gone. Called with the lock held, so no live run
/// of this release owns a scratch folder; a live process's temporary file
/// is left alone.
pub(crate) fn remove_leftovers(release_dir: &Path) -> Result<()> {
    let mut pending = vec![release_dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && name.starts_with('.') && name.ends_with(".partial") {
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("removing leftover {}", path.display()))?;
            } else if is_dir {
                pending.push(path);
            } else if name.starts_with('.') && left_by_dead_process(&name, ".tmp-") {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing leftover {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Refuses a release folder that is a symbolic link (a run would write
/// through it, and later releases, which read no release through a link,
/// would refuse it) or that holds a `release`'s release (no run writes into
/// a finished release).
pub(crate) fn refuse_linked_release(release_dir: &Path) -> Result<()> {
    if std::fs::symlink_metadata(release_dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad_input(format!(
            "{} is a symbolic link: a release folder must be a folder of the output folder \
             (later releases read no release through a link). Remove the link, or move the \
             folder it points at there in its place",
            release_dir.display()
        )));
    }
    if crate::stages::release::folder::ReleaseFolder::at(release_dir).looks_like_release() {
        return Err(bad_input(format!(
            "{} holds a finished release written by `release`; a finished release never changes. \
             Make a new release with `puzzleforge run --release NEW`",
            release_dir.display()
        )));
    }
    Ok(())
}

/// The folder of the config file `path` (empty for one in the working
/// directory).
pub(crate) fn config_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
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

/// A release's folder name as `run` and `merge` accept it: a plain folder
/// name that later releases find and exclude (they skip hidden folders,
/// shard folders and `target`), and none of the names the output folder
/// uses for itself (its registry `releases.sha256`; `.releases.lock`,
/// `.generate` and `.eval-cache` are hidden, so refused already).
pub(crate) fn check_release_name(release: &str) -> Result<()> {
    if release.is_empty() || release.contains(['/', '\\']) || release.starts_with('.') {
        return Err(bad_input(format!(
            "release name {release:?} must be a plain folder name"
        )));
    }
    // A line break, a tab or a bidirectional override would make the name
    // read as another in a listing, a log line or a manifest.
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if let Some(c) = release.chars().find(|c| hidden(*c)) {
        return Err(bad_input(format!(
            "release name {release:?} holds the character {:?} (U+{:04X}), which would make it \
             read as another name in listings and logs; use letters, digits, `-` and `_`",
            c,
            u32::from(c)
        )));
    }
    if release == crate::stages::release::folder::RELEASES_REGISTRY {
        return Err(bad_input(format!(
            "release name {release:?} is refused: it is the name of the output folder's own \
             registry of releases (the file beside the releases that records their manifests), \
             so the release folder and the registry would collide; choose another name"
        )));
    }
    if crate::core::shard::is_shard_folder_name(release) || release == "target" {
        return Err(bad_input(format!(
            "release name {release:?} is refused: later releases would not exclude its puzzles \
             (they skip folders named like a shard folder, NAME.shard-I-of-N, and `target`)"
        )));
    }
    Ok(())
}

/// Whether `release_dir` holds a finished release (its release stage
/// committed).
pub(crate) fn release_is_finished(release_dir: &Path) -> bool {
    crate::stages::release::folder::run_release_is_finished(release_dir)
}

/// Starts every engine the run uses once (the `uci` handshake), before the
/// first stage: a path that is no engine is an error (exit 2) naming its
/// config key, not a failure hours later when its stage comes.
pub(crate) fn check_engines<'a>(
    config: &PipelineConfig,
    config_path: &Path,
    engine_flag: bool,
    engine: Option<&RunEngine>,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<()> {
    use crate::engine::process::Engine;
    let handshake = |spec: &crate::engine::process::EngineSpec, pool: &PoolConfig| {
        Engine::start_with_handshake(spec, pool.handshake_deadline, pool.deadline)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let mut pool = PoolConfig::default();
    if let Some(engine) = engine {
        pool = engine.pool.clone();
        if let Err(why) = handshake(&engine.spec, &pool) {
            return Err(if engine_flag {
                bad_input(format!("--engine: {why}"))
            } else {
                crate::pipeline::config::key_error(config_path, "engine", "path", &why)
            });
        }
    }
    let verifies =
        config.generate.enabled || stages.into_iter().any(|s| s.name() == StageName::Verify);
    if let Some(second) = config.verify.second_engine.as_ref().filter(|_| verifies) {
        let checked = second
            .spec()
            .map_err(|e| format!("{e:#}"))
            .and_then(|spec| handshake(&spec, &pool));
        if let Err(why) = checked {
            return Err(crate::pipeline::config::key_error(
                config_path,
                "verify.second_engine",
                "path",
                &why,
            ));
        }
    }
    Ok(())
}

/// Stages in run order.
pub(crate) type Stages = Vec<Box<dyn Stage>>;

/// Splits the configured stages into those a shard runs (ingest, selfplay,
/// mine, rate) and those left for `merge`; a sliced stage after one left
/// for merge cannot be sliced.
pub(crate) fn split_sharded(stages: Stages, config_path: &Path) -> Result<(Stages, Stages)> {
    let mut sharded = Vec::new();
    let mut rest: Stages = Vec::new();
    for stage in stages {
        if stage.name().is_sharded() {
            if let Some(before) = rest.first() {
                return Err(bad_input(format!(
                    "{}: pipeline.stages puts {} after {}; sharded runs need {} first",
                    config_path.display(),
                    stage.name(),
                    before.name(),
                    StageName::list(StageName::ALL.into_iter().filter(|s| s.is_sharded()))
                )));
            }
            sharded.push(stage);
        } else {
            rest.push(stage);
        }
    }
    Ok((sharded, rest))
}

/// The engine of a run, when one of `stages` uses it: the `[engine]`
/// section (its path resolved when the config was loaded) under the
/// `--engine` flag.
pub(crate) fn resolve_engine<'a>(
    section: &EngineConfig,
    engine_flag: Option<PathBuf>,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<Option<RunEngine>> {
    if !stages.into_iter().any(|s| s.uses_engine()) {
        return Ok(None);
    }
    let flags = EngineArgs {
        engine: engine_flag,
        ..EngineArgs::default()
    };
    let (spec, pool) = flags.resolve(section)?;
    let sha256 = sha256_file(&spec.path)?;
    Ok(Some(RunEngine { spec, pool, sha256 }))
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
        // When the stage ended (or was found unchanged), in the summary
        // line too: the summary comes at the end of a cron log, and says
        // when each of its stages finished. Only the log holds times; no
        // release file does.
        let ended = crate::core::progress::timestamp(std::time::SystemTime::now());
        let counts = compact_counts(&outcome.counts);
        if !outcome.skipped {
            crate::core::progress::note(&format!(
                "stage {}: done in {:.1}s{}{counts}",
                stage.name(),
                outcome.seconds,
                if counts.is_empty() { "" } else { ", " },
            ));
        }
        human.push_str(&format!(
            "  {:<16} {:<8} {:>8.1}s  {ended}  {counts}\n",
            stage.name(),
            if outcome.skipped { "skipped" } else { "done" },
            outcome.seconds,
        ));
        if let Some(why) = &outcome.why {
            human.push_str(&format!("    {why}\n"));
        }
        report.push(StageReport {
            stage: stage.name(),
            skipped: outcome.skipped,
            seconds: outcome.seconds,
            counts: outcome.counts,
            why: outcome.why,
        });
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
    stage.after_commit(ctx, &folder.committed)?;
    Ok(StageOutcome {
        skipped: false,
        seconds,
        counts,
        why,
    })
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

fn compact_counts(counts: &Value) -> String {
    // Counts as they are; fractions (an accuracy, CPU-hours) to 4
    // significant digits, as people read them.
    let figure = |value: &Value| match (value.as_i64(), value.as_u64(), value.as_f64()) {
        (None, None, Some(x)) => crate::generate::cost::round(x).to_string(),
        _ => value.to_string(),
    };
    match counts.as_object() {
        Some(map) => map
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, v)| format!("{k}={}", figure(v)))
            .collect::<Vec<_>>()
            .join(" "),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A stage's counts read short: whole counts as they are, fractions
    /// to 4 significant digits.
    #[test]
    fn stage_counts_are_rounded_for_people() {
        let counts = json!({"puzzles": 201, "puzzle_accuracy": 0.9651741293532339, "note": "x"});
        assert_eq!(
            compact_counts(&counts),
            "puzzles=201 puzzle_accuracy=0.9652"
        );
    }
}

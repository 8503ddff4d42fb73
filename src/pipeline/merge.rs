//! `run --shard I/N` and `puzzleforge merge`: the expensive stages of one
//! release spread over N machines, merged into the bytes of a single run.
//!
//! A shard runs the sliced stages ([`StageName::is_sharded`]) into
//! `<output_dir>/<release>.shard-I-of-N/`. Slices are contiguous: shard I
//! of N takes items `[I*T/N, (I+1)*T/N)` of T, so the shards' outputs
//! concatenated in shard order are in the order of a single run.
//!
//! - `ingest_puzzles`, `ingest_games`: cheap and deterministic, run whole
//!   by every shard; merge checks that all shards agree and takes them.
//! - `selfplay`, `mine`, `rate`: each merged by its step's rule, beside the
//!   step in [`crate::generate::chain`]: a shard plays its slice of the
//!   game numbers and the games are concatenated; a shard mines the games
//!   it played and its slice of the Lichess candidates, and the mined rows
//!   are concatenated with repeated positions dropped again; the rated rows
//!   of the puzzles the mine merge kept are kept. This file finds the
//!   shards' files and records what merging did.
//!
//! Merge then writes each of these stages with the `stage.json` fingerprint
//! `run` would compute for the merged release (a later `run` skips them),
//! and runs the remaining configured stages (release, export, eval) through
//! the normal run machinery.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::generate::chain::{KeptByShard, MineStep, RateStep, SelfplayStep};
use crate::generate::{Generated, Mode, prepare, recorded_store};
use crate::pipeline::closing::StageReport;
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::generated_adapters::on_generated_route;
use crate::pipeline::manifest::{
    EnginePath, Fingerprint, MANIFEST, StageManifest, Standing, commit_stage_dir, fingerprint,
    fresh_scratch, manifest_seconds, output_hashes,
};
use crate::pipeline::run::{Redo, release_is_finished, run_stages};
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::session::{self, Opening, Session, check_release_name};
use crate::pipeline::stage::{Invocation, RunContext, Stage, Stages};
use crate::stages::StageName;

/// `puzzleforge merge`'s flags (their help: `cli::merge`).
#[derive(Debug, Clone)]
pub struct MergeArgs {
    pub shards: Vec<PathBuf>,
    pub output: PathBuf,
    pub config: PathBuf,
    pub engine: Option<PathBuf>,
    pub tier: Option<String>,
    pub force: bool,
}

/// One shard folder and the `stage.json` of each sliced stage.
struct ShardDir {
    dir: PathBuf,
    shard: Shard,
    manifests: BTreeMap<StageName, StageManifest>,
}

impl ShardDir {
    /// Opens a shard folder: every sliced stage's manifest read, from one
    /// shard, its outputs intact, and the files it read outside its folder
    /// (sources, the generation store's batches; named relative to
    /// `config_dir` when under it) unchanged since.
    fn open(dir: &Path, stages: &[StageName], config_dir: &Path) -> Result<ShardDir> {
        let mut manifests = BTreeMap::new();
        let mut shard: Option<Shard> = None;
        for &stage in stages {
            let path = dir.join(stage.as_str()).join(MANIFEST);
            if !path.is_file() {
                return Err(bad_input(format!(
                    "{} is not a complete shard folder: no {}; run `puzzleforge run --shard I/N` to finish it",
                    dir.display(),
                    path.display()
                )));
            }
            let manifest = StageManifest::load(&path)?;
            let this = manifest.shard.ok_or_else(|| {
                bad_input(format!(
                    "{}: no \"shard\" record: {} was not written by `run --shard`",
                    path.display(),
                    dir.display()
                ))
            })?;
            if shard.is_some_and(|s| s != this) {
                return Err(bad_input(format!(
                    "{}: stages of different shards in one folder ({} says {}/{})",
                    dir.display(),
                    path.display(),
                    this.index,
                    this.count
                )));
            }
            shard = Some(this);
            let rerun = format!("`puzzleforge run --shard {}/{}`", this.index, this.count);
            let stage_dir = dir.join(stage.as_str());
            if let Some((file, _)) = manifest
                .outputs
                .iter()
                .find(|(file, sha)| !same_sha(&stage_dir.join(file), sha))
            {
                return Err(bad_input(format!(
                    "{}: changed or missing since the shard wrote it (its sha256 is in {}); rerun the shard: {rerun}",
                    stage_dir.join(file).display(),
                    path.display()
                )));
            }
            for (name, sha) in &manifest.fingerprint.inputs {
                let file = match Path::new(name) {
                    inside if dir.join(inside).is_file() => dir.join(inside),
                    relative if relative.is_relative() => config_dir.join(relative),
                    absolute => absolute.to_path_buf(),
                };
                if !same_sha(&file, sha) {
                    let batch = file.parent().filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("batch-"))
                    });
                    let fix = match batch {
                        Some(batch) => format!(
                            "remove {} (a batch of the generation store) and rerun the shard: {rerun}",
                            batch.display()
                        ),
                        None => format!("rerun the shard: {rerun}"),
                    };
                    return Err(bad_input(format!(
                        "{}: changed or missing since shard {}/{} read it (its sha256 is in {}); {fix}",
                        file.display(),
                        this.index,
                        this.count,
                        path.display()
                    )));
                }
            }
            manifests.insert(stage, manifest);
        }
        let shard = shard.ok_or_else(|| bad_input("pipeline.stages has no stage to merge"))?;
        Ok(ShardDir {
            dir: dir.to_path_buf(),
            shard,
            manifests,
        })
    }

    fn manifest(&self, stage: StageName) -> Result<&StageManifest> {
        // Every sliced stage's manifest was read when the folder was opened.
        self.manifests
            .get(&stage)
            .ok_or_else(|| anyhow::anyhow!("{}: {stage} was not opened", self.dir.display()))
    }

    fn outputs(&self, stage: StageName) -> Result<&BTreeMap<String, String>> {
        Ok(&self.manifest(stage)?.outputs)
    }

    fn file(&self, stage: StageName, name: &str) -> PathBuf {
        self.dir.join(stage.as_str()).join(name)
    }
}

/// `value` as JSON text (a string quoted, none as `null`), as the merge
/// errors have always named shas, options and stores.
fn as_json<T: Serialize>(value: &T) -> String {
    // The values named (strings, string maps, options of them) always
    // serialize; the placeholder only keeps the error message whole.
    serde_json::to_string(value).unwrap_or_else(|_| "?".to_string())
}

/// Whether `path` is a readable file with the sha256 `sha`.
fn same_sha(path: &Path, sha: &str) -> bool {
    sha256_file(path).is_ok_and(|actual| actual == sha)
}

/// Orders the shards by index after checking they are one N, each index
/// exactly once.
fn check_cover(mut shards: Vec<ShardDir>) -> Result<Vec<ShardDir>> {
    let count = shards[0].shard.count;
    if let Some(other) = shards.iter().find(|s| s.shard.count != count) {
        return Err(bad_input(format!(
            "shards of different counts: {} is shard {}/{}, {} is shard {}/{}",
            shards[0].dir.display(),
            shards[0].shard.index,
            count,
            other.dir.display(),
            other.shard.index,
            other.shard.count
        )));
    }
    shards.sort_by_key(|s| s.shard.index);
    for pair in shards.windows(2) {
        if pair[0].shard.index == pair[1].shard.index {
            return Err(bad_input(format!(
                "shard {}/{count} given twice: {} and {}",
                pair[0].shard.index,
                pair[0].dir.display(),
                pair[1].dir.display()
            )));
        }
    }
    let present: HashSet<u64> = shards.iter().map(|s| s.shard.index).collect();
    let missing: Vec<String> = (0..count)
        .filter(|i| !present.contains(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(bad_input(format!(
            "missing shard(s) {}: merge needs all {count} shards",
            missing.join(", ")
        )));
    }
    Ok(shards)
}

/// Checks that every shard ran `stage` with the config, tool version,
/// algorithm version and engine this merge would run it with.
fn check_same_run(stage: StageName, expected: &Fingerprint, shards: &[ShardDir]) -> Result<()> {
    for shard in shards {
        let print = &shard.manifest(stage)?.fingerprint;
        if print.config != expected.config {
            return Err(bad_input(format!(
                "{}: stage {stage} ran with another config than this merge's (shard: {}, merge: {}); merge with the shards' pipeline.toml or rerun them",
                shard.dir.display(),
                print.config,
                expected.config
            )));
        }
        if print.tool_version != expected.tool_version {
            return Err(bad_input(format!(
                "{}: stage {stage} was written by puzzleforge {:?}, this is {:?}",
                shard.dir.display(),
                print.tool_version,
                expected.tool_version
            )));
        }
        // Shards of other algorithms would mix their rules in one release.
        if print.algorithm != expected.algorithm {
            return Err(bad_input(format!(
                "{}: stage {stage} ran under algorithm {:?}, this build's is {:?}; rerun the shard with this build",
                shard.dir.display(),
                print.algorithm,
                expected.algorithm
            )));
        }
        // The engine's path may differ between machines; its build and
        // options may not.
        let theirs = print.engine.as_ref();
        let ours = expected.engine.as_ref();
        if theirs.map(|e| &e.sha256) != ours.map(|e| &e.sha256) {
            return Err(bad_input(format!(
                "{}: stage {stage} ran with another engine (sha256 {}, merge has {})",
                shard.dir.display(),
                as_json(&theirs.map(|e| &e.sha256)),
                as_json(&ours.map(|e| &e.sha256))
            )));
        }
        if theirs.map(|e| &e.options) != ours.map(|e| &e.options) {
            return Err(bad_input(format!(
                "{}: stage {stage} ran with another engine (options {}, merge has {})",
                shard.dir.display(),
                as_json(&theirs.map(|e| &e.options)),
                as_json(&ours.map(|e| &e.options))
            )));
        }
    }
    Ok(())
}

/// Per mined file name, per shard (in shard order), the rows the mine merge
/// kept; the rate merge keeps the same puzzles.
type KeptRows = BTreeMap<String, KeptByShard>;

fn same_output_names(stage: StageName, shards: &[ShardDir]) -> Result<Vec<String>> {
    let names: Vec<String> = shards[0].outputs(stage)?.keys().cloned().collect();
    for shard in &shards[1..] {
        let theirs: Vec<String> = shard.outputs(stage)?.keys().cloned().collect();
        if theirs != names {
            return Err(bad_input(format!(
                "{} and {}: stage {stage} wrote different files ({:?} and {:?})",
                shards[0].dir.display(),
                shard.dir.display(),
                names,
                theirs
            )));
        }
    }
    Ok(names)
}

/// A merged stage's `counts` in its `stage.json`: the shards merged and
/// what merging did to each output file.
#[derive(Serialize)]
struct MergedCounts {
    merged_shards: usize,
    files: BTreeMap<String, FileCounts>,
}

/// What merging did to one output file, by how the stage merges.
#[derive(Serialize)]
#[serde(untagged)]
enum FileCounts {
    /// An ingest output all shards agree on, taken from the first.
    Copied { copied_from_shard: usize },
    /// The self-play games, concatenated.
    Concatenated { bytes: usize },
    /// The mined puzzles: the shards' rows and the puzzles kept.
    Mined { shard_rows: usize, puzzles: u64 },
    /// The rated rows of the kept puzzles.
    Rated { puzzles: usize },
}

/// Writes the merged outputs of `stage` into `scratch`; returns counts.
fn merge_stage(
    stage: StageName,
    shards: &[ShardDir],
    scratch: &Path,
    kept: &mut KeptRows,
) -> Result<Value> {
    let mut counts = BTreeMap::new();
    for name in same_output_names(stage, shards)? {
        let target = scratch.join(&name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let file_counts = match stage {
            StageName::IngestPuzzles | StageName::IngestGames => {
                copy_agreed(stage, &name, shards, &target)?
            }
            StageName::Selfplay => concatenate(&name, shards, &target)?,
            StageName::Mine => merge_mined(&name, shards, &target, kept)?,
            StageName::Rate => merge_rated(&name, shards, &target, kept)?,
            other => return Err(anyhow::anyhow!("stage {other} cannot be merged")),
        };
        counts.insert(name, file_counts);
    }
    let counts = MergedCounts {
        merged_shards: shards.len(),
        files: counts,
    };
    Ok(serde_json::to_value(counts)?)
}

/// An ingest output: every shard ingested the same sources whole, so all
/// must agree; the first shard's copy is taken.
fn copy_agreed(
    stage: StageName,
    name: &str,
    shards: &[ShardDir],
    target: &Path,
) -> Result<FileCounts> {
    let first = shards[0].outputs(stage)?.get(name);
    for shard in &shards[1..] {
        let theirs = shard.outputs(stage)?.get(name);
        if theirs != first {
            return Err(bad_input(format!(
                "{} and {}: {stage}/{name} differ (sha256 {} and {}); every shard must ingest the same sources with the same config",
                shards[0].dir.display(),
                shard.dir.display(),
                as_json(&first),
                as_json(&theirs)
            )));
        }
    }
    std::fs::copy(shards[0].file(stage, name), target)
        .with_context(|| format!("copying {}", target.display()))?;
    Ok(FileCounts::Copied {
        copied_from_shard: 0,
    })
}

/// The shards' copies of `stage`'s output `name`, in shard order.
fn shard_files(stage: StageName, name: &str, shards: &[ShardDir]) -> Vec<PathBuf> {
    shards.iter().map(|shard| shard.file(stage, name)).collect()
}

/// The self-play games, by the step's merge rule
/// ([`SelfplayStep::merge_shards`]).
fn concatenate(name: &str, shards: &[ShardDir], target: &Path) -> Result<FileCounts> {
    let bytes =
        SelfplayStep::merge_shards(&shard_files(SelfplayStep::STAGE, name, shards), target)?;
    Ok(FileCounts::Concatenated { bytes })
}

/// The mined puzzles, by the step's merge rule
/// ([`MineStep::merge_shards`]); records which rows each shard kept.
fn merge_mined(
    name: &str,
    shards: &[ShardDir],
    target: &Path,
    kept: &mut KeptRows,
) -> Result<FileCounts> {
    let merged = MineStep::merge_shards(&shard_files(MineStep::STAGE, name, shards), target)?;
    kept.insert(name.to_string(), merged.kept);
    Ok(FileCounts::Mined {
        shard_rows: merged.shard_rows,
        puzzles: merged.puzzles,
    })
}

/// The rated rows of the puzzles the mine merge kept, by the step's merge
/// rule ([`RateStep::merge_shards`]).
fn merge_rated(
    name: &str,
    shards: &[ShardDir],
    target: &Path,
    kept: &KeptRows,
) -> Result<FileCounts> {
    let kept_rows = kept.get(name).ok_or_else(|| {
        bad_input(format!(
            "rate/{name} has no mine/{name} to follow: merge needs mine with rate"
        ))
    })?;
    let puzzles = RateStep::merge_shards(
        &shard_files(RateStep::STAGE, name, shards),
        kept_rows,
        target,
    )?;
    Ok(FileCounts::Rated { puzzles })
}

/// `puzzleforge merge`.
pub fn run_merge(args: &MergeArgs) -> Result<Summary> {
    let text = PipelineConfig::read_text(&args.config)?;
    let config = PipelineConfig::from_text(&text, &args.config)?;
    config.validate(&args.config, args.tier.as_deref())?;
    // The release's seeds, as `run --shard` played it.
    let release = args.output.file_name().and_then(|n| n.to_str());
    let seeds = RunSeeds::of(
        &config.pipeline,
        release.unwrap_or(&config.pipeline.release),
    );
    let (sliced, rest) = merge_plan(&config, &seeds, &args.config)?;
    check_release_dir(&args.output, &config.pipeline.output_dir, &args.config)?;
    let config_dir = session::config_dir(&args.config);
    let names: Vec<StageName> = sliced.iter().map(|s| s.name()).collect();
    let shards = args
        .shards
        .iter()
        .map(|dir| ShardDir::open(dir, &names, &config_dir))
        .collect::<Result<Vec<_>>>()?;
    let shards = check_cover(shards)?;
    let engine = session::checked_engine(
        &config,
        &args.config,
        args.engine.as_ref(),
        sliced.iter().chain(&rest),
    )?;
    let mut session = Session::open(Opening {
        config,
        seeds,
        stages: rest,
        engine,
        release_dir: args.output.clone(),
        tier: args.tier.as_deref(),
        shard: None,
        keep_stored_work: false,
        invocation: Invocation {
            config_path: args.config.clone(),
            config_text: text,
            release: args
                .output
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            tier_flag: args.tier.clone(),
            engine_flag: args.engine.is_some(),
        },
    })?;
    if !session.config.generate.enabled {
        return merge_then_run(
            &mut session.ctx,
            &shards,
            (&sliced, &session.stages),
            None,
            args.force,
        );
    }
    let (sliced, rest, generated) = assemble_generated(
        (&session.config, &session.seeds),
        &session.ctx,
        args.tier.as_deref(),
        &shards,
        (sliced, std::mem::take(&mut session.stages)),
    )?;
    session.stages = rest;
    merge_then_run(
        &mut session.ctx,
        &shards,
        (&sliced, &session.stages),
        Some(&generated),
        args.force,
    )
}

/// Merges the sliced stages of `shards` into the release, runs the `rest`
/// on it and sums both up (with the generation, under `[generate]`).
fn merge_then_run(
    ctx: &mut RunContext,
    shards: &[ShardDir],
    (sliced, rest): (&Stages, &Stages),
    generated: Option<&Generated>,
    force: bool,
) -> Result<Summary> {
    let release_dir = ctx.release_dir.clone();
    let mut human = format!(
        "merge: {} shards -> {}\n",
        shards.len(),
        release_dir.display()
    );
    let (merged_human, mut report) = merge_sliced(sliced, ctx, shards, force)?;
    human.push_str(&merged_human);
    let (rest_human, rest_report) = run_stages(
        ctx,
        rest,
        Redo {
            force,
            rewrite_release: false,
        },
    )?;
    for line in rest_human.lines().skip(1) {
        human.push_str(line);
        human.push('\n');
    }
    report.extend(rest_report.into_iter().map(MergeStageEntry::Ran));
    if let Some(generated) = generated {
        human.push_str(&generated.human());
    }
    let record = MergeSummary {
        command: "merge",
        release_dir,
        shards: shard_names(shards),
        count: shards[0].shard.count,
        stages: report,
    };
    Ok(Summary::new(human, serde_json::to_value(&record)?))
}

/// The `merge` summary (`merge --json`): the release, the shards and each
/// stage's entry, merged from the shards or run on the merged release.
#[derive(Serialize)]
struct MergeSummary {
    command: &'static str,
    release_dir: PathBuf,
    shards: Vec<String>,
    /// The shards' count (`--shard I/N`'s N).
    count: u64,
    stages: Vec<MergeStageEntry>,
}

/// One stage's entry in the `merge` summary.
#[derive(Serialize)]
#[serde(untagged)]
enum MergeStageEntry {
    /// A sliced stage, merged from the shards' outputs.
    Merged {
        stage: StageName,
        merged: bool,
        skipped: bool,
        counts: Value,
    },
    /// A stage run on the merged release, as `run` reports it.
    Ran(StageReport),
}

/// Under `[generate]` the shards played their slices into the batch
/// store; the self-play chain's stages are assembled from it by the
/// stopping rule, as a single run assembles them (the generated route's
/// stages). Gives the stages still merged from the shards (the ingests),
/// those run on the release, and the generation.
fn assemble_generated(
    (config, seeds): (&PipelineConfig, &RunSeeds),
    ctx: &RunContext,
    tier: Option<&str>,
    shards: &[ShardDir],
    (sliced, rest): (Stages, Stages),
) -> Result<(Stages, Stages, Rc<Generated>)> {
    let earlier = crate::pipeline::adapters::earlier_releases(ctx)?;
    let generated = prepare(
        &config.generate_sections(),
        ctx.generate_engine()?,
        Mode::Merge,
        tier,
        &earlier,
    )?;
    check_same_store(&generated, shards)?;
    let generated = Rc::new(generated);
    let (ingest, generated_stages): (Stages, Stages) = sliced
        .into_iter()
        .partition(|s| s.name().properties().ingest);
    let run_here = generated_stages.into_iter().chain(rest).collect();
    let run_here = on_generated_route(run_here, config, seeds, &generated)?;
    Ok((ingest, run_here, generated))
}

/// Merges each sliced stage's shard outputs into the release, in stage
/// order: a line each for the summary and its report entries.
fn merge_sliced(
    sliced: &Stages,
    ctx: &RunContext,
    shards: &[ShardDir],
    force: bool,
) -> Result<(String, Vec<MergeStageEntry>)> {
    let mut human = String::new();
    let mut report = Vec::new();
    let mut kept = KeptRows::new();
    for stage in sliced {
        let merged = merge_into_release(stage.as_ref(), ctx, shards, &mut kept, force)?;
        human.push_str(&format!(
            "  {:<16} {:<8}\n",
            stage.name(),
            if merged.skipped { "skipped" } else { "merged" }
        ));
        report.push(MergeStageEntry::Merged {
            stage: stage.name(),
            merged: !merged.skipped,
            skipped: merged.skipped,
            counts: merged.counts,
        });
    }
    Ok((human, report))
}

/// Under `[generate]`: every shard played into the store this merge reads
/// (its self-play stage records the store's key).
fn check_same_store(generated: &Generated, shards: &[ShardDir]) -> Result<()> {
    let fingerprint = generated.fingerprint();
    let ours = fingerprint.store();
    for shard in shards {
        let theirs = recorded_store(&shard.manifest(StageName::Selfplay)?.fingerprint.config);
        if theirs.as_deref() != Some(ours) {
            // Both as JSON (quoted, or null for none), as the message
            // always named them.
            return Err(bad_input(format!(
                "{}: the shard generated into store {}, this merge reads store {}; merge with the shards' pipeline.toml and engine",
                shard.dir.display(),
                as_json(&theirs),
                as_json(&ours)
            )));
        }
    }
    Ok(())
}

/// The configured stages: those the shards ran (to merge) and the rest (to
/// run on the merged release).
fn merge_plan(
    config: &PipelineConfig,
    seeds: &RunSeeds,
    config_path: &Path,
) -> Result<(Stages, Stages)> {
    let (sliced, rest) = session::configured_stages(config, seeds, config_path, true)?;
    if sliced.is_empty() {
        return Err(bad_input(format!(
            "{}: pipeline.stages has none of {}: nothing to merge",
            config_path.display(),
            StageName::list(StageName::ALL.into_iter().filter(|s| s.is_sharded()))
        )));
    }
    Ok((sliced, rest))
}

/// The merged release's folder: a name `run` accepts, directly in the
/// config's `output_dir`, so that `merge` and `run` exclude the releases
/// of one folder and later releases exclude this one.
fn check_release_dir(release_dir: &Path, output_dir: &Path, config_path: &Path) -> Result<()> {
    let name = release_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    check_release_name(name)
        .map_err(|e| bad_input(format!("-o {}: {e}", release_dir.display())))?;
    crate::stages::release::folder::check_registry(output_dir)?;
    std::fs::create_dir_all(output_dir)
        .with_context(|| format!("creating {}", output_dir.display()))?;
    let same = crate::stages::release::folder::holding_folder(release_dir)
        .canonicalize()
        .ok()
        .zip(output_dir.canonicalize().ok())
        .is_some_and(|(a, b)| a == b);
    if !same {
        return Err(bad_input(format!(
            "-o {}: a merged release goes into the config's output_dir {} (pipeline.output_dir of {}), \
             where run writes releases and takes the releases to exclude from; \
             use -o {}",
            release_dir.display(),
            output_dir.display(),
            config_path.display(),
            output_dir.join(name).display()
        )));
    }
    Ok(())
}

fn shard_names(shards: &[ShardDir]) -> Vec<String> {
    shards.iter().map(|s| s.dir.display().to_string()).collect()
}

/// What merging one sliced stage did.
struct Merged {
    /// The release already held these very outputs.
    skipped: bool,
    counts: Value,
}

/// Merges one sliced stage of `shards` into the release folder, with the
/// fingerprint `run` computes for it there (so a later `run` skips it).
fn merge_into_release(
    stage: &dyn Stage,
    ctx: &RunContext,
    shards: &[ShardDir],
    kept: &mut KeptRows,
    force: bool,
) -> Result<Merged> {
    let name = stage.name();
    let print = fingerprint(stage, ctx).with_context(|| format!("stage {name}"))?;
    check_same_run(name, &print, shards)?;
    let started = Instant::now();
    let scratch = fresh_scratch(&ctx.release_dir, name)?;
    let counts = merge_stage(name, shards, &scratch, kept)
        .with_context(|| format!("merging stage {name}"))?;
    let dir = ctx.stage_dir(name);
    let outputs = output_hashes(&scratch)?;
    let unchanged = match StageManifest::previous(&dir) {
        Some(previous) if previous.outputs == outputs => matches!(
            previous.standing(&dir, || Ok(print.clone()), EnginePath::Compared)?,
            Standing::Current
        ),
        _ => false,
    };
    // A finished release never changes, --force or not.
    let finished = release_is_finished(&ctx.release_dir);
    if unchanged || (dir.exists() && !force) || finished {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    if unchanged {
        return Ok(Merged {
            skipped: true,
            counts,
        });
    }
    if finished {
        return Err(bad_input(format!(
            "{} is a finished release and never changes, but merging these shards would change its {name} stage; nothing was written",
            ctx.stage_dir(StageName::Release).display()
        )));
    }
    if dir.exists() && !force {
        return Err(bad_input(format!(
            "{} already holds other {name} outputs; pass --force to replace them",
            ctx.release_dir.display()
        )));
    }
    let manifest = StageManifest {
        stage: name,
        fingerprint: print,
        counts: counts.clone(),
        seconds: manifest_seconds(started.elapsed().as_secs_f64()),
        shard: None,
        merged_from: Some(shard_names(shards)),
        run: None,
        outputs,
    };
    commit_stage_dir(&scratch, &dir, &manifest)?;
    Ok(Merged {
        skipped: false,
        counts,
    })
}

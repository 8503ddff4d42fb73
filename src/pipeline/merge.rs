//! `run --shard I/N` and `puzzleforge merge`: the expensive stages of one
//! release spread over N machines, merged into the bytes of a single run.
//!
//! A shard runs the sliced stages ([`SHARDED_STAGES`]) into
//! `<output_dir>/<release>.shard-I-of-N/`. Slices are contiguous: shard I
//! of N takes items `[I*T/N, (I+1)*T/N)` of T, so the shards' outputs
//! concatenated in shard order are in the order of a single run.
//!
//! - `ingest_puzzles`, `ingest_games`: cheap and deterministic, run whole
//!   by every shard; merge checks that all shards agree and takes them.
//! - `selfplay`: a shard plays its slice of the game numbers (a game's bytes
//!   depend only on the seed and its number); merge concatenates.
//! - `mine`: a shard mines the self-play games it played and its slice of
//!   the Lichess candidates. Mine caps each game's puzzles first and drops
//!   repeated positions second, so deduplicating the concatenated shard
//!   outputs again ([`crate::stages::mine::dedup_puzzles`]) gives the single run's.
//! - `rate`: a puzzle's random draws are keyed by its id, not its row, so
//!   merge keeps the rated rows of the puzzles the mine merge kept.
//!
//! Merge then writes each of these stages with the `stage.json` fingerprint
//! `run` would compute for the merged release (a later `run` skips them),
//! and runs the remaining configured stages (release, export, eval) through
//! the normal run machinery.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, read_puzzles};
use crate::core::error::bad_input;
use crate::core::shard::{Shard, is_shard_folder_name};
use crate::core::summary::Summary;
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::manifest::MANIFEST;
use crate::pipeline::stage::{RunContext, SHARDED_STAGES, Stage};

/// Arguments of `puzzleforge merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Shard folders written by `run --shard I/N`, all N of them.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shards: Vec<PathBuf>,
    /// The release folder to write (what `run` writes as
    /// `<output_dir>/<release>/`).
    #[arg(short, long, value_name = "RELEASE_DIR")]
    pub output: PathBuf,
    /// Pipeline config file: the one the shards ran with.
    #[arg(long, default_value = crate::pipeline::config::DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Engine binary, overriding the config (as given to the shards).
    #[arg(long)]
    pub engine: Option<PathBuf>,
    /// Produce this named tier of `[split.tiers]`.
    #[arg(long)]
    pub tier: Option<String>,
    /// Replace merged stages the release folder already holds with other
    /// bytes, and redo the remaining stages even when unchanged.
    #[arg(long)]
    pub force: bool,
}

/// One shard folder and the `stage.json` of each sliced stage.
struct ShardDir {
    dir: PathBuf,
    shard: Shard,
    manifests: BTreeMap<String, Value>,
}

impl ShardDir {
    fn manifest(&self, stage: &str) -> &Value {
        // Every sliced stage's manifest was read when the folder was opened.
        self.manifests.get(stage).unwrap_or(&Value::Null)
    }

    fn outputs(&self, stage: &str) -> Vec<String> {
        self.manifest(stage)
            .get("outputs")
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn file(&self, stage: &str, name: &str) -> PathBuf {
        self.dir.join(stage).join(name)
    }
}

fn open_shard(dir: &Path, stages: &[&str]) -> Result<ShardDir> {
    let mut manifests = BTreeMap::new();
    let mut shard: Option<Shard> = None;
    for &stage in stages {
        let path = dir.join(stage).join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad_input(format!(
                "{} is not a complete shard folder: cannot read {} ({e}); run `puzzleforge run --shard I/N` to finish it",
                dir.display(),
                path.display()
            ))
        })?;
        let manifest: Value = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("{}: not JSON: {e}", path.display())))?;
        let this = manifest
            .get("shard")
            .and_then(Shard::from_json)
            .ok_or_else(|| {
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
        if !crate::pipeline::manifest::outputs_intact(&dir.join(stage), &manifest) {
            return Err(bad_input(format!(
                "{}: outputs of {stage} changed or went missing since the shard wrote them; rerun the shard",
                dir.display()
            )));
        }
        manifests.insert(stage.to_string(), manifest);
    }
    let shard = shard.ok_or_else(|| bad_input("pipeline.stages has no stage to merge"))?;
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        shard,
        manifests,
    })
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

/// Checks that every shard ran `stage` with the config, tool version and
/// engine this merge would run it with.
fn check_same_run(stage: &dyn Stage, expected: &Value, shards: &[ShardDir]) -> Result<()> {
    for shard in shards {
        let print = shard.manifest(stage.name()).get("fingerprint");
        let field = |name: &str| print.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        if field("config") != &expected["config"] {
            return Err(bad_input(format!(
                "{}: stage {} ran with another config than this merge's (shard: {}, merge: {}); merge with the shards' pipeline.toml or rerun them",
                shard.dir.display(),
                stage.name(),
                field("config"),
                expected["config"]
            )));
        }
        if field("tool_version") != &expected["tool_version"] {
            return Err(bad_input(format!(
                "{}: stage {} was written by puzzleforge {}, this is {}",
                shard.dir.display(),
                stage.name(),
                field("tool_version"),
                expected["tool_version"]
            )));
        }
        // The engine's path may differ between machines; its build and
        // options may not.
        for key in ["sha256", "options"] {
            let theirs = field("engine").get(key).unwrap_or(&Value::Null);
            let ours = expected["engine"].get(key).unwrap_or(&Value::Null);
            if theirs != ours {
                return Err(bad_input(format!(
                    "{}: stage {} ran with another engine ({key} {theirs}, merge has {ours})",
                    shard.dir.display(),
                    stage.name()
                )));
            }
        }
    }
    Ok(())
}

/// Identifies a puzzle row within one shard's file (mine keeps no position
/// twice within a file, so no two rows share it).
fn row_key(puzzle: &Puzzle) -> (String, String, String) {
    (
        puzzle.id.clone(),
        puzzle.fen.clone(),
        puzzle.moves.join(" "),
    )
}

/// Per mined file name, per shard (in shard order), the rows the mine merge
/// kept; the rate merge keeps the same puzzles.
type KeptRows = BTreeMap<String, Vec<HashSet<(String, String, String)>>>;

fn same_output_names(stage: &str, shards: &[ShardDir]) -> Result<Vec<String>> {
    let names = shards[0].outputs(stage);
    for shard in &shards[1..] {
        if shard.outputs(stage) != names {
            return Err(bad_input(format!(
                "{} and {}: stage {stage} wrote different files ({:?} and {:?})",
                shards[0].dir.display(),
                shard.dir.display(),
                names,
                shard.outputs(stage)
            )));
        }
    }
    Ok(names)
}

/// Writes the merged outputs of `stage` into `scratch`; returns counts.
fn merge_stage(
    stage: &str,
    shards: &[ShardDir],
    scratch: &Path,
    kept: &mut KeptRows,
) -> Result<Value> {
    let names = same_output_names(stage, shards)?;
    let mut counts = BTreeMap::new();
    for name in &names {
        let target = scratch.join(name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        match stage {
            "ingest_puzzles" | "ingest_games" => {
                let first = shards[0].manifest(stage)["outputs"][name].clone();
                for shard in &shards[1..] {
                    if shard.manifest(stage)["outputs"][name] != first {
                        return Err(bad_input(format!(
                            "{} and {}: {stage}/{name} differ (sha256 {} and {}); every shard must ingest the same sources with the same config",
                            shards[0].dir.display(),
                            shard.dir.display(),
                            first,
                            shard.manifest(stage)["outputs"][name]
                        )));
                    }
                }
                std::fs::copy(shards[0].file(stage, name), &target)
                    .with_context(|| format!("copying {}", target.display()))?;
                counts.insert(name.clone(), json!({"copied_from_shard": 0}));
            }
            "selfplay" => {
                let mut bytes = Vec::new();
                for shard in shards {
                    let path = shard.file(stage, name);
                    bytes.extend(
                        std::fs::read(&path)
                            .with_context(|| format!("reading {}", path.display()))?,
                    );
                }
                crate::core::fileio::write_atomic(&target, &bytes)?;
                counts.insert(name.clone(), json!({"bytes": bytes.len()}));
            }
            "mine" => {
                let mut all = Vec::new();
                let mut owner = Vec::new();
                for (at, shard) in shards.iter().enumerate() {
                    let rows = read_puzzles(&shard.file(stage, name))?;
                    owner.extend(std::iter::repeat_n(at, rows.len()));
                    all.extend(rows);
                }
                let keep = crate::stages::mine::dedup_puzzles(&all);
                let mut kept_here = vec![HashSet::new(); shards.len()];
                let columns: Vec<String> = crate::stages::mine::MINE_COLUMNS
                    .iter()
                    .map(|c| c.to_string())
                    .collect();
                let mut writer = PuzzleWriter::create(&target, &columns)?;
                let mut written = 0u64;
                for ((puzzle, keep), at) in all.iter().zip(&keep).zip(&owner) {
                    if *keep {
                        writer.write(puzzle)?;
                        kept_here[*at].insert(row_key(puzzle));
                        written += 1;
                    }
                }
                writer.finish()?;
                kept.insert(name.clone(), kept_here);
                counts.insert(
                    name.clone(),
                    json!({"shard_rows": all.len(), "puzzles": written}),
                );
            }
            "rate" => {
                let kept_rows = kept.get(name).ok_or_else(|| {
                    bad_input(format!(
                        "rate/{name} has no mine/{name} to follow: merge needs mine with rate"
                    ))
                })?;
                let mut merged = Vec::new();
                for (shard, kept_rows) in shards.iter().zip(kept_rows) {
                    let rows = read_puzzles(&shard.file(stage, name))?;
                    merged.extend(rows.into_iter().filter(|p| kept_rows.contains(&row_key(p))));
                }
                let mut writer = PuzzleWriter::create(&target, &extra_columns_of(&merged))?;
                for puzzle in &merged {
                    writer.write(puzzle)?;
                }
                writer.finish()?;
                counts.insert(name.clone(), json!({"puzzles": merged.len()}));
            }
            other => {
                return Err(anyhow::anyhow!("stage {other} cannot be merged"));
            }
        }
    }
    Ok(json!({"merged_shards": shards.len(), "files": counts}))
}

/// `puzzleforge merge`.
pub fn run_merge(args: &MergeArgs) -> Result<Summary> {
    let config = PipelineConfig::load(&args.config)?;
    let stages = crate::pipeline::run::configured_stages(&config, &args.config)?;
    let (sliced, rest) = crate::pipeline::run::split_sharded(stages, &args.config)?;
    if sliced.is_empty() {
        return Err(bad_input(format!(
            "{}: pipeline.stages has none of {}: nothing to merge",
            args.config.display(),
            SHARDED_STAGES.join(", ")
        )));
    }
    let names: Vec<&str> = sliced.iter().map(|s| s.name()).collect();
    let mut shards = Vec::new();
    for dir in &args.shards {
        shards.push(open_shard(dir, &names)?);
    }
    let shards = check_cover(shards)?;

    let release_dir = args.output.clone();
    if let Some(name) = release_dir.file_name().and_then(|n| n.to_str())
        && is_shard_folder_name(name)
    {
        return Err(bad_input(format!(
            "{}: a merged release cannot be named like a shard folder",
            release_dir.display()
        )));
    }
    std::fs::create_dir_all(&release_dir)
        .with_context(|| format!("creating {}", release_dir.display()))?;
    let _lock = ReleaseLock::acquire(&release_dir)?;
    let mut all_stages = sliced;
    let first_rest = all_stages.len();
    all_stages.extend(rest);
    let engine = crate::pipeline::run::resolve_engine(
        &config,
        &args.config,
        args.engine.clone(),
        &all_stages,
    )?;
    let ctx = RunContext {
        config: &config,
        config_path: &args.config,
        release_dir: release_dir.clone(),
        engine,
        tier: args.tier.clone(),
        shard: None,
    };

    let mut human = format!(
        "merge: {} shards -> {}\n",
        shards.len(),
        release_dir.display()
    );
    let mut report = Vec::new();
    let mut kept = KeptRows::new();
    for stage in &all_stages[..first_rest] {
        let name = stage.name();
        let print = crate::pipeline::manifest::fingerprint(stage.as_ref(), &ctx)
            .with_context(|| format!("stage {name}"))?;
        check_same_run(stage.as_ref(), &print, &shards)?;
        let started = Instant::now();
        let scratch = crate::pipeline::manifest::fresh_scratch(&release_dir, name)?;
        let counts = merge_stage(name, &shards, &scratch, &mut kept)
            .with_context(|| format!("merging stage {name}"))?;
        let dir = ctx.stage_dir(name);
        let previous = std::fs::read(dir.join(MANIFEST))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
        let merged_outputs = crate::pipeline::manifest::output_hashes(&scratch)?;
        let unchanged = previous.as_ref().is_some_and(|p| {
            p.get("fingerprint") == Some(&print)
                && p.get("outputs") == Some(&json!(merged_outputs))
                && crate::pipeline::manifest::outputs_intact(&dir, p)
        });
        if unchanged {
            std::fs::remove_dir_all(&scratch)
                .with_context(|| format!("removing {}", scratch.display()))?;
        } else {
            if dir.exists() && !args.force {
                std::fs::remove_dir_all(&scratch)
                    .with_context(|| format!("removing {}", scratch.display()))?;
                return Err(bad_input(format!(
                    "{} already holds other {name} outputs; pass --force to replace them",
                    release_dir.display()
                )));
            }
            let seconds = started.elapsed().as_secs_f64();
            let manifest = json!({
                "stage": name,
                "fingerprint": print,
                "counts": counts,
                "seconds": (seconds * 1000.0).round() / 1000.0,
                "merged_from": shards.iter().map(|s| s.dir.display().to_string()).collect::<Vec<_>>(),
            });
            crate::pipeline::manifest::commit_stage_dir(&scratch, &dir, manifest, merged_outputs)?;
        }
        human.push_str(&format!(
            "  {:<16} {:<8}\n",
            name,
            if unchanged { "skipped" } else { "merged" }
        ));
        report.push(
            json!({"stage": name, "merged": !unchanged, "skipped": unchanged, "counts": counts}),
        );
    }
    let (rest_human, rest_report) =
        crate::pipeline::run::run_stages(&ctx, &all_stages[first_rest..], args.force)?;
    for line in rest_human.lines().skip(1) {
        human.push_str(line);
        human.push('\n');
    }
    report.extend(rest_report);
    Ok(Summary::new(
        human,
        json!({
            "command": "merge",
            "release_dir": release_dir,
            "shards": shards.iter().map(|s| s.dir.display().to_string()).collect::<Vec<_>>(),
            "count": shards[0].shard.count,
            "stages": report,
        }),
    ))
}

//! What `run` and `merge` both open before their first stage, a
//! [`Session`]: the configured stages (split, for shards, into the sliced
//! ones and the rest), the engines they use started once and checked, the
//! release folder refused when it is a link or a finished `release`'s,
//! created and locked, the leftovers of killed runs removed, and the
//! context every stage sees. Apart so that the two commands open a release
//! the same way.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::{left_by_dead_process, sha256_file};
use crate::core::shard::Shard;
use crate::engine::pool::PoolConfig;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::{Invocation, RunContext, RunEngine, Stage, Stages};
use crate::stages::StageName;

/// An open release: its config, seeds and stages, the context every stage
/// sees, and the release folder's lock, held until the session ends.
pub(crate) struct Session {
    pub config: PipelineConfig,
    pub seeds: RunSeeds,
    /// The stages run on the release, in order (`merge`: those after the
    /// sliced ones it merges from the shards).
    pub stages: Stages,
    pub ctx: RunContext,
    /// No other run or merge writes the release while the session holds it.
    _lock: ReleaseLock,
}

/// What a session is opened with: what its command worked out, and how it
/// was asked for.
pub(crate) struct Opening<'a> {
    pub config: PipelineConfig,
    pub seeds: RunSeeds,
    pub stages: Stages,
    /// The engine of the session's stages (and of those merged from
    /// shards), checked ([`checked_engine`]).
    pub engine: Option<RunEngine>,
    pub release_dir: PathBuf,
    /// The tier the release is drawn at (`--tier`, or `--aim`'s).
    pub tier: Option<&'a str>,
    /// `run --shard`.
    pub shard: Option<Shard>,
    /// `run --keep-stored-work`.
    pub keep_stored_work: bool,
    /// How the command was asked for, as the release records it.
    pub invocation: Invocation,
}

impl Session {
    /// Opens the release folder of `opening` (refused when it is a link or
    /// holds a `release`'s release; created, locked, its leftovers
    /// removed) and the context its stages see.
    pub(crate) fn open(opening: Opening<'_>) -> Result<Session> {
        let Opening {
            config,
            seeds,
            stages,
            engine,
            release_dir,
            tier,
            shard,
            keep_stored_work,
            invocation,
        } = opening;
        refuse_linked_release(&release_dir)?;
        std::fs::create_dir_all(&release_dir)
            .with_context(|| format!("creating {}", release_dir.display()))?;
        let lock = ReleaseLock::acquire(&release_dir)?;
        remove_leftovers(&release_dir)?;
        let mut ctx = unopened_context(&config, &invocation.config_path, release_dir, engine, tier);
        ctx.shard = shard;
        ctx.keep_stored_work = keep_stored_work;
        ctx.invocation = Some(invocation);
        Ok(Session {
            config,
            seeds,
            stages,
            ctx,
            _lock: lock,
        })
    }
}

/// The context every stage of `release_dir` sees before a session opens
/// it: no shard, no invocation, no stored work kept (what `run --plan`
/// samples with, which opens no release folder).
pub(crate) fn unopened_context(
    config: &PipelineConfig,
    config_path: &Path,
    release_dir: PathBuf,
    engine: Option<RunEngine>,
    tier: Option<&str>,
) -> RunContext {
    RunContext {
        release_dir,
        engine,
        tier: config.generate.release_tier(tier),
        shard: None,
        config_dir: config_dir(config_path),
        invocation: None,
        keep_stored_work: false,
        kept_work: Vec::new(),
    }
}

/// The stages of `pipeline.stages`, each holding its own section of
/// `config` (loaded from `config_path`) and its seeds; when `sliced`, split
/// into the sliced stages (which `run --shard` runs and `merge` merges) and
/// the rest, else all of them and none.
pub(crate) fn configured_stages(
    config: &PipelineConfig,
    seeds: &RunSeeds,
    config_path: &Path,
    sliced: bool,
) -> Result<(Stages, Stages)> {
    let stages = crate::pipeline::adapters::configured(config, seeds, config_path)?;
    if sliced {
        split_sharded(stages, config_path)
    } else {
        Ok((stages, Vec::new()))
    }
}

/// The engine of the session's `stages` ([`resolve_engine`]), with every
/// engine they use started once and checked ([`check_engines`]).
pub(crate) fn checked_engine<'a>(
    config: &PipelineConfig,
    config_path: &Path,
    engine_flag: Option<&PathBuf>,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>> + Clone,
) -> Result<Option<RunEngine>> {
    let engine = resolve_engine(&config.engine, engine_flag.cloned(), stages.clone())?;
    check_engines(
        config,
        config_path,
        engine_flag.is_some(),
        engine.as_ref(),
        stages,
    )?;
    Ok(engine)
}

/// Removes what killed or failed runs left in a release folder: stage
/// scratch folders (`.NAME.partial`) and temporary files (`.NAME.tmp-PID`)
/// of processes that are gone. Called with the lock held, so no live run
/// of this release owns a scratch folder; a live process's temporary file
/// is left alone.
fn remove_leftovers(release_dir: &Path) -> Result<()> {
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
fn refuse_linked_release(release_dir: &Path) -> Result<()> {
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

/// Starts every engine the run uses once (the `uci` handshake), before the
/// first stage: a path that is no engine is an error (exit 2) naming its
/// config key, not a failure hours later when its stage comes.
fn check_engines<'a>(
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

/// Splits the configured stages into those a shard runs (ingest, selfplay,
/// mine, rate) and those left for `merge`; a sliced stage after one left
/// for merge cannot be sliced.
fn split_sharded(stages: Stages, config_path: &Path) -> Result<(Stages, Stages)> {
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
fn resolve_engine<'a>(
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

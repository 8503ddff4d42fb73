//! How a command finds and configures its engine: the `[engine]` section of
//! `pipeline.toml`, the `--engine`/`--workers`/`--deadline` flags over it,
//! and the lookup of the executable (flag, config, /usr/games/stockfish,
//! PATH).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::pool::PoolConfig;
use crate::engine::process::{DEFAULT_HASH_MB, EngineSpec};

/// Where the engine is looked for when neither a flag nor the config names one.
pub(crate) const DEFAULT_ENGINE_PATH: &str = "/usr/games/stockfish";

/// Finds the engine executable: the `--engine` flag, then the configured
/// path, then /usr/games/stockfish, then `stockfish` on PATH.
pub fn resolve_engine(flag: Option<&Path>, configured: Option<&Path>) -> anyhow::Result<PathBuf> {
    for (path, origin) in [(flag, "--engine"), (configured, "the configuration")] {
        if let Some(path) = path {
            return find_engine(path, origin);
        }
    }
    find_executable(Path::new(DEFAULT_ENGINE_PATH))
        .or_else(|| find_executable(Path::new("stockfish")))
        .ok_or_else(|| {
            crate::core::error::bad_input(
                "no chess engine found: install Stockfish (./engines/install.sh), or pass --engine PATH",
            )
        })
}

/// The engine executable at `path` (or a bare name on PATH); else an
/// error (exit 2) naming `origin`, where the path was given: a flag, a
/// config key or a definition file, so the user knows what to fix.
pub(crate) fn find_engine(path: &Path, origin: &str) -> anyhow::Result<PathBuf> {
    find_executable(path).ok_or_else(|| {
        crate::core::error::bad_input(format!(
            "engine {} (from {origin}) not found",
            path.display()
        ))
    })
}

fn find_executable(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    // A bare name is looked up on PATH, like a shell would.
    if path.components().count() == 1 {
        let search = std::env::var_os("PATH")?;
        return std::env::split_paths(&search)
            .map(|dir| dir.join(path))
            .find(|candidate| candidate.is_file());
    }
    None
}

/// Engine settings in `pipeline.toml` (`[engine]`); CLI flags override them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Engine executable or an engine definition file (`.toml`).
    pub path: Option<PathBuf>,
    /// Worker threads, one engine process each (0 = number of CPUs).
    pub workers: usize,
    /// Hash table size in MB (ignored when `path` is a definition file).
    pub hash_mb: u32,
    /// Seconds one search may take before the engine counts as hung.
    pub deadline_secs: f64,
    /// Seconds each handshake answer (`uciok`, `readyok`) may take; a
    /// program that never answers `uciok` is not an engine (exit 2).
    /// Left out of records while it has its default, so records of runs
    /// made before the setting existed read the same.
    #[serde(skip_serializing_if = "is_default_handshake")]
    pub handshake_secs: f64,
    /// Attempts per unit of work before the command fails.
    pub max_attempts: u32,
}

/// Default seconds for each handshake answer. Stockfish answers `uciok`
/// in well under a second on an idle machine, but took over 10 s on a
/// 2-core machine at load 9 (two test builds and engine runs beside it);
/// 30 s still tells a program that is no engine within half a minute.
const DEFAULT_HANDSHAKE_SECS: f64 = 30.0;

/// The most engine processes `[engine] workers` may ask for; a run starts
/// at most one per core of the machine (see [`EngineArgs::resolve`]).
pub const MAX_WORKERS: usize = 256;

impl crate::core::bounds::Bounded for EngineConfig {
    const BOUNDS: &'static [crate::core::bounds::Bound] = &[
        crate::core::bounds::Bound::within(
            "workers",
            0.0,
            MAX_WORKERS as f64,
            "engine processes; 0 = one per core, and never more than the cores",
        ),
        crate::core::bounds::Bound::within("hash_mb", 1.0, 65536.0, "MB of hash per engine"),
        crate::core::bounds::Bound::above("deadline_secs", 0.0, 86400.0, "seconds of one search"),
        crate::core::bounds::Bound::above(
            "handshake_secs",
            0.0,
            3600.0,
            "seconds of one handshake answer",
        ),
        crate::core::bounds::Bound::within("max_attempts", 1.0, 100.0, "attempts per unit of work"),
    ];
}

fn is_default_handshake(seconds: &f64) -> bool {
    *seconds == DEFAULT_HANDSHAKE_SECS
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            path: None,
            workers: 0,
            hash_mb: DEFAULT_HASH_MB,
            deadline_secs: 60.0,
            handshake_secs: DEFAULT_HANDSHAKE_SECS,
            max_attempts: 3,
        }
    }
}

/// The engine flags every command that runs an engine takes (their help:
/// `cli::groups::EngineFlags`); each overrides its key of the `[engine]`
/// section ([`crate::core::settings::flags_over`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineArgs {
    #[serde(rename = "path")]
    pub engine: Option<PathBuf>,
    pub workers: Option<usize>,
    #[serde(rename = "deadline_secs")]
    pub deadline: Option<f64>,
    // Laid over `handshake_secs` in `EngineArgs::resolve`, not by
    // `flags_over`: the key is left out of records while it has its default.
    #[serde(skip)]
    pub handshake_deadline: Option<f64>,
}

impl EngineArgs {
    /// The engine spec and pool settings from these flags over `section`.
    pub fn resolve(&self, section: &EngineConfig) -> anyhow::Result<(EngineSpec, PoolConfig)> {
        // Laid over, the section's keys are within their bounds (workers
        // at most MAX_WORKERS, a positive deadline).
        let config = crate::core::settings::flags_over(section, self)?;
        let spec = match config.path.as_deref() {
            Some(path) if path.extension().is_some_and(|ext| ext == "toml") => {
                let spec = EngineSpec::from_file(path)?;
                let executable =
                    find_engine(&spec.path, &format!("the path of {}", path.display()))?;
                EngineSpec {
                    path: executable,
                    ..spec
                }
            }
            _ => {
                let executable = resolve_engine(self.engine.as_deref(), section.path.as_deref())?;
                EngineSpec::new(executable).with_option("Hash", config.hash_mb)
            }
        };
        // One engine per core at most: each searches single-threaded to a
        // node limit, so more engines than cores only share the cores and
        // finish no sooner, while every result stays the same (output
        // order never depends on how many engines ran).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = match config.workers {
            0 => cores,
            n if n > cores => {
                crate::core::progress::note(&format!(
                    "engine workers {n} capped at this machine's {cores} cores"
                ));
                cores
            }
            n => n,
        };
        let deadline_secs = config.deadline_secs;
        let handshake_secs = self.handshake_deadline.unwrap_or(config.handshake_secs);
        if !(handshake_secs.is_finite() && handshake_secs > 0.0) {
            crate::bail_input!(
                "--handshake-deadline must be a positive number of seconds, not {handshake_secs}"
            );
        }
        let pool = PoolConfig {
            workers,
            deadline: Duration::from_secs_f64(deadline_secs),
            handshake_deadline: Duration::from_secs_f64(handshake_secs),
            max_attempts: config.max_attempts,
            ..Default::default()
        };
        Ok((spec, pool))
    }
}

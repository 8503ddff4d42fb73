//! The `[verify]` settings and the stage's arguments: the deeper search's
//! node factor, the criterion, the margins, the policy and the second
//! engine (`[verify.second_engine]`), each checked against its bounds, and a
//! pipeline config's section read with its paths resolved. Apart from the
//! checks so a config can be read and checked without an engine.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::core::settings::switch_on;
use crate::engine::criterion::{self, Criterion};
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::engine::settings::EngineArgs;

/// `puzzleforge verify`'s flags (and `recheck`'s; their help: `cli::verify`,
/// `cli::recheck`).
#[derive(Debug, Clone)]
pub struct VerifyArgs {
    pub input: PathBuf,
    /// The flags laid over `[verify]` by [`crate::core::settings::flags_over`].
    pub overrides: VerifyOverrides,
    pub output: Option<PathBuf>,
    pub puzzles_out: Option<PathBuf>,
    /// `--puzzle`, repeated.
    pub puzzles: Vec<String>,
    pub recheck: bool,
    pub config: Option<PathBuf>,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// `verify`'s search flags (their help: `cli::groups::VerifySearchFlags`),
/// each over the key of [`VerifyConfig`] its serde name gives.
#[derive(Default, Debug, Clone, Serialize)]
pub struct VerifyOverrides {
    pub factor: Option<u64>,
    pub nodes: Option<u64>,
    #[serde(serialize_with = "switch_on")]
    pub nodes_override: bool,
    pub criterion: Option<Criterion>,
    pub policy: Option<Policy>,
    pub min_margin_cp: Option<i32>,
    pub min_margin_win_chance: Option<f64>,
    #[serde(rename = "second_engine.path")]
    pub second_engine: Option<PathBuf>,
    #[serde(rename = "second_engine.depth")]
    pub second_depth: Option<u32>,
    #[serde(rename = "second_engine.min_gap_cp")]
    pub second_min_gap_cp: Option<i32>,
}

/// What happens to a puzzle that fails a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// The release leaves it out.
    #[default]
    Drop,
    /// The release keeps it; its verdict columns say it failed.
    Mark,
}

/// `[verify.second_engine]`: an independent engine that must agree with
/// every solver move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecondEngineConfig {
    /// The engine executable.
    pub path: PathBuf,
    /// Search depth (Ethereal 12 ignores `go nodes`, so depth is the
    /// deterministic limit).
    pub depth: u32,
    /// Required lead of the best move over the second, in the engine's own
    /// cp. 180 is Epoch's gap: on 40 Lichess puzzles (non-mate first moves
    /// of tests/data) Ethereal's gaps at depth 12 ran larger than Stockfish
    /// 15.1's at depth 18 (median ratio 1.12), and 39 of 40 cleared 180,
    /// while a win-chance rule (0.7, on Ethereal's own cp) kept only 32.
    pub min_gap_cp: i32,
    /// UCI options sent after the handshake (Threads is always 1).
    pub options: BTreeMap<String, toml::Value>,
}

impl Bounded for SecondEngineConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("depth", 1.0, 60.0, "plies of the second engine's search"),
        Bound::within(
            "min_gap_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
    ];
}

impl Default for SecondEngineConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("/usr/games/ethereal-chess"),
            depth: 12,
            min_gap_cp: criterion::EPOCH_MIN_GAP_CP,
            options: BTreeMap::new(),
        }
    }
}

impl SecondEngineConfig {
    /// The engine spec (Hash 16 unless `options` says otherwise); a path
    /// that is no executable is named as the config key it came from.
    pub fn spec(&self) -> Result<EngineSpec> {
        self.spec_from(CONFIG_KEY)
    }

    /// The engine spec, a missing executable said to come from `origin`
    /// (the config key, or the `verify` command's flag).
    fn spec_from(&self, origin: &str) -> Result<EngineSpec> {
        let executable = crate::engine::settings::find_engine(&self.path, origin)?;
        let mut spec = EngineSpec::new(executable);
        for (name, value) in &self.options {
            let value = match value {
                toml::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            spec = spec.with_option(name, value);
        }
        spec.validate().map_err(crate::core::error::bad_input)?;
        Ok(spec)
    }

    /// A pool of this engine beside `main`, with as many workers.
    pub fn pool(&self, main: &EnginePool) -> Result<EnginePool> {
        self.pool_from(main, CONFIG_KEY)
    }

    /// [`Self::pool`], a missing executable said to come from `origin`.
    pub(super) fn pool_from(&self, main: &EnginePool, origin: &str) -> Result<EnginePool> {
        let config = PoolConfig {
            workers: main.workers(),
            // Ethereal 12, the second engine the docs name, scores a
            // position otherwise on its process's 64th search: a fresh
            // process per puzzle keeps the verdicts the same bytes whatever
            // the worker ran before (docs/verification.md).
            fresh_process_per_unit: true,
            ..Default::default()
        };
        EnginePool::new(self.spec_from(origin)?, config)
    }
}

/// The config key of the second engine's path, as errors name it.
pub(super) const CONFIG_KEY: &str = "verify.second_engine.path";

/// Settings of one verification run: `[verify]` of `pipeline.toml`, the
/// `verify` command's flags over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Search K times the puzzle's nodes.
    pub factor: u64,
    /// Base nodes for puzzles without a Nodes column (or for all, with
    /// `nodes_override`).
    pub nodes: Option<u64>,
    pub nodes_override: bool,
    /// Criterion to check (default: each puzzle's Criterion column, else
    /// epoch).
    pub criterion: Option<Criterion>,
    /// What the release does with a puzzle that fails a check.
    pub policy: Policy,
    /// Epoch puzzles must clear each threshold by this many cp, in every
    /// search (0: today's rule, no margin).
    pub min_margin_cp: i32,
    /// Lichess puzzles must clear the 0.7 win-chance gap by this much.
    pub min_margin_win_chance: f64,
    /// The independent engine, if any.
    pub second_engine: Option<SecondEngineConfig>,
}

impl Bounded for VerifyConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("factor", 1.0, 1000.0, "times the mining search"),
        Bound::within(
            "nodes",
            1.0,
            100000000000.0,
            "nodes of the verifying search",
        ),
        Bound::within(
            "min_margin_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within(
            "min_margin_win_chance",
            0.0,
            2.0,
            "winning chances run from -1 to 1",
        ),
    ];
    const NESTED: &'static [Nested] =
        &[Nested::of::<SecondEngineConfig>("second_engine", Many::One)];
}

impl VerifyConfig {
    /// The keys a pipeline run leaves at their defaults (each puzzle's own
    /// `Nodes` and `Criterion` columns decide).
    const PER_PUZZLE_KEYS: [&str; 3] = ["nodes", "nodes_override", "criterion"];

    /// The settings as a release records them (`settings.verify`) and a
    /// run's stage fingerprints them: [`Self::PER_PUZZLE_KEYS`] only where
    /// set, so that a release made without them reads as it always has.
    pub fn recorded(&self) -> serde_json::Result<Value> {
        let mut value = serde_json::to_value(self)?;
        let defaults = serde_json::to_value(Self::default())?;
        if let Some(map) = value.as_object_mut() {
            for key in Self::PER_PUZZLE_KEYS {
                if map.get(key) == defaults.get(key) {
                    map.shift_remove(key);
                }
            }
        }
        Ok(value)
    }
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            factor: 4,
            nodes: None,
            nodes_override: false,
            criterion: None,
            policy: Policy::Drop,
            min_margin_cp: 0,
            min_margin_win_chance: 0.0,
            second_engine: None,
        }
    }
}

/// A pipeline config's `[verify]`, its second engine's path resolved
/// against the config's folder as `run` resolves it.
pub fn load_verify_section(config_path: &Path) -> Result<VerifyConfig> {
    let mut section: VerifyConfig =
        crate::core::settings::load_section(Some(config_path), "verify")?;
    if let Some(second) = section.second_engine.as_mut() {
        second.path = crate::core::settings::relative_to(config_path, &second.path);
    }
    Ok(section)
}

//! The `[eval]` section of `pipeline.toml`: the player, templates, client,
//! prices, regret search, the human-move nets and the engine behind
//! baselines and regret.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::engine::pool::PoolConfig;
use crate::engine::process::EngineSpec;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::stages::eval::client::ClientConfig;

/// Price of a model's tokens, US dollars per million.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
}

impl Bounded for Price {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("prompt_per_million", 0.0, 1000000.0, "a price"),
        Bound::within("completion_per_million", 0.0, 1000000.0, "a price"),
    ];
}

/// Engine regret settings: the search behind "eval of the best move minus
/// eval of the played move".
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct RegretConfig {
    pub enabled: bool,
    pub nodes: Option<u64>,
    pub depth: Option<u32>,
}

impl Bounded for RegretConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("nodes", 1.0, 10000000000.0, "nodes of the regret search"),
        Bound::within("depth", 1.0, 60.0, "plies of the regret search"),
    ];
}

impl Default for RegretConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            nodes: Some(200_000),
            depth: None,
        }
    }
}

/// `[eval.maia]`: the Maia-1 human-move nets behind the `maia:RATING`
/// players and the human ladder every report places its player on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MaiaConfig {
    /// The folder holding `maia-1100.pb.gz` .. `maia-1900.pb.gz` (under
    /// `run`, relative to the config file's folder; for the `eval` command,
    /// to the working directory).
    pub models_dir: PathBuf,
    /// Play the nine nets on the run's positions and place the player among
    /// them (a human-equivalent rating). On by default; a run whose
    /// `models_dir` does not exist says so in its notes and skips it.
    pub ladder: bool,
}

impl Default for MaiaConfig {
    fn default() -> Self {
        Self {
            models_dir: PathBuf::from(crate::maia::DEFAULT_MODELS_DIR),
            ladder: true,
        }
    }
}

/// The `[eval]` section of the pipeline config.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct EvalConfig {
    /// The player when `--model` is not given (the `run` pipeline's eval
    /// stage): `openai:MODEL@BASE_URL`, `engine:stockfish?...` or `random`.
    pub model: Option<String>,
    /// Templates when no `--template` is given (default: paper-json).
    pub templates: Vec<String>,
    pub seed: u64,
    pub repeats: u32,
    pub rating_bin_width: i32,
    /// Response cache; default `RUN_DIR/cache`.
    pub cache_dir: Option<PathBuf>,
    pub client: ClientConfig,
    /// Token prices by model name.
    pub prices: BTreeMap<String, Price>,
    pub regret: RegretConfig,
    /// Node budget of the `engine` baseline when its spec names none.
    pub engine_player_nodes: u64,
    /// The engine behind the baseline player and regret.
    pub engine: EngineConfig,
    /// The human-move nets: `maia:RATING` players and the human ladder.
    pub maia: MaiaConfig,
}

impl Bounded for EvalConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("repeats", 1.0, 1000.0, "tries per puzzle"),
        Bound::within("rating_bin_width", 1.0, 4000.0, "rating points"),
        Bound::within("engine_player_nodes", 1.0, 10000000000.0, "nodes"),
    ];
    const NESTED: &'static [Nested] = &[
        Nested::of::<ClientConfig>("client", Many::One),
        Nested::of::<RegretConfig>("regret", Many::One),
        Nested::of::<Price>("prices", Many::Named),
        Nested::of::<crate::engine::settings::EngineConfig>("engine", Many::One),
    ];
}

impl Default for EvalConfig {
    fn default() -> Self {
        Self {
            model: None,
            templates: Vec::new(),
            seed: 0,
            repeats: 1,
            rating_bin_width: 100,
            cache_dir: None,
            client: ClientConfig::default(),
            prices: BTreeMap::new(),
            regret: RegretConfig::default(),
            engine_player_nodes: 1_000_000,
            engine: EngineConfig::default(),
            maia: MaiaConfig::default(),
        }
    }
}

/// The engine behind the engine player and regret.
#[derive(Clone, Debug)]
pub(crate) enum EvalEngine {
    /// Engine flags over the `[eval]` section's `engine` table (`eval` and
    /// `rollout` on the command line).
    Flags(EngineArgs),
    /// An engine resolved by the caller: `run` hands over its whole
    /// `[engine]` section (binary, options, workers, deadline, attempts).
    Resolved { spec: EngineSpec, pool: PoolConfig },
}

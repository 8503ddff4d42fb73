//! What generation reports: why it stopped (`Stop`), `generate.json`'s
//! counts (the funnel and the cells, overall and per stream), and what the
//! stages' fingerprints record of the games. Apart because they are plain
//! serialized records: the count fills them, the callers read them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::generate::cost::UnfilledCost;
use crate::stages::release::cells::Quota;
use crate::stages::release::funnel::GenerationFunnel;

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stop {
    QuotasMet,
    MaxGames,
    MaxCpuHours,
    /// A shard plays its whole slice.
    ShardSlice,
}

/// `generate.json`: the union of the streams' games (the funnel and the
/// cells), each stream's own when there is more than one or a named
/// profile, and the settings each profile's games were played with.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GenerateReport {
    #[serde(flatten)]
    pub counts: TargetReport,
    pub profiles: Option<Vec<StreamReport>>,
    /// As each store key hashes them ([`super::config::Settings::key`]), with the profile
    /// and the store key.
    pub settings: Vec<Value>,
}

/// The generation in a command's summary (`run --json`, `merge --json`):
/// [`GenerateReport`] with the engine CPU the games cost, overall and per
/// profile, and the cost of the cells left unfilled. Never written to a
/// file: the CPU time varies from machine to machine.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
pub(crate) struct GenerateSummary<'a> {
    #[serde(flatten)]
    pub counts: &'a TargetReport,
    pub profiles: Option<Vec<ProfileSummary<'a>>>,
    pub settings: &'a [Value],
    pub engine_cpu_hours: f64,
    /// Only when a budget stopped generation short of the target.
    pub cost_of_unfilled: Option<UnfilledCost>,
}

/// One profile's [`StreamReport`] in [`GenerateSummary`], with the engine
/// CPU its games cost.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
pub(crate) struct ProfileSummary<'a> {
    #[serde(flatten)]
    pub report: &'a StreamReport,
    pub engine_cpu_hours: Option<f64>,
}

/// Where a set of games stands against the target: why and where it
/// stopped, the funnel, and the cells.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TargetReport {
    pub stop: Stop,
    pub first_game: u64,
    pub last_game: u64,
    /// Games and puzzles at each step.
    pub funnel: GenerationFunnel,
    pub cells: usize,
    pub cells_filled: usize,
    /// The cells with a generated puzzle.
    pub per_cell: Vec<CellReport>,
    pub unfilled: Vec<CellReport>,
    /// The public indexes of `[generate] exclude` no kept puzzle is a near
    /// copy of (the novelty rule); written out only when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub novelty_against: Vec<crate::chess::novelty::index::IndexFile>,
}

/// One stream's own [`TargetReport`], with its profile and store.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StreamReport {
    #[serde(flatten)]
    pub counts: TargetReport,
    pub profile: Option<String>,
    pub store: String,
}

/// One target cell: what it wanted, what was generated in it, and what
/// the draw put in train and test.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CellReport {
    pub rating_bin: String,
    pub length: usize,
    pub mate: bool,
    pub wanted: Quota,
    pub generated: usize,
    pub train: usize,
    pub test: usize,
}

impl CellReport {
    pub(super) fn of(c: &crate::stages::release::draw::CellOutcome) -> CellReport {
        CellReport {
            rating_bin: c.cell.bin_label(),
            length: c.cell.length,
            mate: c.cell.mate,
            wanted: c.wanted,
            generated: c.available,
            train: c.train,
            test: c.test,
        }
    }
}

/// What the stages' fingerprints record of the generation.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum GenerationFingerprint<'a> {
    /// Generation's own stream alone (as it always was).
    OneStream {
        store: &'a str,
        first_game: u64,
        last_game: u64,
        stop: Stop,
        kept: usize,
    },
    /// Several streams, or a named profile: the joined store keys and each
    /// stream's games.
    Streams {
        store: String,
        streams: Vec<StreamFingerprint<'a>>,
        kept: usize,
    },
}

impl GenerationFingerprint<'_> {
    /// The store key the games were played into (joined by `+` for
    /// several streams).
    pub(crate) fn store(&self) -> &str {
        match self {
            GenerationFingerprint::OneStream { store, .. } => store,
            GenerationFingerprint::Streams { store, .. } => store,
        }
    }
}

/// One stream's store, games and stop.
#[derive(Serialize)]
pub(crate) struct StreamFingerprint<'a> {
    pub(super) profile: &'a Option<String>,
    pub(super) store: &'a str,
    pub(super) first_game: u64,
    pub(super) last_game: u64,
    pub(super) stop: Stop,
}

/// What a stage's fingerprinted config records of the generation (its
/// `generate` key, which [`GenerationFingerprint`] writes): read back to
/// check which store a finished release or a shard played into.
#[derive(Deserialize)]
struct RecordedGeneration {
    #[serde(default)]
    generate: Option<RecordedStore>,
}

/// The store key of [`GenerationFingerprint`].
#[derive(Deserialize)]
struct RecordedStore {
    #[serde(default)]
    store: Option<String>,
}

/// The store key a stage's fingerprinted `config` records; `None` when it
/// records none (the stage ran without `[generate]`).
pub(crate) fn recorded_store(config: &Value) -> Option<String> {
    RecordedGeneration::deserialize(config)
        .ok()?
        .generate?
        .store
}

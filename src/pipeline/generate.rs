//! Generating to order (`[generate]`): `run` plays self-play games in
//! batches until the generated puzzles fill the release's quotas (or a
//! named tier's), or a budget ends.
//!
//! **The batch store.** Each batch of games is played, mined, rated and
//! verified (the functions of the `selfplay`, `mine`, `rate` and `verify`
//! stages) into `<output_dir>/.generate/<key>/batch-FIRST-LAST/`, written
//! in a scratch folder and renamed into place when the batch is done, so an
//! interrupted run resumes after its last finished batch. The key hashes
//! what a game's results depend on (the self-play, mine, rate and verify
//! settings, the run seed, the engines' builds, the tool version) and
//! nothing of the target, so a larger target, another release or a shard
//! reuses the games already played.
//!
//! **The stopping rule.** A game's results depend only on (settings, seed,
//! engine, game number), never on its batch. The games' puzzles are taken
//! in game order (position repeats dropped, the first occurrence winning;
//! excluded positions dropped), and the stopping game is the first game
//! number at which the release draw over the generated puzzles alone fills
//! every quota. Batches only decide how far ahead games are played, so the
//! result does not depend on the batch size or the worker count. A
//! `max_games` budget stops at that game; `max_cpu_hours` stops after the
//! batch that spends it (recorded per batch, so a rerun decides the same).
//!
//! **The release's stages** then hold the games up to the stopping game and
//! their puzzles, assembled from the store (`Generated`), so `run --shard`
//! (its slice of `max_games`, no stopping rule) and `merge` (the stopping
//! rule over the shards' batches) write the bytes of a single run.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, for_each_row, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::{left_by_dead_process, sha256_bytes, sha256_file, write_atomic};
use crate::core::seed::{Domain, Key};
use crate::core::shard::Shard;
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::pipeline::cost::{CellSample, MiningSwitches, StreamSample};
use crate::stages::rate::{ModelReach, RatingModel};
use crate::stages::release::cells::{Cell, ExcludeBy, MateRule, Quota, Tier, position_key};
use crate::stages::release::cells::{cell_label, first_of};
use crate::stages::release::funnel::GenerationFunnel;
use crate::stages::verify::Verdict;

/// `[generate]` in pipeline.toml.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GenerateConfig {
    /// Generate to order instead of playing `selfplay.games`.
    pub enabled: bool,
    /// The quotas to fill: this tier of `[split.tiers]` (else `run --tier`,
    /// else the `[split]` quotas), counted in generated puzzles only.
    pub tier: Option<String>,
    /// Games played per batch (how far ahead of the stopping rule).
    pub batch_games: u64,
    /// Budget: the last game number played.
    pub max_games: u64,
    /// Budget: engine CPU-hours of the batches played; none by default.
    pub max_cpu_hours: Option<f64>,
    /// Puzzles kept per game, replacing `mine.max_per_game` (Epoch keeps
    /// every qualifying position).
    pub max_per_game: Option<usize>,
    /// Drop a puzzle whose position an earlier game's puzzle has.
    pub dedup_positions: bool,
    /// Puzzle files (the Lichess dump) whose positions a generated puzzle
    /// must not have.
    pub exclude: Vec<PathBuf>,
    /// Also exclude the positions of the earlier releases the release
    /// stage excludes.
    pub exclude_earlier_releases: bool,
    /// Generation's own profile: `[selfplay]` keys whose values replace
    /// that section's in the games generation plays (`[generate.selfplay]`).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub selfplay: toml::Table,
    /// Likewise for `[mine]` (`[generate.mine]`).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub mine: toml::Table,
    /// A tier's profile, applied on top of generation's own when the target
    /// is that tier (`[generate.tiers.hard.selfplay]`, `...mine]`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, Profile>,
    /// Named profiles that `bands` hand cells of the target to
    /// (`[generate.profiles.NAME.selfplay]`, `...mine]`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, Profile>,
    /// Which profile plays the games for which cells of the target: a cell
    /// goes to the first band that holds it, else to generation's own
    /// profile (`[[generate.bands]]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<ProfileBand>,
}

/// Cells of the target that a named profile plays for: rating bins inside
/// `ratings`, solver lengths inside `lengths`, mates as `mate` says (the
/// keys of `[[split.bands]]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProfileBand {
    /// `[lo, hi]`: the bins `(lo, ...]` up to `(..., hi]`.
    pub ratings: [i32; 2],
    /// `[min, max]` solver moves, inclusive.
    pub lengths: [usize; 2],
    #[serde(default)]
    pub mate: MateRule,
    /// A name of `[generate.profiles]`.
    pub profile: String,
}

impl ProfileBand {
    fn holds(&self, cell: &Cell) -> bool {
        cell.bin_lo >= self.ratings[0]
            && cell.bin_hi <= self.ratings[1]
            && (self.lengths[0]..=self.lengths[1]).contains(&cell.length)
            && self.mate.admits(cell.mate)
    }
}

/// Generation settings that differ from `[selfplay]` and `[mine]`: which
/// players make the games and which lines count. Kept as tables so that
/// any key of those sections can be set, checked against them when the
/// settings are built.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub selfplay: toml::Table,
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub mine: toml::Table,
}

/// Keys generation sets itself, which a profile may not.
const SELFPLAY_OWN_KEYS: [(&str, &str); 2] = [
    (
        "games",
        "generate.max_games and the target decide the games",
    ),
    ("seed", "every game's seed derives from pipeline.seed"),
];
const MINE_OWN_KEYS: [(&str, &str); 2] = [
    ("max_per_game", "set generate.max_per_game"),
    ("dedup_positions", "set generate.dedup_positions"),
];

/// `base` with the keys of each `(name, table)` layer in turn replacing its
/// own; a key `base` does not have, a wrong type or a key of `own` is an
/// error naming the layer.
fn overlay<T: Serialize + serde::de::DeserializeOwned>(
    base: &T,
    layers: &[(String, &toml::Table)],
    own: &[(&str, &str)],
) -> Result<T> {
    let mut merged = toml::Table::try_from(base).context("writing a section as TOML")?;
    for (name, layer) in layers {
        for (key, value) in layer.iter() {
            if let Some((_, why)) = own.iter().find(|(k, _)| k == key) {
                return Err(bad_input(format!("[{name}] may not set {key}: {why}")));
            }
            merged.insert(key.clone(), value.clone());
        }
        // Check each layer alone, so that the error names the right table.
        T::deserialize(merged.clone()).map_err(|e| bad_input(format!("[{name}]: {e}")))?;
    }
    T::deserialize(merged).map_err(|e| bad_input(format!("generation profile: {e}")))
}

/// The self-play seed of a named profile's games: drawn from the run seed
/// and the profile's name ([`Domain::GenerateProfileSeed`]).
fn profile_seed(run_seed: u64, name: &str) -> u64 {
    use rand::RngCore;
    // 63 bits: the seed is released in the `Seed` column, an int64 in the
    // card and the JSON Lines files (a run seed is a user's, and fits).
    crate::core::seed::rng(run_seed, Domain::GenerateProfileSeed, Key::Name(name)).next_u64()
        & (i64::MAX as u64)
}

impl Default for GenerateConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            tier: None,
            batch_games: 20,
            max_games: 1000,
            max_cpu_hours: None,
            max_per_game: None,
            dedup_positions: true,
            exclude: Vec::new(),
            exclude_earlier_releases: true,
            selfplay: toml::Table::new(),
            mine: toml::Table::new(),
            tiers: BTreeMap::new(),
            profiles: BTreeMap::new(),
            bands: Vec::new(),
        }
    }
}

impl GenerateConfig {
    /// The tier a run produces: `--tier`, else, generating to order, the
    /// tier the target fills (`generate.tier`).
    pub(crate) fn release_tier(&self, flag: Option<&str>) -> Option<String> {
        flag.map(str::to_string)
            .or_else(|| self.tier.clone().filter(|_| self.enabled))
    }
}

/// The sections of pipeline.toml generation uses.
pub(crate) struct Sections<'a> {
    pub generate: &'a GenerateConfig,
    /// `pipeline.seed`.
    pub seed: u64,
    /// `pipeline.output_dir`, where the store lives.
    pub output_dir: &'a Path,
    pub selfplay: &'a crate::stages::selfplay::SelfplayConfig,
    pub mine: &'a crate::stages::mine::MineConfig,
    pub rate: &'a crate::stages::rate::RateConfig,
    pub verify: crate::stages::verify::VerifyConfig,
    pub split: &'a crate::stages::release::cells::SplitConfig,
}

/// What `prepare` does with the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `run`: play batches until the stopping rule or a budget.
    Run,
    /// `run --shard`: play this shard's slice of `max_games`.
    Shard(Shard),
    /// `merge`: play nothing; the shards' batches must be in the store.
    Merge,
}

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

/// One finished batch in the store.
#[derive(Clone, Debug)]
struct Batch {
    first: u64,
    last: u64,
    dir: PathBuf,
    cpu_seconds: f64,
}

/// The games `[first, last]` taken from one batch.
#[derive(Clone, Debug)]
struct Segment {
    batch: Batch,
    first: u64,
    last: u64,
}

/// One profile's games in a release (or shard): games `first..=last` of
/// its store.
#[derive(Clone, Debug)]
struct StreamPart {
    /// The profile (`None`: generation's own).
    profile: Option<String>,
    store: PathBuf,
    key: String,
    first: u64,
    last: u64,
    stop: Stop,
    segments: Vec<Segment>,
    cpu_seconds: f64,
    /// Its cells as its games filled them, for the cost of the unfilled.
    sample: StreamSample,
}

/// The generated games and puzzles a release (or shard) holds: for each
/// profile that plays for the target, games `first..=last` of its store,
/// and which of their puzzles are kept.
#[derive(Clone, Debug)]
pub struct Generated {
    streams: Vec<StreamPart>,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) stop: Stop,
    /// Row keys of the kept puzzles (after dedup and exclusion), by stream.
    kept: HashSet<(usize, RowKey)>,
    /// The funnel and the cells, for `generate.json` and the summary.
    pub(crate) report: GenerateReport,
    /// Engine CPU seconds of the batches the games come from, as recorded
    /// when they were played (kept out of every output file: it varies).
    pub(crate) cpu_seconds: f64,
    /// The run seed (the cost projection's draws).
    seed: u64,
    /// Wall seconds this process spent playing batches, by the stage whose
    /// work it was (`selfplay`, `mine`, `rate`, `verify`): the run's table
    /// shows them as those stages' times (never written to a file).
    pub(crate) seconds_by_stage: BTreeMap<&'static str, f64>,
}

type RowKey = (String, String, String);

/// `generate.json`: the union of the streams' games (the funnel and the
/// cells), each stream's own when there is more than one or a named
/// profile, and the settings each profile's games were played with.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GenerateReport {
    #[serde(flatten)]
    pub counts: TargetReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<Vec<StreamReport>>,
    /// As each store key hashes them ([`Settings::key`]), with the profile
    /// and the store key.
    pub settings: Vec<Value>,
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
    fn of(c: &crate::stages::release::draw::CellOutcome) -> CellReport {
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
    profile: &'a Option<String>,
    store: &'a str,
    first_game: u64,
    last_game: u64,
    stop: Stop,
}

fn row_key(puzzle: &Puzzle) -> RowKey {
    (
        puzzle.id.clone(),
        puzzle.fen.to_string(),
        puzzle.moves_text(),
    )
}

/// The engine of the run, as the stages use it.
#[derive(Clone, Copy)]
pub(crate) struct Engine<'a> {
    pub spec: &'a EngineSpec,
    pub pool: &'a PoolConfig,
    /// sha256 of the engine binary.
    pub sha256: &'a str,
}

/// The settings a generated game's results depend on.
struct Settings {
    selfplay: crate::stages::selfplay::SelfplayConfig,
    mine: crate::stages::mine::MineConfig,
    rate: crate::stages::rate::RateConfig,
    verify: crate::stages::verify::VerifyConfig,
}

impl Settings {
    /// Generation's settings for a target of `tier` (`generate.tier`
    /// first) played by `profile` (a name of `[generate.profiles]`, or
    /// generation's own): `[selfplay]` and `[mine]` under generation's
    /// profile, then the tier's, then the named profile's. A named profile
    /// plays its own games: its self-play seed derives from the run seed and
    /// its name, so its game ids never meet another profile's.
    fn of(config: &Sections<'_>, tier: Option<&str>, profile: Option<&str>) -> Result<Settings> {
        let generate = &config.generate;
        for name in generate.tiers.keys() {
            if !config.split.tiers.contains_key(name) {
                return Err(bad_input(format!(
                    "[generate.tiers.{name}]: {name:?} is not a tier of [split.tiers]"
                )));
            }
        }
        // Every tier's and profile's tables must hold keys of their
        // sections, used by this run or not: a misspelt key (or a band's
        // keys under a profile's header) would otherwise wait silently for
        // the run that plays that profile.
        let tables = generate
            .tiers
            .iter()
            .map(|(name, p)| (format!("generate.tiers.{name}"), p))
            .chain(
                generate
                    .profiles
                    .iter()
                    .map(|(name, p)| (format!("generate.profiles.{name}"), p)),
            );
        for (name, table) in tables {
            overlay(
                config.selfplay,
                &[(format!("{name}.selfplay"), &table.selfplay)],
                &SELFPLAY_OWN_KEYS,
            )?;
            overlay(
                config.mine,
                &[(format!("{name}.mine"), &table.mine)],
                &MINE_OWN_KEYS,
            )?;
        }
        let tier = generate.tier.as_deref().or(tier);
        let tier_profile = tier.and_then(|name| Some((name, generate.tiers.get(name)?)));
        let mut selfplay_layers = vec![("generate.selfplay".to_string(), &generate.selfplay)];
        let mut mine_layers = vec![("generate.mine".to_string(), &generate.mine)];
        if let Some((name, profile)) = tier_profile {
            selfplay_layers.push((format!("generate.tiers.{name}.selfplay"), &profile.selfplay));
            mine_layers.push((format!("generate.tiers.{name}.mine"), &profile.mine));
        }
        let mut seed = config.seed;
        if let Some(name) = profile {
            let named = generate.profiles.get(name).ok_or_else(|| {
                bad_input(format!(
                    "[[generate.bands]]: profile {name:?} is not in [generate.profiles]"
                ))
            })?;
            selfplay_layers.push((
                format!("generate.profiles.{name}.selfplay"),
                &named.selfplay,
            ));
            mine_layers.push((format!("generate.profiles.{name}.mine"), &named.mine));
            seed = profile_seed(config.seed, name);
        }
        let selfplay = crate::stages::selfplay::SelfplayConfig {
            seed,
            games: 0,
            ..overlay(config.selfplay, &selfplay_layers, &SELFPLAY_OWN_KEYS)?
        };
        selfplay.validate()?;
        let mine = crate::stages::mine::MineConfig {
            max_per_game: generate.max_per_game.unwrap_or(config.mine.max_per_game),
            dedup_positions: generate.dedup_positions,
            ..overlay(config.mine, &mine_layers, &MINE_OWN_KEYS)?
        };
        mine.validate()?;
        let rate = crate::stages::rate::RateConfig {
            seed: config.seed,
            ..config.rate.clone()
        };
        let verify = config.verify.clone();
        Ok(Settings {
            selfplay,
            mine,
            rate,
            verify,
        })
    }

    /// The store key: a hash of the settings and the engines' builds.
    fn key(&self, engine: Engine) -> Result<(String, Value)> {
        let model = match &self.rate.model {
            Some(path) => Some(sha256_file(path)?),
            None => None,
        };
        let second_sha = match &self.verify.second_engine {
            Some(second) => Some(sha256_file(&second.spec()?.path)?),
            None => None,
        };
        // Files by content, not by path: shards on other machines agree.
        let mut rate = serde_json::to_value(&self.rate)?;
        rate["model"] = json!(model);
        let mut verify = serde_json::to_value(&self.verify)?;
        if let Some(second) = verify.get_mut("second_engine").filter(|v| v.is_object()) {
            second["path"] = json!(second_sha);
        }
        // Maia players by their nets' bytes, not the folder's path.
        let mut selfplay = serde_json::to_value(&self.selfplay)?;
        if let Some(maia) = &self.selfplay.maia
            && let Some(table) = selfplay.get_mut("maia").and_then(Value::as_object_mut)
        {
            table.remove("models_dir");
            table.insert("nets".to_string(), json!(maia.fingerprint()?));
        }
        let settings = json!({
            "tool_version": env!("CARGO_PKG_VERSION"),
            "selfplay": selfplay,
            "mine": self.mine,
            "rate": rate,
            "verify": verify,
            "engine": {"sha256": engine.sha256, "options": engine.spec.options},
        });
        let digest = sha256_bytes(serde_json::to_string(&settings)?.as_bytes());
        Ok((digest[..16].to_string(), settings))
    }
}

/// Fills the stores as `mode` asks and works out the games the release (or
/// shard) holds. `excluded_releases` are the earlier releases' folders.
///
/// Each profile that plays for the target (generation's own, and each
/// named profile `[[generate.bands]]` hand cells to) is a stream of its own
/// games with its own stopping rule over its own cells; the streams take
/// turns, a batch each, so that a CPU budget is shared. The release then
/// holds every stream's games up to its stopping game, and their puzzles,
/// deduplicated across streams in stream order.
pub(crate) fn prepare(
    config: &Sections<'_>,
    engine: Engine,
    mode: Mode,
    tier: Option<&str>,
    excluded_releases: &[PathBuf],
) -> Result<Generated> {
    let target = Target::of(config, tier, excluded_releases)?;
    let plan = stream_cells(config, &target.quotas)?;
    let settings: Vec<Settings> = plan
        .iter()
        .map(|(profile, _)| Settings::of(config, tier, profile.as_deref()))
        .collect::<Result<_>>()?;
    let stores: Vec<(PathBuf, String)> = settings
        .iter()
        .map(|settings| open_store(config, settings, engine))
        .collect::<Result<_>>()?;
    let targets: Vec<Target> = plan
        .iter()
        .map(|(_, quotas)| target.restricted_to(quotas.clone()))
        .collect();
    let (first, last) = game_range(config, mode);
    let mut walks = Vec::new();
    for (((settings, (store, _)), target), (profile, _)) in
        settings.iter().zip(&stores).zip(&targets).zip(&plan)
    {
        walks.push(Walk {
            profile: profile.clone(),
            first,
            config,
            mode,
            player: Player {
                settings,
                engine,
                store,
                pools: None,
                wall_seconds: BTreeMap::new(),
            },
            batches: stored_batches(store)?,
            counter: Counter::new(target, config.seed, 0),
            segments: Vec::new(),
            cpu_seconds: 0.0,
            played: Played::default(),
            next: first,
            last,
            games_allowed: None,
        });
    }
    let progress = BatchProgress::new(config.generate.max_cpu_hours);
    let stops = take_turns(
        &mut walks,
        mode,
        config.generate.max_cpu_hours,
        (&target, config.seed),
        &progress,
    )?;
    let seconds_by_stage = wall_seconds_by_stage(&walks);
    let played = played_settings(&settings, &stores, &plan, engine)?;
    let (streams, reports) = stream_parts(walks, stops, &stores, plan, first);
    let mut generated = Generated::assemble(&target, config.seed, first, streams, reports)?;
    generated.report.settings = played;
    generated.seconds_by_stage = seconds_by_stage;
    Ok(generated)
}

/// The games this process may play: a shard's own range, else all of
/// `1..=max_games`.
fn game_range(config: &Sections<'_>, mode: Mode) -> (u64, u64) {
    match mode {
        Mode::Shard(shard) => {
            let range = shard.range(config.generate.max_games);
            (range.start + 1, range.end)
        }
        _ => (1, config.generate.max_games),
    }
}

/// The wall seconds of every stream's batches, added up by stage.
fn wall_seconds_by_stage(walks: &[Walk<'_>]) -> BTreeMap<&'static str, f64> {
    let mut seconds_by_stage: BTreeMap<&'static str, f64> = BTreeMap::new();
    for walk in walks {
        for (stage, seconds) in &walk.player.wall_seconds {
            *seconds_by_stage.entry(stage).or_default() += seconds;
        }
    }
    seconds_by_stage
}

/// The settings each profile's games were played with (after the
/// overlays), as their store key hashes them: machine-independent.
fn played_settings(
    settings: &[Settings],
    stores: &[(PathBuf, String)],
    plan: &[StreamCells],
    engine: Engine,
) -> Result<Vec<Value>> {
    settings
        .iter()
        .zip(stores)
        .zip(plan)
        .map(|((settings, (_, key)), (profile, _))| {
            let (_, mut described) = settings.key(engine)?;
            described["profile"] = json!(profile);
            described["store"] = json!(key);
            Ok(described)
        })
        .collect()
}

/// Each stream's part of the release (its games up to its stop) and its
/// report, in stream order.
fn stream_parts(
    walks: Vec<Walk<'_>>,
    stops: Vec<Stop>,
    stores: &[(PathBuf, String)],
    plan: Vec<StreamCells>,
    first: u64,
) -> (Vec<StreamPart>, Vec<TargetReport>) {
    let mut streams = Vec::new();
    let mut reports = Vec::new();
    for (((walk, stop), (store, key)), (profile, _)) in walks
        .into_iter()
        .zip(stops)
        .zip(stores.iter().cloned())
        .zip(plan)
    {
        let last = walk.segments.last().map_or(first - 1, |s| s.last);
        reports.push(walk.counter.report(stop, first, last));
        let sample = walk.sample(profile.clone(), key.clone(), stop);
        streams.push(StreamPart {
            profile,
            store,
            key,
            first,
            last,
            stop,
            segments: walk.segments,
            cpu_seconds: walk.cpu_seconds,
            sample,
        });
    }
    (streams, reports)
}

/// A profile (`None`: generation's own) and the target cells it plays for.
type StreamCells = (Option<String>, BTreeMap<Cell, Quota>);

/// The target's cells by the profile that plays for them: generation's
/// own first (`None`, the cells no band holds), then each named profile in
/// name order. A profile that holds no cell plays nothing.
fn stream_cells(config: &Sections<'_>, quotas: &BTreeMap<Cell, Quota>) -> Result<Vec<StreamCells>> {
    let generate = config.generate;
    for band in &generate.bands {
        if !generate.profiles.contains_key(&band.profile) {
            return Err(bad_input(format!(
                "[[generate.bands]]: profile {:?} is not in [generate.profiles]",
                band.profile
            )));
        }
    }
    let mut by_profile: BTreeMap<Option<String>, BTreeMap<Cell, Quota>> = BTreeMap::new();
    for (cell, quota) in quotas {
        let profile = generate
            .bands
            .iter()
            .find(|band| band.holds(cell))
            .map(|band| band.profile.clone());
        by_profile.entry(profile).or_default().insert(*cell, *quota);
    }
    Ok(by_profile.into_iter().collect())
}

/// Plays the streams in turns, a batch each, until each stops. Under a CPU
/// budget (`run` only) each turn's batch is sized to the stream's share of
/// what the budget leaves (the budget left split evenly among the streams
/// still playing, at the CPU per game the stream has measured), so every
/// stream plays from the first round and the run ends within about one
/// game of the budget; a stream whose share is under half a game stops,
/// and every stream stops once the budget is spent. Returns each stream's
/// stop.
///
/// Lock-step turns, not turns by need: giving the next batch to the stream
/// with the least CPU per puzzle it still wanted sent the CPU to the hard
/// band, which turns it into cells slowest, and filled fewer of the APO
/// shape's cells for the same CPU (docs/results.md, "turns by need").
fn take_turns(
    walks: &mut [Walk<'_>],
    mode: Mode,
    max_cpu_hours: Option<f64>,
    (target, seed): (&Target, u64),
    progress: &BatchProgress,
) -> Result<Vec<Stop>> {
    let mut stops: Vec<Option<Stop>> = vec![None; walks.len()];
    // Every stream's puzzles in every cell, as the release draws them (the
    // streams' own counters hold their own cells only); kept for the
    // progress lines alone.
    let mut all_streams = Counter::new(target, seed, 0);
    let budget = max_cpu_hours
        .filter(|_| mode == Mode::Run)
        .map(|h| h * 3600.0);
    while stops.iter().any(Option::is_none) {
        for index in 0..walks.len() {
            if stops[index].is_some() {
                continue;
            }
            if let Some(budget) = budget {
                let spent: f64 = walks.iter().map(|w| w.cpu_seconds).sum();
                let playing = stops.iter().filter(|s| s.is_none()).count();
                let share = (budget - spent) / playing.max(1) as f64;
                let allowed = games_within(walks, index, share);
                if allowed == 0 {
                    stops[index] = Some(Stop::MaxCpuHours);
                    continue;
                }
                walks[index].games_allowed = Some(allowed);
            }
            let taken = walks[index].segments.len();
            stops[index] = walks[index].step()?;
            if walks[index].segments.len() > taken && progress.shown() {
                if let Some(segment) = walks[index].segments.last() {
                    all_streams.stream = index;
                    all_streams.add_segment(segment, false)?;
                }
                progress.batch(walks, index, all_streams.fill());
            }
            let spent: f64 = walks.iter().map(|w| w.cpu_seconds).sum();
            if stops[index].is_none() && budget.is_some_and(|b| spent >= b) {
                for stop in stops.iter_mut().filter(|s| s.is_none()) {
                    *stop = Some(Stop::MaxCpuHours);
                }
            }
        }
    }
    Ok(stops.into_iter().flatten().collect())
}

/// The games `share` engine CPU-seconds pay for in stream `index`, at the
/// CPU per game it measured (else the mean of the streams that measured
/// one), rounded: 0 when the share is under half a game. Before any
/// stream measured a game: a first batch of a quarter of `batch_games`,
/// so that no stream's first batch spends the others' budget.
fn games_within(walks: &[Walk<'_>], index: usize, share: f64) -> u64 {
    let per_game = |w: &Walk<'_>| {
        let games = w.next - w.first;
        (games > 0 && w.cpu_seconds > 0.0).then(|| w.cpu_seconds / games as f64)
    };
    let measured: Vec<f64> = walks.iter().filter_map(per_game).collect();
    let mean = (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / measured.len() as f64);
    if share <= 0.0 {
        return 0;
    }
    match per_game(&walks[index]).or(mean) {
        Some(per_game) => (share / per_game).round() as u64,
        None => walks[index].config.generate.batch_games.max(1).div_ceil(4),
    }
}

/// One line per batch taken while generating: on a terminal a human line
/// on stderr, without one the same line timestamped, under `--json` a
/// `{"event": "batch", ...}` JSON line on stderr (stdout keeps the one
/// summary object). The rates
/// and the ETA come from the batches played by this process; nothing of
/// it goes into a file.
struct BatchProgress {
    started: std::time::Instant,
    max_cpu_hours: Option<f64>,
}

impl BatchProgress {
    fn new(max_cpu_hours: Option<f64>) -> BatchProgress {
        BatchProgress {
            started: std::time::Instant::now(),
            max_cpu_hours,
        }
    }

    /// Whether progress lines are shown at all: on a terminal, as plain
    /// timestamped lines without one, as JSON lines under `--json`.
    fn shown(&self) -> bool {
        true
    }

    /// Reports the batch walk `index` just took; `fill` is every stream's
    /// [`Counter::fill`] over the whole target.
    fn batch(&self, walks: &[Walk<'_>], index: usize, fill: [u64; 4]) {
        if !self.shown() {
            return;
        }
        let line = self.line(walks, index, fill);
        if crate::core::progress::enabled() {
            eprintln!("{}", line.human());
        } else if crate::core::progress::plain_lines() {
            crate::core::progress::note(&line.human());
        } else {
            match serde_json::to_string(&line) {
                Ok(json) => eprintln!("{json}"),
                Err(error) => eprintln!("puzzleforge: progress line: {error}"),
            }
        }
    }

    /// The batch's progress. The cells are those of every stream's puzzles
    /// taken so far, over the whole target, as the release draws them but
    /// deduplicated in the order the batches were taken (the release
    /// dedups in stream order, so it may differ by a repeated position).
    fn line(&self, walks: &[Walk<'_>], index: usize, fill: [u64; 4]) -> BatchLine {
        let walk = &walks[index];
        let segment = walk.segments.last();
        let sum = |f: &dyn Fn(&Walk<'_>) -> f64| walks.iter().map(f).sum::<f64>();
        // This stream's games of the max_games the user set (each stream
        // has its own), not a sum over the streams.
        let games = walk.next - walk.first;
        let max_games = walk.last + 1 - walk.first;
        let all_games = sum(&|w| (w.next - w.first) as f64) as u64;
        let all_max_games = sum(&|w| (w.last + 1 - w.first) as f64) as u64;
        let verified = walks.iter().map(|w| w.counter.funnel.verified).sum::<u64>();
        let [cells_filled, cells, drawn, wanted] = fill;
        let cpu_seconds = sum(&|w| w.cpu_seconds);
        let elapsed = self.started.elapsed().as_secs_f64();
        // ETA: the soonest of filling the quotas at the rate puzzles were
        // drawn so far, and of spending a budget at the rate it was spent.
        let played_games = sum(&|w| w.played.games as f64);
        let played_cpu = sum(&|w| w.played.cpu_seconds);
        let mut etas = Vec::new();
        if played_games > 0.0 && drawn > 0 {
            etas.push(elapsed * (wanted - drawn.min(wanted)) as f64 / drawn as f64);
        }
        if played_games > 0.0 {
            etas.push(elapsed / played_games * (all_max_games - all_games) as f64);
        }
        if let Some(hours) = self.max_cpu_hours.filter(|_| played_cpu > 0.0) {
            etas.push(elapsed / played_cpu * (hours * 3600.0 - cpu_seconds).max(0.0));
        }
        BatchLine {
            event: "batch",
            profile: walk.profile.clone(),
            first_game: segment.map(|s| s.first),
            last_game: segment.map(|s| s.last),
            played: walk.played.last_batch,
            games,
            max_games,
            engine_cpu_hours: cpu_seconds / 3600.0,
            max_cpu_hours: self.max_cpu_hours,
            verified,
            cells_filled,
            cells,
            puzzles_drawn: drawn,
            puzzles_wanted: wanted,
            elapsed_seconds: elapsed,
            eta_seconds: etas.into_iter().reduce(f64::min),
        }
    }
}

/// One batch's progress line (`{"event": "batch", ...}` under `--json`).
#[derive(Serialize)]
struct BatchLine {
    event: &'static str,
    profile: Option<String>,
    first_game: Option<u64>,
    last_game: Option<u64>,
    /// Played by this process (else taken from the store).
    played: bool,
    games: u64,
    max_games: u64,
    engine_cpu_hours: f64,
    max_cpu_hours: Option<f64>,
    verified: u64,
    cells_filled: u64,
    cells: u64,
    puzzles_drawn: u64,
    puzzles_wanted: u64,
    elapsed_seconds: f64,
    eta_seconds: Option<f64>,
}

impl BatchLine {
    fn human(&self) -> String {
        let clock = |seconds: f64| {
            let s = seconds.round() as u64;
            format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        };
        let game = |game: Option<u64>| game.map_or("?".to_string(), |g| g.to_string());
        let budget = (self.max_cpu_hours).map_or(String::new(), |h| format!("/{h:.2}"));
        format!(
            "generate{}: games {}-{} {} | {}/{} games | engine CPU {:.3}{budget} h | {} verified | cells {}/{} ({}/{} puzzles) | {} elapsed, eta {}",
            (self.profile.as_deref()).map_or(String::new(), |p| format!(" [{p}]")),
            game(self.first_game),
            game(self.last_game),
            if self.played {
                "played"
            } else {
                "from the store"
            },
            self.games,
            self.max_games,
            self.engine_cpu_hours,
            self.verified,
            self.cells_filled,
            self.cells,
            self.puzzles_drawn,
            self.puzzles_wanted,
            clock(self.elapsed_seconds),
            self.eta_seconds.map_or("?".to_string(), clock),
        )
    }
}

/// The store key of a run of `tier`, nothing played: a rerun of a
/// finished release checks it before generating anything.
pub(crate) fn store_key(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
) -> Result<String> {
    // The quotas decide which profiles play: no exclude file is read.
    let (_, quotas) = target_quotas(config, tier)?;
    let keys = stream_cells(config, &quotas)?
        .iter()
        .map(|(profile, _)| {
            Ok(Settings::of(config, tier, profile.as_deref())?
                .key(engine)?
                .0)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(keys.join("+"))
}

/// For `bench generate`: games `1..=games` played, mined, rated and
/// verified into `dir` as one batch, exactly as a target run of `tier`
/// plays a batch. Returns the batch folder, the mine settings it used, and
/// the self-play and mine settings as JSON.
pub(crate) fn play_one_batch(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
    games: u64,
    dir: &Path,
) -> Result<(PathBuf, crate::stages::mine::MineConfig, Value)> {
    let settings = Settings::of(config, tier, None)?;
    let described = json!({"selfplay": settings.selfplay, "mine": settings.mine});
    let mut player = Player {
        settings: &settings,
        engine,
        store: dir,
        pools: None,
        wall_seconds: BTreeMap::new(),
    };
    let batch = player.play(1, games.max(1))?;
    Ok((batch.dir, settings.mine.clone(), described))
}

/// The store of these settings under the output folder, created with a
/// `settings.json` saying what its key hashes; its dead scratch removed.
fn open_store(
    config: &Sections<'_>,
    settings: &Settings,
    engine: Engine,
) -> Result<(PathBuf, String)> {
    let (key, described) = settings.key(engine)?;
    let store = config.output_dir.join(".generate").join(&key);
    std::fs::create_dir_all(&store).with_context(|| format!("creating {}", store.display()))?;
    let described_path = store.join("settings.json");
    if !described_path.is_file() {
        write_atomic(
            &described_path,
            format!("{}\n", serde_json::to_string_pretty(&described)?).as_bytes(),
        )?;
    }
    remove_dead_scratch(&store)?;
    Ok((store, key))
}

/// One stream's games taken in order: stored batches reused, missing ones
/// played.
struct Walk<'a> {
    config: &'a Sections<'a>,
    mode: Mode,
    player: Player<'a>,
    batches: BTreeMap<u64, Batch>,
    counter: Counter<'a>,
    segments: Vec<Segment>,
    cpu_seconds: f64,
    /// What this process played itself (not taken from the store).
    played: Played,
    /// The stream's profile (`None`: generation's own), for the progress.
    profile: Option<String>,
    /// The first game the walk takes, the next, and the last it may take.
    first: u64,
    next: u64,
    last: u64,
    /// The most games its next played batch may hold: what a CPU budget
    /// leaves it (`None`: `generate.batch_games`).
    games_allowed: Option<u64>,
}

/// The batches a walk played in this process: for the progress lines'
/// rates (stored batches cost no time now).
#[derive(Clone, Copy, Debug, Default)]
struct Played {
    games: u64,
    cpu_seconds: f64,
    /// Whether the walk's last batch was played now.
    last_batch: bool,
}

impl Walk<'_> {
    /// Takes the next batch's games; the stop once the stopping rule is met
    /// or the games run out.
    fn step(&mut self) -> Result<Option<Stop>> {
        let shard = matches!(self.mode, Mode::Shard(_));
        let out_of_games = if shard {
            Stop::ShardSlice
        } else {
            Stop::MaxGames
        };
        if self.next > self.last {
            return Ok(Some(out_of_games));
        }
        let batch = self.batch_at(self.next, self.last)?;
        check_batch(&batch.dir)?;
        let segment = Segment {
            first: self.next,
            last: batch.last.min(self.last),
            batch,
        };
        self.cpu_seconds += segment.batch.cpu_seconds;
        self.next = segment.last + 1;
        if let Some(game) = self.counter.add_segment(&segment, !shard)? {
            self.segments.push(Segment {
                last: game,
                ..segment
            });
            return Ok(Some(Stop::QuotasMet));
        }
        self.segments.push(segment);
        // Out of games: said on the next turn, after the budget is checked
        // (a batch that spends the budget stops the run for that reason).
        Ok(None)
    }

    /// The stored batch holding game `next`, else a new batch from it (up
    /// to `batch_games`, `last` and the next stored batch).
    fn batch_at(&mut self, next: u64, last: u64) -> Result<Batch> {
        self.played.last_batch = false;
        if let Some(batch) = covering(&self.batches, next) {
            return Ok(batch);
        }
        if self.mode == Mode::Merge {
            return Err(bad_input(format!(
                "{}: game {next} is in no stored batch: run every shard (`run --shard I/N`) with this config before `merge`, on the output folder merge reads",
                self.player.store.display()
            )));
        }
        let size = (self.config.generate.batch_games.max(1))
            .min(self.games_allowed.unwrap_or(u64::MAX))
            .max(1);
        let end = (next + size - 1)
            .min(last)
            .min(next_stored_start(&self.batches, next).map_or(u64::MAX, |s| s - 1));
        let batch = self.player.play(next, end)?;
        self.batches.insert(batch.first, batch.clone());
        self.played.games += batch.last - batch.first + 1;
        self.played.cpu_seconds += batch.cpu_seconds;
        self.played.last_batch = true;
        Ok(batch)
    }
}

/// The stored batch holding game `game`.
fn covering(batches: &BTreeMap<u64, Batch>, game: u64) -> Option<Batch> {
    batches
        .range(..=game)
        .next_back()
        .map(|(_, b)| b)
        .filter(|b| b.last >= game)
        .cloned()
}

/// The first stored batch starting after `game`.
fn next_stored_start(batches: &BTreeMap<u64, Batch>, game: u64) -> Option<u64> {
    batches.range(game + 1..).next().map(|(start, _)| *start)
}

fn batch_name(first: u64, last: u64) -> String {
    format!("batch-{first:08}-{last:08}")
}

/// The finished batches of a store, by first game.
fn stored_batches(store: &Path) -> Result<BTreeMap<u64, Batch>> {
    let mut batches = BTreeMap::new();
    let entries =
        std::fs::read_dir(store).with_context(|| format!("reading {}", store.display()))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((first, last)) = name
            .strip_prefix("batch-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        else {
            continue;
        };
        batches.insert(first, Batch::stored(entry.path(), first, last)?);
    }
    Ok(batches)
}

impl Batch {
    fn stored(dir: PathBuf, first: u64, last: u64) -> Result<Batch> {
        let cpu_seconds = read_batch_record(&dir)?.engine_cpu_seconds;
        Ok(Batch {
            first,
            last,
            dir,
            cpu_seconds,
        })
    }
}

/// The sha256 of each of a batch's files, as `batch.json` records them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchFiles {
    #[serde(rename = "games.pgn")]
    games: String,
    #[serde(rename = "mined.csv")]
    mined: String,
    #[serde(rename = "rated.csv")]
    rated: String,
    #[serde(rename = "verify.jsonl")]
    verify_report: String,
    #[serde(rename = "verified.csv")]
    verified: String,
}

impl BatchFiles {
    /// The files of a batch, in the order `batch.json` records them (the
    /// names the fields are serialized under).
    const NAMES: [&'static str; 5] = [
        "games.pgn",
        "mined.csv",
        "rated.csv",
        "verify.jsonl",
        "verified.csv",
    ];

    /// The sha256 of each file in `dir`.
    fn of(dir: &Path) -> Result<BatchFiles> {
        let [games, mined, rated, verify_report, verified] =
            Self::NAMES.map(|name| sha256_file(&dir.join(name)));
        Ok(BatchFiles {
            games: games?,
            mined: mined?,
            rated: rated?,
            verify_report: verify_report?,
            verified: verified?,
        })
    }

    /// Each file's name and recorded sha256.
    fn named(&self) -> [(&'static str, &str); 5] {
        let [games, mined, rated, verify_report, verified] = Self::NAMES;
        [
            (games, &self.games),
            (mined, &self.mined),
            (rated, &self.rated),
            (verify_report, &self.verify_report),
            (verified, &self.verified),
        ]
    }
}

/// A stored batch proves its bytes: each of its files has the sha256
/// `batch.json` records; else an error (exit 2) naming the file and how
/// to play the batch again.
fn check_batch(dir: &Path) -> Result<()> {
    let record = read_batch_record(dir)?;
    let again = play_again(dir);
    let Some(files) = record.files else {
        return Err(bad_input(format!(
            "{}: records no sha256 of the batch's files (an older puzzleforge wrote the batch); {again}",
            dir.join("batch.json").display()
        )));
    };
    for (name, sha) in files.named() {
        let path = dir.join(name);
        if sha256_file(&path).ok().as_deref() != Some(sha) {
            return Err(bad_input(format!(
                "{}: changed or missing since the batch was stored ({} records its sha256); {again}",
                path.display(),
                dir.join("batch.json").display()
            )));
        }
    }
    Ok(())
}

/// What to do about a damaged stored batch `dir`: remove it and rerun,
/// which plays its games again.
fn play_again(dir: &Path) -> String {
    format!(
        "remove {} and rerun (`puzzleforge run`, or the `run --shard I/N` that played those games) to play its games again",
        dir.display()
    )
}

/// A stored batch's `batch.json`; missing, unreadable or not a record,
/// an error (exit 2) saying how to play the batch again. A batch folder
/// is moved into the store with its `batch.json` written, so one without
/// it was damaged after: it is bad input, not a failure of this run.
pub(crate) fn read_batch_record(dir: &Path) -> Result<BatchRecord> {
    let path = dir.join("batch.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "missing (the batch folder holds no record of its games)".to_string()
        } else {
            format!("cannot be read: {e}")
        };
        bad_input(format!("{}: {why}; {}", path.display(), play_again(dir)))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "{}: not a batch record: {e}; {}",
            path.display(),
            play_again(dir)
        ))
    })
}

/// The scratch folder name of a batch being written by this process: the
/// host is part of it, since shards on other machines may share the store.
fn scratch_name(batch: &str) -> String {
    format!(".{batch}.{}.tmp-{}", host_name(), std::process::id())
}

/// This machine's name as a file name part.
fn host_name() -> String {
    crate::pipeline::lock::host_name().replace(['/', '.'], "_")
}

/// Removes the scratch folders this host's dead processes left (a killed
/// run's half-written batch).
fn remove_dead_scratch(store: &Path) -> Result<()> {
    let host = format!(".{}.tmp-", host_name());
    for entry in std::fs::read_dir(store)?.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".batch-") && left_by_dead_process(&name, &host) {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Plays, mines, rates and verifies batches into the store.
struct Player<'a> {
    settings: &'a Settings,
    engine: Engine<'a>,
    store: &'a Path,
    /// The engine pools, started with the first batch played.
    pools: Option<(EnginePool, Option<EnginePool>)>,
    /// Wall seconds of the batches played, by stage.
    wall_seconds: BTreeMap<&'static str, f64>,
}

/// Engine CPU and wall time of a batch's steps.
struct StepClock {
    cpu_mark: f64,
    wall_mark: std::time::Instant,
}

impl StepClock {
    fn new(cpu_now: f64) -> StepClock {
        StepClock {
            cpu_mark: cpu_now,
            wall_mark: std::time::Instant::now(),
        }
    }

    /// Ends step `name` (`extra`: CPU seconds the pools do not count);
    /// gives the step's engine CPU seconds.
    fn lap(
        &mut self,
        name: &'static str,
        cpu_now: f64,
        extra: f64,
        wall: &mut BTreeMap<&'static str, f64>,
    ) -> f64 {
        let cpu = cpu_now - self.cpu_mark + extra;
        self.cpu_mark = cpu_now;
        *wall.entry(name).or_default() += self.wall_mark.elapsed().as_secs_f64();
        self.wall_mark = std::time::Instant::now();
        cpu
    }
}

/// A stored batch's record, `batch.json`: its games' funnel, in total and
/// per game, the engine CPU it cost, and the sha256 of each of its files.
/// Written once, when the batch is played; read by every run that takes
/// the batch from the store.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchRecord {
    pub first: u64,
    pub last: u64,
    pub games: u64,
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
    pub mined: u64,
    pub verified: u64,
    pub engine_cpu_seconds: f64,
    pub engine_cpu_seconds_by_step: StepSeconds,
    pub per_game: Vec<GameFunnel>,
    /// `None` in a batch an older puzzleforge wrote, which [`check_batch`]
    /// then names.
    #[serde(default)]
    pub files: Option<BatchFiles>,
}

/// A batch's engine CPU seconds by step (the rating's own engines
/// included in `rate`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct StepSeconds {
    pub selfplay: f64,
    pub mine: f64,
    pub rate: f64,
    pub verify: f64,
}

impl StepSeconds {
    /// The steps by name, in the order a batch runs them.
    pub fn named(&self) -> [(&'static str, f64); 4] {
        [
            ("selfplay", self.selfplay),
            ("mine", self.mine),
            ("rate", self.rate),
            ("verify", self.verify),
        ]
    }
}

/// One game's funnel in a batch, so that a release's counts never depend
/// on where the batches begin and end.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct GameFunnel {
    pub game: u64,
    #[serde(flatten)]
    pub funnel: crate::stages::mine::UnitFunnel,
}

/// The engine CPU seconds of the pools' searches.
fn pools_cpu(pool: &EnginePool, second: &Option<EnginePool>) -> f64 {
    pool.search_cpu_seconds() + second.as_ref().map_or(0.0, |p| p.search_cpu_seconds())
}

impl Player<'_> {
    /// Batch `first..=last`: taken from the store when there, else played
    /// into a scratch folder and stored under its name.
    fn play(&mut self, first: u64, last: u64) -> Result<Batch> {
        let name = batch_name(first, last);
        let dir = self.store.join(&name);
        // One process plays a batch; another run wanting it (a release
        // generated at the same time from this store) waits and takes it.
        let _playing = crate::pipeline::lock::FileLock::wait(
            &self.store.join(format!(".{name}.lock")),
            "another run playing the same batch",
        )?;
        if dir.is_dir() {
            return Batch::stored(dir, first, last);
        }
        self.start_pools()?;
        let scratch = self.store.join(scratch_name(&name));
        crate::core::fileio::create_scratch_dir(&scratch)?;
        let cpu_seconds = self.play_steps(&scratch, first, last)?;
        store_played_batch(&scratch, dir, first, last, cpu_seconds)
    }

    /// Starts the engine pools, once: a run whose batches are all stored
    /// never starts an engine.
    fn start_pools(&mut self) -> Result<()> {
        if self.pools.is_none() {
            let pool = EnginePool::new(self.engine.spec.clone(), self.engine.pool.clone())?;
            let second = match &self.settings.verify.second_engine {
                Some(second) => Some(second.pool(&pool)?),
                None => None,
            };
            self.pools = Some((pool, second));
        }
        Ok(())
    }

    /// Plays, mines, rates and verifies games `first..=last` into
    /// `scratch`, ending with its `batch.json`; gives the engine CPU
    /// seconds spent.
    fn play_steps(&mut self, scratch: &Path, first: u64, last: u64) -> Result<f64> {
        let Some((pool, second)) = self.pools.as_mut() else {
            unreachable!("the pools are started before a batch is played")
        };
        let wall = &mut self.wall_seconds;
        let before = pools_cpu(pool, second);
        let mut clock = StepClock::new(before);
        let settings = self.settings;
        let games = scratch.join("games.pgn");
        // Bars on a terminal (quiet without one, or under --json).
        pool.set_progress(Some("selfplay"));
        crate::stages::selfplay::run_selfplay_range(
            &settings.selfplay,
            pool,
            &games,
            first..=last,
        )?;
        let selfplay_cpu = clock.lap("selfplay", pools_cpu(pool, second), 0.0, wall);
        let loaded = crate::stages::mine::load_input(&games)?;
        let mined = scratch.join("mined.csv");
        pool.set_progress(Some("mine"));
        let mine =
            crate::stages::mine::mine_loaded_per_unit(&settings.mine, pool, &loaded, &mined)?;
        pool.set_progress(Some("verify"));
        let mine_cpu = clock.lap("mine", pools_cpu(pool, second), 0.0, wall);
        let rated = scratch.join("rated.csv");
        let rate_cpu = rate_batch(settings, self.engine, &mined, &rated)?;
        let rate_step_cpu = clock.lap("rate", pools_cpu(pool, second), rate_cpu, wall);
        let (_, verify) = crate::stages::verify::run_verify_with(
            &settings.verify,
            pool,
            second.as_ref(),
            &crate::stages::verify::VerifyFiles {
                input: &rated,
                report: &scratch.join("verify.jsonl"),
                puzzles_out: Some(&scratch.join("verified.csv")),
            },
        )?;
        let verify_cpu = clock.lap("verify", pools_cpu(pool, second), 0.0, wall);
        let cpu_seconds = pools_cpu(pool, second) - before + rate_cpu;
        let per_game: Vec<GameFunnel> = (first..=last)
            .zip(&mine.per_unit)
            .map(|(game, funnel)| GameFunnel {
                game,
                funnel: *funnel,
            })
            .collect();
        let total = |count: fn(&crate::stages::mine::UnitFunnel) -> u64| {
            mine.per_unit.iter().map(count).sum::<u64>()
        };
        let record = BatchRecord {
            first,
            last,
            // Self-play plays every game of the range: the count its summary gives.
            games: last - first + 1,
            positions: total(|f| f.positions),
            full_searches: total(|f| f.full_searches),
            candidates: total(|f| f.candidates),
            mined: mine.puzzles,
            verified: verify.verified,
            engine_cpu_seconds: cpu_seconds,
            engine_cpu_seconds_by_step: StepSeconds {
                selfplay: selfplay_cpu,
                mine: mine_cpu,
                rate: rate_step_cpu,
                verify: verify_cpu,
            },
            per_game,
            files: Some(BatchFiles::of(scratch)?),
        };
        write_atomic(
            &scratch.join("batch.json"),
            format!("{}\n", serde_json::to_string_pretty(&record)?).as_bytes(),
        )?;
        Ok(cpu_seconds)
    }
}

/// Rates the batch's mined puzzles into `rated`; gives the rating's engine
/// CPU seconds. The rating runs its own pool (with its own bar), whose
/// engines are reaped when it ends: their CPU time is this process's
/// children's, which the pools' counters do not see.
fn rate_batch(settings: &Settings, engine: Engine<'_>, mined: &Path, rated: &Path) -> Result<f64> {
    let rate_before = crate::engine::process::process_tree_cpu_seconds();
    crate::stages::rate::run_rate_with(&crate::stages::rate::RateJob {
        input: mined,
        output: rated,
        calibrate: &[],
        save_model: None,
        features: Default::default(),
        config: &settings.rate,
        engine: engine.spec.clone(),
        pool: engine.pool.clone(),
    })?;
    Ok(crate::engine::process::process_tree_cpu_seconds() - rate_before)
}

/// Moves a played batch from `scratch` to its place `dir` in the store.
fn store_played_batch(
    scratch: &Path,
    dir: PathBuf,
    first: u64,
    last: u64,
    cpu_seconds: f64,
) -> Result<Batch> {
    if let Err(error) = std::fs::rename(scratch, &dir) {
        // Stored meanwhile by a process the lock does not reach (a
        // shard on another machine): its batch has the same games.
        if dir.join("batch.json").is_file() {
            std::fs::remove_dir_all(scratch)
                .with_context(|| format!("removing {}", scratch.display()))?;
            return Batch::stored(dir, first, last);
        }
        return Err(error)
            .with_context(|| format!("renaming {} to {}", scratch.display(), dir.display()));
    }
    Ok(Batch {
        first,
        last,
        dir,
        cpu_seconds,
    })
}

/// What to fill: the quota table and which puzzles may count.
struct Target {
    quotas: BTreeMap<Cell, Quota>,
    tier: Option<Tier>,
    bin_width: i32,
    /// Verified puzzles only (`[verify] policy = "drop"`).
    verified_only: bool,
    /// Position keys no generated puzzle may have.
    excluded: HashSet<String>,
    /// `generate.dedup_positions`.
    dedup: bool,
    /// The ratings the rating model gives without extrapolating; `None`
    /// without a model file (the rate stage then says why).
    reach: Option<ModelReach>,
}

/// The target's tier (`generate.tier` first) and its cells' quotas: what
/// decides which profiles play, read without the exclude files.
fn target_quotas(
    config: &Sections<'_>,
    tier: Option<&str>,
) -> Result<(Option<Tier>, BTreeMap<Cell, Quota>)> {
    let name = config.generate.tier.as_deref().or(tier);
    let tier = match name {
        Some(name) => Some(config.split.tiers.get(name).cloned().ok_or_else(|| {
            bad_input(format!(
                "generate.tier {name:?} is not a tier of [split.tiers]"
            ))
        })?),
        None => None,
    };
    let quotas = config.split.quota_table(tier.as_ref())?;
    if quotas.is_empty() {
        return Err(bad_input("[generate]: the target has no cell with a quota"));
    }
    Ok((tier, quotas))
}

impl Target {
    fn of(config: &Sections<'_>, tier: Option<&str>, releases: &[PathBuf]) -> Result<Target> {
        let (tier, quotas) = target_quotas(config, tier)?;
        let mut excluded = HashSet::new();
        let mut files = config.generate.exclude.clone();
        if config.generate.exclude_earlier_releases {
            for release in releases {
                files.extend(crate::stages::release::card::split_files(release));
            }
        }
        for file in &files {
            // Strict: a row whose position cannot be read would exclude
            // nothing, silently; the file is refused instead.
            let mut unreadable = Vec::new();
            for_each_row(file, |(line, row)| {
                let key = row.and_then(|p| {
                    position_key(&p, ExcludeBy::Position)
                        .map_err(crate::chess::record::RowError::from)
                });
                match key {
                    Ok(key) => _ = excluded.insert(key),
                    Err(e) => unreadable.push(format!("line {line} ({e})")),
                }
                Ok(())
            })
            .with_context(|| format!("reading the exclusions {}", file.display()))?;
            if !unreadable.is_empty() {
                return Err(bad_input(format!(
                    "{}: {} row(s) of this [generate] exclude file cannot be read, so their positions would not be excluded: {}{}; fix or remove them",
                    file.display(),
                    unreadable.len(),
                    unreadable[..unreadable.len().min(5)].join(", "),
                    if unreadable.len() > 5 { ", ..." } else { "" }
                )));
            }
        }
        Ok(Target {
            quotas,
            tier,
            bin_width: config.split.bin_width,
            verified_only: config.verify.policy == crate::stages::verify::Policy::Drop,
            excluded,
            dedup: config.generate.dedup_positions,
            // A model that does not load is the rate stage's error to
            // report, with its reason; here it only leaves the reach unknown.
            reach: config
                .rate
                .model
                .as_deref()
                .and_then(|path| RatingModel::load(path).ok())
                .and_then(|model| ModelReach::of(&model)),
        })
    }
}

impl Target {
    /// The same target with only `quotas`' cells (one stream's share).
    fn restricted_to(&self, quotas: BTreeMap<Cell, Quota>) -> Target {
        Target {
            quotas,
            tier: self.tier.clone(),
            bin_width: self.bin_width,
            verified_only: self.verified_only,
            excluded: self.excluded.clone(),
            dedup: self.dedup,
            reach: self.reach.clone(),
        }
    }
}

/// Counts the generated puzzles in game order and finds the stopping game.
struct Counter<'a> {
    target: &'a Target,
    seed: u64,
    /// The stream whose games are being added (part of the kept keys and
    /// of the draw's game groups).
    stream: usize,
    seen: HashSet<String>,
    kept: HashSet<(usize, RowKey)>,
    candidates: Vec<crate::stages::release::draw::Candidate>,
    funnel: GenerationFunnel,
}

impl<'a> Counter<'a> {
    fn new(target: &'a Target, seed: u64, stream: usize) -> Counter<'a> {
        Counter {
            target,
            seed,
            stream,
            seen: HashSet::new(),
            kept: HashSet::new(),
            candidates: Vec::new(),
            funnel: GenerationFunnel::default(),
        }
    }

    /// Adds a segment's games and their puzzles, game by game; with `stop`,
    /// returns the first game at which every quota is met (the games after
    /// it are not counted).
    fn add_segment(&mut self, segment: &Segment, stop: bool) -> Result<Option<u64>> {
        let dir = &segment.batch.dir;
        let record = read_batch_record(dir)?;
        let per_game: BTreeMap<u64, crate::stages::mine::UnitFunnel> =
            record.per_game.iter().map(|g| (g.game, g.funnel)).collect();
        let mut by_game: BTreeMap<u64, Vec<Puzzle>> = BTreeMap::new();
        for puzzle in read_puzzles(&dir.join("verified.csv"))? {
            by_game
                .entry(game_number(&puzzle, dir)?)
                .or_default()
                .push(puzzle);
        }
        for game in segment.first..=segment.last {
            self.funnel
                .add_game(per_game.get(&game).copied().unwrap_or_default());
            let puzzles = by_game.remove(&game).unwrap_or_default();
            let added = puzzles.iter().filter(|p| self.add(p, game)).count();
            if stop && added > 0 && self.all_filled() {
                return Ok(Some(game));
            }
        }
        Ok(None)
    }

    /// Counts one puzzle; true when it is a candidate of a cell.
    fn add(&mut self, puzzle: &Puzzle, game: u64) -> bool {
        let funnel = &mut self.funnel;
        funnel.mined += 1;
        let Ok(position) = position_key(puzzle, ExcludeBy::Position) else {
            funnel.unreadable += 1;
            return false;
        };
        if self.target.excluded.contains(&position) {
            funnel.excluded += 1;
            return false;
        }
        if !self.seen.insert(position) && self.target.dedup {
            funnel.repeated_position += 1;
            return false;
        }
        self.kept.insert((self.stream, row_key(puzzle)));
        funnel.kept += 1;
        let verified = puzzle.check(crate::chess::columns::Column::Verified) == Some(true);
        if verified {
            funnel.verified += 1;
        }
        if self.target.verified_only && !verified {
            return false;
        }
        let Some(cell) = Cell::of(puzzle, self.target.bin_width)
            .filter(|cell| self.target.quotas.contains_key(cell))
            .filter(|_| self.target.tier.as_ref().is_none_or(|t| t.admits(puzzle)))
        else {
            return false;
        };
        self.funnel.in_target_cells += 1;
        self.candidates
            .push(crate::stages::release::draw::Candidate {
                id: puzzle.id.clone(),
                cell,
                // Generation's own games keep the group names they always
                // had; a named profile's games are told apart by stream.
                group: match self.stream {
                    0 => format!("game:{game}"),
                    stream => format!("game:{stream}:{game}"),
                },
                file: 0,
                row: self.candidates.len() as u64,
            });
        true
    }

    /// Cells filled and cells, puzzles drawn and wanted, as the release
    /// would draw them now (for the progress lines).
    fn fill(&self) -> [u64; 4] {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        let count = |f: &dyn Fn(&crate::stages::release::draw::CellOutcome) -> usize| {
            draw.cells.iter().map(|c| f(c) as u64).sum::<u64>()
        };
        [
            count(&|c| usize::from(c.filled())),
            draw.cells.len() as u64,
            count(&|c| c.train + c.test),
            count(&|c| c.wanted.train + c.wanted.test),
        ]
    }

    fn all_filled(&self) -> bool {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        draw.cells.iter().all(|c| c.filled())
    }

    /// The funnel and per-cell counts, with the unfilled cells.
    fn report(&self, stop: Stop, first: u64, last: u64) -> TargetReport {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        TargetReport {
            stop,
            first_game: first,
            last_game: last,
            funnel: self.funnel,
            cells: draw.cells.len(),
            cells_filled: draw.cells.iter().filter(|c| c.filled()).count(),
            per_cell: draw
                .cells
                .iter()
                .filter(|c| c.available > 0)
                .map(CellReport::of)
                .collect(),
            unfilled: draw
                .cells
                .iter()
                .filter(|c| !c.filled())
                .map(CellReport::of)
                .collect(),
        }
    }
}

/// The game number of a generated puzzle (its `GameId` is
/// `selfplay-SEED-N`).
fn game_number(puzzle: &Puzzle, dir: &Path) -> Result<u64> {
    puzzle
        .get(crate::chess::columns::Column::GameId)
        .and_then(|id| id.rsplit('-').next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            bad_input(format!(
                "{}: puzzle {} has no self-play game number in its GameId",
                dir.display(),
                puzzle.id
            ))
        })
}

/// The store files a stage assembles from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Part {
    Mined,
    Rated,
    Verified,
}

impl Part {
    fn file(self) -> &'static str {
        match self {
            Part::Mined => "mined.csv",
            Part::Rated => "rated.csv",
            Part::Verified => "verified.csv",
        }
    }
}

impl Generated {
    /// The streams' games taken together: every kept puzzle of every
    /// stream, deduplicated across streams in stream order, and the report.
    fn assemble(
        target: &Target,
        seed: u64,
        first: u64,
        streams: Vec<StreamPart>,
        stream_reports: Vec<TargetReport>,
    ) -> Result<Generated> {
        let mut union = Counter::new(target, seed, 0);
        for (index, stream) in streams.iter().enumerate() {
            union.stream = index;
            for segment in &stream.segments {
                union.add_segment(segment, false)?;
            }
        }
        let stop = if streams.iter().all(|s| s.stop == Stop::QuotasMet) {
            Stop::QuotasMet
        } else {
            streams
                .iter()
                .map(|s| s.stop)
                .find(|s| *s != Stop::QuotasMet)
                .unwrap_or(Stop::QuotasMet)
        };
        let last = streams.iter().map(|s| s.last).max().unwrap_or(first - 1);
        let profiles =
            (streams.len() > 1 || streams.iter().any(|s| s.profile.is_some())).then(|| {
                streams
                    .iter()
                    .zip(stream_reports)
                    .map(|(stream, counts)| StreamReport {
                        counts,
                        profile: stream.profile.clone(),
                        store: stream.key.clone(),
                    })
                    .collect()
            });
        // The settings are the caller's to fill in (`prepare`).
        let report = GenerateReport {
            counts: union.report(stop, first, last),
            profiles,
            settings: Vec::new(),
        };
        Ok(Generated {
            first,
            last,
            stop,
            kept: union.kept,
            report,
            cpu_seconds: streams.iter().map(|s| s.cpu_seconds).sum(),
            seconds_by_stage: BTreeMap::new(),
            streams,
            seed,
        })
    }

    /// What the stages' fingerprints record of the generation: the store,
    /// games and stop of each stream (one stream: as it always was).
    pub(crate) fn fingerprint(&self) -> GenerationFingerprint<'_> {
        match self.streams.as_slice() {
            [one] if one.profile.is_none() => GenerationFingerprint::OneStream {
                store: &one.key,
                first_game: one.first,
                last_game: one.last,
                stop: one.stop,
                kept: self.kept.len(),
            },
            streams => GenerationFingerprint::Streams {
                store: self.store_keys(),
                streams: streams
                    .iter()
                    .map(|s| StreamFingerprint {
                        profile: &s.profile,
                        store: &s.key,
                        first_game: s.first,
                        last_game: s.last,
                        stop: s.stop,
                    })
                    .collect(),
                kept: self.kept.len(),
            },
        }
    }

    /// The `section` (`selfplay`, `mine`) of the settings the games were
    /// played with: one profile's, or a list with each profile's.
    pub(crate) fn played_settings(&self, section: &str) -> Value {
        let all: Vec<Value> = self
            .report
            .settings
            .iter()
            .map(|s| s[section].clone())
            .collect();
        match <[Value; 1]>::try_from(all) {
            Ok([one]) => one,
            Err(all) => json!(all),
        }
    }

    /// The report with the engine CPU the games cost, overall and per
    /// profile, for a command's summary (never for a file: it varies).
    pub(crate) fn summary_json(&self) -> Value {
        let mut summary = json!(self.report);
        summary["engine_cpu_hours"] = json!(self.cpu_seconds / 3600.0);
        if let Some((_, cost)) = self.cost_of_unfilled() {
            summary["cost_of_unfilled"] = cost;
        }
        // `get_mut`, not `summary["profiles"]`: indexing inserts a null
        // key into a single-profile summary, which then differs from the
        // merged release's generate.json.
        if let Some(profiles) = summary.get_mut("profiles").and_then(Value::as_array_mut) {
            for (profile, stream) in profiles.iter_mut().zip(&self.streams) {
                profile["engine_cpu_hours"] = json!(stream.cpu_seconds / 3600.0);
            }
        }
        summary
    }

    /// The streams' store keys, joined by `+`.
    fn store_keys(&self) -> String {
        self.streams
            .iter()
            .map(|s| s.key.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The segments of every stream, in stream order, with the stream's
    /// index.
    fn segments(&self) -> impl Iterator<Item = (usize, &Segment)> {
        self.streams
            .iter()
            .enumerate()
            .flat_map(|(index, s)| s.segments.iter().map(move |segment| (index, segment)))
    }

    /// The store files the release's games and puzzles come from. The
    /// games (`part` `None`) come with each batch's `batch.json`: it holds
    /// the sha256 of every file of its batch, so a stage that records it
    /// pins them all. A shard's self-play stage records it, and `merge`
    /// checks it before reading any batch: a batch file edited after the
    /// shard played it, with its new sha256 written into `batch.json`, is
    /// refused as an edit of `batch.json` itself.
    pub(crate) fn inputs(&self, part: Option<Part>) -> Vec<PathBuf> {
        self.segments()
            .flat_map(|(_, s)| match part {
                Some(part) => vec![s.batch.dir.join(part.file())],
                None => vec![
                    s.batch.dir.join("games.pgn"),
                    s.batch.dir.join("batch.json"),
                ],
            })
            .collect()
    }

    /// The store folders, for the stage summaries.
    pub(crate) fn stores_display(&self) -> String {
        self.streams
            .iter()
            .map(|s| s.store.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Writes every stream's games `first..=last` as one PGN file.
    pub(crate) fn write_games(&self, output: &Path) -> Result<Value> {
        let mut text = String::new();
        let mut games = 0u64;
        for (_, segment) in self.segments() {
            let path = segment.batch.dir.join("games.pgn");
            let all = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            for game in crate::stages::selfplay::split_games(&all) {
                let round = game
                    .lines()
                    .find_map(|l| l.strip_prefix("[Round \""))
                    .and_then(|r| r.trim_end_matches("\"]").parse::<u64>().ok())
                    .ok_or_else(|| {
                        bad_input(format!("{}: a game without a Round", path.display()))
                    })?;
                if (segment.first..=segment.last).contains(&round) {
                    text.push_str(game);
                    games += 1;
                }
            }
        }
        write_atomic(output, text.as_bytes())?;
        Ok(json!({"games": games, "first_game": self.first, "last_game": self.last}))
    }

    /// The kept puzzles of the games, from the store file `part`.
    pub(crate) fn puzzles(&self, part: Part) -> Result<Vec<Puzzle>> {
        let mut puzzles = Vec::new();
        for (stream, segment) in self.segments() {
            let dir = &segment.batch.dir;
            for puzzle in read_puzzles(&dir.join(part.file()))? {
                let game = game_number(&puzzle, dir)?;
                if (segment.first..=segment.last).contains(&game)
                    && self.kept.contains(&(stream, row_key(&puzzle)))
                {
                    puzzles.push(puzzle);
                }
            }
        }
        Ok(puzzles)
    }

    /// Writes the kept puzzles of `part`; `columns` are the extra columns
    /// (all of the puzzles' when `None`).
    pub(crate) fn write_puzzles(
        &self,
        part: Part,
        output: &Path,
        columns: Option<Vec<String>>,
    ) -> Result<u64> {
        let puzzles = self.puzzles(part)?;
        let columns = columns.unwrap_or_else(|| extra_columns_of(&puzzles));
        let mut writer = PuzzleWriter::create(output, &columns)?;
        for puzzle in &puzzles {
            writer.write(puzzle)?;
        }
        writer.finish()
    }

    /// The verdicts of the kept puzzles, in order, each numbered by its
    /// line in the assembled file (the header is line 1).
    pub(crate) fn verdicts(&self) -> Result<Vec<Verdict>> {
        let mut verdicts = Vec::new();
        for (stream, segment) in self.segments() {
            let dir = &segment.batch.dir;
            let rows = read_puzzles(&dir.join(Part::Rated.file()))?;
            let report = dir.join("verify.jsonl");
            let text = std::fs::read_to_string(&report)
                .with_context(|| format!("reading {}", report.display()))?;
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() != rows.len() {
                return Err(bad_input(format!(
                    "{}: {} verdicts for {} puzzles",
                    report.display(),
                    lines.len(),
                    rows.len()
                )));
            }
            for (puzzle, line) in rows.iter().zip(lines) {
                let game = game_number(puzzle, dir)?;
                if (segment.first..=segment.last).contains(&game)
                    && self.kept.contains(&(stream, row_key(puzzle)))
                {
                    let mut verdict: Verdict = serde_json::from_str(line)
                        .map_err(|e| bad_input(format!("{}: {e}", report.display())))?;
                    verdict.line = verdicts.len() as u64 + 2;
                    verdicts.push(verdict);
                }
            }
        }
        Ok(verdicts)
    }

    /// The human line of the run summary.
    pub(crate) fn human(&self) -> String {
        let report = &self.report.counts;
        let stop_name = |stop: Stop| {
            serde_json::to_value(stop)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let mut line = format!(
            "  generate: games {}-{} ({}), cells filled {}/{}, {} engine CPU-hours, store {}\n",
            self.first,
            self.last,
            stop_name(self.stop),
            report.cells_filled,
            report.cells,
            crate::pipeline::cost::short(self.cpu_seconds / 3600.0),
            self.stores_display()
        );
        if self.streams.len() > 1 {
            for stream in &self.streams {
                line.push_str(&format!(
                    "    profile {}: games {}-{} ({}), {} engine CPU-hours\n",
                    stream.profile.as_deref().unwrap_or("(generation's own)"),
                    stream.first,
                    stream.last,
                    stop_name(stream.stop),
                    crate::pipeline::cost::short(stream.cpu_seconds / 3600.0)
                ));
            }
        }
        if self.stop != Stop::QuotasMet && self.stop != Stop::ShardSlice {
            let labels: Vec<String> = report
                .unfilled
                .iter()
                .map(|cell| {
                    format!(
                        "unfilled {}: {} + {} of {} + {}",
                        cell_label(&cell.rating_bin, cell.length, cell.mate),
                        cell.train,
                        cell.test,
                        cell.wanted.train,
                        cell.wanted.test
                    )
                })
                .collect();
            for named in first_of(&labels, 20) {
                line.push_str(&format!("    {named}\n"));
            }
        }
        if let Some((text, _)) = self.cost_of_unfilled() {
            line.push_str(&text);
        }
        line
    }

    /// Whether a budget (`max_games`, `max_cpu_hours`) ended the games.
    pub(crate) fn stop_is_budget(&self) -> bool {
        matches!(self.stop, Stop::MaxGames | Stop::MaxCpuHours)
    }

    /// When a budget stopped the run with cells unfilled: what they would
    /// cost at the rates the games measured ([`crate::pipeline::cost`]).
    fn cost_of_unfilled(&self) -> Option<(String, Value)> {
        let budget = match self.stop {
            Stop::MaxGames => crate::pipeline::cost::Budget::MaxGames,
            Stop::MaxCpuHours => crate::pipeline::cost::Budget::MaxCpuHours,
            Stop::QuotasMet | Stop::ShardSlice => return None,
        };
        let samples: Vec<StreamSample> = self.streams.iter().map(|s| s.sample.clone()).collect();
        Some(crate::pipeline::cost::unfilled(&samples, self.seed, budget))
    }
}

/// For `run --plan` ([`crate::pipeline::plan`]): each stream's first
/// games, taken as `run` takes them (stored batches reused, missing ones
/// played into the store, the stopping rule applied), up to `games` games
/// rounded up to whole batches (at most `max_games`), or until the
/// stream's batches spend `cpu_hours` split evenly across the streams.
/// A run after the plan plays none of these games again.
pub(crate) fn sample(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
    excluded_releases: &[PathBuf],
    games: u64,
    cpu_hours: Option<f64>,
) -> Result<Vec<StreamSample>> {
    let target = Target::of(config, tier, excluded_releases)?;
    let streams = stream_cells(config, &target.quotas)?;
    let batch = config.generate.batch_games.max(1);
    let last = games
        .max(1)
        .div_ceil(batch)
        .saturating_mul(batch)
        .min(config.generate.max_games);
    let share = cpu_hours.map(|hours| hours * 3600.0 / streams.len().max(1) as f64);
    let mut samples = Vec::new();
    for (profile, quotas) in streams {
        let settings = Settings::of(config, tier, profile.as_deref())?;
        let (store, key) = open_store(config, &settings, engine)?;
        let target = target.restricted_to(quotas);
        let mut walk = Walk {
            config,
            mode: Mode::Run,
            player: Player {
                settings: &settings,
                engine,
                store: &store,
                pools: None,
                wall_seconds: BTreeMap::new(),
            },
            batches: stored_batches(&store)?,
            counter: Counter::new(&target, config.seed, 0),
            segments: Vec::new(),
            cpu_seconds: 0.0,
            played: Played::default(),
            profile: profile.clone(),
            first: 1,
            next: 1,
            last,
            games_allowed: None,
        };
        let stop = loop {
            if let Some(stop) = walk.step()? {
                break stop;
            }
            if share.is_some_and(|share| walk.cpu_seconds >= share) {
                break Stop::MaxCpuHours;
            }
        };
        samples.push(walk.sample(profile, key, stop));
    }
    Ok(samples)
}

impl Walk<'_> {
    /// The stream's games so far as a cost sample: the games counted, the
    /// CPU they cost, and its cells.
    fn sample(&self, profile: Option<String>, store: String, stop: Stop) -> StreamSample {
        // A segment may take part of a batch (a budget or the stopping
        // game inside it): its games' share of the batch's CPU.
        let counted_cpu_seconds = self
            .segments
            .iter()
            .map(|s| {
                let batch_games = (s.batch.last - s.batch.first + 1) as f64;
                s.batch.cpu_seconds * (s.last - s.first + 1) as f64 / batch_games
            })
            .sum();
        StreamSample {
            profile,
            store,
            games: self.segments.iter().map(|s| s.last - s.first + 1).sum(),
            counted_cpu_seconds,
            spent_cpu_seconds: self.cpu_seconds,
            met: stop == Stop::QuotasMet,
            cells: self.counter.cell_samples(),
            mining: {
                let mine = &self.player.settings.mine;
                MiningSwitches {
                    mates: mine.mates,
                    missed_only: mine.missed_only,
                    trivial_captures: mine.trivial_captures,
                    min_solver_moves: mine.min_solver_moves,
                }
            },
        }
    }
}

impl Counter<'_> {
    /// The target's cells as the counted puzzles fill them.
    fn cell_samples(&self) -> Vec<CellSample> {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        draw.cells
            .iter()
            .map(|c| CellSample {
                cell: c.cell,
                quota: c.wanted,
                found: c.available,
                filled: c.filled(),
                beyond_model: self.target.reach.as_ref().is_some_and(|reach| {
                    !reach.reaches(c.cell.length, c.cell.mate, c.cell.bin_lo, c.cell.bin_hi)
                }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `batch.json` as the stores already on users' disks hold it (this
    /// one's figures from a real batch, two of its games kept): the typed
    /// record reads it, and writes it back key for key, in the same order.
    #[test]
    fn a_stored_batch_record_reads_and_writes_back_unchanged() {
        let stored = r#"{
  "first": 1,
  "last": 2,
  "games": 2,
  "positions": 206,
  "full_searches": 37,
  "candidates": 11,
  "mined": 11,
  "verified": 9,
  "engine_cpu_seconds": 61.466570084999994,
  "engine_cpu_seconds_by_step": {
    "selfplay": 2.104326085,
    "mine": 40.14,
    "rate": 3.302244,
    "verify": 15.92
  },
  "per_game": [
    {
      "game": 1,
      "positions": 79,
      "full_searches": 8,
      "candidates": 3
    },
    {
      "game": 2,
      "positions": 127,
      "full_searches": 29,
      "candidates": 8
    }
  ],
  "files": {
    "games.pgn": "aa",
    "mined.csv": "bb",
    "rated.csv": "cc",
    "verify.jsonl": "dd",
    "verified.csv": "ee"
  }
}"#;
        let record: BatchRecord = serde_json::from_str(stored).unwrap();
        assert_eq!(record.per_game[1].game, 2);
        assert_eq!(record.per_game[1].funnel.full_searches, 29);
        assert_eq!(record.engine_cpu_seconds_by_step.verify, 15.92);
        let files = record.files.as_ref().unwrap();
        assert_eq!(files.named()[3], ("verify.jsonl", "dd"));
        assert_eq!(serde_json::to_string_pretty(&record).unwrap(), stored);
    }

    /// A record an older puzzleforge wrote, without file hashes, still
    /// reads, so that `check_batch` can name what to do about it.
    #[test]
    fn a_batch_record_without_file_hashes_reads() {
        let mut record: serde_json::Value = serde_json::json!({
            "first": 1, "last": 1, "games": 1, "positions": 0, "full_searches": 0,
            "candidates": 0, "mined": 0, "verified": 0, "engine_cpu_seconds": 1.5,
            "engine_cpu_seconds_by_step": {"selfplay": 1.5, "mine": 0.0, "rate": 0.0, "verify": 0.0},
            "per_game": [{"game": 1, "positions": 0, "full_searches": 0, "candidates": 0}],
        });
        let read: BatchRecord = serde_json::from_value(record.clone()).unwrap();
        assert!(read.files.is_none());
        record["per_game"] = serde_json::json!("not a list");
        assert!(serde_json::from_value::<BatchRecord>(record).is_err());
    }
}

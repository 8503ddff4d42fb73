//! The generation settings: `[generate]` and its profiles as pipeline.toml
//! holds them, the sections of pipeline.toml generation reads, the run's
//! engine, and the settings a stream's games are played with (`Settings`,
//! whose hash is the store key). Apart because they are read, checked and
//! hashed before any game is played, and use nothing else of generation.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::core::error::bad_input;
use crate::core::fileio::{sha256_bytes, sha256_file};
use crate::core::seed::{Domain, Key};
use crate::engine::pool::PoolConfig;
use crate::engine::process::EngineSpec;
use crate::stages::release::cells::{Cell, MateRule};

/// The version of how a batch is played and assembled (beside the chain's
/// stages' own versions, which the store key holds too): bumped whenever a
/// stored batch's files for the same settings change.
pub(crate) const ALGORITHM: &str = "generate-1";

/// `[generate]` in pipeline.toml.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GenerateConfig {
    /// Generate to order instead of playing `selfplay.games`.
    pub enabled: bool,
    /// The quotas to fill: this tier of `[release.tiers]` (else `run --tier`,
    /// else the `[release]` quotas), counted in generated puzzles only.
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

impl Bounded for GenerateConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("batch_games", 1.0, 100000.0, "games per batch"),
        Bound::within("max_games", 1.0, 1000000000.0, "the last game number"),
        Bound::above("max_cpu_hours", 0.0, 1000000.0, "engine CPU-hours"),
        Bound::within("max_per_game", 1.0, 10000.0, "puzzles kept per game"),
    ];
    const NESTED: &'static [Nested] = &[
        Nested::of::<crate::stages::selfplay::SelfplayConfig>("selfplay", Many::One),
        Nested::of::<crate::stages::mine::MineConfig>("mine", Many::One),
        Nested::of::<Profile>("tiers", Many::Named),
        Nested::of::<Profile>("profiles", Many::Named),
        Nested::of::<ProfileBand>("bands", Many::Each),
    ];
}

/// Cells of the target that a named profile plays for: rating bins inside
/// `ratings`, solver lengths inside `lengths`, mates as `mate` says (the
/// keys of `[[release.bands]]`).
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

impl Bounded for ProfileBand {
    const BOUNDS: &'static [Bound] = &[
        Bound::pair("ratings", 0.0, 4000.0, "Lichess ratings"),
        Bound::pair("lengths", 1.0, 10.0, "solver moves"),
    ];
}

impl ProfileBand {
    pub(super) fn holds(&self, cell: &Cell) -> bool {
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

impl Bounded for Profile {
    const BOUNDS: &'static [Bound] = &[];
    const NESTED: &'static [Nested] = &[
        Nested::of::<crate::stages::selfplay::SelfplayConfig>("selfplay", Many::One),
        Nested::of::<crate::stages::mine::MineConfig>("mine", Many::One),
    ];
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
    // A run seed is a user's, and fits the int64 `Seed` column.
    crate::core::seed::selfplay_seed(run_seed, Domain::GenerateProfileSeed, Key::Name(name))
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
    pub release: &'a crate::stages::release::cells::ReleaseConfig,
    /// `run --keep-stored-work`: a store of the same settings played by
    /// other algorithm versions is used instead of this build's own.
    pub keep_stored_work: bool,
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
pub(super) struct Settings {
    pub(super) selfplay: crate::stages::selfplay::SelfplayConfig,
    pub(super) mine: crate::stages::mine::MineConfig,
    pub(super) rate: crate::stages::rate::RateConfig,
    pub(super) verify: crate::stages::verify::VerifyConfig,
}

impl Settings {
    /// Generation's settings for a target of `tier` (`generate.tier`
    /// first) played by `profile` (a name of `[generate.profiles]`, or
    /// generation's own): `[selfplay]` and `[mine]` under generation's
    /// profile, then the tier's, then the named profile's. A named profile
    /// plays its own games: its self-play seed derives from the run seed and
    /// its name, so its game ids never meet another profile's.
    pub(super) fn of(
        config: &Sections<'_>,
        tier: Option<&str>,
        profile: Option<&str>,
    ) -> Result<Settings> {
        check_tables(config)?;
        let generate = &config.generate;
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
    pub(super) fn key(&self, engine: Engine) -> Result<(String, Value)> {
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
        rate["model"] = serde_json::to_value(model)?;
        let mut verify = serde_json::to_value(&self.verify)?;
        if let Some(second) = verify.get_mut("second_engine").filter(|v| v.is_object()) {
            second["path"] = serde_json::to_value(second_sha)?;
        }
        // Maia players by their nets' bytes, not the folder's path.
        let mut selfplay = serde_json::to_value(&self.selfplay)?;
        if let Some(maia) = &self.selfplay.maia
            && let Some(table) = selfplay.get_mut("maia").and_then(Value::as_object_mut)
        {
            table.remove("models_dir");
            table.insert(
                "nets".to_string(),
                serde_json::to_value(maia.fingerprint()?)?,
            );
        }
        // Human games by the file's bytes, not its path: pointing
        // `[sources] human_games` at a copy of the same file plays the
        // same games.
        if let Some(human) = &self.selfplay.human
            && let Some(table) = selfplay.get_mut("human").and_then(Value::as_object_mut)
        {
            table.remove("games");
            table.insert(
                "games_sha256".to_string(),
                Value::String(crate::chess::human_games::content_sha256(&human.games)?),
            );
        }
        let settings = serde_json::to_value(StoreSettings {
            tool_version: crate::core::build::VERSION,
            algorithms: store_algorithms(),
            novelty_rule: self
                .selfplay
                .human
                .as_ref()
                .map(|_| crate::chess::novelty::RULE),
            selfplay,
            mine: &self.mine,
            rate,
            verify,
            engine: StoreEngine {
                sha256: engine.sha256,
                options: &engine.spec.options,
            },
        })?;
        let digest = sha256_bytes(serde_json::to_string(&settings)?.as_bytes());
        Ok((digest[..16].to_string(), settings))
    }
}

/// The algorithm versions a stored batch's files depend on: generation's
/// own and those of the chain's steps, as the store key holds them.
pub(super) fn store_algorithms() -> BTreeMap<&'static str, String> {
    let mut algorithms = BTreeMap::from([("generate", ALGORITHM.to_string())]);
    for step in crate::generate::chain::steps() {
        algorithms.insert(step.as_str(), step.algorithm());
    }
    algorithms
}

/// Checks `[generate.tiers]` against `[release.tiers]`, and that every
/// tier's and profile's tables hold keys of their sections, used by this
/// run or not: a misspelt key (or a band's keys under a profile's header)
/// would otherwise wait silently for the run that plays that profile.
fn check_tables(config: &Sections<'_>) -> Result<()> {
    let generate = &config.generate;
    for name in generate.tiers.keys() {
        if !config.release.tiers.contains_key(name) {
            return Err(bad_input(format!(
                "[generate.tiers.{name}]: {name:?} is not a tier of [release.tiers]"
            )));
        }
    }
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
    Ok(())
}

/// What the generation store is keyed by (and records): the settings its
/// games and puzzles depend on, files and nets by content.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct StoreSettings<'a> {
    tool_version: &'static str,
    /// The algorithm version of how a batch is played and of each step of
    /// the chain: a batch played by other versions is in another store.
    algorithms: BTreeMap<&'static str, String>,
    /// For games grown from human games: the novelty rule mining judged
    /// their puzzles by (batches judged by another rule are played again).
    /// Absent for other games, whose store keys it leaves as they were.
    novelty_rule: Option<&'static str>,
    selfplay: Value,
    mine: &'a crate::stages::mine::MineConfig,
    rate: Value,
    verify: Value,
    engine: StoreEngine<'a>,
}

/// The engine of a store's key: its build and options, not its path.
#[derive(Serialize)]
struct StoreEngine<'a> {
    sha256: &'a str,
    options: &'a [(String, String)],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed `hard` band profile and `hard` tier branch the games
    /// where a non-mate long line shows (docs/generation.md, "Long non-mate
    /// lines"); generation's own profile and the others do not. Read off
    /// the committed file's `[generate]` table (the whole pipeline config
    /// is the layer above this module).
    #[test]
    fn the_committed_hard_profile_and_tier_branch_their_games() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let generate = table["generate"].as_table().unwrap();
        let branches = |mine: Option<&toml::Value>| {
            mine.and_then(|m| m.get("branch_moves"))
                .and_then(toml::Value::as_integer)
                .unwrap_or(0)
        };
        let profile = |name: &str| generate["profiles"][name].get("mine");
        assert_eq!(branches(profile("hard")), 4);
        assert_eq!(branches(generate["tiers"]["hard"].get("mine")), 4);
        assert_eq!(branches(generate.get("mine")), 0);
        assert_eq!(branches(profile("easy")), 0);
        assert_eq!(branches(profile("human")), 0);
        let _: GenerateConfig = table["generate"]
            .clone()
            .try_into()
            .expect("the committed [generate] reads as its section");
    }
}

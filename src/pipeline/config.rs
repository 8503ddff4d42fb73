//! `pipeline.toml`: the whole pipeline in one commented file, parsed once
//! into typed sections; `run` hands each stage its own section
//! ([`crate::pipeline::adapters`]).
//!
//! Every table and key is typed and unknown keys are rejected, so a typo is
//! an error naming the key, the line and the file instead of a setting that
//! silently does nothing. Paths are resolved against the file's folder when
//! it is loaded.

use anyhow::Result;
use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};

use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::core::error::bad_input;
use crate::core::settings::{check_numbers, line_of, relative_to, value_error};
use crate::stages::StageName;
use crate::stages::release::cells::{RELEASE_SECTION, RELEASE_SECTION_FORMERLY};

/// The default config file, relative to the working directory.
pub(crate) const DEFAULT_CONFIG: &str = "pipeline.toml";

/// The whole pipeline.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineConfig {
    pub pipeline: PipelineSection,
    pub engine: crate::engine::settings::EngineConfig,
    pub sources: SourcesSection,
    /// Human-game puzzles (off by default).
    #[serde(skip_serializing_if = "is_default")]
    pub human_games: crate::stages::mine::HumanGamesSection,
    pub ingest: IngestSection,
    pub selfplay: crate::stages::selfplay::SelfplayConfig,
    pub mine: crate::stages::mine::MineConfig,
    pub rate: crate::stages::rate::RateConfig,
    /// Settings of the `verify` stage: every mined puzzle searched again at
    /// `factor` times the nodes that found it, and by a second engine when
    /// `second_engine` is set.
    pub verify: crate::stages::verify::VerifyConfig,
    /// `[release]`; `[split]`, its name before, is read as it.
    #[serde(alias = "split")]
    pub release: crate::stages::release::cells::ReleaseConfig,
    pub export: crate::stages::export::ExportSection,
    pub eval: crate::stages::eval::config::EvalConfig,
    pub rollout: crate::stages::eval::rollout::RolloutConfig,
    /// Generating to order (off by default: `selfplay.games` games).
    #[serde(skip_serializing_if = "is_off")]
    pub generate: crate::generate::GenerateConfig,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn is_off(generate: &crate::generate::GenerateConfig) -> bool {
    !generate.enabled
}

/// Every section of `pipeline.toml` with bounded keys: the one list `run`
/// checks before any stage and `docs/config-bounds.md` is written from.
impl Bounded for PipelineConfig {
    const BOUNDS: &'static [Bound] = &[];
    const NESTED: &'static [Nested] = &[
        Nested::of::<crate::engine::settings::EngineConfig>("engine", Many::One),
        Nested::of::<crate::stages::mine::HumanGamesSection>("human_games", Many::One),
        Nested::of::<IngestSection>("ingest", Many::One),
        Nested::of::<crate::stages::selfplay::SelfplayConfig>("selfplay", Many::One),
        Nested::of::<crate::stages::mine::MineConfig>("mine", Many::One),
        Nested::of::<crate::stages::rate::RateConfig>("rate", Many::One),
        Nested::of::<crate::stages::verify::VerifyConfig>("verify", Many::One),
        Nested::of::<crate::stages::release::cells::ReleaseConfig>(RELEASE_SECTION, Many::One),
        Nested::of::<crate::generate::GenerateConfig>("generate", Many::One),
        Nested::of::<crate::stages::eval::config::EvalConfig>("eval", Many::One),
        Nested::of::<crate::stages::eval::rollout::RolloutConfig>("rollout", Many::One),
    ];
}

/// Input files of the pipeline, relative to the config file's folder.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesSection {
    /// Puzzle files (the Lichess dump, APO files; CSV or JSONL, plain or zstd).
    pub puzzles: Vec<PathBuf>,
    /// Game dumps (PGN, plain or zstd) to find candidates in.
    pub games: Vec<PathBuf>,
    /// Human games (PGN, plain or zstd, UTF-8 or Latin-1) that a
    /// `[selfplay.human]` profile starts its games from.
    pub human_games: Option<PathBuf>,
}

/// Settings of the `ingest` stages.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestSection {
    pub puzzles: crate::stages::ingest_puzzles::IngestPuzzlesConfig,
    pub games: crate::stages::ingest_games::IngestGamesConfig,
}

impl Bounded for IngestSection {
    const BOUNDS: &'static [Bound] = &[];
    const NESTED: &'static [Nested] = &[
        Nested::of::<crate::stages::ingest_puzzles::IngestPuzzlesConfig>("puzzles", Many::One),
        Nested::of::<crate::stages::ingest_games::IngestGamesConfig>("games", Many::One),
    ];
}

/// Where the run writes and which stages it runs.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Run seed: every random choice of every stage derives from it.
    pub seed: u64,
    /// Folder holding one subfolder per release.
    pub output_dir: PathBuf,
    /// Release name used when `run` is not given `--release`.
    pub release: String,
    /// Stages to run, in order. Each must be one `run` knows.
    #[serde(deserialize_with = "stage_names")]
    pub stages: Vec<StageName>,
}

/// `pipeline.stages`, with an unknown name reported with the stages `run`
/// knows.
fn stage_names<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<StageName>, D::Error> {
    Vec::<String>::deserialize(deserializer)?
        .iter()
        .map(|name| {
            StageName::from_name(name).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "pipeline.stages names unknown stage {name:?}; known stages: {}",
                    StageName::list(StageName::ALL)
                ))
            })
        })
        .collect()
}

impl Default for PipelineSection {
    fn default() -> Self {
        Self {
            seed: 1,
            output_dir: PathBuf::from("output"),
            release: "default".to_string(),
            stages: Vec::new(),
        }
    }
}

impl PipelineConfig {
    /// The sections `[generate]` plays, mines, rates and verifies with.
    pub(crate) fn generate_sections(&self) -> crate::generate::Sections<'_> {
        crate::generate::Sections {
            generate: &self.generate,
            seed: self.pipeline.seed,
            output_dir: &self.pipeline.output_dir,
            selfplay: &self.selfplay,
            mine: &self.mine,
            rate: &self.rate,
            verify: self.verify.clone(),
            release: &self.release,
            keep_stored_work: false,
        }
    }

    /// Parses config text; `origin` names the file in errors. Its numbers
    /// are checked as every config file's are
    /// ([`crate::core::settings::check_numbers`]): finite, and within the
    /// bounds of their keys.
    pub fn parse(text: &str, origin: &Path) -> Result<Self> {
        let config = toml::from_str(text).map_err(|e| {
            bad_input(format!(
                "{}: {}",
                origin.display(),
                e.to_string().trim_end().replace('\n', "\n    ")
            ))
        })?;
        // The text parsed as the config, so it parses as a table too.
        if let Ok(mut table) = toml::from_str::<toml::Table>(text) {
            check_numbers(&table, text, origin)?;
            // `[split]`, the release section's former name, is read as
            // `[release]` (serde's alias); its bounds are checked the same,
            // and named as the file writes them.
            let former = crate::core::settings::adopt_former_name(
                &mut table,
                RELEASE_SECTION,
                RELEASE_SECTION_FORMERLY,
            )
            .map_err(|why| bad_input(format!("{}: {why}", origin.display())))?;
            if let Some(found) =
                crate::core::bounds::check_table(&table, "", Self::BOUNDS, Self::NESTED)
            {
                let named = match found.table.strip_prefix(RELEASE_SECTION) {
                    Some(rest) if former => format!("{RELEASE_SECTION_FORMERLY}{rest}"),
                    _ => found.table.clone(),
                };
                return Err(value_error(
                    origin,
                    text,
                    &named,
                    found.key,
                    &found.shown,
                    &found.why,
                ));
            }
        }
        Ok(config)
    }

    /// Reads and parses a config file, its paths resolved against the
    /// file's folder.
    pub fn load(path: &Path) -> Result<Self> {
        Self::from_text(&Self::read_text(path)?, path)
    }

    /// The text of the config file `path`.
    pub(crate) fn read_text(path: &Path) -> Result<String> {
        std::fs::read_to_string(path)
            .map_err(|e| bad_input(format!("cannot read config {}: {e}", path.display())))
    }

    /// Parses config text as the file `path` would hold it, its paths
    /// resolved against `path`'s folder (which `reproduce` reads from a
    /// release's manifest; `path` need not exist).
    pub(crate) fn from_text(text: &str, path: &Path) -> Result<Self> {
        let mut config = Self::parse(text, path)?;
        config.check_seeds(path)?;
        if config.pipeline.output_dir.as_os_str().is_empty() {
            return Err(bad_input(format!(
                "{}: pipeline.output_dir is empty: it must name the folder of the releases \
                 (the releases of one folder exclude each other's puzzles; \"\" would turn that off)",
                path.display()
            )));
        }
        config.resolve_paths(path);
        Ok(config)
    }

    /// Resolves the paths of the file (output folder, sources, engine,
    /// rating model and its nets, Maia nets, human games, exclusions)
    /// against its folder.
    fn resolve_paths(&mut self, config_path: &Path) {
        let resolve = |path: &mut PathBuf| *path = relative_to(config_path, path);
        resolve(&mut self.pipeline.output_dir);
        self.sources.puzzles.iter_mut().for_each(resolve);
        self.sources.games.iter_mut().for_each(resolve);
        self.sources.human_games.iter_mut().for_each(resolve);
        self.engine.path.iter_mut().for_each(resolve);
        self.rate.model.iter_mut().for_each(resolve);
        self.rate.maia.iter_mut().for_each(resolve);
        resolve(&mut self.eval.maia.models_dir);
        (self.verify.second_engine.iter_mut()).for_each(|second| resolve(&mut second.path));
        self.generate.exclude.iter_mut().for_each(resolve);
        if let Some(maia) = self.selfplay.maia.as_mut() {
            resolve(&mut maia.models_dir);
        }
        // `[selfplay.human]` without its own `games` starts from
        // `[sources] human_games` (already resolved).
        if let Some(human) = self.selfplay.human.as_mut() {
            match &self.sources.human_games {
                Some(games) if human.games.as_os_str().is_empty() => human.games = games.clone(),
                _ => resolve(&mut human.games),
            }
        }
        let generate = &mut self.generate;
        let layers = std::iter::once(&mut generate.selfplay).chain(
            (generate.tiers.values_mut())
                .chain(generate.profiles.values_mut())
                .map(|profile| &mut profile.selfplay),
        );
        for layer in layers {
            resolve_maia_folder(layer, config_path);
            resolve_human_games(layer, config_path, self.sources.human_games.as_deref());
        }
    }

    /// `run` draws every random number from `pipeline.seed`. The stage
    /// sections keep a `seed` for their standalone commands; one that is
    /// set to anything else would be silently ignored by `run`, so it is an
    /// error instead.
    fn check_seeds(&self, path: &Path) -> Result<()> {
        let run_seed = self.pipeline.seed;
        for (key, seed) in [
            ("ingest.puzzles.seed", self.ingest.puzzles.seed),
            ("selfplay.seed", self.selfplay.seed),
            ("release.seed", self.release.seed),
            ("eval.seed", self.eval.seed),
        ] {
            if seed != 0 && seed != run_seed {
                return Err(bad_input(format!(
                    "{}: {key} = {seed} differs from pipeline.seed = {run_seed}; `run` uses pipeline.seed for every stage, so set the seed there",
                    path.display()
                )));
            }
        }
        Ok(())
    }
}

/// A mistake in the config at `path`: an error (exit 2) naming the file,
/// the key and, where the key is written, its line.
pub(crate) fn key_error(path: &Path, section: &str, key: &str, why: &str) -> anyhow::Error {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let line = line_of(&text, section, key)
        .map(|n| format!(" (line {n})"))
        .unwrap_or_default();
    bad_input(format!("{}: {section}.{key}{line}: {why}", path.display()))
}

/// Resolves the games file of a generation layer's `human` table, as
/// [`resolve_maia_folder`] does the nets' folder: a layer's `human`
/// replaces the one below it whole, so a table without `games` means
/// `[sources] human_games` (`sources`, already resolved; left unset
/// without it, for the section's own check to report), and one with
/// `games` names a file relative to the config. A value that is not a
/// string is left for the section's own check to report.
fn resolve_human_games(layer: &mut toml::Table, config_path: &Path, sources: Option<&Path>) {
    let Some(toml::Value::Table(human)) = layer.get_mut("human") else {
        return;
    };
    let games = match human.get("games") {
        None => match sources {
            Some(games) => games.to_path_buf(),
            None => return,
        },
        Some(toml::Value::String(games)) => relative_to(config_path, Path::new(games)),
        Some(_) => return,
    };
    human.insert(
        "games".to_string(),
        toml::Value::String(games.to_string_lossy().into_owned()),
    );
}

/// Resolves the Maia nets' folder of a generation layer's `maia` table.
/// A layer's `maia` replaces the one below it whole, so a table without
/// `models_dir` means the default folder (`models/maia`), which is
/// resolved too: the nets are found wherever `run` is started from. (The
/// store key names the nets by their bytes, not by this folder.) A value
/// that is not a string is left for the section's own check to report.
fn resolve_maia_folder(layer: &mut toml::Table, config_path: &Path) {
    let Some(toml::Value::Table(maia)) = layer.get_mut("maia") else {
        return;
    };
    let folder = match maia.get("models_dir") {
        None => crate::maia::DEFAULT_MODELS_DIR,
        Some(toml::Value::String(folder)) => folder.as_str(),
        Some(_) => return,
    };
    let resolved = relative_to(config_path, Path::new(folder));
    maia.insert(
        "models_dir".to_string(),
        toml::Value::String(resolved.to_string_lossy().into_owned()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/config-bounds.md` as the code's bounds write it: the one
    /// list of every bounded key. Generation's layers take `[selfplay]`'s
    /// and `[mine]`'s bounds, so their rows are said once.
    fn config_bounds_markdown() -> String {
        let mut rows = Vec::new();
        crate::core::bounds::list(
            "",
            PipelineConfig::BOUNDS,
            PipelineConfig::NESTED,
            &mut rows,
        );
        let layered = [
            "generate.selfplay.",
            "generate.mine.",
            "generate.tiers.",
            "generate.profiles.",
        ];
        let mut text = String::from(
            "# Every bounded config key\n\n\
             Generated from the code (each section's `impl Bounded`, beside its typed fields) by\n\
             `PUZZLEFORGE_WRITE_DOCS=1 cargo test --lib config_bounds_doc`; the test fails when this\n\
             page and the code differ. `run` checks every key of `pipeline.toml` against this list\n\
             before any stage runs (exit 2, naming the file, the key and its line); a standalone\n\
             command checks its section after its flags are laid over it. `[generate.selfplay]`,\n\
             `[generate.mine]` and every `[generate.tiers.NAME.*]` and `[generate.profiles.NAME.*]`\n\
             table take the bounds of `[selfplay]` and `[mine]`, checked in each table and again\n\
             as generation lays them. Keys that bound each other (`min_*` at most `max_*`, a\n\
             `[low, high]` pair) are listed in [configuration.md](configuration.md).\n\n\
             | key | bound | what |\n|---|---|---|\n",
        );
        for (key, bound) in rows {
            if layered.iter().any(|prefix| key.starts_with(prefix)) {
                continue;
            }
            text.push_str(&format!(
                "| `{key}` | {} | {} |\n",
                bound.rule(),
                bound.what
            ));
        }
        text
    }

    #[test]
    fn config_bounds_doc_is_the_code_s_list() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config-bounds.md");
        let expected = config_bounds_markdown();
        if std::env::var_os("PUZZLEFORGE_WRITE_DOCS").is_some() {
            std::fs::write(&path, &expected).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == expected,
            "docs/config-bounds.md differs from the code's bounds: run \
             PUZZLEFORGE_WRITE_DOCS=1 cargo test --lib config_bounds_doc"
        );
    }

    /// The committed config and every section's defaults lie within the
    /// bounds (a bound tighter than a default would refuse every run).
    #[test]
    fn defaults_and_the_committed_config_are_within_bounds() {
        let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml");
        PipelineConfig::load(&committed).unwrap();
        let defaults = toml::Table::try_from(PipelineConfig::default()).unwrap();
        let found = crate::core::bounds::check_table(
            &defaults,
            "",
            PipelineConfig::BOUNDS,
            PipelineConfig::NESTED,
        );
        assert_eq!(found, None);
    }

    /// `[verify]` is the stage's `VerifyConfig`: a release records it (and a
    /// run fingerprints it) with the keys a release has always recorded,
    /// while generation's store key serializes every key, as it always has.
    #[test]
    fn verify_is_recorded_with_the_keys_releases_have_always_recorded() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml");
        let config = PipelineConfig::load(&path).unwrap();
        let keys = |value: &serde_json::Value| -> Vec<String> {
            value.as_object().unwrap().keys().cloned().collect()
        };
        let recorded = config.verify.recorded().unwrap();
        assert_eq!(
            keys(&recorded),
            [
                "factor",
                "policy",
                "min_margin_cp",
                "min_margin_win_chance",
                "second_engine"
            ]
        );
        assert_eq!(
            keys(&recorded["second_engine"]),
            ["path", "depth", "min_gap_cp", "options"]
        );
        let whole = serde_json::to_value(&config.verify).unwrap();
        assert_eq!(
            keys(&whole),
            [
                "factor",
                "nodes",
                "nodes_override",
                "criterion",
                "policy",
                "min_margin_cp",
                "min_margin_win_chance",
                "second_engine"
            ]
        );
        let set = crate::stages::verify::VerifyConfig {
            nodes: Some(500),
            ..config.verify.clone()
        };
        assert_eq!(set.recorded().unwrap()["nodes"], 500);
        // Unknown keys are still refused, naming the key.
        let error =
            PipelineConfig::parse("[verify]\nfactr = 2\n", Path::new("p.toml")).unwrap_err();
        assert!(format!("{error:#}").contains("factr"), "{error:#}");
    }

    #[test]
    fn unknown_key_is_named_with_the_file() {
        let error = PipelineConfig::parse("[pipeline]\nseed = 3\nsede = 4\n", Path::new("my.toml"))
            .unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains("my.toml"), "{text}");
        assert!(text.contains("sede"), "{text}");
        assert_eq!(crate::core::error::exit_code(&error), 2);
    }

    #[test]
    fn unknown_stage_is_named_with_the_file_the_key_and_the_known_stages() {
        let error = PipelineConfig::parse(
            "[pipeline]\nstages = [\"ingest_puzzles\", \"split\"]\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        let text = format!("{error:#}");
        for part in [
            "p.toml",
            "pipeline.stages",
            "\"split\"",
            "ingest_games, selfplay",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(crate::core::error::exit_code(&error), 2);
        let config = PipelineConfig::parse(
            "[pipeline]\nstages = [\"mine\", \"eval\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(config.pipeline.stages, [StageName::Mine, StageName::Eval]);
    }

    /// The Maia players' nets are found from the config's folder, like
    /// every other path it names, in `[selfplay]` and in every generation
    /// layer, the default folder included; a layer without `maia` gains
    /// none.
    #[test]
    fn maia_folders_resolve_against_the_config_folder() {
        let text = r#"
[selfplay]
maia = { white = [1100, 1100], black = [1100, 1100], models_dir = "nets" }
[generate.selfplay]
maia = { white = [1200, 1200], black = [1200, 1200] }
[generate.tiers.hard.selfplay]
chaos_plies = 4
[generate.profiles.easy.selfplay]
maia = { white = [1100, 1100], black = [1100, 1100], models_dir = "/abs/nets" }
"#;
        let origin = Path::new("/srv/cron/pipeline.toml");
        let mut config = PipelineConfig::parse(text, origin).unwrap();
        config.resolve_paths(origin);
        let maia = config.selfplay.maia.as_ref().expect("maia players");
        assert_eq!(maia.models_dir, Path::new("/srv/cron/nets"));
        let folder = |layer: &toml::Table| {
            layer
                .get("maia")
                .and_then(|m| m.get("models_dir"))
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        };
        let generate = &config.generate;
        assert_eq!(
            folder(&generate.selfplay).as_deref(),
            Some("/srv/cron/models/maia")
        );
        assert_eq!(folder(&generate.tiers["hard"].selfplay), None);
        assert_eq!(
            folder(&generate.profiles["easy"].selfplay).as_deref(),
            Some("/abs/nets")
        );
    }

    /// A `human` table without `games` starts from `[sources]
    /// human_games`; one with its own names a file relative to the config,
    /// like every path the config names.
    #[test]
    fn human_games_resolve_to_the_sources_file_or_against_the_config_folder() {
        let text = r#"
[sources]
human_games = "data/games.pgn.zst"
[selfplay]
human = { plies = [20, 40] }
[generate.tiers.hard.selfplay]
human = { plies = [30, 50] }
[generate.profiles.own.selfplay]
human = { games = "other.pgn" }
"#;
        let origin = Path::new("/srv/cron/pipeline.toml");
        let mut config = PipelineConfig::parse(text, origin).unwrap();
        config.resolve_paths(origin);
        let human = config.selfplay.human.as_ref().expect("a human start");
        assert_eq!(human.games, Path::new("/srv/cron/data/games.pgn.zst"));
        let games = |layer: &toml::Table| {
            layer
                .get("human")
                .and_then(|h| h.get("games"))
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        };
        let generate = &config.generate;
        assert_eq!(
            games(&generate.tiers["hard"].selfplay).as_deref(),
            Some("/srv/cron/data/games.pgn.zst")
        );
        assert_eq!(
            games(&generate.profiles["own"].selfplay).as_deref(),
            Some("/srv/cron/other.pgn")
        );
        assert_eq!(games(&generate.selfplay), None);
    }

    #[test]
    fn generate_is_off_by_default_and_its_keys_are_checked() {
        let config = PipelineConfig::parse("", Path::new("p.toml")).unwrap();
        assert!(!config.generate.enabled);
        // Off, it is not written: the default config reads as before.
        assert!(
            serde_json::to_value(&config)
                .unwrap()
                .get("generate")
                .is_none()
        );
        let error = PipelineConfig::parse(
            "[generate]\nenabled = true\nmax_game = 3\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        let text = format!("{error:#}");
        assert!(
            text.contains("p.toml") && text.contains("max_game"),
            "{text}"
        );
        let config = PipelineConfig::parse(
            "[generate]\nenabled = true\ntier = \"hard\"\nmax_games = 7\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(config.generate.max_games, 7);
        assert_eq!(config.generate.release_tier(None).as_deref(), Some("hard"));
        assert_eq!(
            config.generate.release_tier(Some("easy")).as_deref(),
            Some("easy")
        );
    }

    #[test]
    fn wrong_type_is_named_with_the_file() {
        let error = PipelineConfig::parse("[engine]\nworkers = \"two\"\n", Path::new("p.toml"))
            .unwrap_err();
        let text = format!("{error:#}");
        assert!(
            text.contains("p.toml") && text.contains("workers"),
            "{text}"
        );
    }
}

//! What a release records of the run that made it (its manifest's
//! `sources`, `engine`, `second_engine` and `settings`): the run's input
//! files by config key, the settings of the stages that made its puzzles,
//! and the engines, each asked its identity by starting it.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::RunContext;
use crate::stages::StageName;
use crate::stages::mine::MineConfig;
use crate::stages::rate::RateConfig;
use crate::stages::release::manifest::{RunProvenance, RunRecord, Settings, Source};
use crate::stages::selfplay::SelfplayConfig;
use crate::stages::verify::VerifyConfig;
use std::collections::BTreeMap;

/// The rating model a release's `settings.rate.model` names: by its path
/// relative to the config's folder and its bytes.
#[derive(Serialize)]
struct ModelFile {
    path: String,
    sha256: String,
}

/// What a release records of the run that made it: the run's input files
/// (named as the config names them, relative to its folder), the settings
/// of the stages that made its puzzles, and (at the draw) the engines.
pub(crate) struct Provenance {
    /// `(config key, file)`.
    files: Vec<(&'static str, PathBuf)>,
    /// The sections of the stages that ran (`None`: the stage did not).
    selfplay: Option<SelfplayConfig>,
    mine: Option<MineConfig>,
    rate: Option<RateConfig>,
    verify: Option<VerifyConfig>,
    /// The stages of `pipeline.stages` up to the release, and whether
    /// `[generate]` played the games.
    stages: Vec<StageName>,
    generated: bool,
}

impl Provenance {
    /// What `config`'s run (with `seeds`) records.
    pub(crate) fn of(config: &PipelineConfig, seeds: &RunSeeds) -> Provenance {
        let generate = config.generate.enabled;
        let runs = |stage: StageName| generate || config.pipeline.stages.contains(&stage);
        let mut files: Vec<(&'static str, PathBuf)> = Vec::new();
        let listed = |stage: StageName| config.pipeline.stages.contains(&stage);
        if listed(StageName::IngestPuzzles) {
            files.extend(
                config
                    .sources
                    .puzzles
                    .iter()
                    .map(|p| ("sources.puzzles", p.clone())),
            );
        }
        if listed(StageName::IngestGames) {
            files.extend(
                config
                    .sources
                    .games
                    .iter()
                    .map(|p| ("sources.games", p.clone())),
            );
        }
        let human_start = |table: &toml::Table| table.contains_key("human");
        let grows_from_human_games = config.selfplay.human.is_some()
            || (generate
                && (human_start(&config.generate.selfplay)
                    || (config.generate.tiers.values())
                        .chain(config.generate.profiles.values())
                        .any(|profile| human_start(&profile.selfplay))));
        if (config.human_games.mine_games > 0 && listed(StageName::Mine)) || grows_from_human_games
        {
            files.extend(
                (config.sources.human_games.iter()).map(|p| ("sources.human_games", p.clone())),
            );
        }
        if generate {
            files.extend(
                config
                    .generate
                    .exclude
                    .iter()
                    .map(|p| ("generate.exclude", p.clone())),
            );
        }
        if runs(StageName::Rate) {
            files.extend(config.rate.model.iter().map(|p| ("rate.model", p.clone())));
        }
        let seed = seeds.run;
        Provenance {
            files,
            selfplay: (listed(StageName::Selfplay) && !generate).then(|| SelfplayConfig {
                seed: seeds.selfplay,
                ..config.selfplay.clone()
            }),
            mine: runs(StageName::Mine).then(|| config.mine.clone()),
            rate: runs(StageName::Rate).then(|| RateConfig {
                seed,
                ..config.rate.clone()
            }),
            verify: runs(StageName::Verify).then(|| config.verify.clone()),
            stages: (config.pipeline.stages.iter())
                .copied()
                .filter(|stage| *stage <= StageName::Release)
                .collect(),
            generated: generate,
        }
    }

    /// The manifest's `sources`, `engine`, `second_engine` and `settings`.
    /// Files are named relative to the config's folder and identified by
    /// sha256, engines by `id name` and sha256 (never by where they are on
    /// this machine), so shards merged elsewhere record the same.
    pub(crate) fn record(&self, ctx: &RunContext) -> Result<RunProvenance> {
        let name = |path: &Path| {
            path.strip_prefix(&ctx.config_dir)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        let sha = |key: &str, path: &Path| {
            // Human games by their text, as their games' `SourceFile` tag
            // names them: two zstd builds of one text hash alike.
            if key == "sources.human_games" {
                crate::core::fileio::sha256_content(path)
            } else {
                crate::core::fileio::sha256_file(path)
            }
            .map_err(|e| bad_input(format!("release provenance: {}: {e:#}", path.display())))
        };
        let sources = self
            .files
            .iter()
            .map(|(key, path)| {
                Ok(Source {
                    key: key.to_string(),
                    path: name(path),
                    sha256: sha(key, path)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = match &ctx.engine {
            Some(engine) => serde_json::to_value(engine_identity(&engine.spec, &engine.pool)?)?,
            None => Value::Null,
        };
        let second = self.second_engine(ctx)?;
        let mut settings = Settings::default();
        // Under `[generate]` each profile's own selfplay and mine settings
        // are in `generate.figures.settings`.
        if let Some(selfplay) = &self.selfplay {
            settings.selfplay = Some(serde_json::to_value(selfplay)?);
        }
        if let Some(mine) = &self.mine {
            settings.mine = Some(serde_json::to_value(mine)?);
        }
        if let Some(rate) = &self.rate {
            let mut value = serde_json::to_value(rate)?;
            if let Some(model) = &rate.model {
                value["model"] = serde_json::to_value(ModelFile {
                    path: name(model),
                    sha256: sha("rate.model", model)?,
                })?;
            }
            settings.rate = Some(value);
        }
        if let Some(verify) = &self.verify {
            let mut value = verify.recorded()?;
            if let Some(second) = &verify.second_engine {
                value["second_engine"]["path"] = Value::String(name(&second.path));
            }
            settings.verify = Some(value);
        }
        Ok(RunProvenance {
            sources,
            engine,
            second_engine: second,
            settings,
            run: self.run_record(ctx)?,
        })
    }
}

impl Provenance {
    /// The manifest's `second_engine`: `[verify.second_engine]`'s identity
    /// (on the run's pool settings) and its settings; null without one.
    fn second_engine(&self, ctx: &RunContext) -> Result<Value> {
        Ok(
            match self.verify.as_ref().and_then(|v| v.second_engine.as_ref()) {
                Some(second) => {
                    let spec = second.spec()?;
                    let pool = ctx
                        .engine
                        .as_ref()
                        .map(|e| e.pool.clone())
                        .unwrap_or_default();
                    serde_json::to_value(SecondEngineIdentity {
                        identity: engine_identity(&spec, &pool)?,
                        depth: second.depth,
                        min_gap_cp: second.min_gap_cp,
                    })?
                }
                None => Value::Null,
            },
        )
    }

    /// What made the puzzles ([`RunRecord`]): the algorithm version of
    /// each stage, and the stored work kept; `None` outside `run`.
    fn run_record(&self, ctx: &RunContext) -> Result<Option<RunRecord>> {
        if ctx.invocation.is_none() {
            return Ok(None);
        }
        let mut algorithms: BTreeMap<String, String> = self
            .stages
            .iter()
            .map(|stage| (stage.as_str().to_string(), stage.algorithm()))
            .collect();
        if self.generated {
            algorithms.insert(
                "generate".to_string(),
                crate::generate::ALGORITHM.to_string(),
            );
        }
        Ok(Some(RunRecord {
            algorithms,
            kept_work: ctx.kept_work.clone(),
        }))
    }
}

/// An engine as a release names it: its UCI `id name` (split into name and
/// version), its binary's sha256 and the options sent.
#[derive(Serialize)]
struct EngineIdentity<'a> {
    id: String,
    name: String,
    /// `None` when the `id name` does not end in a version number.
    version: Option<String>,
    sha256: String,
    #[serde(serialize_with = "crate::core::summary::serialize_pairs")]
    options: &'a [(String, String)],
}

/// The second engine as a release names it: its identity and the search
/// it checks with.
#[derive(Serialize)]
struct SecondEngineIdentity<'a> {
    #[serde(flatten)]
    identity: EngineIdentity<'a>,
    depth: u32,
    min_gap_cp: i32,
}

/// The identity of the engine `spec` starts (asked by starting it).
fn engine_identity<'a>(
    spec: &'a crate::engine::process::EngineSpec,
    pool: &crate::engine::pool::PoolConfig,
) -> Result<EngineIdentity<'a>> {
    let engine = crate::engine::process::Engine::start_with_handshake(
        spec,
        pool.handshake_deadline,
        pool.deadline,
    )
    .map_err(|e| bad_input(format!("{}: {e}", spec.path.display())))?;
    let id = engine.id_name().to_string();
    drop(engine);
    let (name, version) = match id.rsplit_once(' ') {
        Some((name, version)) if version.starts_with(|c: char| c.is_ascii_digit()) => {
            (name.to_string(), Some(version.to_string()))
        }
        _ => (id.clone(), None),
    };
    Ok(EngineIdentity {
        sha256: crate::core::fileio::sha256_file(&spec.path)?,
        id,
        name,
        version,
        options: &spec.options,
    })
}

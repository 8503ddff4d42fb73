//! The stages `puzzleforge run` chains, each a thin adapter from its own
//! section of `pipeline.toml` to the stage's module.
//!
//! Data flows one way: sources -> ingest -> (selfplay -> mine -> rate) ->
//! release -> export -> eval. An adapter holds its typed section (with the
//! run seed and its paths already resolved) and nothing else of the config,
//! so a stage reads only its own settings and the committed outputs of the
//! stages before it.

use anyhow::Result;
use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::engine::pool::EnginePool;
use crate::pipeline::config::{ExportSection, HumanGamesSection, PipelineConfig};
use crate::pipeline::generate::{Generated, Part};
use crate::pipeline::provenance::Provenance;
pub(crate) use crate::pipeline::releases::{earlier_releases, finished_releases};
use crate::pipeline::stage::{RunContext, Stage, StageFolder, StageName};
use crate::pipeline::summary::{
    ExportsSummary, FormatSummary, GeneratedGamesSummary, InputSummary, InputsSummary,
    MineFileSummary, RateFileSummary, SourceSummary, SourcesSummary, StageSummary,
    VerifyFileSummary, VerifyTotals,
};
use crate::stages::eval::config::EvalConfig;
use crate::stages::export::{ExportFormat, SplitChoice};
use crate::stages::ingest_games::IngestGamesConfig;
use crate::stages::ingest_puzzles::IngestPuzzlesConfig;
use crate::stages::mine::MineConfig;
use crate::stages::rate::RateConfig;
use crate::stages::release::cells::SplitConfig;
use crate::stages::selfplay::SelfplayConfig;
use crate::stages::verify::{VerifyConfig, VerifyCounts};

/// The stages of `pipeline.stages`, in its order, each holding its own
/// section of `config` (loaded from `config_path`, which errors name).
pub fn configured(config: &PipelineConfig, config_path: &Path) -> Result<Vec<Box<dyn Stage>>> {
    config
        .pipeline
        .stages
        .iter()
        .map(|&name| stage(name, config, config_path))
        .collect()
}

/// The stage `name`, handed its own section of `config`.
pub fn stage(
    name: StageName,
    config: &PipelineConfig,
    config_path: &Path,
) -> Result<Box<dyn Stage>> {
    let seed = config.pipeline.seed;
    Ok(match name {
        StageName::IngestPuzzles => Box::new(IngestPuzzles {
            filters: config.ingest.puzzles.clone(),
            sources: config.sources.puzzles.clone(),
            seed,
        }),
        StageName::IngestGames => Box::new(IngestGames {
            section: config.ingest.games.clone(),
            sources: config.sources.games.clone(),
        }),
        StageName::Selfplay => Box::new(Selfplay {
            section: SelfplayConfig {
                seed: config.selfplay_seed(),
                ..config.selfplay.clone()
            },
        }),
        StageName::Mine => Box::new(Mine {
            section: config.mine.clone(),
            human_games: HumanGamesInput::of(config)?,
        }),
        StageName::Rate => Box::new(Rate {
            section: RateConfig {
                seed,
                ..config.rate.clone()
            },
        }),
        StageName::Verify => Box::new(Verify {
            section: config.verify.clone(),
        }),
        StageName::Release => Box::new(Release {
            section: config.split.clone(),
            seed,
            verifies: config.pipeline.stages.contains(&StageName::Verify),
            drops_unverified: config.verify.policy == crate::stages::verify::Policy::Drop,
            provenance: Provenance::of(config),
        }),
        StageName::Export => Box::new(Export::new(&config.export, config_path)?),
        StageName::Eval => Box::new(Eval {
            section: config.eval.clone(),
            seed,
        }),
    })
}

/// The file name a source gets inside a stage folder: its name without
/// compression and format suffixes, plus `suffix`.
fn output_name(source: &Path, suffix: &str) -> String {
    let mut stem = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into());
    for ext in [".zst", ".csv", ".jsonl", ".json", ".pgn", ".candidates"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s.to_string();
        }
    }
    format!("{stem}{suffix}")
}

/// The funnel of a generated release, beside its games.
pub(crate) const GENERATE_SUMMARY: &str = "generate.json";

/// Whether a mine/rate file holds the self-play games' puzzles (the others
/// come from Lichess game candidates).
fn is_selfplay_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == "games.puzzles.csv")
}

/// Files with one of the given endings in a stage's committed folder,
/// sorted by name.
fn stage_files(ctx: &RunContext, stage: StageName, ending: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(ctx.stage_dir(stage))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().ends_with(ending))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A stage's config section as its fingerprint records it.
fn recorded(section: &impl Serialize) -> Result<Value> {
    Ok(serde_json::to_value(section)?)
}

/// A section with the run seed beside it (`ingest_puzzles`).
#[derive(Serialize)]
struct Seeded<'a, T> {
    filters: &'a T,
    seed: u64,
}

/// `selfplay`'s config under `[generate]`: the settings the games were
/// played with (generation's profile, not `[selfplay]`'s values) and the
/// generation's fingerprint.
#[derive(Serialize)]
struct PlayedSelfplay<G> {
    selfplay: Value,
    generate: G,
}

/// `mine`'s config under `[generate]`: `[mine]` (which mines the Lichess
/// game candidates) and the settings the generated games were mined with.
#[derive(Serialize)]
struct MinedWith<'a, G> {
    mine: &'a MineConfig,
    generated_with: Value,
    generate: G,
}

/// `rate`'s config under `[generate]`.
#[derive(Serialize)]
struct RatedWith<'a, G> {
    rate: &'a RateConfig,
    generate: G,
}

/// `verify`'s config under `[generate]`.
#[derive(Serialize)]
struct VerifiedWith<G> {
    verify: Value,
    generate: G,
}

/// `release`'s config: `[split]`, the run seed and the tier drawn.
#[derive(Serialize)]
struct SplitWith<'a> {
    split: &'a SplitConfig,
    seed: u64,
    tier: Option<&'a str>,
}

/// `eval`'s config: `[eval]` as records keep it, and the run seed.
#[derive(Serialize)]
struct EvalWith {
    eval: EvalConfig,
    seed: u64,
}

/// `ingest_puzzles`: validates every configured puzzle source.
struct IngestPuzzles {
    /// `[ingest.puzzles]`.
    filters: IngestPuzzlesConfig,
    /// `sources.puzzles`.
    sources: Vec<PathBuf>,
    seed: u64,
}

impl Stage for IngestPuzzles {
    fn name(&self) -> StageName {
        StageName::IngestPuzzles
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&Seeded {
            filters: &self.filters,
            seed: self.seed,
        })
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(self.sources.clone())
    }

    fn work(&self, _ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let config = IngestPuzzlesConfig {
            seed: self.seed,
            ..self.filters.clone()
        };
        let mut files = Vec::new();
        for source in &self.sources {
            let output = output_name(source, ".csv");
            let rejects = output_name(source, ".rejects.csv");
            let mut summary = crate::stages::ingest_puzzles::ingest_puzzles(
                &config,
                source,
                &folder.scratch_path(&output),
                Some(&folder.scratch_path(&rejects)),
            )?;
            summary.output = folder.committed.join(&output);
            summary.rejects = folder.committed.join(&rejects);
            files.push(SourceSummary {
                source: source.clone(),
                summary,
            });
        }
        Ok(StageSummary::IngestPuzzles(SourcesSummary::of(files)))
    }
}

/// `ingest_games`: finds candidate positions in the configured game dumps.
struct IngestGames {
    /// `[ingest.games]`.
    section: IngestGamesConfig,
    /// `sources.games`.
    sources: Vec<PathBuf>,
}

impl Stage for IngestGames {
    fn name(&self) -> StageName {
        StageName::IngestGames
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&self.section)
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(self.sources.clone())
    }

    fn work(&self, _ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let mut files = Vec::new();
        for source in &self.sources {
            let output = output_name(source, ".candidates.csv");
            let mut summary = crate::stages::ingest_games::games_report(
                &self.section,
                source,
                &folder.scratch_path(&output),
            )?
            .record;
            summary.output = folder.committed_path(&output);
            files.push(SourceSummary {
                source: source.clone(),
                summary,
            });
        }
        Ok(StageSummary::IngestGames(SourcesSummary::of(files)))
    }
}

/// `selfplay`: reproducible Epoch-style games.
struct Selfplay {
    /// `[selfplay]`, with the run seed.
    section: SelfplayConfig,
}

impl Stage for Selfplay {
    fn name(&self) -> StageName {
        StageName::Selfplay
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        match &ctx.generated {
            // The games were played with generation's profile, not
            // `[selfplay]`'s values: record those played.
            Some(generated) => recorded(&PlayedSelfplay {
                selfplay: generated.played_settings("selfplay"),
                generate: generated.fingerprint(),
            }),
            None => recorded(&self.section),
        }
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(ctx
            .generated
            .as_ref()
            .map(|g| g.inputs(None))
            .unwrap_or_default())
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        if let Some(generated) = &ctx.generated {
            // The games were played into the batch store; the release
            // holds those up to the stopping game, and the funnel.
            let output = "games.pgn";
            let games = generated.write_games(&folder.scratch_path(output))?;
            write_atomic(
                &folder.scratch_path(GENERATE_SUMMARY),
                format!("{}\n", serde_json::to_string_pretty(&generated.report)?).as_bytes(),
            )?;
            let summary = GeneratedGamesSummary {
                games,
                first_game: generated.first,
                last_game: generated.last,
                output: folder.committed_path(output),
                generate: generated.report.clone(),
                engine_cpu_hours: generated.cpu_seconds / 3600.0,
            };
            return Ok(StageSummary::GeneratedGames(Box::new(summary)));
        }
        let pool = ctx.engine_pool(StageName::Selfplay)?;
        // A shard plays its slice of the game numbers; each game's bytes
        // depend only on the seed and its number.
        let numbers = match &ctx.shard {
            Some(shard) => {
                let range = shard.range(self.section.games);
                range.start + 1..=range.end
            }
            None => 1..=self.section.games,
        };
        let output = "games.pgn";
        let mut summary = crate::stages::selfplay::run_selfplay_range(
            &self.section,
            &pool,
            &folder.scratch_path(output),
            numbers,
        )?
        .record;
        summary.output = folder.committed_path(output);
        Ok(StageSummary::Selfplay(summary))
    }
}

/// `mine`: unique-best-move puzzles from the self-play games, from the
/// Lichess game candidates and from human games.
struct Mine {
    /// `[mine]`.
    section: MineConfig,
    /// `[human_games]` with games to mine, and its file.
    human_games: Option<HumanGamesInput>,
}

/// The human games `mine` draws its human-game puzzles from.
#[derive(Serialize)]
struct HumanGamesInput {
    #[serde(skip)]
    path: PathBuf,
    #[serde(flatten)]
    section: HumanGamesSection,
    seed: u64,
}

impl HumanGamesInput {
    /// `[human_games]` when it mines games; they need `[sources]
    /// human_games`.
    fn of(config: &PipelineConfig) -> Result<Option<HumanGamesInput>> {
        let section = &config.human_games;
        if section.mine_games == 0 {
            return Ok(None);
        }
        let Some(path) = &config.sources.human_games else {
            crate::bail_input!(
                "[human_games] mine_games = {} needs [sources] human_games: the file to draw \
                 the games from",
                section.mine_games
            );
        };
        Ok(Some(HumanGamesInput {
            path: path.clone(),
            section: section.clone(),
            seed: config.pipeline.seed,
        }))
    }

    /// The drawn games as units, or this shard's slice of them.
    fn units(&self, ctx: &RunContext) -> Result<crate::stages::mine::Loaded> {
        use crate::chess::human_games::{HumanPool, PoolLimits};
        let limits = PoolLimits {
            min_plies: self.section.min_plies,
            max_games: self.section.pool_games,
        };
        let pool = HumanPool::shared(&self.path, limits)?;
        let mut units =
            crate::stages::mine::human_game_units(&pool, self.section.mine_games, self.seed);
        if let Some(shard) = &ctx.shard {
            let range = shard.range(units.len() as u64);
            units = units[range.start as usize..range.end as usize].to_vec();
        }
        Ok(crate::stages::mine::Loaded {
            units,
            skipped: Vec::new(),
        })
    }
}

/// `mine`'s config with human games to mine: `[mine]`, `[human_games]`
/// and the seed that draws them (without, `[mine]` alone, as before).
#[derive(Serialize)]
struct MineWithHumanGames<'a, S> {
    #[serde(flatten)]
    mine: S,
    human_games: &'a HumanGamesInput,
}

impl Mine {
    /// Mines the drawn human games into `human_games.puzzles.csv`.
    fn mine_human_games(
        &self,
        ctx: &RunContext,
        pool: &EnginePool,
        folder: &StageFolder,
        human: &HumanGamesInput,
    ) -> Result<InputSummary<MineFileSummary>> {
        let loaded = human.units(ctx)?;
        let output = "human_games.puzzles.csv";
        let mut summary = crate::stages::mine::run_mine_loaded(
            &self.section,
            pool,
            &loaded,
            &folder.scratch_path(output),
        )?
        .record;
        summary.output = folder.committed_path(output);
        Ok(InputSummary {
            input: human.path.clone(),
            summary: MineFileSummary::Mined(summary),
        })
    }

    /// The mine input `input`, or this shard's part of it.
    fn load(
        ctx: &RunContext,
        input: &Path,
        sliced_here: bool,
    ) -> Result<crate::stages::mine::Loaded> {
        use crate::stages::mine::{Loaded, load_input};
        Ok(match &ctx.shard {
            // Self-play games are sliced by the selfplay stage already;
            // a shard may have none of them (more shards than games).
            Some(_) if !sliced_here && std::fs::metadata(input)?.len() == 0 => Loaded {
                units: Vec::new(),
                skipped: Vec::new(),
            },
            Some(_) if !sliced_here => load_input(input)?,
            // Every shard ingests the same candidates; each mines its
            // slice of them.
            Some(shard) => {
                let mut loaded = load_input(input)?;
                let range = shard.range(loaded.units.len() as u64);
                loaded.units = loaded.units[range.start as usize..range.end as usize].to_vec();
                loaded
            }
            None => load_input(input)?,
        })
    }
}

impl Stage for Mine {
    fn name(&self) -> StageName {
        StageName::Mine
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        let mine = match &ctx.generated {
            // `[mine]` mines the Lichess game candidates; the generated
            // games were mined with generation's profile.
            Some(generated) => recorded(&MinedWith {
                mine: &self.section,
                generated_with: generated.played_settings("mine"),
                generate: generated.fingerprint(),
            })?,
            None => recorded(&self.section)?,
        };
        match &self.human_games {
            Some(human_games) => recorded(&MineWithHumanGames { mine, human_games }),
            None => Ok(mine),
        }
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, StageName::Selfplay, ".pgn");
        inputs.extend(stage_files(ctx, StageName::IngestGames, ".candidates.csv"));
        inputs.extend(self.human_games.as_ref().map(|h| h.path.clone()));
        if let Some(generated) = &ctx.generated {
            inputs.extend(generated.inputs(Some(Part::Mined)));
        }
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let pool = ctx.engine_pool(StageName::Mine)?;
        let mut files = Vec::new();
        let games = stage_files(ctx, StageName::Selfplay, ".pgn");
        let candidates = stage_files(ctx, StageName::IngestGames, ".candidates.csv");
        for (input, sliced_here) in games
            .into_iter()
            .map(|p| (p, false))
            .chain(candidates.into_iter().map(|p| (p, true)))
        {
            let output = output_name(&input, ".puzzles.csv");
            if let (Some(generated), false) = (&ctx.generated, sliced_here) {
                // The games' puzzles were mined into the batch store.
                let columns = crate::stages::mine::MINE_COLUMNS.map(|c| c.to_string());
                let written = generated.write_puzzles(
                    Part::Mined,
                    &folder.scratch_path(&output),
                    Some(columns.to_vec()),
                )?;
                files.push(InputSummary {
                    input,
                    summary: MineFileSummary::FromStore {
                        puzzles: written,
                        from_store: generated.stores_display(),
                        output: folder.committed_path(&output),
                    },
                });
                continue;
            }
            let loaded = Self::load(ctx, &input, sliced_here)?;
            let mut summary = crate::stages::mine::run_mine_loaded(
                &self.section,
                &pool,
                &loaded,
                &folder.scratch_path(&output),
            )?
            .record;
            summary.output = folder.committed_path(&output);
            files.push(InputSummary {
                input,
                summary: MineFileSummary::Mined(summary),
            });
        }
        if let Some(human) = &self.human_games {
            files.push(self.mine_human_games(ctx, &pool, folder, human)?);
        }
        Ok(StageSummary::Mine(InputsSummary::of(files)))
    }
}

/// `rate`: engine-estimated ratings for the mined puzzles, from the
/// committed (or a configured) model fitted on real Lichess puzzles.
struct Rate {
    /// `[rate]`, with the run seed and the model's path resolved.
    section: RateConfig,
}

impl Stage for Rate {
    fn name(&self) -> StageName {
        StageName::Rate
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        match &ctx.generated {
            Some(generated) => recorded(&RatedWith {
                rate: &self.section,
                generate: generated.fingerprint(),
            }),
            None => recorded(&self.section),
        }
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, StageName::Mine, ".puzzles.csv");
        inputs.extend(self.section.model.clone());
        if let Some(generated) = &ctx.generated {
            inputs.extend(generated.inputs(Some(Part::Rated)));
        }
        Ok(inputs)
    }

    /// Rating reads the human-move nets and the board; no engine.
    fn uses_engine(&self) -> bool {
        false
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let mut files = Vec::new();
        for input in stage_files(ctx, StageName::Mine, ".puzzles.csv") {
            let output = output_name(&input, ".csv");
            if let Some(generated) = ctx.generated.as_ref().filter(|_| is_selfplay_file(&input)) {
                let written =
                    generated.write_puzzles(Part::Rated, &folder.scratch_path(&output), None)?;
                files.push(InputSummary {
                    input,
                    summary: RateFileSummary::FromStore {
                        written,
                        from_store: generated.stores_display(),
                        output: folder.committed_path(&output),
                    },
                });
                continue;
            }
            let job = crate::stages::rate::RateJob {
                input: &input,
                output: &folder.scratch_path(&output),
                // Counted in the stage's summary, not listed: a rejects
                // file would be one more output of every run's stage.
                rejects: None,
                calibrate: &[],
                save_model: None,
                features: Default::default(),
                learning_curve: &[],
                config: &self.section,
            };
            let mut summary = crate::stages::rate::run_rate_with(&job)?.record;
            summary.output = folder.committed_path(&output);
            files.push(InputSummary {
                input,
                summary: RateFileSummary::Rated(summary),
            });
        }
        Ok(StageSummary::Rate(InputsSummary::of(files)))
    }
}

/// `verify`: every rated mined puzzle searched again with more nodes, and by
/// the second engine when `[verify.second_engine]` is set; the puzzles get
/// their verdict columns (which the release reads) and the figures go into
/// the release manifest.
struct Verify {
    /// `[verify]`.
    section: VerifyConfig,
}

impl Verify {
    /// The stage's totals, which the release manifest records.
    const SUMMARY: &'static str = "verify.json";
    /// The puzzles to verify: the rated mined puzzles (what the release
    /// draws from), else the mined ones when the pipeline does not rate.
    fn puzzle_files(ctx: &RunContext) -> Vec<PathBuf> {
        let rated = stage_files(ctx, StageName::Rate, ".puzzles.csv");
        if rated.is_empty() {
            stage_files(ctx, StageName::Mine, ".puzzles.csv")
        } else {
            rated
        }
    }
}

impl Verify {
    /// The verdicts of the generated puzzles, given when their batches
    /// were played: the verified rows, the report and its summary.
    fn from_store(
        config: &crate::stages::verify::VerifyConfig,
        generated: &Generated,
        files: &crate::stages::verify::VerifyFiles,
    ) -> Result<(crate::core::summary::Summary, VerifyCounts)> {
        let verdicts = generated.verdicts()?;
        let mut text = String::new();
        for verdict in &verdicts {
            text.push_str(&serde_json::to_string(verdict)?);
            text.push('\n');
        }
        write_atomic(files.report, text.as_bytes())?;
        if let Some(path) = files.puzzles_out {
            generated.write_puzzles(Part::Verified, path, None)?;
        }
        crate::stages::verify::summarize(config, &verdicts, &[], files.report)
    }
}

impl Stage for Verify {
    fn name(&self) -> StageName {
        StageName::Verify
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        match &ctx.generated {
            Some(generated) => recorded(&VerifiedWith {
                verify: self.section.recorded()?,
                generate: generated.fingerprint(),
            }),
            None => Ok(self.section.recorded()?),
        }
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = Self::puzzle_files(ctx);
        if let Some(generated) = &ctx.generated {
            inputs.extend(generated.inputs(Some(Part::Verified)));
        }
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let pool = ctx.engine_pool(StageName::Verify)?;
        let config = &self.section;
        let second = match &config.second_engine {
            Some(second) => Some(second.pool(&pool)?),
            None => None,
        };
        let mut files = Vec::new();
        let mut counts = VerifyCounts::default();
        for input in Self::puzzle_files(ctx) {
            let report = output_name(&input, ".verify.jsonl");
            let puzzles = output_name(&input, ".csv");
            let files_here = crate::stages::verify::VerifyFiles {
                input: &input,
                report: &folder.scratch_path(&report),
                puzzles_out: Some(&folder.scratch_path(&puzzles)),
            };
            let (summary, file_counts) =
                match ctx.generated.as_ref().filter(|_| is_selfplay_file(&input)) {
                    Some(generated) => Self::from_store(config, generated, &files_here)?,
                    None => crate::stages::verify::run_verify_with(
                        config,
                        &pool,
                        second.as_ref(),
                        &files_here,
                    )?,
                };
            counts += &file_counts;
            // Names, not paths: the release manifest embeds this file, and
            // its bytes must not depend on where the release folder is.
            let mut recorded = summary.json;
            if let Some(map) = recorded.as_object_mut() {
                map.remove("report");
            }
            files.push(VerifyFileSummary {
                input: puzzles,
                report,
                counts: recorded,
            });
        }
        let totals = VerifyTotals {
            factor: config.factor,
            policy: config.policy,
            second_engine: second.as_ref().map(|p| p.engine_id().to_string()),
            second_engine_settings: config.second_engine.clone(),
            counts,
            files,
        };
        crate::core::fileio::write_atomic(
            &folder.scratch_path(Self::SUMMARY),
            format!("{}\n", serde_json::to_string_pretty(&totals)?).as_bytes(),
        )?;
        Ok(StageSummary::Verify(totals))
    }
}

/// `release`: the stratified, game-grouped train/test split.
struct Release {
    /// `[split]`, as written (the run seed is recorded beside it).
    section: SplitConfig,
    seed: u64,
    /// Whether `pipeline.stages` verifies the mined puzzles (the release
    /// then draws the verified files and embeds the verification figures).
    verifies: bool,
    /// `[verify] policy = "drop"`: puzzles that fail a check stay out.
    drops_unverified: bool,
    provenance: Provenance,
}

impl Release {
    /// The puzzle pool: every validated Lichess puzzle file, and the rated
    /// mined puzzles when the pipeline mines, each in its verified copy
    /// (with the verdict columns) when the pipeline verifies.
    fn pool(&self, ctx: &RunContext) -> Vec<PathBuf> {
        let mut pool = stage_files(ctx, StageName::IngestPuzzles, ".csv");
        pool.retain(|p| !p.to_string_lossy().ends_with(".rejects.csv"));
        let verified_dir = ctx.stage_dir(StageName::Verify);
        pool.extend(
            stage_files(ctx, StageName::Rate, ".csv")
                .into_iter()
                .map(|rated| {
                    let verified = rated.file_name().map(|name| verified_dir.join(name));
                    match verified {
                        Some(path) if self.verifies && path.is_file() => path,
                        _ => rated,
                    }
                }),
        );
        pool
    }

    /// The generation funnel beside the games, under `[generate]`.
    fn generate_summary(ctx: &RunContext) -> Option<PathBuf> {
        let path = ctx.stage_dir(StageName::Selfplay).join(GENERATE_SUMMARY);
        (ctx.generated.is_some() && path.is_file()).then_some(path)
    }

    /// The `verify` stage's totals, when the pipeline verifies.
    fn verify_summary(&self, ctx: &RunContext) -> Option<PathBuf> {
        let path = ctx.stage_dir(StageName::Verify).join(Verify::SUMMARY);
        (self.verifies && path.is_file()).then_some(path)
    }
}

impl Stage for Release {
    fn name(&self) -> StageName {
        StageName::Release
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        recorded(&SplitWith {
            split: &self.section,
            seed: self.seed,
            tier: ctx.tier.as_deref(),
        })
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.pool(ctx);
        inputs.extend(self.verify_summary(ctx));
        inputs.extend(Self::generate_summary(ctx));
        for release in earlier_releases(ctx)? {
            inputs
                .extend(crate::stages::release::folder::ReleaseFolder::at(&release).split_files());
        }
        Ok(inputs)
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let pool = self.pool(ctx);
        if pool.is_empty() {
            return Err(bad_input(
                "the release stage has no puzzles: add ingest_puzzles (or mine and rate) to pipeline.stages",
            ));
        }
        let args = crate::stages::release::SplitArgs {
            pool,
            output: folder.scratch.clone(),
            config: None,
            tier: ctx.tier.clone(),
            seed: None,
            bin_width: None,
            train_per_cell: None,
            test_per_cell: None,
            strict: false,
            exclude: earlier_releases(ctx)?
                .iter()
                .flat_map(|release| {
                    crate::stages::release::folder::ReleaseFolder::at(release).split_files()
                })
                .collect(),
            exclude_releases_under: None,
            no_release_exclusion: true,
            engine_id: None,
            engine_option: Vec::new(),
            verify: self.verify_summary(ctx),
            drop_unverified: self.verifies && self.drops_unverified,
            generate: Self::generate_summary(ctx),
            games: stage_files(ctx, StageName::Selfplay, ".pgn"),
            provenance: Some(self.provenance.record(ctx)?),
        };
        let config = SplitConfig {
            seed: self.seed,
            ..self.section.clone()
        };
        let mut summary = crate::stages::release::run_split_with(&args, config)?.record;
        summary.output = folder.committed_folder();
        Ok(StageSummary::Release(summary))
    }
}

/// `export`: the release in the configured exchange formats.
struct Export {
    /// `[export]`, as written.
    section: ExportSection,
    /// Each of `export.formats`, by its name and its format.
    formats: Vec<(String, ExportFormat)>,
    split: SplitChoice,
}

impl Export {
    /// Checks `[export]`'s names of formats and splits (errors name
    /// `config_path`).
    fn new(section: &ExportSection, config_path: &Path) -> Result<Export> {
        let split = SplitChoice::from_str(&section.split, true).map_err(|_| {
            bad_input(format!(
                "{}: export.split must be train, test or both, not {:?}",
                config_path.display(),
                section.split
            ))
        })?;
        let formats = section
            .formats
            .iter()
            .map(|name| {
                let format = ExportFormat::from_str(name, true).map_err(|_| {
                    bad_input(format!(
                        "{}: export.formats has unknown format {name:?} (inspect, dspy, openai-evals, lichess)",
                        config_path.display()
                    ))
                })?;
                Ok((name.clone(), format))
            })
            .collect::<Result<_>>()?;
        Ok(Export {
            section: section.clone(),
            formats,
            split,
        })
    }
}

impl Stage for Export {
    fn name(&self) -> StageName {
        StageName::Export
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&self.section)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(
            crate::stages::release::folder::ReleaseFolder::at(&ctx.stage_dir(StageName::Release))
                .split_files(),
        )
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let mut done = Vec::new();
        for (name, format) in &self.formats {
            let args = crate::stages::export::ExportArgs {
                release: ctx.stage_dir(StageName::Release),
                format: *format,
                output: folder.scratch_path(name),
                split: self.split,
            };
            let mut summary = crate::stages::export::export_report(&args)?.record;
            summary.output = folder.committed_path(name);
            done.push(FormatSummary {
                format: name.clone(),
                summary,
            });
        }
        let summary = ExportsSummary {
            formats: done.len(),
            exports: done,
        };
        Ok(StageSummary::Export(summary))
    }
}

/// `eval`: the fresh test split played by the configured player (a
/// built-in baseline by default), with its report.
struct Eval {
    /// `[eval]`, as written (the run seed is recorded beside it).
    section: EvalConfig,
    seed: u64,
}

impl Stage for Eval {
    fn name(&self) -> StageName {
        StageName::Eval
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        let section = crate::stages::eval::section_for_records(&self.section);
        recorded(&EvalWith {
            eval: section,
            seed: self.seed,
        })
    }

    /// The release's splits, and the Maia nets the eval reads (the
    /// ladder's nine or the player's one) where they exist.
    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs =
            crate::stages::release::folder::ReleaseFolder::at(&ctx.stage_dir(StageName::Release))
                .split_files();
        inputs.extend(crate::stages::eval::maia_inputs(&self.section));
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let engine = ctx.engine()?;
        let args = crate::stages::eval::EvalArgs {
            set: ctx.stage_dir(StageName::Release),
            model: None,
            templates: Vec::new(),
            prompt: None,
            output: folder.scratch.clone(),
            split: crate::stages::export::Split::Test,
            repeats: None,
            seed: None,
            limit: None,
            workers: None,
            config: None,
            no_regret: false,
            no_ladder: false,
            maia_models: None,
            engine: None,
            engine_workers: None,
        };
        let mut config = EvalConfig {
            seed: self.seed,
            ..self.section.clone()
        };
        // A failed eval (too many calls without an answer) is not committed,
        // and the next run starts it again from an empty scratch folder: the
        // model's answers are kept in the output folder instead, so that run
        // asks only the calls that failed; the Maia nets' probabilities and
        // regret's searches, keyed by content, are found there by every
        // release's eval of the same output folder.
        let keeps = crate::stages::eval::keeps_a_cache(&config) || config.regret.enabled;
        if config.cache_dir.is_none() && keeps {
            let output_dir = ctx.release_dir.parent().unwrap_or(Path::new(""));
            config.cache_dir = Some(output_dir.join(".eval-cache"));
        }
        // The run's whole `[engine]` section (binary, options, workers,
        // deadline, attempts), as every other stage uses it.
        let engine = crate::stages::eval::config::EvalEngine::Resolved {
            spec: engine.spec.clone(),
            pool: engine.pool.clone(),
        };
        let mut summary = crate::stages::eval::run_eval_with(&args, config, &engine)?.record;
        summary.run_dir = folder.committed_folder();
        Ok(StageSummary::Eval(summary))
    }
}

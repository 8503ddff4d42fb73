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
use serde_json::{Value, json};
use std::path::{Component, Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::pipeline::config::{ExportSection, PipelineConfig};
use crate::pipeline::generate::{Generated, Part};
use crate::pipeline::stage::{RunContext, Stage, StageFolder, StageName};
use crate::stages::eval::config::EvalConfig;
use crate::stages::export::{ExportFormat, SplitChoice};
use crate::stages::ingest_games::IngestGamesConfig;
use crate::stages::ingest_puzzles::IngestPuzzlesConfig;
use crate::stages::mine::MineConfig;
use crate::stages::rate::RateConfig;
use crate::stages::release::cells::SplitConfig;
use crate::stages::release::manifest::{ReleaseManifest, RunProvenance, Settings, Source};
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

/// The summary of a stage that reads sources (`ingest_puzzles`,
/// `ingest_games`): each source's own summary.
#[derive(Serialize)]
struct SourcesSummary<S> {
    sources: usize,
    files: Vec<SourceSummary<S>>,
}

impl<S> SourcesSummary<S> {
    fn of(files: Vec<SourceSummary<S>>) -> Self {
        Self {
            sources: files.len(),
            files,
        }
    }
}

/// One source and its summary.
#[derive(Serialize)]
struct SourceSummary<S> {
    source: PathBuf,
    summary: S,
}

/// The summary of a stage that reads the files of the stage before it
/// (`mine`, `rate`): each input's own summary.
#[derive(Serialize)]
struct InputsSummary<S> {
    inputs: usize,
    files: Vec<InputSummary<S>>,
}

impl<S> InputsSummary<S> {
    fn of(files: Vec<InputSummary<S>>) -> Self {
        Self {
            inputs: files.len(),
            files,
        }
    }
}

/// One input file and its summary.
#[derive(Serialize)]
struct InputSummary<S> {
    input: PathBuf,
    summary: S,
}

/// The `selfplay` summary under `[generate]`: the games written from the
/// store, and the generation's funnel and cost.
#[derive(Serialize)]
struct GeneratedGamesSummary<'a> {
    games: u64,
    first_game: u64,
    last_game: u64,
    output: String,
    generate: &'a crate::pipeline::generate::GenerateReport,
    engine_cpu_hours: f64,
}

/// One `mine` input's summary: mined now, or (the generated games) written
/// from the store, where they were mined as they were played.
#[derive(Serialize)]
#[serde(untagged)]
enum MineFileSummary {
    FromStore {
        puzzles: u64,
        from_store: String,
        output: String,
    },
    Mined(crate::stages::mine::MineSummary),
}

/// One `rate` input's summary: rated now, or (the generated puzzles)
/// written from the store, where they were rated as they were played.
#[derive(Serialize)]
#[serde(untagged)]
enum RateFileSummary {
    FromStore {
        written: u64,
        from_store: String,
        output: String,
    },
    Rated(crate::stages::rate::RateSummary),
}

/// The `export` summary: each format's own.
#[derive(Serialize)]
struct ExportsSummary {
    formats: usize,
    exports: Vec<FormatSummary>,
}

/// One format of `export.formats` and its export's summary.
#[derive(Serialize)]
struct FormatSummary {
    format: String,
    summary: crate::stages::export::ExportSummary,
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

    fn config_section(&self, _ctx: &RunContext) -> Value {
        json!({"filters": self.filters, "seed": self.seed})
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(self.sources.clone())
    }

    fn execute(&self, _ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
        Ok(serde_json::to_value(SourcesSummary::of(files))?)
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

    fn config_section(&self, _ctx: &RunContext) -> Value {
        json!(self.section)
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(self.sources.clone())
    }

    fn execute(&self, _ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
        Ok(serde_json::to_value(SourcesSummary::of(files))?)
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

    fn config_section(&self, ctx: &RunContext) -> Value {
        match &ctx.generated {
            // The games were played with generation's profile, not
            // `[selfplay]`'s values: record those played.
            Some(generated) => json!({"selfplay": generated.played_settings("selfplay"),
                "generate": generated.fingerprint()}),
            None => json!(self.section),
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

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
                generate: &generated.report,
                engine_cpu_hours: generated.cpu_seconds / 3600.0,
            };
            return Ok(serde_json::to_value(summary)?);
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
        Ok(serde_json::to_value(summary)?)
    }
}

/// `mine`: unique-best-move puzzles from the self-play games and from the
/// Lichess game candidates.
struct Mine {
    /// `[mine]`.
    section: MineConfig,
}

impl Mine {
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

    fn config_section(&self, ctx: &RunContext) -> Value {
        match &ctx.generated {
            // `[mine]` mines the Lichess game candidates; the generated
            // games were mined with generation's profile.
            Some(generated) => json!({"mine": self.section,
                "generated_with": generated.played_settings("mine"),
                "generate": generated.fingerprint()}),
            None => json!(self.section),
        }
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, StageName::Selfplay, ".pgn");
        inputs.extend(stage_files(ctx, StageName::IngestGames, ".candidates.csv"));
        if let Some(generated) = &ctx.generated {
            inputs.extend(generated.inputs(Some(Part::Mined)));
        }
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
        Ok(serde_json::to_value(InputsSummary::of(files))?)
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

    fn config_section(&self, ctx: &RunContext) -> Value {
        match &ctx.generated {
            Some(generated) => json!({"rate": self.section,
                "generate": generated.fingerprint()}),
            None => json!(self.section),
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

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
        let engine = ctx.engine()?;
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
                calibrate: &[],
                save_model: None,
                features: Default::default(),
                config: &self.section,
                engine: engine.spec.clone(),
                pool: engine.pool.clone(),
            };
            let mut summary = crate::stages::rate::run_rate_with(&job)?.record;
            summary.output = folder.committed_path(&output);
            files.push(InputSummary {
                input,
                summary: RateFileSummary::Rated(summary),
            });
        }
        Ok(serde_json::to_value(InputsSummary::of(files))?)
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
        Ok(crate::stages::verify::summarize(
            config,
            &verdicts,
            &[],
            files.report,
        ))
    }
}

impl Stage for Verify {
    fn name(&self) -> StageName {
        StageName::Verify
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        match &ctx.generated {
            Some(generated) => json!({"verify": self.section.recorded(),
                "generate": generated.fingerprint()}),
            None => self.section.recorded(),
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

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
            files.push(json!({
                "input": puzzles,
                "report": report,
                "counts": recorded,
            }));
        }
        let totals = serde_json::to_value(VerifyTotals {
            factor: config.factor,
            policy: config.policy,
            second_engine: second.as_ref().map(|p| p.engine_id().to_string()),
            second_engine_settings: config.second_engine.as_ref(),
            counts,
            files,
        })?;
        crate::core::fileio::write_atomic(
            &folder.scratch_path(Self::SUMMARY),
            format!("{}\n", serde_json::to_string_pretty(&totals)?).as_bytes(),
        )?;
        Ok(totals)
    }
}

/// The `verify` stage's `verify.json`: its settings, the counts summed
/// over its files, and each file's own summary.
#[derive(Serialize)]
struct VerifyTotals<'a> {
    factor: u64,
    policy: crate::stages::verify::Policy,
    second_engine: Option<String>,
    second_engine_settings: Option<&'a crate::stages::verify::SecondEngineConfig>,
    #[serde(flatten)]
    counts: VerifyCounts,
    files: Vec<Value>,
}

/// The earlier releases a run's release excludes (see
/// [`Release::earlier_releases`]); `[generate]` excludes their positions too.
pub(crate) fn earlier_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
    Release::earlier_releases(ctx)
}

/// Every finished release under the output folder but this run's, each
/// checked against its manifest: what a release drawn now excludes. Read
/// while the output folder's lock is held, so no release is half written.
pub(crate) fn finished_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
    let own = ctx.stage_dir(StageName::Release);
    let releases = Release::releases_found(ctx, &own)?;
    for release in &releases {
        crate::stages::release::card::check_release_files(release)?;
    }
    Ok(releases)
}

/// What a release records of the run that made it: the run's input files
/// (named as the config names them, relative to its folder), the settings
/// of the stages that made its puzzles, and (at the draw) the engines.
struct Provenance {
    /// `(config key, file)`.
    files: Vec<(&'static str, PathBuf)>,
    /// The sections of the stages that ran (`None`: the stage did not).
    selfplay: Option<SelfplayConfig>,
    mine: Option<MineConfig>,
    rate: Option<RateConfig>,
    verify: Option<VerifyConfig>,
}

impl Provenance {
    fn of(config: &PipelineConfig) -> Provenance {
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
        let seed = config.pipeline.seed;
        Provenance {
            files,
            selfplay: (listed(StageName::Selfplay) && !generate).then(|| SelfplayConfig {
                seed: config.selfplay_seed(),
                ..config.selfplay.clone()
            }),
            mine: runs(StageName::Mine).then(|| config.mine.clone()),
            rate: runs(StageName::Rate).then(|| RateConfig {
                seed,
                ..config.rate.clone()
            }),
            verify: runs(StageName::Verify).then(|| config.verify.clone()),
        }
    }

    /// The manifest's `sources`, `engine`, `second_engine` and `settings`.
    /// Files are named relative to the config's folder and identified by
    /// sha256, engines by `id name` and sha256 (never by where they are on
    /// this machine), so shards merged elsewhere record the same.
    fn record(&self, ctx: &RunContext) -> Result<RunProvenance> {
        let name = |path: &Path| {
            path.strip_prefix(&ctx.config_dir)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        let sha = |path: &Path| {
            crate::core::fileio::sha256_file(path)
                .map_err(|e| bad_input(format!("release provenance: {}: {e:#}", path.display())))
        };
        let sources = self
            .files
            .iter()
            .map(|(key, path)| {
                Ok(Source {
                    key: key.to_string(),
                    path: name(path),
                    sha256: sha(path)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = match &ctx.engine {
            Some(engine) => serde_json::to_value(engine_identity(&engine.spec, &engine.pool)?)?,
            None => Value::Null,
        };
        let second = match self.verify.as_ref().and_then(|v| v.second_engine.as_ref()) {
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
        };
        let mut settings = Settings::default();
        // Under `[generate]` each profile's own selfplay and mine settings
        // are in `generate.figures.settings`.
        if let Some(selfplay) = &self.selfplay {
            settings.selfplay = Some(json!(selfplay));
        }
        if let Some(mine) = &self.mine {
            settings.mine = Some(json!(mine));
        }
        if let Some(rate) = &self.rate {
            let mut value = json!(rate);
            if let Some(model) = &rate.model {
                value["model"] = json!({"path": name(model), "sha256": sha(model)?});
            }
            settings.rate = Some(value);
        }
        if let Some(verify) = &self.verify {
            let mut value = verify.recorded();
            if let Some(second) = &verify.second_engine {
                value["second_engine"]["path"] = json!(name(&second.path));
            }
            settings.verify = Some(value);
        }
        Ok(RunProvenance {
            sources,
            engine,
            second_engine: second,
            settings,
        })
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

    /// The earlier releases whose puzzles this release must not repeat:
    /// when it draws, those found under the output folder's lock
    /// ([`RunContext::excluded_releases`]); else, for a release already
    /// written, the ones its manifest records (it never learns of releases
    /// written after it); for a new one, every release under the output
    /// folder (other release names). Each is first checked against its
    /// manifest.
    pub(crate) fn earlier_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
        if let Some(drawn_against) = &ctx.excluded_releases {
            return Ok(drawn_against.clone());
        }
        let own = ctx.stage_dir(StageName::Release);
        let releases = match recorded_exclusions(&own)? {
            Some(recorded) => recorded,
            None => Self::releases_found(ctx, &own)?,
        };
        for release in &releases {
            crate::stages::release::card::check_release_files(release)?;
        }
        Ok(releases)
    }

    /// Every release under the output folder but this run's.
    fn releases_found(ctx: &RunContext, own: &Path) -> Result<Vec<PathBuf>> {
        let root = ctx
            .release_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let mut releases = crate::stages::release::find_releases(&root, own)?;
        let this_run = ctx.release_dir.canonicalize().ok();
        releases.retain(|r| {
            r.canonicalize()
                .ok()
                .zip(this_run.as_ref())
                .is_none_or(|(r, this)| !r.starts_with(this))
        });
        Ok(releases)
    }
}

/// The release folders a written release excluded, as its manifest records
/// them (its `exclusions.files`, relative to the release folder); `None`
/// when `release` holds no finished release.
fn recorded_exclusions(release: &Path) -> Result<Option<Vec<PathBuf>>> {
    let Some(manifest) = ReleaseManifest::load(release)? else {
        return Ok(None);
    };
    let mut folders: Vec<PathBuf> = Vec::new();
    for file in &manifest.exclusions.files {
        if let Some(folder) = lexically_normal(&release.join(&file.path)).parent()
            && !folders.iter().any(|f| f == folder)
        {
            folders.push(folder.to_path_buf());
        }
    }
    Ok(Some(folders))
}

/// `path` with `.` and `name/..` removed, so that a release named from
/// another's manifest (`out/b/release/../../a/release`) has the name it has
/// when found (`out/a/release`), and so the same fingerprint.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(normal.components().next_back(), Some(Component::Normal(_))) =>
            {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

impl Stage for Release {
    fn name(&self) -> StageName {
        StageName::Release
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!({"split": self.section, "seed": self.seed, "tier": ctx.tier})
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.pool(ctx);
        inputs.extend(self.verify_summary(ctx));
        inputs.extend(Self::generate_summary(ctx));
        for release in Self::earlier_releases(ctx)? {
            inputs.extend(crate::stages::release::card::split_files(&release));
        }
        Ok(inputs)
    }

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
            exclude: Self::earlier_releases(ctx)?
                .iter()
                .flat_map(|release| crate::stages::release::card::split_files(release))
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
        Ok(serde_json::to_value(summary)?)
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

    fn config_section(&self, _ctx: &RunContext) -> Value {
        json!(self.section)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(crate::stages::release::card::split_files(
            &ctx.stage_dir(StageName::Release),
        ))
    }

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
        Ok(serde_json::to_value(summary)?)
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

    fn config_section(&self, _ctx: &RunContext) -> Value {
        let section = crate::stages::eval::section_for_records(&self.section);
        json!({"eval": section, "seed": self.seed})
    }

    /// The release's splits, and the Maia nets the eval reads (the
    /// ladder's nine or the player's one) where they exist.
    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs =
            crate::stages::release::card::split_files(&ctx.stage_dir(StageName::Release));
        inputs.extend(crate::stages::eval::maia_inputs(&self.section));
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
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
        Ok(serde_json::to_value(summary)?)
    }
}

//! The stages `puzzleforge run` chains, each a thin adapter from its own
//! section of `pipeline.toml` to the stage's module.
//!
//! Data flows one way: sources -> ingest -> (selfplay -> mine -> rate ->
//! verify) -> release -> export -> eval. An adapter holds its typed section
//! (with the run's seeds and its paths already resolved) and nothing else
//! of the config, so a stage reads only its own settings and the committed
//! outputs of the stages before it. The self-play chain's stages run its
//! step types ([`crate::generate::chain`]: the work and the file names);
//! under `[generate]` the run
//! swaps them for their generated forms
//! ([`crate::pipeline::generated_adapters`]), which hold the games played
//! in batches.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::engine::pool::EnginePool;
pub(crate) use crate::generate::chain::output_name;
use crate::generate::chain::{MineStep, RateStep, SelfplayStep, Verdicts, VerifyStep};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::lock::lock_releases;
use crate::pipeline::manifest::{EnginePath, StageManifest, Standing, fingerprint};
use crate::pipeline::provenance::Provenance;
pub(crate) use crate::pipeline::releases::{earlier_releases, finished_releases};
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::{BeforeWork, Hold, RunContext, Stage, StageFolder};
use crate::pipeline::summary::{
    ExportsSummary, FormatSummary, InputSummary, InputsSummary, MineFileSummary, RateFileSummary,
    SourceSummary, SourcesSummary, StageSummary,
};
use crate::stages::StageName;
use crate::stages::eval::config::EvalConfig;
use crate::stages::export::{CheckedExport, ExportSection};
use crate::stages::ingest_games::IngestGamesConfig;
use crate::stages::ingest_puzzles::IngestPuzzlesConfig;
use crate::stages::mine::{HumanGamesDraw, HumanGamesInput, MineConfig};
use crate::stages::rate::RateConfig;
use crate::stages::release::cells::ReleaseConfig;
use crate::stages::selfplay::SelfplayConfig;
use crate::stages::verify::VerifyConfig;

/// The stages of `pipeline.stages`, in its order, each holding its own
/// section of `config` (loaded from `config_path`, which errors name) and
/// the seeds it draws with.
pub(crate) fn configured(
    config: &PipelineConfig,
    seeds: &RunSeeds,
    config_path: &Path,
) -> Result<Vec<Box<dyn Stage>>> {
    config
        .pipeline
        .stages
        .iter()
        .map(|&name| stage(name, config, seeds, config_path))
        .collect()
}

/// The stage `name`, handed its own section of `config`.
fn stage(
    name: StageName,
    config: &PipelineConfig,
    seeds: &RunSeeds,
    config_path: &Path,
) -> Result<Box<dyn Stage>> {
    let seed = seeds.run;
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
                seed: seeds.selfplay,
                ..config.selfplay.clone()
            },
        }),
        StageName::Mine => Box::new(Mine::of(config, seeds)?),
        StageName::Rate => Box::new(Rate::of(config, seeds)),
        StageName::Verify => Box::new(Verify::of(config)),
        StageName::Release => Box::new(Release {
            section: config.release.clone(),
            seed,
            verifies: config.pipeline.stages.contains(&StageName::Verify),
            drops_unverified: config.verify.policy == crate::stages::verify::Policy::Drop,
            generated: config.generate.enabled,
            provenance: Provenance::of(config, seeds),
            drawn_against: RefCell::new(None),
        }),
        StageName::Export => Box::new(Export {
            section: config.export.clone(),
            checked: config.export.checked(config_path)?,
        }),
        StageName::Eval => Box::new(Eval {
            section: config.eval.clone(),
            seed,
        }),
    })
}

/// The funnel of a generated release, beside its games.
pub(crate) const GENERATE_SUMMARY: &str = "generate.json";

/// Files with one of the given endings in a stage's committed folder,
/// sorted by name.
pub(crate) fn stage_files(ctx: &RunContext, stage: StageName, ending: &str) -> Vec<PathBuf> {
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
pub(crate) fn recorded(section: &impl Serialize) -> Result<Value> {
    Ok(serde_json::to_value(section)?)
}

/// A section with the run seed beside it (`ingest_puzzles`).
#[derive(Serialize)]
struct Seeded<'a, T> {
    filters: &'a T,
    seed: u64,
}

/// `release`'s config: `[release]`, the run seed and the tier drawn.
#[derive(Serialize)]
struct SplitWith<'a> {
    split: &'a ReleaseConfig,
    seed: u64,
    tier: Option<&'a str>,
    /// The stored work `run --keep-stored-work` kept, which the manifest
    /// records (absent when none was, as before).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    kept_work: &'a [crate::stages::release::manifest::KeptWork],
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

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&self.section)
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
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
        let output = SelfplayStep::OUTPUT;
        let step = SelfplayStep {
            section: &self.section,
        };
        let mut summary = step
            .run(&pool, &folder.scratch_path(output), numbers)?
            .record;
        summary.output = folder.committed_path(output);
        Ok(StageSummary::Selfplay(summary))
    }
}

/// `mine`: unique-best-move puzzles from the self-play games, from the
/// Lichess game candidates and from human games.
pub(crate) struct Mine {
    /// `[mine]`.
    section: MineConfig,
    /// `[human_games]` with games to mine, and its file.
    human_games: Option<HumanGamesInput>,
}

/// `[human_games]` when it mines games, drawn with `seed`; they need
/// `[sources] human_games`.
fn human_games_input(config: &PipelineConfig, seed: u64) -> Result<Option<HumanGamesInput>> {
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
        draw: HumanGamesDraw {
            section: section.clone(),
            seed,
        },
    }))
}

/// `mine`'s config with human games to mine: `[mine]`, `[human_games]`
/// and the seed that draws them (without, `[mine]` alone, as before).
#[derive(Serialize)]
struct MineWithHumanGames<'a, S> {
    #[serde(flatten)]
    mine: S,
    human_games: &'a HumanGamesDraw,
}

impl Mine {
    /// `[mine]`, and `[human_games]` when it mines games (drawn with the
    /// run seed).
    pub(crate) fn of(config: &PipelineConfig, seeds: &RunSeeds) -> Result<Mine> {
        Ok(Mine {
            section: config.mine.clone(),
            human_games: human_games_input(config, seeds.run)?,
        })
    }

    /// `[mine]` as the stage's fingerprint records it.
    pub(crate) fn section(&self) -> &MineConfig {
        &self.section
    }

    /// The chain's step, with `[mine]`.
    fn step(&self) -> MineStep<'_> {
        MineStep {
            section: &self.section,
        }
    }

    /// The stage's recorded config: `mine` (`[mine]`, or what the generated
    /// route records of it) with `[human_games]` beside it when it mines
    /// human games.
    pub(crate) fn with_human_games(&self, mine: Value) -> Result<Value> {
        match &self.human_games {
            Some(human_games) => recorded(&MineWithHumanGames {
                mine,
                human_games: &human_games.draw,
            }),
            None => Ok(mine),
        }
    }

    /// Mines the input file `input` into the stage folder; `sliced_here`:
    /// a shard mines its slice of it (the Lichess game candidates), else
    /// all of it.
    fn mine_input(
        &self,
        ctx: &RunContext,
        pool: &EnginePool,
        folder: &StageFolder,
        (input, sliced_here): (PathBuf, bool),
    ) -> Result<InputSummary<MineFileSummary>> {
        let output = output_name(&input, MineStep::OUTPUT_SUFFIX);
        let loaded = Self::load(ctx, &input, sliced_here)?;
        self.mine_into(pool, folder, &loaded, &output, input)
    }

    /// Mines what comes after the self-play games: the Lichess game
    /// candidates (a shard its slice of them), then the drawn human games.
    pub(crate) fn mine_candidates_and_human_games(
        &self,
        ctx: &RunContext,
        pool: &EnginePool,
        folder: &StageFolder,
    ) -> Result<Vec<InputSummary<MineFileSummary>>> {
        let mut files = Vec::new();
        for candidates in stage_files(ctx, StageName::IngestGames, ".candidates.csv") {
            files.push(self.mine_input(ctx, pool, folder, (candidates, true))?);
        }
        if let Some(human) = &self.human_games {
            files.push(self.mine_human_games(ctx, pool, folder, human)?);
        }
        Ok(files)
    }

    /// Mines the drawn human games into `human_games.puzzles.csv`.
    fn mine_human_games(
        &self,
        ctx: &RunContext,
        pool: &EnginePool,
        folder: &StageFolder,
        human: &HumanGamesInput,
    ) -> Result<InputSummary<MineFileSummary>> {
        let loaded = human.units(ctx.shard.as_ref())?;
        let output = MineStep::HUMAN_GAMES_OUTPUT;
        self.mine_into(pool, folder, &loaded, output, human.path.clone())
    }

    /// Mines `loaded` (read from `input`) into the stage folder's `output`,
    /// checkpointed; the file's summary names it where it will live.
    fn mine_into(
        &self,
        pool: &EnginePool,
        folder: &StageFolder,
        loaded: &crate::stages::mine::Loaded,
        output: &str,
        input: PathBuf,
    ) -> Result<InputSummary<MineFileSummary>> {
        let checkpoint = folder.checkpoint(output);
        let mut summary = self
            .step()
            .run(
                pool,
                loaded,
                &folder.scratch_path(output),
                Some(&checkpoint),
            )?
            .summary
            .record;
        summary.output = folder.committed_path(output);
        Ok(InputSummary {
            input,
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
            // Every shard ingests the same candidates; each mines its
            // slice of them.
            Some(shard) if sliced_here => load_input(input)?.slice(shard),
            _ => load_input(input)?,
        })
    }
}

impl Stage for Mine {
    fn name(&self) -> StageName {
        StageName::Mine
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        self.with_human_games(recorded(&self.section)?)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, StageName::Selfplay, ".pgn");
        inputs.extend(stage_files(ctx, StageName::IngestGames, ".candidates.csv"));
        inputs.extend(self.human_games.as_ref().map(|h| h.path.clone()));
        Ok(inputs)
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let pool = ctx.engine_pool(StageName::Mine)?;
        let mut files = Vec::new();
        // A shard's self-play games are sliced by its selfplay stage.
        for games in stage_files(ctx, StageName::Selfplay, ".pgn") {
            files.push(self.mine_input(ctx, &pool, folder, (games, false))?);
        }
        files.extend(self.mine_candidates_and_human_games(ctx, &pool, folder)?);
        Ok(StageSummary::Mine(InputsSummary::of(files)))
    }
}

/// `rate`: engine-estimated ratings for the mined puzzles, from the
/// committed (or a configured) model fitted on real Lichess puzzles.
pub(crate) struct Rate {
    /// `[rate]`, with the run seed and the model's path resolved.
    section: RateConfig,
}

impl Rate {
    /// `[rate]` with the run seed.
    pub(crate) fn of(config: &PipelineConfig, seeds: &RunSeeds) -> Rate {
        Rate {
            section: RateConfig {
                seed: seeds.run,
                ..config.rate.clone()
            },
        }
    }

    /// `[rate]` as the stage's fingerprint records it.
    pub(crate) fn section(&self) -> &RateConfig {
        &self.section
    }

    /// The mine stage's puzzle files, which the stage rates.
    pub(crate) fn puzzle_files(ctx: &RunContext) -> Vec<PathBuf> {
        stage_files(ctx, StageName::Mine, MineStep::OUTPUT_SUFFIX)
    }

    /// Rates the puzzle file `input` into the stage folder.
    pub(crate) fn rate_input(
        &self,
        input: PathBuf,
        folder: &StageFolder,
    ) -> Result<InputSummary<RateFileSummary>> {
        let output = output_name(&input, RateStep::OUTPUT_SUFFIX);
        let step = RateStep {
            section: &self.section,
        };
        let mut summary = step.run(&input, &folder.scratch_path(&output))?.record;
        summary.output = folder.committed_path(&output);
        Ok(InputSummary {
            input,
            summary: RateFileSummary::Rated(summary),
        })
    }
}

impl Stage for Rate {
    fn name(&self) -> StageName {
        StageName::Rate
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&self.section)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = Self::puzzle_files(ctx);
        inputs.extend(self.section.model.clone());
        Ok(inputs)
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let files = Self::puzzle_files(ctx)
            .into_iter()
            .map(|input| self.rate_input(input, folder))
            .collect::<Result<_>>()?;
        Ok(StageSummary::Rate(InputsSummary::of(files)))
    }
}

/// `verify`: every rated mined puzzle searched again with more nodes, and by
/// the second engine when `[verify.second_engine]` is set; the puzzles get
/// their verdict columns (which the release reads) and the figures go into
/// the release manifest.
pub(crate) struct Verify {
    /// `[verify]`.
    section: VerifyConfig,
}

impl Verify {
    /// `[verify]`.
    pub(crate) fn of(config: &PipelineConfig) -> Verify {
        Verify {
            section: config.verify.clone(),
        }
    }

    /// `[verify]` as the stage's fingerprint records it.
    pub(crate) fn section(&self) -> &VerifyConfig {
        &self.section
    }

    /// The chain's step, with `[verify]`.
    pub(crate) fn step(&self) -> VerifyStep<'_> {
        VerifyStep {
            section: &self.section,
        }
    }

    /// The puzzles to verify: the rated mined puzzles (what the release
    /// draws from), else the mined ones when the pipeline does not rate.
    pub(crate) fn puzzle_files(ctx: &RunContext) -> Vec<PathBuf> {
        // The rated files keep the mined files' names.
        let rated = stage_files(ctx, StageName::Rate, MineStep::OUTPUT_SUFFIX);
        if rated.is_empty() {
            stage_files(ctx, StageName::Mine, MineStep::OUTPUT_SUFFIX)
        } else {
            rated
        }
    }

    /// Verifies each puzzle file into the stage folder, its verdicts given
    /// by `verdicts`, and writes the stage's totals.
    pub(crate) fn verify_files(
        &self,
        ctx: &RunContext,
        folder: &StageFolder,
        verdicts: &Verdicts,
    ) -> Result<StageSummary> {
        let pool = ctx.engine_pool(StageName::Verify)?;
        let totals =
            self.step()
                .run_files(&pool, &Self::puzzle_files(ctx), &folder.scratch, verdicts)?;
        Ok(StageSummary::Verify(totals))
    }
}

impl Stage for Verify {
    fn name(&self) -> StageName {
        StageName::Verify
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        Ok(self.section.recorded()?)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(Self::puzzle_files(ctx))
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let step = self.step();
        self.verify_files(ctx, folder, &|files, pool, second| {
            step.run(pool, second, files)
        })
    }
}

/// `release`: the stratified, game-grouped train/test split.
struct Release {
    /// `[release]`, as written (the run seed is recorded beside it).
    section: ReleaseConfig,
    seed: u64,
    /// Whether `pipeline.stages` verifies the mined puzzles (the release
    /// then draws the verified files and embeds the verification figures).
    verifies: bool,
    /// `[verify] policy = "drop"`: puzzles that fail a check stay out.
    drops_unverified: bool,
    /// Whether `[generate]` made the self-play games: the release then
    /// reads generation's funnel beside them.
    generated: bool,
    provenance: Provenance,
    /// The finished releases it excludes when it draws: every one under the
    /// output folder, found by its [`Stage::before_work`] while it holds
    /// the output folder's lock. `None` before (and for a release kept as
    /// it is, which excludes what its manifest records).
    drawn_against: RefCell<Option<Vec<PathBuf>>>,
}

impl Release {
    /// The earlier releases it excludes: those found when it drew, else
    /// [`earlier_releases`].
    fn excluded(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        match self.drawn_against.borrow().as_ref() {
            Some(found) => Ok(found.clone()),
            None => earlier_releases(ctx),
        }
    }

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
    fn generate_summary(&self, ctx: &RunContext) -> Option<PathBuf> {
        let path = ctx.stage_dir(StageName::Selfplay).join(GENERATE_SUMMARY);
        (self.generated && path.is_file()).then_some(path)
    }

    /// The `verify` stage's totals, when the pipeline verifies.
    fn verify_summary(&self, ctx: &RunContext) -> Option<PathBuf> {
        let path = ctx.stage_dir(StageName::Verify).join(VerifyStep::SUMMARY);
        (self.verifies && path.is_file()).then_some(path)
    }
}

impl Stage for Release {
    fn name(&self) -> StageName {
        StageName::Release
    }

    /// A release draws while it holds the output folder's lock, excluding
    /// every release finished before its turn (a rewrite that would come
    /// out the same, against what its manifest records, is kept).
    fn before_work(&self, ctx: &RunContext, force: bool) -> Result<BeforeWork> {
        let lock = lock_releases(&ctx.release_dir)?;
        self.drawn_against.replace(None);
        let dir = ctx.stage_dir(StageName::Release);
        if let Some(previous) = StageManifest::previous(&dir).filter(|_| !force) {
            let now = fingerprint(self, ctx)?;
            if matches!(
                previous.standing(&dir, || Ok(now), EnginePath::Compared)?,
                Standing::Current
            ) {
                return Ok(BeforeWork::Stands(previous.counts));
            }
        }
        self.drawn_against.replace(Some(finished_releases(ctx)?));
        Ok(BeforeWork::Weigh(Hold::lock(lock)))
    }

    /// Still under the output folder's lock: the manifest's sha256 goes
    /// into the output folder's registry of releases.
    fn after_commit(&self, ctx: &RunContext, committed: &Path) -> Result<()> {
        crate::stages::release::folder::ReleaseFolder::at(committed).register_in(
            crate::stages::release::folder::holding_folder(&ctx.release_dir),
        )
    }

    /// The release's record says how the run was asked for, so that
    /// `reproduce` can ask again.
    fn records_invocation(&self) -> bool {
        true
    }

    fn config_section(&self, ctx: &RunContext) -> Result<Value> {
        recorded(&SplitWith {
            split: &self.section,
            seed: self.seed,
            tier: ctx.tier.as_deref(),
            kept_work: &ctx.kept_work,
        })
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.pool(ctx);
        inputs.extend(self.verify_summary(ctx));
        inputs.extend(self.generate_summary(ctx));
        for release in self.excluded(ctx)? {
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
        let args = crate::stages::release::ReleaseArgs {
            pool,
            output: folder.scratch.clone(),
            config: None,
            tier: ctx.tier.clone(),
            overrides: crate::stages::release::ReleaseOverrides::default(),
            strict: false,
            exclude: self
                .excluded(ctx)?
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
            generate: self.generate_summary(ctx),
            games: stage_files(ctx, StageName::Selfplay, ".pgn"),
            provenance: Some(self.provenance.record(ctx)?),
        };
        let config = ReleaseConfig {
            seed: self.seed,
            ..self.section.clone()
        };
        let mut summary = crate::stages::release::run_release_with(&args, config)?.record;
        summary.output = folder.committed_folder();
        Ok(StageSummary::Release(summary))
    }
}

/// `export`: the release in the configured exchange formats.
struct Export {
    /// `[export]`, as written.
    section: ExportSection,
    /// `[export]` checked.
    checked: CheckedExport,
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
        for (name, format) in &self.checked.formats {
            let args = crate::stages::export::ExportArgs {
                release: ctx.stage_dir(StageName::Release),
                format: *format,
                output: folder.scratch_path(name),
                split: self.checked.split,
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

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let engine = ctx.engine()?;
        let args = crate::stages::eval::EvalArgs {
            set: ctx.stage_dir(StageName::Release),
            overrides: crate::stages::eval::EvalOverrides::default(),
            prompt: None,
            output: folder.scratch.clone(),
            split: crate::stages::export::Split::Test,
            limit: None,
            config: None,
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
            let output_dir = crate::stages::release::folder::holding_folder(&ctx.release_dir);
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

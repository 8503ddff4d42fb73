//! The self-play chain's stages under `[generate]`: `selfplay`, `mine`,
//! `rate` and `verify` holding the games generation played in batches
//! ([`Generated`]) and writing them, their puzzles and their verdicts from
//! the batch store into the release. Each wraps its plain adapter
//! ([`crate::pipeline::adapters`]) for what is not generated (the Lichess
//! game candidates and the human games are mined, rated and verified as
//! the plain stages do) and records the generation beside its own section.
//! Apart because the run picks one route once, where it assembles its
//! stages ([`on_generated_route`]): no stage asks which route it is on.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::core::fileio::write_atomic;
use crate::generate::chain::{MineStep, RateStep, SelfplayStep};
use crate::generate::{Generated, Part};
use crate::pipeline::adapters::{
    GENERATE_SUMMARY, Mine, Rate, Verify, output_name, recorded, stage_files,
};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::{RunContext, Stage, StageFolder};
use crate::pipeline::summary::{
    GeneratedGamesSummary, InputSummary, InputsSummary, MineFileSummary, RateFileSummary,
    StageSummary,
};
use crate::stages::StageName;
use crate::stages::mine::MineConfig;
use crate::stages::rate::RateConfig;
use crate::stages::verify::{VerifyCounts, VerifyFiles};

/// `stages` with each stage of the self-play chain
/// ([`crate::generate::chain::is_step`]) in its generated form, holding
/// `generated`; the other stages as they are.
pub(crate) fn on_generated_route(
    stages: Vec<Box<dyn Stage>>,
    config: &PipelineConfig,
    seeds: &RunSeeds,
    generated: &Rc<Generated>,
) -> Result<Vec<Box<dyn Stage>>> {
    stages
        .into_iter()
        .map(|stage| {
            let generated = Rc::clone(generated);
            Ok::<Box<dyn Stage>, anyhow::Error>(match stage.name() {
                StageName::Selfplay => Box::new(GeneratedSelfplay { generated }),
                StageName::Mine => Box::new(GeneratedMine {
                    mine: Mine::of(config, seeds)?,
                    generated,
                }),
                StageName::Rate => Box::new(GeneratedRate {
                    rate: Rate::of(config, seeds),
                    generated,
                }),
                StageName::Verify => Box::new(GeneratedVerify {
                    verify: Verify::of(config),
                    generated,
                }),
                _ => stage,
            })
        })
        .collect()
}

/// Whether a mine/rate file holds the self-play games' puzzles (the others
/// come from Lichess game candidates and human games).
fn is_selfplay_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == "games.puzzles.csv")
}

/// The wall seconds `generated`'s batches spent on `stage`'s work.
fn seconds_of(generated: &Generated, stage: StageName) -> f64 {
    generated
        .seconds_by_stage
        .get(stage.as_str())
        .copied()
        .unwrap_or(0.0)
}

/// `selfplay`'s config: the settings the games were played with
/// (generation's profile, not `[selfplay]`'s values) and the generation's
/// fingerprint.
#[derive(Serialize)]
struct PlayedSelfplay<G> {
    selfplay: Value,
    generate: G,
}

/// `mine`'s config: `[mine]` (which mines the Lichess game candidates) and
/// the settings the generated games were mined with.
#[derive(Serialize)]
struct MinedWith<'a, G> {
    mine: &'a MineConfig,
    generated_with: Value,
    generate: G,
}

/// `rate`'s config.
#[derive(Serialize)]
struct RatedWith<'a, G> {
    rate: &'a RateConfig,
    generate: G,
}

/// `verify`'s config.
#[derive(Serialize)]
struct VerifiedWith<G> {
    verify: Value,
    generate: G,
}

/// `selfplay`: the games played into the batch store, up to the stopping
/// game, and the generation's funnel beside them.
struct GeneratedSelfplay {
    generated: Rc<Generated>,
}

impl Stage for GeneratedSelfplay {
    fn name(&self) -> StageName {
        StageName::Selfplay
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&PlayedSelfplay {
            selfplay: self.generated.played_settings("selfplay"),
            generate: self.generated.fingerprint(),
        })
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(self.generated.inputs(None))
    }

    fn seconds_spent_before(&self) -> f64 {
        seconds_of(&self.generated, self.name())
    }

    fn work(&self, _ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let generated = &self.generated;
        let output = SelfplayStep::OUTPUT;
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
        Ok(StageSummary::GeneratedGames(Box::new(summary)))
    }
}

/// `mine`: the generated games' puzzles as their batches mined them, then
/// the Lichess game candidates and the human games mined as the plain
/// stage mines them.
struct GeneratedMine {
    mine: Mine,
    generated: Rc<Generated>,
}

impl Stage for GeneratedMine {
    fn name(&self) -> StageName {
        StageName::Mine
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        // `[mine]` mines the Lichess game candidates; the generated games
        // were mined with generation's profile.
        self.mine.with_human_games(recorded(&MinedWith {
            mine: self.mine.section(),
            generated_with: self.generated.played_settings("mine"),
            generate: self.generated.fingerprint(),
        })?)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.mine.inputs(ctx)?;
        inputs.extend(self.generated.inputs(Some(Part::Mined)));
        Ok(inputs)
    }

    fn seconds_spent_before(&self) -> f64 {
        seconds_of(&self.generated, self.name())
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let pool = ctx.engine_pool(StageName::Mine)?;
        let mut files = Vec::new();
        for input in stage_files(ctx, StageName::Selfplay, ".pgn") {
            let output = output_name(&input, MineStep::OUTPUT_SUFFIX);
            let columns = crate::stages::mine::MINE_COLUMNS.map(|c| c.to_string());
            let written = self.generated.write_puzzles(
                Part::Mined,
                &folder.scratch_path(&output),
                Some(columns.to_vec()),
            )?;
            files.push(InputSummary {
                input,
                summary: MineFileSummary::FromStore {
                    puzzles: written,
                    from_store: self.generated.stores_display(),
                    output: folder.committed_path(&output),
                },
            });
        }
        files.extend(
            self.mine
                .mine_candidates_and_human_games(ctx, &pool, folder)?,
        );
        Ok(StageSummary::Mine(InputsSummary::of(files)))
    }
}

/// `rate`: the generated games' puzzles as their batches rated them; the
/// other mined files rated as the plain stage rates them.
struct GeneratedRate {
    rate: Rate,
    generated: Rc<Generated>,
}

impl Stage for GeneratedRate {
    fn name(&self) -> StageName {
        StageName::Rate
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&RatedWith {
            rate: self.rate.section(),
            generate: self.generated.fingerprint(),
        })
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.rate.inputs(ctx)?;
        inputs.extend(self.generated.inputs(Some(Part::Rated)));
        Ok(inputs)
    }

    fn seconds_spent_before(&self) -> f64 {
        seconds_of(&self.generated, self.name())
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        let mut files = Vec::new();
        for input in Rate::puzzle_files(ctx) {
            if !is_selfplay_file(&input) {
                files.push(self.rate.rate_input(input, folder)?);
                continue;
            }
            let output = output_name(&input, RateStep::OUTPUT_SUFFIX);
            let written =
                self.generated
                    .write_puzzles(Part::Rated, &folder.scratch_path(&output), None)?;
            files.push(InputSummary {
                input,
                summary: RateFileSummary::FromStore {
                    written,
                    from_store: self.generated.stores_display(),
                    output: folder.committed_path(&output),
                },
            });
        }
        Ok(StageSummary::Rate(InputsSummary::of(files)))
    }
}

/// `verify`: the generated games' puzzles with the verdicts their batches
/// gave; the other rated files verified as the plain stage verifies them.
struct GeneratedVerify {
    verify: Verify,
    generated: Rc<Generated>,
}

impl GeneratedVerify {
    /// The verdicts of the generated puzzles, given when their batches
    /// were played: the verified rows, the report and its summary.
    fn stored_verdicts(
        &self,
        files: &VerifyFiles,
    ) -> Result<(crate::core::summary::Summary, VerifyCounts)> {
        let verdicts = self.generated.verdicts()?;
        let mut text = String::new();
        for verdict in &verdicts {
            text.push_str(&serde_json::to_string(verdict)?);
            text.push('\n');
        }
        write_atomic(files.report, text.as_bytes())?;
        if let Some(path) = files.puzzles_out {
            self.generated.write_puzzles(Part::Verified, path, None)?;
        }
        crate::stages::verify::summarize(self.verify.section(), &verdicts, &[], files.report)
    }
}

impl Stage for GeneratedVerify {
    fn name(&self) -> StageName {
        StageName::Verify
    }

    fn config_section(&self, _ctx: &RunContext) -> Result<Value> {
        recorded(&VerifiedWith {
            verify: self.verify.section().recorded()?,
            generate: self.generated.fingerprint(),
        })
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = self.verify.inputs(ctx)?;
        inputs.extend(self.generated.inputs(Some(Part::Verified)));
        Ok(inputs)
    }

    fn seconds_spent_before(&self) -> f64 {
        seconds_of(&self.generated, self.name())
    }

    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary> {
        self.verify
            .verify_files(ctx, folder, &|files, pool, second| {
                if is_selfplay_file(files.input) {
                    self.stored_verdicts(files)
                } else {
                    self.verify.step().run(pool, second, files)
                }
            })
    }
}

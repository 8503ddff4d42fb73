//! The self-play chain: games played, mined, rated and verified
//! (`selfplay` -> `mine` -> `rate` -> `verify`). Its order is
//! [`StageName::ALL`]'s ([`steps`]). Each step is one type here, holding
//! its section: what it reads and writes, its work, and how the shards'
//! outputs of the step combine into a single run's ([`SelfplayStep`],
//! [`MineStep`], [`RateStep`], [`VerifyStep`]). Every route runs these
//! types: the plain stages for their files
//! ([`crate::pipeline::adapters`]), the stages under `[generate]`
//! ([`crate::pipeline::generated_adapters`]), generation for each batch of
//! games ([`crate::generate`]'s batch loop) and `merge` for the shards
//! ([`crate::pipeline::merge`]). Apart so that the routes run one chain
//! and cannot drift.

use anyhow::{Context, Result};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use std::collections::HashSet;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, read_puzzles};
use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::stages::StageName;
use crate::stages::mine::{CheckpointAt, Loaded, MINE_COLUMNS, MineConfig, MinedUnits};
use crate::stages::rate::{RateConfig, RateSummary};
use crate::stages::selfplay::{SelfplayConfig, SelfplaySummary};
use crate::stages::verify::{
    VerifyConfig, VerifyCounts, VerifyFileSummary, VerifyFiles, VerifyTotals,
};

/// Whether `stage` is a step of the chain ([`StageName::properties`]).
pub(crate) fn is_step(stage: StageName) -> bool {
    stage.properties().chain_step
}

/// The chain's steps, in pipeline order.
pub(crate) fn steps() -> impl Iterator<Item = StageName> {
    StageName::ALL.into_iter().filter(|&stage| is_step(stage))
}

/// The files of one batch of games as the chain's steps write them, in
/// the batch's folder (named by the steps' `IN_BATCH` names).
pub(crate) struct BatchStepFiles {
    pub(crate) games: PathBuf,
    pub(crate) mined: PathBuf,
    pub(crate) rated: PathBuf,
    pub(crate) verify_report: PathBuf,
    pub(crate) verified: PathBuf,
}

impl BatchStepFiles {
    pub(crate) fn in_folder(folder: &Path) -> BatchStepFiles {
        BatchStepFiles {
            games: folder.join(SelfplayStep::IN_BATCH),
            mined: folder.join(MineStep::IN_BATCH),
            rated: folder.join(RateStep::IN_BATCH),
            verify_report: folder.join(VerifyStep::REPORT_IN_BATCH),
            verified: folder.join(VerifyStep::IN_BATCH),
        }
    }
}

/// `selfplay`: games played from the seed, each by its number. Reads
/// nothing; writes a PGN of the games. Shards play slices of the game
/// numbers, so their files concatenated in shard order are the single
/// run's ([`SelfplayStep::merge_shards`]).
pub(crate) struct SelfplayStep<'a> {
    /// `[selfplay]` (or generation's profile of it), with its seed.
    pub(crate) section: &'a SelfplayConfig,
}

impl SelfplayStep<'_> {
    pub(crate) const STAGE: StageName = StageName::Selfplay;
    /// The games, in the stage's folder.
    pub(crate) const OUTPUT: &'static str = "games.pgn";
    /// The games, in a batch's folder.
    pub(crate) const IN_BATCH: &'static str = "games.pgn";

    /// Games `numbers` played into `output` (a game's bytes depend only on
    /// the settings, the seed and its number).
    pub(crate) fn run(
        &self,
        pool: &EnginePool,
        output: &Path,
        numbers: RangeInclusive<u64>,
    ) -> Result<Report<SelfplaySummary>> {
        crate::stages::selfplay::run_selfplay_range(self.section, pool, output, numbers)
    }

    /// The merge rule: the shards' game files (`shard_outputs`, in shard
    /// order) concatenated into `target`; gives the bytes written.
    pub(crate) fn merge_shards(shard_outputs: &[PathBuf], target: &Path) -> Result<usize> {
        let mut bytes = Vec::new();
        for path in shard_outputs {
            bytes.extend(
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            );
        }
        crate::core::fileio::write_atomic(target, &bytes)?;
        Ok(bytes.len())
    }
}

/// The file name a source gets inside a stage folder: its name without
/// compression and format suffixes, plus `suffix`.
pub(crate) fn output_name(source: &Path, suffix: &str) -> String {
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

/// Identifies a puzzle row within one shard's file (mine keeps no position
/// twice within a file, so no two rows share it): its id, FEN and moves.
pub(crate) type RowKey = (String, Fen, Vec<UciMove>);

fn row_key(puzzle: &Puzzle) -> RowKey {
    (puzzle.id.clone(), puzzle.fen.clone(), puzzle.moves.clone())
}

/// Per shard (in shard order), the rows of one mined file the mine merge
/// kept; the rate merge keeps the same puzzles.
pub(crate) type KeptByShard = Vec<HashSet<RowKey>>;

/// What the mine merge made of one file's shard outputs.
pub(crate) struct MergedMined {
    /// The shards' rows, before repeated positions were dropped.
    pub(crate) shard_rows: usize,
    /// The puzzles written.
    pub(crate) puzzles: u64,
    pub(crate) kept: KeptByShard,
}

/// `mine`: unique-best-move puzzles from loaded games or candidates.
/// Reads games (a PGN) or candidates; writes a puzzle file. Mine caps each
/// game's puzzles first and drops repeated positions second, so the shards'
/// files concatenated and deduplicated again are the single run's
/// ([`MineStep::merge_shards`]).
pub(crate) struct MineStep<'a> {
    /// `[mine]` (or generation's profile of it).
    pub(crate) section: &'a MineConfig,
}

impl MineStep<'_> {
    pub(crate) const STAGE: StageName = StageName::Mine;
    /// The stage's output for an input, by the input's name.
    pub(crate) const OUTPUT_SUFFIX: &'static str = ".puzzles.csv";
    /// The puzzles mined from the drawn human games, in the stage's folder.
    pub(crate) const HUMAN_GAMES_OUTPUT: &'static str = "human_games.puzzles.csv";
    /// The mined puzzles, in a batch's folder.
    pub(crate) const IN_BATCH: &'static str = "mined.csv";

    /// The puzzles of `loaded` (games or candidates) into `output`, with
    /// each unit's funnel; each finished game recorded in `checkpoint`
    /// when given, and a killed run's games taken from it (the pipeline's
    /// stage; a batch of generation is redone whole, its games few).
    pub(crate) fn run(
        &self,
        pool: &EnginePool,
        loaded: &Loaded,
        output: &Path,
        checkpoint: Option<&CheckpointAt>,
    ) -> Result<MinedUnits> {
        crate::stages::mine::mine_loaded_per_unit(self.section, pool, loaded, output, checkpoint)
    }

    /// The merge rule: the shards' mined files (`shard_outputs`, in shard
    /// order) concatenated into `target`, repeated positions dropped as a
    /// single run drops them ([`crate::stages::mine::dedup_puzzles`]);
    /// records which rows each shard kept.
    pub(crate) fn merge_shards(shard_outputs: &[PathBuf], target: &Path) -> Result<MergedMined> {
        let mut all = Vec::new();
        let mut owner = Vec::new();
        for (at, path) in shard_outputs.iter().enumerate() {
            let rows = read_puzzles(path)?;
            owner.extend(std::iter::repeat_n(at, rows.len()));
            all.extend(rows);
        }
        let keep = crate::stages::mine::dedup_puzzles(&all);
        let mut kept = vec![HashSet::new(); shard_outputs.len()];
        let columns: Vec<String> = MINE_COLUMNS.iter().map(|c| c.to_string()).collect();
        let mut writer = PuzzleWriter::create(target, &columns)?;
        let mut written = 0u64;
        for ((puzzle, keep), at) in all.iter().zip(&keep).zip(&owner) {
            if *keep {
                writer.write(puzzle)?;
                kept[*at].insert(row_key(puzzle));
                written += 1;
            }
        }
        writer.finish()?;
        Ok(MergedMined {
            shard_rows: all.len(),
            puzzles: written,
            kept,
        })
    }
}

/// `rate`: the mined puzzles rated with the configured model. Reads a
/// puzzle file; writes it rated. A puzzle's random draws are keyed by its
/// id, not its row, so the merge keeps the shards' rated rows of the
/// puzzles the mine merge kept ([`RateStep::merge_shards`]).
pub(crate) struct RateStep<'a> {
    /// `[rate]` (or generation's profile of it), with its seed.
    pub(crate) section: &'a RateConfig,
}

impl RateStep<'_> {
    pub(crate) const STAGE: StageName = StageName::Rate;
    /// The stage's output for an input, by the input's name.
    pub(crate) const OUTPUT_SUFFIX: &'static str = ".csv";
    /// The rated puzzles, in a batch's folder.
    pub(crate) const IN_BATCH: &'static str = "rated.csv";

    /// The mined puzzles of `input` rated into `output`. The rows not rated
    /// are counted in the summary, not listed: a rejects file would be one
    /// more output of every stage folder and batch.
    pub(crate) fn run(&self, input: &Path, output: &Path) -> Result<Report<RateSummary>> {
        crate::stages::rate::run_rate_with(&crate::stages::rate::RateJob {
            input,
            output,
            rejects: None,
            calibrate: &[],
            save_model: None,
            features: Default::default(),
            learning_curve: &[],
            config: self.section,
        })
    }

    /// The merge rule: the rated rows of the shards' files (`shard_outputs`,
    /// in shard order) whose puzzles the mine merge kept (`kept`, the same
    /// order), into `target`; gives the puzzles written.
    pub(crate) fn merge_shards(
        shard_outputs: &[PathBuf],
        kept: &KeptByShard,
        target: &Path,
    ) -> Result<usize> {
        let mut merged = Vec::new();
        for (path, kept_rows) in shard_outputs.iter().zip(kept) {
            let rows = read_puzzles(path)?;
            merged.extend(rows.into_iter().filter(|p| kept_rows.contains(&row_key(p))));
        }
        let mut writer = PuzzleWriter::create(target, &extra_columns_of(&merged))?;
        for puzzle in &merged {
            writer.write(puzzle)?;
        }
        writer.finish()?;
        Ok(merged.len())
    }
}

/// `verify`: every puzzle searched again (and by the second engine when
/// `[verify.second_engine]` is set). Reads a rated (or mined) puzzle file;
/// writes a report of verdicts and the puzzles with their verdict columns.
/// Its merge rule: none; shards leave it to `merge`, which verifies the
/// merged puzzles once (under `[generate]`, it writes the verdicts the
/// batches gave and verifies the other mined puzzles), as `docs/cluster.md`
/// says.
pub(crate) struct VerifyStep<'a> {
    /// `[verify]` (or generation's profile of it).
    pub(crate) section: &'a VerifyConfig,
}

impl VerifyStep<'_> {
    pub(crate) const STAGE: StageName = StageName::Verify;
    /// The stage's report for an input, by the input's name.
    pub(crate) const REPORT_SUFFIX: &'static str = ".verify.jsonl";
    /// The stage's verified puzzles for an input, by the input's name.
    pub(crate) const OUTPUT_SUFFIX: &'static str = ".csv";
    /// The report, in a batch's folder.
    pub(crate) const REPORT_IN_BATCH: &'static str = "verify.jsonl";
    /// The verified puzzles, in a batch's folder.
    pub(crate) const IN_BATCH: &'static str = "verified.csv";

    /// The stage's totals over its files, which the release manifest
    /// records, in the stage's folder.
    pub(crate) const SUMMARY: &'static str = "verify.json";

    /// The second engine's pool beside `pool`, when
    /// `[verify.second_engine]` is set.
    pub(crate) fn second_pool(&self, pool: &EnginePool) -> Result<Option<EnginePool>> {
        self.section
            .second_engine
            .as_ref()
            .map(|second| second.pool(pool))
            .transpose()
    }

    /// Every puzzle of `files.input` searched again (and by the second
    /// engine's pool `second`); the summary and its counts.
    pub(crate) fn run(
        &self,
        pool: &EnginePool,
        second: Option<&EnginePool>,
        files: &VerifyFiles,
    ) -> Result<(Summary, VerifyCounts)> {
        crate::stages::verify::run_verify_with(self.section, pool, second, files)
    }

    /// Verifies each of `inputs` into the stage's folder `scratch` (its
    /// report and its puzzles, by the input's name), one file's verdicts
    /// given by `verdicts` (the plain stage's: [`VerifyStep::run`]), and
    /// writes the totals ([`VerifyStep::SUMMARY`]).
    pub(crate) fn run_files(
        &self,
        pool: &EnginePool,
        inputs: &[PathBuf],
        scratch: &Path,
        verdicts: &Verdicts,
    ) -> Result<VerifyTotals> {
        let second = self.second_pool(pool)?;
        let mut files = Vec::new();
        let mut counts = VerifyCounts::default();
        for input in inputs {
            let report = output_name(input, Self::REPORT_SUFFIX);
            let puzzles = output_name(input, Self::OUTPUT_SUFFIX);
            let files_here = VerifyFiles {
                input,
                report: &scratch.join(&report),
                puzzles_out: Some(&scratch.join(&puzzles)),
            };
            let (summary, file_counts) = verdicts(&files_here, pool, second.as_ref())?;
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
            factor: self.section.factor,
            policy: self.section.policy,
            second_engine: second.as_ref().map(|p| p.engine_id().to_string()),
            second_engine_settings: self.section.second_engine.clone(),
            counts,
            files,
        };
        crate::core::fileio::write_atomic(
            &scratch.join(Self::SUMMARY),
            format!("{}\n", serde_json::to_string_pretty(&totals)?).as_bytes(),
        )?;
        Ok(totals)
    }
}

/// How the verify step gets one puzzle file's verdicts: from the file, its
/// pool and the second engine's pool.
pub(crate) type Verdicts<'a> =
    dyn Fn(&VerifyFiles, &EnginePool, Option<&EnginePool>) -> Result<(Summary, VerifyCounts)> + 'a;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_runs_in_pipeline_order() {
        assert_eq!(StageName::list(steps()), "selfplay, mine, rate, verify");
    }

    #[test]
    fn each_step_is_its_stage() {
        let stages = [
            SelfplayStep::STAGE,
            MineStep::STAGE,
            RateStep::STAGE,
            VerifyStep::STAGE,
        ];
        assert!(stages.into_iter().eq(steps()));
    }
}

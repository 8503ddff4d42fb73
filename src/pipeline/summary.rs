//! What each stage reports when it is done: the summary `stage.json`
//! records under `counts` and `run` prints, one typed record per stage
//! ([`StageSummary`]), made of the stage modules' own summaries.

use serde::Serialize;
use std::path::PathBuf;

/// A stage's summary, by stage: written as the stage's own record (no tag:
/// `stage.json` names the stage beside it).
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum StageSummary {
    IngestPuzzles(SourcesSummary<crate::stages::ingest_puzzles::IngestStats>),
    IngestGames(SourcesSummary<crate::stages::ingest_games::GamesSummary>),
    /// Games played now.
    Selfplay(crate::stages::selfplay::SelfplaySummary),
    /// Games written from `[generate]`'s batch store.
    GeneratedGames(Box<GeneratedGamesSummary>),
    Mine(InputsSummary<MineFileSummary>),
    Rate(InputsSummary<RateFileSummary>),
    Verify(crate::stages::verify::VerifyTotals),
    Release(crate::stages::release::ReleaseSummary),
    Export(ExportsSummary),
    Eval(crate::stages::eval::report::EvalSummary),
}

/// The summary of a stage that reads sources (`ingest_puzzles`,
/// `ingest_games`): each source's own summary.
#[derive(Serialize)]
pub(crate) struct SourcesSummary<S> {
    pub(crate) sources: usize,
    pub(crate) files: Vec<SourceSummary<S>>,
}

impl<S> SourcesSummary<S> {
    pub(crate) fn of(files: Vec<SourceSummary<S>>) -> Self {
        Self {
            sources: files.len(),
            files,
        }
    }
}

/// One source and its summary.
#[derive(Serialize)]
pub(crate) struct SourceSummary<S> {
    pub(crate) source: PathBuf,
    pub(crate) summary: S,
}

/// The summary of a stage that reads the files of the stage before it
/// (`mine`, `rate`): each input's own summary.
#[derive(Serialize)]
pub(crate) struct InputsSummary<S> {
    pub(crate) inputs: usize,
    pub(crate) files: Vec<InputSummary<S>>,
}

impl<S> InputsSummary<S> {
    pub(crate) fn of(files: Vec<InputSummary<S>>) -> Self {
        Self {
            inputs: files.len(),
            files,
        }
    }
}

/// One input file and its summary.
#[derive(Serialize)]
pub(crate) struct InputSummary<S> {
    pub(crate) input: PathBuf,
    pub(crate) summary: S,
}

/// The `selfplay` summary under `[generate]`: the games written from the
/// store, and the generation's funnel and cost.
#[derive(Serialize)]
pub(crate) struct GeneratedGamesSummary {
    pub(crate) games: u64,
    pub(crate) first_game: u64,
    pub(crate) last_game: u64,
    pub(crate) output: String,
    pub(crate) generate: crate::generate::GenerateReport,
    pub(crate) engine_cpu_hours: f64,
}

/// One `mine` input's summary: mined now, or (the generated games) written
/// from the store, where they were mined as they were played.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum MineFileSummary {
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
pub(crate) enum RateFileSummary {
    FromStore {
        written: u64,
        from_store: String,
        output: String,
    },
    Rated(crate::stages::rate::RateSummary),
}

/// The `export` summary: each format's own.
#[derive(Serialize)]
pub(crate) struct ExportsSummary {
    pub(crate) formats: usize,
    pub(crate) exports: Vec<FormatSummary>,
}

/// One format of `export.formats` and its export's summary.
#[derive(Serialize)]
pub(crate) struct FormatSummary {
    pub(crate) format: String,
    pub(crate) summary: crate::stages::export::ExportSummary,
}

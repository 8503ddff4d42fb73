//! What an eval asks: the puzzle set and its sha256, the rating model its
//! release recorded, the puzzles (a stratified sample under `--limit`), the
//! player, the prompt templates and the jobs. Apart from the answers so the
//! inputs are settled before any player is asked.

use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

use super::args::EvalArgs;
use super::config::EvalConfig;
use super::metrics::PositionRecord;
use super::players::{Answer, ModelSpec};
use super::prompt::BASELINE_TEMPLATE;
use super::prompt::{PromptSpec, Template};
use super::section::{player_of, recorded_config};
use super::task::{Job, PositionTask, puzzle_tasks};
use crate::chess::record::{Puzzle, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::stages::export::Split;

/// The puzzle file of a set and the sha256 that identifies the set.
pub(crate) fn resolve_set(set: &Path, split: Split) -> Result<(PathBuf, String)> {
    if set.is_dir() {
        let split = split.name();
        let manifest = set.join("manifest.json");
        let hash = if manifest.is_file() {
            sha256_file(&manifest)?
        } else {
            return Err(bad_input(format!(
                "release folder {} has no manifest.json",
                set.display()
            )));
        };
        crate::stages::release::folder::ReleaseFolder::at(set).check()?;
        let file = set.join(format!("{split}.csv"));
        if !file.is_file() {
            return Err(bad_input(format!(
                "release folder {} has no {split}.csv",
                set.display()
            )));
        }
        Ok((file, hash))
    } else if set.is_file() {
        Ok((set.to_path_buf(), sha256_file(set)?))
    } else {
        Err(bad_input(format!("puzzle set {} not found", set.display())))
    }
}

/// What the eval reads of a release's `settings.rate`: the rating model,
/// kept as JSON until it is checked as a [`super::report::ModelPin`] (so that a
/// malformed one is named as such).
#[derive(Deserialize)]
struct RecordedRate {
    #[serde(default)]
    model: Value,
}

/// The rating model a release folder `set` records under
/// `settings.rate.model` (its path and sha256); `None` for a puzzle file,
/// or a release rated with no model (`run` records none when `[rate]` has
/// no model file, `release` records no settings).
fn rating_model_of(set: &Path) -> Result<Option<super::report::ModelPin>> {
    if !set.is_dir() {
        return Ok(None);
    }
    let recorded = crate::stages::release::manifest::ReleaseManifest::load(set)?
        .and_then(|manifest| manifest.settings)
        .and_then(|settings| settings.rate)
        .map(|rate| RecordedRate::deserialize(&rate).map_or(Value::Null, |rate| rate.model))
        .filter(|model| !model.is_null());
    recorded
        .map(|model| {
            serde_json::from_value(model).map_err(|e| {
                bad_input(format!(
                    "{}: settings.rate.model is not a path and sha256: {e}",
                    set.join("manifest.json").display()
                ))
            })
        })
        .transpose()
}

/// What an eval asks: the player, the puzzles and their positions, the
/// prompt and its templates.
pub(super) struct EvalInputs {
    pub(super) model: ModelSpec,
    pub(super) puzzles: Vec<Puzzle>,
    /// The sha256 of the puzzle set's file.
    pub(super) set_sha256: String,
    /// The rating model the set's release records; read with the set, so
    /// a manifest that names it wrongly stops the eval before any call.
    pub(super) rating_model: Option<super::report::ModelPin>,
    pub(super) tasks: Vec<PositionTask>,
    pub(super) prompt: PromptSpec,
    pub(super) templates: Vec<Template>,
}

impl EvalInputs {
    pub(super) fn load(args: &EvalArgs, config: &EvalConfig) -> Result<Self> {
        let model = player_of(config)?;
        let (puzzles, set_sha256) = load_puzzles(args, config)?;
        let rating_model = rating_model_of(&args.set)?;
        let mut tasks = Vec::new();
        for (i, puzzle) in puzzles.iter().enumerate() {
            tasks.extend(puzzle_tasks(i, puzzle)?);
        }
        let prompt = match &args.prompt {
            Some(path) => PromptSpec::load(path)?,
            None => PromptSpec::default(),
        };
        let templates = templates_of(&model, config)?;
        Ok(Self {
            model,
            puzzles,
            set_sha256,
            rating_model,
            tasks,
            prompt,
            templates,
        })
    }

    /// Each job's answer scored.
    pub(super) fn position_records(&self, jobs: &[Job], answers: &[Answer]) -> Vec<PositionRecord> {
        jobs.iter()
            .zip(answers)
            .map(|(job, answer)| {
                super::scoring::record_of(
                    &self.puzzles,
                    &self.tasks[job.task],
                    &self.templates[job.template],
                    job,
                    answer,
                )
            })
            .collect()
    }

    /// What the run's report records of them.
    pub(super) fn run_info(
        &self,
        args: &EvalArgs,
        config: &EvalConfig,
    ) -> Result<super::report::RunInfo> {
        let templates = &self.templates;
        Ok(super::report::RunInfo {
            model: self.model.label(),
            set: args.set.display().to_string(),
            split: args.split.name().to_string(),
            set_sha256: self.set_sha256.clone(),
            templates: templates.iter().map(|t| t.name().to_string()).collect(),
            template_fingerprints: templates.iter().map(Template::fingerprint).collect(),
            prompt: args
                .prompt
                .as_ref()
                .map(|_| serde_json::to_value(&self.prompt))
                .transpose()?,
            puzzles: self.puzzles.len(),
            positions: self.tasks.len(),
            config: recorded_config(config, &self.model),
            rating_model: self.rating_model.clone(),
        })
    }
}

/// The puzzles of the set (at most `--limit`, a stratified sample:
/// [`super::sample::stratified`]) and the sha256 naming the set.
fn load_puzzles(args: &EvalArgs, config: &EvalConfig) -> Result<(Vec<Puzzle>, String)> {
    if args.limit == Some(0) {
        return Err(bad_input(
            "--limit 0 asks for no puzzles: give at least 1, or leave --limit out for the whole set",
        ));
    }
    let (puzzle_path, set_sha256) = resolve_set(&args.set, args.split)?;
    let mut puzzles = read_puzzles(&puzzle_path)?;
    if let Some(n) = args.limit {
        puzzles = super::sample::stratified(puzzles, n, config.seed, config.rating_bin_width);
    }
    if puzzles.is_empty() {
        return Err(bad_input(format!("{}: no puzzles", puzzle_path.display())));
    }
    Ok((puzzles, set_sha256))
}

/// The prompt templates: the configured ones for a model (default
/// paper-json), none for a baseline player.
fn templates_of(model: &ModelSpec, config: &EvalConfig) -> Result<Vec<Template>> {
    match model {
        ModelSpec::OpenAi { .. } if config.templates.is_empty() => {
            Ok(vec![Template::from_name("paper-json")?])
        }
        ModelSpec::OpenAi { .. } => config
            .templates
            .iter()
            .map(|t| Template::from_name(t))
            .collect(),
        _ => Ok(vec![Template::File {
            name: BASELINE_TEMPLATE.into(),
            text: String::new(),
        }]),
    }
}

/// Every (template, repeat, task) in report order.
pub(super) fn jobs_of(templates: usize, repeats: u32, tasks: usize) -> Vec<Job> {
    let mut jobs = Vec::with_capacity(templates * repeats as usize * tasks);
    for template in 0..templates {
        for repeat in 0..repeats {
            for task in 0..tasks {
                jobs.push(Job {
                    template,
                    repeat,
                    task,
                });
            }
        }
    }
    jobs
}

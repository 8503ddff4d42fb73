//! `puzzleforge eval`: asks a model (or a baseline player) every solver
//! position of a puzzle set and reports accuracy, illegal and unparseable
//! rates and engine regret, broken down by rating, theme, solver length,
//! move index and template, and places the player on the human ladder (the
//! nine Maia-1 nets on the same positions). `compare` tests two runs
//! against each other; `rollout` plays short games against Stockfish.

pub(crate) mod charts;
pub(crate) mod client;
pub mod compare;
pub mod config;
pub(crate) mod engine_ops;
pub(crate) mod human;
pub(crate) mod ladder;
pub(crate) mod ladder_chart;
pub(crate) mod metrics;
pub mod parse;
pub(crate) mod players;
pub(crate) mod prompt;
pub mod puzzle_rating;
pub mod solve_curve;
pub(crate) mod report;
pub(crate) mod scoring;
pub mod rollout;
pub(crate) mod sample;
pub mod task;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::chess::record::{Puzzle, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::{flags_over, load_section, switch_off};
use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineArgs;
use crate::stages::export::Split;
use client::{ChatClient, Endpoint, default_cache_dir};
use config::{EvalConfig, EvalEngine};
use human::Policies;
use metrics::{PositionRecord, Verdict};
use players::{Answer, ModelSpec, Tally, ask_model, random_move, request_seed, run_parallel};
use prompt::{PromptSpec, Template};
use report::{EnginePin, EvalSummary, RunOutput};
pub use scoring::classify;
use task::{Job, PositionTask, PositionView, puzzle_tasks};

/// `puzzleforge eval`. The flags that set a key of `[eval]` override it
/// ([`crate::core::settings::flags_over`]); the engine flags override
/// `[eval.engine]`.
#[derive(Debug, Clone, Serialize)]
pub struct EvalArgs {
    /// A release folder (its test split unless --split train) or a puzzle file (CSV/JSONL, .zst ok).
    #[serde(skip)]
    pub set: PathBuf,
    /// openai:MODEL@BASE_URL, engine:stockfish?elo=E&nodes=N, maia:RATING
    /// (1100..1900; ?sample=1 to draw at temperature 1), or random (default:
    /// the config's eval.model).
    pub model: Option<String>,
    /// paper-json, epoch, or a template file; repeat the flag to run several
    /// (default: the config's eval.templates, else paper-json).
    pub templates: Vec<String>,
    /// JSON file with an instruction and few-shot demos.
    #[serde(skip)]
    pub prompt: Option<PathBuf>,
    /// Run folder for the report, logs and cache.
    #[serde(skip)]
    pub output: PathBuf,
    /// Split of a release folder (ignored for a puzzle file).
    #[serde(skip)]
    pub split: Split,
    /// Asks every position K times; each repeat draws its own seeds from the run's seed.
    pub repeats: Option<u32>,
    /// The run's seed: every random choice of the eval (the puzzles of
    /// --limit, a sampling player's draws, each repeat's seeds) derives
    /// from it (default: the config's [eval] seed; 0 without one).
    pub seed: Option<u64>,
    /// Only N puzzles, drawn with the run's seed across the set's cells
    /// (rating bin x solver moves x mate) as evenly as they allow, not the
    /// first N rows (a release's first rows are its lowest-rated cells).
    #[serde(skip)]
    pub limit: Option<usize>,
    /// Concurrent model calls (threads of the Maia nets).
    #[serde(rename = "client.workers")]
    pub workers: Option<usize>,
    /// Pipeline config (TOML) with an [eval] section.
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Skip the engine regret computation.
    #[serde(rename = "regret.enabled", serialize_with = "switch_off")]
    pub no_regret: bool,
    /// Skip the human ladder (the nine Maia nets on the same positions).
    #[serde(rename = "maia.ladder", serialize_with = "switch_off")]
    pub no_ladder: bool,
    /// Folder of the Maia nets (default: the config's eval.maia.models_dir, models/maia).
    #[serde(rename = "maia.models_dir")]
    pub maia_models: Option<PathBuf>,
    /// Engine executable or definition file (default: config, /usr/games/stockfish, PATH).
    #[serde(skip)]
    pub engine: Option<PathBuf>,
    /// Engine processes for regret and the engine baseline.
    #[serde(skip)]
    pub engine_workers: Option<usize>,
}

impl EvalArgs {
    /// The engine flags, over the `[eval.engine]` section.
    fn engine_flags(&self) -> EvalEngine {
        EvalEngine::Flags(EngineArgs {
            engine: self.engine.clone(),
            workers: self.engine_workers,
            deadline: None,
            handshake_deadline: None,
        })
    }
}

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
/// kept as JSON until it is checked as a [`report::ModelPin`] (so that a
/// malformed one is named as such).
#[derive(Deserialize)]
struct RecordedRate {
    #[serde(default)]
    model: Value,
}

/// The rating model a release folder `set` records under
/// `settings.rate.model` (its path and sha256); `None` for a puzzle file,
/// or a release rated with no model (`run` records none when `[rate]` has
/// no model file, `split` records no settings).
fn rating_model_of(set: &Path) -> Result<Option<report::ModelPin>> {
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

/// Asks the player every job: its answers, the HTTP requests made and,
/// for an engine, its name and sha256.
#[allow(clippy::too_many_arguments)]
fn answer_jobs(
    model: &ModelSpec,
    config: &EvalConfig,
    args: &EvalArgs,
    engine: &EvalEngine,
    templates: &[Template],
    prompt: &PromptSpec,
    tasks: &[PositionTask],
    jobs: &[Job],
    policies: Option<&Policies>,
    notes: &mut Vec<String>,
) -> Result<(Vec<Answer>, u64, Option<EnginePin>)> {
    let bar = crate::core::progress::items(jobs.len() as u64, "eval");
    let tally = Tally::default();
    let progress = |task: &PositionTask, answer: &Answer| {
        let (verdict, _, _) = classify(task, answer);
        bar.set_message(tally.add(verdict == Verdict::Correct));
        bar.inc(1);
    };
    let result = match model {
        ModelSpec::Random => (random_answers(config, tasks, jobs, &progress), 0, None),
        ModelSpec::OpenAi { model, base_url } => {
            let endpoint = Endpoint {
                model: model.clone(),
                base_url: base_url.clone(),
            };
            let (answers, requests) = model_answers(
                endpoint, config, args, templates, prompt, tasks, jobs, &progress,
            )?;
            (answers, requests, None)
        }
        ModelSpec::Engine { .. } => engine_answers(model, config, engine, tasks, jobs, notes)?,
        ModelSpec::Maia { rating, sample } => {
            let policies = policies.ok_or_else(|| anyhow::anyhow!("no Maia probabilities"))?;
            let answers = maia_answers(
                *rating, *sample, policies, config, tasks, jobs, notes, &progress,
            )?;
            (answers, 0, None)
        }
    };
    crate::core::progress::finish(&bar);
    Ok(result)
}

/// `random`: a legal move drawn for each job, seeded by the run, the
/// repeat and the task.
fn random_answers(
    config: &EvalConfig,
    tasks: &[PositionTask],
    jobs: &[Job],
    progress: &dyn Fn(&PositionTask, &Answer),
) -> Vec<Answer> {
    jobs.iter()
        .map(|job| {
            let task = &tasks[job.task];
            let key = Key::Pair(u64::from(job.repeat), job.task as u64);
            let mut rng = seed::rng(config.seed, Domain::EvalRandomMove, key);
            let answer = Answer {
                reply: random_move(&task.position, &mut rng),
                ..Default::default()
            };
            progress(task, &answer);
            answer
        })
        .collect()
}

/// A model behind an HTTP endpoint: every job asked on the client's
/// workers (answers cached on disk); gives the answers in job order and
/// the HTTP requests made.
#[allow(clippy::too_many_arguments)]
fn model_answers(
    endpoint: Endpoint,
    config: &EvalConfig,
    args: &EvalArgs,
    templates: &[Template],
    prompt: &PromptSpec,
    tasks: &[PositionTask],
    jobs: &[Job],
    progress: &dyn Fn(&PositionTask, &Answer),
) -> Result<(Vec<Answer>, u64)> {
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&args.output));
    let client = ChatClient::new(endpoint, config.client.clone(), Some(cache))?;
    let answers = run_parallel(
        jobs,
        config.client.workers,
        |i, job| {
            let task = &tasks[job.task];
            let view = PositionView::new(&task.position, &task.history_san);
            let repeat = Key::Index(u64::from(job.repeat));
            ask_model(
                &client,
                &templates[job.template],
                prompt,
                &view,
                request_seed(config.seed, Domain::EvalRequestSeed, repeat),
                seed::value(config.seed, Domain::EvalRetryJitter, Key::Index(i as u64)),
            )
        },
        |_| {},
    )?;
    for (job, answer) in jobs.iter().zip(&answers) {
        progress(&tasks[job.task], answer);
    }
    Ok((answers, client.http_requests()))
}

/// `maia:RATING`: the net's most likely move, or with `sample` a move
/// drawn from its probabilities (seeded by the run, the repeat and the
/// task); notes which.
#[allow(clippy::too_many_arguments)]
fn maia_answers(
    rating: u32,
    sample: bool,
    policies: &Policies,
    config: &EvalConfig,
    tasks: &[PositionTask],
    jobs: &[Job],
    notes: &mut Vec<String>,
    progress: &dyn Fn(&PositionTask, &Answer),
) -> Result<Vec<Answer>> {
    let net = policies
        .net_of(rating)
        .ok_or_else(|| anyhow::anyhow!("no Maia net of rating {rating}"))?;
    notes.push(match sample {
        false => format!(
            "maia:{rating} plays the net's most likely move: what a typical player rated \
             {rating} on Lichess plays (deterministic)"
        ),
        true => format!(
            "maia:{rating}?sample=1 plays a move drawn from the net's probabilities at \
             temperature 1, seeded by the run (each repeat draws its own)"
        ),
    });
    Ok(jobs
        .iter()
        .map(|job| {
            let policy = &policies.positions[job.task];
            let reply = if sample {
                let key = Key::Pair(u64::from(job.repeat), job.task as u64);
                let mut rng = seed::rng(config.seed, Domain::EvalMaiaMove, key);
                policy.sampled_move(net, &mut rng)
            } else {
                policy.top_move(net)
            };
            let answer = Answer {
                reply: reply.map(str::to_string),
                ..Default::default()
            };
            progress(&tasks[job.task], &answer);
            answer
        })
        .collect())
}

fn engine_answers(
    model: &ModelSpec,
    config: &EvalConfig,
    engine: &EvalEngine,
    tasks: &[PositionTask],
    jobs: &[Job],
    notes: &mut Vec<String>,
) -> Result<(Vec<Answer>, u64, Option<EnginePin>)> {
    let ModelSpec::Engine { elo, nodes, depth } = model else {
        return Err(anyhow::anyhow!("not an engine player"));
    };
    let pool = engine_ops::start_pool(config, engine)?;
    if let Some(elo) = elo {
        notes.push(format!(
            "engine baseline at Elo {elo}: Stockfish 15.1's skill rule replayed with the run's seed \
             (MultiPV 4 to the skill's depth; nodes/depth apply only at full strength)"
        ));
    }
    let limit = engine_ops::limit_of(*nodes, *depth, config.engine_player_nodes);
    let answers = engine_ops::engine_answers(&pool, *elo, limit, config.seed, tasks, jobs)?;
    Ok((answers, 0, Some(engine_pin(&pool)?)))
}

/// The engine of `pool` by its UCI id and its binary's sha256.
fn engine_pin(pool: &EnginePool) -> Result<EnginePin> {
    Ok(EnginePin {
        id: pool.engine_id().to_string(),
        sha256: sha256_file(&pool.spec().path)?,
    })
}

/// `puzzleforge eval`: the `[eval]` section of `--config` (or the
/// defaults) with the flags over it.
pub fn run_eval(args: &EvalArgs) -> Result<Summary> {
    let section: EvalConfig = load_section(args.config.as_deref(), "eval")?;
    let config = flags_over(&section, args)?;
    // The response cache (and the Maia policies kept in it) is written
    // too, wherever the config or -o puts it: through the same gate as -o.
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&args.output));
    crate::stages::release::folder::guard_output(
        &cache,
        crate::stages::release::folder::Target::Folder,
        "eval",
        "eval.cache_dir (by default --output's cache/)",
    )?;
    // One eval at a time per output folder: two would pay every call twice
    // and the last to write would win. (Under `run`, the release lock
    // already keeps a second run out of the stage's folder.)
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating run folder {}", args.output.display()))?;
    let lock_path = args.output.join(".lock");
    let Some(_lock) = crate::core::lock::FileLock::try_take(&lock_path)? else {
        let owner = crate::core::lock::holder(&lock_path);
        return Err(bad_input(format!(
            "{} is being written by another eval (lock {}: {owner}); wait for it to finish, \
             or give this one another -o",
            args.output.display(),
            lock_path.display()
        )));
    };
    run_eval_with(args, config, &args.engine_flags())?.into_summary()
}

/// Evaluates with the `[eval]` settings `config` and `engine` (the pipeline
/// runner's entry; `args.config` and the section flags are not read). The
/// run's files are written even when too many calls failed; then the eval
/// fails (a rerun asks the failed calls again).
pub(crate) fn run_eval_with(
    args: &EvalArgs,
    config: EvalConfig,
    engine: &EvalEngine,
) -> Result<Report<EvalSummary>> {
    let started = Instant::now();
    let inputs = EvalInputs::load(args, &config)?;
    let EvalInputs {
        model,
        puzzles,
        tasks,
        prompt,
        templates,
        ..
    } = &inputs;
    let jobs = jobs_of(templates.len(), config.repeats, tasks.len());
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating run folder {}", args.output.display()))?;

    let mut notes = Vec::new();
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&args.output));
    let ladder_policies = ladder_policies(&config, puzzles, tasks, &cache, &mut notes)?;
    // A Maia player reads its net among the ladder's nine when they ran.
    let own_policies = match &model {
        ModelSpec::Maia { rating, .. } if ladder_policies.is_none() => Some(human::policies(
            &config.maia.models_dir,
            &[*rating],
            puzzles,
            tasks,
            Some(&cache),
            config.client.workers,
        )?),
        _ => None,
    };
    let (answers, http_requests, mut engine_pin) = answer_jobs(
        model,
        &config,
        args,
        engine,
        templates,
        prompt,
        tasks,
        &jobs,
        own_policies.as_ref().or(ladder_policies.as_ref()),
        &mut notes,
    )?;
    let mut records = inputs.position_records(&jobs, &answers);
    let mut regret_searches = None;
    if config.regret.enabled {
        // Regret needs Stockfish: without one the run still reports accuracy.
        match compute_regret(&config, engine, &mut records, &cache) {
            Ok((pin, searches)) => {
                engine_pin = engine_pin.or(Some(pin));
                regret_searches = Some(searches);
            }
            Err(e) => notes.push(format!("regret not computed: {e:#}")),
        }
    }
    let maia_positions = own_policies
        .as_ref()
        .or(ladder_policies.as_ref())
        .map(|p| (p.cached, p.positions.len() - p.cached));
    // Every net the run read, by file and sha256, the player's first.
    let mut nets: Vec<crate::maia::NetFile> = Vec::new();
    for policies in own_policies.iter().chain(ladder_policies.iter()) {
        for net in &policies.nets {
            if !nets.contains(net) {
                nets.push(net.clone());
            }
        }
    }
    let ladder = ladder_policies.map(|policies| {
        ladder::ladder(
            &policies,
            &config.maia.models_dir,
            puzzles,
            tasks,
            config.rating_bin_width,
        )
    });
    let puzzle_rating = puzzle_rating::report(&records, puzzles);
    let output = RunOutput {
        puzzle_rating,
        records,
        answers,
        jobs,
        http_requests,
        notes,
        engine: engine_pin,
        ladder,
        maia_positions,
        nets,
        regret_searches: regret_searches.map(|s| (s.cached, s.searched)),
    };
    let run = inputs.run_info(args, &config)?;
    let summary = report::write_run(&args.output, &run, &output, tasks, started.elapsed())?;
    check_failed_calls(
        &output.answers,
        config.client.max_failed_share,
        &args.output,
    )?;
    Ok(summary)
}

/// What an eval asks: the player, the puzzles and their positions, the
/// prompt and its templates.
struct EvalInputs {
    model: ModelSpec,
    puzzles: Vec<Puzzle>,
    /// The sha256 of the puzzle set's file.
    set_sha256: String,
    /// The rating model the set's release records; read with the set, so
    /// a manifest that names it wrongly stops the eval before any call.
    rating_model: Option<report::ModelPin>,
    tasks: Vec<PositionTask>,
    prompt: PromptSpec,
    templates: Vec<Template>,
}

impl EvalInputs {
    fn load(args: &EvalArgs, config: &EvalConfig) -> Result<Self> {
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
    fn position_records(&self, jobs: &[Job], answers: &[Answer]) -> Vec<PositionRecord> {
        jobs.iter()
            .zip(answers)
            .map(|(job, answer)| {
                scoring::record_of(
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
    fn run_info(&self, args: &EvalArgs, config: &EvalConfig) -> Result<report::RunInfo> {
        let templates = &self.templates;
        Ok(report::RunInfo {
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

/// The nine Maia nets' probabilities on every task, for the human ladder:
/// `None` (and a note saying why) when the ladder is off, the nets' folder
/// does not exist or the nets cannot run; the player is reported either way.
/// A net that is not the published one (swapped, damaged) is an error, not
/// a note: the ladder would put its moves under another rating.
fn ladder_policies(
    config: &EvalConfig,
    puzzles: &[Puzzle],
    tasks: &[PositionTask],
    cache: &Path,
    notes: &mut Vec<String>,
) -> Result<Option<Policies>> {
    if !config.maia.ladder {
        return Ok(None);
    }
    let dir = &config.maia.models_dir;
    if !dir.is_dir() {
        notes.push(format!(
            "human ladder not computed: no Maia nets folder {} (eval.maia.models_dir)",
            dir.display()
        ));
        return Ok(None);
    }
    if let Ok(nets) = crate::maia::net_files(dir, &crate::maia::MAIA_RATINGS) {
        crate::maia::check_pinned(dir, &nets)?;
    }
    let ratings = crate::maia::MAIA_RATINGS;
    match human::policies(
        dir,
        &ratings,
        puzzles,
        tasks,
        Some(cache),
        config.client.workers,
    ) {
        Ok(policies) => Ok(Some(policies)),
        Err(e) => {
            notes.push(format!("human ladder not computed: {e:#}"));
            Ok(None)
        }
    }
}

/// Whether the eval keeps answers or the Maia nets' probabilities in its
/// cache: a model behind an HTTP endpoint, a Maia player or the human
/// ladder (`run` keeps that cache beside the release).
pub(crate) fn keeps_a_cache(config: &EvalConfig) -> bool {
    calls_a_model(config)
        || config.maia.ladder
        || matches!(
            config.model.as_deref().map(ModelSpec::parse),
            Some(Ok(ModelSpec::Maia { .. }))
        )
}

/// The Maia net files an eval with `config` reads, those that exist: the
/// nine of the ladder, or a Maia player's own (`run` fingerprints the eval
/// stage with them).
pub(crate) fn maia_inputs(config: &EvalConfig) -> Vec<PathBuf> {
    let ratings: Vec<u32> = if config.maia.ladder && config.maia.models_dir.is_dir() {
        crate::maia::MAIA_RATINGS.to_vec()
    } else {
        match config.model.as_deref().map(ModelSpec::parse) {
            Some(Ok(ModelSpec::Maia { rating, .. })) => vec![rating],
            _ => Vec::new(),
        }
    };
    ratings
        .into_iter()
        .map(|r| {
            config
                .maia
                .models_dir
                .join(crate::maia::weight_file_name(r))
        })
        .filter(|path| path.is_file())
        .collect()
}

/// Whether the configured player is a model behind an HTTP endpoint (whose
/// answers are cached), not a built-in baseline.
pub(crate) fn calls_a_model(config: &EvalConfig) -> bool {
    matches!(
        config.model.as_deref().map(ModelSpec::parse),
        Some(Ok(ModelSpec::OpenAi { .. }))
    )
}

/// `[eval]` as a record may show it: a model's base URL with its
/// credentials redacted (`run` fingerprints the eval stage with this, so no
/// secret reaches `stage.json`).
pub(crate) fn section_for_records(config: &EvalConfig) -> EvalConfig {
    match config.model.as_deref().map(ModelSpec::parse) {
        Some(Ok(model)) => recorded_config(config, &model),
        _ => config.clone(),
    }
}

/// The settings as recorded in the run's files: a model's base URL with
/// its credentials redacted.
fn recorded_config(config: &EvalConfig, model: &ModelSpec) -> EvalConfig {
    let mut recorded = config.clone();
    if let ModelSpec::OpenAi { .. } = model {
        recorded.model = Some(model.label());
    }
    recorded
}

/// The player of a run: `config.model` (the `--model` flag over it).
fn player_of(config: &EvalConfig) -> Result<ModelSpec> {
    if config.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    match &config.model {
        Some(model) => ModelSpec::parse(model),
        None => Err(bad_input(
            "eval needs a player: --model SPEC, or eval.model in the config",
        )),
    }
}

/// The puzzles of the set (at most `--limit`, a stratified sample:
/// [`sample::stratified`]) and the sha256 naming the set.
fn load_puzzles(args: &EvalArgs, config: &EvalConfig) -> Result<(Vec<Puzzle>, String)> {
    if args.limit == Some(0) {
        return Err(bad_input(
            "--limit 0 asks for no puzzles: give at least 1, or leave --limit out for the whole set",
        ));
    }
    let (puzzle_path, set_sha256) = resolve_set(&args.set, args.split)?;
    let mut puzzles = read_puzzles(&puzzle_path)?;
    if let Some(n) = args.limit {
        puzzles = sample::stratified(puzzles, n, config.seed, config.rating_bin_width);
    }
    if puzzles.is_empty() {
        return Err(bad_input(format!("{}: no puzzles", puzzle_path.display())));
    }
    Ok((puzzles, set_sha256))
}

pub(crate) use prompt::BASELINE_TEMPLATE;

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
fn jobs_of(templates: usize, repeats: u32, tasks: usize) -> Vec<Job> {
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

/// Fails the eval when more than `max_share` of the model calls got no
/// answer, saying how many and why: a failed call counts as a wrong answer
/// in every accuracy, so the report would understate the model.
fn check_failed_calls(answers: &[Answer], max_share: f64, run_dir: &Path) -> Result<()> {
    let calls: Vec<&client::ChatOutcome> = answers.iter().filter_map(|a| a.call.as_ref()).collect();
    let failed: Vec<&str> = calls
        .iter()
        .filter(|call| call.content.is_none())
        .map(|call| call.error.as_deref().unwrap_or("no answer"))
        .collect();
    if calls.is_empty() || failed.len() as f64 <= max_share * calls.len() as f64 {
        return Ok(());
    }
    let mut reasons: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for error in &failed {
        *reasons.entry(client::failure_kind(error)).or_default() += 1;
    }
    let reasons: Vec<String> = reasons
        .iter()
        .map(|(reason, count)| format!("{count} x {reason}"))
        .collect();
    anyhow::bail!(
        "{} of {} model calls failed ({}; first: {}), more than the allowed {:.1}% \
         (eval.client.max_failed_share); the report in {} counts them as no answer. \
         Answers are cached and failures are not: run the same command again to ask \
         only the failed calls",
        failed.len(),
        calls.len(),
        reasons.join(", "),
        failed[0],
        100.0 * max_share,
        run_dir.display()
    )
}

/// Regret's searches, their scores read from and written to `cache`.
fn compute_regret(
    config: &EvalConfig,
    engine: &EvalEngine,
    records: &mut [PositionRecord],
    cache: &Path,
) -> Result<(EnginePin, engine_ops::RegretSearches)> {
    let mut pool = engine_ops::start_pool(config, engine)?;
    pool.set_progress(Some("regret"));
    let searches = engine_ops::compute_regret(&pool, config, records, Some(cache))?;
    Ok((engine_pin(&pool)?, searches))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_the_section_keep_no_url_credentials() {
        let config = EvalConfig {
            model: Some("openai:m@http://user:url-pass-4711@127.0.0.1:9/v1?api-key=q-0815".into()),
            ..EvalConfig::default()
        };
        let recorded = serde_json::to_string(&section_for_records(&config)).unwrap();
        assert!(!recorded.contains("url-pass-4711"), "{recorded}");
        assert!(!recorded.contains("q-0815"), "{recorded}");
        assert!(recorded.contains("api-key=[redacted]"), "{recorded}");
        // A built-in player has nothing to hide and is recorded as written.
        let baseline = EvalConfig {
            model: Some("random".into()),
            ..EvalConfig::default()
        };
        assert_eq!(
            serde_json::to_value(section_for_records(&baseline)).unwrap(),
            serde_json::to_value(&baseline).unwrap()
        );
    }
}

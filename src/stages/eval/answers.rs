//! The player's answers: a model over HTTP, a baseline, a Maia net or an
//! engine asked every job, the Maia nets' probabilities for the human
//! ladder, the check on failed calls and the engine's regret searches.
//! Apart from the run so each player is asked the same way.

use anyhow::Result;
use std::path::Path;

use super::args::EvalArgs;
use super::client::{ChatClient, Endpoint, default_cache_dir};
use super::config::{EvalConfig, EvalEngine};
use super::human::Policies;
use super::metrics::{PositionRecord, Verdict};
use super::players::{
    Answer, ModelSpec, Tally, ask_model, random_move, request_seed, run_parallel,
};
use super::prompt::{PromptSpec, Template};
use super::report::EnginePin;
use super::scoring::classify;
use super::task::{Job, PositionTask, PositionView};
use crate::chess::record::Puzzle;
use crate::core::fileio::sha256_file;
use crate::core::seed::{self, Domain, Key};
use crate::engine::pool::EnginePool;

/// Asks the player every job: its answers, the HTTP requests made and,
/// for an engine, its name and sha256.
#[allow(clippy::too_many_arguments)]
pub(super) fn answer_jobs(
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
    let pool = super::engine_ops::start_pool(config, engine)?;
    if let Some(elo) = elo {
        notes.push(format!(
            "engine baseline at Elo {elo}: Stockfish 15.1's skill rule replayed with the run's seed \
             (MultiPV 4 to the skill's depth; nodes/depth apply only at full strength)"
        ));
    }
    let limit = super::engine_ops::limit_of(*nodes, *depth, config.engine_player_nodes);
    let answers = super::engine_ops::engine_answers(&pool, *elo, limit, config.seed, tasks, jobs)?;
    Ok((answers, 0, Some(engine_pin(&pool)?)))
}

/// The engine of `pool` by its UCI id and its binary's sha256.
fn engine_pin(pool: &EnginePool) -> Result<EnginePin> {
    Ok(EnginePin {
        id: pool.engine_id().to_string(),
        sha256: sha256_file(&pool.spec().path)?,
    })
}

/// The nine Maia nets' probabilities on every task, for the human ladder:
/// `None` (and a note saying why) when the ladder is off, the nets' folder
/// does not exist or the nets cannot run; the player is reported either way.
/// A net that is not the published one (swapped, damaged) is an error, not
/// a note: the ladder would put its moves under another rating.
pub(super) fn ladder_policies(
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
    match super::human::policies(
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

/// Fails the eval when more than `max_share` of the model calls got no
/// answer, saying how many and why: a failed call counts as a wrong answer
/// in every accuracy, so the report would understate the model.
pub(super) fn check_failed_calls(answers: &[Answer], max_share: f64, run_dir: &Path) -> Result<()> {
    let calls: Vec<&super::client::ChatOutcome> =
        answers.iter().filter_map(|a| a.call.as_ref()).collect();
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
        *reasons
            .entry(super::client::failure_kind(error))
            .or_default() += 1;
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
pub(super) fn compute_regret(
    config: &EvalConfig,
    engine: &EvalEngine,
    records: &mut [PositionRecord],
    cache: &Path,
) -> Result<(EnginePin, super::engine_ops::RegretSearches)> {
    let mut pool = super::engine_ops::start_pool(config, engine)?;
    pool.set_progress(Some("regret"));
    let searches = super::engine_ops::compute_regret(&pool, config, records, Some(cache))?;
    Ok((engine_pin(&pool)?, searches))
}

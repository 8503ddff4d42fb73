//! Writing a run: `report.json` (deterministic: no timestamps, no
//! latencies), `report.md`, `positions.jsonl`, `calls.jsonl`,
//! `config.json`, `runtime.json` (wall time, latencies, request counts:
//! the figures that vary between reruns) and SVG pictures.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use super::charts::{LADDER_PICTURE, PicturedRun, draw_pictures};
use super::config::EvalConfig;
use super::ladder::{self, Ladder, LadderReport};
use super::metrics::{self, Breakdowns, CellMetrics, PositionRecord, breakdowns};
use super::players::Answer;
use super::puzzle_rating::PuzzleRatingReport;
use super::task::Job;
use super::task::PositionTask;
use crate::core::fileio::{AtomicFile, write_atomic};
use crate::core::stats::{mean, median, pct};
use crate::core::summary::Report;

/// Everything a run produced, before it is written.
pub(crate) struct RunOutput {
    pub records: Vec<PositionRecord>,
    pub answers: Vec<Answer>,
    pub jobs: Vec<Job>,
    pub http_requests: u64,
    pub notes: Vec<String>,
    /// The engine that played or scored regret, when one ran.
    pub engine: Option<EnginePin>,
    /// The nine Maia nets on the same positions, when they ran.
    pub ladder: Option<Ladder>,
    /// Positions whose Maia probabilities came from the cache, and those
    /// the nets ran on (when any net was used).
    pub maia_positions: Option<(usize, usize)>,
    /// The player's puzzle rating on the Lichess scale, when the puzzles
    /// have ratings.
    pub puzzle_rating: Option<PuzzleRatingReport>,
    /// The Maia nets the run read (the player's, the ladder's), each by
    /// file and sha256.
    pub nets: Vec<crate::maia::NetFile>,
    /// Regret's searches read from the cache, and those made now.
    pub regret_searches: Option<(usize, usize)>,
}

/// An engine by its UCI `id name` and its binary's sha256.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct EnginePin {
    pub id: String,
    pub sha256: String,
}

/// `report.json`'s `pins`: the bytes a run's figures depend on beyond the
/// set and the config (which the report names by sha256 already), so two
/// reports can be told apart when an engine binary or a net changed under
/// the same name and version.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Pins {
    /// The engine that played (an `engine:` player) or scored regret;
    /// `null` when none ran.
    pub engine: Option<EnginePin>,
    /// Every Maia net the run read (a `maia:` player's, the human
    /// ladder's), each once; empty when none.
    pub maia_nets: Vec<crate::maia::NetFile>,
    /// The rating model that estimated the ratings of the set's puzzles
    /// without a Lichess rating (the ratings the puzzle rating and the
    /// by-rating breakdowns read), as the release's manifest records it;
    /// `null` for a set that is not a release, or a release rated with no
    /// model.
    #[serde(default)]
    pub rating_model: Option<ModelPin>,
}

/// A model file by the path its release names it with and its sha256.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct ModelPin {
    pub path: String,
    pub sha256: String,
}

/// What was run, as recorded in `config.json` and `report.json`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct RunInfo {
    pub model: String,
    pub set: String,
    pub split: String,
    /// sha256 of the release's manifest.json, or of the puzzle file.
    pub set_sha256: String,
    pub templates: Vec<String>,
    /// Template name, or sha256 of a template file's text.
    pub template_fingerprints: Vec<String>,
    pub prompt: Option<Value>,
    pub puzzles: usize,
    pub positions: usize,
    pub config: EvalConfig,
    /// Recorded under `report.json`'s `pins`, not in `config.json`.
    #[serde(skip)]
    pub rating_model: Option<ModelPin>,
}

fn write_jsonl<T: Serialize>(path: &Path, rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    for row in rows {
        serde_json::to_writer(&mut file, &row)?;
        file.write_all(b"\n")?;
    }
    file.commit()
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

/// A score loss (0 to 1) to three decimals.
fn fmt_loss(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// Headline keys of a breakdown cell, for report.json and the command's
/// summary (each writes the puzzles first, then these).
#[derive(Serialize, Debug, Clone)]
struct Headline {
    positions: usize,
    puzzle_accuracy: f64,
    puzzle_accuracy_se: f64,
    position_accuracy: f64,
    illegal_rate: f64,
    unparseable_rate: f64,
    no_answer_rate: f64,
    regret_positions: usize,
    mean_score_loss: Option<f64>,
    mean_regret: Option<f64>,
    median_regret: Option<f64>,
}

impl Headline {
    fn of(m: &CellMetrics) -> Headline {
        Headline {
            positions: m.positions,
            puzzle_accuracy: m.puzzle_accuracy,
            puzzle_accuracy_se: m.puzzle_accuracy_se,
            position_accuracy: m.position_accuracy,
            illegal_rate: m.illegal_rate,
            unparseable_rate: m.unparseable_rate,
            no_answer_rate: m.no_answer_rate,
            regret_positions: m.regret_positions,
            mean_score_loss: m.mean_score_loss,
            mean_regret: m.mean_regret,
            median_regret: m.median_regret,
        }
    }
}

/// The eval's JSON summary: the headline figures, where the run's files
/// are, and the ratings read.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct EvalSummary {
    puzzles: usize,
    #[serde(flatten)]
    headline: Headline,
    /// The run's folder (where the pipeline commits it).
    pub(crate) run_dir: String,
    http_requests: u64,
    puzzle_rating: Option<PuzzleRatingReport>,
    human_equivalent_rating: Option<EquivalentRating>,
}

/// The Maia ladder's rating of the player, in the summary.
#[derive(Serialize, Debug, Clone)]
struct EquivalentRating {
    label: String,
    rating: Option<f64>,
}

/// Tokens spent and what they cost (`None` without a price for the model).
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    cost: Option<f64>,
}

impl Usage {
    fn of(run: &RunInfo, records: &[PositionRecord]) -> Self {
        let prompt_tokens: u64 = records.iter().filter_map(|r| r.prompt_tokens).sum();
        let completion_tokens: u64 = records.iter().filter_map(|r| r.completion_tokens).sum();
        let model_name = run
            .model
            .strip_prefix("openai:")
            .and_then(|m| m.rfind("@http").map(|at| &m[..at]))
            .unwrap_or(&run.model);
        let cost = run.config.prices.get(model_name).map(|p| {
            (prompt_tokens as f64 * p.prompt_per_million
                + completion_tokens as f64 * p.completion_per_million)
                / 1e6
        });
        Self {
            prompt_tokens,
            completion_tokens,
            cost,
        }
    }
}

/// Writes every output of a run and returns the command summary.
pub(crate) fn write_run(
    dir: &Path,
    run: &RunInfo,
    output: &RunOutput,
    tasks: &[PositionTask],
    wall: Duration,
) -> Result<Report<EvalSummary>> {
    let records = &output.records;
    let b = breakdowns(records, run.config.rating_bin_width);
    let verdicts = verdict_counts(records);
    let usage = Usage::of(run, records);

    let report = EvalReport::of(run, output, &b, &verdicts, &usage);
    let report_text = serde_json::to_string_pretty(&report)? + "\n";
    write_atomic(&dir.join("report.json"), report_text.as_bytes())?;
    write_atomic(
        &dir.join("config.json"),
        (serde_json::to_string_pretty(run)? + "\n").as_bytes(),
    )?;
    write_jsonl(&dir.join("positions.jsonl"), records)?;
    write_calls(dir, output, tasks)?;
    write_runtime(dir, output, wall)?;
    let pictured = PicturedRun {
        model: &run.model,
        templates: &run.templates,
        rating_bin_width: run.config.rating_bin_width,
    };
    let pictures = draw_pictures(
        dir,
        &pictured,
        &b,
        records,
        output.ladder.as_ref(),
        output.puzzle_rating.as_ref(),
    )?;
    let md = markdown(run, output, &b, &verdicts, &usage, &pictures);
    write_atomic(&dir.join("report.md"), md.as_bytes())?;
    Ok(command_summary(dir, run, output, &b))
}

/// How many answers got each verdict.
fn verdict_counts(records: &[PositionRecord]) -> BTreeMap<&'static str, usize> {
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        *verdicts.entry(r.verdict.as_str()).or_default() += 1;
    }
    verdicts
}

/// Puzzle accuracy of each repeat, in repeat order.
fn per_repeat_accuracy(records: &[PositionRecord], repeats: u32) -> Vec<f64> {
    (0..repeats)
        .map(|repeat| {
            let subset: Vec<&PositionRecord> =
                records.iter().filter(|r| r.repeat == repeat).collect();
            metrics::cell_metrics(&subset).puzzle_accuracy
        })
        .collect()
}

/// `report.json`: what was run, the headline figures, usage and every
/// breakdown (no timings: those go to `runtime.json`). The fields are
/// written in this order.
#[derive(Serialize)]
struct EvalReport<'a> {
    model: &'a str,
    set: &'a str,
    split: &'a str,
    set_sha256: &'a str,
    templates: &'a [String],
    puzzles: usize,
    repeats: u32,
    #[serde(flatten)]
    headline: Headline,
    verdicts: &'a BTreeMap<&'static str, usize>,
    per_repeat_puzzle_accuracy: Vec<f64>,
    usage: UsageReport,
    puzzle_rating: Option<&'a PuzzleRatingReport>,
    /// The engine's `id name`, when one ran.
    engine: Option<&'a str>,
    pins: Pins,
    /// A Maia player's own net, when the ladder (which records its nine
    /// under `human_ladder.nets`) did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    maia_nets: Option<&'a [crate::maia::NetFile]>,
    notes: &'a [String],
    breakdowns: &'a BTreeMap<String, BTreeMap<String, CellMetrics>>,
    human_ladder: Option<LadderReport<'a>>,
    config: &'a RunInfo,
}

/// `report.json`'s `usage`: tokens spent and what they cost.
#[derive(Serialize)]
struct UsageReport {
    prompt_tokens: u64,
    completion_tokens: u64,
    cost_usd: Option<f64>,
}

impl<'a> EvalReport<'a> {
    fn of(
        run: &'a RunInfo,
        output: &'a RunOutput,
        b: &'a Breakdowns,
        verdicts: &'a BTreeMap<&'static str, usize>,
        usage: &Usage,
    ) -> Self {
        EvalReport {
            model: &run.model,
            set: &run.set,
            split: &run.split,
            set_sha256: &run.set_sha256,
            templates: &run.templates,
            puzzles: b.overall.puzzles,
            repeats: run.config.repeats,
            headline: Headline::of(&b.overall),
            verdicts,
            per_repeat_puzzle_accuracy: per_repeat_accuracy(&output.records, run.config.repeats),
            usage: UsageReport {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cost_usd: usage.cost,
            },
            puzzle_rating: output.puzzle_rating.as_ref(),
            engine: output.engine.as_ref().map(|engine| engine.id.as_str()),
            pins: Pins {
                engine: output.engine.clone(),
                maia_nets: output.nets.clone(),
                rating_model: run.rating_model.clone(),
            },
            maia_nets: (output.ladder.is_none() && !output.nets.is_empty())
                .then_some(output.nets.as_slice()),
            notes: &output.notes,
            breakdowns: &b.by,
            human_ladder: output
                .ladder
                .as_ref()
                .map(|l| LadderReport::of(l, &run.model, b)),
            config: run,
        }
    }
}

/// One line of `calls.jsonl`: a job, its reply and the call behind it.
#[derive(Serialize)]
struct CallLine<'a> {
    puzzle_id: &'a str,
    move_index: usize,
    template: &'a str,
    repeat: u32,
    prompt_hash: Option<&'a str>,
    reply: Option<&'a str>,
    parsed_move: Option<String>,
    verdict: metrics::Verdict,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    finish_reason: Option<String>,
    latency_ms: u64,
    attempts: u32,
    cached: bool,
    error: Option<String>,
}

/// `calls.jsonl`: one line per job, the reply and the call behind it.
fn write_calls(dir: &Path, output: &RunOutput, tasks: &[PositionTask]) -> Result<()> {
    let calls = output
        .jobs
        .iter()
        .zip(&output.answers)
        .zip(&output.records)
        .map(|((job, answer), record)| {
            let call = answer.call.clone().unwrap_or_default();
            CallLine {
                puzzle_id: &record.puzzle_id,
                move_index: tasks[job.task].move_index,
                template: &record.template,
                repeat: job.repeat,
                prompt_hash: answer.request_key.as_deref(),
                reply: answer.reply.as_deref(),
                parsed_move: record
                    .played
                    .map(|uci| uci.to_string())
                    .or_else(|| record.answer.clone()),
                verdict: record.verdict,
                prompt_tokens: call.prompt_tokens,
                completion_tokens: call.completion_tokens,
                finish_reason: call.finish_reason,
                latency_ms: call.latency_ms,
                attempts: call.attempts,
                cached: call.cached,
                error: call.error,
            }
        });
    write_jsonl(&dir.join("calls.jsonl"), calls)
}

/// `runtime.json`: the figures that vary between reruns.
#[derive(Serialize)]
struct Runtime {
    wall_seconds: f64,
    http_requests: u64,
    cached_calls: usize,
    fresh_calls: usize,
    latency_ms_mean: Option<f64>,
    latency_ms_median: Option<f64>,
    maia_cached_positions: Option<usize>,
    maia_computed_positions: Option<usize>,
    regret_cached_searches: Option<usize>,
    regret_searches: Option<usize>,
}

/// `runtime.json`: the figures that vary between reruns (wall time,
/// requests, cache hits, latencies).
fn write_runtime(dir: &Path, output: &RunOutput, wall: Duration) -> Result<()> {
    let latencies: Vec<f64> = output
        .answers
        .iter()
        .filter_map(|a| a.call.as_ref())
        .filter(|c| !c.cached)
        .map(|c| c.latency_ms as f64)
        .collect();
    let cached = output
        .answers
        .iter()
        .filter(|a| a.call.as_ref().is_some_and(|c| c.cached))
        .count();
    let runtime = Runtime {
        wall_seconds: wall.as_secs_f64(),
        http_requests: output.http_requests,
        cached_calls: cached,
        fresh_calls: latencies.len(),
        latency_ms_mean: mean(&latencies),
        latency_ms_median: median(&latencies),
        maia_cached_positions: output.maia_positions.map(|(cached, _)| cached),
        maia_computed_positions: output.maia_positions.map(|(_, run)| run),
        regret_cached_searches: output.regret_searches.map(|(cached, _)| cached),
        regret_searches: output.regret_searches.map(|(_, searched)| searched),
    };
    write_atomic(
        &dir.join("runtime.json"),
        (serde_json::to_string_pretty(&runtime)? + "\n").as_bytes(),
    )
}

/// The command's summary: a human line and the headline figures.
fn command_summary(
    dir: &Path,
    run: &RunInfo,
    output: &RunOutput,
    b: &Breakdowns,
) -> Report<EvalSummary> {
    let o = &b.overall;
    let equivalent = output
        .ladder
        .as_ref()
        .map(|l| ladder::human_equivalent(l, o));
    let mut human = format!(
        "eval {}: {} puzzles, {} positions -> puzzle accuracy {} (± {}), position accuracy {}, illegal {}, unparseable {}, mean score loss {} (mean regret {} cp, median {} cp)\nreport: {}",
        run.model,
        o.puzzles,
        o.positions,
        pct(o.puzzle_accuracy),
        pct(o.puzzle_accuracy_se),
        pct(o.position_accuracy),
        pct(o.illegal_rate),
        pct(o.unparseable_rate),
        fmt_loss(o.mean_score_loss),
        fmt_opt(o.mean_regret),
        fmt_opt(o.median_regret),
        dir.join("report.md").display()
    );
    if let Some(r) = &output.puzzle_rating {
        let _ = write!(
            human,
            "\npuzzle rating (Lichess scale): {}",
            r.overall.label()
        );
    }
    if let Some(e) = &equivalent {
        let _ = write!(
            human,
            "\nhuman-equivalent rating (Maia ladder): {}",
            super::ladder::label_with_interval(e)
        );
    }
    let record = EvalSummary {
        puzzles: o.puzzles,
        headline: Headline::of(o),
        run_dir: dir.display().to_string(),
        http_requests: output.http_requests,
        puzzle_rating: output.puzzle_rating.clone(),
        human_equivalent_rating: equivalent.map(|e| EquivalentRating {
            label: e.label,
            rating: e.rating,
        }),
    };
    Report::new(human, record)
}

/// The run's `report.md`: the headline table, the verdicts and notes, the
/// pictures (the ladder's with its section), then one table per breakdown.
fn markdown(
    run: &RunInfo,
    output: &RunOutput,
    b: &Breakdowns,
    verdicts: &BTreeMap<&str, usize>,
    usage: &Usage,
    pictures: &[(&str, &str)],
) -> String {
    let mut md = String::new();
    let o = &b.overall;
    let _ = writeln!(md, "# Eval: {}\n", run.model);
    let _ = writeln!(
        md,
        "Set `{}` ({} split), sha256 `{}`; templates {}; {} puzzles, {} positions, {} repeat(s).\n",
        run.set,
        run.split,
        run.set_sha256,
        run.templates.join(", "),
        run.puzzles,
        run.positions,
        run.config.repeats
    );
    headline_table(&mut md, output, o, usage);
    let _ = writeln!(md, "\nVerdicts: {}\n", {
        let parts: Vec<String> = verdicts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        parts.join(", ")
    });
    if o.regret_positions > 0 {
        md.push_str(SCORE_LOSS_NOTE);
    }
    for note in &output.notes {
        let _ = writeln!(md, "> {note}\n");
    }
    // The ladder's picture goes with its section.
    let top: Vec<&(&str, &str)> = pictures
        .iter()
        .filter(|(_, file)| *file != LADDER_PICTURE)
        .collect();
    if !top.is_empty() {
        for (title, file) in top {
            let _ = writeln!(md, "![{title}]({file})");
        }
        md.push('\n');
    }
    if let Some(l) = &output.ladder {
        let picture = pictures
            .iter()
            .any(|(_, file)| *file == LADDER_PICTURE)
            .then_some(LADDER_PICTURE);
        ladder::ladder_markdown(&mut md, l, &run.model, b, picture);
    }
    breakdown_tables(&mut md, b);
    md
}

/// The overall metrics as a two-column table, with the tokens and cost.
fn headline_table(md: &mut String, output: &RunOutput, o: &CellMetrics, usage: &Usage) {
    let Usage {
        prompt_tokens,
        completion_tokens,
        cost,
    } = usage;
    let _ = writeln!(md, "| metric | value |\n|---|---|");
    let _ = writeln!(
        md,
        "| puzzle accuracy | {} ± {} |",
        pct(o.puzzle_accuracy),
        pct(o.puzzle_accuracy_se)
    );
    let _ = writeln!(md, "| position accuracy | {} |", pct(o.position_accuracy));
    if let Some(r) = &output.puzzle_rating {
        let lengths: Vec<String> = r
            .by_length
            .iter()
            .map(|(length, rating)| format!("{length}: {}", rating.label()))
            .collect();
        let _ = writeln!(
            md,
            "| puzzle rating (Lichess scale, Glicko-2 fit) | {} |\n| puzzle rating by solver moves | {} |",
            r.overall.label(),
            lengths.join("; ")
        );
    }
    if let Some(l) = &output.ladder {
        let _ = writeln!(
            md,
            "| human-equivalent rating (Maia ladder) | {} |",
            ladder::human_equivalent(l, o).label
        );
    }
    let _ = writeln!(md, "| illegal rate | {} |", pct(o.illegal_rate));
    let _ = writeln!(md, "| unparseable rate | {} |", pct(o.unparseable_rate));
    let _ = writeln!(md, "| no-answer rate | {} |", pct(o.no_answer_rate));
    let _ = writeln!(
        md,
        "| mean score loss (0-1) | {} |",
        fmt_loss(o.mean_score_loss)
    );
    let _ = writeln!(md, "| mean regret (cp, raw) | {} |", fmt_opt(o.mean_regret));
    let _ = writeln!(md, "| median regret (cp) | {} |", fmt_opt(o.median_regret));
    let _ = writeln!(
        md,
        "| tokens (prompt / completion) | {prompt_tokens} / {completion_tokens} |"
    );
    let _ = writeln!(
        md,
        "| cost (USD) | {} |",
        cost.map_or_else(|| "-".into(), |c| format!("{c:.4}"))
    );
}

/// One table per breakdown dimension (`## By ...`), its cells in the
/// dimension's order.
fn breakdown_tables(md: &mut String, b: &Breakdowns) {
    for (dimension, cells) in &b.by {
        let _ = writeln!(md, "## By {}\n", dimension.replace('_', " "));
        let _ = writeln!(
            md,
            "| {dimension} | puzzles | puzzle acc. | ± se | positions | position acc. | illegal | unparseable | mean score loss | mean regret (cp) | median regret (cp) |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (cell, m) in metrics::ordered_cells(dimension, cells) {
            let _ = writeln!(
                md,
                "| {cell} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                m.puzzles,
                pct(m.puzzle_accuracy),
                pct(m.puzzle_accuracy_se),
                m.positions,
                pct(m.position_accuracy),
                pct(m.illegal_rate),
                pct(m.unparseable_rate),
                fmt_loss(m.mean_score_loss),
                fmt_opt(m.mean_regret),
                fmt_opt(m.median_regret)
            );
        }
        md.push('\n');
    }
}

/// How the report's regret figures read, under the headline table.
const SCORE_LOSS_NOTE: &str = "Score loss is the expected score (0 to 1) an answer gives up \
against the engine's best move: both evaluations turned into winning chances by Lichess's curve \
(2 / (1 + exp(-0.00368208 cp)) - 1, a mate counting as certain), as (1 + chances) / 2. An illegal \
or unparseable answer loses 1, the most any answer can. It is bounded, so compare players by it. \
The raw regret in cp counts a missed or allowed mate as 100,000 cp and an invalid answer as \
200,000 cp (the APO paper's penalties): a single such position can outweigh hundreds of others \
in the mean, so read the raw mean beside the score loss, never instead of it.\n\n";

//! Writing a run: `report.json` (deterministic: no timestamps, no
//! latencies), `report.md`, `positions.jsonl`, `calls.jsonl`,
//! `config.json`, `runtime.json` (wall time, latencies, request counts:
//! the figures that vary between reruns) and SVG pictures.

use anyhow::{Context, Result};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use super::config::EvalConfig;
use super::ladder::{self, Ladder};
use super::metrics::{self, Breakdowns, CellMetrics, PositionRecord, breakdowns};
use super::players::Answer;
use super::puzzle_rating::PuzzleRatingReport;
use super::task::Job;
use super::task::PositionTask;
use crate::core::fileio::{AtomicFile, write_atomic};
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

fn pct(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

/// Headline keys of a breakdown cell, for report.json and the command's
/// summary.
#[derive(Serialize, Debug, Clone)]
struct Headline {
    puzzles: usize,
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
            puzzles: m.puzzles,
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

    let report = report_json(run, output, &b, &verdicts, &usage)?;
    let report_text = serde_json::to_string_pretty(&report)? + "\n";
    write_atomic(&dir.join("report.json"), report_text.as_bytes())?;
    write_atomic(
        &dir.join("config.json"),
        (serde_json::to_string_pretty(run)? + "\n").as_bytes(),
    )?;
    write_jsonl(&dir.join("positions.jsonl"), records)?;
    write_calls(dir, output, tasks)?;
    write_runtime(dir, output, wall)?;
    let pictures = draw_pictures(
        dir,
        run,
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
/// breakdown (no timings: those go to `runtime.json`).
fn report_json(
    run: &RunInfo,
    output: &RunOutput,
    b: &Breakdowns,
    verdicts: &BTreeMap<&str, usize>,
    usage: &Usage,
) -> Result<Value> {
    let per_repeat = per_repeat_accuracy(&output.records, run.config.repeats);
    let mut report = json!({
        "model": run.model,
        "set": run.set,
        "split": run.split,
        "set_sha256": run.set_sha256,
        "templates": run.templates,
        "puzzles": run.puzzles,
        "repeats": run.config.repeats,
    });
    let head = serde_json::to_value(Headline::of(&b.overall))?;
    if let (Value::Object(map), Value::Object(head)) = (&mut report, head) {
        map.extend(head);
        map.insert("verdicts".into(), json!(verdicts));
        map.insert("per_repeat_puzzle_accuracy".into(), json!(per_repeat));
        map.insert(
            "usage".into(),
            json!({
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cost_usd": usage.cost,
            }),
        );
        map.insert("puzzle_rating".into(), json!(output.puzzle_rating));
        map.insert(
            "engine".into(),
            json!(output.engine.as_ref().map(|engine| &engine.id)),
        );
        let pins = Pins {
            engine: output.engine.clone(),
            maia_nets: output.nets.clone(),
            rating_model: run.rating_model.clone(),
        };
        map.insert("pins".into(), serde_json::to_value(pins)?);
        // The ladder records its nine nets (human_ladder.nets); a Maia
        // player without it records its own net here.
        if output.ladder.is_none() && !output.nets.is_empty() {
            map.insert("maia_nets".into(), json!(output.nets));
        }
        map.insert("notes".into(), json!(output.notes));
        map.insert("breakdowns".into(), json!(b.by));
        map.insert(
            "human_ladder".into(),
            output
                .ladder
                .as_ref()
                .map_or(Value::Null, |l| ladder::ladder_json(l, &run.model, b)),
        );
        map.insert("config".into(), serde_json::to_value(run)?);
    }
    Ok(report)
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
            let parsed_move = record
                .played
                .map(|uci| uci.to_string())
                .or_else(|| record.answer.clone());
            json!({
                "puzzle_id": record.puzzle_id,
                "move_index": tasks[job.task].move_index,
                "template": record.template,
                "repeat": job.repeat,
                "prompt_hash": answer.request_key,
                "reply": answer.reply,
                "parsed_move": parsed_move,
                "verdict": record.verdict,
                "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "finish_reason": call.finish_reason,
                "latency_ms": call.latency_ms,
                "attempts": call.attempts,
                "cached": call.cached,
                "error": call.error,
            })
        });
    write_jsonl(&dir.join("calls.jsonl"), calls)
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
    let runtime = json!({
        "wall_seconds": wall.as_secs_f64(),
        "http_requests": output.http_requests,
        "cached_calls": cached,
        "fresh_calls": latencies.len(),
        "latency_ms_mean": metrics::mean(&latencies),
        "latency_ms_median": metrics::median(&latencies),
        "maia_cached_positions": output.maia_positions.map(|(cached, _)| cached),
        "maia_computed_positions": output.maia_positions.map(|(_, run)| run),
        "regret_cached_searches": output.regret_searches.map(|(cached, _)| cached),
        "regret_searches": output.regret_searches.map(|(_, searched)| searched),
    });
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

/// Regret histogram bins (upper bounds, cp) and labels.
const REGRET_BINS: [(f64, &str); 8] = [
    (0.0, "0"),
    (50.0, "1-50"),
    (100.0, "51-100"),
    (300.0, "101-300"),
    (1000.0, "301-1000"),
    (99_999.0, ">1000"),
    (metrics::MATE_PENALTY_CP, "mate"),
    (f64::INFINITY, "invalid"),
];

/// Draws the pictures that mean something for this run and returns their
/// (title, file name), in the order the report shows them: accuracy by
/// rating when some puzzle is rated, the regret histogram when regret was
/// computed, the illegal rate by template when the run compared two or
/// more prompt templates (a baseline player has none: its one template,
/// `none`, would make a bar chart of nothing).
fn draw_pictures(
    dir: &Path,
    run: &RunInfo,
    b: &Breakdowns,
    records: &[PositionRecord],
    human_ladder: Option<&Ladder>,
    output_rating: Option<&PuzzleRatingReport>,
) -> Result<Vec<(&'static str, &'static str)>> {
    let mut drawn = Vec::new();
    let rating_cells = b.by.get("rating_bin").cloned().unwrap_or_default();
    let rating: Vec<(&String, &CellMetrics)> = metrics::ordered_cells("rating_bin", &rating_cells)
        .into_iter()
        .filter(|(cell, _)| cell.as_str() != "unrated")
        .collect();
    if !rating.is_empty() {
        let labels: Vec<String> = rating.iter().map(|(cell, _)| (*cell).clone()).collect();
        let values: Vec<f64> = rating.iter().map(|(_, m)| m.puzzle_accuracy).collect();
        let errors: Vec<f64> = rating.iter().map(|(_, m)| m.puzzle_accuracy_se).collect();
        let (title, file) = ("Puzzle accuracy by rating", "accuracy_by_rating.svg");
        bar_chart(
            &dir.join(file),
            "Puzzle accuracy by rating (± 1 se)",
            &labels,
            &values,
            Some(&errors),
            1.0,
            "puzzle accuracy",
        )?;
        drawn.push((title, file));
    }

    let mut counts = [0f64; REGRET_BINS.len()];
    let mut total = 0f64;
    for r in records {
        if let Some(regret) = r.regret_cp {
            let bin = REGRET_BINS
                .iter()
                .position(|(upper, _)| regret <= *upper)
                .unwrap_or(REGRET_BINS.len() - 1);
            counts[bin] += 1.0;
            total += 1.0;
        }
    }
    if total > 0.0 {
        let shares: Vec<f64> = counts.iter().map(|c| c / total).collect();
        let labels: Vec<String> = REGRET_BINS.iter().map(|(_, l)| l.to_string()).collect();
        let (title, file) = ("Regret per position", "regret_distribution.svg");
        bar_chart(
            &dir.join(file),
            "Regret per position (cp; mate: a missed or allowed mate; invalid: illegal or unparseable)",
            &labels,
            &shares,
            None,
            1.0,
            "share of positions",
        )?;
        drawn.push((title, file));
    }

    if run.templates.len() >= 2 {
        let templates = b.by.get("template").cloned().unwrap_or_default();
        let labels: Vec<String> = templates.keys().cloned().collect();
        let values: Vec<f64> = templates.values().map(|m| m.illegal_rate).collect();
        let top = values.iter().cloned().fold(0.0, f64::max).max(0.05) * 1.15;
        let (title, file) = (
            "Illegal-move rate by template",
            "illegal_rate_by_template.svg",
        );
        bar_chart(
            &dir.join(file),
            title,
            &labels,
            &values,
            None,
            top.min(1.0),
            "illegal rate",
        )?;
        drawn.push((title, file));
    }
    if let Some(r) = &output_rating
        && puzzle_rating_chart(&dir.join(RATING_PICTURE), r, run.config.rating_bin_width)?
    {
        drawn.push(("Puzzle rating", RATING_PICTURE));
    }
    if let Some(l) = human_ladder
        && ladder::draw_ladder(&dir.join(LADDER_PICTURE), l, &run.model, b)?
    {
        drawn.push(("Human ladder", LADDER_PICTURE));
    }
    // A picture an earlier run into this folder drew, and this one does
    // not, would be read as this run's.
    for file in PICTURES {
        if !drawn.iter().any(|(_, f)| *f == file) {
            let path = dir.join(file);
            if path.exists() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
    }
    Ok(drawn)
}

/// The human ladder's picture (accuracy by rating bin of the nine Maia
/// nets and the player; the human-equivalent rating).
const LADDER_PICTURE: &str = "human_ladder.svg";

/// The puzzle rating's picture: the solve rate by rating bin beside the
/// fitted Glicko-2 curve.
const RATING_PICTURE: &str = "puzzle_rating.svg";

/// Every picture a report may hold.
const PICTURES: [&str; 5] = [
    "accuracy_by_rating.svg",
    RATING_PICTURE,
    "regret_distribution.svg",
    "illegal_rate_by_template.svg",
    LADDER_PICTURE,
];

/// How the report's regret figures read, under the headline table.
const SCORE_LOSS_NOTE: &str = "Score loss is the expected score (0 to 1) an answer gives up \
against the engine's best move: both evaluations turned into winning chances by Lichess's curve \
(2 / (1 + exp(-0.00368208 cp)) - 1, a mate counting as certain), as (1 + chances) / 2. An illegal \
or unparseable answer loses 1, the most any answer can. It is bounded, so compare players by it. \
The raw regret in cp counts a missed or allowed mate as 100,000 cp and an invalid answer as \
200,000 cp (the APO paper's penalties): a single such position can outweigh hundreds of others \
in the mean, so read the raw mean beside the score loss, never instead of it.\n\n";

/// A bar chart with optional ± error bars, as an SVG file.
pub(crate) fn bar_chart(
    path: &Path,
    title: &str,
    labels: &[String],
    values: &[f64],
    errors: Option<&[f64]>,
    y_max: f64,
    y_label: &str,
) -> Result<()> {
    const WIDTH: u32 = 900;
    const FONT: f64 = 11.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let n = labels.len().max(1);
        // Labels wider than their bar's slot (24 rating bins'
        // `(2700, 2800]`) would overlap: every `every`-th bar is labelled,
        // the first included, so that each label sits under its own bar.
        let slot = f64::from(WIDTH - 2 * 15 - 60) / n as f64;
        let every = label_step(labels, FONT, slot);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(70)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n).into_segmented(), 0f64..y_max)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_style(("sans-serif", FONT))
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) if i % every == 0 => {
                    labels.get(*i).cloned().unwrap_or_default()
                }
                _ => String::new(),
            })
            .y_desc(y_label)
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), *v),
                    ],
                    BLUE.mix(0.5).filled(),
                )
            }))
            .map_err(plot_error)?;
        if let Some(errors) = errors {
            chart
                .draw_series(values.iter().zip(errors).enumerate().map(|(i, (v, e))| {
                    ErrorBar::new_vertical(
                        SegmentValue::CenterOf(i),
                        (v - e).max(0.0),
                        *v,
                        (v + e).min(y_max),
                        BLACK.filled(),
                        8,
                    )
                }))
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    write_atomic(path, svg.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// The solve rate of the attempts in each rating bin (± 1 se), at the
/// bin's mean puzzle rating, beside the fitted rating's Glicko-2 curve (at
/// the attempts' median puzzle deviation). False when there is nothing to
/// draw.
fn puzzle_rating_chart(path: &Path, report: &PuzzleRatingReport, bin_width: i32) -> Result<bool> {
    let width = f64::from(bin_width.max(1));
    let mut bins: BTreeMap<i64, (f64, f64, f64)> = BTreeMap::new();
    for a in &report.attempts {
        let bin = bins.entry((a.rating / width).floor() as i64).or_default();
        bin.0 += 1.0;
        bin.1 += a.score;
        bin.2 += a.rating;
    }
    if bins.is_empty() {
        return Ok(false);
    }
    let points: Vec<(f64, f64, f64)> = bins
        .values()
        .map(|(n, solved, sum)| {
            let rate = solved / n;
            (sum / n, rate, (rate * (1.0 - rate) / n).sqrt())
        })
        .collect();
    let mut deviations: Vec<f64> = report.attempts.iter().map(|a| a.deviation).collect();
    deviations.sort_by(f64::total_cmp);
    let deviation = deviations[deviations.len() / 2];
    let lowest = points.first().map_or(0.0, |p| p.0) - width;
    let highest = points.last().map_or(0.0, |p| p.0) + width;
    let rating = report.overall.rating;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Solve rate by puzzle rating (± 1 se) and the fitted rating {}",
                    report.overall.label()
                ),
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(lowest..highest, 0f64..1.0)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc("puzzle rating")
            .y_desc("solve rate")
            .x_labels(10)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(plot_error)?;
        let steps = 200;
        chart
            .draw_series(LineSeries::new(
                (0..=steps).map(|i| {
                    let x = lowest + (highest - lowest) * f64::from(i) / f64::from(steps);
                    (
                        x,
                        super::puzzle_rating::expected_score(rating, x, deviation),
                    )
                }),
                RED.stroke_width(2),
            ))
            .map_err(plot_error)?;
        chart
            .draw_series(points.iter().map(|(x, rate, se)| {
                ErrorBar::new_vertical(
                    *x,
                    (rate - se).max(0.0),
                    *rate,
                    (rate + se).min(1.0),
                    BLUE.filled(),
                    8,
                )
            }))
            .map_err(plot_error)?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|(x, rate, _)| Circle::new((*x, *rate), 4, BLUE.filled())),
            )
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    write_atomic(path, svg.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// Every how many bars a label fits: labels about 0.6 em wide a
/// character, with a little room between them, in `slot` pixels a bar.
fn label_step(labels: &[String], font: f64, slot: f64) -> usize {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = longest as f64 * font * 0.6 + 8.0;
    ((width / slot.max(1.0)).ceil() as usize).max(1)
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 24 rating bins on the report's chart: every third is labelled, so
    /// no two labels overlap; a few short labels are all shown.
    #[test]
    fn crowded_axis_labels_are_thinned_so_none_overlap() {
        let bins: Vec<String> = (4..28)
            .map(|h| format!("({}, {}]", h * 100, h * 100 + 100))
            .collect();
        let slot = 810.0 / 24.0;
        let every = label_step(&bins, 11.0, slot);
        assert_eq!(every, 3);
        // Label centres `every` slots apart leave room for the longest.
        assert!(every as f64 * slot >= 12.0 * 11.0 * 0.6);
        let few: Vec<String> = ["easy", "human", "hard"].map(String::from).to_vec();
        assert_eq!(label_step(&few, 11.0, 810.0 / 3.0), 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let values = vec![0.5; bins.len()];
        bar_chart(&path, "t", &bins, &values, None, 1.0, "y").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("(400, 500]") && svg.contains("(700, 800]"));
        assert!(!svg.contains("(500, 600]") && !svg.contains("(600, 700]"));
    }
}

//! The run's closing text: the stages' table as each stage ends, and
//! what a run says when it is done (the `run` summary, `run --json`'s
//! record): the generation, a shard's line, what it made and the command
//! that fills what it left unfilled, the eval's result, `--strict`'s
//! unfilled cells, and the summary of a generation that fell short.
//! Apart from the runner, which decides what runs; this only words it.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::generate::{CellReport, GenerateSummary, Generated};
use crate::pipeline::aim::AimArgs;
use crate::pipeline::stage::RunContext;
use crate::stages::StageName;
use crate::stages::release::cells::{cell_label, first_of};
use crate::stages::release::folder::holding_folder;
use crate::stages::release::manifest::{Counts, MANIFEST_FILE, ReleaseManifest, UnfilledCell};

/// A run that got through its stages, as its closing text tells it.
pub(crate) struct FinishedRun<'a> {
    pub ctx: &'a RunContext,
    pub release: &'a str,
    /// The generation, under `[generate]`.
    pub generated: Option<&'a Generated>,
    /// `run --shard`: the shard, and the stages it left for `merge`.
    pub shard: Option<(Shard, Vec<StageName>)>,
    /// The flags a hint's command repeats.
    pub hint_flags: HintFlags<'a>,
    /// `run --strict`.
    pub strict: bool,
}

/// The summary of a run that got through its stages (`human`, `report`:
/// the stages' table and their entries): the generation, the shard's
/// line, what it made and the eval's result, and under `--strict` the
/// target's unfilled cells (the error naming them, as its shortfall).
pub(crate) fn run_summary(
    run: FinishedRun<'_>,
    mut human: String,
    report: Vec<StageReport>,
) -> Result<Summary> {
    let FinishedRun {
        ctx,
        release,
        generated,
        shard,
        hint_flags,
        strict,
    } = run;
    let eval_line = eval_result_line(&report);
    let mut record = RunSummary {
        release: release.to_string(),
        release_dir: ctx.release_dir.clone(),
        stages: Some(report),
        generate: None,
        error: None,
        shard: None,
        left_for_merge: None,
        strict: None,
    };
    if let Some(generated) = generated {
        human.push_str(&generated.human());
        record.generate = Some(generated.summary());
    }
    if let Some((shard, left_for_merge)) = shard {
        human.push_str(&shard_line(&shard, &left_for_merge));
        record.shard = Some(shard);
        record.left_for_merge = Some(left_for_merge);
    }
    human.push_str(&what_it_made(ctx, generated, release, &hint_flags)?);
    human.push_str(&eval_line);
    let mut shortfall = None;
    if strict {
        let (error, strict) = strict_shortfall(ctx, generated)?;
        shortfall = error;
        record.strict = Some(strict);
    }
    let mut summary = Summary::new(human, serde_json::to_value(&record)?);
    summary.shortfall = shortfall;
    Ok(summary)
}

impl StageReport {
    /// The stage's row of the run's table, as it ends (a note first, for
    /// a stage that did its work; and the line saying why it was redone or
    /// kept, when there is one).
    pub(crate) fn ended_row(&self) -> String {
        // When the stage ended (or was found unchanged), in the summary
        // line too: the summary comes at the end of a cron log, and says
        // when each of its stages finished. Only the log holds times; no
        // release file does.
        let ended = crate::core::progress::timestamp(std::time::SystemTime::now());
        let counts = compact_counts(&self.counts);
        if !self.skipped {
            crate::core::progress::note(&format!(
                "stage {}: done in {:.1}s{}{counts}",
                self.stage,
                self.seconds,
                if counts.is_empty() { "" } else { ", " },
            ));
        }
        let mut row = format!(
            "  {:<16} {:<8} {:>8.1}s  {ended}  {counts}\n",
            self.stage,
            if self.skipped { "skipped" } else { "done" },
            self.seconds,
        );
        if let Some(why) = &self.why {
            row.push_str(&format!("    {why}\n"));
        }
        row
    }
}

/// The `run` summary (`run --json`): the release, each stage's report,
/// and as they apply the generation, the error a generation that fell
/// short ended with, the shard and `--strict`'s cells (absent keys where
/// they do not apply).
#[serde_with::skip_serializing_none]
#[derive(Serialize, Debug)]
struct RunSummary<'a> {
    release: String,
    release_dir: PathBuf,
    stages: Option<Vec<StageReport>>,
    generate: Option<GenerateSummary<'a>>,
    error: Option<String>,
    shard: Option<Shard>,
    left_for_merge: Option<Vec<StageName>>,
    strict: Option<StrictRecord>,
}

/// One stage's entry in `stages` of the `run` summary (and of `merge`'s).
#[derive(Serialize, Debug)]
pub(crate) struct StageReport {
    pub stage: StageName,
    pub skipped: bool,
    /// Wall seconds (under `[generate]`, with the stage's share of the
    /// generation's).
    pub seconds: f64,
    /// The stage's own counts.
    pub counts: Value,
    /// Why a stage with stored outputs was redone or kept, when the
    /// algorithm version decided it ("mine: redone, recorded algorithm
    /// mine-1, this build mine-2").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `strict` in the `run --strict` summary: the target's cells and its
/// unfilled ones.
#[derive(Serialize, Debug)]
struct StrictRecord {
    cells: usize,
    unfilled: UnfilledCells,
}

/// The unfilled cells `--strict` lists: `[generate]`'s (generated puzzles
/// only) or the release manifest's.
#[derive(Serialize, Debug)]
#[serde(untagged)]
enum UnfilledCells {
    Generated(Vec<CellReport>),
    Release(Vec<UnfilledCell>),
}

/// The run's last lines: what it made, the cells it left unfilled, and
/// the next command to fill them (nothing when no release was drawn);
/// `generated`: the generation, under `[generate]`.
fn what_it_made(
    ctx: &RunContext,
    generated: Option<&Generated>,
    release: &str,
    flags: &HintFlags<'_>,
) -> Result<String> {
    let dir = ctx.stage_dir(StageName::Release);
    let Some(manifest) = ReleaseManifest::load(&dir)? else {
        return Ok(String::new());
    };
    let mut text = made_line(&dir, &manifest.counts);
    if manifest.unfilled.is_empty() {
        return Ok(text);
    }
    let labels: Vec<String> = manifest
        .unfilled
        .iter()
        .map(|c| cell_label(&c.rating_bin, c.length, c.mate))
        .collect();
    text.push_str(&format!(
        "unfilled: {} cells ({}; manifest.json's \"unfilled\" lists them all)\n",
        labels.len(),
        first_of(&labels, 3).join(", ")
    ));
    // This release is finished and never changes: more puzzles go into a
    // new one, named here so that the commands run as written.
    let next = match generated {
        Some(generated) => next_generation(ctx, generated, release, flags),
        None => next_without_generation(ctx, &manifest, release, flags, &mut text),
    };
    text.push_str(&next);
    text.push('\n');
    Ok(text)
}

/// What the release in `dir` holds: its puzzles, its card and its cells.
fn made_line(dir: &Path, counts: &Counts) -> String {
    format!(
        "made: {} train + {} test puzzles in {} (its card: {}), {} of {} cells filled\n",
        counts.train,
        counts.test,
        dir.display(),
        dir.join("README.md").display(),
        counts.cells - counts.unfilled_cells,
        counts.cells,
    )
}

/// The next command after a generated release left cells unfilled: a
/// larger budget when the budget stopped it, else a plan of a new
/// release's cost.
fn next_generation(
    ctx: &RunContext,
    generated: &Generated,
    release: &str,
    flags: &HintFlags<'_>,
) -> String {
    let config = flags.text();
    if generated.stop_is_budget() {
        format!(
            "next: raise [generate] max_games or max_cpu_hours in {} (the cost above says how far) and run `puzzleforge run{config} --release {}`: it reuses the games already played ({release} is finished and never changes)",
            flags.config.display(),
            fresh_release_name(ctx, &format!("{release}-next")),
        )
    } else {
        format!(
            "next: `puzzleforge run{config} --plan --release {}` projects what a new release of the target costs, reusing the games already played",
            fresh_release_name(ctx, &format!("{release}-next")),
        )
    }
}

/// The next command after a release drawn from the puzzle sources alone
/// left cells unfilled: the sources are the limit (for an aimed tier, a
/// line saying so goes into `text` first); a larger source, or generation
/// into a new release.
fn next_without_generation(
    ctx: &RunContext,
    manifest: &ReleaseManifest,
    release: &str,
    flags: &HintFlags<'_>,
    text: &mut String,
) -> String {
    let config = flags.text();
    let fresh = fresh_release_name(ctx, &format!("{release}-generated"));
    // The candidates the sources held for the target's cells, and
    // the puzzles those cells want.
    let available: usize = manifest.cells.iter().map(|c| c.available).sum();
    let wanted: usize = manifest
        .cells
        .iter()
        .map(|c| c.wanted_train + c.wanted_test)
        .sum();
    if manifest.aim.is_some() {
        // An aimed tier is a narrow band: what limits it is how few
        // of the sources' puzzles fall inside it, said plainly.
        text.push_str(&format!(
            "the pool is the limit: {available} candidate puzzle{} in the aimed band, cells need {wanted}; add puzzle sources or turn on generation\n",
            if available == 1 { "" } else { "s" }
        ));
    }
    let limit = if available == 0 {
        format!(
            "the puzzle sources are the limit: they hold no puzzle for any of the {} cells",
            manifest.counts.cells
        )
    } else {
        "the puzzle sources hold too few puzzles for them".to_string()
    };
    format!(
        "next: {limit}: point [sources] puzzles in {path} at the full Lichess dump (lichess_db_puzzle.csv.zst), or generate them into a new release: see the cost with `puzzleforge run{config} --plan --release {fresh}`, then set [generate] enabled = true in {path} and run `puzzleforge run{config} --release {fresh}` (leave ingest_puzzles and ingest_games out of pipeline.stages for an all-generated release)",
        path = flags.config.display()
    )
}

/// The flags of `run` that a hint's command repeats: the config (when it
/// is not the default) and the flags that chose the tier, so that the
/// command plans (or makes) the same tier from the same config.
pub(crate) struct HintFlags<'a> {
    /// `--config`.
    pub config: &'a Path,
    /// `--tier`.
    pub tier: Option<&'a str>,
    /// `--aim` and `--solve-rate`.
    pub aim: &'a AimArgs,
}

impl HintFlags<'_> {
    /// The flags as the command line gives them, each after a space.
    pub(crate) fn text(&self) -> String {
        let mut flags = match self.config.to_str() {
            Some(crate::pipeline::config::DEFAULT_CONFIG) => String::new(),
            _ => format!(" --config {}", self.config.display()),
        };
        if let Some(tier) = self.tier {
            flags.push_str(&format!(" --tier {tier}"));
        }
        if let (Some(aim), Some(rate)) = (&self.aim.aim, self.aim.solve_rate) {
            flags.push_str(&format!(" --aim {} --solve-rate {rate}", aim.display()));
        }
        flags
    }
}

/// The eval's result in one plain line (`eval: puzzle accuracy 60.2% ±
/// 2.1% (n=480 puzzles)`), read off the eval stage's counts; nothing when
/// the run has no eval stage or its counts lack the accuracy.
fn eval_result_line(report: &[StageReport]) -> String {
    let Some(counts) = report
        .iter()
        .find(|r| r.stage == StageName::Eval)
        .map(|r| &r.counts)
    else {
        return String::new();
    };
    let (Some(accuracy), Some(puzzles)) = (
        counts["puzzle_accuracy"].as_f64(),
        counts["puzzles"].as_u64(),
    ) else {
        return String::new();
    };
    let se = counts["puzzle_accuracy_se"]
        .as_f64()
        .map(|se| format!(" ± {:.1}%", se * 100.0))
        .unwrap_or_default();
    format!(
        "eval: puzzle accuracy {:.1}%{se} (n={puzzles} puzzles)\n",
        accuracy * 100.0
    )
}

/// A release name beside the release folder that no folder of the output
/// folder holds yet: `base`, else `base-2`, `base-3`, ...
fn fresh_release_name(ctx: &RunContext, base: &str) -> String {
    let output_dir = holding_folder(&ctx.release_dir);
    let base = base.to_string();
    (1..)
        .map(|n| match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        })
        .find(|name| std::fs::symlink_metadata(output_dir.join(name)).is_err())
        .unwrap_or(base)
}

/// A stage refused what generation made (too few puzzles for the
/// release, say): the games were played and paid for, so the run still
/// prints the generation summary (games, CPU, the cells unfilled and what
/// they would cost) before the error, and exits 2 as the error does. Any
/// other failure, or one without generation, is returned as it is.
pub(crate) fn generation_fell_short(
    ctx: &RunContext,
    generated: Option<&Generated>,
    release: &str,
    error: anyhow::Error,
) -> Result<Summary> {
    let Some(generated) = generated
        .filter(|_| crate::core::error::exit_code(&error) == crate::core::error::EXIT_BAD_INPUT)
    else {
        return Err(error);
    };
    let human = format!(
        "release {}\n{}",
        ctx.release_dir.display(),
        generated.human()
    );
    let record = RunSummary {
        release: release.to_string(),
        release_dir: ctx.release_dir.clone(),
        stages: None,
        generate: Some(generated.summary()),
        error: Some(format!("{error:#}")),
        shard: None,
        left_for_merge: None,
        strict: None,
    };
    let mut summary = Summary::new(human, serde_json::to_value(&record)?);
    summary.shortfall = Some(format!("{error:#}"));
    Ok(summary)
}

/// A shard's line of the summary: the stages it leaves for `merge`.
fn shard_line(shard: &Shard, left_for_merge: &[StageName]) -> String {
    format!(
        "  shard {}/{}: {} left for `puzzleforge merge`\n",
        shard.index,
        shard.count,
        if left_for_merge.is_empty() {
            "no stage".to_string()
        } else {
            StageName::list(left_for_merge.iter().copied())
        }
    )
}

/// `run --strict`: the target's cells and its unfilled ones, recorded in
/// the summary's `strict`, and the error naming the unfilled cells when
/// there are any. The target is `[generate]`'s (generated puzzles only)
/// when generation ran, else the release's `[release]` cells, read from
/// the release's manifest. `generated`: the generation, under
/// `[generate]`.
fn strict_shortfall(
    ctx: &RunContext,
    generated: Option<&Generated>,
) -> Result<(Option<String>, StrictRecord)> {
    // Each unfilled cell's label, the puzzles drawn for it and the puzzles
    // found (generated) for it.
    let (cells, unfilled, found_key) = match generated {
        Some(generated) => (
            generated.report.counts.cells,
            UnfilledCells::Generated(generated.report.counts.unfilled.clone()),
            "generated",
        ),
        None => {
            let dir = ctx.stage_dir(StageName::Release);
            let manifest = ReleaseManifest::load(&dir)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "run --strict: {} holds no release manifest",
                    dir.join(MANIFEST_FILE).display()
                )
            })?;
            (
                manifest.counts.cells,
                UnfilledCells::Release(manifest.unfilled),
                "found",
            )
        }
    };
    let labels: Vec<String> = match &unfilled {
        UnfilledCells::Generated(unfilled) => unfilled
            .iter()
            .map(|cell| {
                let label = cell_label(&cell.rating_bin, cell.length, cell.mate);
                let wanted = cell.wanted.train + cell.wanted.test;
                (label, cell.train + cell.test, wanted, cell.generated)
            })
            .collect::<Vec<_>>(),
        UnfilledCells::Release(unfilled) => unfilled
            .iter()
            .map(|cell| {
                let label = cell_label(&cell.rating_bin, cell.length, cell.mate);
                (label, cell.train + cell.test, cell.wanted, cell.found)
            })
            .collect(),
    }
    .into_iter()
    .map(|(label, drawn, wanted, found)| {
        format!("{label}: {drawn} of {wanted} drawn ({found} {found_key})")
    })
    .collect();
    let strict = StrictRecord { cells, unfilled };
    if labels.is_empty() {
        return Ok((None, strict));
    }
    let error = format!(
        "run --strict: {} of {} target cells unfilled: {}; the run's files are written in {}",
        labels.len(),
        strict.cells,
        first_of(&labels, 10).join("; "),
        ctx.release_dir.display()
    );
    Ok((Some(error), strict))
}

/// A stage's counts in one line: `name=value` for each number.
fn compact_counts(counts: &Value) -> String {
    // Counts as they are; fractions (an accuracy, CPU-hours) to 4
    // significant digits, as people read them.
    let figure = |value: &Value| match (value.as_i64(), value.as_u64(), value.as_f64()) {
        (None, None, Some(x)) => crate::generate::cost::round(x).to_string(),
        _ => value.to_string(),
    };
    match counts.as_object() {
        Some(map) => map
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, v)| format!("{k}={}", figure(v)))
            .collect::<Vec<_>>()
            .join(" "),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A stage's counts read short: whole counts as they are, fractions
    /// to 4 significant digits.
    #[test]
    fn stage_counts_are_rounded_for_people() {
        let counts = json!({"puzzles": 201, "puzzle_accuracy": 0.9651741293532339, "note": "x"});
        assert_eq!(
            compact_counts(&counts),
            "puzzles=201 puzzle_accuracy=0.9652"
        );
    }
}

//! What verify counts over a set of verdicts and the stage's JSON summary:
//! the pass counts, the margin table and the totals a run sums over its
//! files. Apart from the checks because a run's totals are built from
//! verdicts already made.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

use super::check::Verdict;
use super::config::{Policy, SecondEngineConfig, VerifyConfig};
use crate::core::summary::{Report, Summary};

/// The margins the summary tabulates: how many puzzles that pass the deeper
/// check keep each margin, and how many of those the second engine confirms.
const MARGIN_STEPS_CP: [i32; 4] = [0, 25, 50, 100];

/// What verify counts over a set of verdicts: one file's, or a run's, whose
/// totals are the sum of its files' (`+=`). The field names are the keys
/// of the summary's JSON and of the stage's `verify.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyCounts {
    pub puzzles: u64,
    pub checked: u64,
    pub best_holds: u64,
    pub best_and_criterion_hold: u64,
    pub not_checkable: u64,
    pub margin_fails: u64,
    pub second_engine_pass: u64,
    pub second_engine_fail: u64,
    pub verified: u64,
    pub failed: u64,
    /// One row per [`MARGIN_STEPS_CP`]; empty before any file is counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub margins: Vec<MarginRow>,
}

/// Of the Epoch puzzles that pass the deeper check: how many keep at least
/// `min_margin_cp`, and how many of those the second engine confirms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarginRow {
    pub min_margin_cp: i32,
    pub kept: u64,
    pub second_confirms: u64,
}

impl VerifyCounts {
    /// The counts of `verdicts`.
    pub fn of(verdicts: &[Verdict]) -> Self {
        let count =
            |keep: &dyn Fn(&Verdict) -> bool| verdicts.iter().filter(|v| keep(v)).count() as u64;
        let puzzles = verdicts.len() as u64;
        let checked = count(&|v| v.error.is_none());
        let verified = count(&|v| v.verified());
        Self {
            puzzles,
            checked,
            best_holds: count(&|v| v.best_holds),
            best_and_criterion_hold: count(&|v| v.deeper_holds()),
            not_checkable: puzzles - checked,
            margin_fails: count(&|v| !v.margin_holds),
            second_engine_pass: count(&|v| v.second_holds == Some(true)),
            second_engine_fail: count(&|v| v.second_holds == Some(false)),
            verified,
            failed: puzzles - verified,
            margins: margin_table(verdicts),
        }
    }
}

impl std::ops::AddAssign<&VerifyCounts> for VerifyCounts {
    fn add_assign(&mut self, other: &VerifyCounts) {
        self.puzzles += other.puzzles;
        self.checked += other.checked;
        self.best_holds += other.best_holds;
        self.best_and_criterion_hold += other.best_and_criterion_hold;
        self.not_checkable += other.not_checkable;
        self.margin_fails += other.margin_fails;
        self.second_engine_pass += other.second_engine_pass;
        self.second_engine_fail += other.second_engine_fail;
        self.verified += other.verified;
        self.failed += other.failed;
        if self.margins.is_empty() {
            self.margins = other.margins.clone();
            return;
        }
        // Every table has one row per margin step, in the same order.
        for (row, theirs) in self.margins.iter_mut().zip(&other.margins) {
            row.kept += theirs.kept;
            row.second_confirms += theirs.second_confirms;
        }
    }
}

/// The summary of one verify run (the human lines and the JSON), and the
/// counts it shows, typed.
pub(crate) fn summarize(
    config: &VerifyConfig,
    verdicts: &[Verdict],
    unreadable: &[String],
    report: &Path,
) -> Result<(Summary, VerifyCounts)> {
    let counts = VerifyCounts::of(verdicts);
    let mut human = format!(
        "verify: {} puzzles, {} checked at {}x nodes: best move holds {}, best move and criterion hold {}; {} not checkable, {} unreadable rows -> {}",
        counts.puzzles,
        counts.checked,
        config.factor,
        counts.best_holds,
        counts.best_and_criterion_hold,
        counts.not_checkable,
        unreadable.len(),
        report.display()
    );
    if config.second_engine.is_some() {
        human.push_str(&format!(
            "\n  second engine: {} confirm, {} reject",
            counts.second_engine_pass, counts.second_engine_fail
        ));
    }
    human.push_str(&format!(
        "\n  margin below the minimum: {}; verified (every check): {}, failing: {} (policy {})",
        counts.margin_fails,
        counts.verified,
        counts.failed,
        serde_json::to_value(config.policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    ));
    for row in &counts.margins {
        human.push_str(&format!(
            "\n  epoch margin >= {:>3} cp: {} puzzles, second engine confirms {}",
            row.min_margin_cp, row.kept, row.second_confirms
        ));
    }
    for problem in unreadable.iter().take(10) {
        human.push_str(&format!("\n  {problem}"));
    }
    let record = VerifySummary {
        command: "verify",
        puzzles: counts.puzzles,
        checked: counts.checked,
        factor: config.factor,
        best_holds: counts.best_holds,
        best_and_criterion_hold: counts.best_and_criterion_hold,
        not_checkable: counts.not_checkable,
        unreadable_rows: unreadable.len(),
        margin_fails: counts.margin_fails,
        second_engine_pass: counts.second_engine_pass,
        second_engine_fail: counts.second_engine_fail,
        verified: counts.verified,
        failed: counts.failed,
        policy: config.policy,
        margins: &counts.margins,
        report: report.display().to_string(),
    };
    let summary = Report::new(human, record).into_summary()?;
    Ok((summary, counts))
}

/// The summary of one verify run (`verify --json`, and the verify stage's
/// summary).
#[derive(Serialize)]
struct VerifySummary<'a> {
    command: &'static str,
    puzzles: u64,
    checked: u64,
    factor: u64,
    best_holds: u64,
    best_and_criterion_hold: u64,
    not_checkable: u64,
    unreadable_rows: usize,
    margin_fails: u64,
    second_engine_pass: u64,
    second_engine_fail: u64,
    verified: u64,
    failed: u64,
    policy: Policy,
    /// Every row, even none (unlike [`VerifyCounts`], which leaves out an
    /// empty table).
    margins: &'a [MarginRow],
    report: String,
}

/// Of the Epoch puzzles that pass the deeper check: how many keep each of
/// [`MARGIN_STEPS_CP`], and how many of those the second engine confirms.
fn margin_table(verdicts: &[Verdict]) -> Vec<MarginRow> {
    MARGIN_STEPS_CP
        .iter()
        .map(|&step| {
            let kept: Vec<&Verdict> = verdicts
                .iter()
                .filter(|v| v.deeper_holds() && v.margin_cp.is_some_and(|m| m >= step))
                .collect();
            let confirmed = kept.iter().filter(|v| v.second_holds == Some(true)).count();
            MarginRow {
                min_margin_cp: step,
                kept: kept.len() as u64,
                second_confirms: confirmed as u64,
            }
        })
        .collect()
}

/// The `verify` stage's `verify.json`: its settings, the counts summed
/// over its files, and each file's own summary.
#[derive(Serialize)]
pub(crate) struct VerifyTotals {
    pub(crate) factor: u64,
    pub(crate) policy: Policy,
    pub(crate) second_engine: Option<String>,
    pub(crate) second_engine_settings: Option<SecondEngineConfig>,
    #[serde(flatten)]
    pub(crate) counts: VerifyCounts,
    pub(crate) files: Vec<VerifyFileSummary>,
}

/// One file of `verify.json`: the verified puzzles, the verdicts and the
/// file's counts (named, not pathed: the release manifest embeds this
/// file, and its bytes must not depend on where the release folder is).
#[derive(Serialize)]
pub(crate) struct VerifyFileSummary {
    pub(crate) input: String,
    pub(crate) report: String,
    pub(crate) counts: serde_json::Value,
}

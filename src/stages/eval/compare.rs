//! `puzzleforge compare RUN_A RUN_B`: per-metric and per-cell differences
//! between two eval runs, each with a one-sided test of "B is better than
//! A" (higher accuracy; lower illegal/unparseable rate and score loss).
//!
//! Two runs on the same puzzles are paired: each puzzle (or position) is
//! scored by both, so the tests compare them puzzle by puzzle, which an
//! unpaired test cannot: an exact McNemar test on the 0/1 metrics (solved
//! or not, correct, illegal, unparseable: the binomial test of the pairs
//! where the runs differ) and a paired t-test on the score loss. Records
//! that pair with none of the other run's (different puzzle sets) fall
//! back to a one-sided Welch t-test, as the APO paper's tables report.
//!
//! Regret is tested on the bounded score loss (0 to 1 per position, see
//! [`super::metrics::PositionRecord::score_loss`]); the raw mean regret in
//! cp is shown beside it untested: one missed mate (100,000 cp) moves its
//! mean and variance so far that a t-test on it says nothing.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::metrics::{self, PositionRecord, Samples, group, variance};
use super::puzzle_rating::PuzzleRating;
use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::core::stats::mean;
use crate::core::summary::Summary;

/// `puzzleforge compare`'s flags (their help: `cli::compare`).
#[derive(Debug, Clone)]
pub struct CompareArgs {
    pub run_a: PathBuf,
    pub run_b: PathBuf,
    pub output: Option<PathBuf>,
}

/// A one-sided Welch t-test.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// p-value of "B better than A".
    pub p_one_sided: f64,
}

/// Welch's t-test of mean(b) vs mean(a); `higher_is_better` chooses the
/// side. `None` with fewer than two samples a side, or with zero variance
/// and equal means. Zero variance with different means (a perfect player
/// against one that never scores) is a certain difference: p is 0 in the
/// better direction and 1 in the other.
pub fn welch(a: &[f64], b: &[f64], higher_is_better: bool) -> Option<Welch> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (va, vb) = (variance(a) / na, variance(b) / nb);
    let se2 = va + vb;
    let gain = mean(b)? - mean(a)?;
    if se2 <= 0.0 {
        if gain == 0.0 {
            return None;
        }
        let better = (gain > 0.0) == higher_is_better;
        return Some(Welch {
            t: gain.signum() * f64::MAX,
            df: na + nb - 2.0,
            p_one_sided: if better { 0.0 } else { 1.0 },
        });
    }
    let t = gain / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = if higher_is_better {
        1.0 - dist.cdf(t)
    } else {
        dist.cdf(t)
    };
    Some(Welch {
        t,
        df,
        p_one_sided: p,
    })
}

/// A paired test of "B better than A" on the records both runs scored.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Paired {
    /// `mcnemar_exact` (0/1 metrics) or `paired_t` (the score loss).
    pub test: &'static str,
    /// Puzzles (or positions) both runs scored.
    pub pairs: usize,
    /// McNemar: the pairs where B did better, and where A did.
    pub b_better: Option<usize>,
    pub a_better: Option<usize>,
    /// Paired t: the statistic and its degrees of freedom.
    pub t: Option<f64>,
    pub df: Option<f64>,
    /// p-value of "B better than A".
    pub p_one_sided: f64,
}

/// The exact McNemar test on paired 0/1 values `(a, b)`: under "no
/// difference" each pair where they differ favours B with chance 1/2, so
/// the p-value of "B better" is P(Binomial(n, 1/2) >= pairs B won).
/// `None` without pairs.
pub fn mcnemar(pairs: &[(f64, f64)], higher_is_better: bool) -> Option<Paired> {
    if pairs.is_empty() {
        return None;
    }
    let better = |x: f64, y: f64| if higher_is_better { x > y } else { x < y };
    let b_better = pairs.iter().filter(|(a, b)| better(*b, *a)).count();
    let a_better = pairs.iter().filter(|(a, b)| better(*a, *b)).count();
    let discordant = (b_better + a_better) as u64;
    let p = match (b_better, Binomial::new(0.5, discordant)) {
        (0, _) => 1.0,
        (won, Ok(binomial)) => binomial.sf(won as u64 - 1),
        (_, Err(_)) => return None,
    };
    Some(Paired {
        test: "mcnemar_exact",
        pairs: pairs.len(),
        b_better: Some(b_better),
        a_better: Some(a_better),
        t: None,
        df: None,
        p_one_sided: p,
    })
}

/// The paired t-test on `(a, b)` pairs, on the differences b - a. `None`
/// with fewer than two pairs, or with no difference at all; differences
/// all equal and non-zero are a certain difference (p 0 or 1).
pub fn paired_t(pairs: &[(f64, f64)], higher_is_better: bool) -> Option<Paired> {
    if pairs.len() < 2 {
        return None;
    }
    let differences: Vec<f64> = pairs.iter().map(|(a, b)| b - a).collect();
    let n = differences.len() as f64;
    let gain = mean(&differences)?;
    let se2 = variance(&differences) / n;
    let df = n - 1.0;
    let paired = |t: f64, p: f64| Paired {
        test: "paired_t",
        pairs: pairs.len(),
        b_better: None,
        a_better: None,
        t: Some(t),
        df: Some(df),
        p_one_sided: p,
    };
    if se2 <= 0.0 {
        if gain == 0.0 {
            return None;
        }
        let better = (gain > 0.0) == higher_is_better;
        return Some(paired(
            gain.signum() * f64::MAX,
            if better { 0.0 } else { 1.0 },
        ));
    }
    let t = gain / se2.sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = if higher_is_better {
        1.0 - dist.cdf(t)
    } else {
        dist.cdf(t)
    };
    Some(paired(t, p))
}

/// A compared metric, by its name in `compare.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Metric {
    PuzzleAccuracy,
    PositionAccuracy,
    IllegalRate,
    UnparseableRate,
    MeanScoreLoss,
    MeanRegret,
}

impl Metric {
    /// The compared metrics, in the tables' order.
    const ALL: [Metric; 6] = [
        Metric::PuzzleAccuracy,
        Metric::PositionAccuracy,
        Metric::IllegalRate,
        Metric::UnparseableRate,
        Metric::MeanScoreLoss,
        Metric::MeanRegret,
    ];

    /// The metric's name in the tables.
    fn as_str(self) -> &'static str {
        match self {
            Metric::PuzzleAccuracy => "puzzle_accuracy",
            Metric::PositionAccuracy => "position_accuracy",
            Metric::IllegalRate => "illegal_rate",
            Metric::UnparseableRate => "unparseable_rate",
            Metric::MeanScoreLoss => "mean_score_loss",
            Metric::MeanRegret => "mean_regret",
        }
    }

    /// Whether a higher value is better.
    fn higher_is_better(self) -> bool {
        matches!(self, Metric::PuzzleAccuracy | Metric::PositionAccuracy)
    }

    /// Whether the difference is tested (the raw cp regret is not: see the
    /// module comment).
    fn is_tested(self) -> bool {
        self != Metric::MeanRegret
    }

    /// The metric's samples of one run.
    fn samples(self, s: &Samples) -> &[f64] {
        match self {
            Metric::PuzzleAccuracy => &s.puzzle_solved,
            Metric::PositionAccuracy => &s.position_correct,
            Metric::IllegalRate => &s.illegal,
            Metric::UnparseableRate => &s.unparseable,
            Metric::MeanScoreLoss => &s.score_loss,
            Metric::MeanRegret => &s.regret,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Difference {
    pub metric: Metric,
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub difference: Option<f64>,
    pub n_a: usize,
    pub n_b: usize,
    /// The paired test, when the runs scored the same puzzles.
    pub paired: Option<Paired>,
    /// The unpaired test, for runs on different puzzles.
    pub welch: Option<Welch>,
    /// The p-value of "B better than A": the paired test's, else Welch's.
    pub p_one_sided: Option<f64>,
}

fn differences(a: &[&PositionRecord], b: &[&PositionRecord]) -> Vec<Difference> {
    let (sa, sb) = (Samples::of(a), Samples::of(b));
    let pairing = Pairing::of(a, b);
    Metric::ALL
        .into_iter()
        .map(|metric| {
            let (higher, tested) = (metric.higher_is_better(), metric.is_tested());
            let (xa, xb) = (metric.samples(&sa), metric.samples(&sb));
            let (ma, mb) = (mean(xa), mean(xb));
            let paired = match (tested, pairing.pairs(metric)) {
                (false, _) => None,
                (true, pairs) if pairs.is_empty() => None,
                (true, pairs) if metric == Metric::MeanScoreLoss => paired_t(&pairs, higher),
                (true, pairs) => mcnemar(&pairs, higher),
            };
            let welch = if tested { welch(xa, xb, higher) } else { None };
            Difference {
                metric,
                a: ma,
                b: mb,
                difference: ma.zip(mb).map(|(a, b)| b - a),
                n_a: xa.len(),
                n_b: xb.len(),
                p_one_sided: match (&paired, &welch) {
                    (Some(paired), _) => Some(paired.p_one_sided),
                    (None, Some(welch)) => Some(welch.p_one_sided),
                    (None, None) => None,
                },
                paired,
                welch,
            }
        })
        .collect()
}

/// The records of two runs matched: a puzzle attempt by its puzzle id and
/// repeat, a position by those and its move index, and by the template
/// too when both runs asked the same templates (two runs of one template
/// each, a prompt against another, pair across their templates).
struct Pairing {
    /// (A's value, B's value) of each puzzle attempt both solved or not.
    solved: Vec<(f64, f64)>,
    /// Each position both answered: (A's record, B's record).
    positions: Vec<(PositionRecord, PositionRecord)>,
}

impl Pairing {
    fn of(a: &[&PositionRecord], b: &[&PositionRecord]) -> Pairing {
        let templates = |rs: &[&PositionRecord]| {
            rs.iter()
                .map(|r| r.template.clone())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (ta, tb) = (templates(a), templates(b));
        let by_template = ta == tb;
        let pairable = by_template || (ta.len() == 1 && tb.len() == 1);
        let mut pairing = Pairing {
            solved: Vec::new(),
            positions: Vec::new(),
        };
        if !pairable {
            return pairing;
        }
        let key = |r: &PositionRecord| {
            let template = if by_template {
                r.template.clone()
            } else {
                String::new()
            };
            (r.puzzle_id.clone(), r.repeat, template)
        };
        let solved = |rs: &[&PositionRecord]| {
            let mut trials: BTreeMap<(String, u32, String), bool> = BTreeMap::new();
            for r in rs {
                *trials.entry(key(r)).or_insert(true) &= r.verdict == metrics::Verdict::Correct;
            }
            trials
        };
        let (sa, sb) = (solved(a), solved(b));
        let flag = |x: bool| if x { 1.0 } else { 0.0 };
        pairing.solved = sa
            .iter()
            .filter_map(|(k, x)| sb.get(k).map(|y| (flag(*x), flag(*y))))
            .collect();
        let positions: BTreeMap<_, &PositionRecord> =
            b.iter().map(|r| ((key(r), r.move_index), *r)).collect();
        pairing.positions = a
            .iter()
            .filter_map(|r| {
                positions
                    .get(&(key(r), r.move_index))
                    .map(|other| ((*r).clone(), (*other).clone()))
            })
            .collect();
        pairing
    }

    /// The paired values of `metric` (none for the untested raw regret).
    fn pairs(&self, metric: Metric) -> Vec<(f64, f64)> {
        use metrics::Verdict;
        let of = |value: fn(&PositionRecord) -> Option<f64>| {
            self.positions
                .iter()
                .filter_map(|(a, b)| value(a).zip(value(b)))
                .collect()
        };
        match metric {
            Metric::PuzzleAccuracy => self.solved.clone(),
            Metric::PositionAccuracy => {
                of(|r| Some(f64::from(u8::from(r.verdict == Verdict::Correct))))
            }
            Metric::IllegalRate => of(|r| Some(f64::from(u8::from(r.verdict == Verdict::Illegal)))),
            Metric::UnparseableRate => {
                of(|r| Some(f64::from(u8::from(r.verdict == Verdict::Unparseable))))
            }
            Metric::MeanScoreLoss => of(|r| r.score_loss),
            Metric::MeanRegret => Vec::new(),
        }
    }
}

/// Reads a run's `positions.jsonl`.
pub(crate) fn read_records(run: &Path) -> Result<Vec<PositionRecord>> {
    let path = run.join("positions.jsonl");
    let file = std::fs::File::open(&path)
        .map_err(|e| bad_input(format!("{}: not an eval run ({e})", path.display())))?;
    let mut records = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: PositionRecord = serde_json::from_str(&line)
            .map_err(|e| bad_input(format!("{} line {}: {e}", path.display(), i + 1)))?;
        records.push(record);
    }
    Ok(records)
}

/// A JSON file of a run read as `T`; a missing file, a missing field or a
/// field of the wrong type is an error naming the file.
fn read_run_file<T: serde::de::DeserializeOwned>(run: &Path, name: &str) -> Result<T> {
    let path = run.join(name);
    let bytes = std::fs::read(&path)
        .map_err(|e| bad_input(format!("{}: not an eval run ({e})", path.display())))?;
    serde_json::from_slice(&bytes).map_err(|e| bad_input(format!("{}: {e}", path.display())))
}

/// The rating bins a run's breakdowns used: its `config.json`'s eval
/// config, read whole.
fn rating_bin_width(run: &Path) -> Result<i32> {
    let recorded: super::report::RunInfo = read_run_file(run, "config.json")?;
    Ok(recorded.config.rating_bin_width)
}

/// What `compare` reads of a run's `report.json`.
#[derive(Deserialize)]
struct ReportedRating {
    /// `null` for a set without ratings; a report without the field is
    /// an error.
    #[serde(deserialize_with = "Option::deserialize")]
    puzzle_rating: Option<ReportedPuzzleRating>,
}

/// `report.json`'s `puzzle_rating`: the overall rating is what compare
/// shows.
#[derive(Deserialize)]
struct ReportedPuzzleRating {
    #[serde(flatten)]
    overall: PuzzleRating,
}

/// A run's puzzle rating, as its `report.json` gives it.
fn puzzle_rating(run: &Path) -> Result<Option<PuzzleRating>> {
    let report: ReportedRating = read_run_file(run, "report.json")?;
    Ok(report.puzzle_rating.map(|r| r.overall))
}

/// `compare.json`: the two runs, their puzzle ratings, and every
/// metric's difference overall and by cell.
#[derive(Serialize)]
struct CompareReport<'a> {
    run_a: String,
    run_b: String,
    puzzle_rating: RatingPair<'a>,
    overall: &'a [Difference],
    cells: &'a BTreeMap<String, BTreeMap<String, Vec<Difference>>>,
}

/// Each run's puzzle rating.
#[derive(Serialize)]
struct RatingPair<'a> {
    a: Option<&'a PuzzleRating>,
    b: Option<&'a PuzzleRating>,
}

fn fmt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

/// The differences between the runs in every cell of every dimension
/// that both runs have, by dimension and cell.
fn cell_differences(
    a: &[PositionRecord],
    b: &[PositionRecord],
    width: i32,
) -> BTreeMap<String, BTreeMap<String, Vec<Difference>>> {
    let mut cells = BTreeMap::new();
    for dimension in metrics::DIMENSIONS {
        let ga = group(a, dimension, width);
        let gb = group(b, dimension, width);
        let mut by_cell = BTreeMap::new();
        for (cell, ra) in &ga {
            if let Some(rb) = gb.get(cell) {
                by_cell.insert(cell.clone(), differences(ra, rb));
            }
        }
        cells.insert(dimension.to_string(), by_cell);
    }
    cells
}

/// Appends a Markdown table of `diffs` to `md`: each metric in both runs,
/// the difference, its p-value and the test that gave it.
fn difference_table(md: &mut String, diffs: &[Difference]) {
    let _ = writeln!(
        md,
        "| metric | A | B | B - A | p | test |\n|---|---|---|---|---|---|"
    );
    for d in diffs {
        let test = match (&d.paired, &d.welch) {
            (Some(paired), _) => format!("{} ({} pairs)", paired.test, paired.pairs),
            (None, Some(_)) => "welch".to_string(),
            (None, None) => "-".to_string(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {test} |",
            d.metric.as_str(),
            fmt(d.a),
            fmt(d.b),
            fmt(d.difference),
            fmt(d.p_one_sided)
        );
    }
}

pub fn run_compare(args: &CompareArgs) -> Result<Summary> {
    let a = read_records(&args.run_a)?;
    let b = read_records(&args.run_b)?;
    let width = rating_bin_width(&args.run_a)?;
    let all_a: Vec<&PositionRecord> = a.iter().collect();
    let all_b: Vec<&PositionRecord> = b.iter().collect();
    let overall = differences(&all_a, &all_b);
    let cells = cell_differences(&a, &b, width);
    let (rating_a, rating_b) = (puzzle_rating(&args.run_a)?, puzzle_rating(&args.run_b)?);
    let json = serde_json::to_value(CompareReport {
        run_a: args.run_a.display().to_string(),
        run_b: args.run_b.display().to_string(),
        puzzle_rating: RatingPair {
            a: rating_a.as_ref(),
            b: rating_b.as_ref(),
        },
        overall: &overall,
        cells: &cells,
    })?;
    let mut md = format!(
        "# Compare\n\nA = `{}`, B = `{}`; p = one-sided p-value of \"B better than A\": on the \
         puzzles (or positions) both runs scored, paired tests (exact McNemar on solved or not, \
         correct, illegal and unparseable; paired t-test on the score loss), else a Welch t-test. \
         Regret is tested on the bounded score loss (0 to 1 per position); the raw mean regret \
         (cp) is shown untested, as one missed mate (100,000 cp) can decide it.\n\n",
        args.run_a.display(),
        args.run_b.display()
    );
    difference_table(&mut md, &overall);
    let label =
        |r: &Option<PuzzleRating>| r.as_ref().map_or_else(|| "-".into(), PuzzleRating::label);
    let rating_line = format!(
        "\npuzzle rating (Lichess scale, 95% interval): A {}, B {}\n",
        label(&rating_a),
        label(&rating_b)
    );
    md.push_str(&rating_line);
    for (dimension, by_cell) in &cells {
        let _ = writeln!(md, "\n## By {}\n", dimension.replace('_', " "));
        for (cell, diffs) in metrics::ordered_cells(dimension, by_cell) {
            let _ = writeln!(md, "### {cell}\n");
            difference_table(&mut md, diffs);
        }
    }
    if let Some(out) = &args.output {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        write_atomic(
            &out.join("compare.json"),
            (serde_json::to_string_pretty(&json)? + "\n").as_bytes(),
        )?;
        write_atomic(&out.join("compare.md"), md.as_bytes())?;
        illegal_rate_picture(&out.join("illegal_rate_by_template.svg"), &a, &b, width)?;
    }
    let mut human = String::new();
    difference_table(&mut human, &overall);
    human.push_str(&rating_line);
    Ok(Summary::new(human, json))
}

/// Illegal-move rate of every template in both runs, side by side: the
/// picture that shows whether a prompt change made the model invent moves.
/// Not drawn (and an earlier one removed) when neither run asked a model
/// through a template: baseline players' one template, `none`, has nothing
/// to show.
fn illegal_rate_picture(
    path: &Path,
    a: &[PositionRecord],
    b: &[PositionRecord],
    width: i32,
) -> Result<()> {
    let prompted = a
        .iter()
        .chain(b)
        .any(|r| r.template != super::BASELINE_TEMPLATE);
    if !prompted {
        if path.exists() {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        return Ok(());
    }
    let mut labels = Vec::new();
    let mut values = Vec::new();
    for (run, records) in [("A", a), ("B", b)] {
        for (template, rs) in group(records, "template", width) {
            labels.push(format!("{run}: {template}"));
            values.push(mean(&Samples::of(&rs).illegal).unwrap_or(0.0));
        }
    }
    let top = values.iter().cloned().fold(0.0, f64::max).max(0.05) * 1.15;
    super::charts::bar_chart(
        path,
        "Illegal-move rate by template, run A and run B",
        &labels,
        &values,
        None,
        top.min(1.0),
        "illegal rate",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::eval::metrics::{MATE_PENALTY_CP, Verdict};
    use shakmaty::fen::Fen;
    use shakmaty::uci::UciMove;
    use shakmaty::{Chess, EnPassantMode};

    fn answered(index: usize, regret_cp: f64, score_loss: f64) -> PositionRecord {
        PositionRecord {
            puzzle_id: format!("p{index}"),
            puzzle_index: index,
            template: "none".into(),
            repeat: 0,
            move_index: 0,
            solver_moves: 1,
            rating: Some(1500),
            themes: Vec::new(),
            fen: Fen::from_position(&Chess::default(), EnPassantMode::Legal),
            expected: UciMove::from_ascii(b"e2e4").unwrap(),
            answer: None,
            played: None,
            verdict: if regret_cp == 0.0 {
                Verdict::Correct
            } else {
                Verdict::Wrong
            },
            regret_cp: Some(regret_cp),
            score_loss: Some(score_loss),
            prompt_tokens: None,
            completion_tokens: None,
        }
    }

    /// The case: A (a random player) gives up a little everywhere,
    /// B (a strong one) nothing but one allowed mate. The raw cp mean puts B
    /// far behind A and is not tested; the score loss, which the test runs
    /// on, finds B better.
    #[test]
    fn one_mate_does_not_decide_the_regret_comparison() {
        let a: Vec<PositionRecord> = (0..40)
            .map(|i| answered(i, 300.0 + i as f64, 0.2 + 0.001 * i as f64))
            .collect();
        let mut b: Vec<PositionRecord> = (0..40).map(|i| answered(i, 0.0, 0.0)).collect();
        b[7] = answered(7, MATE_PENALTY_CP, 0.5);
        let (ra, rb): (Vec<&PositionRecord>, Vec<&PositionRecord>) =
            (a.iter().collect(), b.iter().collect());
        let diffs = differences(&ra, &rb);
        let get = |name: &str| diffs.iter().find(|d| d.metric.as_str() == name).unwrap();
        let raw = get("mean_regret");
        assert!(raw.b.unwrap() > 5.0 * raw.a.unwrap(), "{raw:?}");
        assert!(raw.welch.is_none(), "the raw mean is not tested");
        let loss = get("mean_score_loss");
        assert!(loss.b.unwrap() < loss.a.unwrap(), "{loss:?}");
        let p = loss.welch.as_ref().unwrap().p_one_sided;
        assert!(p < 1e-6, "B better on score loss: p = {p}");
    }

    /// Paired runs on the same puzzles: B solves 9 puzzles A misses and
    /// misses 1 A solves: McNemar's p is P(Binomial(10, 1/2) >= 9) =
    /// 11/1024; a Welch test on the same 40 puzzles sees far less.
    #[test]
    fn runs_on_the_same_puzzles_are_compared_pair_by_pair() {
        let a: Vec<PositionRecord> = (0..40)
            .map(|i| answered(i, if i < 20 || i == 39 { 0.0 } else { 50.0 }, 0.0))
            .collect();
        let b: Vec<PositionRecord> = (0..40)
            .map(|i| answered(i, if i < 29 { 0.0 } else { 50.0 }, 0.0))
            .collect();
        let (ra, rb): (Vec<&PositionRecord>, Vec<&PositionRecord>) =
            (a.iter().collect(), b.iter().collect());
        let diffs = differences(&ra, &rb);
        let solved = diffs
            .iter()
            .find(|d| d.metric == Metric::PuzzleAccuracy)
            .unwrap();
        let paired = solved.paired.as_ref().unwrap();
        assert_eq!(paired.test, "mcnemar_exact");
        assert_eq!(
            (paired.pairs, paired.b_better, paired.a_better),
            (40, Some(9), Some(1))
        );
        assert!(
            (paired.p_one_sided - 11.0 / 1024.0).abs() < 1e-9,
            "{paired:?}"
        );
        assert_eq!(solved.p_one_sided, Some(paired.p_one_sided));
        let welch = solved.welch.as_ref().unwrap().p_one_sided;
        assert!(
            welch > 2.0 * paired.p_one_sided,
            "the unpaired test sees less: {welch}"
        );
        // The score loss, paired: every position 0.1 lower in B.
        let a: Vec<PositionRecord> = (0..10)
            .map(|i| answered(i, 1.0, 0.2 + 0.05 * i as f64))
            .collect();
        let b: Vec<PositionRecord> = (0..10)
            .map(|i| answered(i, 1.0, 0.1 + 0.05 * i as f64))
            .collect();
        let (ra, rb): (Vec<&PositionRecord>, Vec<&PositionRecord>) =
            (a.iter().collect(), b.iter().collect());
        let diffs = differences(&ra, &rb);
        let loss = diffs
            .iter()
            .find(|d| d.metric == Metric::MeanScoreLoss)
            .unwrap();
        let paired = loss.paired.as_ref().unwrap();
        assert_eq!(paired.test, "paired_t");
        assert!(paired.p_one_sided < 1e-9, "all 0.1 lower: {paired:?}");
        // Unpaired, the spread between positions hides it (p about 0.08).
        assert!(loss.welch.as_ref().unwrap().p_one_sided > 0.05);
        // Runs on different puzzles: no pair, Welch's p.
        let other: Vec<PositionRecord> = (100..110).map(|i| answered(i, 0.0, 0.0)).collect();
        let ro: Vec<&PositionRecord> = other.iter().collect();
        let diffs = differences(&ra, &ro);
        let solved = diffs
            .iter()
            .find(|d| d.metric == Metric::PuzzleAccuracy)
            .unwrap();
        assert!(solved.paired.is_none());
        assert_eq!(
            solved.p_one_sided,
            solved.welch.as_ref().map(|w| w.p_one_sided)
        );
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        // a: mean 0.25, var 0.25; b: mean 0.75, var 0.25; n = 4 each.
        let a = [0.0, 0.0, 0.0, 1.0];
        let b = [1.0, 1.0, 1.0, 0.0];
        let w = welch(&a, &b, true).unwrap();
        assert!((w.t - std::f64::consts::SQRT_2).abs() < 1e-3, "{w:?}");
        assert!((w.df - 6.0).abs() < 1e-9);
        // P(T_6 > 1.4142) ~ 0.1035
        assert!((w.p_one_sided - 0.1035).abs() < 2e-3, "{w:?}");
        let lower = welch(&a, &b, false).unwrap();
        assert!((lower.p_one_sided - (1.0 - w.p_one_sided)).abs() < 1e-12);
        assert!(welch(&[1.0], &b, true).is_none());
        let certain = welch(&[0.0, 0.0], &[1.0, 1.0], true).unwrap();
        assert_eq!(certain.p_one_sided, 0.0);
        assert_eq!(
            welch(&[0.0, 0.0], &[1.0, 1.0], false).unwrap().p_one_sided,
            1.0
        );
        assert!(welch(&[1.0, 1.0], &[1.0, 1.0], true).is_none());
    }
}

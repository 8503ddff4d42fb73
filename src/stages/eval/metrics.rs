//! Per-position records and the metrics computed from them.

use crate::core::stats::{mean, median};
use serde::{Deserialize, Serialize};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use std::collections::BTreeMap;

/// How an answer was judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Correct,
    /// Legal but not the solution.
    Wrong,
    Illegal,
    Unparseable,
    /// The API failed after its retries.
    NoAnswer,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::Wrong => "wrong",
            Verdict::Illegal => "illegal",
            Verdict::Unparseable => "unparseable",
            Verdict::NoAnswer => "no_answer",
        }
    }
}

/// Penalty for a missed or allowed mate (the APO paper's).
pub(crate) const MATE_PENALTY_CP: f64 = 100_000.0;
/// Penalty for an illegal or unparseable answer (the APO paper's).
pub(crate) const INVALID_PENALTY_CP: f64 = 200_000.0;
/// Score loss of an illegal or unparseable answer: the whole point, the
/// most any answer can lose (see [`PositionRecord::score_loss`]).
pub(crate) const INVALID_SCORE_LOSS: f64 = 1.0;

/// One answered position; `positions.jsonl` holds one per line, in
/// (template, repeat, puzzle, move) order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PositionRecord {
    pub puzzle_id: String,
    pub puzzle_index: usize,
    pub template: String,
    pub repeat: u32,
    pub move_index: usize,
    pub solver_moves: usize,
    pub rating: Option<i32>,
    pub themes: Vec<String>,
    pub fen: Fen,
    pub expected: UciMove,
    /// The answer as the model wrote it (the token read as a move).
    pub answer: Option<String>,
    /// The legal move played.
    pub played: Option<UciMove>,
    pub verdict: Verdict,
    /// Engine regret in centipawns; `None` without an engine or for no answer.
    pub regret_cp: Option<f64>,
    /// The expected score (0 to 1) the answer gives up against the
    /// engine's best move: each evaluation turned into winning chances by
    /// Lichess's curve ([`crate::engine::criterion::win_chances`]), as
    /// (1 + chances) / 2; an invalid answer loses 1. Bounded, so one mate
    /// cannot outweigh the other positions as its 100,000 cp do in
    /// `regret_cp`. `None` where `regret_cp` is, and in runs written
    /// before it existed.
    #[serde(default)]
    pub score_loss: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

impl PositionRecord {
    /// Identifies the puzzle attempt this position belongs to.
    pub(crate) fn trial(&self) -> (String, u32, usize) {
        (self.template.clone(), self.repeat, self.puzzle_index)
    }
}

/// Metrics of a set of positions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct CellMetrics {
    pub puzzles: usize,
    pub puzzle_accuracy: f64,
    pub puzzle_accuracy_se: f64,
    pub positions: usize,
    pub position_accuracy: f64,
    pub illegal_rate: f64,
    pub unparseable_rate: f64,
    pub no_answer_rate: f64,
    pub regret_positions: usize,
    /// Mean of the bounded per-position score loss (0 to 1): the regret
    /// figure to compare runs by.
    pub mean_score_loss: Option<f64>,
    /// Mean raw regret in cp: one missed mate adds 100,000 / positions.
    pub mean_regret: Option<f64>,
    pub median_regret: Option<f64>,
}

/// Per-item samples of each metric, for significance tests.
#[derive(Clone, Debug, Default)]
pub(crate) struct Samples {
    pub puzzle_solved: Vec<f64>,
    pub position_correct: Vec<f64>,
    pub illegal: Vec<f64>,
    pub unparseable: Vec<f64>,
    pub regret: Vec<f64>,
    pub score_loss: Vec<f64>,
}

impl Samples {
    pub fn of(records: &[&PositionRecord]) -> Self {
        let mut trials: BTreeMap<(String, u32, usize), bool> = BTreeMap::new();
        let mut samples = Samples::default();
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        for r in records {
            let solved = trials.entry(r.trial()).or_insert(true);
            *solved &= r.verdict == Verdict::Correct;
            samples
                .position_correct
                .push(flag(r.verdict == Verdict::Correct));
            samples.illegal.push(flag(r.verdict == Verdict::Illegal));
            samples
                .unparseable
                .push(flag(r.verdict == Verdict::Unparseable));
            if let Some(regret) = r.regret_cp {
                samples.regret.push(regret);
            }
            if let Some(loss) = r.score_loss {
                samples.score_loss.push(loss);
            }
        }
        samples.puzzle_solved = trials.values().map(|&s| flag(s)).collect();
        samples
    }
}

/// Sample variance (n - 1); 0 for fewer than two values.
pub(crate) fn variance(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let m = values.iter().sum::<f64>() / n as f64;
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64
}

/// Metrics of the given positions. A puzzle attempt counts as solved when
/// every one of its positions in the set is correct.
pub(crate) fn cell_metrics(records: &[&PositionRecord]) -> CellMetrics {
    let s = Samples::of(records);
    let rate = |v: &[f64]| mean(v).unwrap_or(0.0);
    let puzzle_accuracy = rate(&s.puzzle_solved);
    let n = s.puzzle_solved.len();
    let no_answer = records
        .iter()
        .filter(|r| r.verdict == Verdict::NoAnswer)
        .count();
    CellMetrics {
        puzzles: n,
        puzzle_accuracy,
        puzzle_accuracy_se: if n > 0 {
            (puzzle_accuracy * (1.0 - puzzle_accuracy) / n as f64).sqrt()
        } else {
            0.0
        },
        positions: records.len(),
        position_accuracy: rate(&s.position_correct),
        illegal_rate: rate(&s.illegal),
        unparseable_rate: rate(&s.unparseable),
        no_answer_rate: if records.is_empty() {
            0.0
        } else {
            no_answer as f64 / records.len() as f64
        },
        regret_positions: s.regret.len(),
        mean_score_loss: mean(&s.score_loss),
        mean_regret: mean(&s.regret),
        median_regret: median(&s.regret),
    }
}

/// The breakdown dimensions of a report.
pub(crate) const DIMENSIONS: [&str; 5] = [
    "rating_bin",
    "theme",
    "solver_length",
    "move_index",
    "template",
];

/// The cells a record falls into along a dimension.
pub fn cells_of(record: &PositionRecord, dimension: &str, rating_bin_width: i32) -> Vec<String> {
    match dimension {
        "rating_bin" => vec![rating_bin(record.rating, rating_bin_width)],
        "theme" => record.themes.clone(),
        "solver_length" => vec![format!("{:02}", record.solver_moves)],
        "move_index" => vec![format!("{:02}", record.move_index + 1)],
        "template" => vec![record.template.clone()],
        _ => Vec::new(),
    }
}

/// The rating cell of a position: the release's own bin label, `(1400, 1500]`
/// (see [`crate::chess::derive::rating_bin`]), so eval breakdowns line up with the
/// release's cells.
pub fn rating_bin(rating: Option<i32>, width: i32) -> String {
    match rating {
        None => "unrated".into(),
        Some(r) => crate::chess::derive::rating_bin(r, width),
    }
}

/// The cells of a breakdown in reading order: rating bins by rating (their
/// labels do not sort as text: `(900, 1000]` comes before `(1000, 1100]`),
/// everything else by name.
pub(crate) fn ordered_cells<'a, T>(
    dimension: &str,
    cells: &'a BTreeMap<String, T>,
) -> Vec<(&'a String, &'a T)> {
    let mut ordered: Vec<(&String, &T)> = cells.iter().collect();
    if dimension == "rating_bin" {
        ordered.sort_by_key(|(cell, _)| {
            cell.trim_start_matches('(')
                .split(',')
                .next()
                .and_then(|lower| lower.trim().parse::<i64>().ok())
                .unwrap_or(i64::MAX)
        });
    }
    ordered
}

/// Groups records by the cells of one dimension (sorted by cell name).
pub fn group<'a>(
    records: &'a [PositionRecord],
    dimension: &str,
    rating_bin_width: i32,
) -> BTreeMap<String, Vec<&'a PositionRecord>> {
    let mut groups: BTreeMap<String, Vec<&PositionRecord>> = BTreeMap::new();
    for r in records {
        for cell in cells_of(r, dimension, rating_bin_width) {
            groups.entry(cell).or_default().push(r);
        }
    }
    groups
}

/// The headline metrics and every breakdown.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Breakdowns {
    pub overall: CellMetrics,
    pub by: BTreeMap<String, BTreeMap<String, CellMetrics>>,
}

pub(crate) fn breakdowns(records: &[PositionRecord], rating_bin_width: i32) -> Breakdowns {
    let all: Vec<&PositionRecord> = records.iter().collect();
    let mut by = BTreeMap::new();
    for dimension in DIMENSIONS {
        let cells = group(records, dimension, rating_bin_width)
            .into_iter()
            .map(|(cell, rs)| (cell, cell_metrics(&rs)))
            .collect();
        by.insert(dimension.to_string(), cells);
    }
    Breakdowns {
        overall: cell_metrics(&all),
        by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Chess, EnPassantMode};

    fn record(puzzle: usize, move_index: usize, verdict: Verdict, regret: f64) -> PositionRecord {
        PositionRecord {
            puzzle_id: format!("p{puzzle}"),
            puzzle_index: puzzle,
            template: "t".into(),
            repeat: 0,
            move_index,
            solver_moves: 2,
            rating: Some(1450),
            themes: vec!["fork".into()],
            fen: Fen::from_position(&Chess::default(), EnPassantMode::Legal),
            expected: UciMove::from_ascii(b"e2e4").unwrap(),
            answer: None,
            played: None,
            verdict,
            regret_cp: Some(regret),
            score_loss: Some(if regret > 0.0 { 0.5 } else { 0.0 }),
            prompt_tokens: None,
            completion_tokens: None,
        }
    }

    #[test]
    fn puzzle_and_position_accuracy() {
        let records = vec![
            record(0, 0, Verdict::Correct, 0.0),
            record(0, 1, Verdict::Correct, 0.0),
            record(1, 0, Verdict::Correct, 0.0),
            record(1, 1, Verdict::Illegal, INVALID_PENALTY_CP),
        ];
        let b = breakdowns(&records, 100);
        assert_eq!(b.overall.puzzles, 2);
        assert_eq!(b.overall.puzzle_accuracy, 0.5);
        assert_eq!(b.overall.position_accuracy, 0.75);
        assert_eq!(b.overall.illegal_rate, 0.25);
        assert_eq!(b.overall.median_regret, Some(0.0));
        assert_eq!(b.overall.mean_score_loss, Some(0.125));
        assert!((b.overall.puzzle_accuracy_se - 0.3535).abs() < 1e-3);
        assert_eq!(
            b.by["rating_bin"].keys().collect::<Vec<_>>(),
            ["(1400, 1500]"]
        );
        let mut bins = BTreeMap::new();
        for label in ["(1000, 1100]", "(900, 1000]", "unrated", "(2000, 2100]"] {
            bins.insert(label.to_string(), ());
        }
        let order: Vec<&String> = ordered_cells("rating_bin", &bins)
            .into_iter()
            .map(|(cell, _)| cell)
            .collect();
        assert_eq!(
            order,
            ["(900, 1000]", "(1000, 1100]", "(2000, 2100]", "unrated"]
        );
        assert_eq!(b.by["move_index"]["02"].puzzle_accuracy, 0.5);
    }
}

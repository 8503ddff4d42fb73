//! A player's puzzle rating on the Lichess scale: the rating that best
//! explains its results (each puzzle attempt solved or not) against the
//! puzzles' ratings under Glicko-2's expected score, with a 95% interval.
//!
//! Lichess rates a puzzle attempt as a game between the player and the
//! puzzle. Under Glicko-2 (Glickman, "Example of the Glicko-2 system"), a
//! player of rating `r` solves a puzzle of rating `r_j` and deviation
//! `RD_j` with probability
//! `E = 1 / (1 + exp(-g(phi_j) (mu - mu_j)))`, `mu = (r - 1500) / 173.7178`,
//! `phi_j = RD_j / 173.7178` (the origin, 1500, cancels in the difference), `g(phi) = 1 / sqrt(1 + 3 phi^2 / pi^2)`:
//! an uncertain puzzle rating flattens the curve. The rating reported is the
//! maximum-likelihood `r` over every attempt, not a sequence of Glicko
//! updates, so it does not depend on the order the puzzles came in. The
//! interval is the likelihood-ratio one (every `r` whose log-likelihood is
//! within 1.92 of the best), which stays honest where a player solves all
//! or none of a set: there the best `r` is at the edge of the scale and the
//! report says the rating is at least (or at most) the interval's other end.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::metrics::{PositionRecord, Verdict};
use crate::chess::record::Puzzle;

/// Glicko-2's scale factor between ratings and `mu`.
const GLICKO_SCALE: f64 = 173.7178;
/// The ratings a fit searches: Lichess's puzzle ratings lie well inside.
pub(crate) const RATING_RANGE: (f64, f64) = (0.0, 4000.0);
/// Half the chi-square(1) 95% quantile: the log-likelihood drop at the
/// ends of a 95% likelihood-ratio interval.
const HALF_CHI2_95: f64 = 3.841_458_820_694_124 / 2.0;
/// The deviation taken for a puzzle without one (a typical Lichess
/// puzzle's).
pub(crate) use crate::chess::derive::TYPICAL_RATING_DEVIATION as TYPICAL_DEVIATION;

/// One puzzle attempt: the puzzle's rating and deviation, and its score:
/// 1 solved, 0 not, or between for a player whose chance of solving it is
/// known (a Maia net's product of the solution's probabilities).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attempt {
    pub rating: f64,
    pub deviation: f64,
    pub score: f64,
}

/// Glicko-2's `g`.
fn g(deviation: f64) -> f64 {
    let phi = deviation / GLICKO_SCALE;
    1.0 / (1.0 + 3.0 * phi * phi / (std::f64::consts::PI * std::f64::consts::PI)).sqrt()
}

/// The chance a player of `rating` solves a puzzle of `puzzle` rating and
/// `deviation`, under Glicko-2.
pub(crate) fn glicko_solve_chance(rating: f64, puzzle: f64, deviation: f64) -> f64 {
    sigmoid(g(deviation) * (rating - puzzle) / GLICKO_SCALE)
}

/// The logistic function: the probability of log-odds `z`.
pub(super) fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// `ln(1 + exp(x))` without overflow.
fn softplus(x: f64) -> f64 {
    if x > 30.0 { x } else { x.exp().ln_1p() }
}

/// The log-likelihood of `attempts` for a player of `rating`.
fn log_likelihood(attempts: &[Attempt], rating: f64) -> f64 {
    attempts
        .iter()
        .map(|a| {
            let z = g(a.deviation) * (rating - a.rating) / GLICKO_SCALE;
            // ln E = -softplus(-z); ln (1 - E) = -softplus(z).
            -a.score * softplus(-z) - (1.0 - a.score) * softplus(z)
        })
        .sum()
}

/// The slope of the log-likelihood in `rating`: falls as `rating` rises.
fn slope(attempts: &[Attempt], rating: f64) -> f64 {
    attempts
        .iter()
        .map(|a| {
            let k = g(a.deviation);
            let e = glicko_solve_chance(rating, a.rating, a.deviation);
            k * (a.score - e)
        })
        .sum()
}

/// The `x` in `[lo, hi]` where a falling `f` crosses 0, by bisection to a
/// hundredth of a point (deterministic: a fixed number of halvings).
fn crossing(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// A player's puzzle rating with its 95% interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PuzzleRating {
    pub rating: f64,
    pub low: f64,
    pub high: f64,
    /// Attempts the rating is read from (puzzles with a rating, times
    /// repeats and templates).
    pub attempts: usize,
    /// Attempts solved (expected solves for a player scored by its
    /// chances).
    pub solved: f64,
}

impl PuzzleRating {
    /// The maximum-likelihood rating of `attempts` and its 95%
    /// likelihood-ratio interval, rounded to whole points; `None` without
    /// an attempt.
    pub(crate) fn fit(attempts: &[Attempt]) -> Option<Self> {
        if attempts.is_empty() {
            return None;
        }
        let (lo, hi) = RATING_RANGE;
        let best = if slope(attempts, hi) >= 0.0 {
            hi
        } else if slope(attempts, lo) <= 0.0 {
            lo
        } else {
            crossing(|r| slope(attempts, r), lo, hi)
        };
        let top = log_likelihood(attempts, best);
        // Above the drop: inside the interval.
        let inside = |r: f64| log_likelihood(attempts, r) - (top - HALF_CHI2_95);
        let low = if inside(lo) >= 0.0 {
            lo
        } else {
            crossing(|r| -inside(r), lo, best)
        };
        let high = if inside(hi) >= 0.0 {
            hi
        } else {
            crossing(inside, best, hi)
        };
        Some(Self {
            rating: best.round(),
            low: low.round(),
            high: high.round(),
            attempts: attempts.len(),
            solved: attempts.iter().map(|a| a.score).sum(),
        })
    }

    /// "1650 (95%: 1580-1720)", or "at least 2950" / "at most 420" where
    /// the best rating is the scale's edge (all solved, or none).
    pub fn label(&self) -> String {
        let (lo, hi) = RATING_RANGE;
        if self.rating >= hi {
            format!(
                "at least {:.0} (solved {:.0} of {})",
                self.low, self.solved, self.attempts
            )
        } else if self.rating <= lo {
            format!(
                "at most {:.0} (solved {:.0} of {})",
                self.high, self.solved, self.attempts
            )
        } else {
            format!("{:.0} (95%: {:.0}-{:.0})", self.rating, self.low, self.high)
        }
    }
}

/// The puzzle rating of a run, overall and per solver length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PuzzleRatingReport {
    #[serde(flatten)]
    pub overall: PuzzleRating,
    /// By the puzzles' solver moves ("1", "2", ...).
    pub by_length: BTreeMap<String, PuzzleRating>,
    /// The attempts it was fitted on (for the picture).
    #[serde(skip)]
    pub attempts: Vec<Attempt>,
}

/// A puzzle's rating deviation, [`TYPICAL_DEVIATION`] where it has none.
pub(crate) fn deviation_of(puzzle: &Puzzle) -> f64 {
    puzzle
        .rating_deviation
        .filter(|d| *d > 0)
        .map_or(TYPICAL_DEVIATION, f64::from)
}

/// Every puzzle attempt of a run (a template, a repeat, a puzzle): solved
/// when every one of its positions was answered right, as the puzzle
/// accuracy counts it. Puzzles without a rating take no part. Also gives
/// each attempt's solver moves.
pub(crate) fn attempts(records: &[PositionRecord], puzzles: &[Puzzle]) -> Vec<(usize, Attempt)> {
    let mut trials: BTreeMap<(String, u32, usize), (usize, Attempt)> = BTreeMap::new();
    for r in records {
        let Some(rating) = r.rating else { continue };
        let deviation = puzzles
            .get(r.puzzle_index)
            .map_or(TYPICAL_DEVIATION, deviation_of);
        let entry = trials.entry(r.trial()).or_insert((
            r.solver_moves,
            Attempt {
                rating: f64::from(rating),
                deviation,
                score: 1.0,
            },
        ));
        if r.verdict != Verdict::Correct {
            entry.1.score = 0.0;
        }
    }
    trials.into_values().collect()
}

/// The run's puzzle rating, overall and per solver length; `None` when no
/// puzzle had a rating.
pub(crate) fn report(records: &[PositionRecord], puzzles: &[Puzzle]) -> Option<PuzzleRatingReport> {
    let attempts = attempts(records, puzzles);
    let all: Vec<Attempt> = attempts.iter().map(|(_, a)| *a).collect();
    let overall = PuzzleRating::fit(&all)?;
    let mut by_length: BTreeMap<usize, Vec<Attempt>> = BTreeMap::new();
    for (length, attempt) in &attempts {
        by_length.entry(*length).or_default().push(*attempt);
    }
    Some(PuzzleRatingReport {
        attempts: all,
        overall,
        by_length: by_length
            .into_iter()
            .filter_map(|(length, a)| Some((length.to_string(), PuzzleRating::fit(&a)?)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(rating: f64, solved: bool) -> Attempt {
        Attempt {
            rating,
            deviation: 80.0,
            score: f64::from(u8::from(solved)),
        }
    }

    #[test]
    fn glicko_solve_chance_is_glicko_2s() {
        // Glickman's example: mu = 0, mu_j = -0.5756, phi_j = 0.1727:
        // g = 0.9955, E = 0.639.
        let e = glicko_solve_chance(1500.0, 1400.0, 30.0);
        assert!((e - 0.639).abs() < 1e-3, "{e}");
        assert!((g(30.0) - 0.9955).abs() < 1e-4);
        assert_eq!(glicko_solve_chance(1500.0, 1500.0, 350.0), 0.5);
    }

    #[test]
    fn half_solved_at_one_rating_is_that_rating() {
        let attempts: Vec<Attempt> = (0..40).map(|i| attempt(1700.0, i % 2 == 0)).collect();
        let fit = PuzzleRating::fit(&attempts).expect("a fit");
        assert_eq!(fit.rating, 1700.0);
        assert!(fit.low < 1700.0 && fit.high > 1700.0);
        // More attempts, a narrower interval.
        let more: Vec<Attempt> = (0..400).map(|i| attempt(1700.0, i % 2 == 0)).collect();
        let tight = PuzzleRating::fit(&more).expect("a fit");
        assert!(tight.high - tight.low < 0.5 * (fit.high - fit.low));
    }

    #[test]
    fn the_rating_recovers_a_simulated_player() {
        // A player of 1850 on puzzles from 800 to 2800: its solves drawn
        // as the Glicko curve says (a fixed pseudo-random sequence).
        let mut state = 12345u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let attempts: Vec<Attempt> = (0..2000)
            .map(|i| {
                let rating = 800.0 + f64::from(i % 200) * 10.0;
                attempt(
                    rating,
                    uniform() < glicko_solve_chance(1850.0, rating, 80.0),
                )
            })
            .collect();
        let fit = PuzzleRating::fit(&attempts).expect("a fit");
        assert!(fit.low <= 1850.0 && 1850.0 <= fit.high, "{fit:?}");
        assert!(fit.high - fit.low < 120.0, "{fit:?}");
    }

    #[test]
    fn chances_rate_as_their_expected_solves() {
        // A player who solves each puzzle with the chance the curve gives a
        // 1600 is rated 1600, from fractional scores alone.
        let attempts: Vec<Attempt> = (0..100)
            .map(|i| {
                let rating = 1000.0 + 12.0 * f64::from(i);
                Attempt {
                    rating,
                    deviation: 80.0,
                    score: glicko_solve_chance(1600.0, rating, 80.0),
                }
            })
            .collect();
        let fit = PuzzleRating::fit(&attempts).expect("a fit");
        assert_eq!(fit.rating, 1600.0);
    }

    #[test]
    fn all_solved_is_a_lower_bound() {
        let attempts: Vec<Attempt> = (0..30)
            .map(|i| attempt(1000.0 + 30.0 * f64::from(i), true))
            .collect();
        let fit = PuzzleRating::fit(&attempts).expect("a fit");
        assert_eq!(fit.rating, RATING_RANGE.1);
        assert_eq!(fit.high, RATING_RANGE.1);
        assert!(fit.low > 1500.0 && fit.low < 3000.0, "{fit:?}");
        assert!(fit.label().starts_with("at least"));
        let none: Vec<Attempt> = attempts
            .iter()
            .map(|a| Attempt { score: 0.0, ..*a })
            .collect();
        let fit = PuzzleRating::fit(&none).expect("a fit");
        assert_eq!(fit.rating, RATING_RANGE.0);
        assert!(fit.label().starts_with("at most"));
        assert_eq!(PuzzleRating::fit(&[]), None);
    }
}

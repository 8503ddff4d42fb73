//! A player's solve rate as a function of the puzzle rating, fitted with its
//! own slope: `P(solved | r) = 1 / (1 + exp((r - midpoint) / spread))`,
//! the logistic regression of each attempt's result on the puzzle's rating
//! (maximum likelihood, Newton's method).
//!
//! The puzzle rating ([`super::puzzle_rating`]) assumes Glicko-2's slope,
//! the same for every player. A tier aimed at a solve rate needs the
//! player's own curve instead: a model that guesses well on easy puzzles
//! and collapses past its depth falls faster than Glicko's curve, one that
//! solves a share of every band falls slower, and a fixed slope would put
//! the asked rate in the wrong place for both. The rating at a solve rate
//! comes with a 95% interval from the fit's covariance (the delta method),
//! which is what a tier's rating window is made of.

use serde::{Deserialize, Serialize};

use super::puzzle_rating::{Attempt, sigmoid};

/// Ratings are centred and scaled so that the two coefficients are of one
/// size (a logit per 400 points, Elo's unit) and Newton's steps stay tame.
const CENTRE: f64 = 1500.0;
const UNIT: f64 = 400.0;
/// The normal law's two-sided 95% quantile.
const Z_95: f64 = 1.959_963_984_540_054;
/// Newton iterations: the log-likelihood is concave, and a fit of a few
/// hundred attempts settles in well under ten.
const NEWTON_STEPS: usize = 50;

/// A fitted solve-rate curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolveCurve {
    /// The rating at which the player solves half the puzzles.
    pub midpoint: f64,
    /// Rating points per unit of log-odds: over `spread` points the odds
    /// of a solve fall by a factor e. Positive for a curve that falls.
    pub spread: f64,
    /// Attempts fitted, and how many were solved.
    pub attempts: usize,
    pub solved: usize,
    /// `[a, b]` of `logit P = a + b (r - 1500) / 400`, and their covariance
    /// `[var a, cov ab, var b]`.
    pub coefficients: [f64; 2],
    pub covariance: [f64; 3],
}

/// Where a curve gives a solve rate: the rating and its 95% interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatingAtRate {
    pub solve_rate: f64,
    pub rating: f64,
    pub low: f64,
    pub high: f64,
}

/// Why a curve cannot be fitted, in words for the user.
#[derive(Clone, Debug, PartialEq)]
pub enum CurveError {
    TooFew(usize),
    AllOrNone { attempts: usize, solved: usize },
    NotFalling,
}

impl std::fmt::Display for CurveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooFew(n) => write!(
                f,
                "{n} rated puzzle attempts; a solve curve needs at least {MIN_ATTEMPTS}"
            ),
            Self::AllOrNone { attempts, solved } => write!(
                f,
                "solved {solved} of {attempts} attempts: a curve needs solves and misses both \
                 (eval the player on a set that spans its level)"
            ),
            Self::NotFalling => write!(
                f,
                "the solve rate does not fall with the puzzle rating in this eval, so no rating \
                 gives the asked rate (eval the player on more puzzles, or a wider range of ratings)"
            ),
        }
    }
}

/// Fewest attempts a curve is fitted on.
pub const MIN_ATTEMPTS: usize = 20;

impl SolveCurve {
    /// Fits the curve on attempts scored 0 or 1 (a score in between counts
    /// as that share of a solve).
    pub fn fit(attempts: &[Attempt]) -> Result<Self, CurveError> {
        if attempts.len() < MIN_ATTEMPTS {
            return Err(CurveError::TooFew(attempts.len()));
        }
        let solved_total: f64 = attempts.iter().map(|a| a.score).sum();
        let solved = solved_total.round() as usize;
        if solved_total <= 0.0 || solved_total >= attempts.len() as f64 {
            return Err(CurveError::AllOrNone {
                attempts: attempts.len(),
                solved,
            });
        }
        let xs: Vec<f64> = attempts
            .iter()
            .map(|a| (a.rating - CENTRE) / UNIT)
            .collect();
        let (mut a, mut b) = (0.0f64, 0.0f64);
        let mut information = [0.0; 3];
        for _ in 0..NEWTON_STEPS {
            let (mut ga, mut gb) = (0.0, 0.0);
            let (mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0);
            for (x, attempt) in xs.iter().zip(attempts) {
                let p = sigmoid(a + b * x);
                let residual = attempt.score - p;
                ga += residual;
                gb += residual * x;
                let w = p * (1.0 - p);
                haa += w;
                hab += w * x;
                hbb += w * x * x;
            }
            information = [haa, hab, hbb];
            let det = haa * hbb - hab * hab;
            if det <= 0.0 || !det.is_finite() {
                return Err(CurveError::NotFalling);
            }
            let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
            a += da;
            b += db;
            if da.abs() < 1e-10 && db.abs() < 1e-10 {
                break;
            }
        }
        let [haa, hab, hbb] = information;
        let det = haa * hbb - hab * hab;
        if b >= 0.0 || !b.is_finite() || !a.is_finite() || det <= 0.0 {
            return Err(CurveError::NotFalling);
        }
        Ok(Self {
            midpoint: CENTRE - UNIT * a / b,
            spread: -UNIT / b,
            attempts: attempts.len(),
            solved,
            coefficients: [a, b],
            covariance: [hbb / det, -hab / det, haa / det],
        })
    }

    /// The solve rate the curve gives at `rating`.
    pub fn solve_rate(&self, rating: f64) -> f64 {
        let [a, b] = self.coefficients;
        sigmoid(a + b * (rating - CENTRE) / UNIT)
    }

    /// The rating at which the curve gives `solve_rate` (0 < rate < 1), with
    /// its 95% interval by the delta method.
    pub fn rating_at(&self, solve_rate: f64) -> RatingAtRate {
        let [a, b] = self.coefficients;
        let [vaa, vab, vbb] = self.covariance;
        let logit = (solve_rate / (1.0 - solve_rate)).ln();
        let x = (logit - a) / b;
        // d x / d a = -1 / b, d x / d b = -x / b.
        let (da, db) = (-1.0 / b, -x / b);
        let variance = da * da * vaa + 2.0 * da * db * vab + db * db * vbb;
        let half = Z_95 * variance.max(0.0).sqrt() * UNIT;
        let rating = CENTRE + UNIT * x;
        RatingAtRate {
            solve_rate,
            rating,
            low: rating - half,
            high: rating + half,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Attempts of a player whose true curve is `midpoint`, `spread`, on
    /// puzzles spread evenly over 600-2600.
    fn simulated(midpoint: f64, spread: f64, n: usize, seed: u64) -> Vec<Attempt> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                let rating = 600.0 + 2000.0 * i as f64 / n as f64;
                let p = sigmoid(-(rating - midpoint) / spread);
                Attempt {
                    rating,
                    deviation: 80.0,
                    score: f64::from(u8::from(rng.random::<f64>() < p)),
                }
            })
            .collect()
    }

    #[test]
    fn the_fit_finds_a_players_own_slope() {
        for (midpoint, spread) in [(1400.0, 120.0), (1900.0, 400.0)] {
            let curve = SolveCurve::fit(&simulated(midpoint, spread, 4000, 7)).expect("fits");
            assert!((curve.midpoint - midpoint).abs() < 40.0, "{curve:?}");
            assert!(
                (curve.spread / spread - 1.0).abs() < 0.15,
                "spread {} for {spread}",
                curve.spread
            );
            assert!((curve.solve_rate(curve.midpoint) - 0.5).abs() < 1e-9);
            let at = curve.rating_at(0.3);
            assert!((curve.solve_rate(at.rating) - 0.3).abs() < 1e-9);
            assert!(at.low < at.rating && at.rating < at.high, "{at:?}");
            // A lower solve rate lies at a higher rating.
            assert!(curve.rating_at(0.6).rating < at.rating);
        }
    }

    #[test]
    fn the_interval_narrows_with_more_attempts() {
        let width = |n| {
            let at = SolveCurve::fit(&simulated(1600.0, 200.0, n, 3))
                .expect("fits")
                .rating_at(0.3);
            at.high - at.low
        };
        let (few, many) = (width(200), width(3200));
        // The standard error shrinks as 1 / sqrt(n): about 4 times.
        assert!(few > 2.5 * many, "{few} vs {many}");
    }

    #[test]
    fn a_curve_needs_solves_and_misses_that_fall_with_rating() {
        let all: Vec<Attempt> = simulated(1600.0, 200.0, 100, 1)
            .into_iter()
            .map(|a| Attempt { score: 1.0, ..a })
            .collect();
        assert!(matches!(
            SolveCurve::fit(&all),
            Err(CurveError::AllOrNone { solved: 100, .. })
        ));
        assert_eq!(SolveCurve::fit(&all[..5]), Err(CurveError::TooFew(5)));
        // Solving the hard puzzles and missing the easy ones: a rising curve.
        let rising: Vec<Attempt> = simulated(1600.0, 200.0, 200, 1)
            .into_iter()
            .map(|a| Attempt {
                score: 1.0 - a.score,
                ..a
            })
            .collect();
        assert_eq!(SolveCurve::fit(&rising), Err(CurveError::NotFalling));
    }
}

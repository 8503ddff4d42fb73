//! What the trees' output passes through to become a rating and its
//! deviation: the isotonic recalibration, the shift per model group and the
//! deviation table by group and band. Each is fitted on out-of-fold
//! outputs, after the trees.

use anyhow::Result;
use pav_regression::{IsotonicRegression, Point};
use serde::{Deserialize, Serialize};

use crate::core::error::bad_input;
use crate::stages::rate::model::trees::BAND_WIDTH;

/// Bands of the deviation table: below 800, 800-1200, ..., 2800 and above.
pub(super) const DEVIATION_BANDS: usize = 7;
/// Share of misses within one deviation: a normal law's one-sigma share.
const ONE_SIGMA_SHARE: f64 = 0.6827;
/// Fewest rows for a band's own deviation; a sparser band takes its
/// group's.
const MIN_BAND_ROWS: usize = 30;
/// A group's shift is its whole puzzles' mean miss, shrunk toward no shift
/// as if this many more rows had missed by nothing: a group of a handful of
/// rows moves little, one of hundreds by nearly its mean.
const SHIFT_PRIOR_ROWS: f64 = 10.0;

/// The isotonic map from the trees' output to a rating: strictly rising
/// between its points, extended past the ends along the line through the
/// points' weighted centre.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Recalibration {
    /// `(trees' output, rating, weight)`, by rising output.
    pub points: Vec<(f64, f64, f64)>,
}

impl Recalibration {
    /// Fits the map on out-of-fold `(output, truth)` pairs with weights.
    pub(crate) fn fit(output: &[f64], truth: &[f64], weight: &[f64]) -> Result<Self> {
        let points: Vec<Point<f64>> = output
            .iter()
            .zip(truth)
            .zip(weight)
            .map(|((x, y), w)| Point::new_with_weight(*x, *y, *w))
            .collect();
        let regression = IsotonicRegression::new_ascending(&points)
            .map_err(|e| bad_input(format!("recalibrating the rating model: {e}")))?;
        let points = regression
            .get_points_sorted()
            .iter()
            .map(|p| (*p.x(), *p.y(), p.weight()))
            .collect();
        Ok(Self {
            points: pool_thin_ends(points, MIN_END_WEIGHT),
        })
    }

    fn regression(&self) -> Option<IsotonicRegression<f64>> {
        let points: Vec<Point<f64>> = self
            .points
            .iter()
            .map(|(x, y, w)| Point::new_with_weight(*x, *y, *w))
            .collect();
        IsotonicRegression::new_ascending(&points).ok()
    }

    pub fn apply(&self, output: f64) -> f64 {
        self.regression()
            .and_then(|r| r.interpolate(output))
            .unwrap_or(output)
    }

    /// The ratings at the map's two ends: beyond them it only
    /// extrapolates, past every held-out output it was fitted on.
    pub fn ends(&self) -> Option<(f64, f64)> {
        Some((self.points.first()?.1, self.points.last()?.1))
    }

    /// The map for many outputs (builds the regression once).
    pub fn apply_all(&self, outputs: &[f64]) -> Vec<f64> {
        match self.regression() {
            Some(r) => outputs
                .iter()
                .map(|o| r.interpolate(*o).unwrap_or(*o))
                .collect(),
            None => outputs.to_vec(),
        }
    }
}

/// The least weight (about as many rows) each end point of the map stands
/// for. The isotonic fit leaves a lone extreme row as a point of its own
/// (one puzzle rated 2899 above a block of 120 averaging 2611): the map's
/// ends are the model's reach, which generation reads as the ratings it
/// can place puzzles at, so an end must be a mean of many rows, not one.
pub(crate) const MIN_END_WEIGHT: f64 = 50.0;

/// `points` (rising) with each end pooled into its neighbours, weighted
/// means of output and rating, until it holds at least `min_weight`. The
/// pooled point lies between the points it replaces, so the map still
/// rises.
fn pool_thin_ends(mut points: Vec<(f64, f64, f64)>, min_weight: f64) -> Vec<(f64, f64, f64)> {
    let pool = |a: (f64, f64, f64), b: (f64, f64, f64)| {
        let w = a.2 + b.2;
        if w > 0.0 {
            ((a.0 * a.2 + b.0 * b.2) / w, (a.1 * a.2 + b.1 * b.2) / w, w)
        } else {
            ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0, w)
        }
    };
    while points.len() > 1 && points[points.len() - 1].2 < min_weight {
        if let (Some(last), Some(before)) = (points.pop(), points.pop()) {
            points.push(pool(before, last));
        }
    }
    while points.len() > 1 && points[0].2 < min_weight {
        let first = points.remove(0);
        points[0] = pool(first, points[0]);
    }
    points
}

/// The band of the deviation table an estimate falls in.
pub(crate) fn deviation_band(estimate: f64) -> usize {
    ((estimate / BAND_WIDTH).floor() as i64 - 1).clamp(0, DEVIATION_BANDS as i64 - 1) as usize
}

/// Per group and band of the estimate, the deviation to write.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DeviationTable {
    /// Lower edges of the bands (the first band also takes what is below).
    pub band_floors: Vec<f64>,
    /// `[group][band]`.
    pub deviations: Vec<Vec<f64>>,
    /// `[group][band]`: the out-of-fold rows each deviation was read from
    /// (0: the band took its group's).
    pub rows: Vec<Vec<usize>>,
}

fn one_sigma_miss(misses: &mut [f64]) -> Option<f64> {
    if misses.is_empty() {
        return None;
    }
    misses.sort_by(f64::total_cmp);
    let at = ((misses.len() as f64 * ONE_SIGMA_SHARE).ceil() as usize).clamp(1, misses.len());
    Some(misses[at - 1])
}

impl DeviationTable {
    /// Fits the table on out-of-fold estimates: `groups` of them, each
    /// row's group in `group`.
    pub(crate) fn fit(estimate: &[f64], truth: &[f64], group: &[usize], groups: usize) -> Self {
        let mut all: Vec<f64> = estimate
            .iter()
            .zip(truth)
            .map(|(e, t)| (e - t).abs())
            .collect();
        let overall = one_sigma_miss(&mut all).unwrap_or(500.0);
        let mut deviations = Vec::new();
        let mut rows = Vec::new();
        for g in 0..groups {
            let members: Vec<usize> = (0..estimate.len()).filter(|&i| group[i] == g).collect();
            let mut misses: Vec<f64> = members
                .iter()
                .map(|&i| (estimate[i] - truth[i]).abs())
                .collect();
            let group_deviation = one_sigma_miss(&mut misses).unwrap_or(overall);
            let mut by_band = Vec::new();
            let mut counts = Vec::new();
            for band in 0..DEVIATION_BANDS {
                let mut misses: Vec<f64> = members
                    .iter()
                    .filter(|&&i| deviation_band(estimate[i]) == band)
                    .map(|&i| (estimate[i] - truth[i]).abs())
                    .collect();
                if misses.len() >= MIN_BAND_ROWS {
                    counts.push(misses.len());
                    by_band.push(one_sigma_miss(&mut misses).unwrap_or(group_deviation));
                } else {
                    counts.push(0);
                    by_band.push(group_deviation);
                }
            }
            deviations.push(by_band);
            rows.push(counts);
        }
        Self {
            band_floors: (0..DEVIATION_BANDS)
                .map(|b| (b as f64 + 1.0) * BAND_WIDTH)
                .collect(),
            deviations,
            rows,
        }
    }

    pub fn deviation(&self, group: usize, estimate: f64) -> f64 {
        // The table's own floors: a model fitted with fewer bands reads
        // its last band above them.
        let band = self
            .band_floors
            .iter()
            .skip(1)
            .take_while(|floor| estimate >= **floor)
            .count();
        self.deviations
            .get(group)
            .and_then(|bands| bands.get(band))
            .copied()
            .unwrap_or(500.0)
    }
}

/// Per model group, the points added to the recalibrated estimate.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GroupShifts {
    /// `[group]`: the shift in rating points.
    pub shifts: Vec<f64>,
    /// `[group]`: the whole puzzles it was read from.
    pub rows: Vec<usize>,
}

impl GroupShifts {
    /// Fits the shifts on out-of-fold estimates of whole puzzles: each
    /// group's mean of (truth - estimate), shrunk by [`SHIFT_PRIOR_ROWS`].
    pub(crate) fn fit(estimate: &[f64], truth: &[f64], group: &[usize], groups: usize) -> Self {
        let mut sums = vec![0.0; groups];
        let mut rows = vec![0usize; groups];
        for ((e, t), g) in estimate.iter().zip(truth).zip(group) {
            if let (Some(sum), Some(count)) = (sums.get_mut(*g), rows.get_mut(*g)) {
                *sum += t - e;
                *count += 1;
            }
        }
        let shifts = sums
            .iter()
            .zip(&rows)
            .map(|(sum, count)| sum / (*count as f64 + SHIFT_PRIOR_ROWS))
            .collect();
        Self { shifts, rows }
    }

    pub fn shift(&self, group: usize) -> f64 {
        self.shifts.get(group).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_extreme_row_is_pooled_into_the_end_point_it_sits_beyond() {
        // 120 rows averaging 2611 at the top, then one row rated 2899: the
        // map's top must be their mean, not the one row's rating.
        let mut output = vec![1000.0; 200];
        let mut truth = vec![1200.0; 200];
        output.extend(vec![2700.0; 120]);
        truth.extend(vec![2611.0; 120]);
        output.push(2850.0);
        truth.push(2899.0);
        // One lone low row too.
        output.push(100.0);
        truth.push(400.0);
        let weight = vec![1.0; output.len()];
        let map = Recalibration::fit(&output, &truth, &weight).expect("fits");
        let (low, high) = map.ends().expect("a map");
        let top = (2611.0 * 120.0 + 2899.0) / 121.0;
        assert!((high - top).abs() < 1e-9, "top {high}, want {top}");
        assert!(
            (low - (400.0 + 1200.0 * 200.0) / 201.0).abs() < 1e-9,
            "bottom {low}"
        );
        assert!(map.points.first().expect("a point").2 >= MIN_END_WEIGHT);
        assert!(map.points.last().expect("a point").2 >= MIN_END_WEIGHT);
        assert!(
            map.points
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1)
        );
    }
}

//! The few statistics several stages report with, each written once: the
//! mean and median of a sample, a share as a percentage, the isotonic
//! (non-decreasing) fit of a sequence, and the error a chart's drawing
//! fails with.

use pav_regression::{IsotonicRegression, Point};

/// The mean of `values`; `None` for no values.
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` for no values.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

/// A share (0 to 1) as a percentage to one decimal: `0.25` is `25.0%`.
pub(crate) fn pct(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// The non-decreasing sequence nearest `values` in squared error, every
/// value weighing the same: isotonic regression by pooling adjacent
/// violators (`pav_regression`). A pooled stretch holds its values' mean;
/// equal neighbours are pooled too, which leaves them as they were.
pub(crate) fn isotonic(values: &[f64]) -> Vec<f64> {
    let points: Vec<Point<f64>> = values
        .iter()
        .enumerate()
        .map(|(at, &value)| Point::new(at as f64, value))
        .collect();
    let Ok(fit) = IsotonicRegression::new_ascending(&points) else {
        // Only a fit through the origin with negative points fails; an
        // ascending fit does not: the values are already their own fit.
        return values.to_vec();
    };
    // Each pooled point stands for as many values as its weight (each
    // value weighs 1), in order of position.
    let mut fitted = Vec::with_capacity(values.len());
    for point in fit.get_points_sorted() {
        let pooled = point.weight().round() as usize;
        fitted.extend(std::iter::repeat_n(*point.y(), pooled));
    }
    fitted
}

/// The error a chart fails to draw with (plotters' backends report their
/// own error types): what was being drawn, and why it failed.
pub(crate) fn chart_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isotonic_pools_the_values_that_break_the_order() {
        assert_eq!(isotonic(&[0.1, 0.2, 0.3]), [0.1, 0.2, 0.3]);
        assert_eq!(isotonic(&[0.1, 0.3, 0.2, 0.4]), [0.1, 0.25, 0.25, 0.4]);
        let pooled = isotonic(&[0.3, 0.2, 0.1]);
        assert_eq!(pooled.len(), 3);
        for v in pooled {
            assert!((v - 0.2).abs() < 1e-12);
        }
        let fitted = isotonic(&[0.2, 0.5, 0.4, 0.3, 0.6]);
        assert_eq!(fitted.len(), 5);
        assert!((fitted[1] - 0.4).abs() < 1e-12 && (fitted[3] - 0.4).abs() < 1e-12);
        assert!(fitted.windows(2).all(|w| w[0] <= w[1]), "{fitted:?}");
        // Equal neighbours are pooled and stay as they were.
        assert_eq!(isotonic(&[0.5, 0.5, 0.7]), [0.5, 0.5, 0.7]);
        assert!(isotonic(&[]).is_empty());
    }

    #[test]
    fn mean_median_and_percent() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(pct(0.25), "25.0%");
        assert_eq!(pct(0.0004), "0.0%");
    }
}

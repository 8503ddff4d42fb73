//! The rating model of format 6: gradient-boosted trees over the feature
//! table (fitted with `forust-ml`, stored here as plain split/leaf arrays),
//! an isotonic recalibration of the trees' output (`pav_regression`) fitted
//! on out-of-fold predictions so that, read by the estimate, the mean true
//! rating matches it across the whole range, a shift per model group that
//! removes what bias the group keeps after that map, and a deviation
//! table: per model group and 400-point band of the estimate, the 68.3rd
//! percentile of the out-of-fold misses, so that about 68% of true ratings
//! fall within one deviation.
//!
//! The single-move proxies (the first move of a longer puzzle, rated as
//! the whole puzzle) teach the trees, but a release rates only whole
//! puzzles. So the trees see one input beyond the features, the row's kind
//! (1 for a proxy, 0 for a whole puzzle), and a puzzle is
//! always rated as whole: the trees learn how much harder the longer
//! puzzle behind a proxy is, instead of rating the rare genuine
//! single-move non-mate like the proxies around it (format 4 did, and a
//! group shift of about -480 points took it back;
//! docs/results/rating.md). The group shifts and the deviations are
//! still read from whole puzzles alone.
//!
//! The recalibration, the shifts and the deviations are fitted on
//! out-of-fold outputs of the trees: each row's output comes from trees
//! fitted on the folds (by source game) it is not in. A calibration
//! computes those once, for its held-out figures and its final model
//! alike (`folds` + 1 tree fits in all), which is what lets it fit on
//! hundreds of thousands of rows.
//!
//! Everything is deterministic: the trees are grown single-threaded with no
//! row or column sampling, and the out-of-fold fits run in parallel with
//! their results put back in fold order.
//!
//! The trees, their settings and fitting them are in `trees`; what their
//! output passes through (the isotonic map, the group shifts, the
//! deviation table) in `recalibration`; the whole model that rates a
//! puzzle in `estimator`.

mod estimator;
mod recalibration;
mod trees;

pub use estimator::Estimator;
pub use recalibration::{DeviationTable, Recalibration};
pub(crate) use trees::{BAND_WIDTH, FitRows, band_weights, fit_trees, out_of_fold, pick};
pub use trees::{TreeConfig, TreeNode, Trees};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::rate::model::recalibration::{GroupShifts, deviation_band};
    use forust_ml::objective::ObjectiveType;
    use forust_ml::{GradientBooster, Matrix};

    #[test]
    fn the_stored_trees_predict_as_forust_does() {
        let rows: Vec<Vec<f64>> = (0..200)
            .map(|i| vec![f64::from(i % 17), f64::from(i % 5), f64::from(i)])
            .collect();
        let y: Vec<f64> = rows
            .iter()
            .map(|x| 1000.0 + 40.0 * x[0] - 25.0 * x[1] * x[1])
            .collect();
        let fit_rows = FitRows {
            x: rows.iter().map(Vec::as_slice).collect(),
            y: y.clone(),
            weight: vec![1.0; 200],
            map_weight: vec![1.0; 200],
            group: vec![0; 200],
            fold: (0..200).collect(),
            proxy: vec![false; 200],
        };
        let config = TreeConfig {
            iterations: 30,
            min_leaf_weight: 1.0,
            ..TreeConfig::default()
        };
        let trees = fit_trees(&fit_rows, &config).expect("fits");
        let mut data = Vec::new();
        for j in 0..3 {
            data.extend(rows.iter().map(|x| x[j]));
        }
        let mut booster = GradientBooster::default()
            .set_objective_type(ObjectiveType::SquaredLoss)
            .set_iterations(30)
            .set_learning_rate(config.learning_rate)
            .set_max_depth(config.max_depth)
            .set_min_leaf_weight(1.0)
            .set_l2(config.l2)
            .set_parallel(false)
            .set_initialize_base_score(true);
        let matrix = Matrix::new(&data, 200, 3);
        booster
            .fit(&matrix, &y, &vec![1.0; 200], None)
            .expect("fits");
        let theirs = booster.predict(&matrix, false);
        for (x, p) in rows.iter().zip(theirs) {
            assert!((trees.predict(x) - p).abs() < 1e-6);
        }
        // It learnt something.
        let rmse = (rows
            .iter()
            .zip(&y)
            .map(|(x, t)| (trees.predict(x) - t).powi(2))
            .sum::<f64>()
            / 200.0)
            .sqrt();
        assert!(rmse < 100.0, "{rmse}");
    }

    #[test]
    fn trees_round_trip_through_their_one_line_form() {
        let trees = Trees {
            base_score: 1500.5,
            trees: vec![
                vec![
                    TreeNode::Split(3, 0.25, 1, 2),
                    TreeNode::Leaf(-12.5),
                    TreeNode::Leaf(0.25),
                ],
                vec![TreeNode::Leaf(3.0)],
            ],
        };
        let text = serde_json::to_string_pretty(&trees).expect("serializes");
        assert!(text.contains(r#""[[3,0.25,1,2],-12.5,0.25]""#), "{text}");
        let back: Trees = serde_json::from_str(&text).expect("reads");
        assert_eq!(back, trees);
        assert_eq!(back.predict(&[0.0, 0.0, 0.0, 0.2]), 1500.5 - 12.5 + 3.0);
        assert_eq!(back.predict(&[0.0, 0.0, 0.0, 0.3]), 1500.5 + 0.25 + 3.0);
    }

    #[test]
    fn recalibration_is_monotone_and_corrects_a_bias() {
        let output: Vec<f64> = (0..100).map(f64::from).collect();
        let truth: Vec<f64> = output.iter().map(|o| 2.0 * o + 100.0).collect();
        let map = Recalibration::fit(&output, &truth, &vec![1.0; 100]).expect("fits");
        assert!((map.apply(50.0) - 200.0).abs() < 1e-9);
        let mapped = map.apply_all(&[-10.0, 10.0, 90.0, 120.0]);
        assert!(mapped.windows(2).all(|w| w[0] < w[1]), "{mapped:?}");
    }

    #[test]
    fn a_whole_puzzle_is_rated_as_whole_not_as_the_proxies_beside_it() {
        // Two thirds of the rows are proxies rated 400 above the whole
        // puzzles with the same features (the longer puzzle behind a proxy
        // is harder). Trees blind to the row kind would land about 267
        // above the whole puzzles and leave a group shift of about -250 to
        // take it back (and one shift cannot be right at every rating);
        // with the kind as an input they rate a whole puzzle as the whole
        // rows are, and the shift is near none.
        let features: Vec<Vec<f64>> = (0..600).map(|i| vec![f64::from(i % 20)]).collect();
        let proxy: Vec<bool> = (0..600).map(|i| i % 3 != 0).collect();
        let whole_rating = |x: f64| 1000.0 + 50.0 * x;
        let y: Vec<f64> = (0..600)
            .map(|i| whole_rating(features[i][0]) + if proxy[i] { 400.0 } else { 0.0 })
            .collect();
        let rows = FitRows {
            x: features.iter().map(Vec::as_slice).collect(),
            weight: vec![1.0; 600],
            map_weight: vec![1.0; 600],
            y,
            group: vec![0; 600],
            fold: (0..600).collect(),
            proxy,
        };
        let config = TreeConfig {
            iterations: 100,
            min_leaf_weight: 1.0,
            ..TreeConfig::default()
        };
        let estimator = Estimator::fit(&rows, 1, 5, &config).expect("fits");
        assert_eq!(estimator.shifts.rows, vec![200]);
        let shift = estimator.shifts.shift(0);
        assert!(shift.abs() < 30.0, "shift {shift}");
        for x in [2.0, 10.0, 17.0] {
            let miss = estimator.estimate(&[x], 0) - whole_rating(x);
            assert!(miss.abs() < 80.0, "feature {x}: miss {miss}");
        }
        assert!(estimator.check(1, 1, 2900.0).is_ok());
        assert!(
            estimator.check(0, 1, 2900.0).is_err(),
            "the trees split on the row kind"
        );
        assert!(
            estimator.check(1, 2, 2900.0).is_err(),
            "one shift for two groups"
        );
    }

    #[test]
    fn group_shifts_shrink_toward_none() {
        let shifts = GroupShifts::fit(&[1500.0; 30], &[1200.0; 30], &[1; 30], 3);
        assert_eq!(shifts.rows, vec![0, 30, 0]);
        assert_eq!(shifts.shift(0), 0.0);
        assert!((shifts.shift(1) - (-300.0 * 30.0 / 40.0)).abs() < 1e-9);
        assert_eq!(shifts.shift(7), 0.0);
    }

    #[test]
    fn deviations_cover_about_two_thirds() {
        let estimate: Vec<f64> = (0..300).map(|i| 1500.0 + f64::from(i % 3)).collect();
        let truth: Vec<f64> = (0..300).map(|i| 1500.0 + f64::from(i) - 150.0).collect();
        let table = DeviationTable::fit(&estimate, &truth, &vec![0; 300], 1);
        let d = table.deviation(0, 1500.0);
        let within = estimate
            .iter()
            .zip(&truth)
            .filter(|(e, t)| (*e - *t).abs() <= d)
            .count();
        assert!((200..=210).contains(&within), "{within} within {d}");
        assert_eq!(deviation_band(100.0), 0);
        assert_eq!(deviation_band(1500.0), 2);
        assert_eq!(deviation_band(3000.0), 6);
    }
}

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

use anyhow::Result;
use forust_ml::objective::ObjectiveType;
use forust_ml::{GradientBooster, Matrix};
use pav_regression::{IsotonicRegression, Point};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::core::bounds::{Bound, Bounded};
use crate::core::error::bad_input;

/// Settings of the trees (`[rate.trees]`); stored in the model.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TreeConfig {
    /// Boosting rounds (one tree each).
    pub iterations: usize,
    pub learning_rate: f32,
    pub max_depth: usize,
    /// Least hessian (weighted rows) in a leaf.
    pub min_leaf_weight: f32,
    /// L2 penalty on leaf weights.
    pub l2: f32,
    /// Training rows are weighed by the 400-point band of their true
    /// rating: weight = (rows per band on average / rows in the band) to
    /// this power (0: every row alike, the fit's own mix; 1: every band
    /// alike). The recalibration is weighed the same way, so this is how
    /// a fit is aimed at another mix than the one it reads
    /// (docs/rating.md).
    pub band_balance: f64,
    /// Weight of a single-move proxy row against a genuine puzzle.
    pub proxy_weight: f64,
}

impl Default for TreeConfig {
    fn default() -> Self {
        Self {
            iterations: 500,
            learning_rate: 0.08,
            max_depth: 7,
            min_leaf_weight: 50.0,
            l2: 1.0,
            band_balance: 0.0,
            proxy_weight: 1.0,
        }
    }
}

impl Bounded for TreeConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("iterations", 1.0, 100000.0, "boosting rounds"),
        Bound::above("learning_rate", 0.0, 1.0, "the step of each tree"),
        Bound::within("max_depth", 1.0, 30.0, "levels of a tree"),
        Bound::within("min_leaf_weight", 0.0, 1e9, "weighted rows"),
        Bound::within("l2", 0.0, 1e9, "a penalty"),
        Bound::within("band_balance", 0.0, 1.0, "a power from 0 to 1"),
        Bound::within("proxy_weight", 0.0, 1e6, "a weight"),
    ];
}

impl TreeConfig {
    /// Checks every setting is a number a fit can use, naming the key.
    pub(crate) fn check(&self) -> Result<()> {
        crate::core::bounds::check_section(self).map_err(|e| bad_input(format!("[rate.trees] {e}")))
    }
}

/// Width of the rating bands the weights and the deviation table use.
pub(crate) const BAND_WIDTH: f64 = 400.0;
/// Bands of the deviation table: below 800, 800-1200, ..., 2800 and above.
const DEVIATION_BANDS: usize = 7;
/// Share of misses within one deviation: a normal law's one-sigma share.
const ONE_SIGMA_SHARE: f64 = 0.6827;
/// Fewest rows for a band's own deviation; a sparser band takes its
/// group's.
const MIN_BAND_ROWS: usize = 30;
/// A group's shift is its whole puzzles' mean miss, shrunk toward no shift
/// as if this many more rows had missed by nothing: a group of a handful of
/// rows moves little, one of hundreds by nearly its mean.
const SHIFT_PRIOR_ROWS: f64 = 10.0;

/// A tree node: a split (`[feature, threshold, left, right]`: rows with a
/// value below the threshold go left) or a leaf's value.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum TreeNode {
    Leaf(f32),
    Split(usize, f64, usize, usize),
}

/// The boosted trees: the base score plus every tree's leaf.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Trees {
    pub base_score: f64,
    /// Each tree's nodes, root first; in the model file one line of JSON
    /// per tree (a pretty-printed node per line would make the file ten
    /// times longer).
    #[serde(with = "one_line_per_tree")]
    pub trees: Vec<Vec<TreeNode>>,
}

/// Trees written as JSON strings, each one tree's compact node list.
mod one_line_per_tree {
    use crate::stages::rate::model::TreeNode;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(trees: &[Vec<TreeNode>], s: S) -> Result<S::Ok, S::Error> {
        let lines = trees
            .iter()
            .map(|tree| serde_json::to_string(tree).map_err(serde::ser::Error::custom))
            .collect::<Result<Vec<String>, S::Error>>()?;
        lines.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<TreeNode>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str(line).map_err(|e| D::Error::custom(format!("tree {i}: {e}")))
            })
            .collect()
    }
}

/// The largest magnitude a number of a rating model may have: ratings,
/// shifts and deviations are in hundreds or thousands of points; anything
/// near this is a damaged or edited file, not a fit.
const MODEL_NUMBER_LIMIT: f64 = 1e6;

/// `Ok` when `value` is finite and within [`MODEL_NUMBER_LIMIT`].
fn check_number(what: &str, value: f64) -> std::result::Result<(), String> {
    if value.is_finite() && value.abs() <= MODEL_NUMBER_LIMIT {
        Ok(())
    } else {
        Err(format!(
            "{what} is {value}, not a finite number within ±{MODEL_NUMBER_LIMIT}"
        ))
    }
}

impl Trees {
    /// Checks the trees can be walked: finite numbers, every split's
    /// feature below `features`, and every child inside its tree and after
    /// its parent (so that no walk loops or leaves the tree).
    pub(crate) fn check(&self, features: usize) -> std::result::Result<(), String> {
        check_number("base_score", self.base_score)?;
        for (t, tree) in self.trees.iter().enumerate() {
            if tree.is_empty() {
                return Err(format!("tree {t} has no node"));
            }
            for (n, node) in tree.iter().enumerate() {
                match node {
                    TreeNode::Leaf(value) => {
                        check_number(&format!("tree {t} node {n}'s leaf"), f64::from(*value))?;
                    }
                    TreeNode::Split(feature, threshold, left, right) => {
                        if *feature >= features {
                            return Err(format!(
                                "tree {t} node {n} splits on feature {feature}; the model has {features}"
                            ));
                        }
                        if threshold.is_nan() {
                            return Err(format!("tree {t} node {n}'s threshold is NaN"));
                        }
                        for child in [left, right] {
                            if *child <= n || *child >= tree.len() {
                                return Err(format!(
                                    "tree {t} node {n} has child {child}: children follow their \
                                     node inside the tree's {} nodes",
                                    tree.len()
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut total = self.base_score;
        for tree in &self.trees {
            let mut node = 0;
            loop {
                match tree.get(node) {
                    Some(TreeNode::Split(feature, threshold, left, right)) => {
                        let value = x.get(*feature).copied().unwrap_or(0.0);
                        node = if value < *threshold { *left } else { *right };
                    }
                    Some(TreeNode::Leaf(value)) => {
                        total += f64::from(*value);
                        break;
                    }
                    None => break,
                }
            }
        }
        total
    }

    fn of_booster(booster: &GradientBooster) -> Self {
        let trees = booster
            .trees
            .iter()
            .map(|tree| {
                // forust numbers nodes by `num`; they are stored in that
                // order, which the children indices refer to.
                let mut nodes = vec![TreeNode::Leaf(0.0); tree.nodes.len()];
                for node in &tree.nodes {
                    let slot = nodes.get_mut(node.num);
                    if let Some(slot) = slot {
                        *slot = if node.is_leaf {
                            TreeNode::Leaf(node.weight_value)
                        } else {
                            TreeNode::Split(
                                node.split_feature,
                                node.split_value,
                                node.left_child,
                                node.right_child,
                            )
                        };
                    }
                }
                nodes
            })
            .collect();
        Self {
            base_score: booster.base_score,
            trees,
        }
    }
}

/// Rows to fit on: features, true ratings, weights, each row's model
/// group and source game (for the inner folds), and whether it is a
/// single-move proxy rather than a whole puzzle.
pub(crate) struct FitRows<'a> {
    pub x: Vec<&'a [f64]>,
    pub y: Vec<f64>,
    pub weight: Vec<f64>,
    pub group: Vec<usize>,
    pub fold: Vec<usize>,
    pub proxy: Vec<bool>,
}

/// The trees' last input, the row kind (its index is the number of
/// features): 1 for a single-move proxy, 0 for a whole puzzle. A puzzle to
/// rate is whole, so [`Estimator::estimate`] passes 0.
fn proxy_input(proxy: bool) -> f64 {
    if proxy { 1.0 } else { 0.0 }
}

/// The trees' input for a row: its features, then its kind.
fn tree_input(features: &[f64], proxy: bool) -> Vec<f64> {
    let mut input = Vec::with_capacity(features.len() + 1);
    input.extend_from_slice(features);
    input.push(proxy_input(proxy));
    input
}

impl Trees {
    /// The trees' output for a whole puzzle (not a proxy) with `features`.
    pub(crate) fn predict_whole(&self, features: &[f64]) -> f64 {
        self.predict(&tree_input(features, false))
    }
}

/// Grows the trees on `rows` (their features and kind).
pub(crate) fn fit_trees(rows: &FitRows, config: &TreeConfig) -> Result<Trees> {
    let n = rows.x.len();
    let width = rows.x.first().map_or(0, |x| x.len());
    if n < 2 || width == 0 {
        return Err(bad_input("the rating model needs at least 2 rows to fit"));
    }
    // Column-major, as forust reads it; the row kind last.
    let mut data = Vec::with_capacity(n * (width + 1));
    for j in 0..width {
        data.extend(rows.x.iter().map(|x| x[j]));
    }
    data.extend(rows.proxy.iter().map(|&p| proxy_input(p)));
    let matrix = Matrix::new(&data, n, width + 1);
    let mut booster = GradientBooster::default()
        .set_objective_type(ObjectiveType::SquaredLoss)
        .set_iterations(config.iterations)
        .set_learning_rate(config.learning_rate)
        .set_max_depth(config.max_depth)
        .set_min_leaf_weight(config.min_leaf_weight)
        .set_l2(config.l2)
        .set_parallel(false)
        .set_initialize_base_score(true);
    booster
        .fit(&matrix, &rows.y, &rows.weight, None)
        .map_err(|e| bad_input(format!("fitting the rating trees: {e}")))?;
    Ok(Trees::of_booster(&booster))
}

/// Each row's output of trees fitted on the other folds (`fold % folds`),
/// in row order; the folds are fitted in parallel.
pub(crate) fn out_of_fold(rows: &FitRows, folds: usize, config: &TreeConfig) -> Result<Vec<f64>> {
    let folds = folds.max(2);
    let fold_fits: Vec<Result<(Vec<usize>, Vec<f64>)>> = (0..folds)
        .into_par_iter()
        .map(|fold| {
            let (train, held): (Vec<usize>, Vec<usize>) =
                (0..rows.x.len()).partition(|&i| rows.fold[i] % folds != fold);
            let trees = fit_trees(&rows.subset(&train), config)?;
            let predicted = held
                .iter()
                .map(|&i| trees.predict(&tree_input(rows.x[i], rows.proxy[i])))
                .collect();
            Ok((held, predicted))
        })
        .collect();
    let mut output = vec![0.0; rows.x.len()];
    for fit in fold_fits {
        let (held, predicted) = fit?;
        for (i, p) in held.into_iter().zip(predicted) {
            output[i] = p;
        }
    }
    Ok(output)
}

/// Weights of rows with true ratings `y`: see [`TreeConfig::band_balance`].
pub(crate) fn band_weights(y: &[f64], proxy: &[bool], config: &TreeConfig) -> Vec<f64> {
    let band = |r: f64| (r / BAND_WIDTH).floor().max(0.0) as usize;
    let bands = y.iter().map(|r| band(*r)).max().map_or(1, |b| b + 1);
    let mut counts = vec![0usize; bands];
    for r in y {
        counts[band(*r)] += 1;
    }
    let used = counts.iter().filter(|c| **c > 0).count().max(1);
    let average = y.len() as f64 / used as f64;
    y.iter()
        .zip(proxy)
        .map(|(r, is_proxy)| {
            let balance = (average / counts[band(*r)] as f64).powf(config.band_balance);
            balance * if *is_proxy { config.proxy_weight } else { 1.0 }
        })
        .collect()
}

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
        Ok(Self { points })
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

/// The fitted estimator: trees, recalibration, group shifts, deviations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Estimator {
    pub trees: Trees,
    pub recalibration: Recalibration,
    pub shifts: GroupShifts,
    pub deviations: DeviationTable,
}

impl Estimator {
    /// Checks the estimator whole, each failure naming its field in the
    /// model file: every number finite and within reach, its trees
    /// walkable (see [`Trees::check`]) over `features` and the row kind,
    /// at least one tree, the recalibration map rising, one shift per
    /// group of `groups` and within `±span` (the rating scale's), and a
    /// positive deviation for every group and band. A model that fails
    /// would write wrong ratings, never an error: a deviation of -500 into
    /// `RatingDeviation`, every rating 1574-1584 from no tree.
    pub(crate) fn check(
        &self,
        features: usize,
        groups: usize,
        span: f64,
    ) -> std::result::Result<(), String> {
        self.trees.check(features + 1)?;
        if self.trees.trees.is_empty() {
            return Err("estimator.trees.trees is empty: a model has at least one tree".into());
        }
        let points = &self.recalibration.points;
        if points.is_empty() {
            return Err("estimator.recalibration.points is empty: the map needs a point".into());
        }
        for (i, (x, y, w)) in points.iter().enumerate() {
            check_number(&format!("estimator.recalibration.points[{i}]'s output"), *x)?;
            check_number(&format!("estimator.recalibration.points[{i}]'s rating"), *y)?;
            check_number(&format!("estimator.recalibration.points[{i}]'s weight"), *w)?;
        }
        for (i, pair) in points.windows(2).enumerate() {
            let ((x0, y0, _), (x1, y1, _)) = (pair[0], pair[1]);
            if x1 < x0 || y1 < y0 {
                return Err(format!(
                    "estimator.recalibration.points[{}] ({x1}, {y1}) falls below point {i} \
                     ({x0}, {y0}): the map rises with the trees' output",
                    i + 1
                ));
            }
        }
        let shifts = &self.shifts.shifts;
        if shifts.len() != groups {
            return Err(format!(
                "estimator.shifts.shifts has {} shifts for the model's {groups} groups",
                shifts.len()
            ));
        }
        for (g, shift) in shifts.iter().enumerate() {
            if !shift.is_finite() || shift.abs() > span {
                return Err(format!(
                    "estimator.shifts.shifts[{g}] is {shift}: a shift moves a rating within the \
                     scale, at most ±{span}"
                ));
            }
        }
        let deviations = &self.deviations.deviations;
        if deviations.len() != groups {
            return Err(format!(
                "estimator.deviations.deviations has {} groups for the model's {groups}",
                deviations.len()
            ));
        }
        for (g, bands) in deviations.iter().enumerate() {
            if bands.len() != DEVIATION_BANDS {
                return Err(format!(
                    "estimator.deviations.deviations[{g}] has {} bands, not {DEVIATION_BANDS}",
                    bands.len()
                ));
            }
            for (b, deviation) in bands.iter().enumerate() {
                let field = format!("estimator.deviations.deviations[{g}][{b}]");
                check_number(&field, *deviation)?;
                if *deviation <= 0.0 {
                    return Err(format!(
                        "{field} is {deviation}: a deviation is a positive number of points"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Fits the trees on every row, and the recalibration and deviations
    /// on out-of-fold outputs over `folds` folds of the rows' `fold` keys.
    #[cfg(test)]
    pub(crate) fn fit(
        rows: &FitRows,
        groups: usize,
        folds: usize,
        config: &TreeConfig,
    ) -> Result<Self> {
        let output = out_of_fold(rows, folds, config)?;
        Self::from_outputs(fit_trees(rows, config)?, rows, &output, groups)
    }

    /// The estimator of `trees` (fitted on `rows`), its recalibration,
    /// shifts and deviations fitted on the rows' out-of-fold `output`.
    pub(crate) fn from_outputs(
        trees: Trees,
        rows: &FitRows,
        output: &[f64],
        groups: usize,
    ) -> Result<Self> {
        let recalibration = Recalibration::fit(output, &rows.y, &rows.weight)?;
        // The shifts and the deviations: whole puzzles only.
        let whole = rows.whole_puzzles();
        let (truth, group) = (pick(&rows.y, &whole), pick(&rows.group, &whole));
        let mapped = pick(&recalibration.apply_all(output), &whole);
        let shifts = GroupShifts::fit(&mapped, &truth, &group, groups);
        let estimate: Vec<f64> = mapped
            .iter()
            .zip(&group)
            .map(|(m, g)| m + shifts.shift(*g))
            .collect();
        let deviations = DeviationTable::fit(&estimate, &truth, &group, groups);
        Ok(Self {
            trees,
            recalibration,
            shifts,
            deviations,
        })
    }

    /// The estimate of a whole puzzle of model `group` with features `x`
    /// (not yet clamped to the rating range).
    pub fn estimate(&self, x: &[f64], group: usize) -> f64 {
        let output = self.trees.predict_whole(x);
        self.recalibration.apply(output) + self.shifts.shift(group)
    }
}

/// The values at `index`, in that order.
pub(crate) fn pick<T: Copy>(values: &[T], index: &[usize]) -> Vec<T> {
    index.iter().map(|&i| values[i]).collect()
}

impl FitRows<'_> {
    /// The rows at `index`, in that order.
    pub(crate) fn subset(&self, index: &[usize]) -> Self {
        Self {
            x: pick(&self.x, index),
            y: pick(&self.y, index),
            weight: pick(&self.weight, index),
            group: pick(&self.group, index),
            fold: pick(&self.fold, index),
            proxy: pick(&self.proxy, index),
        }
    }

    /// The rows that are whole puzzles, not proxies.
    fn whole_puzzles(&self) -> Vec<usize> {
        (0..self.y.len()).filter(|&i| !self.proxy[i]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

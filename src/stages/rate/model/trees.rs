//! The boosted trees of the rating model: their settings (`[rate.trees]`),
//! the stored split/leaf arrays and their checks, the rows they are fitted
//! on, fitting them with `forust-ml` and their out-of-fold outputs. Apart
//! from the recalibration because the trees are fitted first and alone.

use anyhow::Result;
use forust_ml::objective::ObjectiveType;
use forust_ml::{GradientBooster, Matrix};
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
    /// alike). This weighs the trees' fit: how much of their splits go to
    /// telling the rare top (and bottom) puzzles apart.
    pub band_balance: f64,
    /// The same power for the recalibration, which decides the mix the
    /// ratings are calibrated for: 0 is the mix the fit reads (the
    /// natural mix of the database), 1 every band alike. Apart from
    /// `band_balance` so that the trees can be aimed at the top while the
    /// ratings stay calibrated for the natural mix (docs/rating.md).
    pub map_band_balance: f64,
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
            map_band_balance: 0.0,
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
        Bound::within("map_band_balance", 0.0, 1.0, "a power from 0 to 1"),
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
    use crate::stages::rate::model::trees::TreeNode;
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
pub(super) fn check_number(what: &str, value: f64) -> std::result::Result<(), String> {
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
    /// Each row's weight in the trees' fit.
    pub weight: Vec<f64>,
    /// Each row's weight in the recalibration.
    pub map_weight: Vec<f64>,
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
pub(super) fn tree_input(features: &[f64], proxy: bool) -> Vec<f64> {
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

/// Weights of rows with true ratings `y`, each band's count to the power
/// `balance` ([`TreeConfig::band_balance`], [`TreeConfig::map_band_balance`]).
pub(crate) fn band_weights(
    y: &[f64],
    proxy: &[bool],
    balance: f64,
    config: &TreeConfig,
) -> Vec<f64> {
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
            let balance = (average / counts[band(*r)] as f64).powf(balance);
            balance * if *is_proxy { config.proxy_weight } else { 1.0 }
        })
        .collect()
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
            map_weight: pick(&self.map_weight, index),
            group: pick(&self.group, index),
            fold: pick(&self.fold, index),
            proxy: pick(&self.proxy, index),
        }
    }

    /// The rows that are whole puzzles, not proxies.
    pub(super) fn whole_puzzles(&self) -> Vec<usize> {
        (0..self.y.len()).filter(|&i| !self.proxy[i]).collect()
    }
}

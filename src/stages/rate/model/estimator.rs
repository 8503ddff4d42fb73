//! The estimator: the trees, the recalibration, the group shifts and the
//! deviation table as one model that rates a puzzle, fitted from the
//! out-of-fold outputs and checked whole when a model file is read.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::stages::rate::model::recalibration::{
    DEVIATION_BANDS, DeviationTable, GroupShifts, Recalibration,
};
use crate::stages::rate::model::trees::{FitRows, Trees, check_number, pick};
#[cfg(test)]
use crate::stages::rate::model::trees::{TreeConfig, fit_trees, out_of_fold};

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
        let recalibration = Recalibration::fit(output, &rows.y, &rows.map_weight)?;
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

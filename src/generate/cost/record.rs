//! A projection as a record: the projection's part of `plan.json` and the
//! cost of unfilled cells (`cost_of_unfilled` of a run's `generate`
//! summary), which a later reader reads back through these types.

use serde::{Deserialize, Serialize};

use crate::generate::cost::model::{
    CellCost, CellSample, DRAWS, Interval, Projection, StreamCost, StreamSample,
};
use crate::generate::cost::numbers::round;
use crate::stages::release::cells::Quota;

/// A median and a 90% interval as `plan.json` and the cost of unfilled
/// cells record them: `{"median", "low", "high"}`, each rounded.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub(crate) struct IntervalRecord {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

/// A projected amount as `plan.json` and the cost of unfilled cells
/// record it: an interval, or `{"at_least": x}` where some cell has no
/// measured rate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum Estimate {
    AtLeast { at_least: f64 },
    Interval(IntervalRecord),
}

/// One stream's entry in `profiles` of `plan.json` and of the cost of
/// unfilled cells.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct StreamRecord {
    /// The profile (`null`: generation's own).
    pub profile: Option<String>,
    /// The store key.
    pub store: String,
    pub sample_games: u64,
    pub sample_cpu_hours: f64,
    pub quotas_met: bool,
    pub cells: usize,
    pub cells_filled: usize,
    pub cells_never_reached: usize,
    pub cells_beyond_model_range: usize,
    pub projected_cpu_hours: Estimate,
    pub projected_games: Estimate,
}

/// One target cell's entry in `per_cell` (and `never_reached`,
/// `beyond_model_range`) of `plan.json` and of the cost of unfilled cells.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct CellCostRecord {
    /// [`Cell::bin_label`].
    pub rating_bin: String,
    /// Solver moves.
    pub length: usize,
    pub mate: bool,
    /// The stream's profile (`null`: generation's own).
    pub profile: Option<String>,
    pub wanted: Quota,
    /// The counted puzzles.
    pub found: usize,
    /// Counted puzzles per engine CPU-hour (`null` when the stream measured
    /// nothing).
    pub per_cpu_hour: Option<f64>,
    pub filled_in_sample: bool,
    pub never_reached: bool,
    pub beyond_model_range: bool,
    pub projected_cpu_hours: Option<IntervalRecord>,
    pub at_least_cpu_hours: Option<f64>,
}

/// A projection as a record: the projection's part of `plan.json` and
/// the cost of unfilled cells (`cost_of_unfilled` of a run's `generate`
/// summary).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ProjectionRecord {
    /// CPU-hours of the target (a lower bound where some unfilled cell has
    /// no measured rate).
    pub total_cpu_hours: Estimate,
    /// CPU-hours of the reached cells alone (`null` when none is projected).
    pub reached_cells_cpu_hours: Option<IntervalRecord>,
    pub spent_cpu_hours: f64,
    pub more_cpu_hours: Estimate,
    pub cells: usize,
    pub cells_never_reached: usize,
    pub cells_beyond_model_range: usize,
    pub total_excludes_never_reached: bool,
    /// Always `5th-95th percentile`.
    pub interval: String,
    pub draws: usize,
    pub profiles: Vec<StreamRecord>,
    pub per_cell: Vec<CellCostRecord>,
}

/// The budget `cost_of_unfilled` suggests: `{"max_cpu_hours": x}` or
/// `{"max_games": n}`, after the budget that stopped the run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum SuggestedBudget {
    MaxCpuHours { max_cpu_hours: f64 },
    MaxGames { max_games: u64 },
}

/// `cost_of_unfilled` in a run's `generate` summary: what the cells a
/// budget left unfilled would cost, and the budget to raise to (absent
/// when no cell is projected and none lacks a rate).
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct UnfilledCost {
    #[serde(flatten)]
    pub projection: ProjectionRecord,
    pub suggested: Option<SuggestedBudget>,
    pub suggested_is_lower_bound: Option<bool>,
}

impl Interval {
    /// The interval as a record, each end rounded ([`round`]).
    fn record(self) -> IntervalRecord {
        IntervalRecord {
            median: round(self.median),
            low: round(self.low),
            high: round(self.high),
        }
    }
}

impl Estimate {
    /// A lower bound where there is one, else the interval.
    fn of(at_least: Option<f64>, interval: Interval) -> Estimate {
        match at_least {
            Some(at_least) => Estimate::AtLeast { at_least },
            None => Estimate::Interval(interval.record()),
        }
    }
}

impl Projection {
    /// The projection as a record: the total, each stream, each cell.
    pub(crate) fn record(&self, samples: &[StreamSample]) -> ProjectionRecord {
        let profiles: Vec<StreamRecord> = samples
            .iter()
            .zip(&self.streams)
            .map(|(stream, cost)| StreamRecord::of(stream, cost))
            .collect();
        let cells: Vec<CellCostRecord> = self
            .cell_rows(samples)
            .map(|(stream, cell, cost)| CellCostRecord::of(stream, cell, cost))
            .collect();
        let total = Estimate::of(self.at_least.map(round), self.total);
        let more = Estimate::of(
            self.at_least
                .map(|hours| round((hours - self.spent).max(0.0))),
            self.total.minus(self.spent),
        );
        ProjectionRecord {
            total_cpu_hours: total,
            reached_cells_cpu_hours: self.projects_a_cell().then(|| self.total.record()),
            spent_cpu_hours: round(self.spent),
            more_cpu_hours: more,
            cells: cells.len(),
            cells_never_reached: self.never_reached,
            cells_beyond_model_range: self.beyond_model,
            total_excludes_never_reached: self.never_reached + self.beyond_model > 0,
            interval: "5th-95th percentile".to_string(),
            draws: DRAWS,
            profiles,
            per_cell: cells,
        }
    }
}

impl StreamRecord {
    /// One stream's entry: its sample, its cells by cost, and what it is
    /// projected to cost (or needs at least).
    fn of(stream: &StreamSample, cost: &StreamCost) -> StreamRecord {
        let count = |f: fn(&CellCost) -> bool| cost.cells.iter().filter(|c| f(c)).count();
        StreamRecord {
            profile: stream.profile.clone(),
            store: stream.store.clone(),
            sample_games: stream.games,
            sample_cpu_hours: round(stream.spent_hours()),
            quotas_met: stream.met,
            cells: stream.cells.len(),
            cells_filled: count(|c| *c == CellCost::Filled),
            cells_never_reached: count(|c| matches!(c, CellCost::NeverReached(_))),
            cells_beyond_model_range: count(|c| *c == CellCost::BeyondModel),
            projected_cpu_hours: Estimate::of(
                cost.at_least.map(|bound| round(bound.cpu_hours)),
                cost.cpu_hours,
            ),
            projected_games: Estimate::of(cost.at_least.map(|bound| bound.games), cost.games),
        }
    }
}

impl CellCostRecord {
    /// One cell's entry: what it wants, what the sample found and at what
    /// rate, and what filling it is projected to cost.
    fn of(stream: &StreamSample, cell: &CellSample, cost: &CellCost) -> CellCostRecord {
        CellCostRecord {
            rating_bin: cell.cell.bin_label(),
            length: cell.cell.length,
            mate: cell.cell.mate,
            profile: stream.profile.clone(),
            wanted: cell.quota,
            found: cell.found,
            per_cpu_hour: stream
                .measured()
                .then(|| round(cell.found as f64 / stream.counted_hours())),
            filled_in_sample: *cost == CellCost::Filled,
            never_reached: matches!(cost, CellCost::NeverReached(_)),
            beyond_model_range: *cost == CellCost::BeyondModel,
            projected_cpu_hours: match cost {
                CellCost::Projected(interval) => Some(interval.record()),
                _ => None,
            },
            at_least_cpu_hours: match cost {
                CellCost::NeverReached(Some(hours)) => Some(round(*hours)),
                _ => None,
            },
        }
    }
}

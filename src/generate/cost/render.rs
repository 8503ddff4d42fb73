//! A projection in words: the intervals and totals, the per-cell table,
//! the cells never reached with what to try, and what the cells a budget
//! left unfilled would cost.

use crate::generate::cost::advice::{MiningSwitches, reach_advice};
use crate::generate::cost::model::{CellCost, Interval, Projection, StreamSample, project};
use crate::generate::cost::numbers::{round, short};
use crate::generate::cost::record::{SuggestedBudget, UnfilledCost};
use crate::stages::release::cells::Cell;

impl Interval {
    /// `0.42 (90% interval 0.25-0.80)`.
    pub(crate) fn human(self) -> String {
        format!(
            "{} (90% interval {}-{})",
            short(self.median),
            short(self.low),
            short(self.high)
        )
    }
}

impl Projection {
    /// The target's CPU-hours for people: `0.42 (90% interval 0.25-0.80)`,
    /// or `at least 0.42` when some unfilled cell has no measured rate.
    pub(crate) fn total_human(&self) -> String {
        match self.at_least {
            Some(hours) => format!("at least {}", short(hours)),
            None => self.total.human(),
        }
    }

    /// The cells never reached, with their stream's mining switches.
    fn never_reached_cells<'a>(
        &'a self,
        samples: &'a [StreamSample],
    ) -> Vec<(&'a Cell, MiningSwitches)> {
        self.cell_rows(samples)
            .filter(|(_, _, cost)| matches!(cost, CellCost::NeverReached(_)))
            .map(|(stream, cell, _)| (&cell.cell, stream.mining))
            .collect()
    }

    /// The cells whose cost is of the kind `kind` tells.
    fn cells_costing<'a>(
        &'a self,
        samples: &'a [StreamSample],
        kind: fn(&CellCost) -> bool,
    ) -> Vec<&'a Cell> {
        self.cell_rows(samples)
            .filter(|(_, _, cost)| kind(cost))
            .map(|(_, cell, _)| &cell.cell)
            .collect()
    }

    /// The per-cell table, for people.
    pub(crate) fn human_table(&self, samples: &[StreamSample]) -> String {
        let named = samples.len() > 1 || samples.iter().any(|s| s.profile.is_some());
        let profile = |name: &str| match named {
            true => format!(" {name:<10}"),
            false => String::new(),
        };
        let mut text = format!(
            "  {:<22}{} {:>7} {:>6} {:>10}  {}\n",
            "cell",
            profile("profile"),
            "wanted",
            "found",
            "per CPU-h",
            "CPU-hours to fill"
        );
        for (stream, cell, cost) in self.cell_rows(samples) {
            let rate = if stream.measured() {
                short(cell.found as f64 / stream.counted_hours())
            } else {
                "-".to_string()
            };
            let fill = match cost {
                CellCost::Filled => "filled by the sample".to_string(),
                CellCost::Projected(interval) => interval.human(),
                CellCost::NeverReached(Some(hours)) => {
                    format!("never reached; more than {}", short(*hours))
                }
                CellCost::NeverReached(None) => "not sampled".to_string(),
                CellCost::BeyondModel => "beyond the rating model's range".to_string(),
            };
            text.push_str(&format!(
                "  {:<22}{} {:>7} {:>6} {:>10}  {fill}\n",
                cell.cell.label(),
                profile(stream.name()),
                format!("{}+{}", cell.quota.train, cell.quota.test),
                cell.found,
                rate,
            ));
        }
        text
    }

    /// The cells never reached in a few lines: how many, their bounds,
    /// the first few named, and what to try (`more`: how to see more games).
    pub(crate) fn human_never_reached(
        &self,
        samples: &[StreamSample],
        indent: &str,
        more: &str,
    ) -> String {
        let mut text = self.human_beyond_model(samples, indent);
        let cells = self.never_reached_cells(samples);
        if cells.is_empty() {
            return text;
        }
        let bounds: Vec<f64> = self
            .cell_rows(samples)
            .filter_map(|(_, _, cost)| match cost {
                CellCost::NeverReached(bound) => *bound,
                _ => None,
            })
            .collect();
        let bound = match (
            bounds.iter().copied().reduce(f64::min),
            bounds.iter().copied().reduce(f64::max),
        ) {
            (Some(low), Some(high)) if short(low) == short(high) => format!(
                "; each needs more than {} CPU-hours at the 95% upper end of its rate",
                short(low)
            ),
            (Some(low), Some(high)) => format!(
                "; each needs more than {}-{} CPU-hours at the 95% upper end of its rate",
                short(low),
                short(high)
            ),
            _ => String::new(),
        };
        text.push_str(&format!(
            "{indent}{} cell{} never reached{bound}: {}\n{indent}to reach them: {more}{}\n",
            cells.len(),
            if cells.len() == 1 { "" } else { "s" },
            first_named(&cells.iter().map(|(c, _)| *c).collect::<Vec<_>>()),
            reach_advice(&cells)
        ));
        text
    }

    /// The cells beyond the rating model's reach, in a line.
    fn human_beyond_model(&self, samples: &[StreamSample], indent: &str) -> String {
        let cells = self.cells_costing(samples, |cost| *cost == CellCost::BeyondModel);
        if cells.is_empty() {
            return String::new();
        }
        format!(
            "{indent}{} cell{} beyond the ratings the rating model gives without extrapolating (no budget is projected to fill {them}): {}\n{indent}the run still waits for {them}: take {them} out of the target ([[release.cells]] with train = 0 and test = 0) or rate with a model that reaches {them}\n",
            cells.len(),
            if cells.len() == 1 { " lies" } else { "s lie" },
            first_named(&cells),
            them = if cells.len() == 1 { "it" } else { "them" },
        )
    }
}

/// The first few cells by name, then how many more.
fn first_named(cells: &[&Cell]) -> String {
    const NAMED: usize = 6;
    let labels: Vec<String> = cells.iter().map(|c| c.label()).collect();
    crate::stages::release::cells::first_of(&labels, NAMED).join(", ")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Budget {
    MaxGames,
    MaxCpuHours,
}

/// For a run a budget stopped with cells unfilled: what they would cost
/// at the rates its games measured, in lines for its summary and as a
/// record (`cost_of_unfilled`).
pub(crate) fn unfilled(
    samples: &[StreamSample],
    seed: u64,
    budget: Budget,
) -> (String, UnfilledCost) {
    let projection = project(samples, seed);
    let more = projection.total.minus(projection.spent);
    let reached_unfilled = projection
        .streams
        .iter()
        .flat_map(|s| &s.cells)
        .filter(|c| matches!(c, CellCost::Projected(_)))
        .count();
    let unknown = projection.never_reached + projection.beyond_model;
    // Where some cell has no measured rate, the budget to raise to is a
    // lower bound, not an interval's upper end.
    let (about, end) = match projection.at_least {
        Some(_) => (
            "at least",
            "a lower bound: some cells have no measured rate",
        ),
        None => ("about", "the interval's upper end"),
    };
    let covering_games = projection.covering_games();
    let covering_cpu = projection.covering_cpu_hours();
    let (raise, suggested) = match budget {
        Budget::MaxCpuHours => (
            format!(
                "raise max_cpu_hours to {about} {} ({end})",
                short(covering_cpu)
            ),
            SuggestedBudget::MaxCpuHours {
                max_cpu_hours: round(covering_cpu),
            },
        ),
        Budget::MaxGames => (
            format!("raise max_games to {about} {covering_games} ({end})"),
            SuggestedBudget::MaxGames {
                max_games: covering_games,
            },
        ),
    };
    let mut text = String::new();
    let mut cost = UnfilledCost {
        projection: projection.record(samples),
        suggested: None,
        suggested_is_lower_bound: None,
    };
    if reached_unfilled > 0 {
        text.push_str(&format!(
            "    at the rates these games measured, the {reached_unfilled} unfilled cell{} they reached need about {} more engine CPU-hours, {} {}\n",
            if reached_unfilled == 1 { "" } else { "s" },
            more.human(),
            short(projection.total.median),
            if unknown > 0 { "for them alone" } else { "in all" },
        ));
    }
    if let Some(hours) = projection.at_least {
        text.push_str(&format!(
            "    the whole target needs at least {} engine CPU-hours ({} spent): {unknown} unfilled cell{} had no puzzle in these games, so no rate is measured for {}\n",
            short(hours),
            short(projection.spent),
            if unknown == 1 { "" } else { "s" },
            if unknown == 1 { "it" } else { "them" },
        ));
    }
    if reached_unfilled > 0 || projection.at_least.is_some() {
        text.push_str(&format!("    {raise}\n"));
        cost.suggested = Some(suggested);
        cost.suggested_is_lower_bound = Some(projection.at_least.is_some());
    }
    text.push_str(&projection.human_never_reached(
        samples,
        "    ",
        "raise the budget (`run --plan --plan-games 80`, with this run's --config and --release, measures more games first)",
    ));
    (text, cost)
}

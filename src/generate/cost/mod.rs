//! What a generation target costs, projected from the games already
//! counted: the engine CPU-hours each target cell needs and the total, with
//! an interval, and the cells the games never reached. `run --plan` (see
//! [`crate::generate::plan`]) projects from a short sample; a `run` that a
//! budget stopped projects its unfilled cells from its own games.
//!
//! - `model`: the samples, the model and its projection;
//! - `record`: the projection as `plan.json` and `cost_of_unfilled` record
//!   (and read back) it;
//! - `render`: the projection in words, and the cost of what a budget left
//!   unfilled;
//! - `advice`: what to try for cells never reached;
//! - `numbers`: how the figures are rounded, for files and for people.

mod advice;
mod model;
mod numbers;
mod record;
mod render;

pub(crate) use advice::MiningSwitches;
pub(crate) use model::{CellSample, Projection, StreamSample, project};
pub(crate) use numbers::{round, short};
pub(crate) use record::{CellCostRecord, Estimate, IntervalRecord, ProjectionRecord, UnfilledCost};
pub(crate) use render::{Budget, unfilled};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::seed::{self, Domain, Key};
    use crate::generate::cost::advice::reach_advice;
    use crate::generate::cost::model::{CellCost, DRAWS, Interval, waiting_hours};
    use crate::stages::release::cells::{Cell, Quota};

    fn cell(length: usize, found: usize, train: usize, test: usize) -> CellSample {
        CellSample {
            cell: Cell {
                bin_lo: 1000,
                bin_hi: 1100,
                length,
                mate: false,
            },
            quota: Quota { train, test },
            found,
            filled: found >= train + test,
            beyond_model: false,
        }
    }

    fn stream(hours: f64, games: u64, cells: Vec<CellSample>) -> StreamSample {
        StreamSample {
            profile: None,
            store: "store".to_string(),
            games,
            counted_cpu_seconds: hours * 3600.0,
            spent_cpu_seconds: hours * 3600.0,
            met: false,
            cells,
            mining: MiningSwitches::default(),
        }
    }

    /// The waiting time alone, from no games: 10 puzzles in 1 CPU-hour, 5
    /// wanted: the mean wait is 5/10 h (a little more with the rate's
    /// uncertainty), the median a little less.
    #[test]
    fn ten_puzzles_an_hour_fill_five_in_about_half_an_hour() {
        let mut rng = seed::rng(1, Domain::GeneratePlan, Key::Run);
        let mut draws: Vec<f64> = (0..DRAWS)
            .map(|_| waiting_hours(&mut rng, 10, 1.0, 5))
            .collect();
        let mean = draws.iter().sum::<f64>() / DRAWS as f64;
        let interval = Interval::of(&mut draws);
        assert!((0.45..0.6).contains(&mean), "{mean}");
        assert!((0.4..0.55).contains(&interval.median), "{interval:?}");
        assert!(interval.low < 0.3 && interval.high > 0.8, "{interval:?}");
    }

    /// Through `project`: 10 found in 1 hour, 15 wanted: 5 more, so about
    /// 1.5 hours in all; a ten times longer sample at the same rate gives
    /// a narrower interval around the same projection (per puzzle).
    #[test]
    fn a_cell_is_projected_from_its_rate_and_a_longer_sample_narrows_it() {
        let short_sample = project(&[stream(1.0, 20, vec![cell(1, 10, 10, 5)])], 7);
        let CellCost::Projected(short_cell) = short_sample.streams[0].cells[0].clone() else {
            panic!("{short_sample:?}")
        };
        assert!((1.4..1.6).contains(&short_cell.median), "{short_cell:?}");
        assert_eq!(short_sample.total, short_cell);
        assert_eq!(short_sample.streams[0].cpu_hours, short_cell);
        // Games scale with CPU: 20 games per CPU-hour.
        let games = short_sample.streams[0].games;
        assert!((games.median / short_cell.median - 20.0).abs() < 1e-9);
        let long_sample = project(&[stream(10.0, 200, vec![cell(1, 100, 100, 50)])], 7);
        let long = long_sample.total.scaled(0.1);
        assert!((1.4..1.6).contains(&long.median), "{long:?}");
        assert!(long.high - long.low < short_cell.high - short_cell.low);
    }

    /// A stream stops at its slowest cell, the total sums the streams, a
    /// filled cell costs nothing more, a stream that met its quotas costs
    /// what it spent, and a cell never reached is left out with a bound.
    #[test]
    fn streams_wait_for_their_slowest_cell_and_never_reached_cells_are_bounded() {
        let slow_and_fast = stream(
            1.0,
            10,
            vec![cell(1, 10, 5, 5), cell(2, 2, 2, 2), cell(3, 20, 10, 5)],
        );
        let met = StreamSample {
            met: true,
            ..stream(0.5, 4, vec![cell(1, 3, 2, 1)])
        };
        let unreached = stream(2.0, 8, vec![cell(1, 4, 2, 2), cell(4, 0, 1, 1)]);
        let samples = [slow_and_fast, met, unreached];
        let plan = project(&samples, 3);
        assert_eq!(plan, project(&samples, 3), "deterministic");
        assert_ne!(plan.total, project(&samples, 4).total, "seeded");
        let first = &plan.streams[0];
        assert_eq!(first.cells[0], CellCost::Filled);
        assert_eq!(first.cells[2], CellCost::Filled);
        let CellCost::Projected(slow) = first.cells[1] else {
            panic!("{first:?}")
        };
        // 2 more at 2 per hour: about an hour more.
        assert!((1.7..2.3).contains(&slow.median), "{slow:?}");
        assert_eq!(first.cpu_hours, slow, "the slowest cell's");
        assert_eq!(plan.streams[1].cpu_hours, Interval::exact(0.5));
        assert_eq!(plan.streams[1].games, Interval::exact(4.0));
        // The third stream: its reached cell is filled, the other never
        // reached: 2 wanted at the upper rate 1.92 / 2 h: 2 + 2.08 hours.
        assert_eq!(plan.streams[2].cpu_hours, Interval::exact(2.0));
        let CellCost::NeverReached(Some(bound)) = plan.streams[2].cells[1] else {
            panic!("{plan:?}")
        };
        assert!((bound - (2.0 + 2.0 * 2.0 / 1.9207)).abs() < 0.01, "{bound}");
        assert_eq!(plan.never_reached, 1);
        assert!((plan.total.median - (slow.median + 2.5)).abs() < 0.1);
        assert_eq!(plan.spent, 3.5);
        let record = plan.record(&samples);
        assert_eq!(record.cells_never_reached, 1);
        assert!(record.total_excludes_never_reached);
        assert_eq!(record.per_cell.len(), 6);
    }

    /// A sample with no puzzle in any cell (a hard tier's 5 games) claims
    /// no point cost and no chance: the target needs at least the bound
    /// of its cells, the budgets' chances are unknown, and neither the
    /// file nor the summary gives an interval or a median for it.
    #[test]
    fn a_sample_without_a_puzzle_claims_a_lower_bound_and_no_chance() {
        let samples = [stream(0.0037, 5, vec![cell(3, 0, 5, 5), cell(4, 0, 5, 5)])];
        let plan = project(&samples, 9);
        let bound = plan.at_least.expect("a lower bound");
        // 10 wanted at the upper rate 1.92 / 0.0037 h: about 0.019 h more.
        assert!(
            (bound - (0.0037 + 10.0 * 0.0037 / 1.9207)).abs() < 1e-4,
            "{bound}"
        );
        assert_eq!(plan.chance_within_games(10), None);
        assert_eq!(plan.chance_within_cpu(100.0), None);
        let stream = plan.streams[0].at_least.expect("the stream's bound");
        assert_eq!(stream.cpu_hours, bound);
        // 5 games per 0.0037 CPU-hours.
        assert_eq!(stream.games, (bound * 5.0 / 0.0037).ceil());
        assert_eq!(plan.covering_games(), stream.games as u64);
        assert!(plan.covering_games() > 5);
        let record = plan.record(&samples);
        assert_eq!(
            record.total_cpu_hours,
            Estimate::AtLeast {
                at_least: round(bound)
            }
        );
        assert_eq!(
            record.profiles[0].projected_games,
            Estimate::AtLeast {
                at_least: stream.games
            }
        );
        assert_eq!(plan.total_human(), format!("at least {}", short(bound)));
        let (text, cost) = unfilled(&samples, 9, Budget::MaxCpuHours);
        assert!(
            text.contains("the whole target needs at least")
                && text.contains("raise max_cpu_hours to at least")
                && !text.contains("interval"),
            "{text}"
        );
        assert_eq!(cost.suggested_is_lower_bound, Some(true));
    }

    /// With every cell reached the chances are known and no bound is set.
    #[test]
    fn a_sample_that_reaches_every_cell_gives_chances() {
        let samples = [stream(1.0, 20, vec![cell(1, 10, 10, 5)])];
        let plan = project(&samples, 7);
        assert_eq!(plan.at_least, None);
        assert!(plan.chance_within_cpu(100.0).is_some_and(|c| c > 0.99));
        assert!(plan.chance_within_cpu(1.0).is_some_and(|c| c < 0.01));
        assert!(plan.chance_within_games(1000).is_some());
    }

    /// A cell beyond the rating model's reach with no puzzle is named as
    /// such, not as never reached, and left out of the total with no bound;
    /// one that holds a puzzle (an extrapolated rating) is projected as any
    /// other.
    #[test]
    fn cells_beyond_the_rating_model_are_named_apart() {
        let beyond = |found| CellSample {
            beyond_model: true,
            ..cell(4, found, 1, 1)
        };
        let samples = [stream(
            1.0,
            10,
            vec![cell(3, 1, 1, 1), cell(5, 0, 1, 1), beyond(0), beyond(1)],
        )];
        let plan = project(&samples, 5);
        let cells = &plan.streams[0].cells;
        assert!(matches!(cells[0], CellCost::Projected(_)), "{cells:?}");
        assert!(
            matches!(cells[1], CellCost::NeverReached(Some(_))),
            "{cells:?}"
        );
        assert_eq!(cells[2], CellCost::BeyondModel);
        assert!(matches!(cells[3], CellCost::Projected(_)), "{cells:?}");
        assert_eq!((plan.never_reached, plan.beyond_model), (1, 1));
        let record = plan.record(&samples);
        assert_eq!(record.cells_beyond_model_range, 1);
        assert!(record.per_cell[2].beyond_model_range);
        assert!(!record.per_cell[2].never_reached);
        let text = plan.human_never_reached(&samples, "", "more");
        assert!(
            text.starts_with("1 cell lies beyond the ratings the rating model gives")
                && text.contains("take it out of the target ([[release.cells]]")
                && text.contains("1 cell never reached"),
            "{text}"
        );
    }

    /// Advice names a setting only where the stream that plays for the
    /// cell has it off: a profile with mates, missed positions and 3+
    /// move lines on is told to play more, not to turn them on.
    #[test]
    fn advice_names_only_the_settings_still_off() {
        let mate = Cell {
            bin_lo: 400,
            bin_hi: 500,
            length: 1,
            mate: true,
        };
        let long = Cell {
            bin_lo: 2000,
            bin_hi: 2100,
            length: 3,
            mate: false,
        };
        let off = MiningSwitches::default();
        let text = reach_advice(&[(&mate, off), (&long, off)]);
        for named in [
            "`mine.mates = true`",
            "`mine.missed_only = false`",
            "`mine.trivial_captures = true`",
            "`mine.min_solver_moves = 3`",
        ] {
            assert!(text.contains(named), "{named}: {text}");
        }
        let on = MiningSwitches {
            mates: true,
            missed_only: false,
            trivial_captures: true,
            min_solver_moves: 3,
        };
        let text = reach_advice(&[(&mate, on), (&long, on)]);
        for kind in ["mate cells:", "ratings of 900 or below:", "3+ moves:"] {
            assert!(!text.contains(kind), "{kind}: {text}");
        }
        assert!(text.contains("already on"), "{text}");
        assert!(!text.contains("hand them to a profile"), "{text}");
    }

    /// The cost of unfilled cells reads back through the type it is
    /// written with, lower bounds and intervals alike.
    #[test]
    fn the_cost_record_reads_back_as_written() {
        let reached = [stream(1.0, 20, vec![cell(1, 10, 10, 5)])];
        let unreached = [stream(0.0037, 5, vec![cell(3, 0, 5, 5)])];
        for (samples, budget) in [
            (&reached, Budget::MaxGames),
            (&unreached, Budget::MaxCpuHours),
        ] {
            let (_, cost) = unfilled(samples, 3, budget);
            let text = serde_json::to_string(&cost).expect("serializes");
            let read: UnfilledCost = serde_json::from_str(&text).expect("reads back");
            assert_eq!(read, cost, "{text}");
        }
    }

    #[test]
    fn numbers_read_short() {
        assert_eq!(short(0.0123), "0.012");
        assert_eq!(short(0.42), "0.42");
        assert_eq!(short(3.24), "3.2");
        assert_eq!(short(75.4), "75");
        assert_eq!(round(0.012345), 0.01235);
        assert_eq!(round(1234.5), 1235.0);
    }
}

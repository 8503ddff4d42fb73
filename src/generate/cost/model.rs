//! The projection of what a generation target costs, from the games
//! already counted: the engine CPU-hours each target cell needs and the
//! total, with an interval, and the cells the games never reached.
//!
//! **The model.** Each profile's games (a stream) produce a cell's counted
//! puzzles (counted as the stopping rule counts them) as a Poisson process
//! in the stream's engine CPU time, at an unknown rate. With `k` puzzles in
//! `T` CPU-hours, the rate's posterior under Jeffreys' prior is
//! `Gamma(k + 1/2, rate T)`; given the rate, the time to the `m` puzzles a
//! cell still lacks is `Gamma(m, rate)`. The sampled games are the first
//! games a run plays, so their puzzles count: a cell is projected to fill
//! at `spent + wait`, its stream to stop when its slowest cell fills, and
//! the target to cost the sum over streams. Medians and 90% intervals come
//! from seeded Monte Carlo draws ([`Domain::GeneratePlan`]), so the same
//! store gives the same projection, byte for byte.
//!
//! **Cells never reached.** A cell with no puzzle in the sample has no
//! measured rate; it is left out of the interval and given a lower bound:
//! the cost if its rate were at the 95% upper end of what the sample
//! allows. A stream with such a cell, and so the whole target, then has a
//! lower bound and no interval, and the chance that a budget suffices is
//! unknown: the sample cannot show it (a zero-yield sample never claims a
//! point cost or a 100% chance).

use rand_distr::{Distribution, Gamma};
use statrs::distribution::ContinuousCDF;

use crate::core::seed::{self, Domain, Key};
use crate::generate::cost::advice::MiningSwitches;
use crate::stages::release::cells::{Cell, Quota};

/// Monte Carlo draws per projection.
pub(crate) const DRAWS: usize = 10_000;

/// The interval's coverage: from the 5th to the 95th percentile.
const LOW: f64 = 0.05;
const HIGH: f64 = 0.95;

/// One target cell as the counted games saw it.
#[derive(Clone, Debug)]
pub(crate) struct CellSample {
    pub cell: Cell,
    pub quota: Quota,
    /// The counted puzzles in the cell (the stopping rule's counting:
    /// exclusions and repeats dropped, verified only under `policy =
    /// "drop"`).
    pub found: usize,
    /// The draw over the counted puzzles fills the cell.
    pub filled: bool,
    /// The rating model gives no puzzle of the cell's length a rating in
    /// its bin without extrapolating ([`crate::stages::rate::ModelReach`]).
    pub beyond_model: bool,
}

/// One stream (a profile's games) as its counted games saw it.
#[derive(Clone, Debug)]
pub(crate) struct StreamSample {
    /// The profile (`None`: generation's own).
    pub profile: Option<String>,
    /// The store key.
    pub store: String,
    /// Games counted.
    pub games: u64,
    /// Engine CPU-seconds of the counted games (a batch's CPU shared evenly
    /// among its games): the rates' denominator.
    pub counted_cpu_seconds: f64,
    /// Engine CPU-seconds of the batches played: what a run pays.
    pub spent_cpu_seconds: f64,
    /// The stopping rule was met: the stream's cost is known.
    pub met: bool,
    pub cells: Vec<CellSample>,
    /// The mining switches its games were mined with: advice for cells
    /// never reached names only those still off.
    pub mining: MiningSwitches,
}

impl StreamSample {
    pub(crate) fn counted_hours(&self) -> f64 {
        self.counted_cpu_seconds / 3600.0
    }

    pub(crate) fn spent_hours(&self) -> f64 {
        self.spent_cpu_seconds / 3600.0
    }

    /// Whether the games measured anything: a stream a budget stopped
    /// before its first batch, or batches without recorded CPU, did not.
    pub(crate) fn measured(&self) -> bool {
        self.games > 0 && self.counted_cpu_seconds > 0.0
    }

    pub(crate) fn name(&self) -> &str {
        self.profile.as_deref().unwrap_or("own")
    }
}

/// A median and a 90% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Interval {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl Interval {
    pub(crate) fn exact(value: f64) -> Interval {
        Interval {
            median: value,
            low: value,
            high: value,
        }
    }

    /// The interval of `draws` (sorted here).
    pub(crate) fn of(draws: &mut [f64]) -> Interval {
        draws.sort_by(f64::total_cmp);
        let at = |p: f64| draws[((draws.len() - 1) as f64 * p).round() as usize];
        Interval {
            median: at(0.5),
            low: at(LOW),
            high: at(HIGH),
        }
    }

    pub(crate) fn scaled(self, factor: f64) -> Interval {
        Interval {
            median: self.median * factor,
            low: self.low * factor,
            high: self.high * factor,
        }
    }

    pub(crate) fn minus(self, value: f64) -> Interval {
        Interval {
            median: (self.median - value).max(0.0),
            low: (self.low - value).max(0.0),
            high: (self.high - value).max(0.0),
        }
    }
}

/// What one cell costs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CellCost {
    /// The counted games fill it.
    Filled,
    /// The CPU-hours of its stream when it fills.
    Projected(Interval),
    /// No puzzle in the counted games: at least this many CPU-hours (none
    /// when the stream measured nothing).
    NeverReached(Option<f64>),
    /// No puzzle in the counted games, and the rating model rates none
    /// into the cell's bin without extrapolating: no budget is projected.
    BeyondModel,
}

/// What one stream costs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StreamCost {
    /// CPU-hours until its slowest reached cell fills (its spent hours
    /// when every cell is filled or never reached).
    pub cpu_hours: Interval,
    /// The game number it would stop at.
    pub games: Interval,
    pub cells: Vec<CellCost>,
    /// When a cell it still lacks has no measured rate (never reached, or
    /// beyond the rating model): the CPU-hours and game number it needs at
    /// least, in place of `cpu_hours` and `games`, which count its reached
    /// cells alone.
    pub at_least: Option<LowerBound>,
    /// The games' draws, sorted.
    game_draws: Vec<f64>,
}

/// What a stream or a target needs at least, where the sample measured no
/// rate for some of its cells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LowerBound {
    pub cpu_hours: f64,
    pub games: f64,
}

/// The projection of a target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Projection {
    pub streams: Vec<StreamCost>,
    /// CPU-hours of the target without its never-reached cells.
    pub total: Interval,
    /// CPU-hours already spent (the counted games' batches).
    pub spent: f64,
    pub never_reached: usize,
    /// Cells never reached that lie beyond the rating model's reach (not
    /// in `never_reached`).
    pub beyond_model: usize,
    /// When some unfilled cell has no measured rate: the CPU-hours the
    /// target needs at least (each stream's bound, or the low end of its
    /// interval); `total` then counts the reached cells alone.
    pub at_least: Option<f64>,
    /// The total's draws, sorted.
    total_draws: Vec<f64>,
}

/// Projects what `samples` cost to fill, with draws seeded by `seed`.
pub(crate) fn project(samples: &[StreamSample], seed: u64) -> Projection {
    let mut rng = seed::rng(seed, Domain::GeneratePlan, Key::Run);
    let Draws {
        cells,
        streams,
        mut total,
    } = Draws::of(samples, &mut rng);
    let mut unknown = Unknown::default();
    let streams = samples
        .iter()
        .zip(cells)
        .zip(streams)
        .map(|((stream, mut cells), mut draws)| {
            stream_cost(stream, &mut cells, &mut draws, &mut unknown)
        })
        .collect::<Vec<StreamCost>>();
    let at_least = streams.iter().any(|s| s.at_least.is_some()).then(|| {
        streams
            .iter()
            .map(|s| s.at_least.map_or(s.cpu_hours.low, |b| b.cpu_hours))
            .sum()
    });
    Projection {
        streams,
        total: Interval::of(&mut total),
        spent: samples.iter().map(StreamSample::spent_hours).sum(),
        never_reached: unknown.never_reached,
        beyond_model: unknown.beyond_model,
        at_least,
        total_draws: total,
    }
}

/// The Monte Carlo draws of a projection, in CPU-hours.
struct Draws {
    /// Per stream, per cell: the draws of a cell still to fill (empty for
    /// the others).
    cells: Vec<Vec<Vec<f64>>>,
    /// Per stream: when its slowest cell fills.
    streams: Vec<Vec<f64>>,
    /// The target: the sum over streams.
    total: Vec<f64>,
}

impl Draws {
    /// [`DRAWS`] draws of every stream and cell, in one order (draw by
    /// draw, stream by stream, cell by cell), so that a seed gives the
    /// same projection.
    fn of(samples: &[StreamSample], rng: &mut impl rand::Rng) -> Draws {
        let mut cell_draws: Vec<Vec<Vec<f64>>> = samples
            .iter()
            .map(|s| vec![Vec::new(); s.cells.len()])
            .collect();
        let mut stream_draws: Vec<Vec<f64>> = vec![Vec::with_capacity(DRAWS); samples.len()];
        let mut total_draws = Vec::with_capacity(DRAWS);
        for _ in 0..DRAWS {
            let mut total = 0.0;
            for (index, stream) in samples.iter().enumerate() {
                let mut slowest: f64 = 0.0;
                if !stream.met && stream.measured() {
                    for (at, cell) in stream.cells.iter().enumerate() {
                        if cell.filled || cell.found == 0 {
                            continue;
                        }
                        let wait = waiting_hours(
                            rng,
                            cell.found,
                            stream.counted_hours(),
                            still_wanted(cell),
                        );
                        cell_draws[index][at].push(stream.spent_hours() + wait);
                        slowest = slowest.max(wait);
                    }
                }
                let hours = stream.spent_hours() + slowest;
                stream_draws[index].push(hours);
                total += hours;
            }
            total_draws.push(total);
        }
        Draws {
            cells: cell_draws,
            streams: stream_draws,
            total: total_draws,
        }
    }
}

/// The unfilled cells without a measured rate, counted.
#[derive(Default)]
struct Unknown {
    never_reached: usize,
    beyond_model: usize,
}

/// What one stream costs, from its draws (`cells`: each cell's, `draws`:
/// the stream's); counts its cells without a measured rate in `unknown`.
fn stream_cost(
    stream: &StreamSample,
    cells: &mut [Vec<f64>],
    draws: &mut [f64],
    unknown: &mut Unknown,
) -> StreamCost {
    let cpu_hours = if stream.met {
        Interval::exact(stream.spent_hours())
    } else {
        Interval::of(draws)
    };
    let (games, game_draws) = if stream.met || !stream.measured() {
        (
            Interval::exact(stream.games as f64),
            vec![stream.games as f64],
        )
    } else {
        let per_hour = stream.games as f64 / stream.counted_hours();
        let games: Vec<f64> = draws.iter().map(|h| h * per_hour).collect();
        (cpu_hours.scaled(per_hour), games)
    };
    let cells: Vec<CellCost> = stream
        .cells
        .iter()
        .zip(cells.iter_mut())
        .map(|(cell, draws)| {
            if cell.filled || stream.met {
                CellCost::Filled
            } else if cell.found == 0 && cell.beyond_model {
                unknown.beyond_model += 1;
                CellCost::BeyondModel
            } else if cell.found == 0 || !stream.measured() {
                unknown.never_reached += 1;
                CellCost::NeverReached(
                    stream
                        .measured()
                        .then(|| at_least_hours(stream, still_wanted(cell))),
                )
            } else {
                CellCost::Projected(Interval::of(draws))
            }
        })
        .collect();
    let at_least = lower_bound(stream, &cells, cpu_hours);
    StreamCost {
        cpu_hours,
        games,
        cells,
        at_least,
        game_draws,
    }
}

/// A stream's lower bound when a cell it still lacks has no measured rate:
/// the most of what it spent, the low end of its reached cells' interval
/// and its never-reached cells' bounds; its game number at the games per
/// CPU-hour it measured (the games it played when it measured nothing).
fn lower_bound(stream: &StreamSample, cells: &[CellCost], reached: Interval) -> Option<LowerBound> {
    let unknown =
        |cost: &CellCost| matches!(cost, CellCost::NeverReached(_) | CellCost::BeyondModel);
    if stream.met || !cells.iter().any(unknown) {
        return None;
    }
    let cpu_hours = cells
        .iter()
        .filter_map(|cost| match cost {
            CellCost::NeverReached(Some(hours)) => Some(*hours),
            _ => None,
        })
        .fold(reached.low.max(stream.spent_hours()), f64::max);
    let games = match stream.measured() {
        true => (cpu_hours * stream.games as f64 / stream.counted_hours()).ceil(),
        false => stream.games as f64,
    };
    Some(LowerBound { cpu_hours, games })
}

/// The share of sorted `draws` at or below `limit`.
fn share_within(draws: &[f64], limit: f64) -> f64 {
    draws.partition_point(|d| *d <= limit) as f64 / draws.len().max(1) as f64
}

impl Projection {
    /// The chance that a run under `max_cpu_hours` fills the target;
    /// unknown (`None`) when some unfilled cell has no measured rate.
    pub(crate) fn chance_within_cpu(&self, max_cpu_hours: f64) -> Option<f64> {
        self.at_least
            .is_none()
            .then(|| share_within(&self.total_draws, max_cpu_hours))
    }

    /// The chance that no stream needs more than `max_games` games (the
    /// streams are independent in the model); unknown (`None`) when some
    /// unfilled cell has no measured rate.
    pub(crate) fn chance_within_games(&self, max_games: u64) -> Option<f64> {
        self.at_least.is_none().then(|| {
            self.streams
                .iter()
                .map(|s| share_within(&s.game_draws, max_games as f64))
                .product()
        })
    }

    /// The game number that covers every stream: the upper end of its
    /// interval, or its lower bound where it has one.
    pub(crate) fn covering_games(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| s.at_least.map_or(s.games.high, |b| b.games).ceil() as u64)
            .max()
            .unwrap_or(0)
    }

    /// The CPU-hours that cover the target: the upper end of its
    /// interval, or its lower bound.
    pub(crate) fn covering_cpu_hours(&self) -> f64 {
        self.at_least.unwrap_or(self.total.high)
    }

    /// Whether some unfilled cell is projected from a measured rate (else
    /// `total` is only what was spent: no interval to give).
    pub(crate) fn projects_a_cell(&self) -> bool {
        self.streams
            .iter()
            .flat_map(|s| &s.cells)
            .any(|c| matches!(c, CellCost::Projected(_)))
    }

    /// The per-cell rows of the projection, with each cell's stream.
    pub(crate) fn cell_rows<'a>(
        &'a self,
        samples: &'a [StreamSample],
    ) -> impl Iterator<Item = (&'a StreamSample, &'a CellSample, &'a CellCost)> {
        samples
            .iter()
            .zip(&self.streams)
            .flat_map(|(stream, cost)| {
                stream
                    .cells
                    .iter()
                    .zip(&cost.cells)
                    .map(move |(cell, cost)| (stream, cell, cost))
            })
    }
}

/// The puzzles a cell still lacks: its quota less the counted ones, at
/// least one (a cell the draw leaves unfilled with enough puzzles lacks
/// puzzles from other games).
fn still_wanted(cell: &CellSample) -> usize {
    (cell.quota.train + cell.quota.test)
        .saturating_sub(cell.found)
        .max(1)
}

/// One draw of the CPU-hours until `wanted` more puzzles, having seen
/// `found` in `hours`: the rate from its posterior, then the waiting time.
pub(super) fn waiting_hours(
    rng: &mut impl rand::Rng,
    found: usize,
    hours: f64,
    wanted: usize,
) -> f64 {
    let posterior = Gamma::new(found as f64 + 0.5, 1.0 / hours);
    let rate = posterior.map_or(0.0, |g| g.sample(rng));
    match Gamma::new(wanted as f64, 1.0 / rate) {
        Ok(wait) if rate > 0.0 => wait.sample(rng),
        _ => f64::INFINITY,
    }
}

/// A never-reached cell's lower bound: its stream's spent hours plus the
/// mean time to `wanted` puzzles at the 95% upper end of its rate's
/// posterior (`Gamma(1/2, rate T)` after no puzzle in `T` hours, about
/// 1.92 / T).
fn at_least_hours(stream: &StreamSample, wanted: usize) -> f64 {
    let hours = stream.counted_hours();
    let upper =
        statrs::distribution::Gamma::new(0.5, hours).map_or(f64::INFINITY, |g| g.inverse_cdf(HIGH));
    stream.spent_hours() + wanted as f64 / upper
}

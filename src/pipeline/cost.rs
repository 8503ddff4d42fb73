//! What a generation target costs, projected from the games already
//! counted: the engine CPU-hours each target cell needs and the total, with
//! an interval, and the cells the games never reached. `run --plan` (see
//! [`crate::pipeline::plan`]) projects from a short sample; a `run` that a
//! budget stopped projects its unfilled cells from its own games.
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
use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use crate::core::seed::{self, Domain, Key};
use crate::stages::release::cells::{Cell, Quota};

/// Monte Carlo draws per projection.
const DRAWS: usize = 10_000;

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

/// The `[mine]` switches that make the puzzles of a kind of cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MiningSwitches {
    pub mates: bool,
    pub missed_only: bool,
    pub trivial_captures: bool,
    pub min_solver_moves: usize,
}

impl Default for MiningSwitches {
    /// `[mine]`'s own defaults.
    fn default() -> MiningSwitches {
        MiningSwitches {
            mates: false,
            missed_only: true,
            trivial_captures: false,
            min_solver_moves: 1,
        }
    }
}

impl StreamSample {
    fn counted_hours(&self) -> f64 {
        self.counted_cpu_seconds / 3600.0
    }

    fn spent_hours(&self) -> f64 {
        self.spent_cpu_seconds / 3600.0
    }

    /// Whether the games measured anything: a stream a budget stopped
    /// before its first batch, or batches without recorded CPU, did not.
    fn measured(&self) -> bool {
        self.games > 0 && self.counted_cpu_seconds > 0.0
    }

    fn name(&self) -> &str {
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
    fn exact(value: f64) -> Interval {
        Interval {
            median: value,
            low: value,
            high: value,
        }
    }

    /// The interval of `draws` (sorted here).
    fn of(draws: &mut [f64]) -> Interval {
        draws.sort_by(f64::total_cmp);
        let at = |p: f64| draws[((draws.len() - 1) as f64 * p).round() as usize];
        Interval {
            median: at(0.5),
            low: at(LOW),
            high: at(HIGH),
        }
    }

    fn scaled(self, factor: f64) -> Interval {
        Interval {
            median: self.median * factor,
            low: self.low * factor,
            high: self.high * factor,
        }
    }

    fn minus(self, value: f64) -> Interval {
        Interval {
            median: (self.median - value).max(0.0),
            low: (self.low - value).max(0.0),
            high: (self.high - value).max(0.0),
        }
    }

    /// The interval as a record, each end rounded ([`round`]).
    fn record(self) -> IntervalRecord {
        IntervalRecord {
            median: round(self.median),
            low: round(self.low),
            high: round(self.high),
        }
    }

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
pub(crate) struct CellRecord {
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
    pub per_cell: Vec<CellRecord>,
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
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct UnfilledCost {
    #[serde(flatten)]
    pub projection: ProjectionRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested: Option<SuggestedBudget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_is_lower_bound: Option<bool>,
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
    // Per stream: the draws of each cell still to fill (empty for the
    // others) and of the stream.
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
                        &mut rng,
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
    let mut never_reached = 0;
    let mut beyond_model = 0;
    let streams = samples
        .iter()
        .zip(cell_draws)
        .zip(stream_draws)
        .map(|((stream, mut cells), mut draws)| {
            let cpu_hours = if stream.met {
                Interval::exact(stream.spent_hours())
            } else {
                Interval::of(&mut draws)
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
                        beyond_model += 1;
                        CellCost::BeyondModel
                    } else if cell.found == 0 || !stream.measured() {
                        never_reached += 1;
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
        total: Interval::of(&mut total_draws),
        spent: samples.iter().map(StreamSample::spent_hours).sum(),
        never_reached,
        beyond_model,
        at_least,
        total_draws,
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

    /// The target's CPU-hours for people: `0.42 (90% interval 0.25-0.80)`,
    /// or `at least 0.42` when some unfilled cell has no measured rate.
    pub(crate) fn total_human(&self) -> String {
        match self.at_least {
            Some(hours) => format!("at least {}", short(hours)),
            None => self.total.human(),
        }
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
fn waiting_hours(rng: &mut impl rand::Rng, found: usize, hours: f64, wanted: usize) -> f64 {
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

/// `x` to 4 significant digits, so that files stay readable.
pub(crate) fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 3 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// `x` to 2 significant digits (at least the units), for people.
pub(crate) fn short(x: f64) -> String {
    if !x.is_finite() {
        return "infinite".to_string();
    }
    if x >= 10.0 || x == 0.0 {
        return format!("{x:.0}");
    }
    let decimals = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// The first few cells by name, then how many more.
fn first_named(cells: &[&Cell]) -> String {
    const NAMED: usize = 6;
    let labels: Vec<String> = cells.iter().map(|c| c.label()).collect();
    crate::stages::release::cells::first_of(&labels, NAMED).join(", ")
}

/// What a user can try for cells never reached beside more games, by the
/// kinds among them, each with the mining switches of the stream that
/// plays for it: a setting is advised only where it is still off, and
/// one already on is said to be (empty when there is nothing to add).
pub(crate) fn reach_advice(cells: &[(&Cell, MiningSwitches)]) -> String {
    let mut ways = Vec::new();
    let mut already_on = Vec::new();
    let mates: Vec<_> = cells.iter().filter(|(c, _)| c.mate).collect();
    if mates.iter().any(|(_, m)| !m.mates) {
        ways.push("mate cells: `mine.mates = true`");
    } else if !mates.is_empty() {
        already_on.push("`mine.mates`");
    }
    let easy: Vec<_> = cells.iter().filter(|(c, _)| c.bin_hi <= 900).collect();
    if easy.iter().any(|(_, m)| m.missed_only) {
        ways.push("ratings of 900 or below: `mine.missed_only = false`");
    } else if !easy.is_empty() {
        already_on.push("`mine.missed_only = false`");
    }
    if easy.iter().any(|(_, m)| !m.trivial_captures) {
        ways.push("ratings of 900 or below: `mine.trivial_captures = true`");
    } else if !easy.is_empty() {
        already_on.push("`mine.trivial_captures`");
    }
    let long: Vec<_> = cells.iter().filter(|(c, _)| c.length >= 3).collect();
    if long.iter().any(|(_, m)| m.min_solver_moves < 3) {
        ways.push("3+ moves: `mine.min_solver_moves = 3` (the `hard` tier's profile)");
    } else if !long.is_empty() {
        already_on.push("`mine.min_solver_moves = 3`");
    }
    let mut advice = String::new();
    if !ways.is_empty() {
        advice.push_str(&format!(
            ", or hand them to a profile that makes such puzzles ([[generate.bands]] with \
             [generate.profiles.NAME.selfplay] and .mine): {}",
            ways.join("; ")
        ));
    }
    if !already_on.is_empty() {
        already_on.dedup();
        advice.push_str(&format!(
            "; {} already on where they are played for: such puzzles are rare in these games \
             (weaker players leave more)",
            already_on.join(", ")
        ));
    }
    advice
}

impl Projection {
    /// The per-cell rows of the projection, with each cell's stream.
    fn cell_rows<'a>(
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

    /// The projection as a record: the total, each stream, each cell.
    pub(crate) fn record(&self, samples: &[StreamSample]) -> ProjectionRecord {
        let profiles: Vec<StreamRecord> = samples
            .iter()
            .zip(&self.streams)
            .map(|(stream, cost)| {
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
                    projected_cpu_hours: match cost.at_least {
                        Some(bound) => Estimate::AtLeast {
                            at_least: round(bound.cpu_hours),
                        },
                        None => Estimate::Interval(cost.cpu_hours.record()),
                    },
                    projected_games: match cost.at_least {
                        Some(bound) => Estimate::AtLeast {
                            at_least: bound.games,
                        },
                        None => Estimate::Interval(cost.games.record()),
                    },
                }
            })
            .collect();
        let cells: Vec<CellRecord> = self
            .cell_rows(samples)
            .map(|(stream, cell, cost)| CellRecord {
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
            })
            .collect();
        let (total, more) = match self.at_least {
            Some(hours) => (
                Estimate::AtLeast {
                    at_least: round(hours),
                },
                Estimate::AtLeast {
                    at_least: round((hours - self.spent).max(0.0)),
                },
            ),
            None => (
                Estimate::Interval(self.total.record()),
                Estimate::Interval(self.total.minus(self.spent).record()),
            ),
        };
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
            "{indent}{} cell{} beyond the ratings the rating model gives without extrapolating (no budget is projected to fill {them}): {}\n{indent}the run still waits for {them}: take {them} out of the target ([[split.cells]] with train = 0 and test = 0) or rate with a model that reaches {them}\n",
            cells.len(),
            if cells.len() == 1 { " lies" } else { "s lie" },
            first_named(&cells),
            them = if cells.len() == 1 { "it" } else { "them" },
        )
    }
}

/// Which budget stopped a run short.
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
        "raise the budget (`run --plan --plan-games N` measures more games first)",
    ));
    (text, cost)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                && text.contains("take it out of the target ([[split.cells]]")
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

//! `run --plan`: what a `[generate]` target will cost, from a short
//! sample, before paying for it.
//!
//! Each profile that plays for the target takes its first games as `run`
//! would (the batches already in the store reused, the missing ones played
//! into it, the stopping rule applied), up to `--plan-games` per profile or
//! `--plan-cpu-hours` in all. From the counted puzzles of each target cell
//! and the engine CPU the games cost, [`crate::generate::cost`] projects
//! the CPU-hours per cell and in total with a 90% interval, and names the
//! cells the sample never reached. Nothing is wasted: the sample's games
//! are the first games the run plays, so a run after the plan plays none of
//! them again; and the same store gives the same plan, byte for byte.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::core::summary::Summary;
use std::path::{Path, PathBuf};

use crate::generate::cost::{
    self, CellCostRecord, Estimate, IntervalRecord, ProjectionRecord, StreamSample,
};
use crate::generate::{Engine, Sections};

/// `run --plan`'s flags (their help: `cli::run::PlanFlags`).
#[derive(Debug, Clone, Default)]
pub struct PlanArgs {
    pub plan: bool,
    pub plan_games: Option<u64>,
    pub plan_cpu_hours: Option<f64>,
}

/// Runs the sample and writes the plan beside `release_dir` (no release
/// folder is written). `earlier` are the releases the draw excludes; `tier`
/// is `run --tier`; `command` is the `puzzleforge run` with the flags that
/// chose config and tier, which the plan's hints extend into commands that
/// run as written.
pub(crate) fn run_plan(
    args: &PlanArgs,
    sections: &Sections<'_>,
    engine: Engine<'_>,
    earlier: &[PathBuf],
    release_dir: &Path,
    tier: Option<&str>,
    command: &str,
) -> Result<Summary> {
    check_can_plan(args)?;
    let generate = sections.generate;
    let games = match (args.plan_games, args.plan_cpu_hours) {
        (Some(games), _) => games,
        (None, Some(_)) => generate.max_games,
        (None, None) => generate.batch_games,
    };
    let samples =
        crate::generate::sample(sections, engine, tier, earlier, games, args.plan_cpu_hours)?;
    let seed = sections.seed;
    let projection = cost::project(&samples, seed);
    let workers = engine.pool.workers.max(1);
    let release = release_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    let cells: usize = samples.iter().map(|s| s.cells.len()).sum();
    let wanted: usize = samples
        .iter()
        .flat_map(|s| &s.cells)
        .map(|c| c.quota.train + c.quota.test)
        .sum();
    let sample_games: u64 = samples.iter().map(|s| s.games).sum();
    let projected = projection.record(&samples);
    let wall = |hours: f64| cost::round(hours / workers as f64);
    let budget = Budget::of(generate, &projection);
    let plan = PlanRecord {
        target: TargetRecord {
            tier: generate.tier.as_deref().or(tier).map(str::to_string),
            cells,
            puzzles_wanted: wanted,
        },
        sample: SampleRecord {
            games_per_profile: games,
            cpu_hours_limit: args.plan_cpu_hours,
            games: sample_games,
        },
        engine_workers: workers,
        wall_hours: match projection.at_least {
            Some(hours) => Estimate::AtLeast {
                at_least: wall(hours),
            },
            None => Estimate::Interval(IntervalRecord {
                median: wall(projection.total.median),
                low: wall(projection.total.low),
                high: wall(projection.total.high),
            }),
        },
        budget: budget.record(),
        never_reached: cells_where(&projected, |c| c.never_reached),
        beyond_model_range: cells_where(&projected, |c| c.beyond_model_range),
        projection: projected,
    };

    let path = write_plan(release_dir, &release, &plan)?;

    let mut human = projection.human_table(&samples);
    human.push_str(&headline(
        &release,
        &samples,
        &projection,
        wanted,
        cells,
        workers,
    ));
    human.push_str(&budget.human());
    let more = format!(
        "sample more games with `{command} --plan --plan-games {} --release {release}`",
        games.saturating_mul(4)
    );
    human.push_str(&projection.human_never_reached(&samples, "  ", &more));
    human.push_str(&format!("  plan written to {}\n", path.display()));
    Ok(Summary::new(
        human,
        json!({"command": "run --plan", "release": release, "plan_file": path, "plan": plan}),
    ))
}

/// A plan needs a positive `--plan-cpu-hours` (`run` turns `[generate]`
/// on for a plan).
fn check_can_plan(args: &PlanArgs) -> Result<()> {
    if let Some(hours) = args.plan_cpu_hours.filter(|h| !(h.is_finite() && *h > 0.0)) {
        return Err(bad_input(format!(
            "--plan-cpu-hours must be a positive number of hours, not {hours}"
        )));
    }
    Ok(())
}

/// The projected cells that `flag` picks (never reached, beyond the
/// rating model's range).
fn cells_where(
    projected: &ProjectionRecord,
    flag: fn(&CellCostRecord) -> bool,
) -> Vec<CellCostRecord> {
    projected
        .per_cell
        .iter()
        .filter(|c| flag(c))
        .cloned()
        .collect()
}

/// Writes the plan beside the release's folder, as `RELEASE.plan.json`.
fn write_plan(release_dir: &Path, release: &str, plan: &PlanRecord) -> Result<PathBuf> {
    let path = release_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join(format!("{release}.plan.json"));
    write_atomic(
        &path,
        format!("{}\n", serde_json::to_string_pretty(plan)?).as_bytes(),
    )
    .with_context(|| format!("writing the plan {}", path.display()))?;
    Ok(path)
}

/// The lines that answer "what will it cost?".
fn headline(
    release: &str,
    samples: &[StreamSample],
    projection: &cost::Projection,
    wanted: usize,
    cells: usize,
    workers: usize,
) -> String {
    let sample_games: u64 = samples.iter().map(|s| s.games).sum();
    let profiles = samples.len();
    let mut text = format!(
        "plan for release {release}: {cells} target cells ({wanted} puzzles), from a sample of {sample_games} games{} costing {} engine CPU-hours (kept in the store: the run plays none of them again)\n",
        if profiles > 1 {
            format!(" of {profiles} profiles")
        } else {
            String::new()
        },
        cost::short(projection.spent),
    );
    let unreached = projection.never_reached + projection.beyond_model;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let wall = |hours: f64| cost::short(hours / workers as f64);
    let workers_named = format!("{workers} engine worker{}", plural(workers));
    match projection.at_least {
        // Some cell has no puzzle in the sample: its rate, and so the
        // target's cost, is unmeasured; only a lower bound is claimed.
        Some(hours) => {
            text.push_str(&format!(
                "  projected: at least {} engine CPU-hours in all, at least {} hours of wall time with {workers_named} (a lower bound: the low end of the reached cells' interval plus the least the others need): {unreached} of {cells} target cell{} had no puzzle in the sample, so no rate is measured for {} and no interval can be given\n",
                cost::short(hours),
                wall(hours),
                plural(cells),
                if unreached == 1 { "it" } else { "them" },
            ));
            let reached = cells - unreached;
            if reached > 0 && projection.projects_a_cell() {
                text.push_str(&format!(
                    "  the {reached} cell{} the sample reached alone: {} engine CPU-hours\n",
                    plural(reached),
                    projection.total.human(),
                ));
            }
        }
        None => text.push_str(&format!(
            "  projected: {} engine CPU-hours in all; about {} hours of wall time with {workers_named}\n",
            projection.total_human(),
            wall(projection.total.median),
        )),
    }
    text
}

/// The configured budgets against the projection. A chance is `None`
/// (unknown) when some target cell has no measured rate.
struct Budget {
    max_games: u64,
    games_chance: Option<f64>,
    max_cpu_hours: Option<f64>,
    cpu_chance: Option<f64>,
    /// The upper ends of the interval (a budget that covers them), or the
    /// lower bounds when a chance is unknown.
    games_covering: u64,
    cpu_covering: f64,
    /// Target cells with no measured rate.
    unknown_cells: usize,
}

impl Budget {
    fn of(generate: &crate::generate::GenerateConfig, projection: &cost::Projection) -> Budget {
        Budget {
            max_games: generate.max_games,
            games_chance: projection.chance_within_games(generate.max_games),
            max_cpu_hours: generate.max_cpu_hours,
            cpu_chance: generate
                .max_cpu_hours
                .and_then(|h| projection.chance_within_cpu(h)),
            games_covering: projection.covering_games(),
            cpu_covering: projection.covering_cpu_hours(),
            unknown_cells: match projection.at_least {
                Some(_) => projection.never_reached + projection.beyond_model,
                None => 0,
            },
        }
    }

    fn record(&self) -> BudgetRecord {
        let known = self.unknown_cells == 0;
        let chance = |c: Option<f64>| match c {
            Some(c) => Some(Chance::Probability(cost::round(c))),
            None if known => None,
            None => Some(Chance::Unknown(Unknown::Unknown)),
        };
        let (covering, at_least) = match known {
            true => (Some(self.games_covering), None),
            false => (None, Some(self.games_covering)),
        };
        let cpu_covering = cost::round(self.cpu_covering);
        BudgetRecord {
            max_games: self.max_games,
            chance_within_max_games: chance(self.games_chance),
            max_cpu_hours: self.max_cpu_hours,
            chance_within_max_cpu_hours: match self.max_cpu_hours {
                Some(_) => chance(self.cpu_chance),
                None => None,
            },
            covering_max_games: covering,
            covering_max_cpu_hours: covering.map(|_| cpu_covering),
            at_least_max_games: at_least,
            at_least_max_cpu_hours: at_least.map(|_| cpu_covering),
            cells_without_a_rate: at_least.map(|_| self.unknown_cells),
        }
    }

    fn human(&self) -> String {
        if self.unknown_cells > 0 {
            let mut text = format!(
                "  budget: whether max_games = {} is enough is unknown (it needs at least {} games)",
                self.max_games, self.games_covering
            );
            match self.max_cpu_hours {
                Some(hours) => text.push_str(&format!(
                    "; whether max_cpu_hours = {hours} suffices is unknown (it needs at least {})",
                    cost::short(self.cpu_covering)
                )),
                None => text.push_str("; no max_cpu_hours set"),
            }
            text.push_str(&format!(
                ": the sample has no puzzle in {} target cell{}\n",
                self.unknown_cells,
                if self.unknown_cells == 1 { "" } else { "s" }
            ));
            return text;
        }
        let percent = |p: f64| format!("{:.0}%", p * 100.0);
        let games_chance = self.games_chance.unwrap_or(0.0);
        let mut text = format!(
            "  budget: max_games = {} is enough with probability {}",
            self.max_games,
            percent(games_chance)
        );
        if games_chance < 0.95 {
            text.push_str(&format!(
                " (about {} covers the interval)",
                self.games_covering
            ));
        }
        match (self.max_cpu_hours, self.cpu_chance) {
            (Some(hours), Some(chance)) => {
                text.push_str(&format!(
                    "; max_cpu_hours = {hours} suffices with probability {}",
                    percent(chance)
                ));
                if chance < 0.95 {
                    text.push_str(&format!(
                        " (about {} covers the interval)",
                        cost::short(self.cpu_covering)
                    ));
                }
            }
            _ => text.push_str("; no max_cpu_hours set"),
        }
        text.push('\n');
        text
    }
}

/// `RELEASE.plan.json`, and `plan` in the `run --plan` summary.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct PlanRecord {
    pub target: TargetRecord,
    pub sample: SampleRecord,
    #[serde(flatten)]
    pub projection: ProjectionRecord,
    /// Engine workers: the wall time's divisor.
    pub engine_workers: usize,
    pub wall_hours: Estimate,
    pub budget: BudgetRecord,
    /// The cells of `per_cell` never reached.
    pub never_reached: Vec<CellCostRecord>,
    /// The cells of `per_cell` beyond the rating model's range.
    pub beyond_model_range: Vec<CellCostRecord>,
}

/// `target` in `plan.json`: the generation target.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct TargetRecord {
    /// `generate.tier`, else `run --tier`.
    pub tier: Option<String>,
    pub cells: usize,
    pub puzzles_wanted: usize,
}

/// `sample` in `plan.json`: what was sampled.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SampleRecord {
    pub games_per_profile: u64,
    /// `--plan-cpu-hours`.
    pub cpu_hours_limit: Option<f64>,
    /// Games counted, all profiles.
    pub games: u64,
}

/// `budget` in `plan.json`: the configured budgets against the projection.
/// The covering budgets are recorded as `covering_*` when every cell has
/// a rate, else as lower bounds (`at_least_*`, with the cells without one).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct BudgetRecord {
    pub max_games: u64,
    pub chance_within_max_games: Option<Chance>,
    pub max_cpu_hours: Option<f64>,
    pub chance_within_max_cpu_hours: Option<Chance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covering_max_games: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covering_max_cpu_hours: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least_max_games: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least_max_cpu_hours: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells_without_a_rate: Option<usize>,
}

/// The chance that a budget suffices in `plan.json`: a probability, or
/// `"unknown"` when some cell has no measured rate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum Chance {
    Probability(f64),
    Unknown(Unknown),
}

/// The string `"unknown"`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unknown {
    #[serde(rename = "unknown")]
    Unknown,
}

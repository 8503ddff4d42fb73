//! The funnel against the exhaustive search ([`FunnelCheck`]): what
//! `bench mine` and `bench generate` report. Apart because it is a
//! measurement of the stage, not part of it: no run of `mine` uses it.

use anyhow::Result;

use super::config::MineConfig;
use super::input::MineUnit;
use super::output::select_puzzles;
use super::results::MineRun;
use super::unit::mine_units;
use crate::engine::pool::EnginePool;

/// The funnel against the exhaustive search on the same units and one pool:
/// the comparison `bench mine` and `bench generate` report (recall of the
/// funnel's candidates, ratio of engine nodes), kept in one place so that
/// both benches measure the same thing.
pub(crate) struct FunnelCheck {
    pub exhaustive: MineRun,
    pub funnel: MineRun,
    /// Engine search CPU seconds of each run.
    pub exhaustive_cpu_seconds: f64,
    pub funnel_cpu_seconds: f64,
    /// Candidates of each run, and the exhaustive ones the funnel also found.
    pub exhaustive_candidates: usize,
    pub funnel_candidates: usize,
    pub found: usize,
    /// Puzzles the exhaustive run keeps (`select_puzzles` under its
    /// settings): what Epoch's procedure would publish from these units.
    pub exhaustive_puzzles: usize,
}

impl FunnelCheck {
    /// Mines `units` with `funnel` made exhaustive, then with `funnel`
    /// itself, one after the other on `pool`.
    pub fn run(units: &[MineUnit], funnel: &MineConfig, pool: &EnginePool) -> Result<Self> {
        let exhaustive_config = MineConfig {
            exhaustive: true,
            ..funnel.clone()
        };
        let start = pool.search_cpu_seconds();
        let exhaustive = mine_units(units, &exhaustive_config, pool)?;
        let middle = pool.search_cpu_seconds();
        Self::run_against(units, funnel, pool, (exhaustive, middle - start))
    }

    /// [`FunnelCheck::run`] against exhaustive results already made on
    /// `units` (with their engine CPU seconds).
    pub fn run_against(
        units: &[MineUnit],
        funnel: &MineConfig,
        pool: &EnginePool,
        (exhaustive, exhaustive_cpu_seconds): (MineRun, f64),
    ) -> Result<Self> {
        let exhaustive_config = MineConfig {
            exhaustive: true,
            ..funnel.clone()
        };
        let middle = pool.search_cpu_seconds();
        let cheap = mine_units(units, funnel, pool)?;
        let end = pool.search_cpu_seconds();
        let (reference_keys, cheap_keys) = (exhaustive.candidate_keys(), cheap.candidate_keys());
        Ok(Self {
            exhaustive_puzzles: select_puzzles(units, &exhaustive, &exhaustive_config).len(),
            exhaustive_candidates: reference_keys.len(),
            funnel_candidates: cheap_keys.len(),
            found: reference_keys.intersection(&cheap_keys).count(),
            exhaustive,
            funnel: cheap,
            exhaustive_cpu_seconds,
            funnel_cpu_seconds: end - middle,
        })
    }

    /// Share of the exhaustive candidates the funnel found (1 when the
    /// exhaustive search found none: nothing was missed).
    pub fn recall(&self) -> f64 {
        if self.exhaustive_candidates == 0 {
            1.0
        } else {
            self.found as f64 / self.exhaustive_candidates as f64
        }
    }

    /// Exhaustive nodes over the funnel's; none when the funnel searched
    /// nothing.
    pub fn nodes_ratio(&self) -> Option<f64> {
        let (exhaustive, funnel) = (self.exhaustive.stats().nodes, self.funnel.stats().nodes);
        (funnel > 0).then(|| exhaustive as f64 / funnel as f64)
    }
}

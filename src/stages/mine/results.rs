//! What mining finds: a position that passed ([`Found`]), one unit's
//! result and a run's results with their totals. Apart because the
//! funnel, the verdict, the output and the funnel check all pass these
//! along, and none of them owns them.

use serde::{Deserialize, Serialize};
use shakmaty::uci::UciMove;
use std::collections::HashSet;

use crate::engine::criterion::Criterion;
use crate::engine::pool::Usage;
use crate::engine::uci::Score;

/// A position that passed the criterion, with its extended line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Found {
    /// Moves from the unit's start to the puzzle position.
    pub after: usize,
    pub best_move: UciMove,
    pub best_score: Score,
    pub second_score: Option<Score>,
    /// Nodes of the full search at the puzzle position.
    pub nodes: u64,
    /// Solver first, ends on a solver move; the engine's replies and best
    /// moves as it spelled them.
    pub line: Vec<UciMove>,
    pub zobrist: u64,
    /// The rule the puzzle passed: the criterion's, or `mate`.
    pub criterion: Criterion,
    /// Found on a branch of the game ([`super::branch`]): the moves from
    /// the unit's start to the puzzle position, in place of the game's.
    pub branch: Option<Vec<UciMove>>,
}

/// What one unit produced (kept in a standalone `mine`'s checkpoint).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct UnitResult {
    pub found: Vec<Found>,
    pub positions: u64,
    pub full_searches: u64,
    pub nodes: u64,
    /// Positions analysed on branches of the game (counted in `positions`
    /// too).
    pub branches: u64,
    /// Found at a position of the game's human source game, and dropped
    /// (not in `found`).
    pub public: u64,
    /// Near copies of the game's source idea ([`crate::chess::novelty`]),
    /// dropped (not in `found`).
    #[serde(default)]
    pub near_source: u64,
    /// Where the unit's engine work went, by step (the benches'
    /// breakdown; no output of the stage depends on it).
    #[serde(default)]
    pub steps: StepUsage,
}

/// Engine work by step of the funnel; serialized as a map from step name
/// to its usage, in funnel order (the field order).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct StepUsage {
    /// The swing pass's MultiPV 1 search at each target.
    #[serde(default)]
    pub swing: Usage,
    /// The shallow MultiPV 2 pass at each target.
    pub shallow: Usage,
    /// The shallow search after the move played (its loss).
    pub played: Usage,
    /// The line screen's shallow line.
    pub screen: Usage,
    /// The full search and its verdict's extra search.
    pub full: Usage,
    /// The line extension of a position that passed.
    pub line: Usage,
    /// The search over every move at a branch point.
    pub branch: Usage,
}

impl StepUsage {
    /// The steps, named, in funnel order.
    pub fn named(&self) -> [(&'static str, Usage); 7] {
        [
            ("swing", self.swing),
            ("shallow", self.shallow),
            ("played", self.played),
            ("screen", self.screen),
            ("full", self.full),
            ("line", self.line),
            ("branch", self.branch),
        ]
    }

    /// The steps that ran, as "name CPU-seconds (searches)", the seconds
    /// to `decimals` places.
    pub fn text(&self, decimals: usize) -> String {
        (self.named().iter())
            .filter(|(_, usage)| usage.searches > 0)
            .map(|(name, usage)| {
                format!(
                    "{name} {:.decimals$} ({})",
                    usage.cpu_seconds, usage.searches
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Adds `other`'s steps to these.
    pub fn add(&mut self, other: &StepUsage) {
        self.swing.add(other.swing);
        self.shallow.add(other.shallow);
        self.played.add(other.played);
        self.screen.add(other.screen);
        self.full.add(other.full);
        self.line.add(other.line);
        self.branch.add(other.branch);
    }
}

/// Totals over units.
#[derive(Clone, Debug, Default)]
pub(crate) struct MineStats {
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
    pub nodes: u64,
    pub steps: StepUsage,
}

pub(crate) struct MineRun {
    pub results: Vec<UnitResult>,
}

impl MineRun {
    pub fn stats(&self) -> MineStats {
        let mut stats = MineStats::default();
        for r in &self.results {
            stats.positions += r.positions;
            stats.full_searches += r.full_searches;
            stats.candidates += r.found.len() as u64;
            stats.nodes += r.nodes;
            stats.steps.add(&r.steps);
        }
        stats
    }

    /// The candidates found, as (unit index, ply, best move): what two
    /// runs over the same units are compared by.
    pub fn candidate_keys(&self) -> HashSet<(usize, usize, UciMove)> {
        self.results
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.found.iter().map(move |f| (i, f.after, f.best_move)))
            .collect()
    }
}

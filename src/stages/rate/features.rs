//! The rating features: one table of (name, function), each function
//! reading one number off a puzzle's signals (the board's,
//! [`super::signals`], and the human-move nets', [`super::human`]). A model
//! stores the names it was fitted on; a feature is added by adding a row.
//! After the table come each net's pooled tower at the first solver move
//! ([`crate::maia::MoveProbabilities::pooled_at`]), 64 numbers a net: how
//! the net reads the board, beyond the moves it would play. Last come the
//! puzzle's board themes, one 0/1 each, from puzzleforge's own tagger
//! ([`crate::chess::tagger`]).
//!
//! No feature needs an engine search: each costs the nets' forward passes
//! over the solver's positions and a walk over the legal moves, so that
//! millions of rated puzzles can be read for a fit and a generated pool
//! rated at the pace it is mined (docs/rating.md).

use serde::{Deserialize, Serialize};

use super::config::{POOLED_FILTERS, RATE_NETS};
use super::human::{HumanSignals, MoveChoice};
use super::signals::BoardFacts;
use crate::chess::line::PuzzleLine;
use crate::chess::tagger::{self, ThemeKind};

/// A puzzle's signals, as the feature functions read them.
pub(crate) struct Signals<'a> {
    pub line: &'a PuzzleLine,
    /// Per solver move.
    pub board: &'a [BoardFacts],
    /// The solver's material lead and the non-pawn material on the board,
    /// at the first solver move ([`super::signals::material_facts`]).
    pub material: (f64, f64),
    pub human: &'a HumanSignals,
}

/// A feature: its name and how it is read off the signals.
pub(crate) type Feature = (&'static str, fn(&Signals) -> f64);

/// The feature values of one puzzle, in the order of [`FEATURES`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Features {
    pub values: Vec<f64>,
}

impl Features {
    /// The value of the feature `name`, if it is in the table.
    pub(crate) fn get(&self, name: &str) -> Option<f64> {
        let index = FEATURES.iter().position(|(n, _)| *n == name)?;
        self.values.get(index).copied()
    }
}

/// Computes every feature of one puzzle: the table's, then each net's
/// pooled tower at the first solver move (zeros where a net gives none),
/// then one 0/1 per board theme ([`theme_features`]).
pub(crate) fn feature_values(signals: &Signals) -> Vec<f64> {
    let mut values: Vec<f64> = FEATURES.iter().map(|(_, f)| f(signals)).collect();
    for net in 0..RATE_NETS.len() {
        let pooled = signals.human.first_pooled.get(net);
        values.extend(
            (0..POOLED_FILTERS)
                .map(|i| pooled.and_then(|p| p.get(i)).map_or(0.0, |v| f64::from(*v))),
        );
    }
    values.extend(theme_features(signals.line));
    values
}

/// The themes a rating reads: every Lichess theme the board and the line
/// decide ([`tagger::THEMES`] of kind [`ThemeKind::Board`]), in the
/// table's order. Only the tagger's own themes, computed from the FEN and
/// the moves: a Lichess row's `Themes` column is never read, so a
/// generated puzzle and a Lichess one are read alike.
fn rated_themes() -> impl Iterator<Item = &'static str> {
    tagger::THEMES
        .iter()
        .filter(|(_, kind)| *kind == ThemeKind::Board)
        .map(|(name, _)| *name)
}

/// 1 for each rated theme the line has, else 0 ([`rated_themes`]' order).
/// What a motif says of difficulty the nets do not see at one position:
/// a sacrifice or a quiet move is harder than a capture of what hangs.
fn theme_features(line: &PuzzleLine) -> impl Iterator<Item = f64> {
    let found = tagger::board_themes(line);
    rated_themes().map(move |theme| if found.contains(&theme) { 1.0 } else { 0.0 })
}

/// The names of the features, in order: the table's, then
/// `maia_first_pool_{rating}_{filter}`, then `theme_{name}`.
pub fn feature_names() -> Vec<String> {
    let mut names: Vec<String> = FEATURES.iter().map(|(name, _)| name.to_string()).collect();
    for rating in RATE_NETS {
        names.extend((0..POOLED_FILTERS).map(|i| format!("maia_first_pool_{rating}_{i:02}")));
    }
    names.extend(rated_themes().map(|theme| format!("theme_{theme}")));
    names
}

/// Added to a probability before its logarithm: the nets give some moves
/// ~1e-6, a distinction no human difficulty follows.
const PROBABILITY_FLOOR: f64 = 1e-4;

impl Signals<'_> {
    fn first_board(&self, f: fn(&BoardFacts) -> f64) -> f64 {
        self.board.first().map(f).unwrap_or(0.0)
    }

    /// `f` of the board facts of the solver move picked by `which`.
    fn board_at(
        &self,
        which: fn(&Self) -> Option<(usize, &MoveChoice)>,
        f: fn(&BoardFacts) -> f64,
    ) -> f64 {
        which(self)
            .and_then(|(turn, _)| self.board.get(turn))
            .map(f)
            .unwrap_or(0.0)
    }

    /// Solver moves, at least 1 (a divisor).
    fn turns(&self) -> f64 {
        self.board.len().max(1) as f64
    }

    fn board_sum(&self, f: fn(&BoardFacts) -> f64) -> f64 {
        self.board.iter().map(f).sum()
    }

    fn pieces(&self) -> f64 {
        self.line
            .position_after(1)
            .map(|p| shakmaty::Position::board(p).occupied().count() as f64)
            .unwrap_or(0.0)
    }

    /// The first solver move as the nets see it (every puzzle has one).
    fn first_move(&self) -> Option<(usize, &MoveChoice)> {
        self.human.solver.first().map(|c| (0, c))
    }

    /// The solver move the nets find least likely (averaged over the
    /// nets); the first of equals.
    fn hardest_move(&self) -> Option<(usize, &MoveChoice)> {
        self.human
            .solver
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.p_mean().total_cmp(&b.1.p_mean()).then(a.0.cmp(&b.0)))
    }

    /// The mean over the solver moves of `f`.
    fn line_mean(&self, f: fn(&MoveChoice, &[f64]) -> f64) -> f64 {
        let ratings = &self.human.ratings;
        let n = self.human.solver.len().max(1) as f64;
        self.human.solver.iter().map(|c| f(c, ratings)).sum::<f64>() / n
    }

    /// `f` of the move picked by `which`, 0 without one.
    fn at(
        &self,
        which: fn(&Self) -> Option<(usize, &MoveChoice)>,
        f: fn(&MoveChoice, &[f64]) -> f64,
    ) -> f64 {
        which(self)
            .map(|(_, c)| f(c, &self.human.ratings))
            .unwrap_or(0.0)
    }

    /// The solution's probability under net `net` at the first move.
    fn first_p_at(&self, net: usize) -> f64 {
        self.human
            .solver
            .first()
            .and_then(|c| c.probability.get(net).copied())
            .unwrap_or(0.0)
    }

    /// The log-probability that a player of net `net`'s rating plays every
    /// solver move of the line (the moves taken as independent).
    fn line_log_p_at(&self, net: usize) -> f64 {
        self.human
            .solver
            .iter()
            .map(|c| log_p(c.probability.get(net).copied().unwrap_or(0.0)))
            .sum()
    }

    /// The lowest log-probability of a solver move under net `net`: the
    /// move a player of that rating is least likely to find.
    fn min_log_p_at(&self, net: usize) -> f64 {
        self.human
            .solver
            .iter()
            .map(|c| log_p(c.probability.get(net).copied().unwrap_or(0.0)))
            .fold(0.0, f64::min)
    }

    /// The log rank of the first solver move under net `net`.
    fn first_log_rank_at(&self, net: usize) -> f64 {
        self.human
            .solver
            .first()
            .and_then(|c| c.rank.get(net))
            .map_or(0.0, |r| r.ln())
    }
}

fn log_p(p: f64) -> f64 {
    (p + PROBABILITY_FLOOR).ln()
}

/// The mean of `values`, 0 for none.
fn mean(values: &[f64]) -> f64 {
    crate::core::stats::mean(values).unwrap_or(0.0)
}

/// Least-squares slope of `values` against `ratings`, per 100 points.
fn slope(values: &[f64], ratings: &[f64]) -> f64 {
    let (mx, my) = (mean(ratings), mean(values));
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in ratings.iter().zip(values) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    if sxx > 0.0 { 100.0 * sxy / sxx } else { 0.0 }
}

impl MoveChoice {
    fn p_mean(&self) -> f64 {
        mean(&self.probability)
    }

    fn log_p_mean(&self) -> f64 {
        mean(
            &self
                .probability
                .iter()
                .map(|p| log_p(*p))
                .collect::<Vec<_>>(),
        )
    }

    fn log_p_slope(&self, ratings: &[f64]) -> f64 {
        let logs: Vec<f64> = self.probability.iter().map(|p| log_p(*p)).collect();
        slope(&logs, ratings)
    }

    fn log_rank_mean(&self) -> f64 {
        mean(&self.rank.iter().map(|r| r.ln()).collect::<Vec<_>>())
    }

    /// The lowest rating whose net plays the move most often; 100 above the
    /// highest when none does.
    fn top_rating(&self, ratings: &[f64]) -> f64 {
        self.rank
            .iter()
            .zip(ratings)
            .find(|(rank, _)| **rank <= 1.0)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| ratings.last().copied().unwrap_or(0.0) + 100.0)
    }

    fn entropy_mean(&self) -> f64 {
        mean(&self.entropy)
    }

    fn wrong_p_mean(&self) -> f64 {
        mean(&self.wrong_probability)
    }

    /// Log-odds of the best wrong move against the solution: above 0 when
    /// a decoy draws more players than the solution.
    fn wrong_log_odds(&self) -> f64 {
        log_p(self.wrong_p_mean()) - log_p(self.p_mean())
    }

    fn log_legal_moves(&self) -> f64 {
        (self.legal_moves as f64).ln_1p()
    }
}

/// Every feature, in the order of [`Features::values`]. The per-net
/// features follow [`super::config::RATE_NETS`]: net 0 is Maia-1100, net 1
/// Maia-1900.
pub(crate) const FEATURES: &[Feature] = &[
    // The line.
    ("solver_moves", |s| s.board.len() as f64),
    ("ends_in_mate", |s| {
        f64::from(u8::from(s.line.ends_in_checkmate()))
    }),
    ("pieces", |s| s.pieces()),
    ("material_up", |s| s.material.0),
    ("piece_material", |s| s.material.1),
    ("checks_in_line", |s| {
        s.board_sum(|b| b.is_check) / s.turns()
    }),
    ("captures_in_line", |s| {
        s.board_sum(|b| b.is_capture) / s.turns()
    }),
    ("quiet_in_line", |s| s.board_sum(|b| b.is_quiet) / s.turns()),
    ("quiet_moves", |s| s.board_sum(|b| b.is_quiet)),
    ("sacrifices", |s| s.board_sum(|b| b.is_sacrifice)),
    ("is_promotion", |s| {
        s.board.iter().map(|b| b.is_promotion).fold(0.0, f64::max)
    }),
    ("all_checks", |s| {
        f64::from(u8::from(
            !s.board.is_empty() && s.board.iter().all(|b| b.is_check > 0.0),
        ))
    }),
    ("last_is_quiet", |s| {
        s.board.last().map_or(0.0, |b| b.is_quiet)
    }),
    // The board at the first solver move.
    ("in_check", |s| s.first_board(|b| b.in_check)),
    ("after_capture", |s| s.first_board(|b| b.after_capture)),
    ("log_legal_moves", |s| {
        s.first_board(|b| b.legal_moves.ln_1p())
    }),
    ("log_checks_available", |s| {
        s.first_board(|b| b.checks_available.ln_1p())
    }),
    ("log_captures_available", |s| {
        s.first_board(|b| b.captures_available.ln_1p())
    }),
    ("log_other_good_captures", |s| {
        s.first_board(|b| b.other_good_captures.ln_1p())
    }),
    ("log_mates_available", |s| {
        s.first_board(|b| b.mates_available.ln_1p())
    }),
    ("log_non_mating_checks", |s| {
        s.first_board(|b| (b.checks_available - b.mates_available).max(0.0).ln_1p())
    }),
    ("is_capture", |s| s.first_board(|b| b.is_capture)),
    ("is_check", |s| s.first_board(|b| b.is_check)),
    ("is_quiet", |s| s.first_board(|b| b.is_quiet)),
    ("moved_value", |s| s.first_board(|b| b.moved_value)),
    ("captured_value", |s| s.first_board(|b| b.captured_value)),
    ("first_is_sacrifice", |s| s.first_board(|b| b.is_sacrifice)),
    ("is_recapture", |s| s.first_board(|b| b.is_recapture)),
    ("log_naive_rank", |s| s.first_board(|b| b.naive_rank.ln())),
    ("distance", |s| s.first_board(|b| b.distance)),
    ("backward", |s| s.first_board(|b| b.backward)),
    ("is_knight", |s| s.first_board(|b| b.is_knight)),
    ("is_king", |s| s.first_board(|b| b.is_king)),
    // The board at the solver move the nets find least likely.
    ("hardest_is_quiet", |s| {
        s.board_at(Signals::hardest_move, |b| b.is_quiet)
    }),
    ("hardest_is_check", |s| {
        s.board_at(Signals::hardest_move, |b| b.is_check)
    }),
    ("hardest_is_sacrifice", |s| {
        s.board_at(Signals::hardest_move, |b| b.is_sacrifice)
    }),
    ("hardest_log_naive_rank", |s| {
        s.board_at(Signals::hardest_move, |b| b.naive_rank.ln())
    }),
    ("hardest_backward", |s| {
        s.board_at(Signals::hardest_move, |b| b.backward)
    }),
    // The human-move nets, per net: the first solver move's probability
    // and rank, the whole line's log-probability, its least likely move.
    ("maia_first_p_1100", |s| s.first_p_at(0)),
    ("maia_first_p_1900", |s| s.first_p_at(1)),
    ("maia_first_log_rank_1100", |s| s.first_log_rank_at(0)),
    ("maia_first_log_rank_1900", |s| s.first_log_rank_at(1)),
    ("maia_line_log_p_1100", |s| s.line_log_p_at(0)),
    ("maia_line_log_p_1900", |s| s.line_log_p_at(1)),
    ("maia_min_log_p_1100", |s| s.min_log_p_at(0)),
    ("maia_min_log_p_1900", |s| s.min_log_p_at(1)),
    // The first solver move, over both nets.
    ("maia_first_log_p_mean", |s| {
        s.at(Signals::first_move, |c, _| c.log_p_mean())
    }),
    ("maia_first_log_p_slope", |s| {
        s.at(Signals::first_move, MoveChoice::log_p_slope)
    }),
    ("maia_first_top_rating", |s| {
        s.at(Signals::first_move, MoveChoice::top_rating)
    }),
    ("maia_first_entropy", |s| {
        s.at(Signals::first_move, |c, _| c.entropy_mean())
    }),
    ("maia_first_wrong_p", |s| {
        s.at(Signals::first_move, |c, _| c.wrong_p_mean())
    }),
    ("maia_first_wrong_log_odds", |s| {
        s.at(Signals::first_move, |c, _| c.wrong_log_odds())
    }),
    // The solver move the nets find least likely.
    ("maia_hardest_p_mean", |s| {
        s.at(Signals::hardest_move, |c, _| c.p_mean())
    }),
    ("maia_hardest_log_p_mean", |s| {
        s.at(Signals::hardest_move, |c, _| c.log_p_mean())
    }),
    ("maia_hardest_log_p_slope", |s| {
        s.at(Signals::hardest_move, MoveChoice::log_p_slope)
    }),
    ("maia_hardest_log_rank", |s| {
        s.at(Signals::hardest_move, |c, _| c.log_rank_mean())
    }),
    ("maia_hardest_top_rating", |s| {
        s.at(Signals::hardest_move, MoveChoice::top_rating)
    }),
    ("maia_hardest_entropy", |s| {
        s.at(Signals::hardest_move, |c, _| c.entropy_mean())
    }),
    ("maia_hardest_wrong_p", |s| {
        s.at(Signals::hardest_move, |c, _| c.wrong_p_mean())
    }),
    ("maia_hardest_wrong_log_odds", |s| {
        s.at(Signals::hardest_move, |c, _| c.wrong_log_odds())
    }),
    ("maia_hardest_turn", |s| {
        s.hardest_move().map(|(turn, _)| turn as f64).unwrap_or(0.0)
    }),
    ("maia_hardest_log_legal_moves", |s| {
        s.at(Signals::hardest_move, |c, _| c.log_legal_moves())
    }),
    // The solver moves on average, and the whole line.
    ("maia_mean_log_p_mean", |s| {
        s.line_mean(|c, _| c.log_p_mean())
    }),
    ("maia_mean_log_rank", |s| {
        s.line_mean(|c, _| c.log_rank_mean())
    }),
    ("maia_mean_entropy", |s| {
        s.line_mean(|c, _| c.entropy_mean())
    }),
    ("maia_mean_wrong_log_odds", |s| {
        s.line_mean(|c, _| c.wrong_log_odds())
    }),
    ("maia_line_log_p_slope", |s| {
        let line: Vec<f64> = (0..s.human.ratings.len())
            .map(|net| s.line_log_p_at(net))
            .collect();
        slope(&line, &s.human.ratings)
    }),
    ("maia_moves_not_top_at_1900", |s| {
        s.human
            .solver
            .iter()
            .filter(|c| c.rank.last().is_some_and(|r| *r > 1.0))
            .count() as f64
    }),
    ("maia_moves_wrong_favoured", |s| {
        s.human
            .solver
            .iter()
            .filter(|c| c.wrong_log_odds() > 0.0)
            .count() as f64
    }),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_per_net_names_follow_the_nets() {
        let names = feature_names();
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        // Net 0 and net 1 of the per-net features are the nets' ratings.
        assert_eq!(crate::stages::rate::config::RATE_NETS, [1100, 1900]);
        let has = |name: &str| names.iter().any(|n| n == name);
        assert!(has("maia_first_p_1100") && has("maia_first_p_1900"));
        assert!(has("maia_first_pool_1900_63"));
    }

    #[test]
    fn theme_features_are_the_taggers_board_themes_of_the_line() {
        // Lichess puzzle 00BNd (tagged `advantage fork middlegame short`):
        // Nxe7 forks the king and the rook on c8.
        let line = PuzzleLine::parse(
            "1rr3k1/3bppbp/3p1np1/1B1N4/P2BP3/5P2/P2R2PP/R5K1 b - - 0 21",
            &["d7b5", "d5e7", "g8f8", "e7c8"],
        )
        .expect("a legal line");
        let names = feature_names();
        let themes: Vec<&str> = names
            .iter()
            .filter_map(|n| n.strip_prefix("theme_"))
            .collect();
        let values: Vec<f64> = theme_features(&line).collect();
        assert_eq!(values.len(), themes.len());
        let mut on: Vec<&str> = themes
            .iter()
            .zip(&values)
            .filter(|(_, v)| **v == 1.0)
            .map(|(t, _)| *t)
            .collect();
        on.sort_unstable();
        assert_eq!(on, tagger::board_themes(&line));
        for theme in ["fork", "middlegame", "short"] {
            assert!(on.contains(&theme), "{theme} missing from {on:?}");
        }
        // Only themes the board decides: never the engine's or the players'.
        assert!(!themes.contains(&"advantage") && !themes.contains(&"master"));
        assert!(values.iter().all(|v| *v == 0.0 || *v == 1.0));
    }

    #[test]
    fn slope_is_per_hundred_points() {
        let ratings = [1100.0, 1200.0, 1300.0];
        assert!((slope(&[0.1, 0.2, 0.3], &ratings) - 0.1).abs() < 1e-12);
        assert_eq!(slope(&[0.5, 0.5, 0.5], &ratings), 0.0);
    }
}

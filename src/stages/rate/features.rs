//! The rating features: one table of (name, function), each function
//! reading one number off a puzzle's signals (the engine's and the board's,
//! [`super::signals`], and the human-move nets', [`super::human`]). A model
//! stores the names it was fitted on; a feature is added by adding a row.

use serde::{Deserialize, Serialize};

use super::human::{HumanSignals, MoveChoice};
use super::signals::{BoardFacts, EngineFacts, EngineSignals};
use crate::chess::line::PuzzleLine;

/// A puzzle's signals, as the feature functions read them.
pub(crate) struct Signals<'a> {
    pub line: &'a PuzzleLine,
    pub engine: &'a EngineSignals,
    pub human: &'a HumanSignals,
}

/// A feature: its name and how it is read off the signals.
pub(crate) type Feature = (&'static str, fn(&Signals) -> f64);

/// The feature values of one puzzle, in the order of [`FEATURES`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Features {
    pub values: Vec<f64>,
    /// Solve rate of the plain ladder (skill levels 0-14), when measured.
    pub baseline_solve_rate: Option<f64>,
}

impl Features {
    /// The value of the feature `name`, if it is in the table.
    pub(crate) fn get(&self, name: &str) -> Option<f64> {
        let index = FEATURES.iter().position(|(n, _)| *n == name)?;
        self.values.get(index).copied()
    }
}

/// Computes every feature of one puzzle.
pub(crate) fn feature_values(signals: &Signals) -> Vec<f64> {
    FEATURES.iter().map(|(_, f)| f(signals)).collect()
}

/// The names of the features, in order.
pub fn feature_names() -> Vec<&'static str> {
    FEATURES.iter().map(|(name, _)| *name).collect()
}

/// A solver move whose probe puts the second move this far (cp) below the
/// best is an only move: Lichess's puzzle generator asks the same of every
/// solver move, so longer lines differ in how many moves clear it by far.
const ONLY_MOVE_GAP_CP: f64 = 200.0;

/// A wrong move losing this much (cp, at the wide scan) is a blunder.
const BLUNDER_CP: f64 = 200.0;

/// Added to a probability before its logarithm: the nets give some moves
/// ~1e-6, a distinction no human difficulty follows.
const PROBABILITY_FLOOR: f64 = 1e-4;

impl Signals<'_> {
    fn first_engine(&self, f: fn(&EngineFacts) -> f64) -> f64 {
        self.engine.engine.first().map(f).unwrap_or(0.0)
    }

    fn first_board(&self, f: fn(&BoardFacts) -> f64) -> f64 {
        self.engine.board.first().map(f).unwrap_or(0.0)
    }

    /// Solver moves, at least 1 (a divisor).
    fn turns(&self) -> f64 {
        self.engine.engine.len().max(1) as f64
    }

    fn board_sum(&self, f: fn(&BoardFacts) -> f64) -> f64 {
        self.engine.board.iter().map(f).sum()
    }

    fn pieces(&self) -> f64 {
        self.line
            .position_after(1)
            .map(|p| shakmaty::Position::board(p).occupied().count() as f64)
            .unwrap_or(0.0)
    }

    fn found_depth_mean(&self) -> f64 {
        self.engine
            .engine
            .iter()
            .map(|f| f.found_depth)
            .sum::<f64>()
            / self.turns()
    }

    fn only_moves(&self) -> f64 {
        self.engine
            .engine
            .iter()
            .filter(|f| f.gap >= ONLY_MOVE_GAP_CP)
            .count() as f64
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

    /// How much (cp, at the wide scan) the most tempting wrong move of the
    /// picked solver move gives up against the best move; 1000 when the
    /// scan did not score it.
    fn tempting_deficit(&self, which: fn(&Self) -> Option<(usize, &MoveChoice)>) -> f64 {
        which(self).map_or(0.0, |(turn, _)| self.tempting_deficit_at(turn))
    }

    /// [`Self::tempting_deficit`] of solver move `turn`.
    fn tempting_deficit_at(&self, turn: usize) -> f64 {
        let Some(choice) = self.human.solver.get(turn) else {
            return 0.0;
        };
        let Some(tempting) = &choice.tempting else {
            return 0.0;
        };
        let Some(facts) = self.engine.engine.get(turn) else {
            return 0.0;
        };
        let best = facts.wide_scores.first().map(|(_, cp)| *cp).unwrap_or(0.0);
        facts
            .wide_scores
            .iter()
            .find(|(uci, _)| uci == tempting)
            .map(|(_, cp)| (best - cp).clamp(0.0, 1000.0))
            .unwrap_or(1000.0)
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

    /// The mean over the opponent's replies of `f`; `none` for a line
    /// without replies.
    fn reply_mean(&self, f: fn(&MoveChoice, &[f64]) -> f64, none: f64) -> f64 {
        let replies = &self.human.replies;
        if replies.is_empty() {
            return none;
        }
        let ratings = &self.human.ratings;
        replies.iter().map(|c| f(c, ratings)).sum::<f64>() / replies.len() as f64
    }
}

fn log_p(p: f64) -> f64 {
    (p + PROBABILITY_FLOOR).ln()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
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

    fn p_min(&self) -> f64 {
        self.probability.iter().copied().fold(1.0, f64::min)
    }

    fn p_max(&self) -> f64 {
        self.probability.iter().copied().fold(0.0, f64::max)
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

/// Every feature, in the order of [`Features::values`]. The first 58 are
/// the engine and board features of rating-model format 2.
pub(crate) const FEATURES: &[Feature] = &[
    // The weakened player's ladder and the engine probes.
    ("ladder_solve_rate", |s| s.engine.solve_rate),
    ("ladder_low_solve_rate", |s| s.engine.low_solve_rate),
    ("found_depth_max", |s| {
        s.engine
            .engine
            .iter()
            .map(|f| f.found_depth)
            .fold(0.0, f64::max)
    }),
    ("found_depth_first", |s| s.first_engine(|f| f.found_depth)),
    ("found_depth_mean", |s| s.found_depth_mean()),
    ("log_gap_min", |s| {
        s.engine
            .engine
            .iter()
            .map(|f| f.gap.ln_1p())
            .fold(f64::INFINITY, f64::min)
            .min(1000f64.ln_1p())
    }),
    ("log_gap_first", |s| s.first_engine(|f| f.gap.ln_1p())),
    ("log_wide_rank", |s| s.first_engine(|f| f.wide_rank.ln())),
    ("wide_close", |s| s.first_engine(|f| f.wide_close)),
    ("log_wide_deficit", |s| {
        s.first_engine(|f| f.wide_deficit.ln_1p())
    }),
    // The board at the first solver move.
    ("legal_moves", |s| s.first_board(|b| b.legal_moves)),
    ("checks_available", |s| {
        s.first_board(|b| b.checks_available)
    }),
    ("captures_available", |s| {
        s.first_board(|b| b.captures_available)
    }),
    ("is_capture", |s| s.first_board(|b| b.is_capture)),
    ("is_check", |s| s.first_board(|b| b.is_check)),
    ("is_quiet", |s| s.first_board(|b| b.is_quiet)),
    ("is_promotion", |s| {
        s.engine
            .board
            .iter()
            .map(|b| b.is_promotion)
            .fold(0.0, f64::max)
    }),
    ("moved_value", |s| s.first_board(|b| b.moved_value)),
    ("captured_value", |s| s.first_board(|b| b.captured_value)),
    ("sacrifices", |s| s.board_sum(|b| b.is_sacrifice)),
    ("is_recapture", |s| s.first_board(|b| b.is_recapture)),
    ("after_capture", |s| s.first_board(|b| b.after_capture)),
    ("log_naive_rank", |s| s.first_board(|b| b.naive_rank.ln())),
    ("distance", |s| s.first_board(|b| b.distance)),
    ("backward", |s| s.first_board(|b| b.backward)),
    ("pieces", |s| s.pieces()),
    ("ends_in_mate", |s| {
        f64::from(u8::from(s.line.ends_in_checkmate()))
    }),
    ("in_check", |s| s.first_board(|b| b.in_check)),
    ("other_good_captures", |s| {
        s.first_board(|b| b.other_good_captures)
    }),
    ("mates_available", |s| s.first_board(|b| b.mates_available)),
    ("is_knight", |s| s.first_board(|b| b.is_knight)),
    ("is_king", |s| s.first_board(|b| b.is_king)),
    ("best_score", |s| s.first_engine(|f| f.best_score)),
    ("checks_in_line", |s| {
        s.board_sum(|b| b.is_check) / s.turns()
    }),
    ("captures_in_line", |s| {
        s.board_sum(|b| b.is_capture) / s.turns()
    }),
    ("quiet_in_line", |s| s.board_sum(|b| b.is_quiet) / s.turns()),
    // Counts matter by ratio (the third check adds less than the second),
    // which a linear fit only sees on a log scale.
    ("log_checks_available", |s| {
        s.first_board(|b| b.checks_available.ln_1p())
    }),
    ("log_captures_available", |s| {
        s.first_board(|b| b.captures_available.ln_1p())
    }),
    ("log_legal_moves", |s| {
        s.first_board(|b| b.legal_moves.ln_1p())
    }),
    ("log_other_good_captures", |s| {
        s.first_board(|b| b.other_good_captures.ln_1p())
    }),
    ("log_mates_available", |s| {
        s.first_board(|b| b.mates_available.ln_1p())
    }),
    ("log_wide_close", |s| {
        s.first_engine(|f| f.wide_close.ln_1p())
    }),
    ("log_pieces", |s| s.pieces().ln_1p()),
    ("log_non_mating_checks", |s| {
        s.first_board(|b| (b.checks_available - b.mates_available).max(0.0).ln_1p())
    }),
    ("ladder_times_found_depth", |s| {
        s.engine.solve_rate * s.found_depth_mean()
    }),
    // Where a line's difficulty sits beyond its first move.
    ("ladder_first_move_rate", |s| {
        s.engine.turn_rates.first().copied().unwrap_or(1.0)
    }),
    ("ladder_hardest_move_rate", |s| {
        s.engine.turn_rates.iter().copied().fold(1.0, f64::min)
    }),
    ("ladder_later_min_rate", |s| {
        let later = s.engine.turn_rates.get(1..).unwrap_or_default();
        later.iter().copied().fold(1.0, f64::min)
    }),
    ("only_moves", |s| s.only_moves()),
    ("only_move_share", |s| s.only_moves() / s.turns()),
    ("quiet_moves", |s| s.board_sum(|b| b.is_quiet)),
    ("found_depth_later_max", |s| {
        let later = s.engine.engine.get(1..).unwrap_or_default();
        later.iter().map(|f| f.found_depth).fold(0.0, f64::max)
    }),
    ("log_gap_later_min", |s| {
        let later = s.engine.engine.get(1..).unwrap_or_default();
        later
            .iter()
            .map(|f| f.gap.ln_1p())
            .fold(1000f64.ln_1p(), f64::min)
    }),
    ("solver_moves", |s| s.engine.engine.len() as f64),
    ("all_checks", |s| {
        let board = &s.engine.board;
        f64::from(u8::from(
            !board.is_empty() && board.iter().all(|b| b.is_check > 0.0),
        ))
    }),
    ("first_is_sacrifice", |s| s.first_board(|b| b.is_sacrifice)),
    ("log_first_mate_in", |s| {
        s.first_engine(|f| f.mate_in.ln_1p())
    }),
    ("log_first_pv_plies", |s| {
        s.first_engine(|f| f.pv_plies.ln_1p())
    }),
    // The human-move nets. The first solver move's probability at each
    // rating (the nets are trained apart: it need not rise with rating).
    ("maia_first_p_1100", |s| s.first_p_at(0)),
    ("maia_first_p_1200", |s| s.first_p_at(1)),
    ("maia_first_p_1300", |s| s.first_p_at(2)),
    ("maia_first_p_1400", |s| s.first_p_at(3)),
    ("maia_first_p_1500", |s| s.first_p_at(4)),
    ("maia_first_p_1600", |s| s.first_p_at(5)),
    ("maia_first_p_1700", |s| s.first_p_at(6)),
    ("maia_first_p_1800", |s| s.first_p_at(7)),
    ("maia_first_p_1900", |s| s.first_p_at(8)),
    // The log-probability of playing the whole line, at each rating.
    ("maia_line_log_p_1100", |s| s.line_log_p_at(0)),
    ("maia_line_log_p_1200", |s| s.line_log_p_at(1)),
    ("maia_line_log_p_1300", |s| s.line_log_p_at(2)),
    ("maia_line_log_p_1400", |s| s.line_log_p_at(3)),
    ("maia_line_log_p_1500", |s| s.line_log_p_at(4)),
    ("maia_line_log_p_1600", |s| s.line_log_p_at(5)),
    ("maia_line_log_p_1700", |s| s.line_log_p_at(6)),
    ("maia_line_log_p_1800", |s| s.line_log_p_at(7)),
    ("maia_line_log_p_1900", |s| s.line_log_p_at(8)),
    // The first solver move, summed up over the nine nets.
    ("maia_first_p_mean", |s| {
        s.at(Signals::first_move, |c, _| c.p_mean())
    }),
    ("maia_first_p_min", |s| {
        s.at(Signals::first_move, |c, _| c.p_min())
    }),
    ("maia_first_p_max", |s| {
        s.at(Signals::first_move, |c, _| c.p_max())
    }),
    ("maia_first_log_p_mean", |s| {
        s.at(Signals::first_move, |c, _| c.log_p_mean())
    }),
    ("maia_first_log_p_slope", |s| {
        s.at(Signals::first_move, MoveChoice::log_p_slope)
    }),
    ("maia_first_log_rank", |s| {
        s.at(Signals::first_move, |c, _| c.log_rank_mean())
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
    ("maia_first_tempting_log_deficit", |s| {
        s.tempting_deficit(Signals::first_move).ln_1p()
    }),
    ("maia_first_tempting_blunder", |s| {
        f64::from(u8::from(
            s.tempting_deficit(Signals::first_move) >= BLUNDER_CP,
        ))
    }),
    // The solver move the nets find least likely.
    ("maia_hardest_p_mean", |s| {
        s.at(Signals::hardest_move, |c, _| c.p_mean())
    }),
    ("maia_hardest_p_min", |s| {
        s.at(Signals::hardest_move, |c, _| c.p_min())
    }),
    ("maia_hardest_p_max", |s| {
        s.at(Signals::hardest_move, |c, _| c.p_max())
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
    ("maia_hardest_tempting_log_deficit", |s| {
        s.tempting_deficit(Signals::hardest_move).ln_1p()
    }),
    ("maia_hardest_tempting_blunder", |s| {
        f64::from(u8::from(
            s.tempting_deficit(Signals::hardest_move) >= BLUNDER_CP,
        ))
    }),
    ("maia_hardest_turn", |s| {
        s.hardest_move().map(|(turn, _)| turn as f64).unwrap_or(0.0)
    }),
    ("maia_hardest_log_legal_moves", |s| {
        s.at(Signals::hardest_move, |c, _| c.log_legal_moves())
    }),
    // The solver moves on average.
    ("maia_mean_p_mean", |s| s.line_mean(|c, _| c.p_mean())),
    ("maia_mean_log_p_mean", |s| {
        s.line_mean(|c, _| c.log_p_mean())
    }),
    ("maia_mean_log_p_slope", |s| {
        s.line_mean(MoveChoice::log_p_slope)
    }),
    ("maia_mean_log_rank", |s| {
        s.line_mean(|c, _| c.log_rank_mean())
    }),
    ("maia_mean_top_rating", |s| {
        s.line_mean(MoveChoice::top_rating)
    }),
    ("maia_mean_entropy", |s| {
        s.line_mean(|c, _| c.entropy_mean())
    }),
    ("maia_mean_wrong_log_odds", |s| {
        s.line_mean(|c, _| c.wrong_log_odds())
    }),
    // The whole line.
    ("maia_line_log_p_mean", |s| {
        s.human.solver.iter().map(MoveChoice::log_p_mean).sum()
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
    ("maia_moves_tempting_blunder", |s| {
        (0..s.human.solver.len())
            .filter(|&turn| s.tempting_deficit_at(turn) >= BLUNDER_CP)
            .count() as f64
    }),
    ("maia_moves_wrong_favoured", |s| {
        s.human
            .solver
            .iter()
            .filter(|c| c.wrong_log_odds() > 0.0)
            .count() as f64
    }),
    // The opponent's replies inside the line: defences a solver must
    // foresee (1, 0 and 0 for a single-move line, which has none).
    ("maia_reply_p_mean", |s| {
        s.reply_mean(|c, _| c.p_mean(), 1.0)
    }),
    ("maia_reply_p_min", |s| {
        s.human
            .replies
            .iter()
            .map(MoveChoice::p_mean)
            .fold(1.0, f64::min)
    }),
    ("maia_reply_log_rank", |s| {
        s.reply_mean(|c, _| c.log_rank_mean(), 0.0)
    }),
    ("maia_reply_entropy", |s| {
        s.reply_mean(|c, _| c.entropy_mean(), 0.0)
    }),
];

/// The names of the engine and board features of rating-model format 2
/// (the first rows of [`FEATURES`]): the reference model the held-out
/// figures compare with is fitted on these.
pub(crate) const FORMAT_2_FEATURES: usize = 58;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_format_2_block_ends_where_it_did() {
        let names = feature_names();
        let unique: std::collections::HashSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert_eq!(names[26], "ends_in_mate");
        assert_eq!(names[FORMAT_2_FEATURES - 1], "log_first_pv_plies");
        assert!(names[FORMAT_2_FEATURES].starts_with("maia_"));
    }

    #[test]
    fn slope_is_per_hundred_points() {
        let ratings = [1100.0, 1200.0, 1300.0];
        assert!((slope(&[0.1, 0.2, 0.3], &ratings) - 0.1).abs() < 1e-12);
        assert_eq!(slope(&[0.5, 0.5, 0.5], &ratings), 0.0);
    }
}

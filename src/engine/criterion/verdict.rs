//! The verdict itself: the rules and their thresholds, the scores of a
//! solver move's best and second moves, and [`decide`], which every caller
//! asks. Apart from the screens and the line judging, which are built on it.

use crate::chess::wincalc::win_chance;
use crate::engine::uci::Score;
use serde::{Deserialize, Serialize};

/// The uniqueness rule a puzzle is mined and checked with (`--criterion`,
/// `[mine] criterion`, the `Criterion` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Criterion {
    #[default]
    Epoch,
    Lichess,
    /// Forced mates only, held to the mate rule at every solver move.
    Mate,
}

impl Criterion {
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Epoch => "epoch",
            Criterion::Lichess => "lichess",
            Criterion::Mate => "mate",
        }
    }

    /// The criterion a `Criterion` column names (`None` for any other text).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim() {
            "epoch" => Some(Criterion::Epoch),
            "lichess" => Some(Criterion::Lichess),
            "mate" => Some(Criterion::Mate),
            _ => None,
        }
    }
}

/// Epoch thresholds (centipawns, side to move).
pub(crate) const EPOCH_MIN_BEST_CP: i32 = -100;
pub(crate) const EPOCH_MAX_SECOND_CP: i32 = 80;
pub(crate) const EPOCH_MIN_GAP_CP: i32 = 180;

/// The environment variable of the test-only switch on the Epoch gap
/// ([`test_min_gap_cp`]).
pub const TEST_MIN_GAP_VAR: &str = "PUZZLEFORGE_TEST_MIN_GAP_CP";

/// The Epoch gap the rule holds: [`EPOCH_MIN_GAP_CP`], unless the
/// test-only switch sets another.
pub(crate) fn epoch_min_gap_cp() -> i32 {
    test_min_gap_cp().unwrap_or(EPOCH_MIN_GAP_CP)
}

/// The test-only switch: in a debug build (what `cargo test` runs), the
/// Epoch gap read from [`TEST_MIN_GAP_VAR`], standing for a build whose
/// mining threshold differs; its algorithm versions say so
/// ([`rule_variant`]). A release build never reads the variable.
pub fn test_min_gap_cp() -> Option<i32> {
    #[cfg(debug_assertions)]
    {
        static GAP: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();
        *GAP.get_or_init(|| std::env::var(TEST_MIN_GAP_VAR).ok()?.trim().parse().ok())
    }
    #[cfg(not(debug_assertions))]
    {
        None
    }
}

/// What the test-only switch adds to the algorithm version of every stage
/// that judges by the rule (`+min-gap-N`), or nothing.
pub fn rule_variant() -> String {
    test_min_gap_cp()
        .map(|gap| format!("+min-gap-{gap}"))
        .unwrap_or_default()
}

/// Lichess: required win-chance gap between best and second move.
pub(crate) const LICHESS_MIN_GAP: f64 = 0.7;
/// Lichess: a mate in 1 is unique if no non-mating move wins more than this.
pub(crate) const LICHESS_NON_MATE_WIN_THRESHOLD: f64 = 0.6;

/// The mate rule: a second move that mates too is a second solution unless
/// it needs at least this many moves more than the best one.
pub(crate) const MATE_DUAL_MIN_EXTRA_MOVES: i32 = 2;

/// What a solver move is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    Epoch,
    Lichess,
    Mate,
    /// A second engine: best - second >= `min_cp` of its own centipawns.
    Gap {
        min_cp: i32,
    },
}

impl From<Criterion> for Rule {
    fn from(criterion: Criterion) -> Self {
        match criterion {
            Criterion::Epoch => Rule::Epoch,
            Criterion::Lichess => Rule::Lichess,
            Criterion::Mate => Rule::Mate,
        }
    }
}

/// Which of a line's solver moves is judged: Epoch's absolute thresholds
/// and the one-legal-move rule tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The puzzle's first solver move.
    First,
    /// A later solver move of the line.
    Later,
}

/// The scores a MultiPV search gave, from the solver's side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    pub best: Score,
    /// `None` when the best move is the only legal move.
    pub second: Option<Score>,
    /// The best move that does not mate at once; read only when
    /// [`needs_non_mating`] (`None` then: every legal move mates).
    pub best_non_mating: Option<Score>,
}

impl Scores {
    pub fn new(best: Score, second: Option<Score>) -> Self {
        Self {
            best,
            second,
            best_non_mating: None,
        }
    }
}

/// Why a move is or is not the only good one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The rule holds.
    Unique,
    /// A later solver move with one legal move: forced, the line goes on.
    Forced,
    /// The first solver move has one legal move: nothing to find.
    OnlyLegalMove,
    /// The side to move has no legal move.
    NoLegalMove,
    /// The mate rule: the best move does not mate.
    NoMate,
    /// The mate rule: a second move mates as fast, or within one move
    /// (a second engine's gap: both moves mate that close).
    SecondMates,
    /// Epoch: the best move scores below -100 cp.
    BestTooLow,
    /// The second move is too good (Epoch: above 80 cp; mate in 1: a
    /// non-mating move wins more than 0.6).
    SecondTooGood,
    /// The best move is not far enough ahead of the second.
    GapTooSmall,
}

/// The verdict on one solver move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub unique: bool,
    pub why: Why,
}

impl Decision {
    fn of(unique: bool, otherwise: Why) -> Self {
        if unique {
            Self::yes()
        } else {
            Self::no(otherwise)
        }
    }

    fn yes() -> Self {
        Self {
            unique: true,
            why: Why::Unique,
        }
    }

    pub(super) fn no(why: Why) -> Self {
        Self { unique: false, why }
    }
}

/// Lichess's win chances in [-1, 1]: mate for the side to move = 1, mated
/// = -1, else [`win_chance`] of the centipawns.
pub(crate) fn win_chances(score: Score) -> f64 {
    match score {
        Score::Mate(n) if n > 0 => 1.0,
        Score::Mate(_) => -1.0,
        Score::Cp(cp) => win_chance(cp),
    }
}

/// True when the rule must know the best non-mating move: Lichess, when
/// both the best and the second move mate in 1.
pub fn needs_non_mating(rule: Rule, scores: &Scores) -> bool {
    rule == Rule::Lichess && scores.best == Score::Mate(1) && scores.second == Some(Score::Mate(1))
}

/// THE verdict: is the best move the only good one under `rule`, on the
/// `turn`-th solver move? Every caller of the project decides here.
pub fn decide(rule: Rule, turn: Turn, scores: &Scores) -> Decision {
    let Some(second) = scores.second else {
        return match turn {
            Turn::First => Decision::no(Why::OnlyLegalMove),
            Turn::Later => Decision {
                unique: true,
                why: Why::Forced,
            },
        };
    };
    let best = scores.best;
    match rule {
        Rule::Epoch => {
            let (b, s) = (best.to_cp(), second.to_cp());
            if turn == Turn::First && b < EPOCH_MIN_BEST_CP {
                Decision::no(Why::BestTooLow)
            } else if turn == Turn::First && s > EPOCH_MAX_SECOND_CP {
                Decision::no(Why::SecondTooGood)
            } else {
                Decision::of(b - s >= epoch_min_gap_cp(), Why::GapTooSmall)
            }
        }
        Rule::Lichess => lichess(best, second, scores.best_non_mating),
        Rule::Mate => {
            if !mates(best) {
                Decision::no(Why::NoMate)
            } else {
                Decision::of(
                    best == Score::Mate(1) || !mates_as_fast(best, second),
                    Why::SecondMates,
                )
            }
        }
        Rule::Gap { .. } if mates(best) && mates(second) => {
            Decision::of(!mates_as_fast(best, second), Why::SecondMates)
        }
        Rule::Gap { min_cp } => {
            Decision::of(best.to_cp() - second.to_cp() >= min_cp, Why::GapTooSmall)
        }
    }
}

/// Does the side to move force a mate?
pub(super) fn mates(score: Score) -> bool {
    matches!(score, Score::Mate(n) if n > 0)
}

/// Does `second` mate within [`MATE_DUAL_MIN_EXTRA_MOVES`] - 1 moves of
/// `best`'s mate: a second solution of the mate `best` forces?
pub(super) fn mates_as_fast(best: Score, second: Score) -> bool {
    match (best, second) {
        (Score::Mate(n), Score::Mate(m)) if n > 0 && m > 0 => m < n + MATE_DUAL_MIN_EXTRA_MOVES,
        _ => false,
    }
}

/// lichess-puzzler's `is_valid_attack` with its mate-in-1 exception.
pub(super) fn lichess(best: Score, second: Score, best_non_mating: Option<Score>) -> Decision {
    if best == Score::Mate(1) {
        let non_mating = if second == Score::Mate(1) {
            best_non_mating
        } else {
            Some(second)
        };
        if non_mating.is_none_or(|score| win_chances(score) <= LICHESS_NON_MATE_WIN_THRESHOLD) {
            return Decision::yes();
        }
        if second == Score::Mate(1) {
            return Decision::no(Why::SecondTooGood);
        }
    }
    Decision::of(
        win_chances(best) > win_chances(second) + LICHESS_MIN_GAP,
        Why::GapTooSmall,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use Score::{Cp, Mate};

    /// Every rule, on both turns, over the cases that tell the rules
    /// apart: one table, so a change to any rule shows here.
    #[test]
    fn the_one_verdict_table() {
        use Turn::{First, Later};
        use Why::*;
        let gap = Rule::Gap { min_cp: 180 };
        // (rule, turn, best, second, best non-mating, unique, why)
        type Row = (Rule, Turn, Score, Option<Score>, Option<Score>, bool, Why);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // One legal move, every rule: never a first move; forced later.
            (Rule::Epoch, First, Cp(-500), None, None, false, OnlyLegalMove),
            (Rule::Lichess, First, Cp(900), None, None, false, OnlyLegalMove),
            (Rule::Mate, First, Mate(2), None, None, false, OnlyLegalMove),
            (gap, First, Cp(300), None, None, false, OnlyLegalMove),
            (Rule::Epoch, Later, Cp(-500), None, None, true, Forced),
            (Rule::Lichess, Later, Cp(900), None, None, true, Forced),
            (Rule::Mate, Later, Mate(2), None, None, true, Forced),
            (gap, Later, Cp(300), None, None, true, Forced),
            // Epoch: thresholds on the first move, the gap alone later.
            (Rule::Epoch, First, Cp(300), Some(Cp(80)), None, true, Unique),
            (Rule::Epoch, First, Cp(300), Some(Cp(81)), None, false, SecondTooGood),
            (Rule::Epoch, First, Cp(200), Some(Cp(21)), None, false, GapTooSmall),
            (Rule::Epoch, First, Cp(-100), Some(Cp(-280)), None, true, Unique),
            (Rule::Epoch, First, Cp(-101), Some(Cp(-400)), None, false, BestTooLow),
            (Rule::Epoch, First, Mate(3), Some(Cp(80)), None, true, Unique),
            (Rule::Epoch, First, Mate(1), Some(Mate(2)), None, false, SecondTooGood),
            (Rule::Epoch, Later, Cp(900), Some(Cp(700)), None, true, Unique),
            (Rule::Epoch, Later, Cp(900), Some(Cp(721)), None, false, GapTooSmall),
            // Lichess: a 0.7 win-chance gap; the mate-in-1 exception.
            (Rule::Lichess, First, Cp(500), Some(Cp(-20)), None, true, Unique),
            (Rule::Lichess, First, Cp(500), Some(Cp(100)), None, false, GapTooSmall),
            (Rule::Lichess, Later, Cp(500), Some(Cp(100)), None, false, GapTooSmall),
            (Rule::Lichess, First, Mate(1), Some(Cp(300)), None, true, Unique),
            (Rule::Lichess, First, Mate(1), Some(Cp(400)), None, false, GapTooSmall),
            (Rule::Lichess, First, Mate(1), Some(Mate(1)), Some(Cp(100)), true, Unique),
            (Rule::Lichess, First, Mate(1), Some(Mate(1)), Some(Cp(600)), false, SecondTooGood),
            (Rule::Lichess, First, Mate(1), Some(Mate(1)), None, true, Unique),
            (Rule::Lichess, First, Mate(3), Some(Mate(5)), None, false, GapTooSmall),
            // Mate: the best move must mate, no second move as fast.
            (Rule::Mate, First, Cp(900), Some(Cp(-300)), None, false, NoMate),
            (Rule::Mate, First, Mate(3), Some(Cp(160)), None, true, Unique),
            (Rule::Mate, First, Mate(3), Some(Cp(170)), None, true, Unique),
            (Rule::Mate, First, Mate(3), Some(Cp(1400)), None, true, Unique),
            (Rule::Mate, First, Mate(2), Some(Mate(-3)), None, true, Unique),
            // A second mate is a second solution when it is as fast or one
            // move slower; two moves slower, it does not solve "mate in n".
            (Rule::Mate, First, Mate(2), Some(Mate(3)), None, false, SecondMates),
            (Rule::Mate, First, Mate(2), Some(Mate(4)), None, true, Unique),
            (Rule::Mate, First, Mate(3), Some(Mate(3)), None, false, SecondMates),
            (Rule::Mate, First, Mate(3), Some(Mate(9)), None, true, Unique),
            (Rule::Mate, Later, Mate(2), Some(Mate(2)), None, false, SecondMates),
            (Rule::Mate, Later, Mate(2), Some(Mate(4)), None, true, Unique),
            (Rule::Mate, Later, Mate(2), Some(Cp(0)), None, true, Unique),
            (Rule::Mate, Later, Cp(600), Some(Cp(0)), None, false, NoMate),
            (Rule::Mate, First, Mate(1), Some(Cp(370)), None, true, Unique),
            (Rule::Mate, First, Mate(1), Some(Cp(380)), None, true, Unique),
            (Rule::Mate, First, Mate(1), Some(Mate(1)), Some(Cp(-50)), true, Unique),
            (Rule::Mate, First, Mate(1), Some(Mate(1)), Some(Cp(700)), true, Unique),
            (Rule::Mate, First, Mate(1), Some(Mate(3)), None, true, Unique),
            // Gap: a second engine's own scale, on any turn.
            (gap, First, Cp(-300), Some(Cp(-480)), None, true, Unique),
            (gap, Later, Cp(100), Some(Cp(-79)), None, false, GapTooSmall),
            // Gap, both moves mating: counted in moves, as the mate rule.
            (gap, First, Mate(3), Some(Mate(4)), None, false, SecondMates),
            (gap, First, Mate(3), Some(Mate(5)), None, true, Unique),
            (gap, First, Mate(3), Some(Cp(200)), None, true, Unique),
        ];
        for (rule, turn, best, second, non_mating, unique, why) in table {
            let scores = Scores {
                best,
                second,
                best_non_mating: non_mating,
            };
            let decision = decide(rule, turn, &scores);
            assert_eq!(
                decision,
                Decision { unique, why },
                "{rule:?} {turn:?} best {best} second {second:?} non-mating {non_mating:?}"
            );
        }
    }

    #[test]
    fn win_chances_of_scores() {
        assert_eq!(win_chances(Cp(0)), 0.0);
        assert_eq!(win_chances(Mate(4)), 1.0);
        assert_eq!(win_chances(Mate(-4)), -1.0);
        assert_eq!(win_chances(Mate(0)), -1.0);
        assert!((win_chances(Cp(300)) - 0.5023).abs() < 1e-3);
    }
}

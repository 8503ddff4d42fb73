//! The one verdict: is a solver move the only good one?
//!
//! Every caller that asks whether a move is unique (`check`, the miner's
//! first move and its line extension, the funnel's shallow screen, verify's
//! deeper search and its second engine) asks [`decide`], with the rule the
//! puzzle is held to and which of its solver moves is judged ([`Turn`]).
//!
//! The rules ([`Rule`]):
//!
//! * **Epoch** (Epoch's generator): on the first solver move best >= -100
//!   cp, second <= 80 cp and best - second >= 180 cp, a mate in n scored
//!   10000 - n ([`Score::to_cp`]); on later moves of a line only the gap.
//! * **Lichess** (lichess-puzzler's `is_valid_attack`): the best move's win
//!   chance exceeds the second's by more than 0.7; a mate in 1 is accepted
//!   when the best non-mating move's win chance is at most 0.6 (any mating
//!   move is then an accepted answer).
//! * **Mate** (forced mates of at most `max_solver_moves`): the best move
//!   must mate in n, and no other move may mate in fewer than n + 2
//!   ([`MATE_DUAL_MIN_EXTRA_MOVES`]). This is the stipulation of a composed
//!   "mate in n": a second move that also mates in n is a second solution,
//!   one that mates only more slowly does not solve a "mate in n" (the
//!   puzzle's `mateInN` theme states the n). The extra move is room for the
//!   search: a MultiPV search may not show the second move's fastest mate,
//!   and the deeper search of verify judges again. A move that wins material
//!   without mating is no solution of a mate puzzle either. On the mating
//!   move itself every mate in one is an accepted answer
//!   ([`crate::chess::line::PuzzleLine::accepts`]), so a second mate in one
//!   is no second solution. lichess-puzzler holds its mate lines to its
//!   attack rule instead (a win-chance gap of 0.7 over the second move: the
//!   second move at or below about +110 cp, so any second winning move,
//!   a slower mate included, refuses the line): in games that is the
//!   opponent's blunder into a mate from a level position. In self-play the
//!   side that has a mate is nearly always winning already and has slower
//!   mates besides, so that rule, and the stricter "no second mate at all"
//!   this project held before, passes almost none of the missed mates of
//!   three or more moves (docs/results/generation.md has the counts).
//! * **Gap** (a second engine, on its own scale): best - second >= the gap.
//!   Engines score on different scales, so another engine is held to
//!   agreement on the move and a gap, not to absolute thresholds. When both
//!   moves mate, the gap is counted in moves, as the mate rule counts it:
//!   a mate distance means the same to every engine.
//!
//! **One legal move**, decided once here for every rule: a forced move is
//! no puzzle, so a puzzle never *starts* with one (there is nothing to
//! find; lichess-puzzler likewise never starts a puzzle where fewer than
//! two moves are legal, and Epoch's search needs a second line); inside a
//! line a forced solver move is unique and the line goes on through it,
//! but a line never *ends* on one ([`ends_on_a_choice`]: the last move of a
//! line is the last thing the solver must find, as lichess-puzzler trims a
//! final only-move). A position without legal moves is no puzzle.
//!
//! [`Score::to_cp`]: crate::engine::uci::Score::to_cp
//! [`MATE_DUAL_MIN_EXTRA_MOVES`]: verdict::MATE_DUAL_MIN_EXTRA_MOVES

mod judge;
mod screen;
mod verdict;

pub use judge::{Judged, ends_on_a_choice, judge, judge_result};
pub use screen::{
    Margin, Slack, margin, may_pass, may_pass_later, played_loses_enough, second_may_pass,
};
pub use verdict::{
    Criterion, Decision, Rule, Scores, TEST_MIN_GAP_VAR, Turn, Why, decide, needs_non_mating,
    rule_variant, test_min_gap_cp,
};
pub(crate) use verdict::{EPOCH_MIN_GAP_CP, win_chances};

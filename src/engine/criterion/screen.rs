//! How far a move sits from its rule's thresholds ([`margin`]) and the
//! funnel's cheap screens, each never stricter than the verdict it screens
//! for. Apart from the verdict because only the funnel and verify's margins
//! ask these.

use super::verdict::{
    EPOCH_MAX_SECOND_CP, EPOCH_MIN_BEST_CP, LICHESS_MIN_GAP, LICHESS_NON_MATE_WIN_THRESHOLD, Rule,
    Scores, Turn, decide, epoch_min_gap_cp, mates, mates_as_fast, win_chances,
};
use crate::engine::uci::Score;

/// How much room a move keeps to its rule's thresholds on the first solver
/// move: the quantity [`decide`] compares, as a distance (>= 0 where the
/// rule holds by its gap and thresholds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// Epoch and Gap: the least of the cp thresholds' distances.
    Cp(i32),
    /// Lichess and mate: the win-chance gap minus 0.7, or, for a mate in 1
    /// held by the exception, 0.6 minus the best non-mating win chance
    /// (whichever is larger).
    WinChance(f64),
}

/// The margin of `scores` under `rule` on the first solver move; `None`
/// without a second move.
pub fn margin(rule: Rule, scores: &Scores) -> Option<Margin> {
    let second = scores.second?;
    let best = scores.best;
    Some(match rule {
        Rule::Epoch => {
            let (b, s) = (best.to_cp(), second.to_cp());
            Margin::Cp(
                (b - EPOCH_MIN_BEST_CP)
                    .min(EPOCH_MAX_SECOND_CP - s)
                    .min(b - s - epoch_min_gap_cp()),
            )
        }
        Rule::Gap { min_cp } => Margin::Cp(best.to_cp() - second.to_cp() - min_cp),
        // The mate rule has no threshold to keep room to: the second move
        // mates fast enough or it does not. Its margin is how far the
        // second move stays from a win (1 - its win chance, in 0..2: 0 for
        // a second move that mates more slowly), or -1 when the verdict
        // fails.
        Rule::Mate => Margin::WinChance(if decide(rule, Turn::First, scores).unique {
            1.0 - win_chances(second)
        } else {
            -1.0
        }),
        Rule::Lichess => {
            let gap = win_chances(best) - win_chances(second) - LICHESS_MIN_GAP;
            let exception = (best == Score::Mate(1)).then(|| {
                let non_mating = if second == Score::Mate(1) {
                    scores.best_non_mating.map_or(-1.0, win_chances)
                } else {
                    win_chances(second)
                };
                LICHESS_NON_MATE_WIN_THRESHOLD - non_mating
            });
            Margin::WinChance(exception.map_or(gap, |e| e.max(gap)))
        }
    })
}

/// How far shallow scores may miss the rule and still earn a full search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slack {
    /// Epoch: centipawns on each threshold.
    pub cp: i32,
    /// Lichess and mate: win chance on the gap.
    pub win_chance: f64,
}

/// The funnel's screen: can a deeper search still find the first solver
/// move unique, judging by shallow `scores` within `slack`?
pub fn may_pass(rule: Rule, scores: &Scores, slack: Slack) -> bool {
    let Some(second) = scores.second else {
        // One legal move: never a puzzle's first move.
        return false;
    };
    let best = scores.best;
    match rule {
        Rule::Epoch => {
            let (b, s) = (best.to_cp(), second.to_cp());
            b >= EPOCH_MIN_BEST_CP - slack.cp
                && s <= EPOCH_MAX_SECOND_CP + slack.cp
                && b - s >= epoch_min_gap_cp() - slack.cp
        }
        Rule::Gap { min_cp } => best.to_cp() - second.to_cp() >= min_cp - slack.cp,
        Rule::Lichess => {
            best == Score::Mate(1)
                || win_chances(best) > win_chances(second) + LICHESS_MIN_GAP - slack.win_chance
        }
        // A mate the shallow search already sees, and no second move that
        // already mates as fast: the rule itself, which has no threshold
        // to give slack on.
        Rule::Mate => decide(rule, Turn::First, scores).unique,
    }
}

/// The funnel's screen on a later solver move of a line played out at a
/// shallow depth: a forced move passes; Epoch asks only its gap.
pub fn may_pass_later(rule: Rule, scores: &Scores, slack: Slack) -> bool {
    let Some(second) = scores.second else {
        return true;
    };
    match rule {
        Rule::Epoch => scores.best.to_cp() - second.to_cp() >= epoch_min_gap_cp() - slack.cp,
        other => may_pass(other, scores, slack),
    }
}

/// Can a second-best move worth `second` (or more) still leave the first
/// solver move unique under `rule`, within `slack`? Epoch: at most 80 cp;
/// Lichess: a win chance of at most 0.6 (the mate-in-1 exception's bound,
/// looser than the gap's 0.3); a gap rule sets no bound. Mate: anything
/// but a mate in 1. A second move that mates more slowly than
/// [`decide`] allows still passes beside a faster mate, and beside a mate
/// in 1 any second move passes; only a mate in 1 played is a mate found.
/// The screen must never be stricter than the verdict it screens for
/// (`screens_are_never_stricter_than_the_verdict`).
pub fn second_may_pass(rule: Rule, second: Score, slack: Slack) -> bool {
    match rule {
        Rule::Epoch => second.to_cp() <= EPOCH_MAX_SECOND_CP + slack.cp,
        Rule::Lichess => win_chances(second) <= LICHESS_NON_MATE_WIN_THRESHOLD + slack.win_chance,
        Rule::Mate => second != Score::Mate(1),
        Rule::Gap { .. } => true,
    }
}

/// The move played in the game is at best the second move, so for the
/// position to pass it must itself lose the rule's gap against the best
/// move. Judged on shallow scores within `slack`; `played` is the played
/// move's value for the side to move.
pub fn played_loses_enough(rule: Rule, best: Score, played: Score, slack: Slack) -> bool {
    match rule {
        Rule::Epoch => best.to_cp() - played.to_cp() >= epoch_min_gap_cp() - slack.cp,
        Rule::Gap { min_cp } => best.to_cp() - played.to_cp() >= min_cp - slack.cp,
        // The player missed the puzzle's mate: the move played is no
        // solution [`decide`] would have to share the puzzle with (it mates
        // more slowly, or not at all), and not itself a mate in 1, which
        // the puzzle accepts beside its own.
        Rule::Mate => {
            mates(best)
                && played != Score::Mate(1)
                && (best == Score::Mate(1) || !mates_as_fast(best, played))
        }
        Rule::Lichess => {
            // A mate in 1 passes when the second move stays at or below
            // 0.6: the played move must lose at least 1 - 0.6 then.
            let needed = if best == Score::Mate(1) {
                1.0 - LICHESS_NON_MATE_WIN_THRESHOLD
            } else {
                LICHESS_MIN_GAP
            };
            win_chances(best) - win_chances(played) > needed - slack.win_chance
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::wincalc::win_chance;
    use Score::{Cp, Mate};

    /// The funnel's played-move screens against the verdict they screen
    /// for, under the mate rule: wherever [`decide`] finds the best move
    /// unique with the move played as the second, and the full search
    /// would call that move missed (not the best, not a mate in 1), both
    /// screens let the position through. Before 2026-12-02 they rejected
    /// any played move that still mated, however slowly, which the
    /// verdict accepts: the funnel dropped mate puzzles it should have kept.
    #[test]
    fn screens_are_never_stricter_than_the_verdict() {
        let slack = Slack {
            cp: 0,
            win_chance: 0.0,
        };
        let mut values: Vec<Score> = (1..=12).map(Mate).collect();
        values.extend((1..=12).map(|n| Mate(-n)));
        values.extend([-900, -100, 0, 80, 200, 600, 1500].map(Cp));
        let mut checked = 0;
        for &best in &values {
            for &played in &values {
                let verdict = decide(Rule::Mate, Turn::First, &scores(best, Some(played)));
                let below_best = played.to_cp() < best.to_cp();
                if verdict.unique && below_best && played != Mate(1) {
                    checked += 1;
                    assert!(
                        played_loses_enough(Rule::Mate, best, played, slack),
                        "best {best:?}, played {played:?}"
                    );
                    assert!(
                        second_may_pass(Rule::Mate, played, slack),
                        "played {played:?}"
                    );
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    fn scores(best: Score, second: Option<Score>) -> Scores {
        Scores::new(best, second)
    }

    /// Every rule, on both turns, over the cases that tell the rules

    #[test]
    fn the_margin_is_the_distance_the_verdict_compares() {
        let m = |rule, best, second| margin(rule, &scores(best, Some(second)));
        assert_eq!(m(Rule::Epoch, Cp(300), Cp(80)), Some(Margin::Cp(0)));
        assert_eq!(m(Rule::Epoch, Cp(300), Cp(-50)), Some(Margin::Cp(130)));
        assert_eq!(m(Rule::Epoch, Cp(-150), Cp(-400)), Some(Margin::Cp(-50)));
        assert_eq!(
            m(Rule::Gap { min_cp: 180 }, Cp(300), Cp(100)),
            Some(Margin::Cp(20))
        );
        let Some(Margin::WinChance(w)) = m(Rule::Lichess, Mate(1), Cp(300)) else {
            panic!("a win-chance margin");
        };
        // The mate-in-1 exception: 0.6 - win(300 cp), not the 0.7 gap.
        assert!((w - (0.6 - win_chance(300))).abs() < 1e-12);
        assert_eq!(margin(Rule::Epoch, &scores(Cp(0), None)), None);
    }

    #[test]
    fn the_funnel_screen_and_the_played_move() {
        let slack = Slack {
            cp: 150,
            win_chance: 0.35,
        };
        assert!(may_pass(
            Rule::Epoch,
            &scores(Cp(300), Some(Cp(200))),
            slack
        ));
        assert!(!may_pass(
            Rule::Epoch,
            &scores(Cp(400), Some(Cp(300))),
            slack
        ));
        assert!(!may_pass(Rule::Epoch, &scores(Cp(400), None), slack));
        assert!(may_pass(Rule::Mate, &scores(Mate(4), Some(Cp(300))), slack));
        assert!(!may_pass(
            Rule::Mate,
            &scores(Mate(4), Some(Mate(5))),
            slack
        ));
        assert!(may_pass(Rule::Mate, &scores(Mate(4), Some(Mate(6))), slack));
        assert!(!may_pass(Rule::Mate, &scores(Cp(900), Some(Cp(0))), slack));
        assert!(played_loses_enough(Rule::Epoch, Cp(300), Cp(180), slack));
        assert!(!played_loses_enough(Rule::Epoch, Cp(300), Cp(290), slack));
        assert!(!played_loses_enough(Rule::Mate, Mate(1), Mate(1), slack));
        assert!(played_loses_enough(Rule::Mate, Mate(2), Cp(100), slack));
        assert!(played_loses_enough(Rule::Mate, Mate(2), Mate(4), slack));
        assert!(!played_loses_enough(Rule::Mate, Mate(2), Mate(3), slack));
        assert!(played_loses_enough(Rule::Mate, Mate(1), Mate(2), slack));
        assert!(second_may_pass(Rule::Epoch, Cp(230), slack));
        assert!(!second_may_pass(Rule::Epoch, Cp(231), slack));
        assert!(second_may_pass(Rule::Mate, Cp(600), slack));
        assert!(second_may_pass(Rule::Mate, Mate(3), slack));
        assert!(!second_may_pass(Rule::Mate, Mate(1), slack));
        assert!(may_pass_later(
            Rule::Epoch,
            &scores(Cp(900), Some(Cp(800))),
            slack
        ));
        assert!(may_pass_later(Rule::Epoch, &scores(Cp(900), None), slack));
        assert!(!may_pass_later(
            Rule::Epoch,
            &scores(Cp(900), Some(Cp(880))),
            slack
        ));
    }
}

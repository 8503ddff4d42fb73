//! Engine evaluations and the winning chances they stand for.
//!
//! Lichess turns an evaluation into winning chances on a -1..1 scale with a
//! logistic curve fitted to real games; puzzle generation compares those
//! chances before and after a move to tell a blunder from a mere inaccuracy.

use shakmaty::Color;
use std::fmt;

/// The logistic slope Lichess fitted for centipawns to winning chances
/// (lila pull request 11148, also used by lichess-puzzler).
pub(crate) const WIN_CHANCE_SLOPE: f64 = 0.00368208;

/// An evaluation: centipawns or a forced mate in so many moves. The sign is
/// the point of view's: positive is good for the side the evaluation is
/// from (White in PGN `[%eval]`, the side to move after [`Eval::for_side`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eval {
    Cp(i32),
    /// Mate in `n` moves; negative when the other side mates. Never 0.
    Mate(i32),
}

impl Eval {
    /// Reads a PGN `[%eval]` value: pawns with decimals (`0.24`, `-1.8`) or
    /// `#n` / `#-n` for mates, optionally followed by `,depth`. `None` when
    /// the text is not an evaluation.
    pub(crate) fn parse_pgn(text: &str) -> Option<Eval> {
        let value = text.split(',').next()?.trim();
        if let Some(mate) = value.strip_prefix('#') {
            let moves: i32 = mate.parse().ok()?;
            return (moves != 0).then_some(Eval::Mate(moves));
        }
        if value.is_empty()
            || !value
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+'))
        {
            return None;
        }
        let pawns: f64 = value.parse().ok()?;
        let centipawns = (pawns * 100.0).round();
        if !centipawns.is_finite() || centipawns.abs() > 1_000_000.0 {
            return None;
        }
        Some(Eval::Cp(centipawns as i32))
    }

    /// This evaluation from `side`'s point of view, given that it is from
    /// White's point of view.
    pub(crate) fn for_side(self, side: Color) -> Eval {
        match side {
            Color::White => self,
            Color::Black => match self {
                Eval::Cp(cp) => Eval::Cp(-cp),
                Eval::Mate(n) => Eval::Mate(-n),
            },
        }
    }

    /// Winning chances on the -1..1 scale (see [`win_chance`]).
    pub(crate) fn win_chance(self) -> f64 {
        match self {
            Eval::Cp(cp) => win_chance(cp),
            Eval::Mate(n) if n > 0 => 1.0,
            Eval::Mate(_) => -1.0,
        }
    }
}

/// Centipawns as winning chances on the -1..1 scale:
/// `2 / (1 + exp(-0.00368208 cp)) - 1`.
pub(crate) fn win_chance(centipawns: i32) -> f64 {
    2.0 / (1.0 + (-WIN_CHANCE_SLOPE * f64::from(centipawns)).exp()) - 1.0
}

impl fmt::Display for Eval {
    /// Centipawns as an integer (`-138`), mates as `#n` (`#-6`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Eval::Cp(cp) => write!(f, "{cp}"),
            Eval::Mate(n) => write!(f, "#{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lichess_eval_values() {
        assert_eq!(Eval::parse_pgn("0.24"), Some(Eval::Cp(24)));
        assert_eq!(Eval::parse_pgn("-1.8"), Some(Eval::Cp(-180)));
        assert_eq!(Eval::parse_pgn("0.0"), Some(Eval::Cp(0)));
        assert_eq!(Eval::parse_pgn("-10.07"), Some(Eval::Cp(-1007)));
        assert_eq!(Eval::parse_pgn("#-6"), Some(Eval::Mate(-6)));
        assert_eq!(Eval::parse_pgn("#3"), Some(Eval::Mate(3)));
        assert_eq!(Eval::parse_pgn("0.31,22"), Some(Eval::Cp(31)));
        assert_eq!(Eval::parse_pgn("#0"), None);
        assert_eq!(Eval::parse_pgn("abc"), None);
        assert_eq!(Eval::parse_pgn("inf"), None);
        assert_eq!(Eval::parse_pgn("1e300"), None);
        assert_eq!(Eval::parse_pgn(""), None);
    }

    #[test]
    fn win_chances_follow_the_lichess_curve() {
        assert_eq!(win_chance(0), 0.0);
        assert!((win_chance(200) - 0.3524).abs() < 1e-3);
        assert!((win_chance(-200) + win_chance(200)).abs() < 1e-12);
        assert_eq!(Eval::Mate(4).win_chance(), 1.0);
        assert_eq!(Eval::Mate(-4).win_chance(), -1.0);
    }

    #[test]
    fn side_view_flips_sign_for_black() {
        assert_eq!(Eval::Cp(-138).for_side(Color::Black), Eval::Cp(138));
        assert_eq!(Eval::Mate(-6).for_side(Color::Black), Eval::Mate(6));
        assert_eq!(Eval::Mate(-6).for_side(Color::White), Eval::Mate(-6));
        assert_eq!(Eval::Mate(-6).to_string(), "#-6");
    }
}

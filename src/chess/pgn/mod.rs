//! Reading PGN games for every stage that takes games as input: Lichess
//! game dumps, self-play files, any PGN a user brings.
//!
//! [`PgnGames`] streams a PGN text game by game with pgn-reader. For each
//! game it collects the tags, replays the mainline with shakmaty (so every
//! move is known to be legal), and reads the `[%eval ...]` and `[%clk ...]`
//! commands Lichess writes in the comment after each move. Variations are
//! skipped. A game that cannot be read (illegal move, malformed
//! annotation, cut off before its result) comes back as
//! [`GameItem::Invalid`] with a reason, and reading goes on with the next
//! game; only a failure of the underlying stream (a truncated zstd frame, a
//! disk error) ends the iteration with a [`PgnReadError`].
//!
//! A tag filter, run after the tags and before the movetext, lets a caller
//! drop games it does not want without paying for their moves.
//!
//! The games and what a reader says of each are in `game`, the stream of
//! games in `reader`, pgn-reader's visitor that builds a game from the
//! parser's events in `visitor`.

mod game;
mod reader;
mod visitor;

pub use game::{GameItem, GameRecord, InvalidGame, PlayedMove, Plies, Ply, Rejection, Tags};
pub use reader::{PgnGames, PgnReadError};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::wincalc::Eval;
    use pgn_reader::Nag;

    fn items(text: &str) -> Vec<GameItem> {
        PgnGames::new(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    #[test]
    fn reads_moves_evals_clocks_and_skips_variations() {
        let text = "[Site \"x\"]\n\n1. e4 { [%eval 0.24] [%clk 0:05:00] } 1... e5?? { [%eval #-3] } (1... c5 2. Nf3) 2. Nf3 1-0\n";
        let all = items(text);
        assert_eq!(all.len(), 1);
        let GameItem::Game(game) = &all[0] else {
            panic!("{all:?}")
        };
        assert_eq!(game.moves.len(), 3);
        assert_eq!(game.moves[0].eval, Some(Eval::Cp(24)));
        assert_eq!(game.moves[0].clock_ms, Some(300_000));
        assert_eq!(game.moves[1].eval, Some(Eval::Mate(-3)));
        assert_eq!(game.moves[1].nag, Some(Nag::BLUNDER));
        assert_eq!(game.moves[2].san.to_string(), "Nf3");
        assert_eq!(game.tags.get("Site"), Some("x"));
        let plies: Vec<u32> = game.plies().map(|p| p.ply).collect();
        assert_eq!(plies, vec![1, 2, 3]);
    }

    #[test]
    fn bad_games_are_reported_and_reading_goes_on() {
        let text = "[Site \"a\"]\n\n1. e4 e5 2. Bc5 1-0\n\n[Site \"b\"]\n\n1. e4 { [%eval x] } 1-0\n\n[Site \"c\"]\n\n1. d4 d5\n\n[Site \"d\"]\n\n1. d4 1-0\n";
        let reasons: Vec<&str> = items(text)
            .iter()
            .map(|item| match item {
                GameItem::Game(_) => "ok",
                GameItem::Filtered { reason, .. } => reason,
                GameItem::Invalid(invalid) => invalid.reason,
            })
            .collect();
        assert_eq!(reasons, vec!["illegal_san", "bad_eval", "truncated", "ok"]);
    }

    #[test]
    fn games_without_evals_can_be_dropped_unreplayed() {
        let text = "[Site \"a\"]\n\n1. e4 { [%clk 0:01:00] } e5 2. Bc5 1-0\n\n[Site \"b\"]\n\n1. e4?! { [%clk 0:01:00] } e5 { [%eval 0.3] } 2. Nf3 { [%eval 0.2] } 1-0\n\n[Site \"c\"]\n\n1. e4 e5 { [%eval 0.3] } 2. Bc5 1-0\n";
        let all: Vec<GameItem> = PgnGames::new(text.as_bytes())
            .require_evals(true)
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(matches!(
            all[0],
            GameItem::Filtered {
                reason: "no_eval",
                ..
            }
        ));
        let GameItem::Game(game) = &all[1] else {
            panic!("{all:?}")
        };
        assert_eq!(game.moves.len(), 3);
        assert_eq!(game.moves[0].clock_ms, Some(60_000));
        assert_eq!(game.moves[0].nag, Some(Nag::DUBIOUS_MOVE));
        assert_eq!(game.moves[1].eval, Some(Eval::Cp(30)));
        assert!(matches!(&all[2], GameItem::Invalid(g) if g.reason == "illegal_san"));
    }
}

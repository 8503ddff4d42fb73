//! The answer parser on a table of real-looking model replies.

use puzzleforge::stages::eval::parse::{Parsed, parse_reply};
use puzzleforge::stages::eval::task::position_from_fen;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
/// White can castle both ways; a pawn on b7 can promote.
const CASTLE: &str = "r3k2r/pPpppppp/8/8/8/8/P1PPPPPP/R3K2R w KQkq - 0 1";
/// Lichess puzzle 001KR after the opponent's move: Rf8 is mate.
const MATE: &str = "6k1/p1p3pp/4N3/1p6/2q1r1n1/2B5/PP4PP/3R1R1K w - - 0 29";

enum Want {
    Legal(&'static str),
    Illegal,
    Unparseable,
}

#[test]
fn replies_table() {
    use Want::*;
    let table: &[(&str, &str, Want)] = &[
        (START, "{\"move\": \"e2e4\"}", Legal("e2e4")),
        (
            START,
            "```json\n{\n  \"move\": \"Nf3\"\n}\n```",
            Legal("g1f3"),
        ),
        (
            START,
            "{\"reasoning\": \"center {control}\", \"move\": \"d4\"}",
            Legal("d2d4"),
        ),
        (START, "{\"Move\": \"1. c4\"}", Legal("c2c4")),
        (
            START,
            "I like e4 but after thinking, c4 is sharper.\n\nMOVE: g1f3",
            Legal("g1f3"),
        ),
        (START, "**MOVE:** `b1c3`", Legal("b1c3")),
        (START, "Move: E2E4", Legal("e2e4")),
        (
            START,
            "The best move is 1. e4! followed by d4.",
            Legal("d2d4"),
        ),
        (START, "Play nf3", Legal("g1f3")),
        (START, "e2-e4", Legal("e2e4")),
        (START, "MOVE: e2e5", Illegal),
        (START, "{\"move\": \"Qh5\"}", Illegal),
        (START, "I cannot determine the best move here.", Unparseable),
        (START, "", Unparseable),
        (START, "{\"move\": \"\"}", Unparseable),
        (CASTLE, "Castle kingside: O-O", Legal("e1g1")),
        (CASTLE, "0-0-0!", Legal("e1c1")),
        (CASTLE, "{\"move\": \"e1g1\"}", Legal("e1g1")),
        (CASTLE, "bxa8=Q+", Legal("b7a8q")),
        (CASTLE, "MOVE: b7a8q", Legal("b7a8q")),
        (CASTLE, "b7a8N", Legal("b7a8n")),
        (CASTLE, "b8=Q", Legal("b7b8q")),
        (MATE, "Rf8#", Legal("f1f8")),
        (
            MATE,
            "The rook takes on f8 with mate: Rxf8# 1-0",
            Legal("f1f8"),
        ),
        (MATE, "MOVE: Qxg7", Illegal),
    ];
    for (fen, reply, want) in table {
        let position = position_from_fen(fen, "table").unwrap();
        let got = parse_reply(reply, &position);
        match (want, &got) {
            (Legal(uci), Parsed::Legal { uci: got_uci, .. }) => {
                assert_eq!(got_uci.to_string(), *uci, "reply {reply:?}")
            }
            (Illegal, Parsed::Illegal { .. }) | (Unparseable, Parsed::Unparseable) => {}
            _ => panic!("reply {reply:?}: got {got:?}"),
        }
    }
}

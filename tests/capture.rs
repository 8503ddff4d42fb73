//! Epoch's trivial-capture rule on hand-built positions, one per branch.

use puzzleforge::chess::capture::{TrivialCapture, classify, is_trivial_capture};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move};

fn position(fen: &str) -> Chess {
    let fen: Fen = fen.parse().unwrap();
    fen.into_position(CastlingMode::Standard).unwrap()
}

fn mv(pos: &Chess, uci: &str) -> Move {
    let uci: UciMove = uci.parse().unwrap();
    uci.to_move(pos).unwrap()
}

fn check(fen: &str, uci: &str) -> Option<TrivialCapture> {
    let pos = position(fen);
    let m = mv(&pos, uci);
    classify(&pos, m)
}

#[test]
fn undefended_victim_is_trivial() {
    // Nc3xd5: nothing of Black's attacks d5.
    assert_eq!(
        check("4k3/8/8/3p4/8/2N5/8/4K3 w - - 0 1", "c3d5"),
        Some(TrivialCapture::Undefended)
    );
}

#[test]
fn defended_equal_trade_is_not_trivial() {
    // Ne3xd5, the knight on d5 is defended by the c6 pawn.
    assert_eq!(check("4k3/8/2p5/3n4/8/4N3/8/4K3 w - - 0 1", "e3d5"), None);
}

#[test]
fn pawn_takes_defended_knight_is_trivial() {
    // exd5: the knight (3) is worth more than the pawn (1) + 1.
    assert_eq!(
        check("4k3/8/2p5/3n4/4P3/8/8/4K3 w - - 0 1", "e4d5"),
        Some(TrivialCapture::WinsMaterial)
    );
}

#[test]
fn knight_takes_defended_bishop_is_not_trivial() {
    assert_eq!(check("4k3/8/2p5/3b4/8/4N3/8/4K3 w - - 0 1", "e3d5"), None);
}

#[test]
fn queen_takes_defended_rook_is_not_trivial_but_rook_takes_queen_is() {
    assert_eq!(check("4k3/8/2p5/3r4/8/8/8/3QK3 w - - 0 1", "d1d5"), None);
    assert_eq!(
        check("4k3/8/2p5/3q4/8/8/8/3RK3 w - - 0 1", "d1d5"),
        Some(TrivialCapture::WinsMaterial)
    );
}

#[test]
fn en_passant_uses_the_target_square_and_skips_the_value_test() {
    // exd6 e.p.: nothing defends d6, so it is an undefended capture.
    assert_eq!(
        check("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "e5d6"),
        Some(TrivialCapture::Undefended)
    );
    // The black king on e7 defends d6: not trivial.
    assert_eq!(check("8/4k3/8/3pP3/8/8/8/4K3 w - d6 0 2", "e5d6"), None);
}

#[test]
fn capture_that_mates_is_not_undefended() {
    // Rd1xd8 is mate; the rook on d8 had no defender.
    let fen = "3r2k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1";
    assert_eq!(check(fen, "d1d8"), None);
    // A mating capture still fails the value test: Nxq mate is trivial.
    // (Nxf7# is a smothered mate; the queen on f7 had no defender.)
    assert_eq!(
        check("6rk/5qpp/8/6N1/8/8/8/4K3 w - - 0 1", "g5f7"),
        Some(TrivialCapture::WinsMaterial)
    );
}

#[test]
fn non_captures_are_never_trivial() {
    let pos = position("4k3/8/8/3p4/8/2N5/8/4K3 w - - 0 1");
    assert!(!is_trivial_capture(&pos, mv(&pos, "c3e4")));
}

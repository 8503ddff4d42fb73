//! The trivial-capture rule of Epoch's puzzle generator.
//!
//! A best move that simply grabs material is not a puzzle. Epoch's generator
//! (`is_trivial_tactic` in its published `puzzle_generator.py`) rejects a
//! capturing best move when
//!
//! 1. the captured piece has no defender: no piece of the victim's colour
//!    attacks the target square in the position *before* the move (the
//!    capturing piece still stands on its origin square, so it may block a
//!    defender's line; pinned defenders and the king count, as in
//!    python-chess's `attackers`), unless the capture gives checkmate; or
//! 2. the victim is worth more than the capturer + 1, with the values
//!    P 1, N 3, B 3, R 5, Q 9, K 100. En passant is exempt from this value
//!    test (and for rule 1 the "target square" of an en-passant capture is
//!    the empty square the pawn moves to, as in Epoch's code).
//!
//! A capture that mates skips rule 1 only; it can still fail rule 2.

use shakmaty::{Chess, Move, Position, Role};

/// Epoch's piece values for the trivial-capture test.
pub(crate) fn piece_value(role: Role) -> i32 {
    match role {
        Role::Pawn => 1,
        Role::Knight => 3,
        Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 100,
    }
}

/// Why a capture counts as trivial, or `None` when it does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrivialCapture {
    /// The victim had no defender and the capture does not mate.
    Undefended,
    /// The victim is worth more than the capturer + 1.
    WinsMaterial,
}

/// Classifies `m` (legal in `pos`) under Epoch's trivial-capture rule.
/// Non-captures are never trivial.
pub fn classify(pos: &Chess, m: Move) -> Option<TrivialCapture> {
    if !m.is_capture() {
        return None;
    }
    let board = pos.board();
    let defender = !pos.turn();
    let defenders = board.attacks_to(m.to(), defender, board.occupied());
    if defenders.is_empty() {
        let mut after = pos.clone();
        after.play_unchecked(m);
        if !after.is_checkmate() {
            return Some(TrivialCapture::Undefended);
        }
    }
    if !m.is_en_passant()
        && let Some(victim) = m.capture()
        && piece_value(victim) > piece_value(m.role()) + 1
    {
        return Some(TrivialCapture::WinsMaterial);
    }
    None
}

/// True when `m` is a trivial capture in `pos` (see the module docs).
pub fn is_trivial_capture(pos: &Chess, m: Move) -> bool {
    classify(pos, m).is_some()
}

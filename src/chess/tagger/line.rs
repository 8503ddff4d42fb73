//! A puzzle's line as the theme rules read it: every position, and each
//! move as a ply with its squares in standard notation (castling goes to
//! the king's square), the piece standing on its target afterwards, and
//! whether it took something.

use shakmaty::{Chess, Color, Move, Position, Role, Square};

use crate::chess::line::PuzzleLine;

/// One move of the line, with what the theme rules ask of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ply {
    pub from: Square,
    /// The king's target when castling (g1, c8, ...), as UCI writes it.
    pub to: Square,
    /// The piece on `to` after the move: the new piece of a promotion.
    pub role: Role,
    pub promotion: Option<Role>,
    /// Takes a piece, en passant included.
    pub capture: bool,
    pub castle: bool,
    pub en_passant: bool,
    /// The move itself, to test it in another position.
    pub chess_move: Move,
}

impl Ply {
    fn of(m: Move) -> Self {
        let (from, to) = match m {
            Move::Castle { king, rook } => {
                let file = if rook > king {
                    shakmaty::File::G
                } else {
                    shakmaty::File::C
                };
                (king, Square::from_coords(file, king.rank()))
            }
            other => (other.from().unwrap_or(other.to()), other.to()),
        };
        Self {
            from,
            to,
            role: m.promotion().unwrap_or(m.role()),
            promotion: m.promotion(),
            capture: m.is_capture(),
            castle: m.is_castle(),
            en_passant: m.is_en_passant(),
            chess_move: m,
        }
    }
}

/// The line: `positions[k]` before ply `k`, `positions[k + 1]` after it.
/// Ply 0 is the opponent's move that sets the puzzle; the solver (`pov`)
/// plays the odd plies.
pub(super) struct ThemeLine<'a> {
    positions: &'a [Chess],
    pub plies: Vec<Ply>,
    pub pov: Color,
}

impl<'a> ThemeLine<'a> {
    pub fn new(line: &'a PuzzleLine) -> Option<Self> {
        let positions = line.positions();
        let plies: Vec<Ply> = line.moves().iter().copied().map(Ply::of).collect();
        if plies.len() < 2 {
            return None;
        }
        let pov = positions.get(1)?.turn();
        Some(Self {
            positions,
            plies,
            pov,
        })
    }

    /// The position ply `k` is played in.
    pub fn before(&self, k: usize) -> &Chess {
        &self.positions[k]
    }

    /// The position after ply `k`.
    pub fn after(&self, k: usize) -> &Chess {
        &self.positions[k + 1]
    }

    /// The position after the last move.
    pub fn end(&self) -> &Chess {
        &self.positions[self.positions.len() - 1]
    }

    pub fn len(&self) -> usize {
        self.plies.len()
    }

    /// The solver's plies: 1, 3, 5, ...
    pub fn solver_plies(&self) -> impl Iterator<Item = usize> + '_ {
        (1..self.plies.len()).step_by(2)
    }

    /// The solver's plies from the second on (3, 5, ...): the ones that
    /// answer an earlier exchange of the line.
    pub fn later_solver_plies(&self) -> impl Iterator<Item = usize> + '_ {
        (3..self.plies.len()).step_by(2)
    }

    /// The piece the ply takes on its target square, if any (en passant
    /// takes on another square, so it is none here).
    pub fn taken_on_target(&self, k: usize) -> Option<shakmaty::Piece> {
        self.before(k).board().piece_at(self.plies[k].to)
    }

    /// True when the ply is a pawn move (or promotion) reaching the mover's
    /// sixth rank or beyond.
    pub fn is_advanced_pawn_move(&self, k: usize, min_rank: u32) -> bool {
        let ply = &self.plies[k];
        if ply.promotion.is_some() {
            return true;
        }
        if ply.role != Role::Pawn {
            return false;
        }
        let mover = self.before(k).turn();
        relative_rank(ply.to, mover) >= min_rank
    }

    /// True when ply `k` ends in checkmate.
    pub fn mates(&self, k: usize) -> bool {
        self.after(k).is_checkmate()
    }
}

/// The rank of `square` counted from `color`'s side, 0 to 7.
pub(super) fn relative_rank(square: Square, color: Color) -> u32 {
    let rank = square.rank().to_u32();
    if color == Color::White {
        rank
    } else {
        7 - rank
    }
}

/// Rank 5 counted from the mover's side (0-based): the sixth rank.
pub(super) const ADVANCED_RANK: u32 = 5;
/// The seventh rank (0-based 6).
pub(super) const VERY_ADVANCED_RANK: u32 = 6;

/// True when two moves go between the same squares with the same
/// promotion, as UCI writes them.
pub(super) fn same_squares(a: Move, b: Move) -> bool {
    let (a, b) = (Ply::of(a), Ply::of(b));
    a.from == b.from && a.to == b.to && a.promotion == b.promotion
}

//! A position with the moves that led to it, and its encoding into lc0's
//! 112 input planes (`INPUT_CLASSICAL_112_PLANE`), as lc0 0.32 fills them
//! for these nets:
//!
//! - Planes 0..104: the current position and the seven before it, 13 planes
//!   each: the side to move's pawns, knights, bishops, rooks, queens, king,
//!   the same for the opponent, then a plane of ones if that position
//!   occurred before. Every one is seen from the side to move now (ranks
//!   mirrored when Black moves).
//! - History older than the first position: for a game started from a FEN
//!   (not the initial position) lc0 repeats the FEN's position in the empty
//!   slots, with the pawn of a FEN en passant square put back on its start
//!   square; for a game from the initial position the slots stay empty.
//! - 104..108: castling rights (ours queenside, ours kingside, theirs
//!   queenside, theirs kingside); 108: ones if Black moves; 109: the
//!   half-move clock (not scaled); 110: zeros; 111: ones.
//!
//! A position repeats (plane 12 of its slot) as lc0 counts it: the same
//! pieces, castling rights and en passant flag as a position an even number
//! of plies (at least four) earlier, searched back no further than the last
//! capture or pawn move.

use anyhow::Result;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{
    Bitboard, Board, CastlingMode, CastlingSide, Chess, Color, EnPassantMode, Move, Piece,
    Position, Role, Square,
};

use super::policy::{Promotion, policy_index};
use crate::core::error::bad_input;

/// Positions of history the nets see, the current one included.
pub const HISTORY_PLIES: usize = 8;
const PLANES_PER_POSITION: usize = 13;
/// First plane after the history planes.
const AUX_BASE: usize = HISTORY_PLIES * PLANES_PER_POSITION;
/// lc0's input planes: a bit mask per plane; set squares take the plane's
/// value, which is 1 except for the half-move clock plane.
pub const INPUT_PLANES: usize = AUX_BASE + 8;
/// The plane holding the half-move clock.
pub const RULE50_PLANE: usize = AUX_BASE + 5;

/// One position of a [`History`] with what lc0 remembers about it.
#[derive(Clone, Debug)]
struct Entry {
    position: Chess,
    /// Earlier occurrences of this position, as lc0 counts them.
    repetitions: u32,
    /// lc0's en passant flag: set after a double push that an enemy pawn
    /// could capture (pseudo-legally); for the first position, the FEN's
    /// en passant square as given.
    ep_flag: Option<Square>,
}

impl Entry {
    fn same_as(&self, other: &Entry) -> bool {
        self.position.board() == other.position.board()
            && self.position.turn() == other.position.turn()
            && self.position.castles().castling_rights()
                == other.position.castles().castling_rights()
            && self.ep_flag == other.ep_flag
    }
}

/// A position with its history: the position a game (or a puzzle) started
/// from and the moves played since. The nets see the last eight positions.
#[derive(Clone, Debug)]
pub struct History {
    entries: Vec<Entry>,
}

/// The input planes of one position, in lc0's form.
#[derive(Clone, Debug, PartialEq)]
pub struct InputPlanes {
    /// One mask per plane, bit `i` for lc0's square `i` (a1 = 0, side to
    /// move at the bottom).
    pub masks: [u64; INPUT_PLANES],
    /// The value of the half-move clock plane.
    pub rule50: f32,
}

impl History {
    /// The standard initial position, no moves played.
    pub fn startpos() -> History {
        History::from_position(Chess::default(), None)
    }

    /// The position of `fen`, no moves played.
    pub fn from_fen(fen: &str) -> Result<History> {
        let parsed = Fen::from_ascii(fen.trim().as_bytes())
            .map_err(|e| bad_input(format!("bad FEN {fen:?}: {e}")))?;
        History::from_read_fen(&parsed)
    }

    /// The position of an already read FEN, no moves played.
    pub fn from_read_fen(fen: &Fen) -> Result<History> {
        let ep_square = fen.as_setup().ep_square;
        let position: Chess = fen
            .clone()
            .into_position(CastlingMode::Standard)
            .map_err(|e| bad_input(format!("bad position {:?}: {e}", fen.to_string())))?;
        Ok(History::from_position(position, ep_square))
    }

    /// [`History::from_fen_and_moves`] of a FEN and moves already read
    /// (a puzzle record's).
    pub fn from_read_line(fen: &Fen, moves: &[UciMove]) -> Result<History> {
        let mut history = History::from_read_fen(fen)?;
        for (i, &uci) in moves.iter().enumerate() {
            history.push_read_uci(uci).map_err(|e| {
                bad_input(format!(
                    "{:?}, move {} ({uci}): {e:#}",
                    fen.to_string(),
                    i + 1
                ))
            })?;
        }
        Ok(history)
    }

    /// The position of `fen` after the UCI moves `moves` (for a Lichess
    /// puzzle: its FEN, the opponent's first move, then the line up to the
    /// position asked about).
    pub fn from_fen_and_moves<'a>(
        fen: &str,
        moves: impl IntoIterator<Item = &'a str>,
    ) -> Result<History> {
        let mut history = History::from_fen(fen)?;
        for (i, uci) in moves.into_iter().enumerate() {
            history
                .push_uci(uci)
                .map_err(|e| bad_input(format!("{fen:?}, move {} ({uci}): {e:#}", i + 1)))?;
        }
        Ok(history)
    }

    fn from_position(position: Chess, ep_square: Option<Square>) -> History {
        History {
            entries: vec![Entry {
                position,
                repetitions: 0,
                ep_flag: ep_square,
            }],
        }
    }

    /// The position now.
    pub fn position(&self) -> &Chess {
        &self.entries[self.entries.len() - 1].position
    }

    /// Moves played since the first position.
    pub fn plies(&self) -> usize {
        self.entries.len() - 1
    }

    /// Plays a move given in UCI (`e2e4`, `e7e8q`; castling as `e1g1`).
    pub fn push_uci(&mut self, uci: &str) -> Result<()> {
        let parsed = UciMove::from_ascii(uci.as_bytes())
            .map_err(|e| bad_input(format!("{uci:?} is not a UCI move: {e}")))?;
        self.push_read_uci(parsed)
    }

    /// [`History::push_uci`] of a move already read as UCI.
    pub fn push_read_uci(&mut self, uci: UciMove) -> Result<()> {
        let m = uci.to_move(self.position()).map_err(|_| {
            bad_input(format!(
                "{uci} is not legal in {}",
                Fen::from_position(self.position(), EnPassantMode::Legal)
            ))
        })?;
        self.push(m);
        Ok(())
    }

    /// Plays a legal move.
    pub fn push(&mut self, m: Move) {
        let mut position = self.position().clone();
        position.play_unchecked(m);
        let ep_flag = position.ep_square(EnPassantMode::PseudoLegal);
        let mut entry = Entry {
            position,
            repetitions: 0,
            ep_flag,
        };
        entry.repetitions = self.repetitions_of(&entry);
        self.entries.push(entry);
    }

    /// lc0's count for a position about to be appended.
    fn repetitions_of(&self, last: &Entry) -> u32 {
        if last.position.halfmoves() < 4 {
            return 0;
        }
        // The new entry would sit at index len; compare with len-4, len-6, ...
        let mut idx = self.entries.len() as isize - 4;
        while idx >= 0 {
            let earlier = &self.entries[idx as usize];
            if earlier.same_as(last) {
                return 1 + earlier.repetitions;
            }
            if earlier.position.halfmoves() < 2 {
                return 0;
            }
            idx -= 2;
        }
        0
    }

    /// The 112 input planes lc0 feeds the nets for the position now.
    pub fn planes(&self) -> InputPlanes {
        let mut masks = [0u64; INPUT_PLANES];
        let now = self.position();
        let us = now.turn();
        let mirror = us == Color::Black;
        let view = |bb: Bitboard| if mirror { bb.flip_vertical() } else { bb }.0;
        let first = &self.entries[0];
        let fill_from_fen = !is_initial(first);
        for slot in 0..HISTORY_PLIES {
            let base = slot * PLANES_PER_POSITION;
            let (board, repeated) = match self.entries.len().checked_sub(slot + 1) {
                Some(at) => {
                    let entry = &self.entries[at];
                    (entry.position.board().clone(), entry.repetitions > 0)
                }
                None if fill_from_fen => (board_before_double_push(first), false),
                None => break,
            };
            for (i, role) in Role::ALL.into_iter().enumerate() {
                masks[base + i] = view(board.by_piece(Piece { color: us, role }));
                masks[base + 6 + i] = view(board.by_piece(Piece { color: !us, role }));
            }
            if repeated {
                masks[base + 12] = u64::MAX;
            }
        }
        let castles = now.castles();
        let rights = [
            castles.has(us, CastlingSide::QueenSide),
            castles.has(us, CastlingSide::KingSide),
            castles.has(!us, CastlingSide::QueenSide),
            castles.has(!us, CastlingSide::KingSide),
        ];
        for (i, right) in rights.into_iter().enumerate() {
            if right {
                masks[AUX_BASE + i] = u64::MAX;
            }
        }
        if mirror {
            masks[AUX_BASE + 4] = u64::MAX;
        }
        masks[RULE50_PLANE] = u64::MAX;
        masks[AUX_BASE + 7] = u64::MAX;
        InputPlanes {
            masks,
            rule50: now.halfmoves() as f32,
        }
    }
}

/// Whether the first position is lc0's initial board (white to move, all
/// castling rights, no en passant flag): then missing history stays empty.
fn is_initial(entry: &Entry) -> bool {
    let initial = Chess::default();
    entry.position.board() == &Board::default()
        && entry.position.turn() == Color::White
        && entry.position.castles().castling_rights() == initial.castles().castling_rights()
        && entry.ep_flag.is_none()
}

/// The first position's board with the pawn of its en passant square back on
/// its start square (lc0 shows that in the history it fills in).
fn board_before_double_push(entry: &Entry) -> Board {
    let mut board = entry.position.board().clone();
    if let Some(ep) = entry.ep_flag {
        // The pawn that just moved two squares belongs to the side not to
        // move; it stands one rank beyond `ep` and came from one rank before.
        let (pushed, from) = if ep.rank() == shakmaty::Rank::Third {
            (ep.offset(8), ep.offset(-8))
        } else {
            (ep.offset(-8), ep.offset(8))
        };
        if let (Some(pushed), Some(from)) = (pushed, from)
            && let Some(pawn) = board.remove_piece_at(pushed)
        {
            board.set_piece_at(from, pawn);
        }
    }
    board
}

/// lc0's policy index of a legal move in `position` (moves mirrored when
/// Black moves; castling as king-takes-rook; knight promotions plain).
pub fn move_policy_index(position: &Chess, m: &Move) -> Option<u16> {
    let mirror = position.turn() == Color::Black;
    let square = |sq: Square| {
        let i = usize::from(sq);
        if mirror { i ^ 56 } else { i }
    };
    let (from, to, promotion) = match *m {
        Move::Normal {
            from,
            to,
            promotion,
            ..
        } => (from, to, promotion),
        Move::EnPassant { from, to } => (from, to, None),
        Move::Castle { king, rook } => (king, rook, None),
        Move::Put { .. } => return None,
    };
    let promotion = match promotion {
        None | Some(Role::Knight) => Promotion::None,
        Some(Role::Queen) => Promotion::Queen,
        Some(Role::Rook) => Promotion::Rook,
        Some(Role::Bishop) => Promotion::Bishop,
        Some(_) => return None,
    };
    policy_index(square(from), square(to), promotion)
}

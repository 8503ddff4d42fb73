//! The named mating patterns, read on the final board of a line that ends
//! in mate. Lichess gives at most one of the classic patterns, tried in a
//! fixed order (smothered, back rank, Anastasia, hook, Arabian, Boden or
//! double bishop, dovetail); the kill box and Vukovic patterns are tried
//! apart.

use shakmaty::{Bitboard, Chess, Color, Position, Role, Square};

use super::board::attackers;
use super::line::ThemeLine;

/// The mate pattern of a mating line, if one applies.
pub(super) fn classic_pattern(line: &ThemeLine) -> Option<&'static str> {
    if smothered(line) {
        Some("smotheredMate")
    } else if back_rank(line) {
        Some("backRankMate")
    } else if anastasia(line) {
        Some("anastasiaMate")
    } else if hook(line) {
        Some("hookMate")
    } else if arabian(line) {
        Some("arabianMate")
    } else if let Some(bishops) = two_bishops(line) {
        Some(bishops)
    } else if dovetail(line) {
        Some("dovetailMate")
    } else {
        None
    }
}

struct Final<'a> {
    position: &'a Chess,
    king: Square,
    pov: Color,
    last_to: Square,
    last_role: Role,
}

fn final_board<'a>(line: &'a ThemeLine) -> Option<Final<'a>> {
    let position = line.end();
    let king = position.board().king_of(!line.pov)?;
    let last = line.plies.last()?;
    Some(Final {
        position,
        king,
        pov: line.pov,
        last_to: last.to,
        last_role: last.role,
    })
}

fn neighbours(square: Square) -> Bitboard {
    shakmaty::attacks::king_attacks(square)
}

/// A knight mates a king whose every neighbouring square holds one of its
/// own pieces.
fn smothered(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let board = f.position.board();
    let knight_checks = f
        .position
        .checkers()
        .into_iter()
        .any(|sq| board.role_at(sq) == Some(Role::Knight));
    knight_checks
        && neighbours(f.king)
            .into_iter()
            .all(|sq| board.color_at(sq) == Some(!f.pov))
}

/// The king is mated on its back rank by a piece on that rank, its three
/// squares in front all blocked by its own pieces that no enemy attacks.
fn back_rank(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let back = if f.pov == Color::White { 7 } else { 0 };
    if f.king.rank().to_u32() != back {
        return false;
    }
    let toward = if f.pov == Color::White { -8 } else { 8 };
    let board = f.position.board();
    let front = [-1, 0, 1]
        .into_iter()
        .filter_map(|df| f.king.file().offset(df))
        .map(|file| Square::from_coords(file, f.king.rank()))
        .filter_map(|sq| sq.offset(toward));
    for square in front {
        if board.color_at(square) != Some(!f.pov) || attackers(f.position, f.pov, square).any() {
            return false;
        }
    }
    f.position
        .checkers()
        .into_iter()
        .any(|sq| sq.rank().to_u32() == back)
}

/// A king on the edge file (not in a corner) mated along that file by a
/// rook or queen, its own piece beside it and a knight two squares past
/// that piece taking the escape squares.
fn anastasia(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let file = f.king.file().to_u32();
    let rank = f.king.rank().to_u32();
    if !(file == 0 || file == 7) || rank == 0 || rank == 7 {
        return false;
    }
    if f.last_to.file() != f.king.file() || !matches!(f.last_role, Role::Queen | Role::Rook) {
        return false;
    }
    let inward = if file == 0 { 1 } else { -1 };
    let at = |files: i32| {
        f.king
            .file()
            .offset(files * inward)
            .map(|file| Square::from_coords(file, f.king.rank()))
    };
    let board = f.position.board();
    let blocked = at(1).is_some_and(|sq| board.color_at(sq) == Some(!f.pov));
    let knight = at(3).is_some_and(|sq| {
        board.piece_at(sq)
            == Some(shakmaty::Piece {
                color: f.pov,
                role: Role::Knight,
            })
    });
    blocked && knight
}

/// True when the mating move is a rook's from a square next to the king,
/// protected by a solver knight that `knight_fits`: the hook and Arabian
/// mates differ only in where that knight stands.
fn rook_mates_beside_king_with_knight(f: &Final, knight_fits: impl Fn(Square) -> bool) -> bool {
    if f.last_role != Role::Rook || f.last_to.distance(f.king) != 1 {
        return false;
    }
    let board = f.position.board();
    attackers(f.position, f.pov, f.last_to)
        .into_iter()
        .any(|knight| board.role_at(knight) == Some(Role::Knight) && knight_fits(knight))
}

/// A rook mates next to the king, protected by a knight next to the king
/// that a pawn protects.
fn hook(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let board = f.position.board();
    rook_mates_beside_king_with_knight(&f, |knight| {
        knight.distance(f.king) == 1
            && attackers(f.position, f.pov, knight)
                .into_iter()
                .any(|guard| board.role_at(guard) == Some(Role::Pawn))
    })
}

/// A king in the corner mated by a rook next to it, the rook protected by
/// a knight two squares diagonally from the king.
fn arabian(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let (file, rank) = (f.king.file().to_u32(), f.king.rank().to_u32());
    if !(file == 0 || file == 7) || !(rank == 0 || rank == 7) {
        return false;
    }
    rook_mates_beside_king_with_knight(&f, |knight| {
        knight.file().distance(f.king.file()) == 2 && knight.rank().distance(f.king.rank()) == 2
    })
}

/// Two bishops do all the work: every square of the king's box that the
/// solver attacks is attacked by bishops only. Boden's when the two
/// bishops come from either side of the king, else double bishop.
fn two_bishops(line: &ThemeLine) -> Option<&'static str> {
    let f = final_board(line)?;
    let board = f.position.board();
    let bishops: Vec<Square> = (board.bishops() & board.by_color(f.pov))
        .into_iter()
        .collect();
    if bishops.len() < 2 {
        return None;
    }
    let mut box_squares = neighbours(f.king);
    box_squares.add(f.king);
    let only_bishops = box_squares.into_iter().all(|sq| {
        attackers(f.position, f.pov, sq)
            .into_iter()
            .all(|a| board.role_at(a) == Some(Role::Bishop))
    });
    if !only_bishops {
        return None;
    }
    let king_file = f.king.file();
    let first_left = bishops[0].file() < king_file;
    let second_right = bishops[1].file() > king_file;
    Some(if first_left == second_right {
        "bodenMate"
    } else {
        "doubleBishopMate"
    })
}

/// A queen mates from a square diagonally next to a king off the board's
/// edge, and no other solver piece helps: the king's squares the queen
/// covers are empty, the others are blocked by the king's own pieces (the
/// dovetail's shape).
fn dovetail(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let (file, rank) = (f.king.file().to_u32(), f.king.rank().to_u32());
    if file == 0 || file == 7 || rank == 0 || rank == 7 {
        return false;
    }
    let queen = f.last_to;
    if f.last_role != Role::Queen
        || queen.file() == f.king.file()
        || queen.rank() == f.king.rank()
        || queen.distance(f.king) > 1
    {
        return false;
    }
    let board = f.position.board();
    neighbours(f.king)
        .into_iter()
        .filter(|sq| *sq != queen)
        .all(|sq| {
            let guards = attackers(f.position, f.pov, sq);
            if guards == Bitboard::from_square(queen) {
                board.piece_at(sq).is_none()
            } else {
                guards.is_empty()
            }
        })
}

/// Kill box: a rook and a queen at opposite corners of a 3x3 box that
/// holds the king, one of them making the mating move, the rook next to
/// the king or protected by the queen.
pub(super) fn kill_box(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let board = f.position.board();
    let mine = board.by_color(f.pov);
    (board.rooks() & mine).into_iter().any(|rook| {
        (board.queens() & mine).into_iter().any(|queen| {
            let corners =
                rook.file().distance(queen.file()) == 2 && rook.rank().distance(queen.rank()) == 2;
            let centre = Square::from_coords(
                shakmaty::File::new((rook.file().to_u32() + queen.file().to_u32()) / 2),
                shakmaty::Rank::new((rook.rank().to_u32() + queen.rank().to_u32()) / 2),
            );
            corners
                && centre.distance(f.king) <= 1
                && (f.last_to == rook || f.last_to == queen)
                && (rook.distance(f.king) == 1
                    || attackers(f.position, f.pov, rook).contains(queen))
        })
    })
}

/// Vukovic: a rook mates from next to a king on the board's edge,
/// protected by a third piece (not a knight), while a knight takes a
/// flight square. Lichess tags it only where no classic pattern applies.
pub(super) fn vukovic(line: &ThemeLine) -> bool {
    let Some(f) = final_board(line) else {
        return false;
    };
    let board = f.position.board();
    let (file, rank) = (f.king.file().to_u32(), f.king.rank().to_u32());
    let edge = file == 0 || file == 7 || rank == 0 || rank == 7;
    if !edge || f.last_role != Role::Rook || f.last_to.distance(f.king) != 1 {
        return false;
    }
    let guards = attackers(f.position, f.pov, f.last_to);
    let guarded_by_other = guards
        .into_iter()
        .any(|guard| !matches!(board.role_at(guard), Some(Role::Knight) | None));
    let knight_guards = (board.knights() & board.by_color(f.pov))
        .into_iter()
        .any(|knight| (shakmaty::attacks::knight_attacks(knight) & neighbours(f.king)).any());
    guarded_by_other && knight_guards
}

//! Facts about one board that several themes ask: what a piece is worth,
//! whether it is defended, hanging, in a bad spot or trapped, and whether
//! it is pinned to its king. Each is stated as a chess player would, with
//! the edge cases Lichess's themes settle (a defence through the attacker
//! on the same line counts; a king is never "taken by a lower piece").

use shakmaty::attacks;
use shakmaty::{Bitboard, Chess, Color, Piece, Position, Role, Square};

/// Material value in pawns; the king is beyond any trade.
pub(super) fn value(role: Role) -> u32 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 99,
    }
}

/// The piece's number in the usual order pawn 1 .. king 6. One of
/// Lichess's deflection conditions compares a value with this number, so
/// we keep the comparison as their tags were made.
pub(super) fn role_number(role: Role) -> u32 {
    match role {
        Role::Pawn => 1,
        Role::Knight => 2,
        Role::Bishop => 3,
        Role::Rook => 4,
        Role::Queen => 5,
        Role::King => 6,
    }
}

/// Queens, rooks and bishops: the pieces that act along lines.
pub(super) fn is_slider(role: Role) -> bool {
    matches!(role, Role::Queen | Role::Rook | Role::Bishop)
}

/// Material of `side` minus the other side's, kings aside.
pub(super) fn material_balance(position: &Chess, side: Color) -> i32 {
    let board = position.board();
    let count = |color: Color| -> i32 {
        board
            .by_color(color)
            .into_iter()
            .filter_map(|sq| board.role_at(sq))
            .filter(|role| *role != Role::King)
            .map(|role| value(role) as i32)
            .sum()
    };
    count(side) - count(!side)
}

/// Pieces of `color` that attack `square` on the board as it stands.
pub(super) fn attackers(position: &Chess, color: Color, square: Square) -> Bitboard {
    let board = position.board();
    board.attacks_to(square, color, board.occupied())
}

/// Squares the piece on `square` attacks (a pawn: its two diagonals).
pub(super) fn attacks_from(position: &Chess, square: Square) -> Bitboard {
    position.board().attacks_from(square)
}

/// True when a piece of `color` on `square` is protected: one of its own
/// pieces attacks the square, or would once an enemy line piece that
/// attacks it is gone (a defender behind the attacker, on its line).
pub(super) fn is_defended(position: &Chess, color: Color, square: Square) -> bool {
    let board = position.board();
    if board.attacks_to(square, color, board.occupied()).any() {
        return true;
    }
    board
        .attacks_to(square, !color, board.occupied())
        .into_iter()
        .filter(|attacker| board.role_at(*attacker).is_some_and(is_slider))
        .any(|attacker| {
            let mut without = board.clone();
            without.discard_piece_at(attacker);
            without.attacks_to(square, color, without.occupied()).any()
        })
}

/// True when a piece of `color` on `square` has no protection at all.
pub(super) fn is_hanging(position: &Chess, color: Color, square: Square) -> bool {
    !is_defended(position, color, square)
}

/// True when the piece on `square` is attacked and either unprotected or
/// attackable by a cheaper piece that is not the king.
pub(super) fn in_bad_spot(position: &Chess, square: Square) -> bool {
    let Some(piece) = position.board().piece_at(square) else {
        return false;
    };
    let enemy = attackers(position, !piece.color, square);
    if enemy.is_empty() {
        return false;
    }
    is_hanging(position, piece.color, square)
        || enemy.into_iter().any(|attacker| {
            position
                .board()
                .role_at(attacker)
                .is_some_and(|role| role != Role::King && value(role) < value(piece.role))
        })
}

/// The full line through a king of `color` and a piece of its side on
/// `square` when that piece is pinned to its king by an enemy line piece;
/// `None` when it is free to move anywhere.
pub(super) fn pin_line(position: &Chess, color: Color, square: Square) -> Option<Bitboard> {
    let board = position.board();
    let king = board.king_of(color)?;
    if king == square {
        return None;
    }
    let enemy = board.by_color(!color);
    let snipers = (attacks::rook_attacks(king, Bitboard::EMPTY) & board.rooks_and_queens()
        | attacks::bishop_attacks(king, Bitboard::EMPTY) & board.bishops_and_queens())
        & enemy;
    snipers.into_iter().find_map(|sniper| {
        let between = attacks::between(king, sniper) & board.occupied();
        (between == Bitboard::from_square(square)).then(|| attacks::ray(king, sniper))
    })
}

/// True when the side to move's piece on `square` is trapped: not pinned,
/// not a pawn or king, in a bad spot, and every move it has either lands
/// in a bad spot again or takes less than it is worth.
pub(super) fn is_trapped(position: &Chess, square: Square) -> bool {
    if position.is_check() || pin_line(position, position.turn(), square).is_some() {
        return false;
    }
    let Some(piece) = position.board().piece_at(square) else {
        return false;
    };
    if matches!(piece.role, Role::Pawn | Role::King) || !in_bad_spot(position, square) {
        return false;
    }
    for escape in position.legal_moves() {
        if escape.from() != Some(square) {
            continue;
        }
        if let Some(taken) = escape.capture()
            && value(taken) >= value(piece.role)
        {
            return false;
        }
        let mut after = position.clone();
        after.play_unchecked(escape);
        if !in_bad_spot(&after, escape.to()) {
            return false;
        }
    }
    true
}

/// Squares a piece on `square` could move to ignoring pins and checks
/// (a pawn's pushes and captures, en passant included).
pub(super) fn pseudo_moves_from(position: &Chess, square: Square) -> Bitboard {
    let board = position.board();
    let Some(Piece { color, role }) = board.piece_at(square) else {
        return Bitboard::EMPTY;
    };
    if role != Role::Pawn {
        return board.attacks_from(square) & !board.by_color(color);
    }
    let mut targets = attacks::pawn_attacks(color, square) & board.by_color(!color);
    if let Some(ep) = position.ep_square(shakmaty::EnPassantMode::Always)
        && attacks::pawn_attacks(color, square).contains(ep)
    {
        targets.add(ep);
    }
    let step = if color == Color::White { 8 } else { -8 };
    if let Some(one) = square.offset(step)
        && !board.occupied().contains(one)
    {
        targets.add(one);
        let home = if color == Color::White { 1 } else { 6 };
        if square.rank().to_u32() == home
            && let Some(two) = one.offset(step)
            && !board.occupied().contains(two)
        {
            targets.add(two);
        }
    }
    targets
}

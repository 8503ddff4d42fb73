//! The game phase of the puzzle's position and the kind of endgame.
//!
//! Phase is Lichess's division of a game, read on the position the solver
//! faces: an endgame once at most six queens, rooks, bishops and knights
//! remain; a middlegame once at most ten remain, or a side's back rank
//! holds fewer than four of its own pieces, or the pieces of both sides
//! are mixed together (the "mixedness" score over 2x2 squares, above
//! 150); else the opening.

use shakmaty::{Chess, Color, File, Position, Rank, Role, Square};

use super::line::ThemeLine;

/// `opening`, `middlegame` or `endgame`.
pub(super) fn phase(position: &Chess) -> &'static str {
    let board = position.board();
    let majors_and_minors = (board.occupied() & !board.pawns() & !board.kings()).count();
    if majors_and_minors <= 6 {
        return "endgame";
    }
    let back_rank_count = |color: Color, rank: Rank| {
        (board.by_color(color) & shakmaty::Bitboard::from_rank(rank)).count()
    };
    let sparse_back_rank = back_rank_count(Color::White, Rank::First) < 4
        || back_rank_count(Color::Black, Rank::Eighth) < 4;
    if majors_and_minors <= 10 || sparse_back_rank || mixedness(position) > 150 {
        "middlegame"
    } else {
        "opening"
    }
}

/// How intermingled the two sides' pieces are: every 2x2 block of squares
/// (its lower rank `y`, 1 to 7) scores by how many white and black pieces
/// it holds, more for pieces that have crossed into the other's half.
fn mixedness(position: &Chess) -> u32 {
    let board = position.board();
    let mut total = 0;
    for y in 1..=7u32 {
        for x in 0..7u32 {
            let (mut white, mut black) = (0, 0);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let square = Square::from_coords(File::new(x + dx), Rank::new(y - 1 + dy));
                match board.color_at(square) {
                    Some(Color::White) => white += 1,
                    Some(Color::Black) => black += 1,
                    None => {}
                }
            }
            total += block_score(white, black, y as i32);
        }
    }
    total
}

fn block_score(white: u32, black: u32, y: i32) -> u32 {
    let score = match (white, black) {
        (1, 0) => 1 + (8 - y),
        (2, 0) if y > 2 => 2 + (y - 2),
        (3, 0) | (4, 0) if y > 1 => 3 + (y - 1),
        (0, 1) => 1 + y,
        (1, 1) => 5 + (3 - y).abs(),
        (2, 1) => 4 + y,
        (3, 1) => 5 + y,
        (0, 2) if y < 6 => 2 + (6 - y),
        (1, 2) => 4 + (6 - y),
        (2, 2) => 7,
        (0, 3) | (0, 4) if y < 7 => 3 + (7 - y),
        (1, 3) => 5 + (6 - y),
        _ => 0,
    };
    score.max(0) as u32
}

/// The endgame kind: only kings, pawns and one kind of piece (pawns alone
/// make a pawn endgame) on the board the solver faces and after the
/// solver's first move; or queens and rooks, one queen in all.
pub(super) fn endgame_kind(line: &ThemeLine) -> Option<&'static str> {
    let boards = [line.after(0), line.after(1)];
    let only = |role: Role| {
        boards.iter().all(|position| {
            let board = position.board();
            board.by_role(role).any()
                && (board.occupied() & !board.kings() & !board.pawns() & !board.by_role(role))
                    .is_empty()
        })
    };
    let kinds = [
        (Role::Pawn, "pawnEndgame"),
        (Role::Queen, "queenEndgame"),
        (Role::Rook, "rookEndgame"),
        (Role::Bishop, "bishopEndgame"),
        (Role::Knight, "knightEndgame"),
    ];
    if let Some((_, name)) = kinds.into_iter().find(|(role, _)| only(*role)) {
        return Some(name);
    }
    let queen_and_rooks = boards.iter().all(|position| {
        let board = position.board();
        board.queens().count() == 1
            && board.rooks().any()
            && (board.knights() | board.bishops()).is_empty()
    });
    queen_and_rooks.then_some("queenRookEndgame")
}

//! lc0's policy encoding: the 1858 move indices the nets' policy is read
//! through, and where each index sits in the convolutional policy head's
//! 80 x 64 output.
//!
//! Both tables are generated here from their rules rather than pasted:
//! - The 1858 moves, in lc0's order: every from-square a1..h8 (rank-major),
//!   and for each every to-square in increasing order that a queen or a
//!   knight reaches; then the 66 promotions a7..h7 -> rank 8, each to q, r, b.
//!   A knight promotion is the plain move (a7a8), as lc0 encodes it.
//! - The convolutional head's planes (AlphaZero's layout, as lc0's training
//!   code maps them): 56 queen-move planes (8 directions x 7 distances), 8
//!   knight planes, 9 promotion planes (3 directions x r, b, q, from rank 7
//!   only), then 7 unused planes.
//!
//! Squares here are lc0's: a1 = 0 .. h8 = 63, seen from the side to move
//! (ranks mirrored when Black moves).

use std::sync::LazyLock;

/// Number of moves in lc0's policy vector.
pub const POLICY_SIZE: usize = 1858;
/// Planes of the convolutional policy head's output (73 used).
pub const CONV_POLICY_PLANES: usize = 80;

/// A promotion as lc0 indexes it: knight promotions are plain moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promotion {
    None,
    Queen,
    Rook,
    Bishop,
}

impl Promotion {
    fn slot(self) -> usize {
        match self {
            Promotion::None => 0,
            Promotion::Queen => 1,
            Promotion::Rook => 2,
            Promotion::Bishop => 3,
        }
    }
}

struct Tables {
    /// Policy index by `(from * 64 + to) * 4 + promotion slot`; `u16::MAX`
    /// where lc0 has no such move.
    index: Vec<u16>,
    /// For each policy index, its place in the conv head's output:
    /// `plane * 64 + from_square`.
    conv_slot: Vec<u16>,
}

fn file_rank(square: usize) -> (i32, i32) {
    ((square % 8) as i32, (square / 8) as i32)
}

fn square_at(file: i32, rank: i32) -> Option<usize> {
    ((0..8).contains(&file) && (0..8).contains(&rank)).then(|| (rank * 8 + file) as usize)
}

fn queen_or_knight_reach(from: usize, to: usize) -> bool {
    let (f0, r0) = file_rank(from);
    let (f1, r1) = file_rank(to);
    let (df, dr) = ((f1 - f0).abs(), (r1 - r0).abs());
    from != to && (df == 0 || dr == 0 || df == dr || (df.min(dr) == 1 && df.max(dr) == 2))
}

/// The 1858 moves in lc0's order.
fn policy_moves() -> Vec<(usize, usize, Promotion)> {
    let mut moves = Vec::with_capacity(POLICY_SIZE);
    for from in 0..64 {
        for to in 0..64 {
            if queen_or_knight_reach(from, to) {
                moves.push((from, to, Promotion::None));
            }
        }
    }
    for file in 0..8 {
        for to_file in (file - 1)..=(file + 1) {
            if let Some(to) = square_at(to_file, 7) {
                for promotion in [Promotion::Queen, Promotion::Rook, Promotion::Bishop] {
                    moves.push(((48 + file) as usize, to, promotion));
                }
            }
        }
    }
    moves
}

/// The move each used plane of the conv head encodes at `from`, if any.
fn conv_plane_move(plane: usize, from: usize) -> Option<(usize, usize, Promotion)> {
    const QUEEN_DIRECTIONS: [(i32, i32); 8] = [
        (0, 1),
        (1, 1),
        (1, 0),
        (1, -1),
        (0, -1),
        (-1, -1),
        (-1, 0),
        (-1, 1),
    ];
    const KNIGHT_JUMPS: [(i32, i32); 8] = [
        (1, 2),
        (2, 1),
        (2, -1),
        (1, -2),
        (-1, -2),
        (-2, -1),
        (-2, 1),
        (-1, 2),
    ];
    const PROMOTION_DIRECTIONS: [i32; 3] = [-1, 0, 1];
    const PROMOTIONS: [Promotion; 3] = [Promotion::Rook, Promotion::Bishop, Promotion::Queen];
    let (file, rank) = file_rank(from);
    match plane {
        0..56 => {
            let (df, dr) = QUEEN_DIRECTIONS[plane / 7];
            let steps = (plane % 7 + 1) as i32;
            square_at(file + df * steps, rank + dr * steps).map(|to| (from, to, Promotion::None))
        }
        56..64 => {
            let (df, dr) = KNIGHT_JUMPS[plane - 56];
            square_at(file + df, rank + dr).map(|to| (from, to, Promotion::None))
        }
        64..73 => {
            let df = PROMOTION_DIRECTIONS[(plane - 64) / 3];
            let promotion = PROMOTIONS[(plane - 64) % 3];
            (rank == 6)
                .then(|| square_at(file + df, 7))
                .flatten()
                .map(|to| (from, to, promotion))
        }
        _ => None,
    }
}

fn slot(from: usize, to: usize, promotion: Promotion) -> usize {
    (from * 64 + to) * 4 + promotion.slot()
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let mut index = vec![u16::MAX; 64 * 64 * 4];
    for (i, (from, to, promotion)) in policy_moves().into_iter().enumerate() {
        index[slot(from, to, promotion)] = i as u16;
    }
    let mut conv_slot = vec![u16::MAX; POLICY_SIZE];
    for plane in 0..CONV_POLICY_PLANES {
        for from in 0..64 {
            if let Some((from, to, promotion)) = conv_plane_move(plane, from) {
                let i = index[slot(from, to, promotion)];
                // Every conv move is one of the 1858 (checked in the tests).
                if i != u16::MAX {
                    conv_slot[i as usize] = (plane * 64 + from) as u16;
                }
            }
        }
    }
    Tables { index, conv_slot }
});

/// lc0's policy index of a move given in lc0's squares (side to move at the
/// bottom); castling is king-takes-rook (e1h1). `None` for a move lc0 has no
/// index for.
pub fn policy_index(from: usize, to: usize, promotion: Promotion) -> Option<u16> {
    let i = *TABLES.index.get(slot(from, to, promotion))?;
    (i != u16::MAX).then_some(i)
}

/// Where policy index `index` is read in the conv head's output:
/// `(plane, square)`.
pub fn conv_slot(index: u16) -> (usize, usize) {
    let at = TABLES.conv_slot[index as usize] as usize;
    (at / 64, at % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_lc0s_size_and_ends() {
        let moves = policy_moves();
        assert_eq!(moves.len(), POLICY_SIZE);
        // a1b1 first, h7h8b last, a7a8q the first promotion (lc0's list).
        assert_eq!(moves[0], (0, 1, Promotion::None));
        assert_eq!(moves[1857], (55, 63, Promotion::Bishop));
        assert_eq!(moves[1792], (48, 56, Promotion::Queen));
        // e1h1 (castling short as king-takes-rook) is index 103.
        assert_eq!(policy_index(4, 7, Promotion::None), Some(103));
    }

    #[test]
    fn every_index_has_exactly_one_conv_slot() {
        let mut seen = vec![0u32; CONV_POLICY_PLANES * 64];
        for i in 0..POLICY_SIZE as u16 {
            assert_ne!(TABLES.conv_slot[i as usize], u16::MAX, "index {i}");
            let (plane, square) = conv_slot(i);
            assert!(plane < 73);
            seen[plane * 64 + square] += 1;
        }
        assert!(seen.iter().all(|&n| n <= 1));
    }
}

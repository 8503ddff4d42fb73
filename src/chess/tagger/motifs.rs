//! The tactical motifs, one function per Lichess theme, each stated in the
//! words of the theme's meaning first. Lichess's tags come from fixed
//! rules over the line (not from people), so each rule here is written to
//! give the same answer on the same line; where the rule has a corner that
//! the words do not say, the comment names it.

use shakmaty::{Color, Position, Role, Square, attacks};

use super::board::{
    attackers, attacks_from, in_bad_spot, is_hanging, is_slider, is_trapped, material_balance,
    pin_line, pseudo_moves_from, role_number, value,
};
use super::line::{ADVANCED_RANK, ThemeLine, VERY_ADVANCED_RANK};

/// A solver pawn reaches its seventh or eighth rank.
pub(super) fn advanced_pawn(line: &ThemeLine) -> bool {
    line.solver_plies()
        .any(|k| line.is_advanced_pawn_move(k, VERY_ADVANCED_RANK))
}

/// A solver move gives check with two pieces at once.
pub(super) fn double_check(line: &ThemeLine) -> bool {
    line.solver_plies()
        .any(|k| line.after(k).checkers().count() > 1)
}

/// The solver gives up material: after one of the solver's later moves the
/// balance is two pawns worse than in the puzzle's position. A line where
/// the opponent promotes is not called a sacrifice.
pub(super) fn sacrifice(line: &ThemeLine) -> bool {
    let start = material_balance(line.after(0), line.pov);
    let given_up = line
        .later_solver_plies()
        .any(|k| material_balance(line.after(k), line.pov) - start <= -2);
    given_up
        && !(2..line.len())
            .step_by(2)
            .any(|k| line.plies[k].promotion.is_some())
}

/// X-ray: the solver captures on a square through the opponent's piece
/// that just recaptured there (the capturing piece stood behind it).
pub(super) fn x_ray(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let (solver, reply, before) = (line.plies[k], line.plies[k - 1], line.plies[k - 2]);
        solver.capture
            && reply.to == solver.to
            && reply.role != Role::King
            && before.to == reply.to
            && attacks::between(solver.from, solver.to).contains(reply.from)
    })
}

/// A fork: a solver move (not the last, not by the king) to a safe square
/// from where the piece attacks two or more enemy pieces, each a king,
/// worth more than the forking piece, or unprotected and not itself
/// attacking the forking piece. Pawns do not count as forked.
pub(super) fn fork(line: &ThemeLine) -> bool {
    let last = line.len() - 1;
    line.solver_plies().filter(|k| *k != last).any(|k| {
        let ply = line.plies[k];
        if ply.role == Role::King {
            return false;
        }
        let board = line.after(k);
        if in_bad_spot(board, ply.to) {
            return false;
        }
        let hits_back = attackers(board, !line.pov, ply.to);
        let forked = (attacks_from(board, ply.to) & board.board().by_color(!line.pov))
            .into_iter()
            .filter(|sq| {
                let Some(role) = board.board().role_at(*sq) else {
                    return false;
                };
                role != Role::Pawn
                    && (value(role) > value(ply.role)
                        || (is_hanging(board, !line.pov, *sq) && !hits_back.contains(*sq)))
            })
            .count();
        forked > 1
    })
}

/// A hanging piece: the solver's first move takes an unprotected piece
/// (not a pawn), and the gain holds two plies later. Not when the solver
/// is in check and takes at most a pawn, nor when it is just recapturing
/// on the square where the opponent took something worth as much.
pub(super) fn hanging_piece(line: &ThemeLine) -> bool {
    let first = line.plies[1];
    let puzzle_position = line.after(0);
    let taken = puzzle_position.board().piece_at(first.to);
    if puzzle_position.is_check() && taken.is_none_or(|p| p.role == Role::Pawn) {
        return false;
    }
    let Some(taken) = taken.filter(|p| p.role != Role::Pawn) else {
        return false;
    };
    if !is_hanging(puzzle_position, taken.color, first.to) {
        return false;
    }
    let setting = line.plies[0];
    if let Some(opponent_took) = line.taken_on_target(0)
        && value(opponent_took.role) >= value(taken.role)
        && setting.to == first.to
    {
        return false;
    }
    line.len() < 4
        || material_balance(line.after(3), line.pov) >= material_balance(line.after(1), line.pov)
}

/// A trapped piece: a later solver move takes a piece (not a pawn) that
/// could not escape; when the opponent's move before it was that piece
/// fleeing to the square, the piece was trapped where it came from.
pub(super) fn trapped_piece(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        if line.taken_on_target(k).is_none_or(|p| p.role == Role::Pawn) {
            return false;
        }
        let reply = line.plies[k - 1];
        let square = if reply.to == ply.to {
            reply.from
        } else {
            ply.to
        };
        is_trapped(line.before(k - 1), square)
    })
}

/// A check by a piece that did not move: the mover unmasked it.
pub(super) fn discovered_check(line: &ThemeLine) -> bool {
    line.solver_plies().any(|k| {
        let checkers = line.after(k).checkers();
        checkers.any() && !checkers.contains(line.plies[k].to)
    })
}

/// A discovered attack: a discovered check, or a later solver capture by a
/// line piece whose path the solver's previous move cleared (that move not
/// a castle, not onto the captured square, not by the capturing piece).
/// The first solver capture that answers a recapture on its own square
/// ends the search with no.
pub(super) fn discovered_attack(line: &ThemeLine) -> bool {
    if discovered_check(line) {
        return true;
    }
    for k in line.later_solver_plies() {
        let ply = line.plies[k];
        if !ply.capture {
            continue;
        }
        if line.plies[k - 1].to == ply.to {
            return false;
        }
        let cleared = line.plies[k - 2];
        if attacks::between(ply.from, ply.to).contains(cleared.from)
            && ply.to != cleared.to
            && ply.from != cleared.to
            && !cleared.castle
        {
            return true;
        }
    }
    false
}

/// A quiet move: a solver move, not the last, that neither checks, escapes
/// a check, captures, attacks an enemy piece, pushes an advanced pawn nor
/// moves the king.
pub(super) fn quiet_move(line: &ThemeLine) -> bool {
    let last = line.len() - 1;
    line.solver_plies().filter(|k| *k != last).any(|k| {
        let ply = line.plies[k];
        !line.after(k).is_check()
            && !line.before(k).is_check()
            && !ply.capture
            && !attacks_enemy(line, k)
            && !line.is_advanced_pawn_move(k, ADVANCED_RANK)
            && ply.role != Role::King
    })
}

/// True when the piece moved by solver ply `k` attacks an enemy piece.
fn attacks_enemy(line: &ThemeLine, k: usize) -> bool {
    let board = line.after(k);
    (attacks_from(board, line.plies[k].to) & board.board().by_color(!line.pov)).any()
}

/// A defensive move: the last move, with at least three moves to choose
/// from, neither checks nor captures nor attacks nor pushes an advanced
/// pawn (a move that wins by keeping things safe); or a solver move that
/// gets out of check among three or more choices, before any solver check
/// or capture.
pub(super) fn defensive_move(line: &ThemeLine) -> bool {
    let last = line.len() - 1;
    let quiet_end = line.before(last).legal_moves().len() >= 3
        && !line.after(last).is_check()
        && !line.plies[last].capture
        && !attacks_enemy(line, last)
        && !line.is_advanced_pawn_move(last, ADVANCED_RANK);
    quiet_end || check_escape(line)
}

fn check_escape(line: &ThemeLine) -> bool {
    for k in line.solver_plies() {
        if line.after(k).is_check() || line.plies[k].capture {
            return false;
        }
        if line.before(k).legal_moves().len() < 3 {
            return false;
        }
        if line.before(k).is_check() {
            return true;
        }
    }
    false
}

/// Attraction: a solver move to a square where the opponent's king, queen
/// or rook takes; the solver's next move attacks that square, and then
/// checks the king there or later captures there.
pub(super) fn attraction(line: &ThemeLine) -> bool {
    line.solver_plies().any(|k| {
        let square = line.plies[k].to;
        let Some(reply) = line.plies.get(k + 1) else {
            return false;
        };
        if reply.to != square || !matches!(reply.role, Role::King | Role::Queen | Role::Rook) {
            return false;
        }
        let Some(next) = line.plies.get(k + 2) else {
            return false;
        };
        if !attackers(line.after(k + 2), line.pov, square).contains(next.to) {
            return false;
        }
        reply.role == Role::King || line.plies.get(k + 4).is_some_and(|p| p.to == square)
    })
}

/// Deflection: the opponent's piece is drawn away (by a capture on its
/// square or by check) from a square it guarded, and the solver then takes
/// or promotes on that square, which the piece no longer guards.
pub(super) fn deflection(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        let taken = line.taken_on_target(k);
        if taken.is_none() && ply.promotion.is_none() {
            return false;
        }
        if taken.is_some_and(|p| value(p.role) > value(ply.role)) {
            return false;
        }
        let (reply, lure) = (line.plies[k - 1], line.plies[k - 2]);
        // Lichess compares the lure's prize with the luring piece's number
        // in the order pawn..king, not its value; kept as their tags are.
        let lure_prize_small = line
            .taken_on_target(k - 2)
            .is_none_or(|p| value(p.role) < role_number(lure.role));
        let lured_board = line.after(k - 2);
        let guarded = attacks_from(lured_board, reply.from);
        lure_prize_small
            && ply.to != reply.to
            && ply.to != lure.to
            && (reply.to == lure.to || lured_board.is_check())
            && (guarded.contains(ply.to)
                || (ply.promotion.is_some()
                    && ply.to.file() == reply.from.file()
                    && guarded.contains(ply.from)))
            && !attacks_from(line.before(k), reply.to).contains(ply.to)
    })
}

/// An exposed king: the opponent's king stands on its own three back ranks
/// with no pawn of its own in front of or beside it, and the solver checks
/// it on a move that is neither the first nor the last.
pub(super) fn exposed_king(line: &ThemeLine) -> bool {
    let board = line.after(0).board();
    let defender = !line.pov;
    let Some(king) = board.king_of(defender) else {
        return false;
    };
    if super::line::relative_rank(king, line.pov) < 5 {
        return false;
    }
    // One rank toward the solver's side of the board.
    let toward = if defender == Color::White { 8 } else { -8 };
    let shield = [
        king.offset(toward),
        side(king, -1),
        side(king, 1),
        side(king, -1).and_then(|s| s.offset(toward)),
        side(king, 1).and_then(|s| s.offset(toward)),
    ];
    let own_pawns = board.pawns() & board.by_color(defender);
    if shield
        .into_iter()
        .flatten()
        .any(|sq| own_pawns.contains(sq))
    {
        return false;
    }
    let solver: Vec<usize> = line.solver_plies().collect();
    solver.len() > 2
        && solver[1..solver.len() - 1]
            .iter()
            .any(|k| line.after(*k).is_check())
}

/// The square `files` files beside `square` on its rank, if on the board.
fn side(square: Square, files: i32) -> Option<Square> {
    let file = square.file().offset(files)?;
    Some(Square::from_coords(file, square.rank()))
}

/// A skewer: a solver line piece takes, without mating, a piece that stood
/// behind the opponent's piece which just moved off the line; the piece
/// that moved away was worth more than the one taken, and the taken piece
/// was left in a bad spot.
pub(super) fn skewer(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        let Some(taken) = line.taken_on_target(k) else {
            return false;
        };
        if !is_slider(ply.role) || line.mates(k) {
            return false;
        }
        let reply = line.plies[k - 1];
        if reply.to == ply.to || !attacks::between(ply.from, ply.to).contains(reply.from) {
            return false;
        }
        value(reply.role) > value(taken.role) && in_bad_spot(line.before(k), ply.to)
    })
}

/// Interference: a piece steps between an unprotected enemy piece and its
/// line-piece defender, and the solver then takes the piece. Either side's
/// piece may step in: the opponent's own move (self-interference) or the
/// solver's move before.
pub(super) fn interference(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        let Some(taken) = line.taken_on_target(k) else {
            return false;
        };
        if !is_hanging(line.before(k), taken.color, ply.to) {
            return false;
        }
        let blocked_by = |board_before: &shakmaty::Chess, blocker: Square| {
            let defenders = attackers(board_before, taken.color, ply.to);
            // The defender Lichess looks at is the lowest square's.
            defenders.first().is_some_and(|defender| {
                board_before
                    .board()
                    .role_at(defender)
                    .is_some_and(is_slider)
                    && attacks::between(ply.to, defender).contains(blocker)
            })
        };
        let reply = line.plies[k - 1];
        let by_opponent = blocked_by(line.before(k - 1), reply.to);
        let by_solver = ply.to != reply.to && blocked_by(line.before(k - 2), line.plies[k - 2].to);
        by_opponent || by_solver
    })
}

/// An intermezzo (in-between move): the opponent took on a square, the
/// solver, instead of recapturing at once, played another move, and now
/// takes on that square with a capture that was already possible. The
/// first solver capture that is not a plain recapture decides.
pub(super) fn intermezzo(line: &ThemeLine) -> bool {
    for k in line.later_solver_plies() {
        let ply = line.plies[k];
        if !ply.capture {
            continue;
        }
        let reply = line.plies[k - 1];
        if attackers(line.after(k - 2), !line.pov, ply.to).contains(reply.from) {
            continue;
        }
        if line.plies[k - 2].to == ply.to {
            continue;
        }
        let earlier = line.plies[k - 3];
        return earlier.to == ply.to
            && earlier.capture
            && line
                .before(k - 2)
                .legal_moves()
                .iter()
                .any(|m| super::line::same_squares(*m, ply.chess_move));
    }
    false
}

/// A pin: after a solver move, an enemy piece pinned to its king either
/// cannot take a solver piece it attacks off its line (one worth more, or
/// unprotected), or cannot escape a cheaper solver piece on the line that
/// attacks it (or, unprotected and not able to hit back, could move off
/// the line but may not).
pub(super) fn pin(line: &ThemeLine) -> bool {
    line.solver_plies().any(|k| {
        let board = line.after(k);
        let enemy = board.board().by_color(!line.pov);
        enemy.into_iter().any(|square| {
            let Some(pin_ray) = pin_line(board, !line.pov, square) else {
                return false;
            };
            let Some(role) = board.board().role_at(square) else {
                return false;
            };
            let prevents_attack = (attacks_from(board, square) & board.board().by_color(line.pov))
                .into_iter()
                .filter(|target| !pin_ray.contains(*target))
                .any(|target| {
                    board.board().role_at(target).is_some_and(|target_role| {
                        value(target_role) > value(role) || is_hanging(board, line.pov, target)
                    })
                });
            prevents_attack
                || (attackers(board, line.pov, square) & pin_ray)
                    .into_iter()
                    .any(|attacker| {
                        let attacker_role = board.board().role_at(attacker).unwrap_or(Role::King);
                        value(role) > value(attacker_role)
                            || (is_hanging(board, !line.pov, square)
                                && !attackers(board, !line.pov, attacker).contains(square)
                                && (pseudo_moves_from(board, square) & !pin_ray).any())
                    })
        })
    })
}

/// A capture on f2 or f7 next to the opponent's king on its starting
/// square. The first solver capture on f2/f7 decides.
pub(super) fn attacking_f2_f7(line: &ThemeLine) -> bool {
    for k in line.solver_plies() {
        let ply = line.plies[k];
        if line.taken_on_target(k).is_some() && matches!(ply.to, Square::F2 | Square::F7) {
            let home = if ply.to == Square::F7 {
                Square::E8
            } else {
                Square::E1
            };
            return line
                .after(k)
                .board()
                .piece_at(home)
                .is_some_and(|p| p.role == Role::King && p.color != line.pov);
        }
    }
    false
}

/// An attack on the castled king's side: the opponent's king on its back
/// rank on the g/h files (kingside) or a/b/c files (queenside), with
/// enough pieces on the board that it is no endgame, the solver checks at
/// least once, and the solver's moves mostly check or capture near that
/// corner (+1 per check, +1 per capture within three squares of the
/// corner, -1 per move five or more squares away; 2 or more).
pub(super) fn side_attack(line: &ThemeLine, kingside: bool) -> bool {
    let (corner_file, king_files, min_pieces): (u32, &[u32], usize) = if kingside {
        (7, &[6, 7], 20)
    } else {
        (0, &[0, 1, 2], 18)
    };
    let back_rank = if line.pov == Color::White { 7 } else { 0 };
    let start = line.after(0);
    let Some(king) = start.board().king_of(!line.pov) else {
        return false;
    };
    // Lichess's rule reads a king on a1 as "no king" (square 0).
    if king == Square::A1
        || king.rank().to_u32() != back_rank
        || !king_files.contains(&king.file().to_u32())
        || start.board().occupied().count() < min_pieces
        || !line.solver_plies().any(|k| line.after(k).is_check())
    {
        return false;
    }
    let corner = Square::from_coords(
        shakmaty::File::new(corner_file),
        shakmaty::Rank::new(back_rank),
    );
    let score: i32 = line
        .solver_plies()
        .map(|k| {
            let ply = line.plies[k];
            let distance = corner.distance(ply.to);
            let check = i32::from(line.after(k).is_check());
            let near = if ply.capture && distance <= 3 {
                1
            } else if distance >= 5 {
                -1
            } else {
                0
            };
            check + near
        })
        .sum();
    score >= 2
}

/// Clearance: a solver move (not a capture, not a promotion) vacates a
/// square or line that a solver line piece then uses on its next move,
/// without checks in between; the vacating move went to an empty square
/// or left its piece in a bad spot.
pub(super) fn clearance(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        if line.taken_on_target(k).is_some() || !is_slider(ply.role) {
            return false;
        }
        let vacating = line.plies[k - 2];
        let reply = line.plies[k - 1];
        let quiet = vacating.promotion.is_none()
            && vacating.to != ply.from
            && vacating.to != ply.to
            && !line.before(k).is_check()
            && (!line.after(k).is_check() || reply.role != Role::King);
        let opened =
            vacating.from == ply.to || attacks::between(ply.from, ply.to).contains(vacating.from);
        quiet
            && opened
            && (line.taken_on_target(k - 2).is_none()
                || in_bad_spot(line.after(k - 2), vacating.to))
    })
}

/// A solver pawn takes en passant.
pub(super) fn en_passant(line: &ThemeLine) -> bool {
    line.solver_plies().any(|k| line.plies[k].en_passant)
}

/// The solver castles.
pub(super) fn castling(line: &ThemeLine) -> bool {
    line.solver_plies().any(|k| line.plies[k].castle)
}

/// A solver pawn promotes.
pub(super) fn promotion(line: &ThemeLine) -> bool {
    line.solver_plies()
        .any(|k| line.plies[k].promotion.is_some())
}

/// A solver pawn promotes to a knight, rook or bishop; a mating move
/// decides alone (an underpromotion only if it makes a knight).
pub(super) fn under_promotion(line: &ThemeLine) -> bool {
    for k in line.solver_plies() {
        let promotion = line.plies[k].promotion;
        if line.mates(k) {
            return promotion == Some(Role::Knight);
        }
        if promotion.is_some_and(|r| r != Role::Queen) {
            return true;
        }
    }
    false
}

/// Capturing the defender: the solver takes a piece that defended another
/// (or mates), with a capture that wins material or is safe, and then
/// takes or mates where the defender used to guard.
pub(super) fn capturing_defender(line: &ThemeLine) -> bool {
    line.later_solver_plies().any(|k| {
        let ply = line.plies[k];
        let trigger = line.mates(k)
            || line.taken_on_target(k).is_some_and(|taken| {
                ply.role != Role::King
                    && value(taken.role) <= value(ply.role)
                    && is_hanging(line.before(k), taken.color, ply.to)
                    && line.plies[k - 1].to != ply.to
            });
        if !trigger {
            return false;
        }
        let removal = line.plies[k - 2];
        if line.after(k - 2).is_check() || removal.to == ply.from {
            return false;
        }
        let earlier = line.before(k - 2);
        earlier
            .board()
            .piece_at(removal.to)
            .is_some_and(|defender| {
                attackers(earlier, defender.color, ply.to).contains(removal.to)
                    && !earlier.is_check()
            })
    })
}

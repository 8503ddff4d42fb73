//! A puzzle's line played on the board, once: the FEN parsed, every UCI
//! move checked for legality and played with shakmaty, the positions along
//! the way kept. Every stage that needs a puzzle's positions or moves reads
//! them from a [`PuzzleLine`], and every way a line can be bad is one
//! [`LineError`]: a reason code (`bad_fen`, `illegal_position`, `bad_move`,
//! `illegal_move`, `too_few_moves`, `odd_move_count`), a detail, and where
//! the line came from (file, line, puzzle), so messages name the row and
//! the reason.
//!
//! The convention is Lichess's ([`crate::chess::record`]): the opponent
//! moves first, then the solver and the opponent alternate, and the solver
//! plays the last move.

use std::fmt;

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Move, Position};

/// What is wrong with a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineReason {
    /// The FEN does not parse.
    BadFen,
    /// The FEN parses but is not a legal chess position.
    IllegalPosition,
    /// A move is not UCI.
    BadMove,
    /// A move is UCI but not legal where it is played.
    IllegalMove,
    /// Fewer than two moves: a puzzle needs the opponent's move and a
    /// solver move.
    TooFewMoves,
    /// An odd number of moves: the solver must play the last one.
    OddMoveCount,
}

impl LineReason {
    /// The reason code: what summaries count and rejects files hold.
    pub const fn code(self) -> &'static str {
        match self {
            LineReason::BadFen => "bad_fen",
            LineReason::IllegalPosition => "illegal_position",
            LineReason::BadMove => "bad_move",
            LineReason::IllegalMove => "illegal_move",
            LineReason::TooFewMoves => "too_few_moves",
            LineReason::OddMoveCount => "odd_move_count",
        }
    }

    /// Which part of the line is at fault, in words.
    const fn part(self) -> &'static str {
        match self {
            LineReason::BadFen | LineReason::IllegalPosition => "bad FEN",
            LineReason::BadMove | LineReason::IllegalMove => "bad move",
            LineReason::TooFewMoves | LineReason::OddMoveCount => "bad line",
        }
    }
}

/// Why a FEN, a move or a puzzle's line could not be played.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub reason: LineReason,
    /// What the FEN or the move held, or how many moves there were.
    pub detail: String,
    /// Where the line was read (`puzzles.csv line 12: puzzle 00008`),
    /// outermost first; empty when the caller named no place.
    pub place: String,
}

impl LineError {
    fn new(reason: LineReason, detail: String) -> Self {
        Self {
            reason,
            detail,
            place: String::new(),
        }
    }

    /// Names where the line came from. Places nest: the last one given is
    /// written first, so `.at("puzzle 00008").at("p.csv line 3")` reads
    /// `p.csv line 3: puzzle 00008: ...`.
    pub fn at(mut self, place: impl fmt::Display) -> Self {
        self.place = if self.place.is_empty() {
            place.to_string()
        } else {
            format!("{place}: {}", self.place)
        };
        self
    }

    /// The reason code (`bad_fen`, `illegal_move`, ...).
    pub fn code(&self) -> &'static str {
        self.reason.code()
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.place.is_empty() {
            write!(f, "{}: ", self.place)?;
        }
        write!(
            f,
            "{} ({}): {}",
            self.reason.part(),
            self.reason.code(),
            self.detail
        )
    }
}

impl std::error::Error for LineError {}

/// Parses a FEN (standard chess, standard castling; surrounding whitespace
/// ignored) into a legal position.
pub(crate) fn parse_position(fen: &str) -> Result<Chess, LineError> {
    parse_position_ascii(fen.as_bytes())
}

#[inline]
fn parse_position_ascii(fen: &[u8]) -> Result<Chess, LineError> {
    let fen = fen.trim_ascii();
    let parsed = match Fen::from_ascii(fen) {
        Ok(parsed) => parsed,
        Err(e) => return Err(bad_fen(LineReason::BadFen, &e, fen)),
    };
    match parsed.into_position(CastlingMode::Standard) {
        Ok(position) => Ok(position),
        Err(e) => Err(bad_fen(LineReason::IllegalPosition, &e, fen)),
    }
}

/// The legal position of an already read FEN (standard castling).
pub(crate) fn read_position(fen: &Fen) -> Result<Chess, LineError> {
    fen.clone()
        .into_position(CastlingMode::Standard)
        .map_err(|e| {
            LineError::new(
                LineReason::IllegalPosition,
                format!("{e}: {:?}", fen.to_string()),
            )
        })
}

/// Reads a FEN's text (surrounding whitespace ignored) as shakmaty's
/// [`Fen`], without asking that it be a legal position: the form the
/// engine layer carries. It prints back as it was read for any FEN whose
/// castling rights name rooks that are there (Lichess's and ours).
pub fn read_fen(fen: &str) -> Result<Fen, LineError> {
    let text = fen.trim().as_bytes();
    Fen::from_ascii(text).map_err(|e| bad_fen(LineReason::BadFen, &e, text))
}

/// Reads UCI moves' text as shakmaty's [`UciMove`]s (syntax only, not
/// legality); the error names the first bad move by its number (1-based).
/// A move prints back as it was read (castling stays `e1g1`).
pub fn read_ucis<S: AsRef<str>>(
    moves: impl IntoIterator<Item = S>,
) -> Result<Vec<UciMove>, LineError> {
    moves
        .into_iter()
        .enumerate()
        .map(|(index, text)| {
            let text = text.as_ref().as_bytes();
            UciMove::from_ascii(text).map_err(|_| not_uci(text, Some(index + 1)))
        })
        .collect()
}

/// UCI moves as text, separated by single spaces (the `Moves` column's
/// spelling).
pub fn ucis_text(moves: &[UciMove]) -> String {
    let mut text = String::with_capacity(moves.len() * 5);
    for (i, uci) in moves.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        uci.append_to_string(&mut text);
    }
    text
}

/// The UCI form of a move in standard chess (castling as the king's
/// move, `e1g1`, as Stockfish reads it).
pub fn uci_of(m: Move) -> UciMove {
    m.to_uci(CastlingMode::Standard)
}

/// Parses a UCI move and checks that it is legal in `position`.
pub(crate) fn parse_move(position: &Chess, uci: &str) -> Result<Move, LineError> {
    read_move(position, uci.as_bytes(), None)
}

/// Checks that an already read UCI move is legal in `position`.
pub(crate) fn legal_move(position: &Chess, uci: &UciMove) -> Result<Move, LineError> {
    legal_move_at(position, uci, None)
}

/// [`legal_move`] for the `number`-th move of a line (1-based), which the
/// detail names.
#[inline]
fn legal_move_at(
    position: &Chess,
    uci: &UciMove,
    number: Option<usize>,
) -> Result<Move, LineError> {
    uci.to_move(position).map_err(|_| illegal_move(uci, number))
}

/// [`parse_move`] for the `number`-th move of a line (1-based), which the
/// detail names.
#[inline]
fn read_move(position: &Chess, text: &[u8], number: Option<usize>) -> Result<Move, LineError> {
    let Ok(uci) = UciMove::from_ascii(text) else {
        return Err(not_uci(text, number));
    };
    legal_move_at(position, &uci, number)
}

// The errors are built apart from the checks (and marked cold) so that the
// checks stay small enough to inline into the ingest's loop.

#[cold]
fn bad_fen(reason: LineReason, error: &dyn fmt::Display, fen: &[u8]) -> LineError {
    LineError::new(
        reason,
        format!("{error}: {:?}", String::from_utf8_lossy(fen)),
    )
}

/// ` 3` for the third move of a line, nothing for a move on its own.
fn move_number(number: Option<usize>) -> String {
    number.map_or_else(String::new, |n| format!(" {n}"))
}

#[cold]
fn not_uci(text: &[u8], number: Option<usize>) -> LineError {
    LineError::new(
        LineReason::BadMove,
        format!(
            "move{} is not UCI: {:?}",
            move_number(number),
            String::from_utf8_lossy(text)
        ),
    )
}

#[cold]
fn illegal_move(uci: &UciMove, number: Option<usize>) -> LineError {
    LineError::new(
        LineReason::IllegalMove,
        format!(
            "move{} {uci} is illegal in the position",
            move_number(number)
        ),
    )
}

/// A line of legal moves from a position, with every position along it.
///
/// [`PuzzleLine::parse`] reads a puzzle's line (and checks the puzzle's
/// shape: at least two moves, an even number); a line built move by move
/// ([`PuzzleLine::from_read_fen`] then [`PuzzleLine::play_move`]) may be any
/// sequence of legal moves, such as a game's.
#[derive(Clone, Debug)]
pub struct PuzzleLine {
    /// `positions[k]` is the position after `k` moves; never empty, the
    /// first is the FEN's.
    positions: Vec<Chess>,
    /// `moves[k]` is played in `positions[k]`.
    moves: Vec<Move>,
}

impl Default for PuzzleLine {
    /// The line of no moves from the standard start, a buffer for
    /// [`PuzzleLine::parse_cells`].
    fn default() -> Self {
        Self::from_position(Chess::default())
    }
}

impl PuzzleLine {
    /// The line of no moves from `start`.
    pub fn from_position(start: Chess) -> Self {
        Self {
            positions: vec![start],
            moves: Vec::new(),
        }
    }

    /// The line of no moves from a FEN.
    pub(crate) fn from_fen(fen: &str) -> Result<Self, LineError> {
        Ok(Self::from_position(parse_position(fen)?))
    }

    /// A puzzle's line: the FEN, then every move (opponent first) legal
    /// where it is played; at least two moves and an even number.
    pub fn parse<S: AsRef<str>>(fen: &str, moves: &[S]) -> Result<Self, LineError> {
        let mut line = Self::from_fen(fen)?;
        line.positions.reserve(moves.len());
        line.moves.reserve(moves.len());
        for uci in moves {
            line.play_ascii(uci.as_ref().as_bytes())?;
        }
        line.check_puzzle_shape()?;
        Ok(line)
    }

    /// A puzzle's line from its FEN and moves as read (a puzzle record's,
    /// see `Puzzle::line`): the position must be legal, every move legal
    /// where it is played, and the line a puzzle's shape.
    pub(crate) fn of_read(fen: &Fen, moves: &[UciMove]) -> Result<Self, LineError> {
        let mut line = Self::from_read_fen(fen)?;
        line.positions.reserve(moves.len());
        line.moves.reserve(moves.len());
        for &uci in moves {
            line.play_move(uci)?;
        }
        line.check_puzzle_shape()?;
        Ok(line)
    }

    /// [`PuzzleLine::parse`] of a file's raw cells, the moves separated by
    /// whitespace, into this line: its buffers are reused, so reading row
    /// after row into one line allocates nothing once they have grown (the
    /// ingest's hot loop). On an error the line holds what was played so
    /// far.
    pub(crate) fn parse_cells(&mut self, fen: &[u8], moves: &[u8]) -> Result<(), LineError> {
        let start = parse_position_ascii(fen)?;
        self.positions.clear();
        self.moves.clear();
        self.positions.push(start);
        for word in moves
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
        {
            self.play_ascii(word)?;
        }
        self.check_puzzle_shape()
    }

    /// Plays one more move, checking that it is legal; the line is left as
    /// it was when it is not.
    pub(crate) fn play_move(&mut self, uci: UciMove) -> Result<Move, LineError> {
        let before = self.last_position();
        let m = legal_move_at(before, &uci, Some(self.moves.len() + 1))?;
        let mut after = before.clone();
        after.play_unchecked(m);
        self.positions.push(after);
        self.moves.push(m);
        Ok(m)
    }

    /// The line of no moves from an already read FEN.
    pub(crate) fn from_read_fen(fen: &Fen) -> Result<Self, LineError> {
        read_position(fen).map(Self::from_position)
    }

    #[inline]
    fn play_ascii(&mut self, text: &[u8]) -> Result<Move, LineError> {
        let before = self.last_position();
        let m = read_move(before, text, Some(self.moves.len() + 1))?;
        let mut after = before.clone();
        after.play_unchecked(m);
        self.positions.push(after);
        self.moves.push(m);
        Ok(m)
    }

    /// The puzzle's shape: at least two moves (the opponent's and a
    /// solver's) and an even number (the solver plays the last).
    pub(crate) fn check_puzzle_shape(&self) -> Result<(), LineError> {
        let plies = self.plies();
        if plies < 2 {
            return Err(LineError::new(
                LineReason::TooFewMoves,
                format!("{plies} moves, a puzzle needs at least 2"),
            ));
        }
        if !plies.is_multiple_of(2) {
            return Err(LineError::new(
                LineReason::OddMoveCount,
                format!("{plies} moves, the solver must play the last one"),
            ));
        }
        Ok(())
    }

    /// The FEN's position, before the opponent's first move.
    pub fn start(&self) -> &Chess {
        &self.positions[0]
    }

    /// The moves, in order.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// The positions: the start, then the position after each move.
    pub fn positions(&self) -> &[Chess] {
        &self.positions
    }

    /// Number of moves (plies).
    pub fn plies(&self) -> usize {
        self.moves.len()
    }

    /// The position after `plies` moves (0: the start).
    pub(crate) fn position_after(&self, plies: usize) -> Option<&Chess> {
        self.positions.get(plies)
    }

    /// The position the solver first sees, after the opponent's first
    /// move (a puzzle's line always has one; on a line built move by move
    /// that has no move yet, the start).
    pub(crate) fn first_solver_position(&self) -> &Chess {
        self.positions.get(1).unwrap_or(self.start())
    }

    /// The position after the last move.
    pub(crate) fn last_position(&self) -> &Chess {
        &self.positions[self.positions.len() - 1]
    }

    /// True when the position after the last move is checkmate.
    pub(crate) fn ends_in_checkmate(&self) -> bool {
        self.last_position().is_checkmate()
    }

    /// The line's move at `ply` and the position it is played in, when
    /// `ply` is a solver move of the line (an odd ply: the opponent plays
    /// the even ones, and only a solver move has answers).
    fn solver_move_at(&self, ply: usize) -> Option<(Move, &Chess)> {
        if ply.is_multiple_of(2) {
            return None;
        }
        self.moves.get(ply).copied().zip(self.positions.get(ply))
    }

    /// Is `candidate` an accepted answer on the solver move at `ply`, by
    /// the one rule ([`accepts_answer`])? Never on an opponent's ply.
    pub(crate) fn accepts(&self, ply: usize, candidate: Move) -> bool {
        self.solver_move_at(ply)
            .is_some_and(|(solution, position)| accepts_answer(position, solution, candidate))
    }

    /// Every answer accepted on the solver move at `ply`: the line's move
    /// first, then every other legal move [`accepts_answer`] takes, in
    /// shakmaty's legal-move order. Empty for an opponent's ply or one past
    /// the line.
    pub(crate) fn accepted_moves(&self, ply: usize) -> Vec<Move> {
        let Some((solution, position)) = self.solver_move_at(ply) else {
            return Vec::new();
        };
        let mut accepted = vec![solution];
        accepted.extend(
            position
                .legal_moves()
                .into_iter()
                .filter(|&m| m != solution && accepts_answer(position, solution, m)),
        );
        accepted
    }

    /// The solver's turns in order: the index of the move in the line, the
    /// position the solver faces and the solution's move there.
    pub(crate) fn solver_turns(&self) -> impl Iterator<Item = (usize, &Chess, Move)> {
        (1..self.moves.len())
            .step_by(2)
            .map(|ply| (ply, &self.positions[ply], self.moves[ply]))
    }
}

/// The one rule for whether an answer is accepted on a solver move
/// (Lichess's): the line's move (`solution`), or any move that
/// checkmates, at any solver move of any line. A mate ends the game, so a
/// solver who mates has won the puzzle whatever the line goes on to play:
/// refusing it would mark a won game wrong. Every judge of answers (eval's
/// scoring, every export format's accepted moves, verify's engines) asks
/// this, so that they agree on every puzzle. `candidate` need not be legal
/// in `position`; an illegal move is refused.
pub(crate) fn accepts_answer(position: &Chess, solution: Move, candidate: Move) -> bool {
    candidate == solution || checkmates(position, candidate)
}

/// Does `candidate`, played in `position`, checkmate? False when it is
/// not legal there.
fn checkmates(position: &Chess, candidate: Move) -> bool {
    position
        .clone()
        .play(candidate)
        .is_ok_and(|after| after.is_checkmate())
}

/// The Zobrist hash of a position (en passant only when a capture there is
/// legal; no clocks): the key mining deduplicates puzzles by, a game's
/// repetitions are counted by, and a human source game's positions are
/// known by.
pub(crate) fn position_key(position: &Chess) -> u64 {
    let hash: shakmaty::zobrist::Zobrist64 = position.zobrist_hash(EnPassantMode::Legal);
    hash.0
}

/// FEN fields that identify a position: board, turn, castling, en passant
/// (only when an en passant capture is legal); no clocks.
pub(crate) fn normalized_fen(position: &Chess) -> String {
    let fen = Fen::from_position(position, EnPassantMode::Legal).to_string();
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}

/// The full FEN of a position (en passant square only when a capture
/// there is legal).
pub fn fen_of(position: &Chess) -> String {
    Fen::from_position(position, EnPassantMode::Legal).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

    fn reason(fen: &str, moves: &str) -> &'static str {
        let moves: Vec<&str> = moves.split_whitespace().collect();
        PuzzleLine::parse(fen, &moves).unwrap_err().code()
    }

    #[test]
    fn bad_lines_name_their_reason() {
        assert_eq!(reason("nonsense", "e2e4 e7e5"), "bad_fen");
        assert_eq!(reason(START, "e2e5 e7e5"), "illegal_move");
        assert_eq!(reason(START, "e2e4 zz"), "bad_move");
        assert_eq!(reason(START, "e2e4"), "too_few_moves");
        assert_eq!(reason(START, "e2e4 e7e5 g1f3"), "odd_move_count");
        // Two white kings: parses, but is not a legal position.
        assert_eq!(
            reason("K6K/8/8/8/8/8/8/k7 w - - 0 1", "a8a7 a1a2"),
            "illegal_position"
        );
    }

    #[test]
    fn errors_name_the_place_the_part_and_the_move() {
        let error = PuzzleLine::parse(START, &["e2e4", "e7e5", "g1g3", "b8c6"])
            .unwrap_err()
            .at("puzzle x1")
            .at("p.csv line 3");
        assert_eq!(error.detail, "move 3 g1g3 is illegal in the position");
        assert_eq!(
            error.to_string(),
            "p.csv line 3: puzzle x1: bad move (illegal_move): move 3 g1g3 is illegal in the position"
        );
    }

    #[test]
    fn cells_and_records_play_the_same_line() {
        let mut line = PuzzleLine::default();
        line.parse_cells(START.as_bytes(), b" e2e4  e7e5\tg1f3 b8c6 ")
            .unwrap();
        let parsed = PuzzleLine::parse(START, &["e2e4", "e7e5", "g1f3", "b8c6"]).unwrap();
        assert_eq!(line.plies(), 4);
        assert_eq!(line.moves(), parsed.moves());
        assert_eq!(line.positions(), parsed.positions());
        assert_eq!(line.solver_moves(), 2);
        let turns: Vec<usize> = line.solver_turns().map(|(ply, _, _)| ply).collect();
        assert_eq!(turns, [1, 3]);
        assert_eq!(
            normalized_fen(line.first_solver_position()),
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -"
        );
        // A bad row leaves the buffer ready for the next one.
        assert!(line.parse_cells(b"nonsense", b"e2e4 e7e5").is_err());
        line.parse_cells(START.as_bytes(), b"e2e4 e7e5").unwrap();
        assert_eq!(line.plies(), 2);
    }

    #[test]
    fn a_line_built_move_by_move_keeps_its_legal_prefix() {
        let mut line = PuzzleLine::from_fen(START).unwrap();
        let e2e4 = UciMove::from_ascii(b"e2e4").unwrap();
        line.play_move(e2e4).unwrap();
        let error = line.play_move(e2e4).unwrap_err();
        assert_eq!(error.code(), "illegal_move");
        assert_eq!(line.plies(), 1);
        assert!(line.check_puzzle_shape().is_err());
    }

    /// The line of `moves` from `fen` and the move `uci` where the `ply`-th
    /// move is played.
    fn line_and_move(fen: &str, moves: &str, ply: usize, uci: &str) -> (PuzzleLine, Move) {
        let moves: Vec<&str> = moves.split_whitespace().collect();
        let line = PuzzleLine::parse(fen, &moves).unwrap();
        let candidate = UciMove::from_ascii(uci.as_bytes())
            .unwrap()
            .to_move(&line.positions()[ply])
            .unwrap();
        (line, candidate)
    }

    #[test]
    fn the_line_s_move_or_any_mate_is_accepted_at_every_solver_move() {
        // Lichess puzzle 43jqD: after e4d5 both Qh2# and Rxh2# mate.
        let two_mates = "r1b1k2r/1pq2p2/p3p1p1/2bp4/4P3/2N2Q2/PPP3BP/3R1R1K w kq - 0 25";
        // After Nc3 the line plays Ra3, but Ra8 is a back-rank mate.
        let back_rank = "6k1/5ppp/8/8/8/8/n4PPP/R5K1 b - - 0 1";
        // f7-f8 uncovers the a7 rook's check: as a queen it guards g7 and
        // g8, as a knight it checks too (a double check; the c4 bishop
        // guards g8); either way the king has no square.
        let promotion = "7r/R4P1k/p5pp/8/2B5/8/8/2K5 b - - 0 1";
        let cases = [
            ("the line's mate", two_mates, "e4d5 c7h2", 1, "c7h2", true),
            (
                "a second mate in one",
                two_mates,
                "e4d5 c7h2",
                1,
                "h8h2",
                true,
            ),
            (
                "a move that does not mate",
                two_mates,
                "e4d5 c7h2",
                1,
                "e6d5",
                false,
            ),
            (
                "the line's quiet last move",
                back_rank,
                "a2c3 a1a3",
                1,
                "a1a3",
                true,
            ),
            (
                "a mate on the last move of a line that does not end in mate",
                back_rank,
                "a2c3 a1a3",
                1,
                "a1a8",
                true,
            ),
            (
                "another quiet move",
                back_rank,
                "a2c3 a1a3",
                1,
                "a1a2",
                false,
            ),
            (
                "a mate on a solver move before the last",
                back_rank,
                "a2c3 a1a3 c3b5 a3a8",
                1,
                "a1a8",
                true,
            ),
            (
                "the opponent's move is no answer",
                back_rank,
                "a2c3 a1a3",
                0,
                "a2c3",
                false,
            ),
            (
                "the line's queen promotion",
                promotion,
                "a6a5 f7f8q",
                1,
                "f7f8q",
                true,
            ),
            (
                "a knight promotion that mates",
                promotion,
                "a6a5 f7f8q",
                1,
                "f7f8n",
                true,
            ),
            (
                "a quiet bishop move",
                promotion,
                "a6a5 f7f8q",
                1,
                "c4d3",
                false,
            ),
        ];
        for (name, fen, moves, ply, uci, accepted) in cases {
            let (line, candidate) = line_and_move(fen, moves, ply, uci);
            assert_eq!(line.accepts(ply, candidate), accepted, "{name}");
            assert_eq!(
                line.accepted_moves(ply).contains(&candidate),
                accepted,
                "{name}: the list agrees with the rule"
            );
        }
        // The back-rank line does not end in mate: the old rule refused Ra8.
        let (line, _) = line_and_move(back_rank, "a2c3 a1a3", 1, "a1a3");
        assert!(!line.ends_in_checkmate());
        let uci_list = |line: &PuzzleLine, ply| -> Vec<String> {
            line.accepted_moves(ply)
                .into_iter()
                .map(|m| uci_of(m).to_string())
                .collect()
        };
        assert_eq!(uci_list(&line, 1), ["a1a3", "a1a8"]);
        let (line, _) = line_and_move(two_mates, "e4d5 c7h2", 1, "c7h2");
        let mut mates = uci_list(&line, 1);
        assert_eq!(mates[0], "c7h2", "the line's move comes first");
        mates.sort();
        assert_eq!(mates, ["c7h2", "h8h2"]);
        assert!(line.accepted_moves(0).is_empty());
        assert!(line.accepted_moves(2).is_empty());
    }
}

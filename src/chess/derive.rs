//! A puzzle's own rules, one function each: its length in solver moves,
//! whether it is a mate, its rating bin, its phase, its source game, where
//! it and its rating come from, and what a puzzle not from Lichess holds in
//! the Lichess columns. Every stage that writes or reads one of these
//! columns calls the rule here, so one puzzle gets the same `NumMoves`,
//! `Mate`, `RatingBin`, `GameId`, ... whichever stage made it:
//! `ingest puzzles` derives them from the line and the cells
//! ([`DerivedFields`]), `rate` marks the rating's source, and a release
//! reads them back and writes its own columns by the same rules.
//!
//! The rules that read a [`Puzzle`] are its methods, implemented here
//! rather than in [`crate::chess::record`]: the record is the file format,
//! this file what a puzzle's cells mean. The line itself is read by
//! [`crate::chess::line::PuzzleLine`]; the columns are
//! [`crate::chess::columns::DERIVED`] and [`crate::chess::columns::RELEASE`].

use shakmaty::{Bitboard, Chess, Color, Position, Rank};

use crate::chess::columns::{self, Column};
use crate::chess::line::PuzzleLine;
use crate::chess::record::Puzzle;

/// The rating deviation taken for a puzzle without one: a typical Lichess
/// puzzle's (the puzzle rating's fit and the rating model's calibration
/// both read it).
pub(crate) const TYPICAL_RATING_DEVIATION: f64 = 90.0;

/// The `Source` of a puzzle from Lichess's puzzle database, and the
/// `RatingSource` of a rating Lichess's players gave.
pub(crate) const LICHESS: &str = "lichess";

/// Game phase of a puzzle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Opening,
    Middlegame,
    Endgame,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Opening => "opening",
            Phase::Middlegame => "middlegame",
            Phase::Endgame => "endgame",
        }
    }
}

// ---- Length -------------------------------------------------------------

/// Number of solver moves in a puzzle's line of `plies` plies: the
/// opponent moves first, then the solver plays every second move.
pub(crate) fn solver_moves(plies: usize) -> usize {
    plies / 2
}

/// Number of solver moves in a line that starts with the solver's move
/// (the miner's line): the puzzle made of it puts the opponent's move in
/// front, so this is that puzzle's [`solver_moves`].
pub(crate) fn solver_moves_from_solver_move(plies: usize) -> usize {
    solver_moves(plies + 1)
}

impl Puzzle {
    /// Number of solver moves ([`solver_moves`] of its `Moves`).
    pub fn solver_moves(&self) -> usize {
        solver_moves(self.moves.len())
    }
}

impl PuzzleLine {
    /// Number of solver moves ([`solver_moves`] of its plies).
    pub fn solver_moves(&self) -> usize {
        solver_moves(self.plies())
    }
}

// ---- Mate ---------------------------------------------------------------

/// True when the themes mark a mating puzzle (`mate`, `mateIn1`, ...).
pub(crate) fn mate_from_themes<'a>(themes: impl IntoIterator<Item = &'a str>) -> bool {
    themes
        .into_iter()
        .any(|t| t == "mate" || t.starts_with("mateIn"))
}

/// A `Mate` cell read as a flag (`True`/`true`/`1`/`yes`, `False`/...);
/// `None` for an empty or other cell.
fn mate_from_cell(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// The `Mate` cell of a flag, as every stage writes it.
pub(crate) fn mate_cell(mate: bool) -> &'static str {
    if mate { "True" } else { "False" }
}

impl Puzzle {
    /// True for a mating puzzle. `ingest puzzles` records in `Mate`
    /// whether the line ends in checkmate ([`DerivedFields::new`]); a
    /// puzzle without that column (a mined one) is a mate when its themes
    /// say so (`mate`, `mateInN`).
    pub(crate) fn is_mate(&self) -> bool {
        self.get(Column::Mate)
            .and_then(mate_from_cell)
            .unwrap_or_else(|| mate_from_themes(self.themes.iter().map(String::as_str)))
    }
}

/// How the theme-based and the board-based mate flags compare: `agree`,
/// `no_themes` (nothing to compare with), `themes_only` (themes say mate,
/// the final position is not checkmate) or `board_only`.
pub(crate) fn mate_check(
    has_themes: bool,
    themes_say_mate: bool,
    board_mate: bool,
) -> &'static str {
    match (has_themes, themes_say_mate, board_mate) {
        (false, _, _) => "no_themes",
        (true, a, b) if a == b => "agree",
        (true, true, false) => "themes_only",
        (true, _, _) => "board_only",
    }
}

// ---- Rating bin ---------------------------------------------------------

/// The widths `ingest puzzles` writes `RatingBin` and `RatingBin200` at:
/// the APO benchmark's files' 100 and 200 points. A release writes
/// `RatingBin` again at its own `[release] bin_width`, by the same rule
/// ([`rating_bin_edges`]), because its cells are bins of that width.
pub(crate) const INGEST_BIN_WIDTH: i32 = 100;
/// See [`INGEST_BIN_WIDTH`].
pub(crate) const INGEST_BIN200_WIDTH: i32 = 200;

/// The rating bin of `width` points as pandas writes a right-closed
/// interval: 1950 with width 100 is `(1900, 2000]`, 2000 is `(1900, 2000]`.
pub fn rating_bin(rating: i32, width: i32) -> String {
    let (lower, upper) = rating_bin_edges(rating, width);
    rating_bin_label(lower, upper)
}

/// `(lo, hi]` written as pandas writes an interval (the APO files' format).
pub fn rating_bin_label(lower: i32, upper: i32) -> String {
    let mut out = Vec::new();
    write_rating_bin_label(lower, upper, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`rating_bin_label`] appended to `out`, allocating nothing (the
/// ingest's hot loop writes it in place).
fn write_rating_bin_label(lower: i32, upper: i32, out: &mut Vec<u8>) {
    let mut digits = itoa::Buffer::new();
    out.push(b'(');
    out.extend_from_slice(digits.format(lower).as_bytes());
    out.extend_from_slice(b", ");
    out.extend_from_slice(digits.format(upper).as_bytes());
    out.push(b']');
}

/// Ratings a puzzle may have (ingest rejects others): Lichess puzzle
/// ratings run from about 400 to 3300.
pub(crate) const RATING_RANGE: std::ops::RangeInclusive<i32> = 0..=4000;

/// The (open lower, closed upper) edges of a rating's bin.
pub fn rating_bin_edges(rating: i32, width: i32) -> (i32, i32) {
    let width = width.max(1);
    // The bin's upper edge is the smallest multiple of width >= rating.
    let upper = rating.div_euclid(width) * width
        + if rating.rem_euclid(width) == 0 {
            0
        } else {
            width
        };
    (upper - width, upper)
}

// ---- Phase --------------------------------------------------------------

/// Phase from Lichess's phase themes, when one is present.
pub(crate) fn phase_from_themes<'a>(themes: impl IntoIterator<Item = &'a str>) -> Option<Phase> {
    themes.into_iter().find_map(|t| match t {
        "opening" => Some(Phase::Opening),
        "middlegame" => Some(Phase::Middlegame),
        "endgame" => Some(Phase::Endgame),
        _ => None,
    })
}

/// Phase from material, after the rule Lichess uses to divide a game
/// (scalachess `Divider`): at most 6 knights, bishops, rooks and queens in
/// all is an endgame; at most 10, or a back rank with fewer than 4 of its
/// own pieces left (pieces developed), is a middlegame; otherwise opening.
/// Lichess also looks at pawn "mixedness", which needs no more than the
/// board but is left out here: it only moves a few openings to middlegame.
pub(crate) fn phase_from_material(position: &Chess) -> Phase {
    let board = position.board();
    let majors_and_minors =
        (board.knights() | board.bishops() | board.rooks() | board.queens()).count();
    if majors_and_minors <= 6 {
        return Phase::Endgame;
    }
    let white_back = (board.by_color(Color::White) & Bitboard::from_rank(Rank::First)).count();
    let black_back = (board.by_color(Color::Black) & Bitboard::from_rank(Rank::Eighth)).count();
    if majors_and_minors <= 10 || white_back < 4 || black_back < 4 {
        Phase::Middlegame
    } else {
        Phase::Opening
    }
}

// ---- Source game --------------------------------------------------------

/// Splits a Lichess game URL into game id and ply.
pub(crate) fn parse_game_url(url: &str) -> Option<(String, Option<u32>)> {
    game_url_parts(url).map(|(id, ply)| (id.to_string(), ply))
}

/// [`parse_game_url`] without allocating: the 8-character game id as a
/// slice of `url`.
pub(crate) fn game_url_parts(url: &str) -> Option<(&str, Option<u32>)> {
    let rest = url
        .strip_prefix("https://lichess.org/")
        .or_else(|| url.strip_prefix("http://lichess.org/"))?;
    let (path, fragment) = match rest.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (rest, None),
    };
    let id = path.split('/').next()?;
    if id.len() < 8 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let ply = fragment.and_then(|f| f.parse().ok());
    // Game ids are 8 characters; longer ones carry the player's 4-character
    // suffix (`/abcdefgh1234`), which is not part of the game id.
    Some((&id[..8], ply))
}

impl Puzzle {
    /// Game id and ply from a Lichess game URL such as
    /// `https://lichess.org/787zsVup/black#48` (ply 48). `None` when the URL
    /// is not of that shape.
    pub fn game_id_and_ply(&self) -> Option<(String, Option<u32>)> {
        parse_game_url(&self.game_url)
    }

    /// The source game: the `GameId` column (the games ingest and the
    /// miner set it), else the id in the game URL.
    pub fn game_id(&self) -> Option<String> {
        match self.get(Column::GameId).map(str::trim) {
            Some(id) if !id.is_empty() => Some(id.to_string()),
            _ => parse_game_url(&self.game_url).map(|(id, _)| id),
        }
    }
}

// ---- Where the puzzle and its rating come from --------------------------

/// Where a puzzle's rating comes from (the `RatingSource` column `rate`
/// writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RatingSource {
    /// Lichess's players rated it ([`has_lichess_rating`]).
    Lichess,
    /// puzzleforge's rating model estimated it.
    Estimated,
}

impl RatingSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RatingSource::Lichess => LICHESS,
            RatingSource::Estimated => "estimated",
        }
    }
}

/// A puzzle that already carries a rating from human plays on Lichess.
pub fn has_lichess_rating(puzzle: &Puzzle) -> bool {
    puzzle.rating.is_some() && puzzle.nb_plays.is_some_and(|n| n > 0)
}

impl Puzzle {
    /// A column's value trimmed, `None` when absent or empty.
    fn filled(&self, column: Column) -> Option<String> {
        self.get(column)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    /// Which stage or source made the puzzle: its `Source` column (every
    /// stage that makes puzzles sets it), else `lichess` for a puzzle whose
    /// game URL is a Lichess game's, else empty.
    pub(crate) fn source(&self) -> String {
        self.filled(Column::Source)
            .or_else(|| parse_game_url(&self.game_url).map(|_| LICHESS.to_string()))
            .unwrap_or_default()
    }

    /// Where the rating comes from: the `RatingSource` column `rate`
    /// writes, else `lichess` for a Lichess puzzle that skipped `rate` (it
    /// carries Lichess's own rating), else empty.
    pub(crate) fn rating_source(&self) -> String {
        self.filled(Column::RatingSource)
            .or_else(|| (self.source() == LICHESS).then(|| LICHESS.to_string()))
            .unwrap_or_default()
    }
}

// ---- The Lichess columns of a puzzle not from Lichess -------------------

/// What a puzzle that never was on Lichess (one puzzleforge mined) holds in
/// the Lichess columns Lichess always fills. The Lichess format, and
/// `ingest puzzles` reading it, wants a number in each; a generated puzzle
/// says it is generated in its own columns (`Source`, `RatingSource`), not
/// by leaving these empty.
pub(crate) mod lichess_defaults {
    /// Lichess's popularity is its players' vote balance, -100 to 100: no
    /// one has voted on a puzzle no one has played, so it stands at 0.
    pub(crate) const POPULARITY: i32 = 0;
    /// No one has played it on Lichess.
    pub(crate) const NB_PLAYS: i32 = 0;
    /// `rate` gives an estimated rating its model's deviation (the
    /// held-out error for the puzzle's solver length); a rating that comes
    /// without one gets 500, the widest deviation in the Lichess dump,
    /// which Lichess shows for a rating few plays support.
    pub(crate) const RATING_DEVIATION: i32 = 500;
}

/// Fills the Lichess columns a puzzle not from Lichess lacks
/// ([`lichess_defaults`]); a value already there stays.
pub(crate) fn fill_lichess_defaults(puzzle: &mut Puzzle) {
    puzzle
        .popularity
        .get_or_insert(lichess_defaults::POPULARITY);
    puzzle.nb_plays.get_or_insert(lichess_defaults::NB_PLAYS);
    puzzle
        .rating_deviation
        .get_or_insert(lichess_defaults::RATING_DEVIATION);
}

// ---- The derived columns at ingest --------------------------------------

/// The derived fields of one validated puzzle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedFields {
    pub num_moves: usize,
    /// The final position is checkmate.
    pub mate: bool,
    /// See [`mate_check`].
    pub mate_check: &'static str,
    /// The rating the bins are computed from.
    pub rating: Option<i32>,
    pub phase: Phase,
    /// Game id (8 ASCII characters) and ply from the GameUrl (see
    /// [`parse_game_url`]), held inline: the ingest derives one per row and
    /// allocates nothing for it.
    pub game: Option<([u8; 8], Option<u32>)>,
}

impl DerivedFields {
    /// Derives every field from the played line and the puzzle's cells.
    pub fn new<'a>(
        line: &PuzzleLine,
        rating: Option<i32>,
        themes: impl IntoIterator<Item = &'a str> + Clone,
        game_url: &str,
    ) -> Self {
        let has_themes = themes.clone().into_iter().next().is_some();
        let themes_mate = mate_from_themes(themes.clone());
        let ends_in_checkmate = line.ends_in_checkmate();
        Self {
            num_moves: line.solver_moves(),
            mate: ends_in_checkmate,
            mate_check: mate_check(has_themes, themes_mate, ends_in_checkmate),
            rating,
            phase: phase_from_themes(themes).unwrap_or_else(|| phase_from_material(line.start())),
            game: game_url_parts(game_url).and_then(|(id, ply)| {
                let id: [u8; 8] = id.as_bytes().try_into().ok()?;
                Some((id, ply))
            }),
        }
    }

    /// True for the columns [`DerivedFields::write`] fills: every one of
    /// [`columns::DERIVED`] but `Source`, which the stage sets.
    pub(crate) fn fills(column: Column) -> bool {
        column != Column::Source && columns::DERIVED.contains(&column)
    }

    /// Appends one derived value to `out`, in place: the ingest's hot loop
    /// allocates nothing here. Appends nothing for a column it does not
    /// [fill](DerivedFields::fills).
    pub fn write(&self, column: Column, out: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        match column {
            Column::NumMoves => out.extend_from_slice(digits.format(self.num_moves).as_bytes()),
            Column::Mate => out.extend_from_slice(mate_cell(self.mate).as_bytes()),
            Column::MateCheck => out.extend_from_slice(self.mate_check.as_bytes()),
            Column::RatingBin | Column::RatingBin200 => {
                if let Some(r) = self.rating {
                    let width = if column == Column::RatingBin {
                        INGEST_BIN_WIDTH
                    } else {
                        INGEST_BIN200_WIDTH
                    };
                    let (lower, upper) = rating_bin_edges(r, width);
                    write_rating_bin_label(lower, upper, out);
                }
            }
            Column::Phase => out.extend_from_slice(self.phase.as_str().as_bytes()),
            Column::GameId => {
                if let Some((id, _)) = &self.game {
                    out.extend_from_slice(id);
                }
            }
            Column::Ply => {
                if let Some((_, Some(ply))) = &self.game {
                    out.extend_from_slice(digits.format(*ply).as_bytes());
                }
            }
            _ => {}
        }
    }

    /// The value of a derived column as written to CSV; `None` for a
    /// column it does not [fill](DerivedFields::fills).
    pub fn column(&self, column: Column) -> Option<String> {
        if !Self::fills(column) {
            return None;
        }
        let mut out = Vec::new();
        self.write(column, &mut out);
        Some(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Writes the derived columns into the puzzle's extra columns (replacing
/// values already there) and sets `Source` to `source` unless it is already
/// set.
pub(crate) fn apply_derived(puzzle: &mut Puzzle, derived: &DerivedFields, source: &str) {
    for column in columns::DERIVED {
        if let Some(value) = derived.column(column) {
            puzzle.set(column, value);
        }
    }
    if puzzle.get(Column::Source).is_none_or(str::is_empty) {
        puzzle.set(Column::Source, source);
    }
}

/// The `Source` cell `ingest puzzles` writes: the input's own (trimmed)
/// when it has one, else `lichess`.
pub(crate) fn source_cell(input: &[u8]) -> &[u8] {
    let input = input.trim_ascii();
    if input.is_empty() {
        LICHESS.as_bytes()
    } else {
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rating_bins_are_right_closed_like_pandas() {
        assert_eq!(rating_bin(1950, 100), "(1900, 2000]");
        assert_eq!(rating_bin(2000, 100), "(1900, 2000]");
        assert_eq!(rating_bin(2001, 100), "(2000, 2100]");
        assert_eq!(rating_bin(459, 100), "(400, 500]");
        assert_eq!(rating_bin(1999, 200), "(1800, 2000]");
        assert_eq!(rating_bin(-5, 100), "(-100, 0]");
    }

    #[test]
    fn mate_line_is_checkmate_and_material_phase() {
        // Scholar's mate pattern: black blunders, white mates.
        let line = PuzzleLine::parse(
            "r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 3 3",
            &["g8f6", "h5f7"],
        )
        .unwrap();
        assert!(line.ends_in_checkmate());
        assert_eq!(line.plies(), 2);
        assert_eq!(phase_from_material(line.start()), Phase::Opening);
        let derived = DerivedFields::new(&line, Some(600), ["mate", "mateIn1"], "");
        assert_eq!(derived.mate_check, "agree");
        assert_eq!(derived.phase, Phase::Opening);
        assert_eq!(
            derived.column(Column::RatingBin).as_deref(),
            Some("(500, 600]")
        );
        assert_eq!(derived.column(Column::Source), None);
    }

    #[test]
    fn a_mined_line_counts_the_solver_moves_of_its_puzzle() {
        assert_eq!(solver_moves_from_solver_move(1), 1);
        assert_eq!(solver_moves_from_solver_move(3), 2);
        assert_eq!(solver_moves(4), 2);
    }

    #[test]
    fn mate_reads_the_column_before_the_themes() {
        let mut puzzle = Puzzle {
            themes: vec!["mateIn2".into()],
            ..Puzzle::default()
        };
        assert!(puzzle.is_mate());
        puzzle.set(Column::Mate, "False");
        assert!(!puzzle.is_mate());
        puzzle.set(Column::Mate, " 1 ");
        assert!(puzzle.is_mate());
        puzzle.set(Column::Mate, "");
        assert!(puzzle.is_mate(), "an empty cell falls back to the themes");
    }

    #[test]
    fn game_and_sources_read_the_columns_then_the_url() {
        let mut puzzle = Puzzle {
            game_url: "https://lichess.org/787zsVup/black#48".into(),
            ..Puzzle::default()
        };
        assert_eq!(puzzle.game_id().as_deref(), Some("787zsVup"));
        assert_eq!(puzzle.source(), "lichess");
        assert_eq!(puzzle.rating_source(), "lichess");
        puzzle.set(Column::GameId, "selfplay-7-3");
        puzzle.set(Column::Source, "selfplay");
        assert_eq!(puzzle.game_id().as_deref(), Some("selfplay-7-3"));
        assert_eq!(puzzle.rating_source(), "");
        puzzle.set(Column::RatingSource, RatingSource::Estimated.as_str());
        assert_eq!(puzzle.rating_source(), "estimated");
        assert_eq!(source_cell(b" "), b"lichess");
        assert_eq!(source_cell(b" selfplay "), b"selfplay");
    }
}

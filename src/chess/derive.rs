//! Fields derived from a puzzle, shared by every stage that produces puzzles
//! (Lichess ingest, the self-play miner, releases), so one puzzle gets the
//! same `NumMoves`, `Mate`, `RatingBin`, `Phase`, ... whichever stage made it.
//!
//! The line itself is read by [`crate::chess::line::PuzzleLine`]; the
//! columns are [`crate::chess::columns::DERIVED`].

use shakmaty::{Bitboard, Chess, Color, Position, Rank};

use crate::chess::columns::{self, Column};
use crate::chess::line::PuzzleLine;
use crate::chess::record::Puzzle;

/// The rating deviation taken for a puzzle without one: a typical Lichess
/// puzzle's (the puzzle rating's fit and the rating model's calibration
/// both read it).
pub(crate) const TYPICAL_RATING_DEVIATION: f64 = 90.0;

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

/// Number of solver moves in a line of `plies` plies.
pub(crate) fn num_moves(plies: usize) -> usize {
    plies / 2
}

/// True when the themes mark a mating puzzle (`mate`, `mateIn1`, ...).
pub(crate) fn mate_from_themes<'a>(themes: impl IntoIterator<Item = &'a str>) -> bool {
    themes
        .into_iter()
        .any(|t| t == "mate" || t.starts_with("mateIn"))
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

/// The rating bin of `width` points as pandas writes a right-closed
/// interval: 1950 with width 100 is `(1900, 2000]`, 2000 is `(1900, 2000]`.
pub fn rating_bin(rating: i32, width: i32) -> String {
    let (lower, upper) = rating_bin_edges(rating, width);
    rating_bin_label(lower, upper)
}

/// `(lo, hi]` written as pandas writes an interval (the APO files' format).
pub fn rating_bin_label(lower: i32, upper: i32) -> String {
    format!("({lower}, {upper}]")
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
    /// [`crate::chess::record::parse_game_url`]), held inline: the ingest derives
    /// one per row and allocates nothing for it.
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
            num_moves: num_moves(line.plies()),
            mate: ends_in_checkmate,
            mate_check: mate_check(has_themes, themes_mate, ends_in_checkmate),
            rating,
            phase: phase_from_themes(themes).unwrap_or_else(|| phase_from_material(line.start())),
            game: crate::chess::record::game_url_parts(game_url).and_then(|(id, ply)| {
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
            Column::Mate => out.extend_from_slice(if self.mate { b"True" } else { b"False" }),
            Column::MateCheck => out.extend_from_slice(self.mate_check.as_bytes()),
            Column::RatingBin | Column::RatingBin200 => {
                if let Some(r) = self.rating {
                    let width = if column == Column::RatingBin {
                        100
                    } else {
                        200
                    };
                    let (lower, upper) = rating_bin_edges(r, width);
                    out.push(b'(');
                    out.extend_from_slice(digits.format(lower).as_bytes());
                    out.extend_from_slice(b", ");
                    out.extend_from_slice(digits.format(upper).as_bytes());
                    out.push(b']');
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
/// values already there) and sets `Source` unless it is already set.
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
}

//! Reading PGN games for every stage that takes games as input: Lichess
//! game dumps, self-play files, any PGN a user brings.
//!
//! [`PgnGames`] streams a PGN text game by game with pgn-reader. For each
//! game it collects the tags, replays the mainline with shakmaty (so every
//! move is known to be legal), and reads the `[%eval ...]` and `[%clk ...]`
//! commands Lichess writes in the comment after each move. Variations are
//! skipped. A game that cannot be read (illegal move, malformed
//! annotation, cut off before its result) comes back as
//! [`GameItem::Invalid`] with a reason, and reading goes on with the next
//! game; only a failure of the underlying stream (a truncated zstd frame, a
//! disk error) ends the iteration with a [`PgnReadError`].
//!
//! A tag filter, run after the tags and before the movetext, lets a caller
//! drop games it does not want without paying for their moves.

use pgn_reader::{Nag, Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position};
use std::fmt;
use std::io::{self, Read};
use std::ops::ControlFlow;

use crate::chess::wincalc::Eval;

/// The tags of one game, in the order they appear.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tags {
    entries: Vec<(String, String)>,
}

impl Tags {
    /// The value of a tag, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// All tags in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One mainline move with the annotations that followed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// The move as written.
    pub san: SanPlus,
    /// The move, checked legal in the position before it.
    pub mv: Move,
    /// `[%eval]` after the move, from White's point of view.
    pub eval: Option<Eval>,
    /// `[%clk]` after the move: the mover's remaining time in milliseconds.
    pub clock_ms: Option<u64>,
    /// The last move annotation glyph (`?` is 2, `??` is 4).
    pub nag: Option<Nag>,
}

/// A game read in full.
#[derive(Clone, Debug)]
pub struct GameRecord {
    /// 1-based position of the game in the input.
    pub number: u64,
    pub tags: Tags,
    /// The starting position (standard, or from the `FEN` tag).
    pub initial: Chess,
    /// The mainline, in order; ply `k` (1-based) is `moves[k - 1]`.
    pub moves: Vec<PlayedMove>,
    /// The position after the last move.
    pub last: Chess,
    /// The game termination marker (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub outcome: Outcome,
}

impl GameRecord {
    /// True when at least one move carries an `[%eval]`.
    pub(crate) fn has_evals(&self) -> bool {
        self.moves.iter().any(|m| m.eval.is_some())
    }

    /// The mainline replayed: for each ply (1-based), the position before
    /// the move and the move.
    pub fn plies(&self) -> Plies<'_> {
        Plies {
            position: self.initial.clone(),
            moves: self.moves.iter(),
            ply: 0,
        }
    }
}

/// Iterator over a game's plies; see [`GameRecord::plies`].
#[derive(Debug)]
pub struct Plies<'a> {
    position: Chess,
    moves: std::slice::Iter<'a, PlayedMove>,
    ply: u32,
}

/// One step of [`Plies`].
#[derive(Debug)]
pub struct Ply<'a> {
    /// 1-based ply number of the move.
    pub ply: u32,
    /// The position before the move.
    pub before: Chess,
    pub played: &'a PlayedMove,
}

impl Ply<'_> {
    /// The position after the move.
    pub fn after(&self) -> Chess {
        let mut position = self.before.clone();
        position.play_unchecked(self.played.mv);
        position
    }

    /// The side that played the move.
    pub(crate) fn mover(&self) -> Color {
        self.before.turn()
    }
}

impl<'a> Iterator for Plies<'a> {
    type Item = Ply<'a>;

    fn next(&mut self) -> Option<Ply<'a>> {
        let played = self.moves.next()?;
        self.ply += 1;
        let before = self.position.clone();
        self.position.play_unchecked(played.mv);
        Some(Ply {
            ply: self.ply,
            before,
            played,
        })
    }
}

/// A game that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidGame {
    /// 1-based position of the game in the input.
    pub number: u64,
    /// Short reason used for counting: `illegal_san`, `truncated`,
    /// `bad_tag`, `bad_eval`, `bad_fen`, `moves_after_result`, `garbage`, ...
    pub reason: &'static str,
    /// What was wrong, for a person.
    pub detail: String,
    /// The game's `Site` tag, when it was read, to find the game.
    pub site: Option<String>,
}

impl fmt::Display for InvalidGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "game {}", self.number)?;
        if let Some(site) = &self.site {
            write!(f, " ({site})")?;
        }
        write!(f, ": {}: {}", self.reason, self.detail)
    }
}

/// Why a tag filter turned a game down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The game is fine but not wanted (reason for counting).
    Filtered(&'static str),
    /// A tag the caller needs is malformed (reason, detail).
    Invalid(&'static str, String),
}

/// What reading one game produced.
#[derive(Clone, Debug)]
pub enum GameItem {
    Game(Box<GameRecord>),
    /// Turned down by the variant check or the tag filter.
    Filtered {
        number: u64,
        reason: &'static str,
    },
    Invalid(InvalidGame),
}

/// The input stream itself failed: nothing after this point can be read.
#[derive(Debug)]
pub struct PgnReadError {
    /// Games read (in any way) before the failure.
    pub games_read: u64,
    pub error: io::Error,
}

impl fmt::Display for PgnReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reading failed after {} games: {}",
            self.games_read, self.error
        )
    }
}

impl std::error::Error for PgnReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Marks an I/O error as coming from the input stream, not from the PGN
/// parser, so the two can be told apart after pgn-reader passes them on.
#[derive(Debug)]
struct StreamError(io::Error);

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StreamError {}

struct MarkStreamErrors<R>(R);

impl<R: Read> Read for MarkStreamErrors<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted {
                e
            } else {
                io::Error::new(e.kind(), StreamError(e))
            }
        })
    }
}

fn is_stream_error(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<StreamError>())
}

/// A tag filter that keeps every game.
pub(crate) fn keep_all(_tags: &Tags) -> Result<(), Rejection> {
    Ok(())
}

/// Longest comment text kept for annotation parsing; longer comments are
/// prose, and keeping them whole would let garbage input grow memory.
const MAX_COMMENT_BYTES: usize = 4096;

/// Longest tag line read whole (pgn-reader's default is 255 bytes).
const MAX_TAG_LINE_BYTES: usize = 8192;

/// Streams games from PGN text. See the module documentation.
pub struct PgnGames<R: Read, F> {
    reader: Reader<MarkStreamErrors<R>>,
    visitor: GameVisitor<F>,
    games_read: u64,
    /// After a tag line the parser gave up on, the rest of that game would
    /// come back as a game of its own; it is dropped instead.
    drop_continuation: bool,
    finished: bool,
}

impl<R: Read> PgnGames<R, fn(&Tags) -> Result<(), Rejection>> {
    /// Reads every game.
    pub fn new(reader: R) -> Self {
        PgnGames::with_filter(reader, keep_all)
    }
}

impl<R: Read, F: FnMut(&Tags) -> Result<(), Rejection>> PgnGames<R, F> {
    /// Reads the games `filter` accepts; the others come back as
    /// [`GameItem::Filtered`] or [`GameItem::Invalid`] without their moves
    /// being replayed.
    pub(crate) fn with_filter(reader: R, filter: F) -> Self {
        PgnGames {
            // Tag lines up to 8 KiB: a game grown from a human game carries
            // its source game's moves in one tag (`SourceMoves`).
            reader: Reader::build(MarkStreamErrors(reader))
                .set_supported_tag_line_length(MAX_TAG_LINE_BYTES)
                .finish(),
            visitor: GameVisitor {
                filter,
                number: 0,
                pending_comment: Vec::new(),
                require_evals: false,
            },
            games_read: 0,
            drop_continuation: false,
            finished: false,
        }
    }

    /// With `true`, a game without any `[%eval]` comes back as
    /// [`GameItem::Filtered`] with reason `no_eval`, and its moves are only
    /// parsed, not replayed (so an illegal move in such a game goes
    /// unnoticed). Replay starts at the first evaluation: most games of a
    /// Lichess dump were never analysed, and skipping their replay makes
    /// reading a dump several times faster.
    pub(crate) fn require_evals(mut self, require: bool) -> Self {
        self.visitor.require_evals = require;
        self
    }

    /// Games returned so far.
    pub fn games_read(&self) -> u64 {
        self.games_read
    }
}

impl<R: Read, F: FnMut(&Tags) -> Result<(), Rejection>> Iterator for PgnGames<R, F> {
    type Item = Result<GameItem, PgnReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.finished {
            self.visitor.number = self.games_read + 1;
            self.visitor.pending_comment.clear();
            let drop_this = std::mem::take(&mut self.drop_continuation);
            match self.reader.read_game(&mut self.visitor) {
                Ok(None) => self.finished = true,
                Ok(Some(_)) if drop_this => {}
                Ok(Some(item)) => {
                    self.games_read += 1;
                    return Some(Ok(item));
                }
                Err(error) if is_stream_error(&error) => {
                    self.finished = true;
                    return Some(Err(PgnReadError {
                        games_read: self.games_read,
                        error,
                    }));
                }
                Err(error) => {
                    // pgn-reader gives up on a tag line it cannot end or a
                    // comment still open at the end of the input; both mean
                    // this game is damaged, and the reader resumes after it.
                    let message = error.to_string();
                    let reason = if message.contains("comment") {
                        "truncated"
                    } else {
                        "bad_tag"
                    };
                    self.drop_continuation = reason == "bad_tag";
                    self.games_read += 1;
                    return Some(Ok(GameItem::Invalid(InvalidGame {
                        number: self.games_read,
                        reason,
                        detail: message,
                        site: None,
                    })));
                }
            }
        }
        None
    }
}

struct GameVisitor<F> {
    filter: F,
    number: u64,
    pending_comment: Vec<u8>,
    require_evals: bool,
}

struct TagsState {
    tags: Tags,
    error: Option<(&'static str, String)>,
}

struct MovetextState {
    tags: Tags,
    initial: Chess,
    position: Chess,
    moves: Vec<PlayedMove>,
    outcome: Option<Outcome>,
    /// Moves read but not yet replayed, while waiting for a first
    /// evaluation (see [`PgnGames::require_evals`]).
    deferred: Vec<DeferredMove>,
    seen_eval: bool,
}

struct DeferredMove {
    san: SanPlus,
    eval: Option<Eval>,
    clock_ms: Option<u64>,
    nag: Option<Nag>,
}

impl MovetextState {
    /// Checks and plays one move.
    fn play(
        &mut self,
        san: SanPlus,
        eval: Option<Eval>,
        clock_ms: Option<u64>,
        nag: Option<Nag>,
    ) -> Result<(), String> {
        match san.san.to_move(&self.position) {
            Ok(mv) => {
                self.position.play_unchecked(mv);
                self.moves.push(PlayedMove {
                    san,
                    mv,
                    eval,
                    clock_ms,
                    nag,
                });
                Ok(())
            }
            Err(error) => Err(format!(
                "ply {}: {san} is {error} in {}",
                self.moves.len() + 1,
                Fen::from_position(&self.position, EnPassantMode::Legal)
            )),
        }
    }

    /// Replays the moves held back so far.
    fn play_deferred(&mut self) -> Result<(), String> {
        for pending in std::mem::take(&mut self.deferred) {
            self.play(pending.san, pending.eval, pending.clock_ms, pending.nag)?;
        }
        Ok(())
    }
}

impl<F> GameVisitor<F> {
    fn invalid(&self, tags: &Tags, reason: &'static str, detail: String) -> GameItem {
        GameItem::Invalid(InvalidGame {
            number: self.number,
            reason,
            detail,
            site: tags.get("Site").map(str::to_string),
        })
    }
}

/// A tag value as text: UTF-8 when it is, else Latin-1 (ISO 8859-1, each
/// byte its own code point), the encoding of older PGN collections, whose
/// accented player names would otherwise come out as replacement marks.
fn decode_tag_value(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn is_standard_variant(variant: &str) -> bool {
    let variant = variant.trim();
    variant.is_empty()
        || variant.eq_ignore_ascii_case("standard")
        || variant.eq_ignore_ascii_case("chess")
        || variant.eq_ignore_ascii_case("from position")
}

/// Applies a `[%eval ...]` / `[%clk ...]` command found in a comment.
fn read_commands(
    comment: &[u8],
    eval: &mut Option<Eval>,
    clock_ms: &mut Option<u64>,
) -> Result<(), String> {
    let mut rest = comment;
    while let Some(start) = rest.windows(2).position(|w| w == b"[%") {
        let after = &rest[start + 2..];
        let Some(end) = after.iter().position(|&b| b == b']') else {
            break;
        };
        let command = &after[..end];
        rest = &after[end + 1..];
        // Commands are ASCII; one that is not UTF-8 is none we read.
        let Ok(text) = std::str::from_utf8(command) else {
            continue;
        };
        let mut parts = text.trim().splitn(2, char::is_whitespace);
        let name = parts.next().unwrap_or("");
        let value = parts.next().unwrap_or("").trim();
        match name {
            "eval" => {
                *eval = Some(Eval::parse_pgn(value).ok_or_else(|| format!("bad [%eval {value}]"))?);
            }
            "clk" => {
                *clock_ms = Some(parse_clock(value).ok_or_else(|| format!("bad [%clk {value}]"))?);
            }
            _ => {}
        }
    }
    Ok(())
}

/// `h:mm:ss` (seconds may carry decimals) in milliseconds.
fn parse_clock(text: &str) -> Option<u64> {
    let mut fields = text.split(':');
    let hours: u64 = fields.next()?.trim().parse().ok()?;
    let minutes: u64 = fields.next()?.parse().ok()?;
    let seconds: f64 = fields.next()?.parse().ok()?;
    if fields.next().is_some() || minutes >= 60 || !(0.0..60.0).contains(&seconds) {
        return None;
    }
    let millis = (seconds * 1000.0).round() as u64;
    hours
        .checked_mul(3_600_000)?
        .checked_add(minutes * 60_000)?
        .checked_add(millis)
}

impl<F: FnMut(&Tags) -> Result<(), Rejection>> Visitor for GameVisitor<F> {
    type Tags = TagsState;
    type Movetext = MovetextState;
    type Output = GameItem;

    fn begin_tags(&mut self) -> ControlFlow<GameItem, TagsState> {
        ControlFlow::Continue(TagsState {
            tags: Tags::default(),
            error: None,
        })
    }

    fn tag(
        &mut self,
        state: &mut TagsState,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<GameItem> {
        if state.error.is_some() {
            return ControlFlow::Continue(());
        }
        let valid_name = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        if !valid_name {
            state.error = Some((
                "bad_tag",
                format!("malformed tag name {:?}", String::from_utf8_lossy(name)),
            ));
            return ControlFlow::Continue(());
        }
        // Tag names were just checked to be ASCII.
        let name = String::from_utf8_lossy(name).into_owned();
        if state.tags.get(&name).is_some() {
            // Two games' tags run together: the first one lost its movetext.
            state.error = Some((
                "truncated",
                format!("tag {name} appears twice: a game without moves precedes this one"),
            ));
            return ControlFlow::Continue(());
        }
        let value = decode_tag_value(&value.decode());
        state.tags.entries.push((name, value));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, state: TagsState) -> ControlFlow<GameItem, MovetextState> {
        let tags = state.tags;
        if let Some((reason, detail)) = state.error {
            return ControlFlow::Break(self.invalid(&tags, reason, detail));
        }
        if !tags.get("Variant").is_none_or(is_standard_variant) {
            return ControlFlow::Break(GameItem::Filtered {
                number: self.number,
                reason: "variant",
            });
        }
        match (self.filter)(&tags) {
            Ok(()) => {}
            Err(Rejection::Filtered(reason)) => {
                return ControlFlow::Break(GameItem::Filtered {
                    number: self.number,
                    reason,
                });
            }
            Err(Rejection::Invalid(reason, detail)) => {
                return ControlFlow::Break(self.invalid(&tags, reason, detail));
            }
        }
        let initial = match tags.get("FEN") {
            None => Chess::default(),
            Some(text) => {
                let parsed = Fen::from_ascii(text.trim().as_bytes())
                    .map_err(|e| e.to_string())
                    .and_then(|fen| {
                        fen.into_position::<Chess>(CastlingMode::Standard)
                            .map_err(|e| e.to_string())
                    });
                match parsed {
                    Ok(position) => position,
                    Err(error) => {
                        let detail = format!("FEN tag {text:?}: {error}");
                        return ControlFlow::Break(self.invalid(&tags, "bad_fen", detail));
                    }
                }
            }
        };
        ControlFlow::Continue(MovetextState {
            tags,
            position: initial.clone(),
            initial,
            moves: Vec::with_capacity(128),
            outcome: None,
            deferred: Vec::new(),
            seen_eval: false,
        })
    }

    fn san(&mut self, state: &mut MovetextState, san_plus: SanPlus) -> ControlFlow<GameItem> {
        if state.outcome.is_some() {
            let detail = format!("move {san_plus} after the result");
            return ControlFlow::Break(self.invalid(&state.tags, "moves_after_result", detail));
        }
        if self.require_evals && !state.seen_eval {
            state.deferred.push(DeferredMove {
                san: san_plus,
                eval: None,
                clock_ms: None,
                nag: None,
            });
            return ControlFlow::Continue(());
        }
        match state.play(san_plus, None, None, None) {
            Ok(()) => ControlFlow::Continue(()),
            Err(detail) => ControlFlow::Break(self.invalid(&state.tags, "illegal_san", detail)),
        }
    }

    fn nag(&mut self, state: &mut MovetextState, nag: Nag) -> ControlFlow<GameItem> {
        if let Some(last) = state.deferred.last_mut() {
            last.nag = Some(nag);
        } else if let Some(last) = state.moves.last_mut() {
            last.nag = Some(nag);
        }
        ControlFlow::Continue(())
    }

    fn partial_comment(
        &mut self,
        _state: &mut MovetextState,
        comment: RawComment<'_>,
    ) -> ControlFlow<GameItem> {
        let room = MAX_COMMENT_BYTES.saturating_sub(self.pending_comment.len());
        let bytes = comment.as_bytes();
        self.pending_comment
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        state: &mut MovetextState,
        comment: RawComment<'_>,
    ) -> ControlFlow<GameItem> {
        let whole;
        let text = if self.pending_comment.is_empty() {
            comment.as_bytes()
        } else {
            let mut joined = std::mem::take(&mut self.pending_comment);
            let bytes = comment.as_bytes();
            let room = MAX_COMMENT_BYTES.saturating_sub(joined.len());
            joined.extend_from_slice(&bytes[..bytes.len().min(room)]);
            whole = joined;
            &whole
        };
        let (eval, clock_ms) = if let Some(last) = state.deferred.last_mut() {
            (&mut last.eval, &mut last.clock_ms)
        } else if let Some(last) = state.moves.last_mut() {
            (&mut last.eval, &mut last.clock_ms)
        } else {
            // A comment before the first move is about the game.
            return ControlFlow::Continue(());
        };
        if let Err(detail) = read_commands(text, eval, clock_ms) {
            let ply = state.moves.len() + state.deferred.len();
            let detail = format!("ply {ply}: {detail}");
            return ControlFlow::Break(self.invalid(&state.tags, "bad_eval", detail));
        }
        if !state.seen_eval && eval.is_some() {
            state.seen_eval = true;
            if let Err(detail) = state.play_deferred() {
                return ControlFlow::Break(self.invalid(&state.tags, "illegal_san", detail));
            }
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _state: &mut MovetextState) -> ControlFlow<GameItem, Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn outcome(&mut self, state: &mut MovetextState, outcome: Outcome) -> ControlFlow<GameItem> {
        state.outcome = Some(outcome);
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, state: MovetextState) -> GameItem {
        match state.outcome {
            Some(_) if self.require_evals && !state.seen_eval => GameItem::Filtered {
                number: self.number,
                reason: "no_eval",
            },
            Some(outcome) => GameItem::Game(Box::new(GameRecord {
                number: self.number,
                tags: state.tags,
                initial: state.initial,
                moves: state.moves,
                last: state.position,
                outcome,
            })),
            None if state.tags.is_empty()
                && state.moves.is_empty()
                && state.deferred.is_empty() =>
            {
                self.invalid(
                    &state.tags,
                    "garbage",
                    "text that is neither tags nor moves".to_string(),
                )
            }
            None => {
                let detail = format!(
                    "no result after {} moves: the game is cut off",
                    state.moves.len() + state.deferred.len()
                );
                self.invalid(&state.tags, "truncated", detail)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> Vec<GameItem> {
        PgnGames::new(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    #[test]
    fn reads_moves_evals_clocks_and_skips_variations() {
        let text = "[Site \"x\"]\n\n1. e4 { [%eval 0.24] [%clk 0:05:00] } 1... e5?? { [%eval #-3] } (1... c5 2. Nf3) 2. Nf3 1-0\n";
        let all = items(text);
        assert_eq!(all.len(), 1);
        let GameItem::Game(game) = &all[0] else {
            panic!("{all:?}")
        };
        assert_eq!(game.moves.len(), 3);
        assert_eq!(game.moves[0].eval, Some(Eval::Cp(24)));
        assert_eq!(game.moves[0].clock_ms, Some(300_000));
        assert_eq!(game.moves[1].eval, Some(Eval::Mate(-3)));
        assert_eq!(game.moves[1].nag, Some(Nag::BLUNDER));
        assert_eq!(game.moves[2].san.to_string(), "Nf3");
        assert_eq!(game.tags.get("Site"), Some("x"));
        let plies: Vec<u32> = game.plies().map(|p| p.ply).collect();
        assert_eq!(plies, vec![1, 2, 3]);
    }

    #[test]
    fn bad_games_are_reported_and_reading_goes_on() {
        let text = "[Site \"a\"]\n\n1. e4 e5 2. Bc5 1-0\n\n[Site \"b\"]\n\n1. e4 { [%eval x] } 1-0\n\n[Site \"c\"]\n\n1. d4 d5\n\n[Site \"d\"]\n\n1. d4 1-0\n";
        let reasons: Vec<&str> = items(text)
            .iter()
            .map(|item| match item {
                GameItem::Game(_) => "ok",
                GameItem::Filtered { reason, .. } => reason,
                GameItem::Invalid(invalid) => invalid.reason,
            })
            .collect();
        assert_eq!(reasons, vec!["illegal_san", "bad_eval", "truncated", "ok"]);
    }

    #[test]
    fn games_without_evals_can_be_dropped_unreplayed() {
        let text = "[Site \"a\"]\n\n1. e4 { [%clk 0:01:00] } e5 2. Bc5 1-0\n\n[Site \"b\"]\n\n1. e4?! { [%clk 0:01:00] } e5 { [%eval 0.3] } 2. Nf3 { [%eval 0.2] } 1-0\n\n[Site \"c\"]\n\n1. e4 e5 { [%eval 0.3] } 2. Bc5 1-0\n";
        let all: Vec<GameItem> = PgnGames::new(text.as_bytes())
            .require_evals(true)
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(matches!(
            all[0],
            GameItem::Filtered {
                reason: "no_eval",
                ..
            }
        ));
        let GameItem::Game(game) = &all[1] else {
            panic!("{all:?}")
        };
        assert_eq!(game.moves.len(), 3);
        assert_eq!(game.moves[0].clock_ms, Some(60_000));
        assert_eq!(game.moves[0].nag, Some(Nag::DUBIOUS_MOVE));
        assert_eq!(game.moves[1].eval, Some(Eval::Cp(30)));
        assert!(matches!(&all[2], GameItem::Invalid(g) if g.reason == "illegal_san"));
    }

    #[test]
    fn clock_values() {
        assert_eq!(parse_clock("0:00:05.3"), Some(5300));
        assert_eq!(parse_clock("1:02:03"), Some(3_723_000));
        assert_eq!(parse_clock("0:61:00"), None);
        assert_eq!(parse_clock("x"), None);
    }
}

//! pgn-reader's visitor for one game: it filters on the tags, replays the
//! mainline with shakmaty and reads Lichess's `[%eval]` and `[%clk]`
//! comments. Apart because it is the parser's side of reading, event by
//! event, which the games and the stream need not know.

use pgn_reader::{Nag, Outcome, RawComment, RawTag, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use std::ops::ControlFlow;

use crate::chess::pgn::game::{GameItem, GameRecord, InvalidGame, PlayedMove, Rejection, Tags};
use crate::chess::wincalc::Eval;

/// Longest comment text kept for annotation parsing; longer comments are
/// prose, and keeping them whole would let garbage input grow memory.
const MAX_COMMENT_BYTES: usize = 4096;

/// Builds one game from pgn-reader's events; [`crate::chess::pgn::PgnGames`]
/// drives it game by game.
pub(super) struct GameVisitor<F> {
    pub(super) filter: F,
    /// The game's number in the stream, for its reasons.
    pub(super) number: u64,
    pub(super) pending_comment: Vec<u8>,
    /// See [`crate::chess::pgn::PgnGames::require_evals`].
    pub(super) require_evals: bool,
}

pub(super) struct TagsState {
    tags: Tags,
    error: Option<(&'static str, String)>,
}

pub(super) struct MovetextState {
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

    #[test]
    fn clock_values() {
        assert_eq!(parse_clock("0:00:05.3"), Some(5300));
        assert_eq!(parse_clock("1:02:03"), Some(3_723_000));
        assert_eq!(parse_clock("0:61:00"), None);
        assert_eq!(parse_clock("x"), None);
    }
}

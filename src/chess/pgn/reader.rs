//! [`PgnGames`]: the stream of games over a PGN text, game by game, with
//! the failures of the underlying stream told apart from a bad game.

use pgn_reader::Reader;
use std::fmt;
use std::io::{self, Read};

use crate::chess::pgn::game::{GameItem, InvalidGame, Rejection, Tags};
use crate::chess::pgn::visitor::GameVisitor;

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

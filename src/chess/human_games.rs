//! Human games as a source of starting positions: the games of a PGN file
//! (a master collection, a Lichess monthly dump; `.pgn` or `.pgn.zst`,
//! UTF-8 or Latin-1), or the puzzles of a puzzle file (the Lichess dump:
//! each puzzle's FEN is a position of a real game, its line the moves
//! after it), read once into a compact pool that self-play draws its
//! prefixes from ([`HumanGames`]), and the provenance a game grown from one
//! of them carries ([`SourceGame`]).
//!
//! Apart from [`super::pgn`] because it keeps games, where the reader
//! streams them: a pool holds each usable game's mainline as UCI moves and
//! the few tags provenance needs, nothing else, so that the 144,534 games
//! of the master collection fit in tens of megabytes. A pool stops at
//! `max_games` usable games: a Lichess dump of a hundred million games
//! gives its first `max_games`, in file order, and memory stays bounded.

use anyhow::Result;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Position};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::line::{position_key, read_position, uci_of};
use super::pgn::{GameItem, PgnGames};
use super::record::for_each_row;
use crate::core::error::bad_input;
use crate::core::fileio::{open_input, sha256_content};

/// The tags of a source game a grown game names it by, in this order.
pub const SOURCE_TAGS: [&str; 10] = [
    "Event", "Site", "Date", "Round", "White", "Black", "Result", "WhiteElo", "BlackElo", "ECO",
];

/// One usable game of the pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HumanGame {
    /// 1-based position of the game in the file (every game counts,
    /// unusable ones included), so that a number names the same game
    /// whatever the pool's limits.
    pub number: u64,
    /// The values of [`SOURCE_TAGS`] present, in that order, in one
    /// allocation (name, unit separator, value, record separator...): a
    /// pool of the master collection is a third of the size it is with a
    /// string per tag. Read them with [`HumanGame::tags`].
    tag_text: Box<str>,
    /// The mainline from [`HumanGame::start`].
    pub moves: Box<[UciMove]>,
    /// The FEN the moves start from, for a puzzle (its position before
    /// the opponent's setting move), read once with the pool; `None`: the
    /// standard start.
    pub fen: Option<Box<Fen>>,
}

const UNIT: char = '\u{1f}';
const RECORD: char = '\u{1e}';
const UNIT_STR: &str = "\u{1f}";
const RECORD_STR: &str = "\u{1e}";

impl HumanGame {
    /// The game's [`SOURCE_TAGS`] it has, as (name, value), in that order.
    pub fn tags(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tag_text
            .split_terminator(RECORD)
            .filter_map(|entry| entry.split_once(UNIT))
    }

    /// The value of tag `name`, if the game has it.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The position the moves start from.
    pub fn start(&self) -> Result<Chess> {
        match &self.fen {
            None => Ok(Chess::default()),
            Some(fen) => read_position(fen)
                .map_err(|e| bad_input(format!("source game {}: {e}", self.number))),
        }
    }
}

/// Packs (name, value) tags as [`HumanGame`] keeps them.
fn pack_tags<'a>(tags: impl Iterator<Item = (&'a str, &'a str)>) -> Box<str> {
    let mut tag_text = String::new();
    for (name, value) in tags {
        // A value holding a separator keeps the rest of it.
        let value = value.replace([UNIT, RECORD], " ");
        tag_text.extend([name, UNIT_STR, &value, RECORD_STR]);
    }
    tag_text.into_boxed_str()
}

/// The tags a puzzle start is named by (the puzzle's own columns).
pub const PUZZLE_TAGS: [&str; 4] = ["PuzzleId", "Rating", "GameUrl", "Themes"];

/// Why games of the file are not in the pool, by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolSkips {
    /// Shorter than the pool's `min_plies`.
    pub short: u64,
    /// Starting from a `FEN` tag (prefixes replay from the standard start).
    pub from_position: u64,
    /// Unreadable (an illegal move, a damaged tag) or not standard chess.
    pub invalid: u64,
}

/// The games of one PGN file that self-play may start from.
#[derive(Debug)]
pub struct HumanGames {
    pub path: PathBuf,
    pub games: Vec<HumanGame>,
    /// Games read from the file (usable or not), up to the pool's limit.
    pub read: u64,
    pub skipped: PoolSkips,
}

/// The limits of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolLimits {
    /// A game needs at least this many plies to be in the pool.
    pub min_plies: usize,
    /// Reading stops at this many usable games.
    pub max_games: u64,
}

impl HumanGames {
    /// Reads the pool from `path`, streaming: memory grows with the games
    /// kept, never with the file. A damaged game is counted and skipped;
    /// a file that cannot be read, or holds no usable game, is an error
    /// naming it.
    pub fn load(path: &Path, limits: PoolLimits) -> Result<HumanGames> {
        if is_puzzle_file(path) {
            return Self::load_puzzles(path, limits);
        }
        let input = open_input(path)?;
        let mut pool = HumanGames {
            path: path.to_path_buf(),
            games: Vec::new(),
            read: 0,
            skipped: PoolSkips::default(),
        };
        for item in PgnGames::new(input) {
            if pool.games.len() as u64 >= limits.max_games {
                break;
            }
            let item = item.map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
            pool.read += 1;
            let game = match item {
                GameItem::Game(game) => game,
                GameItem::Filtered { .. } | GameItem::Invalid(_) => {
                    pool.skipped.invalid += 1;
                    continue;
                }
            };
            if game
                .tags
                .get("FEN")
                .is_some_and(|fen| !fen.trim().is_empty())
                && game.initial != Chess::default()
            {
                pool.skipped.from_position += 1;
                continue;
            }
            if game.moves.len() < limits.min_plies {
                pool.skipped.short += 1;
                continue;
            }
            let tag_text = pack_tags(
                SOURCE_TAGS
                    .iter()
                    .filter_map(|name| Some((*name, game.tags.get(name)?))),
            );
            pool.games.push(HumanGame {
                number: game.number,
                tag_text,
                moves: game.moves.iter().map(|m| uci_of(m.mv)).collect(),
                fen: None,
            });
        }
        if pool.games.is_empty() {
            return Err(bad_input(format!(
                "{}: no game of at least {} plies from the standard start ({} read)",
                path.display(),
                limits.min_plies,
                pool.read
            )));
        }
        Ok(pool)
    }

    /// Reads a puzzle file (CSV or JSON Lines, plain or `.zst`) as a pool:
    /// each puzzle is a "game" from its FEN along its line, numbered by its
    /// row (1 = the first puzzle). `min_plies` does not apply (a puzzle's
    /// line is short; a prefix is capped by its length); a row that cannot
    /// be read or replayed, or has fewer than two moves, is counted
    /// invalid and skipped.
    fn load_puzzles(path: &Path, limits: PoolLimits) -> Result<HumanGames> {
        let mut pool = HumanGames {
            path: path.to_path_buf(),
            games: Vec::new(),
            read: 0,
            skipped: PoolSkips::default(),
        };
        for_each_row(path, |(_, row)| {
            if pool.games.len() as u64 >= limits.max_games {
                return Ok(());
            }
            pool.read += 1;
            let number = pool.read;
            let Ok(puzzle) = row else {
                pool.skipped.invalid += 1;
                return Ok(());
            };
            if puzzle.moves.len() < 2 || puzzle.line().is_err() {
                pool.skipped.invalid += 1;
                return Ok(());
            }
            let rating = puzzle.rating.map(|r| r.to_string()).unwrap_or_default();
            let themes = puzzle.themes.join(" ");
            let values = [
                puzzle.id.as_str(),
                rating.as_str(),
                puzzle.game_url.as_str(),
                themes.as_str(),
            ];
            let tag_text = pack_tags(
                PUZZLE_TAGS
                    .iter()
                    .copied()
                    .zip(values)
                    .filter(|(_, value)| !value.is_empty()),
            );
            pool.games.push(HumanGame {
                number,
                tag_text,
                moves: puzzle.moves.clone().into_boxed_slice(),
                fen: Some(Box::new(puzzle.fen.clone())),
            });
            Ok(())
        })?;
        if pool.games.is_empty() {
            return Err(bad_input(format!(
                "{}: no puzzle whose line replays ({} read)",
                path.display(),
                pool.read
            )));
        }
        Ok(pool)
    }
}

/// True when `path` names a puzzle file (`.csv`, `.jsonl`, `.json`, each
/// optionally `.zst`) rather than a PGN.
pub fn is_puzzle_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".zst").unwrap_or(&name);
    [".csv", ".jsonl", ".json"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// A pool with its file's sha256 (of the decompressed text: the same games
/// fetched on two machines with two zstd versions hash alike).
#[derive(Debug)]
pub struct HumanPool {
    pub games: HumanGames,
    pub sha256: String,
}

impl HumanPool {
    /// The pool of `path` under `limits`, read once per process: a run
    /// plays many batches from the same file, and reading the master
    /// collection takes seconds.
    pub fn shared(path: &Path, limits: PoolLimits) -> Result<Arc<HumanPool>> {
        static POOLS: Mutex<Vec<(PathBuf, PoolLimits, Arc<HumanPool>)>> = Mutex::new(Vec::new());
        let mut pools = POOLS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, _, pool)) = pools.iter().find(|(p, l, _)| p == path && *l == limits) {
            return Ok(pool.clone());
        }
        let sha256 = content_sha256(path)?;
        let pool = Arc::new(HumanPool {
            games: HumanGames::load(path, limits)?,
            sha256,
        });
        pools.push((path.to_path_buf(), limits, pool.clone()));
        Ok(pool)
    }
}

/// The sha256 of the human games at `path`, decompressed. Every failure is
/// bad input (exit 2) naming the key and the reason ([`unreadable`]), and
/// a damaged or truncated `.zst` says so.
pub fn content_sha256(path: &Path) -> Result<String> {
    const KEY: &str = "sources.human_games (or a `human` table's `games`)";
    if let Some(why) = unreadable(path) {
        return Err(bad_input(format!("{KEY}: {why}")));
    }
    sha256_content(path).map_err(|e| bad_input(format!("{KEY}: {e:#}")))
}

/// Why the human games at `path` cannot be read, found without reading
/// them, so that `run` can refuse a bad path before its first stage: a
/// missing puzzle file is called one, a missing PGN names the script that
/// fetches the committed config's games, a folder or a FIFO is called what it
/// is. `None` when `path` is a file.
pub fn unreadable(path: &Path) -> Option<String> {
    let missing = std::fs::symlink_metadata(path)
        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        || std::fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    if missing && is_puzzle_file(path) {
        return Some(format!(
            "the puzzle file {} is missing; point the key at a puzzle file that exists (CSV or \
             JSON Lines), or at a PGN of games",
            path.display()
        ));
    }
    if missing {
        return Some(format!(
            "the PGN of human games {} is missing: engines/human-games.sh fetches the one the \
             committed pipeline.toml names (Debian's gnuchess-book source package); or point the \
             key at another PGN of games, or at a puzzle file (CSV or JSON Lines)",
            path.display()
        ));
    }
    crate::core::fileio::require_file(path)
        .err()
        .map(|e| format!("{e:#}"))
}

/// What a game grown from a human game records of it: which game of which
/// file, and the ply the new play starts after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceGame {
    /// sha256 of the file the pool was read from.
    pub file_sha256: String,
    pub game: HumanGame,
    /// Plies of the source game played before the new play (the prefix).
    pub ply: usize,
}

/// The position keys of a game from the standard start, every position
/// from the start to the end: what "a position of the source game" means
/// (the key the miner's dedup and a release's exclusion use, without move
/// counters). Stops at the first illegal move.
pub fn position_keys(moves: &[UciMove]) -> Vec<u64> {
    position_keys_from(Chess::default(), moves)
}

/// [`position_keys`] of moves played from `start` (a puzzle's FEN).
pub fn position_keys_from(start: Chess, moves: &[UciMove]) -> Vec<u64> {
    let mut position = start;
    let mut keys = vec![position_key(&position)];
    for uci in moves {
        let Ok(m) = uci.to_move(&position) else {
            break;
        };
        position.play_unchecked(m);
        keys.push(position_key(&position));
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &[u8]) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text).unwrap();
        file
    }

    const LIMITS: PoolLimits = PoolLimits {
        min_plies: 4,
        max_games: 100,
    };

    /// A Latin-1 name (0xE9, é) reads as its character, not as a
    /// replacement mark; a short game, a game from a FEN and an illegal
    /// one are counted apart and the good games around them are kept.
    #[test]
    fn the_pool_keeps_usable_games_and_counts_the_others() {
        let mut text = Vec::new();
        text.extend_from_slice(b"[White \"R\xe9ti, Richard\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 1-0\n\n");
        text.extend_from_slice(b"[White \"Short\"]\n[Result \"*\"]\n\n1. d4 d5 *\n\n");
        text.extend_from_slice(b"[FEN \"8/8/8/8/8/8/8/K6k w - - 0 1\"]\n[SetUp \"1\"]\n[Result \"*\"]\n\n1. Kb1 Kg1 2. Kc1 Kf1 *\n\n");
        text.extend_from_slice(b"[White \"Illegal\"]\n[Result \"*\"]\n\n1. e4 e5 2. Ke3 Nc6 *\n\n");
        text.extend_from_slice(
            b"[White \"Last\"]\n[Result \"0-1\"]\n\n1. c4 e5 2. g3 Nf6 3. Bg2 d5 0-1\n\n",
        );
        let file = write(&text);
        let pool = HumanGames::load(file.path(), LIMITS).unwrap();
        assert_eq!(pool.read, 5);
        assert_eq!(
            pool.skipped,
            PoolSkips {
                short: 1,
                from_position: 1,
                invalid: 1
            }
        );
        let numbers: Vec<u64> = pool.games.iter().map(|g| g.number).collect();
        assert_eq!(numbers, [1, 5]);
        assert_eq!(pool.games[0].tag("White"), Some("Réti, Richard"));
        assert_eq!(pool.games[0].tags().count(), 3);
        assert_eq!(pool.games[1].tag("ECO"), None);
        assert_eq!(pool.games[1].moves.len(), 6);
    }

    #[test]
    fn a_file_without_usable_games_is_an_error_naming_it() {
        let file = write(b"[White \"Short\"]\n[Result \"*\"]\n\n1. d4 d5 *\n\n");
        let error = HumanGames::load(file.path(), LIMITS).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains(&file.path().display().to_string()),
            "{message}"
        );
        assert!(message.contains("no game of at least 4 plies"), "{message}");
    }

    #[test]
    fn the_pool_stops_at_its_limit() {
        let game = b"[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n";
        let file = write(&game.repeat(10));
        let limits = PoolLimits {
            max_games: 3,
            ..LIMITS
        };
        let pool = HumanGames::load(file.path(), limits).unwrap();
        assert_eq!(pool.games.len(), 3);
        assert_eq!(pool.read, 3);
    }

    /// A puzzle file is a pool too: each puzzle a "game" from its FEN
    /// along its line, numbered by its row; a row whose line does not
    /// replay is counted and skipped, and the keys of its positions start
    /// at its FEN.
    #[test]
    fn a_puzzle_file_is_a_pool_of_games_from_their_fens() {
        let mut file = tempfile::Builder::new().suffix(".csv").tempfile().unwrap();
        use std::io::Write;
        file.write_all(
            b"PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n\
              a1,8/1R2B3/5p2/1k2bP1p/p6r/5K2/8/8 b - - 7 45,b5c4 b7b4 c4d5 b4h4,2100,80,90,100,crushing skewer,https://lichess.org/x,\n\
              bad,8/1R2B3/5p2/1k2bP1p/p6r/5K2/8/8 b - - 7 45,b5c4 b7b4 c4d5 b4h5,2100,80,90,100,crushing,,\n\
              c3,3rk2r/p1p2pp1/1p6/2pQ1b2/2Pn1P2/8/PP1P1KBq/R1B1R3 b - - 3 25,e8f8 d5d8,900,80,90,100,mate,,\n",
        )
        .unwrap();
        assert!(is_puzzle_file(file.path()));
        let pool = HumanGames::load(file.path(), LIMITS).unwrap();
        assert_eq!(pool.read, 3);
        assert_eq!(pool.skipped.invalid, 1);
        let numbers: Vec<u64> = pool.games.iter().map(|g| g.number).collect();
        assert_eq!(numbers, [1, 3]);
        let first = &pool.games[0];
        assert_eq!(first.tag("PuzzleId"), Some("a1"));
        assert_eq!(first.tag("Rating"), Some("2100"));
        assert_eq!(first.tag("Themes"), Some("crushing skewer"));
        assert_eq!(
            first.fen.as_ref().map(ToString::to_string).as_deref(),
            Some("8/1R2B3/5p2/1k2bP1p/p6r/5K2/8/8 b - - 7 45")
        );
        let keys = position_keys_from(first.start().unwrap(), &first.moves);
        assert_eq!(keys.len(), 5);
        assert!(!keys.contains(&position_key(&Chess::default())));
    }

    /// A transposition is one position: 1. Nf3 Nf6 2. Ng1 Ng8 returns to
    /// the start.
    #[test]
    fn position_keys_are_positions_not_plies() {
        let moves: Vec<UciMove> = ["g1f3", "g8f6", "f3g1", "f6g8"]
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
        assert_eq!(position_keys(&moves).len(), 4);
    }
}

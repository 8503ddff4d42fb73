//! Parsing UCI engine output, one line at a time.
//!
//! Strict where a value is promised (`depth x`, `score cp` without a number,
//! `bestmove` without a move are errors) and tolerant elsewhere: an unknown
//! token inside an `info` line is skipped on its own, so the known fields
//! after it are still read; `bestmove (none)` (mated or stalemated position)
//! and blank lines are ordinary lines. A `pv` runs to the end of its line
//! and every token of it must read as a UCI move.

use serde::{Deserialize, Serialize};
use shakmaty::uci::UciMove;
use std::fmt;

/// An evaluation from the side to move's point of view.
///
/// `Mate(n)`: n > 0 the side to move mates in n, n < 0 it is mated in -n,
/// `Mate(0)`: the side to move is checkmated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Score {
    Cp(i32),
    Mate(i32),
}

impl Score {
    /// Epoch's convention: mate in n = 10000 - n, mated in n = -(10000 - n),
    /// else centipawns.
    pub fn to_cp(self) -> i32 {
        match self {
            Score::Cp(cp) => cp,
            Score::Mate(n) if n > 0 => 10000 - n,
            // n <= 0: mated in -n moves.
            Score::Mate(n) => -(10000 + n),
        }
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Score::Cp(cp) => write!(f, "cp {cp}"),
            Score::Mate(n) => write!(f, "mate {n}"),
        }
    }
}

/// Whether a reported score is exact or only a bound (search stopped inside
/// an aspiration window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    #[default]
    Exact,
    /// The true score is at least the reported one.
    Lower,
    /// The true score is at most the reported one.
    Upper,
}

/// One `info` line. Fields the line does not carry are `None` / empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Info {
    pub depth: Option<u32>,
    pub seldepth: Option<u32>,
    pub multipv: Option<u32>,
    pub score: Option<Score>,
    pub bound: Bound,
    pub nodes: Option<u64>,
    pub nps: Option<u64>,
    pub time_ms: Option<u64>,
    pub hashfull: Option<u32>,
    pub tbhits: Option<u64>,
    pub pv: Vec<UciMove>,
    pub wdl: Option<[u32; 3]>,
    pub currmove: Option<String>,
    pub currmovenumber: Option<u32>,
    /// The rest of the line after `string`.
    pub string: Option<String>,
    /// Tokens that were not understood and skipped one by one.
    pub skipped: Vec<String>,
}

/// One line of engine output.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineLine {
    Id {
        key: String,
        value: String,
    },
    UciOk,
    ReadyOk,
    /// The text after `option ` (see [`parse_option`]).
    Option(String),
    Info(Info),
    /// `best` is `None` for `bestmove (none)` or `bestmove 0000`.
    BestMove {
        best: Option<UciMove>,
        ponder: Option<UciMove>,
    },
    Blank,
    /// A line that is no UCI message (e.g. Stockfish's start-up banner).
    Unknown(String),
}

/// A line that claims to be a UCI message but breaks its grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} in engine line {line:?}")]
pub struct UciError {
    pub line: String,
    pub reason: String,
}

fn error(line: &str, reason: impl Into<String>) -> UciError {
    UciError {
        line: line.to_string(),
        reason: reason.into(),
    }
}

/// True for a token shaped like a UCI move: `e2e4`, `e7e8q`, `0000`, or a
/// drop such as `P@e4`.
pub fn is_uci_move(token: &str) -> bool {
    let bytes = token.as_bytes();
    let square =
        |file: u8, rank: u8| (b'a'..=b'h').contains(&file) && (b'1'..=b'8').contains(&rank);
    match bytes {
        b"0000" => true,
        [piece, b'@', f, r] => b"PNBRQK".contains(piece) && square(*f, *r),
        [f1, r1, f2, r2] => square(*f1, *r1) && square(*f2, *r2),
        [f1, r1, f2, r2, promotion] => {
            square(*f1, *r1) && square(*f2, *r2) && b"qrbnk".contains(promotion)
        }
        _ => false,
    }
}

/// Parses one line of engine output (without its line ending).
pub fn parse_line(line: &str) -> Result<EngineLine, UciError> {
    let trimmed = line.trim();
    let mut tokens = trimmed.split_whitespace();
    let Some(first) = tokens.next() else {
        return Ok(EngineLine::Blank);
    };
    match first {
        "uciok" => Ok(EngineLine::UciOk),
        "readyok" => Ok(EngineLine::ReadyOk),
        "id" => {
            let key = tokens
                .next()
                .ok_or_else(|| error(line, "`id` without a key"))?;
            let value = tokens.collect::<Vec<_>>().join(" ");
            Ok(EngineLine::Id {
                key: key.to_string(),
                value,
            })
        }
        "option" => Ok(EngineLine::Option(
            trimmed["option".len()..].trim_start().to_string(),
        )),
        "bestmove" => parse_bestmove(line, tokens),
        "info" => parse_info(line, tokens).map(EngineLine::Info),
        _ => Ok(EngineLine::Unknown(line.to_string())),
    }
}

fn parse_bestmove<'a>(
    line: &str,
    mut tokens: impl Iterator<Item = &'a str>,
) -> Result<EngineLine, UciError> {
    let best = match tokens.next() {
        None => return Err(error(line, "`bestmove` without a move")),
        Some(token) => {
            bestmove_token(token).ok_or_else(|| error(line, format!("bad best move {token:?}")))?
        }
    };
    let ponder = match tokens.next() {
        None => None,
        Some("ponder") => match tokens.next() {
            Some(token) => bestmove_token(token)
                .ok_or_else(|| error(line, format!("bad ponder move {token:?}")))?,
            None => return Err(error(line, "`ponder` without a move")),
        },
        Some(token) => return Err(error(line, format!("unexpected {token:?} after best move"))),
    };
    if let Some(token) = tokens.next() {
        return Err(error(
            line,
            format!("unexpected {token:?} at end of bestmove"),
        ));
    }
    Ok(EngineLine::BestMove { best, ponder })
}

/// A move of a `bestmove` line: `Some(None)` for no move (`(none)`,
/// `0000`), `None` for a token that is not a UCI move.
fn bestmove_token(token: &str) -> Option<Option<UciMove>> {
    match token {
        "(none)" => Some(None),
        _ if is_uci_move(token) => match token.parse::<UciMove>().ok()? {
            UciMove::Null => Some(None),
            mv => Some(Some(mv)),
        },
        _ => None,
    }
}

fn number<T: std::str::FromStr>(line: &str, key: &str, token: Option<&str>) -> Result<T, UciError> {
    let token = token.ok_or_else(|| error(line, format!("`{key}` without a value")))?;
    token
        .parse()
        .map_err(|_| error(line, format!("bad `{key}` value {token:?}")))
}

fn parse_info<'a>(line: &str, tokens: impl Iterator<Item = &'a str>) -> Result<Info, UciError> {
    let mut info = Info::default();
    let mut tokens = tokens.peekable();
    while let Some(key) = tokens.next() {
        match key {
            "depth" => info.depth = Some(number(line, key, tokens.next())?),
            "seldepth" => info.seldepth = Some(number(line, key, tokens.next())?),
            "multipv" => info.multipv = Some(number(line, key, tokens.next())?),
            "nodes" => info.nodes = Some(number(line, key, tokens.next())?),
            "nps" => info.nps = Some(number(line, key, tokens.next())?),
            "time" => info.time_ms = Some(number(line, key, tokens.next())?),
            "hashfull" => info.hashfull = Some(number(line, key, tokens.next())?),
            "tbhits" => info.tbhits = Some(number(line, key, tokens.next())?),
            "currmovenumber" => info.currmovenumber = Some(number(line, key, tokens.next())?),
            // Known fields puzzleforge does not keep: one numeric value each.
            "sbhits" | "cpuload" => {
                number::<u64>(line, key, tokens.next())?;
            }
            "score" => {
                let kind = tokens.next();
                let value: i32 = number(line, "score", tokens.next())?;
                info.score = Some(match kind {
                    Some("cp") => Score::Cp(value),
                    Some("mate") => Score::Mate(value),
                    other => return Err(error(line, format!("bad score kind {other:?}"))),
                });
            }
            // Stockfish prints the bound after `wdl`, so it is a field of its own.
            "lowerbound" => info.bound = Bound::Lower,
            "upperbound" => info.bound = Bound::Upper,
            "wdl" => {
                let win = number(line, key, tokens.next())?;
                let draw = number(line, key, tokens.next())?;
                let loss = number(line, key, tokens.next())?;
                info.wdl = Some([win, draw, loss]);
            }
            "currmove" => {
                let token = tokens.next().unwrap_or_default();
                if !is_uci_move(token) {
                    return Err(error(line, format!("bad currmove {token:?}")));
                }
                info.currmove = Some(token.to_string());
            }
            "pv" => {
                // The line runs to the end, every token a move. Stockfish
                // 15.1 ends a MultiPV line with an empty `pv` when that
                // move's search failed low before it had a line ("...
                // multipv 2 score cp 16 upperbound ... pv "): legal, and the
                // search keeps that rank's last line with moves. A token
                // that is not a move is garbage, never dropped.
                for token in tokens.by_ref() {
                    let mv = token.parse::<UciMove>().map_err(|_| {
                        error(line, format!("`pv` move {token:?} is not a UCI move"))
                    })?;
                    info.pv.push(mv);
                }
            }
            "refutation" | "currline" => {
                // `currline` may start with a CPU number; both carry move lists.
                tokens.next_if(|token| token.parse::<u32>().is_ok());
                while tokens.next_if(|token| is_uci_move(token)).is_some() {}
            }
            "string" => {
                info.string = Some(tokens.by_ref().collect::<Vec<_>>().join(" "));
            }
            other => info.skipped.push(other.to_string()),
        }
    }
    Ok(info)
}

/// A parsed `option` declaration from the `uci` handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UciOption {
    pub name: String,
    pub kind: String,
    /// `None` when the engine declares no default (e.g. a button).
    pub default: Option<String>,
}

/// Parses the text after `option ` (`name <words> type <kind> [default <words>] ...`).
pub fn parse_option(text: &str) -> Result<UciOption, UciError> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let line = format!("option {text}");
    if tokens.first() != Some(&"name") {
        return Err(error(&line, "option without `name`"));
    }
    let type_at = tokens
        .iter()
        .position(|token| *token == "type")
        .ok_or_else(|| error(&line, "option without `type`"))?;
    let name = tokens[1..type_at].join(" ");
    if name.is_empty() {
        return Err(error(&line, "option with an empty name"));
    }
    let kind = tokens
        .get(type_at + 1)
        .ok_or_else(|| error(&line, "`type` without a kind"))?
        .to_string();
    let rest = &tokens[type_at + 2..];
    let default = rest.iter().position(|token| *token == "default").map(|at| {
        rest[at + 1..]
            .iter()
            .take_while(|token| !matches!(**token, "min" | "max" | "var"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    });
    Ok(UciOption {
        name,
        kind,
        default,
    })
}

//! Reading a move out of a model's free-form reply.
//!
//! Models answer in many shapes: a JSON object with a `move` field (the
//! DSPy JSON adapter), prose that ends in `MOVE: e2e4` (the Epoch prompt),
//! or prose that merely mentions moves. The parser looks, in that order,
//! for a JSON `move` field, then a `MOVE:` line, then the last move the text
//! mentions, and accepts SAN or UCI with the usual decorations (`+ # ! ?`,
//! move numbers, `0-0`, any case, code fences).

use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move};

/// Where in the reply the answer was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    JsonField,
    MoveLine,
    LastMention,
}

/// What the parser made of a reply in a given position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A legal move; `text` is the token it was read from.
    Legal {
        uci: String,
        text: String,
        source: AnswerSource,
    },
    /// A move-shaped answer that is not legal in the position.
    Illegal { text: String, source: AnswerSource },
    /// Nothing that reads as a move.
    Unparseable,
}

impl Parsed {
    /// The answer's text as the model wrote it, when there was one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Parsed::Legal { text, .. } | Parsed::Illegal { text, .. } => Some(text),
            Parsed::Unparseable => None,
        }
    }
}

/// Parses `reply` as a move in `position`.
pub fn parse_reply(reply: &str, position: &Chess) -> Parsed {
    let text = strip_code_fences(reply);
    if let Some(value) = json_move_field(&text) {
        let tokens = move_tokens(&value);
        return pick(position, &tokens, AnswerSource::JsonField, Pick::LastLegal);
    }
    if let Some(line) = move_line(&text) {
        let tokens = move_tokens(&line);
        if !tokens.is_empty() {
            return pick(position, &tokens, AnswerSource::MoveLine, Pick::First);
        }
    }
    let tokens = move_tokens(&text);
    pick(
        position,
        &tokens,
        AnswerSource::LastMention,
        Pick::LastLegal,
    )
}

enum Pick {
    /// The first move-shaped token decides (after an explicit `MOVE:`).
    First,
    /// The last token that is a legal move; failing that, the last
    /// move-shaped token, which is then illegal. Prose mentions squares
    /// ("the pawn on d6") that read as pawn moves, so a legal mention
    /// earlier in the text is the better reading of the answer.
    LastLegal,
}

fn pick(position: &Chess, tokens: &[String], source: AnswerSource, how: Pick) -> Parsed {
    let Some(last) = tokens.last() else {
        return Parsed::Unparseable;
    };
    let legal = |token: &String| {
        resolve(position, token).map(|m| Parsed::Legal {
            uci: m.to_uci(CastlingMode::Standard).to_string(),
            text: token.clone(),
            source,
        })
    };
    let chosen = match how {
        Pick::First => &tokens[0],
        Pick::LastLegal => {
            if let Some(found) = tokens.iter().rev().find_map(legal) {
                return found;
            }
            last
        }
    };
    legal(chosen).unwrap_or_else(|| Parsed::Illegal {
        text: chosen.clone(),
        source,
    })
}

/// Removes Markdown code fence lines (```json ... ```), keeping their content.
fn strip_code_fences(reply: &str) -> String {
    reply
        .lines()
        .filter(|line| !line.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The string value of a `move` key (any case) in the last JSON object of
/// the text that has one.
fn json_move_field(text: &str) -> Option<String> {
    let mut found = None;
    for (start, _) in text.match_indices('{') {
        let Some(object) = balanced_object(&text[start..]) else {
            continue;
        };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_str(object) else {
            continue;
        };
        for (key, value) in &map {
            if key.eq_ignore_ascii_case("move") {
                found = Some(match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            }
        }
    }
    found
}

/// The prefix of `text` (which starts with `{`) up to its matching `}`,
/// skipping braces inside JSON strings.
fn balanced_object(text: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&text[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The rest of the line after the last `MOVE:` marker (any case, Markdown
/// emphasis around it tolerated).
fn move_line(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let at = lower.rfind("move:")?;
    let rest = &text[at + "move:".len()..];
    let line = rest.lines().next().unwrap_or("");
    Some(line.replace(['*', '`', '"', '\''], " "))
}

/// The move-shaped tokens of a text, normalized, in order.
pub(crate) fn move_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "=-+#!?".contains(c)))
        .filter_map(normalize_token)
        .collect()
}

/// Strips decorations from one token; `None` when it is not move-shaped.
fn normalize_token(raw: &str) -> Option<String> {
    let mut token = raw.trim_end_matches(['+', '#', '!', '?']).to_string();
    token = token.trim_start_matches('-').to_string();
    let upper = token.to_ascii_uppercase();
    if upper == "0-0" || upper == "O-O" {
        return Some("O-O".into());
    }
    if upper == "0-0-0" || upper == "O-O-O" {
        return Some("O-O-O".into());
    }
    // Long algebraic with a hyphen: e2-e4.
    let bytes = token.as_bytes();
    if bytes.len() >= 5 && bytes[2] == b'-' {
        let joined = format!("{}{}", &token[..2], &token[3..]);
        if is_uci_shaped(&joined) {
            token = joined;
        }
    }
    if token.is_empty() || token.len() > 7 {
        return None;
    }
    if is_uci_shaped(&token) || san_candidates(&token).next().is_some() {
        Some(token)
    } else {
        None
    }
}

fn is_uci_shaped(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    matches!(
        UciMove::from_ascii(lower.as_bytes()),
        Ok(UciMove::Normal { .. })
    ) && (lower.len() == 4 || lower.len() == 5)
}

/// Spellings of a token that parse as SAN: as written, then with the piece
/// letter upper-cased (`nf3`, `NF3`) and the promotion piece upper-cased,
/// and last each of those without a capture mark: models often write
/// `Rxf8` for a rook moving to an empty f8, and the move meant is plain.
fn san_candidates(token: &str) -> impl Iterator<Item = San> {
    let lower = token.to_ascii_lowercase();
    let mut spellings = vec![token.to_string()];
    let mut chars: Vec<char> = lower.chars().collect();
    if let Some(eq) = chars.iter().position(|&c| c == '=')
        && let Some(p) = chars.get_mut(eq + 1)
    {
        *p = p.to_ascii_uppercase();
    }
    let pawn_form: String = chars.iter().collect();
    spellings.push(pawn_form.clone());
    if let Some(first) = chars.first_mut()
        && "kqrbn".contains(*first)
    {
        *first = first.to_ascii_uppercase();
        spellings.push(chars.iter().collect());
    }
    let without_capture: Vec<String> = spellings
        .iter()
        .filter(|s| s.contains('x'))
        .map(|s| s.replace('x', ""))
        .collect();
    spellings.extend(without_capture);
    spellings
        .into_iter()
        .filter_map(|s| San::from_ascii(s.as_bytes()).ok())
        .filter(|san| !matches!(san, San::Null))
}

/// The legal move a normalized token denotes in `position`, if any.
pub fn resolve(position: &Chess, token: &str) -> Option<Move> {
    if is_uci_shaped(token) {
        let lower = token.to_ascii_lowercase();
        if let Ok(uci) = UciMove::from_ascii(lower.as_bytes())
            && let Ok(m) = uci.to_move(position)
        {
            return Some(m);
        }
    }
    san_candidates(token).find_map(|san| san.to_move(position).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;

    fn position(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap()
    }

    fn legal_uci(reply: &str, fen: &str) -> Option<String> {
        match parse_reply(reply, &position(fen)) {
            Parsed::Legal { uci, .. } => Some(uci),
            _ => None,
        }
    }

    #[test]
    fn tokens_are_normalized() {
        assert_eq!(
            move_tokens("1. e4 e5 2.Nf3!? 0-0-0+ e2-e4 Qxf7#"),
            vec!["e4", "e5", "Nf3", "O-O-O", "e2e4", "Qxf7"]
        );
        assert_eq!(move_tokens("the best is clearly"), Vec::<String>::new());
    }

    #[test]
    fn start_position_answers() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(legal_uci("nf3", start).as_deref(), Some("g1f3"));
        assert_eq!(legal_uci("E2E4", start).as_deref(), Some("e2e4"));
    }
}

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
        uci: UciMove,
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
///
/// Linear in the reply's length whatever it holds (the client reads
/// replies up to 10 MiB): the JSON field is found in one pass over the
/// reply's braces (see [`json_move_field_counted`]), and each distinct
/// move-shaped token is resolved in the position once.
pub fn parse_reply(reply: &str, position: &Chess) -> Parsed {
    let text = strip_code_fences(reply);
    if let Some(value) = json_move_field(&text) {
        return last_legal(position, &value, AnswerSource::JsonField);
    }
    if let Some(line) = move_line(&text)
        && let Some(first) = raw_tokens(&line).find_map(normalize_token)
    {
        // The first move-shaped token after an explicit `MOVE:` decides.
        return as_played(position, first, AnswerSource::MoveLine);
    }
    last_legal(position, &text, AnswerSource::LastMention)
}

/// The last token of `text` that is a legal move; failing that, the last
/// move-shaped token, which is then illegal. Prose mentions squares ("the
/// pawn on d6") that read as pawn moves, so a legal mention earlier in the
/// text is the better reading of the answer.
fn last_legal(position: &Chess, text: &str, source: AnswerSource) -> Parsed {
    // Each spelling is tried once: a reply repeating one illegal move a
    // million times costs a million comparisons, not a million move
    // generations.
    let mut tried = foldhash::HashSet::default();
    let mut previous = "";
    let mut last_shaped: Option<String> = None;
    for raw in raw_tokens(text).rev() {
        if raw == previous || !tried.insert(raw) {
            continue;
        }
        previous = raw;
        let Some(token) = normalize_token(raw) else {
            continue;
        };
        if let Some(found) = resolve(position, &token) {
            return legal(found, token, source);
        }
        last_shaped.get_or_insert(token);
    }
    match last_shaped {
        Some(text) => Parsed::Illegal { text, source },
        None => Parsed::Unparseable,
    }
}

/// `token` as the answer: legal, or else illegal.
fn as_played(position: &Chess, token: String, source: AnswerSource) -> Parsed {
    match resolve(position, &token) {
        Some(found) => legal(found, token, source),
        None => Parsed::Illegal {
            text: token,
            source,
        },
    }
}

fn legal(found: Move, text: String, source: AnswerSource) -> Parsed {
    Parsed::Legal {
        uci: found.to_uci(CastlingMode::Standard),
        text,
        source,
    }
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
/// the text that has one, objects taken in the order they open (an object
/// inside another after it).
fn json_move_field(text: &str) -> Option<String> {
    json_move_field_counted(text).0
}

/// [`json_move_field`], and the bytes it handed to the JSON parser: at
/// most twice the text's length (whatever the text), so replies are read
/// in linear time.
///
/// One pass finds the balanced `{...}` spans (braces inside JSON strings
/// skipped); each is parsed at most once, in the order they open. A span
/// that parses has been read whole ([`MoveFields`]), so the spans inside
/// it are not parsed again. A span that fails stops where its first error is: a span inside
/// it that starts before that point and ends after it fails there too (the
/// parser was reading it as a value), so it is not parsed; one that ends
/// before it is valid JSON and is parsed once more.
fn json_move_field_counted(text: &str) -> (Option<String>, usize) {
    let spans = object_spans(text);
    let mut found = None;
    let mut parsed = 0usize;
    // Spans below this end inside an object already walked.
    let mut walked_until = 0usize;
    // Enclosing spans that failed: (end, where their parse failed).
    let mut failing: Vec<(usize, usize)> = Vec::new();
    for (start, end) in spans.into_iter().map(|(a, b)| (a as usize, b as usize)) {
        if start < walked_until {
            continue;
        }
        while failing
            .last()
            .is_some_and(|&(outer_end, _)| outer_end < start)
        {
            failing.pop();
        }
        let fails_at = failing.last().map(|&(_, at)| at);
        if let Some(at) = fails_at.filter(|&at| start + 1 < at && at <= end) {
            failing.push((end, at));
            continue;
        }
        let object = &text[start..=end];
        let mut reader = serde_json::Deserializer::from_str(object);
        let read = serde::de::DeserializeSeed::deserialize(MoveFields, &mut reader)
            .and_then(|moves| reader.end().map(|()| moves));
        match read {
            Ok(moves) => {
                parsed += object.len();
                if moves.is_some() {
                    found = moves;
                }
                walked_until = end + 1;
            }
            Err(error) => {
                let at = start + error_offset(object, &error);
                parsed += at - start + 1;
                failing.push((end, at));
            }
        }
    }
    (found, parsed)
}

/// Reads a JSON value (checking it is JSON, as parsing it into a
/// `serde_json::Value` would) for its last `move` field (any case), its
/// objects taken in the order they open: an object's own field, then the
/// objects inside it. Only `move` values are built; the rest is read
/// through, so a reply of many small objects costs no allocation each.
struct MoveFields;

impl<'de> serde::de::DeserializeSeed<'de> for MoveFields {
    type Value = Option<String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, reader: D) -> Result<Self::Value, D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for MoveFields {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut own = None;
        let mut inside = None;
        while let Some(MoveKey(is_move)) = map.next_key()? {
            if is_move {
                let value: serde_json::Value = map.next_value()?;
                inside = moves_in(&value).or(inside);
                own = Some(match value {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                });
            } else {
                inside = map.next_value_seed(MoveFields)?.or(inside);
            }
        }
        Ok(inside.or(own))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut last = None;
        while let Some(found) = seq.next_element_seed(MoveFields)? {
            last = found.or(last);
        }
        Ok(last)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Whether an object key is `move` (any case), read without copying it.
struct MoveKey(bool);

impl<'de> serde::Deserialize<'de> for MoveKey {
    fn deserialize<D: serde::Deserializer<'de>>(reader: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = MoveKey;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object key")
            }

            fn visit_str<E>(self, key: &str) -> Result<MoveKey, E> {
                Ok(MoveKey(key.eq_ignore_ascii_case("move")))
            }
        }
        reader.deserialize_str(Key)
    }
}

/// The last `move` field of the objects inside a `move` value.
fn moves_in(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut own = None;
            let mut inside = None;
            for (key, value) in map {
                inside = moves_in(value).or(inside);
                if key.eq_ignore_ascii_case("move") {
                    own = Some(match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                }
            }
            inside.or(own)
        }
        Value::Array(items) => items.iter().rev().find_map(moves_in),
        _ => None,
    }
}

/// The byte offset in `text` where the JSON parser reported `error`
/// (from its line and column).
fn error_offset(text: &str, error: &serde_json::Error) -> usize {
    let line_start = if error.line() <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text.as_bytes())
            .nth(error.line() - 2)
            .map_or(text.len(), |at| at + 1)
    };
    (line_start + error.column().saturating_sub(1)).min(text.len().saturating_sub(1))
}

/// The balanced `{...}` spans of `text` that can be JSON objects (their
/// `{` followed by `"` or `}`) as (first, last) byte offsets, in the order
/// they open. Outside every brace a quote is prose; inside one, braces
/// within JSON strings do not count. An unclosed `{` makes no span.
/// Offsets are `u32`, which holds any reply the client reads (10 MiB); a
/// longer text has no spans.
fn object_spans(text: &str) -> Vec<(u32, u32)> {
    let bytes = text.as_bytes();
    if u32::try_from(bytes.len()).is_err() {
        return Vec::new();
    }
    let mut spans: Vec<(u32, u32)> = Vec::new();
    // Per open brace: its span's index, or NONE for a brace no object
    // starts with (it still pairs with a closing brace).
    const NONE: u32 = u32::MAX;
    let mut open: Vec<u32> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &byte) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' if !open.is_empty() => in_string = true,
            b'{' => {
                let next = bytes[i + 1..]
                    .iter()
                    .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
                if matches!(next, Some(b'"' | b'}')) {
                    open.push(spans.len() as u32);
                    spans.push((i as u32, NONE));
                } else {
                    open.push(NONE);
                }
            }
            b'}' => {
                if let Some(index) = open.pop().filter(|&index| index != NONE) {
                    spans[index as usize].1 = i as u32;
                }
            }
            _ => {}
        }
    }
    spans.retain(|&(_, end)| end != NONE);
    spans
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
#[cfg(test)]
fn move_tokens(text: &str) -> Vec<String> {
    raw_tokens(text).filter_map(normalize_token).collect()
}

/// The runs of characters a move is written with, in order.
fn raw_tokens(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "=-+#!?".contains(c)))
        .filter(|raw| !raw.is_empty())
}

/// Strips decorations from one token; `None` when it is not move-shaped.
fn normalize_token(raw: &str) -> Option<String> {
    // No move, however decorated (`O-O-O+!?`), is this long; every move
    // but castling names a square. Both checked before anything is built,
    // so a reply of many distinct words costs little each.
    if raw.len() > 16 {
        return None;
    }
    let names_a_square = raw.as_bytes().windows(2).any(|pair| {
        matches!(pair[0].to_ascii_lowercase(), b'a'..=b'h') && matches!(pair[1], b'1'..=b'8')
    });
    let castles = raw
        .bytes()
        .all(|b| matches!(b, b'0' | b'o' | b'O' | b'-' | b'+' | b'#' | b'!' | b'?'));
    if !names_a_square && !castles {
        return None;
    }
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
            Parsed::Legal { uci, .. } => Some(uci.to_string()),
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
    fn the_json_field_is_found_in_the_object_that_opens_last() {
        for (reply, want) in [
            (r#"{"reasoning": "a } and a {", "move": "e4"}"#, Some("e4")),
            (r#"Thinking {not json} then {"move": "Nf3"}"#, Some("Nf3")),
            (r#"{"a": {"move": "e4"}, "move": "d4"}"#, Some("e4")),
            (r#"{"move": "d4"} and later {"Move": "c4"}"#, Some("c4")),
            (r#"{ I think {"move": "e4"} }"#, Some("e4")),
            (r#"{"moves": [{"move": "a3"}, {"move": "b3"}]}"#, Some("b3")),
            (r#"{"move": 5}"#, Some("5")),
            (r#"{"move": "e4""#, None),
            (r#"{"a":{"a":{"move":"h3"}}x}y}"#, Some("h3")),
        ] {
            assert_eq!(json_move_field(reply).as_deref(), want, "{reply}");
        }
    }

    /// The reply is read in linear work: the bytes handed to the JSON
    /// parser stay within twice the reply's length, on replies built so
    /// that parsing from every brace would read the rest of the text each
    /// time (the reported reply repeats `{"move": ` without closing).
    #[test]
    fn replies_are_read_in_linear_work() {
        let n = 20_000;
        let nested = "{\"a\":".repeat(n / 10) + "1" + &"}x".repeat(n / 10);
        let cases = [
            "{\"move\": ".repeat(n),
            "{\"move\": ".repeat(n) + &"}".repeat(n),
            nested,
            "{".repeat(n) + &"}".repeat(n),
            "{\"a\": {\"b\": 1}} ".repeat(n),
            "{\"move\": \"e4\", oops} ".repeat(n),
        ];
        for text in cases {
            let (_, parsed) = json_move_field_counted(&text);
            assert!(
                parsed <= 2 * text.len(),
                "{parsed} bytes parsed for a reply of {} starting {:?}",
                text.len(),
                &text[..40]
            );
        }
        let spaced = "e4 ".repeat(n);
        let tokens = move_tokens(&spaced);
        assert_eq!(tokens.len(), n);
    }

    #[test]
    fn start_position_answers() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(legal_uci("nf3", start).as_deref(), Some("g1f3"));
        assert_eq!(legal_uci("E2E4", start).as_deref(), Some("e2e4"));
    }
}

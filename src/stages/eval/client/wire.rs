//! What goes over the wire: the request body as sent and as keyed in the
//! cache, the reply's completion read into a [`ChatOutcome`], the
//! `Retry-After` header.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::stages::eval::prompt::Message;

/// The outcome of one logical call (after retries), as cached and logged.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ChatOutcome {
    /// The reply's content; `None` when the call failed (no answer).
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Wall time of the call including retries, milliseconds.
    pub latency_ms: u64,
    pub attempts: u32,
    /// Why the call failed, or a note on a degenerate reply.
    pub error: Option<String>,
    /// Served from the cache (not stored in the cache file).
    #[serde(skip)]
    pub cached: bool,
}

/// A `Retry-After` value (RFC 9110): delay seconds, or an HTTP date, which
/// counts from `now` (a date already past means no wait).
pub(crate) fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

pub(super) fn snippet(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    one_line.chars().take(200).collect()
}

/// A chat request's body as sent: the fields we set, in this order, then
/// the configured `extra_body` fields not among them.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
pub(super) struct RequestBody<'a> {
    pub(super) model: BodyField<'a>,
    pub(super) messages: BodyField<'a>,
    pub(super) temperature: Option<BodyField<'a>>,
    pub(super) max_tokens: Option<BodyField<'a>>,
    pub(super) seed: Option<BodyField<'a>>,
    #[serde(flatten)]
    pub(super) extra: BTreeMap<&'a str, &'a Value>,
}

/// One field of a request body: ours, or the `extra_body` value that
/// replaces it.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum BodyField<'a> {
    Ours(Scalar<'a>),
    Messages(&'a [Message]),
    Given(&'a Value),
}

/// A scalar setting of a request body.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Scalar<'a> {
    Text(&'a str),
    Float(f64),
    Int(u64),
}

/// What a cache entry is keyed by: the endpoint and the body sent to it.
#[derive(Serialize)]
pub(super) struct CacheKeyed<'a> {
    pub(super) endpoint: String,
    pub(super) body: &'a Value,
}

/// Reads a chat-completions reply body; `None` when it is not one.
pub(super) fn parse_completion(text: &str) -> Option<ChatOutcome> {
    let value: Value = serde_json::from_str(text).ok()?;
    let choice = value.get("choices")?.get(0)?;
    let message = choice.get("message")?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let usage = value.get("usage");
    let tokens = |name: &str| usage.and_then(|u| u.get(name)).and_then(Value::as_u64);
    let error = if content.trim().is_empty() {
        Some("empty content".to_string())
    } else if finish_reason.as_deref() == Some("length") {
        Some("reply cut off at max_tokens (finish_reason: length)".to_string())
    } else {
        None
    };
    Some(ChatOutcome {
        content: Some(content),
        finish_reason,
        prompt_tokens: tokens("prompt_tokens"),
        completion_tokens: tokens("completion_tokens"),
        error,
        ..Default::default()
    })
}

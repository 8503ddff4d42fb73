//! A blocking client for OpenAI-compatible chat-completions endpoints
//! (OpenRouter, vLLM, llama.cpp's llama-server, Ollama), with a per-call
//! timeout, bounded retries, and an on-disk response cache.
//!
//! Retries: 429, 5xx, timeouts, connection failures and unreadable bodies
//! are retried with exponential backoff and seeded jitter; a `Retry-After`
//! header (seconds or an HTTP date) lengthens the wait. Every wait is capped
//! (`max_retry_after_s`) and so is the total wait of one call
//! (`max_total_wait_s`): a server asking for a day gives up the call, not
//! the run. Each wait is said on stderr. The delays come from `backon`'s
//! `ExponentialBackoff`; the loop around them is ours because backon's
//! blocking retry has no hook to honour a server's `Retry-After`.
//!
//! Cache: one JSON file per answered request, named by the sha256 of the
//! endpoint, model and full request body (messages, temperature,
//! max_tokens, seed, extra fields). A call that got no answer (a transport
//! failure, 5xx or 429 after the last retry, an HTTP error) is not cached:
//! the failure may be temporary, so a rerun asks again, and only those.
//!
//! The API key is read from the environment variable the config names and
//! never written anywhere: not in the cache (the key is not part of the
//! cache key), the log, the report or an error message (errors are
//! scrubbed of it).
//!
//! The settings are in `config`, the endpoint and its URLs in `endpoint`,
//! the call with its retries and cache in `call`, the redirects it follows
//! in `redirect`, the request and reply bodies in `wire`.

mod call;
mod config;
mod endpoint;
mod redirect;
mod wire;

pub(crate) use call::{ChatClient, failure_kind};
pub use config::ClientConfig;
pub(crate) use endpoint::{Endpoint, default_cache_dir, parse_openai_spec, redact_url};
pub use wire::ChatOutcome;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::eval::client::wire::{parse_completion, parse_retry_after};
    use crate::stages::eval::prompt::Message;
    use std::collections::BTreeMap;
    use std::time::Duration;

    #[test]
    fn spec_parsing() {
        let e = parse_openai_spec("openai:meta/llama@3@https://openrouter.ai/api/v1").unwrap();
        assert_eq!(e.model, "meta/llama@3");
        assert_eq!(
            e.chat_url(),
            "https://openrouter.ai/api/v1/chat/completions"
        );
        assert!(parse_openai_spec("openai:gpt").is_err());
        let keyed =
            parse_openai_spec("openai:m@https://u:passw0rd@host.example/v1/?api-key=key123&x=2")
                .unwrap();
        assert_eq!(
            keyed.chat_url(),
            "https://u:passw0rd@host.example/v1/chat/completions?api-key=key123&x=2"
        );
        assert_eq!(
            redact_url(&keyed.base_url),
            "https://[redacted]@host.example/v1/?api-key=[redacted]&x=[redacted]"
        );
        assert_eq!(keyed.secrets(), ["u:passw0rd", "passw0rd", "key123"]);
    }

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:27:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past: retry now"
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    /// The body's bytes key the cache: our fields in their order, an
    /// `extra_body` key that is one of ours in its place, the others after
    /// them in sorted order.
    #[test]
    fn request_bodies_keep_their_bytes() {
        let endpoint = parse_openai_spec("openai:m@http://127.0.0.1:9/v1").unwrap();
        let config = ClientConfig {
            temperature: Some(0.5),
            max_tokens: Some(7),
            extra_body: BTreeMap::from([
                ("top_p".to_string(), serde_json::json!(0.9)),
                ("temperature".to_string(), serde_json::json!(0)),
                ("seed".to_string(), serde_json::json!("theirs")),
            ]),
            ..ClientConfig::default()
        };
        let client = ChatClient::new(endpoint, config, None).unwrap();
        let messages = [Message {
            role: "user".to_string(),
            content: "e4?".to_string(),
        }];
        let body = client.body(&messages, 3).unwrap();
        assert_eq!(
            body.to_string(),
            r#"{"model":"m","messages":[{"role":"user","content":"e4?"}],"temperature":0,"max_tokens":7,"seed":"theirs","top_p":0.9}"#
        );
    }

    #[test]
    fn completion_bodies() {
        let ok = parse_completion(
            r#"{"choices":[{"message":{"content":"e2e4"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        )
        .unwrap();
        assert_eq!(ok.content.as_deref(), Some("e2e4"));
        assert_eq!(ok.completion_tokens, Some(2));
        assert!(parse_completion("{not json").is_none());
        let empty = parse_completion(
            r#"{"choices":[{"message":{"content":null},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!(empty.error.as_deref(), Some("empty content"));
    }
}

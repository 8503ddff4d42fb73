//! The client's settings (`[eval.client]`): timeouts, retries and their
//! caps, the cache. Apart so that the eval config reads them without the
//! client.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::core::bounds::{Bound, Bounded};

/// Settings of the chat-completions client.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// Environment variable holding the API key; unset or empty means no
    /// `Authorization` header (local servers).
    pub api_key_env: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Send a seed drawn from the run's seed and the repeat as the request's `seed`.
    pub send_seed: bool,
    /// Extra fields merged into every request body (e.g. `top_p`,
    /// `reasoning`, `response_format`).
    pub extra_body: BTreeMap<String, Value>,
    /// Concurrent requests.
    pub workers: usize,
    /// Per-attempt timeout, seconds.
    pub timeout_s: f64,
    /// Attempts per call before it counts as no answer.
    pub max_attempts: u32,
    pub backoff_min_ms: u64,
    pub backoff_max_ms: u64,
    /// Longest single wait before a retry (a server's `Retry-After`
    /// included), seconds.
    pub max_retry_after_s: u64,
    /// Longest total wait before retries of one call, seconds; when it is
    /// spent the call gives up. Left out of records at its default.
    #[serde(skip_serializing_if = "is_default_total_wait")]
    pub max_total_wait_s: u64,
    /// Largest share of calls (0 to 1) that may end without an answer
    /// before the eval fails (exit 1). 0: any failed call fails the run,
    /// since a failed call counts as a wrong answer in every accuracy.
    /// Left out of records at its default.
    #[serde(skip_serializing_if = "is_zero_share")]
    pub max_failed_share: f64,
}

impl Bounded for ClientConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("temperature", 0.0, 2.0, "sampling temperature"),
        Bound::within("max_tokens", 1.0, 10000000.0, "tokens of an answer"),
        Bound::within("workers", 1.0, 256.0, "requests at once"),
        Bound::above("timeout_s", 0.0, 86400.0, "seconds of one request"),
        Bound::within("max_attempts", 1.0, 100.0, "attempts per request"),
        Bound::within("backoff_min_ms", 0.0, 3600000.0, "milliseconds"),
        Bound::within("backoff_max_ms", 0.0, 3600000.0, "milliseconds"),
        Bound::within("max_retry_after_s", 0.0, 86400.0, "seconds"),
        Bound::within("max_total_wait_s", 0.0, 1000000.0, "seconds"),
        Bound::within("max_failed_share", 0.0, 1.0, "a share"),
    ];
}

/// Default total wait of one call before it gives up, seconds.
const DEFAULT_MAX_TOTAL_WAIT_S: u64 = 300;

fn is_default_total_wait(seconds: &u64) -> bool {
    *seconds == DEFAULT_MAX_TOTAL_WAIT_S
}

fn is_zero_share(share: &f64) -> bool {
    *share == 0.0
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            api_key_env: "OPENAI_API_KEY".into(),
            temperature: Some(0.0),
            max_tokens: Some(2048),
            send_seed: true,
            extra_body: BTreeMap::new(),
            workers: 4,
            timeout_s: 300.0,
            max_attempts: 5,
            backoff_min_ms: 1000,
            backoff_max_ms: 60_000,
            max_retry_after_s: 300,
            max_total_wait_s: DEFAULT_MAX_TOTAL_WAIT_S,
            max_failed_share: 0.0,
        }
    }
}

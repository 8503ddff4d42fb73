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

use anyhow::{Context, Result};
use backon::{BackoffBuilder, ExponentialBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::prompt::Message;
use crate::core::bounds::{Bound, Bounded};
use crate::core::error::bad_input;
use crate::core::fileio::{sha256_bytes, write_atomic};
use ureq::http::Uri;

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

/// Where a model is served.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    pub model: String,
    /// Base URL, e.g. `https://openrouter.ai/api/v1`.
    pub base_url: String,
}

impl Endpoint {
    /// The base URL with `/chat/completions` joined to its path; a query
    /// (`?api-key=...`) stays after the path, where it belongs.
    pub(crate) fn chat_url(&self) -> String {
        match self.base_url.parse::<Uri>() {
            Ok(base) => {
                let path = base.path().trim_end_matches('/');
                let query = base.query().map_or_else(String::new, |q| format!("?{q}"));
                let authority = base.authority().map_or("", |a| a.as_str());
                let scheme = base.scheme_str().unwrap_or("http");
                format!("{scheme}://{authority}{path}/chat/completions{query}")
            }
            // Checked when the spec is parsed; kept whole if not.
            Err(_) => format!("{}/chat/completions", self.base_url.trim_end_matches('/')),
        }
    }

    /// What of the base URL is secret: the user info (`user:pass@`) and
    /// every query value.
    fn secrets(&self) -> Vec<String> {
        let Ok(base) = self.base_url.parse::<Uri>() else {
            return Vec::new();
        };
        let mut secrets = Vec::new();
        if let Some((user_info, _)) = base.authority().and_then(|a| a.as_str().rsplit_once('@')) {
            secrets.push(user_info.to_string());
            if let Some((_, password)) = user_info.split_once(':') {
                secrets.push(password.to_string());
            }
        }
        for pair in base.query().unwrap_or("").split('&') {
            if let Some((_, value)) = pair.split_once('=') {
                secrets.push(value.to_string());
            }
        }
        // Shorter values are no secret, and scrubbing them would mangle
        // messages ("x=2" would take every 2 out of "HTTP 502").
        secrets.retain(|secret| secret.len() >= 4);
        // Longest first, so a part never leaves the rest of a whole behind.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets
    }
}

/// A base URL fit for reports and logs: user info and query values
/// replaced by `[redacted]`, the rest kept.
pub(crate) fn redact_url(url: &str) -> String {
    let Ok(uri) = url.parse::<Uri>() else {
        return url.to_string();
    };
    let mut authority = uri.authority().map_or("", |a| a.as_str()).to_string();
    if let Some((_, host)) = authority.rsplit_once('@') {
        authority = format!("[redacted]@{host}");
    }
    let query = uri.query().map_or_else(String::new, |query| {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}=[redacted]"),
                None => pair.to_string(),
            })
            .collect();
        format!("?{}", pairs.join("&"))
    });
    let scheme = uri.scheme_str().unwrap_or("http");
    format!("{scheme}://{authority}{}{query}", uri.path())
}

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

/// One attempt's result.
enum Attempt {
    Done(ChatOutcome),
    Retry {
        error: String,
        retry_after: Option<Duration>,
    },
    Fail(String),
}

/// The client. Cheap to share between worker threads.
pub(crate) struct ChatClient {
    agent: ureq::Agent,
    endpoint: Endpoint,
    api_key: Option<String>,
    /// Secrets of the base URL, scrubbed from messages like the key.
    url_secrets: Vec<String>,
    config: ClientConfig,
    cache_dir: Option<PathBuf>,
    http_requests: AtomicU64,
}

impl ChatClient {
    pub fn new(
        endpoint: Endpoint,
        config: ClientConfig,
        cache_dir: Option<PathBuf>,
    ) -> Result<Self> {
        if config.max_attempts == 0 {
            return Err(bad_input("eval client: max_attempts must be at least 1"));
        }
        if config.timeout_s.is_nan() || config.timeout_s <= 0.0 {
            return Err(bad_input("eval client: timeout_s must be positive"));
        }
        if !(0.0..=1.0).contains(&config.max_failed_share) {
            return Err(bad_input(
                "eval client: max_failed_share must be between 0 and 1",
            ));
        }
        let api_key = if config.api_key_env.is_empty() {
            None
        } else {
            std::env::var(&config.api_key_env)
                .ok()
                .filter(|k| !k.trim().is_empty())
        };
        // Redirects are followed by `attempt`, not by ureq: only to the
        // same host, keeping the POST and its body.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(config.timeout_s)))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        if let Some(dir) = &cache_dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating cache folder {}", dir.display()))?;
        }
        Ok(Self {
            agent,
            url_secrets: endpoint.secrets(),
            endpoint,
            api_key,
            config,
            cache_dir,
            http_requests: AtomicU64::new(0),
        })
    }

    /// HTTP requests sent so far (cache hits send none).
    pub fn http_requests(&self) -> u64 {
        self.http_requests.load(Ordering::Relaxed)
    }

    /// The request body for these messages: the model, the messages, the
    /// configured sampling settings and `extra_body` (whose keys replace
    /// ours in place, and otherwise follow in their sorted order).
    pub fn body(&self, messages: &[Message], seed: u64) -> Result<Value> {
        let mut extra: BTreeMap<&str, &Value> = self
            .config
            .extra_body
            .iter()
            .map(|(key, value)| (key.as_str(), value))
            .collect();
        let mut ours = |key: &str, value| match extra.remove(key) {
            Some(given) => BodyField::Given(given),
            None => value,
        };
        let body = RequestBody {
            model: ours("model", BodyField::Ours(Scalar::Text(&self.endpoint.model))),
            messages: ours("messages", BodyField::Messages(messages)),
            temperature: self
                .config
                .temperature
                .map(|t| ours("temperature", BodyField::Ours(Scalar::Float(t)))),
            max_tokens: self
                .config
                .max_tokens
                .map(|m| ours("max_tokens", BodyField::Ours(Scalar::Int(m.into())))),
            seed: self
                .config
                .send_seed
                .then(|| ours("seed", BodyField::Ours(Scalar::Int(seed)))),
            extra,
        };
        Ok(serde_json::to_value(body)?)
    }

    /// The cache key of a request body.
    /// The sha256 of the compact JSON text of the endpoint and the body.
    pub(crate) fn cache_key(&self, body: &Value) -> Result<String> {
        let keyed = CacheKeyed {
            endpoint: self.endpoint.chat_url(),
            body,
        };
        Ok(sha256_bytes(serde_json::to_string(&keyed)?.as_bytes()))
    }

    fn cache_path(&self, key: &str) -> Option<PathBuf> {
        self.cache_dir
            .as_ref()
            .map(|dir| dir.join(&key[..2]).join(format!("{key}.json")))
    }

    fn cache_get(&self, key: &str) -> Option<ChatOutcome> {
        let path = self.cache_path(key)?;
        let text = std::fs::read_to_string(&path).ok()?;
        // A damaged cache file is a miss, not an error: the call is redone.
        let mut outcome: ChatOutcome = serde_json::from_str(&text).ok()?;
        // A failure cached by an older puzzleforge is asked again.
        outcome.content.as_ref()?;
        outcome.cached = true;
        Some(outcome)
    }

    fn cache_put(&self, key: &str, outcome: &ChatOutcome) -> Result<()> {
        let Some(path) = self.cache_path(key) else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating cache folder {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(outcome)?;
        write_atomic(&path, text.as_bytes())
    }

    /// Sends one chat request (or answers it from the cache). `seed` goes
    /// into the body when configured; `jitter_seed` seeds the retry jitter.
    pub fn complete(
        &self,
        messages: &[Message],
        seed: u64,
        jitter_seed: u64,
    ) -> Result<(ChatOutcome, String)> {
        let body = self.body(messages, seed)?;
        let key = self.cache_key(&body)?;
        if let Some(hit) = self.cache_get(&key) {
            return Ok((hit, key));
        }
        let outcome = self.call_with_retries(&body, jitter_seed);
        // Only answers are final; a failure may be temporary.
        if outcome.content.is_some() {
            self.cache_put(&key, &outcome)?;
        }
        Ok((outcome, key))
    }

    fn call_with_retries(&self, body: &Value, seed: u64) -> ChatOutcome {
        let started = Instant::now();
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.config.backoff_min_ms))
            .with_max_delay(Duration::from_millis(self.config.backoff_max_ms))
            .with_max_times(self.config.max_attempts.saturating_sub(1) as usize)
            .with_jitter()
            .with_jitter_seed(seed)
            .build();
        let text = body.to_string();
        let mut attempts = 0;
        let mut waited = Duration::ZERO;
        loop {
            attempts += 1;
            let failed = |error: String| ChatOutcome {
                latency_ms: started.elapsed().as_millis() as u64,
                attempts,
                error: Some(error),
                ..Default::default()
            };
            match self.attempt(&text) {
                Attempt::Done(mut outcome) => {
                    outcome.latency_ms = started.elapsed().as_millis() as u64;
                    outcome.attempts = attempts;
                    return outcome;
                }
                Attempt::Fail(error) => return failed(error),
                Attempt::Retry { error, retry_after } => {
                    let Some(delay) = delays.next() else {
                        return failed(format!("{error} (gave up after {attempts} attempts)"));
                    };
                    let Some(wait) = self.next_wait(delay, retry_after, waited) else {
                        return failed(format!(
                            "{error} (gave up after {attempts} attempts: the {} s total wait \
                             of a call is spent)",
                            self.config.max_total_wait_s
                        ));
                    };
                    self.say_wait(&error, retry_after, wait, attempts);
                    std::thread::sleep(wait);
                    waited += wait;
                }
            }
        }
    }

    /// The wait before the next attempt: the backoff `delay`, or the
    /// server's `Retry-After` when longer, capped per wait and by what is
    /// left of the call's total wait; `None` when nothing is left.
    fn next_wait(
        &self,
        delay: Duration,
        retry_after: Option<Duration>,
        waited: Duration,
    ) -> Option<Duration> {
        let cap = Duration::from_secs(self.config.max_retry_after_s);
        let wanted = retry_after.map_or(delay, |asked| asked.max(delay)).min(cap);
        let left = Duration::from_secs(self.config.max_total_wait_s).saturating_sub(waited);
        if left.is_zero() && !wanted.is_zero() {
            return None;
        }
        Some(wanted.min(left))
    }

    /// Says on stderr what a retry waits for, so a long wait is never silent.
    fn say_wait(&self, error: &str, retry_after: Option<Duration>, wait: Duration, attempt: u32) {
        let reason = failure_kind(error);
        let asked = retry_after.map_or_else(String::new, |asked| {
            format!(", server asked to wait {} s", asked.as_secs())
        });
        eprintln!(
            "eval: {reason}{asked}; waiting {:.1} s before attempt {} of {}",
            wait.as_secs_f64(),
            attempt + 1,
            self.config.max_attempts
        );
    }

    /// Removes the API key and the base URL's secrets from a message.
    fn scrub(&self, text: &str) -> String {
        let mut text = match &self.api_key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_string(),
        };
        for secret in &self.url_secrets {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        text
    }

    /// One attempt: the request, and the redirects to the same host it
    /// gets (at most [`MAX_REDIRECTS`]), each sent again as the same POST
    /// with the same body. A redirect to another host is not followed: the
    /// call fails naming both hosts (the prompt and the key stay with the
    /// configured one).
    fn attempt(&self, body: &str) -> Attempt {
        let mut url = self.endpoint.chat_url();
        for _ in 0..=MAX_REDIRECTS {
            let response = match self.post(&url, body) {
                Ok(response) => response,
                Err(attempt) => return attempt,
            };
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return self.read_reply(&url, response);
            }
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            match same_host_redirect(&url, &location) {
                Ok(next) => url = next,
                Err(why) => return Attempt::Fail(self.scrub(&format!("HTTP {status}: {why}"))),
            }
        }
        // The whole endpoint URL (its secrets redacted), not only its
        // host: a loop is often one path of a server redirecting to itself.
        let endpoint = redact_url(&self.endpoint.chat_url());
        let last = redact_url(&url);
        let last = if last == endpoint {
            " (each to itself)".to_string()
        } else {
            format!(" (the last to {last})")
        };
        Attempt::Fail(self.scrub(&format!(
            "more than {MAX_REDIRECTS} redirects from {endpoint}{last}"
        )))
    }

    /// Sends the call's POST to `url`; a transport failure is the attempt's
    /// outcome.
    fn post(&self, url: &str, body: &str) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
        self.http_requests.fetch_add(1, Ordering::Relaxed);
        let mut request = self
            .agent
            .post(url)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        match request.send(body) {
            Ok(response) => Ok(response),
            Err(error) => {
                let message = self.scrub(&error.to_string());
                Err(match error {
                    ureq::Error::Timeout(_) => Attempt::Retry {
                        error: format!("timeout: {message}"),
                        retry_after: None,
                    },
                    ureq::Error::Io(_)
                    | ureq::Error::ConnectionFailed
                    | ureq::Error::HostNotFound
                    | ureq::Error::Protocol(_) => Attempt::Retry {
                        error: format!("connection: {message}"),
                        retry_after: None,
                    },
                    _ => Attempt::Fail(format!("request: {message}")),
                })
            }
        }
    }

    /// What a reply (not a redirect) from `url` says: an answer, a retry
    /// or a failure.
    fn read_reply(&self, url: &str, response: ureq::http::Response<ureq::Body>) -> Attempt {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|value| parse_retry_after(value, std::time::SystemTime::now()));
        let text = match response.into_body().read_to_string() {
            Ok(text) => text,
            Err(error) => {
                let message = self.scrub(&error.to_string());
                return Attempt::Retry {
                    error: format!("reading reply (HTTP {status}): {message}"),
                    retry_after: None,
                };
            }
        };
        if status == 429 || status >= 500 {
            return Attempt::Retry {
                error: format!("HTTP {status}: {}", self.scrub(&snippet(&text))),
                retry_after,
            };
        }
        if status >= 400 {
            return Attempt::Fail(format!("HTTP {status}: {}", self.scrub(&snippet(&text))));
        }
        if text.trim().is_empty() {
            // Said as such: "malformed reply (HTTP 200): " followed by
            // nothing left the user guessing what was wrong.
            return Attempt::Retry {
                error: self.scrub(&format!(
                    "empty reply (HTTP {status}) from {}: the body was empty",
                    redact_url(url)
                )),
                retry_after: None,
            };
        }
        match parse_completion(&text) {
            Some(outcome) => Attempt::Done(outcome),
            None => Attempt::Retry {
                error: format!(
                    "malformed reply (HTTP {status}): {}",
                    self.scrub(&snippet(&text))
                ),
                retry_after: None,
            },
        }
    }
}

/// The kind of a failed call's error, what failures are counted by: the
/// text before the first `": "` (`"HTTP 503"`, `"connection"`). Not the
/// first `':'`, which would cut a URL after its scheme (`"http"`).
pub(crate) fn failure_kind(error: &str) -> &str {
    error.split(": ").next().unwrap_or(error)
}

/// Redirects of one call followed at most (all to the configured host).
const MAX_REDIRECTS: usize = 5;

/// The URL a redirect from `from` to `location` (absolute, or relative to
/// `from`) leads to, when it stays on the same host (scheme, host and
/// port); else why it is not followed, naming both hosts.
fn same_host_redirect(from: &str, location: &str) -> std::result::Result<String, String> {
    let origin: Uri = from
        .parse()
        .map_err(|e| format!("bad request URL {}: {e}", redact_url(from)))?;
    let (scheme, Some(authority)) = (origin.scheme_str().unwrap_or("http"), origin.authority())
    else {
        return Err(format!("bad request URL {}", redact_url(from)));
    };
    let location = location.trim();
    if location.is_empty() {
        return Err("a redirect without a Location".to_string());
    }
    let path = if !location.contains("://") && !location.starts_with("//") {
        // A path on the same host, absolute or relative to the request's.
        if location.starts_with('/') {
            location.to_string()
        } else {
            let folder = origin
                .path()
                .rsplit_once('/')
                .map_or("", |(folder, _)| folder);
            format!("{folder}/{location}")
        }
    } else {
        let target: Uri = location
            .parse()
            .map_err(|_| format!("a redirect to an unreadable location {location:?}"))?;
        let port = |uri: &Uri, scheme: &str| {
            uri.port_u16()
                .unwrap_or(if scheme == "https" { 443 } else { 80 })
        };
        let their_scheme = target.scheme_str().unwrap_or(scheme);
        let same = their_scheme == scheme
            && target
                .host()
                .is_some_and(|host| host.eq_ignore_ascii_case(authority.host()))
            && port(&target, their_scheme) == port(&origin, scheme);
        if !same {
            return Err(format!(
                "{} redirects to {}, another host: puzzleforge follows no redirect to another host \
                 (the prompt and the API key stay with {}); if that host serves the model, name it in the model's base URL",
                host_of(from),
                host_of(location),
                host_of(from)
            ));
        }
        target
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string()
    };
    Ok(format!("{scheme}://{}{path}", authority.as_str()))
}

/// `scheme://host:port` of a URL, for messages (no user info, no path).
fn host_of(url: &str) -> String {
    match url.parse::<Uri>() {
        Ok(uri) => {
            let host = uri.host().unwrap_or("?");
            let port = uri.port_u16().map_or_else(String::new, |p| format!(":{p}"));
            format!("{}://{host}{port}", uri.scheme_str().unwrap_or("http"))
        }
        Err(_) => "an unreadable URL".to_string(),
    }
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

fn snippet(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    one_line.chars().take(200).collect()
}

/// A chat request's body as sent: the fields we set, in this order, then
/// the configured `extra_body` fields not among them.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: BodyField<'a>,
    messages: BodyField<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<BodyField<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<BodyField<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<BodyField<'a>>,
    #[serde(flatten)]
    extra: BTreeMap<&'a str, &'a Value>,
}

/// One field of a request body: ours, or the `extra_body` value that
/// replaces it.
#[derive(Serialize)]
#[serde(untagged)]
enum BodyField<'a> {
    Ours(Scalar<'a>),
    Messages(&'a [Message]),
    Given(&'a Value),
}

/// A scalar setting of a request body.
#[derive(Serialize)]
#[serde(untagged)]
enum Scalar<'a> {
    Text(&'a str),
    Float(f64),
    Int(u64),
}

/// What a cache entry is keyed by: the endpoint and the body sent to it.
#[derive(Serialize)]
struct CacheKeyed<'a> {
    endpoint: String,
    body: &'a Value,
}

/// Reads a chat-completions reply body; `None` when it is not one.
fn parse_completion(text: &str) -> Option<ChatOutcome> {
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

/// `openai:MODEL@BASE_URL` -> endpoint.
pub(crate) fn parse_openai_spec(spec: &str) -> Result<Endpoint> {
    let rest = spec
        .strip_prefix("openai:")
        .ok_or_else(|| bad_input(format!("model {spec:?}: expected openai:MODEL@BASE_URL")))?;
    let at = rest.rfind("@http").ok_or_else(|| {
        bad_input(format!(
            "model {spec:?}: expected openai:MODEL@BASE_URL with an http(s) base URL"
        ))
    })?;
    let (model, base_url) = (&rest[..at], &rest[at + 1..]);
    if model.is_empty() {
        return Err(bad_input(format!("model {spec:?}: empty model name")));
    }
    let uri: Uri = base_url.parse().map_err(|error| {
        bad_input(format!(
            "model openai:{model}@{}: bad base URL: {error}",
            redact_url(base_url)
        ))
    })?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return Err(bad_input(format!(
            "model openai:{model}@{}: the base URL needs http:// or https:// and a host",
            redact_url(base_url)
        )));
    }
    Ok(Endpoint {
        model: model.to_string(),
        base_url: base_url.to_string(),
    })
}

/// The default cache folder of a run.
pub(crate) fn default_cache_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("cache")
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! The client: one logical call with its retries, waits and cache, and
//! the kind a failed call is counted by.

use anyhow::{Context, Result};
use backon::{BackoffBuilder, ExponentialBuilder};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::core::error::bad_input;
use crate::core::fileio::{sha256_bytes, write_atomic};
use crate::stages::eval::client::config::ClientConfig;
use crate::stages::eval::client::endpoint::{Endpoint, redact_url};
use crate::stages::eval::client::redirect::{MAX_REDIRECTS, same_host_redirect};
use crate::stages::eval::client::wire::*;
use crate::stages::eval::prompt::Message;

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

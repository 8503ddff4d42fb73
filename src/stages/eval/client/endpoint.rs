//! An OpenAI-compatible endpoint: the `openai:MODEL@BASE_URL` spec, the
//! chat URL, the URL with its secrets redacted for logs, the run's cache
//! folder.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use ureq::http::Uri;

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
    pub(super) fn secrets(&self) -> Vec<String> {
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

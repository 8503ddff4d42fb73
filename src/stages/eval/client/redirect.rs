//! The redirects a call follows: to the configured host only, a few at
//! most, so a key is never sent to another server.

use ureq::http::Uri;

use crate::stages::eval::client::endpoint::redact_url;

/// Redirects of one call followed at most (all to the configured host).
pub(super) const MAX_REDIRECTS: usize = 5;

/// The URL a redirect from `from` to `location` (absolute, or relative to
/// `from`) leads to, when it stays on the same host (scheme, host and
/// port); else why it is not followed, naming both hosts.
pub(super) fn same_host_redirect(
    from: &str,
    location: &str,
) -> std::result::Result<String, String> {
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
pub(super) fn host_of(url: &str) -> String {
    match url.parse::<Uri>() {
        Ok(uri) => {
            let host = uri.host().unwrap_or("?");
            let port = uri.port_u16().map_or_else(String::new, |p| format!(":{p}"));
            format!("{}://{host}{port}", uri.scheme_str().unwrap_or("http"))
        }
        Err(_) => "an unreadable URL".to_string(),
    }
}

//! Fault injection for `puzzleforge eval` through a fake chat-completions
//! server on 127.0.0.1 (a fake: real providers do not fail on demand).
//! Each position of the set is bound to one fault; the run must record each
//! as it should, fail when calls got no answer, and a rerun must ask again
//! for exactly those calls (answers come from the cache).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use puzzleforge::chess::record::{Puzzle, read_puzzles, write_puzzles};
use puzzleforge::stages::eval::task::{fen_of, puzzle_tasks};

const KEY: &str = "sk-fake-secret-0123456789";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    RateLimitedOnce,
    ServerError,
    Slow,
    MalformedJson,
    EmptyContent,
    CutOff,
    /// 429 with `Retry-After: 86400` on every attempt.
    RateLimitedForADay,
    /// 200 with an empty body.
    EmptyBody,
    /// Answers correctly at once.
    Healthy,
}

struct FakeServer {
    url: String,
    requests: Arc<AtomicUsize>,
    bad_auth: Arc<AtomicUsize>,
    /// The request line's target of every request.
    paths: Arc<Mutex<Vec<String>>>,
    /// Method, target and body length of every request.
    seen: Arc<Mutex<Vec<(String, String, usize)>>>,
}

/// Makes the fake answer calls to `/v1/...` with a redirect: the status
/// line and the `Location` (given the fake's own port).
#[derive(Clone)]
struct Redirect {
    status: &'static str,
    location: Arc<dyn Fn(u16) -> String + Send + Sync>,
}

fn completion(content: &str, finish: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 7}
    })
    .to_string()
}

fn respond(stream: &mut TcpStream, status: &str, extra: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

#[allow(clippy::too_many_arguments)]
fn handle(
    mut stream: TcpStream,
    faults: &HashMap<String, (Fault, String)>,
    seen: &Mutex<HashMap<String, usize>>,
    bad_auth: &AtomicUsize,
    paths: &Mutex<Vec<String>>,
    requests: &Mutex<Vec<(String, String, usize)>>,
    redirect: Option<&Redirect>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0usize;
    let mut authorized = false;
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    paths.lock().unwrap().push(target.clone());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line.eq_ignore_ascii_case(&format!("authorization: Bearer {KEY}")) {
            authorized = true;
        }
    }
    if !authorized {
        bad_auth.fetch_add(1, Ordering::SeqCst);
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    requests
        .lock()
        .unwrap()
        .push((method, target.clone(), body.len()));
    if let Some(redirect) = redirect.filter(|_| target.starts_with("/v1/")) {
        let port = stream.local_addr().unwrap().port();
        let location = format!("Location: {}\r\n", (redirect.location)(port));
        respond(&mut stream, redirect.status, &location, "");
        return;
    }
    let body = String::from_utf8_lossy(&body);
    let Some((fen, (fault, answer))) = faults.iter().find(|(fen, _)| body.contains(fen.as_str()))
    else {
        respond(
            &mut stream,
            "400 Bad Request",
            "",
            "{\"error\":\"unknown position\"}",
        );
        return;
    };
    let attempt = {
        let mut seen = seen.lock().unwrap();
        let n = seen.entry(fen.clone()).or_default();
        *n += 1;
        *n
    };
    let ok = completion(&format!("{{\"move\": \"{answer}\"}}"), "stop");
    match fault {
        Fault::RateLimitedOnce if attempt == 1 => respond(
            &mut stream,
            "429 Too Many Requests",
            "Retry-After: 1\r\n",
            "{\"error\":\"rate limited\"}",
        ),
        Fault::RateLimitedOnce | Fault::Healthy => respond(&mut stream, "200 OK", "", &ok),
        Fault::RateLimitedForADay => respond(
            &mut stream,
            "429 Too Many Requests",
            "Retry-After: 86400\r\n",
            "{\"error\":\"rate limited\"}",
        ),
        Fault::ServerError => respond(
            &mut stream,
            "500 Internal Server Error",
            "",
            "{\"error\":\"boom\"}",
        ),
        Fault::Slow => {
            std::thread::sleep(Duration::from_millis(1500));
            respond(&mut stream, "200 OK", "", &ok);
        }
        Fault::MalformedJson => respond(&mut stream, "200 OK", "", "{\"choices\": [ {\"mess"),
        Fault::EmptyBody => respond(&mut stream, "200 OK", "", ""),
        Fault::EmptyContent => respond(&mut stream, "200 OK", "", &completion("", "stop")),
        Fault::CutOff => respond(
            &mut stream,
            "200 OK",
            "",
            &completion("Let me look at this position carefully. The", "length"),
        ),
    }
}

fn start_fake(faults: HashMap<String, (Fault, String)>) -> FakeServer {
    start_fake_on(TcpListener::bind("127.0.0.1:0").unwrap(), faults)
}

fn start_fake_on(listener: TcpListener, faults: HashMap<String, (Fault, String)>) -> FakeServer {
    start_fake_redirecting(listener, faults, None)
}

fn start_fake_redirecting(
    listener: TcpListener,
    faults: HashMap<String, (Fault, String)>,
    redirect: Option<Redirect>,
) -> FakeServer {
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let bad_auth = Arc::new(AtomicUsize::new(0));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let requests_seen = Arc::new(Mutex::new(Vec::new()));
    let faults = Arc::new(faults);
    let seen = Arc::new(Mutex::new(HashMap::new()));
    {
        let (requests, bad_auth, paths, requests_seen) = (
            requests.clone(),
            bad_auth.clone(),
            paths.clone(),
            requests_seen.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                requests.fetch_add(1, Ordering::SeqCst);
                let (faults, seen, bad_auth, paths, requests_seen, redirect) = (
                    faults.clone(),
                    seen.clone(),
                    bad_auth.clone(),
                    paths.clone(),
                    requests_seen.clone(),
                    redirect.clone(),
                );
                std::thread::spawn(move || {
                    handle(
                        stream,
                        &faults,
                        &seen,
                        &bad_auth,
                        &paths,
                        &requests_seen,
                        redirect.as_ref(),
                    )
                });
            }
        });
    }
    FakeServer {
        url,
        requests,
        bad_auth,
        paths,
        seen: requests_seen,
    }
}

/// The set of `n` one-move puzzles, each position bound to `fault`.
fn set_with(
    dir: &Path,
    n: usize,
    fault: Fault,
) -> (std::path::PathBuf, HashMap<String, (Fault, String)>) {
    let puzzles = one_move_puzzles(n);
    let set = dir.join("set.csv");
    write_puzzles(&set, &puzzles).unwrap();
    let mut faults = HashMap::new();
    for (i, puzzle) in puzzles.iter().enumerate() {
        let task = &puzzle_tasks(i, puzzle).unwrap()[0];
        faults.insert(fen_of(&task.position), (fault, task.expected.to_string()));
    }
    (set, faults)
}

fn write_config(dir: &Path, client: &str) -> std::path::PathBuf {
    let config = dir.join("pipeline.toml");
    std::fs::write(
        &config,
        format!(
            "[eval.client]\napi_key_env = \"PUZZLEFORGE_FAKE_KEY\"\nbackoff_min_ms = 10\nbackoff_max_ms = 50\n{client}"
        ),
    )
    .unwrap();
    config
}

fn one_move_puzzles(n: usize) -> Vec<Puzzle> {
    read_puzzles(Path::new("tests/data/lichess_db_puzzle_subset_1499.csv"))
        .unwrap()
        .into_iter()
        .filter(|p| p.moves.len() == 2)
        .take(n)
        .collect()
}

fn run_eval(dir: &Path, set: &Path, url: &str, config: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["--json", "eval"])
        .arg(set)
        .args(["--model", &format!("openai:fake-model@{url}")])
        .args(["--template", "paper-json", "--no-regret", "--workers", "6"])
        .arg("--config")
        .arg(config)
        .arg("-o")
        .arg(dir.join("run"))
        .env("PUZZLEFORGE_FAKE_KEY", KEY)
        .output()
        .unwrap()
}

#[test]
fn faults_are_recorded_and_a_rerun_asks_only_the_failed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let puzzles = one_move_puzzles(6);
    let set = dir.path().join("set.csv");
    write_puzzles(&set, &puzzles).unwrap();
    let order = [
        Fault::RateLimitedOnce,
        Fault::ServerError,
        Fault::Slow,
        Fault::MalformedJson,
        Fault::EmptyContent,
        Fault::CutOff,
    ];
    let mut faults = HashMap::new();
    for (i, (puzzle, fault)) in puzzles.iter().zip(order).enumerate() {
        let task = &puzzle_tasks(i, puzzle).unwrap()[0];
        faults.insert(fen_of(&task.position), (fault, task.expected.to_string()));
    }
    let fake = start_fake(faults);
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[eval.client]\napi_key_env = \"PUZZLEFORGE_FAKE_KEY\"\ntimeout_s = 0.5\nmax_attempts = 3\nbackoff_min_ms = 10\nbackoff_max_ms = 50\n",
    )
    .unwrap();

    let first = run_eval(dir.path(), &set, &fake.url, &config);
    let stderr = String::from_utf8_lossy(&first.stderr);
    // Three calls got no answer (500, timeouts, malformed): the eval fails
    // and says how many and why, after writing its report.
    assert_eq!(first.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("3 of 6 model calls failed"), "{stderr}");
    assert!(stderr.contains("1 x HTTP 500"), "{stderr}");
    // 429 then success: 2; 500: 3; slow: 3 timeouts; malformed: 3; empty: 1; cut off: 1.
    assert_eq!(fake.requests.load(Ordering::SeqCst), 13);
    assert_eq!(fake.bad_auth.load(Ordering::SeqCst), 0);

    let run = dir.path().join("run");
    let positions = std::fs::read_to_string(run.join("positions.jsonl")).unwrap();
    let verdicts: Vec<String> = positions
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["verdict"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            "correct",
            "no_answer",
            "no_answer",
            "no_answer",
            "unparseable",
            "unparseable"
        ]
    );
    let calls: Vec<serde_json::Value> = std::fs::read_to_string(run.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls[0]["attempts"], 2);
    assert!(calls[1]["error"].as_str().unwrap().contains("HTTP 500"));
    assert!(
        calls[2]["error"].as_str().unwrap().contains("timeout"),
        "{}",
        calls[2]
    );
    assert!(calls[3]["error"].as_str().unwrap().contains("malformed"));
    assert_eq!(calls[4]["error"], "empty content");
    assert_eq!(calls[5]["finish_reason"], "length");
    assert_eq!(calls[0]["prompt_tokens"], 100);
    let report = std::fs::read(run.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&report).unwrap();
    assert!((value["puzzle_accuracy"].as_f64().unwrap() - 1.0 / 6.0).abs() < 1e-9);
    assert_eq!(value["unparseable_rate"].as_f64().unwrap(), 2.0 / 6.0);

    // The rerun asks again for the three failed calls only (3 attempts
    // each); the answered ones come from the cache.
    let second = run_eval(dir.path(), &set, &fake.url, &config);
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(
        fake.requests.load(Ordering::SeqCst),
        22,
        "the rerun asked for other than the failed calls"
    );
    let again: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(again["puzzle_accuracy"], value["puzzle_accuracy"]);
    assert_eq!(again["unparseable_rate"], value["unparseable_rate"]);
    let _ = report;

    // Allowing half the calls to fail, the same run succeeds.
    let lenient = dir.path().join("lenient.toml");
    let text = std::fs::read_to_string(&config).unwrap() + "max_failed_share = 0.5\n";
    std::fs::write(&lenient, text).unwrap();
    let third = run_eval(dir.path(), &set, &fake.url, &lenient);
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(summary["http_requests"], 9);

    // The key appears in no file of the run, nor in any output.
    for entry in walk(&run) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "key leaked into {}",
            entry.display()
        );
    }
    for out in [&first, &second, &third] {
        assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
        assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_huge_retry_after_is_capped_and_said_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let (set, faults) = set_with(dir.path(), 1, Fault::RateLimitedForADay);
    let fake = start_fake(faults);
    let config = write_config(
        dir.path(),
        "max_attempts = 5\nmax_retry_after_s = 1\nmax_total_wait_s = 2\n",
    );
    let output = run_eval(dir.path(), &set, &fake.url, &config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "eval: HTTP 429, server asked to wait 86400 s; waiting 1.0 s before attempt 2 of 5"
        ),
        "{stderr}"
    );
    // Two waits of 1 s spend the 2 s total: the call gives up after 3 tries.
    assert_eq!(fake.requests.load(Ordering::SeqCst), 3);
    let calls = std::fs::read_to_string(dir.path().join("run/calls.jsonl")).unwrap();
    assert!(calls.contains("total wait"), "{calls}");
    assert!(stderr.contains("1 of 1 model calls failed"), "{stderr}");
}

#[test]
fn a_closed_port_fails_the_eval_and_a_rerun_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let (set, faults) = set_with(dir.path(), 3, Fault::Healthy);
    let config = write_config(dir.path(), "max_attempts = 2\ntimeout_s = 5\n");
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let url = format!("http://{address}/v1");

    let first = run_eval(dir.path(), &set, &url, &config);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("3 of 3 model calls failed (3 x connection"),
        "{stderr}"
    );

    // The server comes up on that port: the same command asks again.
    let fake = start_fake_on(TcpListener::bind(address).unwrap(), faults);
    let second = run_eval(dir.path(), &set, &url, &config);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(fake.requests.load(Ordering::SeqCst), 3);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["puzzle_accuracy"].as_f64(), Some(1.0));
}

#[test]
fn a_base_url_keeps_its_query_and_its_secrets_stay_out_of_the_run() {
    const PASSWORD: &str = "url-pass-4711";
    const QUERY_KEY: &str = "query-key-0815";
    let dir = tempfile::tempdir().unwrap();
    let (set, mut faults) = set_with(dir.path(), 2, Fault::Healthy);
    // One call fails, so its error message is recorded too.
    if let Some(entry) = faults.values_mut().next() {
        entry.0 = Fault::ServerError;
    }
    let fake = start_fake(faults);
    let url = fake
        .url
        .replace("http://", &format!("http://user:{PASSWORD}@"))
        + &format!("?api-key={QUERY_KEY}");
    let config = write_config(dir.path(), "max_attempts = 1\nmax_failed_share = 0.5\n");
    let output = run_eval(dir.path(), &set, &url, &config);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let paths = fake.paths.lock().unwrap().clone();
    assert_eq!(paths.len(), 2);
    for path in &paths {
        assert_eq!(path, &format!("/v1/chat/completions?api-key={QUERY_KEY}"));
    }
    for secret in [PASSWORD, QUERY_KEY, KEY] {
        for entry in walk(&dir.path().join("run")) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{secret} leaked into {}",
                entry.display()
            );
        }
        assert!(!String::from_utf8_lossy(&output.stdout).contains(secret));
        assert!(!String::from_utf8_lossy(&output.stderr).contains(secret));
    }
    let config_json = std::fs::read_to_string(dir.path().join("run/config.json")).unwrap();
    assert!(config_json.contains("api-key=[redacted]"), "{config_json}");
}

/// Inside `run`, an eval whose calls failed is not marked done, and the next
/// `run` asks only the calls that failed: the answers it got are kept beside
/// the release, not in the stage's scratch folder.
#[test]
fn a_run_whose_eval_failed_asks_only_the_failed_calls_on_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let puzzles = one_move_puzzles(8);
    let pool = dir.path().join("pool.csv");
    write_puzzles(&pool, &puzzles).unwrap();
    let mut faults = HashMap::new();
    for (i, puzzle) in puzzles.iter().enumerate() {
        let task = &puzzle_tasks(i, puzzle).unwrap()[0];
        // Every other position is refused once: with one attempt per call,
        // those calls fail in the first run and succeed in the second.
        let fault = if i % 2 == 0 {
            Fault::RateLimitedOnce
        } else {
            Fault::Healthy
        };
        faults.insert(fen_of(&task.position), (fault, task.expected.to_string()));
    }
    let fake = start_fake(faults);
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        format!(
            r#"[pipeline]
seed = 3
output_dir = "out"
release = "r"
stages = ["ingest_puzzles", "release", "eval"]

[sources]
puzzles = ["{pool}"]

[release]
train_per_cell = 0
test_per_cell = 8

[[release.bands]]
ratings = [400, 3000]
lengths = [1, 1]

[eval]
model = "openai:fake-model@{url}"
templates = ["paper-json"]

[eval.regret]
enabled = false

[eval.client]
api_key_env = "PUZZLEFORGE_FAKE_KEY"
max_attempts = 1
"#,
            pool = pool.display(),
            url = fake.url,
        ),
    )
    .unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
            .args(["--json", "run", "--config"])
            .arg(&config)
            .current_dir(dir.path())
            .env("PUZZLEFORGE_FAKE_KEY", KEY)
            .output()
            .unwrap()
    };
    let first = run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(!first.status.success(), "{stderr}");
    assert!(stderr.contains("model calls failed"), "{stderr}");
    let asked_first = fake.requests.load(Ordering::SeqCst);
    let tests: usize = std::fs::read_to_string(dir.path().join("out/r/release/test.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert_eq!(asked_first, tests, "one call per test position");
    assert!(!dir.path().join("out/r/eval/stage.json").exists());

    let second = run();
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let failed_first = tests.div_ceil(2).min(tests);
    let asked_second = fake.requests.load(Ordering::SeqCst) - asked_first;
    assert!(
        asked_second < tests && asked_second > 0,
        "the rerun asked {asked_second} of {tests} calls"
    );
    assert!(asked_second <= failed_first);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/r/eval/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["puzzle_accuracy"].as_f64(), Some(1.0), "{report}");
}

/// A redirect to another host is not followed: the call fails naming both
/// hosts, and the other host is never asked (nor given the prompt or the
/// key); nothing is cached. A redirect to the same host is followed as
/// the same POST with the same body, and the answer scored.
#[test]
fn redirects_are_followed_only_to_the_same_host_keeping_the_post() {
    let dir = tempfile::tempdir().unwrap();
    let (set, faults) = set_with(dir.path(), 1, Fault::Healthy);
    let config = write_config(dir.path(), "max_attempts = 1\n");
    // The other host: this machine by another name, serving the model.
    let other = start_fake(faults.clone());
    let other_host = other
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .replace("127.0.0.1", "localhost");
    let location = format!("http://{other_host}/v1/chat/completions");
    let away = start_fake_redirecting(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        faults.clone(),
        Some(Redirect {
            status: "302 Found",
            location: Arc::new(move |_| location.clone()),
        }),
    );
    let output = run_eval(dir.path(), &set, &away.url, &config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let away_host = away
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    for named in [away_host.as_str(), other_host.as_str(), "another host"] {
        assert!(stderr.contains(named), "{named}: {stderr}");
    }
    assert_eq!(other.requests.load(Ordering::SeqCst), 0);
    assert!(!stderr.contains(KEY));
    // The model's calls in the cache; `cache/maia` holds the human
    // ladder's net policies (computed by puzzleforge, never a call).
    let cached = walk(&dir.path().join("run"))
        .into_iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "cache"))
        .filter(|p| !p.components().any(|c| c.as_os_str() == "maia"))
        .count();
    assert_eq!(cached, 0, "a failed call was cached");

    // Same host, another path: 307 and 302 alike keep the POST, its body
    // and its key.
    for status in ["307 Temporary Redirect", "302 Found"] {
        let here = start_fake_redirecting(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            faults.clone(),
            Some(Redirect {
                status,
                location: Arc::new(|port| format!("http://127.0.0.1:{port}/v2/chat/completions")),
            }),
        );
        std::fs::remove_dir_all(dir.path().join("run")).ok();
        let output = run_eval(dir.path(), &set, &here.url, &config);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{status}: {stderr}");
        let seen = here.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{status}: {seen:?}");
        assert_eq!(seen[0].1, "/v1/chat/completions");
        assert_eq!(
            (seen[1].0.as_str(), seen[1].1.as_str()),
            ("POST", "/v2/chat/completions")
        );
        assert_eq!(seen[1].2, seen[0].2, "{status}: the body changed");
        assert_eq!(here.bad_auth.load(Ordering::SeqCst), 0, "{status}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("run/report.json")).unwrap())
                .unwrap();
        assert_eq!(report["puzzle_accuracy"].as_f64(), Some(1.0), "{status}");
    }
}

/// A redirect loop (the fake, injecting the fault, answers every call with
/// a 302 to the very URL it was asked) and an empty 200 reply each fail the
/// call with a message naming the whole chat-completions URL, not cut after
/// its scheme ("more than 5 redirects from http"), and the empty reply says
/// its body was empty instead of ending in nothing.
#[test]
fn a_redirect_loop_and_an_empty_reply_name_the_whole_url() {
    let dir = tempfile::tempdir().unwrap();
    let (set, faults) = set_with(dir.path(), 1, Fault::EmptyBody);
    let config = write_config(dir.path(), "max_attempts = 1\n");
    let looping = start_fake_redirecting(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        faults.clone(),
        Some(Redirect {
            status: "302 Found",
            location: Arc::new(|port| format!("http://127.0.0.1:{port}/v1/chat/completions")),
        }),
    );
    let output = run_eval(dir.path(), &set, &looping.url, &config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let url = format!("{}/chat/completions", looping.url);
    let said = format!("1 x more than 5 redirects from {url} (each to itself)");
    assert!(stderr.contains(&said), "no {said:?} in {stderr}");
    // The first request and five redirects, then it stops.
    assert_eq!(looping.seen.lock().unwrap().len(), 6);

    let empty = start_fake(faults);
    std::fs::remove_dir_all(dir.path().join("run")).unwrap();
    let output = run_eval(dir.path(), &set, &empty.url, &config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let url = format!("{}/chat/completions", empty.url);
    let said = format!("empty reply (HTTP 200) from {url}: the body was empty");
    assert!(stderr.contains(&said), "no {said:?} in {stderr}");
    let calls = std::fs::read_to_string(dir.path().join("run/calls.jsonl")).unwrap();
    assert!(calls.contains("the body was empty"), "{calls}");
}

//! Fault injection for `puzzleforge eval` through a fake chat-completions
//! server on 127.0.0.1 (a fake: real providers do not fail on demand).
//! Each position of the set is bound to one fault; the run must finish and
//! record each as it should, and a rerun must be served from the cache
//! without one HTTP request, producing the same report bytes.

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
}

struct FakeServer {
    url: String,
    requests: Arc<AtomicUsize>,
    bad_auth: Arc<AtomicUsize>,
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

fn handle(
    mut stream: TcpStream,
    faults: &HashMap<String, (Fault, String)>,
    seen: &Mutex<HashMap<String, usize>>,
    bad_auth: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0usize;
    let mut authorized = false;
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
        Fault::RateLimitedOnce => respond(&mut stream, "200 OK", "", &ok),
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let bad_auth = Arc::new(AtomicUsize::new(0));
    let faults = Arc::new(faults);
    let seen = Arc::new(Mutex::new(HashMap::new()));
    {
        let (requests, bad_auth) = (requests.clone(), bad_auth.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                requests.fetch_add(1, Ordering::SeqCst);
                let (faults, seen, bad_auth) = (faults.clone(), seen.clone(), bad_auth.clone());
                std::thread::spawn(move || handle(stream, &faults, &seen, &bad_auth));
            }
        });
    }
    FakeServer {
        url,
        requests,
        bad_auth,
    }
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
fn faults_are_recorded_and_a_rerun_is_served_from_the_cache() {
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
        faults.insert(fen_of(&task.position), (fault, task.expected.clone()));
    }
    let fake = start_fake(faults);
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[eval.client]\napi_key_env = \"PUZZLEFORGE_FAKE_KEY\"\ntimeout_s = 0.5\nmax_attempts = 3\nbackoff_min_ms = 10\nbackoff_max_ms = 50\n",
    )
    .unwrap();

    let first = run_eval(dir.path(), &set, &fake.url, &config);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
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

    // The rerun: every call answered from the cache, identical report.
    let second = run_eval(dir.path(), &set, &fake.url, &config);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(
        fake.requests.load(Ordering::SeqCst),
        13,
        "the rerun sent requests"
    );
    assert_eq!(std::fs::read(run.join("report.json")).unwrap(), report);
    let summary: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(summary["http_requests"], 0);

    // The key appears in no file of the run, nor in any output.
    for entry in walk(&run) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "key leaked into {}",
            entry.display()
        );
    }
    for out in [&first, &second] {
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

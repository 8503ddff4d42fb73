//! End to end against a real model served by scripts/llm_server.sh
//! (llama.cpp's llama-server with SmolLM2-135M-Instruct). Ignored by
//! default: it needs that server, which takes ~17 minutes to build. Run it
//! with PUZZLEFORGE_LLM_URL naming the server (e.g.
//! http://127.0.0.1:8089/v1) and `cargo test --test tests -- --ignored
//! eval_llm`; without it the test fails.

use std::path::Path;
use std::process::Command;

use puzzleforge::chess::record::{read_puzzles, write_puzzles};

#[test]
#[ignore = "needs a real model server: PUZZLEFORGE_LLM_URL (scripts/llm_server.sh)"]
fn twenty_puzzles_with_both_templates_through_a_real_model() {
    let url = std::env::var("PUZZLEFORGE_LLM_URL")
        .expect("PUZZLEFORGE_LLM_URL names the model server (scripts/llm_server.sh)");
    let dir = tempfile::tempdir().unwrap();
    let puzzles = read_puzzles(Path::new("tests/data/lichess_db_puzzle_subset_1499.csv")).unwrap();
    let set = dir.path().join("set.csv");
    write_puzzles(&set, &puzzles[..20]).unwrap();
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[eval]\n[eval.client]\napi_key_env = \"\"\nmax_tokens = 256\nworkers = 2\ntimeout_s = 120\n[eval.regret]\nnodes = 5000\n[eval.engine]\nworkers = 2\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
            .arg("--json")
            .arg("eval")
            .arg(&set)
            .args(["--model", &format!("openai:smollm2@{url}")])
            .args(["--template", "paper-json", "--template", "epoch"])
            .arg("--config")
            .arg(&config)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    eprintln!("{}", String::from_utf8_lossy(&first.stderr));
    eprintln!("{summary}");
    assert!(summary["positions"].as_u64().unwrap() >= 40);
    assert_eq!(summary["no_answer_rate"], 0.0, "the server failed calls");
    let report = std::fs::read(out.join("report.json")).unwrap();
    let second = run();
    assert!(second.status.success());
    let again: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(again["http_requests"], 0);
    assert_eq!(std::fs::read(out.join("report.json")).unwrap(), report);
}

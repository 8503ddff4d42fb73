//! The `random` and `engine` baseline players on 20 real Lichess puzzles,
//! with regret from a real Stockfish (/usr/games/stockfish; the test fails
//! without it), determinism of the report, and `compare` between them.

use std::path::Path;
use std::process::Command;

use puzzleforge::chess::record::{read_puzzles, write_puzzles};

fn puzzleforge(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A folder holding `rows` of the Lichess sample as `set.csv` and a
/// `pipeline.toml` with `config`; returns (folder, set path, config path).
/// Fails when Stockfish is missing: these tests need the real engine.
fn sample_set(rows: std::ops::Range<usize>, config: &str) -> (tempfile::TempDir, String, String) {
    assert!(
        Path::new("/usr/games/stockfish").exists(),
        "Stockfish is required at /usr/games/stockfish"
    );
    let dir = tempfile::tempdir().unwrap();
    let puzzles = read_puzzles(Path::new("tests/data/lichess_db_puzzle_subset_1499.csv")).unwrap();
    let set = dir.path().join("set.csv");
    write_puzzles(&set, &puzzles[rows]).unwrap();
    let config_path = dir.path().join("pipeline.toml");
    std::fs::write(&config_path, config).unwrap();
    let (set, config_path) = (
        set.to_str().unwrap().to_string(),
        config_path.to_str().unwrap().to_string(),
    );
    (dir, set, config_path)
}

#[test]
fn engine_scores_far_above_random_and_reports_are_deterministic() {
    let (dir, set, config) = sample_set(
        0..20,
        "[eval.regret]\nnodes = 5000\n[eval.engine]\nworkers = 2\n",
    );
    let (set, config) = (set.as_str(), config.as_str());
    let run = |name: &str, model: &str| {
        let out = dir.path().join(name);
        let summary = puzzleforge(&[
            "eval",
            set,
            "--model",
            model,
            "--config",
            config,
            "-o",
            out.to_str().unwrap(),
        ]);
        (out, summary)
    };
    let (random_dir, random) = run("random", "random");
    let (engine_dir, engine) = run("engine", "engine:stockfish?nodes=200000");
    let random_acc = random["puzzle_accuracy"].as_f64().unwrap();
    let engine_acc = engine["puzzle_accuracy"].as_f64().unwrap();
    assert!(engine_acc >= 0.7, "engine accuracy {engine_acc}");
    assert!(random_acc <= 0.2, "random accuracy {random_acc}");
    assert!(engine_acc - random_acc >= 0.5);
    assert_eq!(engine["illegal_rate"], 0.0);
    let engine_regret = engine["median_regret"].as_f64().unwrap();
    let random_regret = random["median_regret"].as_f64().unwrap();
    assert!(
        engine_regret < random_regret,
        "{engine_regret} vs {random_regret}"
    );

    let report = std::fs::read(random_dir.join("report.json")).unwrap();
    for key in [
        "puzzle_accuracy",
        "position_accuracy",
        "illegal_rate",
        "unparseable_rate",
        "median_regret",
    ] {
        let v: serde_json::Value = serde_json::from_slice(&report).unwrap();
        assert!(v.get(key).is_some(), "report.json lacks {key}");
    }
    for picture in [
        "accuracy_by_rating.svg",
        "regret_distribution.svg",
        "illegal_rate_by_template.svg",
    ] {
        let svg = std::fs::read_to_string(random_dir.join(picture)).unwrap();
        assert!(svg.starts_with("<svg"), "{picture}");
    }
    // Same inputs, same report bytes.
    let (again_dir, _) = run("random-again", "random");
    assert_eq!(
        std::fs::read(again_dir.join("report.json")).unwrap().len(),
        report.len()
    );
    let strip = |bytes: Vec<u8>| {
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v["config"]["config"]["cache_dir"] = serde_json::Value::Null;
        v
    };
    assert_eq!(
        strip(std::fs::read(again_dir.join("report.json")).unwrap()),
        strip(report)
    );

    let compared = puzzleforge(&[
        "compare",
        random_dir.to_str().unwrap(),
        engine_dir.to_str().unwrap(),
        "-o",
        dir.path().join("cmp").to_str().unwrap(),
    ]);
    let overall = compared["overall"].as_array().unwrap();
    assert_eq!(overall[0]["metric"], "puzzle_accuracy");
    assert!(overall[0]["welch"]["p_one_sided"].as_f64().unwrap() < 0.01);
    assert!(dir.path().join("cmp/compare.md").exists());
    let picture =
        std::fs::read_to_string(dir.path().join("cmp/illegal_rate_by_template.svg")).unwrap();
    assert!(picture.starts_with("<svg"));
    assert!(
        picture.contains("A: none") && picture.contains("B: none"),
        "baselines use no template"
    );
}

/// `engine:stockfish?elo=E` replays Stockfish 15.1's skill rule with the
/// run's seed: the same seed gives the same answers, another seed other
/// answers, and the weak player scores below the full-strength one.
#[test]
fn elo_limited_engine_is_reproducible_per_seed() {
    let (dir, set, config) = sample_set(
        100..130,
        "[eval.regret]\nenabled = false\n[eval.engine]\nworkers = 2\n",
    );
    let (set, config) = (set.as_str(), config.as_str());
    let run = |name: &str, model: &str, seed: &str| {
        let out = dir.path().join(name);
        let summary = puzzleforge(&[
            "eval",
            set,
            "--model",
            model,
            "--config",
            config,
            "--seed",
            seed,
            "-o",
            out.to_str().unwrap(),
        ]);
        let played: Vec<serde_json::Value> = std::fs::read_to_string(out.join("positions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["played"].clone())
            .collect();
        (summary, played)
    };
    let (weak, first) = run("weak-a", "engine:stockfish?elo=1350", "1");
    let (_, again) = run("weak-b", "engine:stockfish?elo=1350", "1");
    let (_, other_seed) = run("weak-c", "engine:stockfish?elo=1350", "2");
    assert_eq!(first, again, "same seed, same moves");
    assert_ne!(first, other_seed, "the seed drives the weakened choice");
    let (strong, _) = run("strong", "engine:stockfish?nodes=100000", "1");
    let weak_acc = weak["position_accuracy"].as_f64().unwrap();
    let strong_acc = strong["position_accuracy"].as_f64().unwrap();
    assert!(
        weak_acc < strong_acc,
        "Elo 1350 {weak_acc} vs full strength {strong_acc}"
    );
    assert_eq!(weak["illegal_rate"], 0.0);
}

#[test]
fn random_rollouts_end_on_engine_checkmate_or_move_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[eval.regret]\nnodes = 2000\n[eval.engine]\nworkers = 2\n[rollout]\nmax_moves = 4\nopponent_nodes = 2000\n",
    )
    .unwrap();
    let out = dir.path().join("rollout");
    let summary = puzzleforge(&[
        "rollout",
        "--model",
        "random",
        "--config",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary["games"], 10);
    assert_eq!(summary["illegal_attempt_rate"], 0.0);
    assert!(summary["accepted_moves"].as_u64().unwrap() >= 20);
    assert!(summary["mean_regret"].as_f64().unwrap() > 0.0);
    assert!(out.join("moves.jsonl").exists());
}

//! `run --aim RUN --solve-rate P`: a tier aimed at a model from a real eval
//! run (Stockfish at 1 node on 300 real Lichess puzzles), drawn from other
//! real puzzles that eval never saw.

use std::path::Path;

use crate::common::{data, eval_run, puzzleforge, summary};

fn write_config(dir: &Path, source: &Path) -> std::path::PathBuf {
    let config = dir.join("pipeline.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[pipeline]
seed = 11
output_dir = "out"
stages = ["ingest_puzzles", "release"]

[sources]
puzzles = ["{}"]

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 3000]
lengths = [1, 3]
"#,
            source.display()
        ),
    )
    .unwrap();
    config
}

/// The release's manifest and card.
fn release_of(dir: &Path, release: &str) -> (serde_json::Value, String) {
    let folder = dir.join("out").join(release).join("release");
    let manifest = serde_json::from_slice(&std::fs::read(folder.join("manifest.json")).unwrap());
    let card = std::fs::read_to_string(folder.join("README.md")).unwrap();
    (manifest.unwrap(), card)
}

#[test]
fn a_tier_aimed_at_a_solve_rate_lies_where_the_models_curve_gives_it() {
    let dir = tempfile::tempdir().unwrap();
    let (run, source) = eval_run(dir.path());
    let config = write_config(dir.path(), &source);
    let aim = |release: &str, rate: &str| {
        summary(&puzzleforge(
            dir.path(),
            &[
                "--json",
                "run",
                "--config",
                config.to_str().unwrap(),
                "--release",
                release,
                "--aim",
                run.to_str().unwrap(),
                "--solve-rate",
                rate,
            ],
        ));
        release_of(dir.path(), release)
    };
    let (hard, hard_card) = aim("a30", "0.3");
    let (easy, _) = aim("a60", "0.6");
    for (manifest, rate) in [(&hard, 0.3), (&easy, 0.6)] {
        assert_eq!(manifest["tier"], "aimed");
        let aimed = &manifest["aim"];
        assert_eq!(aimed["model"], "engine:stockfish?nodes=1", "{aimed}");
        assert_eq!(aimed["solve_rate"], rate);
        assert_eq!(aimed["attempts"], 300);
        // The eval's own puzzle rating, as its report words it.
        assert!(
            aimed["puzzle_rating"]
                .as_str()
                .is_some_and(|r| r.contains("95%")),
            "{aimed}"
        );
        let (low, at, high) = (
            aimed["low"].as_f64().unwrap(),
            aimed["rating"].as_f64().unwrap(),
            aimed["high"].as_f64().unwrap(),
        );
        assert!(low < at && at < high, "{aimed}");
        // The tier's window is the interval in whole 100-point bins, and
        // every puzzle drawn is rated inside it.
        let tier = &manifest["config"]["tiers"]["aimed"];
        let (min, max) = (
            tier["min_rating"].as_i64().unwrap(),
            tier["max_rating"].as_i64().unwrap(),
        );
        assert!(
            min as f64 <= low && high <= max as f64 && max - min <= (high - low) as i64 + 200,
            "{tier} for {aimed}"
        );
        assert!(
            manifest["counts"]["train"].as_u64().unwrap() > 3,
            "{manifest}"
        );
        for cell in manifest["cells"].as_array().unwrap() {
            let bin = cell["rating_bin"].as_str().unwrap();
            let lo: i64 = bin[1..bin.find(',').unwrap()].parse().unwrap();
            assert!(lo >= min && lo + 100 <= max, "{bin} outside {min}-{max}");
        }
    }
    // A lower solve rate asks for harder puzzles.
    assert!(hard["aim"]["rating"].as_f64() > easy["aim"]["rating"].as_f64());
    assert!(
        hard_card.contains("Aimed at `engine:stockfish?nodes=1`")
            && hard_card.contains("to be solved 30% of the time"),
        "{hard_card}"
    );
}

#[test]
fn an_aim_needs_an_eval_run_and_a_rate_strictly_between_0_and_1() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &data("lichess_db_puzzle_subset_1499.csv"));
    let config = config.to_str().unwrap();
    let fails = |args: &[&str]| {
        let out = puzzleforge(dir.path(), &[&["run", "--config", config], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = dir.path().join("no-such-run");
    let missing = missing.to_str().unwrap();
    let stderr = fails(&["--aim", missing, "--solve-rate", "0.3"]);
    assert!(
        stderr.contains("positions.jsonl") && stderr.contains("not an eval run"),
        "{stderr}"
    );
    let stderr = fails(&["--aim", missing, "--solve-rate", "1.5"]);
    assert!(stderr.contains("strictly between 0 and 1"), "{stderr}");
    let stderr = fails(&["--aim", missing]);
    assert!(stderr.contains("--solve-rate"), "{stderr}");
    let stderr = fails(&["--aim", missing, "--solve-rate", "0.3", "--tier", "hard"]);
    assert!(stderr.contains("--tier"), "{stderr}");
    assert!(!dir.path().join("out").exists(), "nothing written");
}

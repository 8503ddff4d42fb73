//! `puzzleforge run`: stages in order, manifests, skipping unchanged stages,
//! config errors, the release lock.

use std::path::{Path, PathBuf};

mod common;
use common::{puzzleforge as run, summary};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A small pipeline over the bundled Lichess sample, in `dir`.
fn write_config(dir: &Path, extra_ingest: &str) -> PathBuf {
    let config = format!(
        r#"
[pipeline]
seed = 7
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "ingest_games", "release", "export"]

[sources]
puzzles = ["{puzzles}"]
games = ["{games}"]

[ingest.puzzles]
{extra_ingest}

[split]
train_per_cell = 1
test_per_cell = 1

[[split.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[export]
formats = ["dspy", "lichess"]
split = "test"
"#,
        puzzles = data("lichess_db_puzzle_subset_1499.csv").display(),
        games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn skipped(summary: &serde_json::Value) -> Vec<(String, bool)> {
    summary["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap().to_string(),
                s["skipped"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn stages_run_in_order_then_skip_until_inputs_or_config_change() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let first = summary(&run(dir.path(), &["run", "--json"]));
    assert_eq!(
        skipped(&first),
        vec![
            ("ingest_puzzles".into(), false),
            ("ingest_games".into(), false),
            ("release".into(), false),
            ("export".into(), false)
        ]
    );
    let release = dir.path().join("out/r1");
    for stage in ["ingest_puzzles", "ingest_games", "release", "export"] {
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(release.join(stage).join("stage.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["stage"], stage);
        assert!(manifest["fingerprint"]["config"].is_object(), "{stage}");
        assert!(manifest["seconds"].as_f64().is_some(), "{stage}");
        assert!(
            !manifest["outputs"].as_object().unwrap().is_empty(),
            "{stage}"
        );
    }
    let ingest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(release.join("ingest_puzzles/stage.json")).unwrap())
            .unwrap();
    let inputs = ingest["fingerprint"]["inputs"].as_object().unwrap();
    assert_eq!(
        inputs.values().next().unwrap(),
        "4ca7e935cc5f4ba5e6fa8848f7a7641b784112c0092bc2a4a5bb76fce257b100"
    );
    let test_csv = std::fs::read(release.join("release/test.csv")).unwrap();
    // Train and test have equal sizes even where cells are only partly filled.
    let release_counts = &first["stages"][2]["counts"];
    assert!(
        release_counts["train"].as_u64().unwrap() > 0,
        "{release_counts}"
    );
    let (train, test) = (
        release_counts["train"].as_i64().unwrap(),
        release_counts["test"].as_i64().unwrap(),
    );
    assert!((train - test).abs() <= 1, "{release_counts}");

    let second = summary(&run(dir.path(), &["run", "--json"]));
    assert!(skipped(&second).iter().all(|(_, s)| *s), "{second}");

    // A changed filter redoes ingest and, through its changed output,
    // everything downstream.
    write_config(dir.path(), "max_rating = 1500");
    let third = summary(&run(dir.path(), &["run", "--json"]));
    assert_eq!(
        skipped(&third),
        vec![
            ("ingest_puzzles".into(), false),
            ("ingest_games".into(), true),
            ("release".into(), false),
            ("export".into(), false)
        ]
    );
    assert_ne!(
        std::fs::read(release.join("release/test.csv")).unwrap(),
        test_csv
    );

    // A damaged output is redone even though nothing else changed.
    std::fs::write(release.join("export/lichess/test.csv"), "torn").unwrap();
    let fourth = summary(&run(dir.path(), &["run", "--json"]));
    assert_eq!(
        skipped(&fourth).last().unwrap(),
        &("export".to_string(), false)
    );
}

/// A second release under the same output folder repeats no puzzle of the
/// first: its manifest names the first release's files and what they
/// removed.
#[test]
fn a_new_release_excludes_the_puzzles_of_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let config = config.to_str().unwrap();
    summary(&run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "first"],
    ));
    summary(&run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "second"],
    ));
    let ids = |release: &str| -> std::collections::BTreeSet<String> {
        ["train.csv", "test.csv"]
            .iter()
            .flat_map(|file| {
                puzzleforge::chess::record::read_puzzles(
                    &dir.path()
                        .join("out")
                        .join(release)
                        .join("release")
                        .join(file),
                )
                .unwrap()
            })
            .map(|p| p.id)
            .collect()
    };
    let (first, second) = (ids("first"), ids("second"));
    assert!(!first.is_empty() && !second.is_empty());
    assert!(
        first.is_disjoint(&second),
        "{:?}",
        first.intersection(&second)
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/second/release/manifest.json")).unwrap(),
    )
    .unwrap();
    let exclusions = &manifest["exclusions"];
    assert_eq!(
        exclusions["removed"].as_u64(),
        Some(first.len() as u64),
        "{exclusions}"
    );
    let files = exclusions["files"].to_string();
    assert!(files.contains("first/release/train.csv"), "{files}");
}

#[test]
fn same_config_and_seed_give_the_same_bytes() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        write_config(dir.path(), "");
        summary(&run(dir.path(), &["run", "--json"]));
    }
    for file in [
        "release/train.csv",
        "release/test.jsonl",
        "release/manifest.json",
        "export/dspy/test.jsonl",
    ] {
        assert_eq!(
            std::fs::read(a.path().join("out/r1").join(file)).unwrap(),
            std::fs::read(b.path().join("out/r1").join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn unknown_key_and_wrong_type_are_config_errors_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    for (bad, key) in [
        (text.replace("seed = 7", "seed = 7\nseeds = 8"), "seeds"),
        (text.replace("seed = 7", "seed = \"seven\""), "seed"),
        (
            text.replace("train_per_cell = 1", "train_per_cel = 1"),
            "train_per_cel",
        ),
    ] {
        std::fs::write(&config, bad).unwrap();
        let output = run(dir.path(), &["run"]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("pipeline.toml"), "{stderr}");
        assert!(stderr.contains(key), "{stderr}");
    }
}

#[test]
fn a_live_lock_stops_a_second_writer_and_a_stale_one_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let release = dir.path().join("out/r1");
    std::fs::create_dir_all(&release).unwrap();
    // This test process is alive: its pid holds the lock.
    std::fs::write(release.join(".lock"), std::process::id().to_string()).unwrap();
    let output = run(dir.path(), &["run"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("being written"));

    // A pid above the kernel's maximum belongs to no process: stale.
    std::fs::write(release.join(".lock"), "4194305").unwrap();
    summary(&run(dir.path(), &["run", "--json"]));
    assert!(!release.join(".lock").exists());
}

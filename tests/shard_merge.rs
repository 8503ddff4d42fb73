//! `run --shard I/N` + `puzzleforge merge` give the bytes of one unsharded
//! run; merge refuses incomplete, mixed or mismatched shards.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use crate::common::{puzzleforge, summary};

const STOCKFISH: &str = "/usr/games/stockfish";

use crate::common::{data, puzzle_slice};

/// The bundled real Lichess game twice (the copy under another game id),
/// without its `[%eval]` comments so that `ingest_games` passes every
/// position on (`all_positions`). Mining gives puzzles late in the game, so
/// each of two shards mines some, and the copy's repeat the original's
/// positions, so the merge must drop them as a single run does.
fn games_twice(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(data("lichess_game_export_ZlCTzfMG_eval_clk.pgn")).unwrap();
    let mut plain = String::new();
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let game = plain.trim().to_string() + "\n\n";
    let path = dir.join("lichess_games.pgn");
    std::fs::write(
        &path,
        format!("{game}{}", game.replace("ZlCTzfMG", "ZlCTzfMH")),
    )
    .unwrap();
    path
}

/// A small pipeline writing under `dir/<output_dir>`; `stages` and `extra`
/// (appended TOML) vary by test.
fn write_config(dir: &Path, name: &str, output_dir: &str, stages: &str, extra: &str) -> PathBuf {
    let config = format!(
        r#"
[pipeline]
seed = 11
output_dir = "{output_dir}"
release = "r1"
stages = {stages}

[engine]
path = "{STOCKFISH}"
workers = 2

[sources]
puzzles = ["{puzzles}"]
games = ["{games}"]

[ingest.games]
all_positions = true

[selfplay]
games = 6
max_plies = 60

[mine]
nodes = 20000
shallow_depth = 5
max_per_game = 2

[rate]
model = "{model}"

[release]
train_per_cell = 2
test_per_cell = 2

[[release.bands]]
ratings = [400, 2800]
lengths = [1, 3]

[export]
formats = ["dspy", "lichess"]
split = "both"
{extra}
"#,
        puzzles = puzzle_slice(dir, 60).display(),
        games = games_twice(dir).display(),
        model = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/rate_model.json")
            .display(),
    );
    let path = dir.join(name);
    std::fs::write(&path, config).unwrap();
    path
}

fn fails_with(output: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "{word:?} not in: {stderr}");
    }
}

/// Every file under `dir` but the runner's `stage.json`, relative to it.
fn files(dir: &Path) -> Vec<PathBuf> {
    common::files_under(dir, &["stage.json"])
}

fn csv_rows(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count() - 1
}

#[test]
fn two_shards_merged_are_byte_identical_to_one_run() {
    assert!(
        Path::new(STOCKFISH).exists(),
        "{STOCKFISH} is needed (apt install stockfish)"
    );
    let dir = tempfile::tempdir().unwrap();
    let all = r#"["ingest_puzzles", "ingest_games", "selfplay", "mine", "rate", "verify", "release", "export"]"#;
    write_config(dir.path(), "a.toml", "A", all, "");
    write_config(dir.path(), "b.toml", "B", all, "");

    summary(&puzzleforge(
        dir.path(),
        &["run", "--config", "a.toml", "--json"],
    ));
    for shard in ["0/2", "1/2"] {
        let shard_summary = summary(&puzzleforge(
            dir.path(),
            &["run", "--config", "b.toml", "--shard", shard, "--json"],
        ));
        let stages: Vec<&str> = shard_summary["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert_eq!(
            stages,
            ["ingest_puzzles", "ingest_games", "selfplay", "mine", "rate"]
        );
        assert_eq!(
            shard_summary["left_for_merge"],
            serde_json::json!(["verify", "release", "export"])
        );
    }
    let shard_dirs = ["B/r1.shard-0-of-2", "B/r1.shard-1-of-2"];
    for (index, shard) in shard_dirs.iter().enumerate() {
        let root = dir.path().join(shard);
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("mine/stage.json")).unwrap()).unwrap();
        assert_eq!(
            manifest["shard"],
            serde_json::json!({"index": index, "count": 2})
        );
        assert!(!root.join("release").exists(), "release is left for merge");
        // Each shard mines something, or the comparison proves little.
        // (Short self-play games rarely hold an Epoch puzzle; the game
        // candidates do.)
        let mined = csv_rows(&root.join("mine/lichess_games.puzzles.csv"));
        assert!(mined > 0, "{shard} mined no puzzle");
        let games = std::fs::read_to_string(root.join("selfplay/games.pgn")).unwrap();
        assert_eq!(games.matches("[Round ").count(), 3, "{shard}");
    }

    let merged = summary(&puzzleforge(
        dir.path(),
        &[
            "merge",
            shard_dirs[1],
            shard_dirs[0],
            "-o",
            "B/r1",
            "--config",
            "b.toml",
            "--json",
        ],
    ));
    assert_eq!(merged["count"], 2);

    let a = dir.path().join("A/r1");
    let b = dir.path().join("B/r1");
    for stage in [
        "ingest_puzzles",
        "ingest_games",
        "selfplay",
        "mine",
        "rate",
        "verify",
        "release",
        "export",
    ] {
        let (left, right) = (files(&a.join(stage)), files(&b.join(stage)));
        assert!(!left.is_empty(), "{stage}");
        assert_eq!(left, right, "{stage}: different files");
        for file in left {
            assert!(
                std::fs::read(a.join(stage).join(&file)).unwrap()
                    == std::fs::read(b.join(stage).join(&file)).unwrap(),
                "{stage}/{} differs between the single run and the merge",
                file.display()
            );
        }
    }
    // The copy's puzzles, mined by shard 1, repeat shard 0's positions:
    // the merge dropped them as the single run did.
    let single = csv_rows(&a.join("rate/lichess_games.puzzles.csv"));
    let sharded: usize = shard_dirs
        .iter()
        .map(|s| csv_rows(&dir.path().join(s).join("rate/lichess_games.puzzles.csv")))
        .sum();
    assert!(single > 0 && sharded > single, "{single} {sharded}");
    // The release manifest carries the verify stage's figures.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(b.join("release/manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["verify"]["figures"]["puzzles"].as_u64(),
        Some(single as u64),
        "{}",
        manifest["verify"]
    );

    // The merged stages carry the fingerprints `run` computes: a run into
    // the merged release skips every stage.
    let rerun = summary(&puzzleforge(
        dir.path(),
        &["run", "--config", "b.toml", "--json"],
    ));
    for stage in rerun["stages"].as_array().unwrap() {
        assert_eq!(stage["skipped"], true, "{stage}");
    }
}

#[test]
fn merge_refuses_missing_mixed_and_mismatched_shards() {
    let dir = tempfile::tempdir().unwrap();
    let stages = r#"["ingest_puzzles", "ingest_games", "release"]"#;
    write_config(dir.path(), "p.toml", "out", stages, "");
    let run = |shard: &str| {
        summary(&puzzleforge(
            dir.path(),
            &["run", "--config", "p.toml", "--shard", shard, "--json"],
        ))
    };
    run("0/2");
    run("1/2");
    run("2/3");

    for bad in ["2/2", "1/0", "x", "1"] {
        let output = puzzleforge(dir.path(), &["run", "--config", "p.toml", "--shard", bad]);
        assert_eq!(output.status.code(), Some(2), "--shard {bad}");
    }

    let merge = |args: &[&str]| {
        let mut all = vec!["merge"];
        all.extend_from_slice(args);
        puzzleforge(dir.path(), &all)
    };
    fails_with(
        &merge(&["out/r1.shard-0-of-2", "-o", "out/r1", "--config", "p.toml"]),
        &["missing shard", "1/2"],
    );
    fails_with(
        &merge(&[
            "out/r1.shard-0-of-2",
            "out/r1.shard-2-of-3",
            "-o",
            "out/r1",
            "--config",
            "p.toml",
        ]),
        &["different counts", "2/3"],
    );
    fails_with(
        &merge(&[
            "out/r1.shard-0-of-2",
            "out/r1.shard-0-of-2",
            "-o",
            "out/r1",
            "--config",
            "p.toml",
        ]),
        &["given twice"],
    );
    fails_with(
        &merge(&["out/nothing", "-o", "out/r1", "--config", "p.toml"]),
        &["not a complete shard folder"],
    );
    // Another ingest filter than the shards ran with.
    write_config(
        dir.path(),
        "other.toml",
        "out",
        stages,
        "[ingest.puzzles]\nmax_rating = 1500\n",
    );
    fails_with(
        &merge(&[
            "out/r1.shard-0-of-2",
            "out/r1.shard-1-of-2",
            "-o",
            "out/r1",
            "--config",
            "other.toml",
        ]),
        &["another config", "ingest_puzzles"],
    );
    assert!(!dir.path().join("out/r1/release").exists());

    // The right shards merge, and the release ignores the shard folders.
    let merged = summary(&merge(&[
        "out/r1.shard-0-of-2",
        "out/r1.shard-1-of-2",
        "-o",
        "out/r1",
        "--config",
        "p.toml",
        "--json",
    ]));
    assert_eq!(merged["count"], 2);
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/r1/release/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["exclusions"]["files"], serde_json::json!([]));
    assert_eq!(
        manifest["inputs"][0]["path"],
        "../ingest_puzzles/puzzles.csv"
    );
}

/// A folder whose config `p.toml` ingests and releases into `out/`, with
/// the release `first` finished and the two shards of `r1` run.
fn first_release_and_two_shards() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let stages = r#"["ingest_puzzles", "release"]"#;
    write_config(dir.path(), "p.toml", "out", stages, "");
    summary(&puzzleforge(
        dir.path(),
        &["run", "--config", "p.toml", "--release", "first", "--json"],
    ));
    for shard in ["0/2", "1/2"] {
        summary(&puzzleforge(
            dir.path(),
            &["run", "--config", "p.toml", "--shard", shard, "--json"],
        ));
    }
    dir
}

/// `merge` and `run` take their exclusions from one place, the config's
/// `output_dir`: a merged release excludes the releases there (and names
/// them), `-o` outside it is an error naming both, and a name `merge`
/// refuses `run` refuses the same way. A shard's input changed after the
/// shard read it is refused by the merge, naming the file.
#[test]
fn merge_and_run_exclude_the_releases_of_one_output_folder() {
    let dir = first_release_and_two_shards();
    let merge = |output: &str| {
        puzzleforge(
            dir.path(),
            &[
                "merge",
                "out/r1.shard-0-of-2",
                "out/r1.shard-1-of-2",
                "-o",
                output,
                "--config",
                "p.toml",
                "--json",
            ],
        )
    };
    fails_with(
        &merge("elsewhere/r1"),
        &["elsewhere/r1", "output_dir out", "-o out/r1"],
    );
    assert!(!dir.path().join("elsewhere").exists());
    let refused_name = "is refused: later releases would not exclude its puzzles";
    fails_with(&merge("out/x.shard-0-of-2"), &[refused_name]);
    fails_with(
        &puzzleforge(
            dir.path(),
            &["run", "--config", "p.toml", "--release", "x.shard-0-of-2"],
        ),
        &[refused_name],
    );
    assert!(!dir.path().join("out/x.shard-0-of-2").exists());

    summary(&merge("out/r1"));
    assert_excludes_the_first(&dir.path().join("out"));
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/r1/release/manifest.json")).unwrap(),
    )
    .unwrap();
    let files = manifest["exclusions"]["files"].to_string();
    assert!(files.contains("first/release/train.csv"), "{files}");

    // The source changes after the shards read it.
    for shard in ["0/2", "1/2"] {
        summary(&puzzleforge(
            dir.path(),
            &[
                "run",
                "--config",
                "p.toml",
                "--release",
                "r2",
                "--shard",
                shard,
                "--json",
            ],
        ));
    }
    let source = dir.path().join("puzzles.csv");
    let text = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, text.replacen("\n", "\n\n", 2)).unwrap();
    fails_with(
        &puzzleforge(
            dir.path(),
            &[
                "merge",
                "out/r2.shard-0-of-2",
                "out/r2.shard-1-of-2",
                "-o",
                "out/r2",
                "--config",
                "p.toml",
            ],
        ),
        &[
            "puzzles.csv",
            "changed or missing since shard 0/2 read it",
            "--shard 0/2",
        ],
    );
}

/// Checks that the merged release `r1` of the output folder `out` shares
/// no puzzle with the release `first` beside it (and both have some).
fn assert_excludes_the_first(out: &Path) {
    let ids = |release: &str| -> std::collections::BTreeSet<String> {
        ["train.csv", "test.csv"]
            .iter()
            .flat_map(|f| {
                puzzleforge::chess::record::read_puzzles(&out.join(release).join("release").join(f))
                    .unwrap()
            })
            .map(|p| p.id)
            .collect()
    };
    let (first, merged) = (ids("first"), ids("r1"));
    assert!(!first.is_empty() && !merged.is_empty());
    assert!(
        first.is_disjoint(&merged),
        "{:?}",
        first.intersection(&merged)
    );
}

/// `merge -o NAME` run inside the output folder (the release folder's
/// holder is then `.`, its parent the empty path) excludes the releases
/// beside it, as `-o out/NAME` does from above.
#[test]
fn merge_inside_the_output_folder_excludes_the_releases_beside_it() {
    let dir = first_release_and_two_shards();
    let out = dir.path().join("out");
    summary(&puzzleforge(
        &out,
        &[
            "merge",
            "r1.shard-0-of-2",
            "r1.shard-1-of-2",
            "-o",
            "r1",
            "--config",
            "../p.toml",
            "--json",
        ],
    ));
    assert_excludes_the_first(&out);
}

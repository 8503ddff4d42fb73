//! `puzzleforge reproduce RELEASE`: a release's recorded run repeated into
//! a scratch folder, every file compared byte for byte; exit 1 naming a
//! file that differs, exit 2 naming an input or engine that is not the
//! recorded one. And the build identity in `--version`, a `stage.json`,
//! the manifest and the card.

use serde_json::Value;
use std::path::Path;
use std::process::Output;

use crate::common::{data, generation_config, puzzleforge, summary};

/// A small pipeline over a copy of the bundled Lichess sample and a copy
/// of Stockfish (so the test may change them), in `dir`: ingest, release,
/// export, and an eval by a one-node Stockfish (its runtime.json is
/// timing).
fn write_config(dir: &Path) {
    std::fs::copy("/usr/games/stockfish", dir.join("stockfish")).unwrap();
    std::fs::copy(
        data("lichess_db_puzzle_subset_1499.csv"),
        dir.join("puzzles.csv"),
    )
    .unwrap();
    let config = format!(
        r#"
# Releases go under out/<release>/ (a path in the text, which reproduce
# compares as written).
[pipeline]
seed = 7
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "ingest_games", "release", "export", "eval"]

[engine]
path = "./stockfish"
workers = 1

[sources]
puzzles = ["puzzles.csv"]
games = ["{games}"]

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[export]
formats = ["dspy", "lichess"]
split = "test"

[eval]
model = "engine:stockfish?nodes=1"

[eval.regret]
enabled = false
"#,
        games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
    );
    std::fs::write(dir.join("pipeline.toml"), config).unwrap();
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_release_reproduces_byte_for_byte_and_a_changed_byte_or_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_config(root);
    summary(&puzzleforge(root, &["run", "--json"]));
    let release = root.join("out/r1");

    // The build, in --version and in every record, beside the version.
    let version = String::from_utf8(puzzleforge(root, &["--version"]).stdout).unwrap();
    let build = version
        .trim()
        .strip_prefix("puzzleforge 0.1.0 (build ")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{version}"))
        .to_string();
    assert!(
        build.starts_with("git:") || build.starts_with("sha256:"),
        "{build}"
    );
    let stage = json_file(&release.join("release/stage.json"));
    assert_eq!(stage["fingerprint"]["build"], build.as_str());
    assert_eq!(stage["fingerprint"]["algorithm"], "release-2");
    let manifest = json_file(&release.join("release/manifest.json"));
    assert_eq!(manifest["tool"]["build"], build.as_str());
    assert_eq!(manifest["tool"]["version"], "0.1.0");
    // How the run was asked, in the release stage's record.
    assert_eq!(stage["run"]["release"], "r1");
    assert_eq!(stage["run"]["config"]["name"], "pipeline.toml");
    assert_eq!(
        stage["run"]["config"]["text"],
        std::fs::read_to_string(root.join("pipeline.toml")).unwrap()
    );
    assert_eq!(
        manifest["run"]["algorithms"]["ingest_puzzles"],
        "ingest_puzzles-1"
    );
    let card = std::fs::read_to_string(release.join("release/README.md")).unwrap();
    assert!(card.contains(&format!("(build `{build}`)")), "{card}");
    assert!(
        card.contains("```sh\npuzzleforge reproduce .\n```"),
        "{card}"
    );

    // As the card says, from the release folder: every file agrees; the
    // eval's runtime.json is timing, named and skipped.
    let same = puzzleforge(&release.join("release"), &["reproduce", ".", "--json"]);
    let report = summary(&same);
    assert_eq!(report["differ"], serde_json::json!([]), "{report:#}");
    assert!(
        report["identical"]
            .as_array()
            .unwrap()
            .contains(&Value::from("release/train.csv")),
        "{report:#}"
    );
    assert_eq!(
        report["skipped"][0]["file"], "eval/runtime.json",
        "{report:#}"
    );
    assert!(
        stderr(&same).contains("skipped (timing"),
        "{}",
        stderr(&same)
    );

    // One changed byte of a data file: exit 1, naming it.
    let train = release.join("release/train.csv");
    let bytes = std::fs::read(&train).unwrap();
    let mut changed = bytes.clone();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&train, &changed).unwrap();
    let scratch = root.join("scratch");
    let differs = puzzleforge(
        root,
        &["reproduce", "out/r1", "--scratch", "scratch", "--json"],
    );
    assert_eq!(differs.status.code(), Some(1), "{}", stderr(&differs));
    let said = stderr(&differs);
    assert!(
        said.contains("differs: release/train.csv (first differs at line"),
        "{said}"
    );
    let report: Value = serde_json::from_slice(&differs.stdout).unwrap();
    assert_eq!(
        report["differ"][0]["file"], "release/train.csv",
        "{report:#}"
    );
    assert_eq!(report["differ"].as_array().unwrap().len(), 1, "{report:#}");
    assert!(
        scratch.join("r1/release/train.csv").is_file(),
        "kept to look at"
    );
    std::fs::write(&train, &bytes).unwrap();

    // A changed input: refused before anything runs (exit 2), naming it.
    let input = root.join("puzzles.csv");
    let text = std::fs::read_to_string(&input).unwrap();
    std::fs::write(&input, format!("{text}\n")).unwrap();
    let refused = puzzleforge(root, &["reproduce", "out/r1"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("input puzzles.csv (sources.puzzles) changed: the release recorded sha256"),
        "{said}"
    );
    std::fs::remove_file(&input).unwrap();
    let missing = puzzleforge(root, &["reproduce", "out/r1"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("input puzzles.csv (sources.puzzles) is missing"));
    std::fs::write(&input, text).unwrap();

    // Another engine binary where the config names it: refused, naming it.
    let engine_bin = root.join("stockfish");
    let engine_bytes = std::fs::read(&engine_bin).unwrap();
    std::fs::write(&engine_bin, [engine_bytes.as_slice(), b"\0"].concat()).unwrap();
    let engine = puzzleforge(root, &["reproduce", "out/r1"]);
    assert_eq!(engine.status.code(), Some(2), "{}", stderr(&engine));
    let said = stderr(&engine);
    assert!(
        said.contains("the release was made by the engine Stockfish"),
        "{said}"
    );
    assert!(
        said.contains("stockfish is another binary (sha256"),
        "{said}"
    );
    std::fs::write(&engine_bin, engine_bytes).unwrap();

    // A second release excludes the first's puzzles; reproduced, the
    // first is copied beside it so the draw excludes the same.
    summary(&puzzleforge(root, &["run", "--json", "--release", "r2"]));
    let second = summary(&puzzleforge(root, &["reproduce", "out/r2", "--json"]));
    assert_eq!(second["differ"], serde_json::json!([]), "{second:#}");
}

/// An all-generated release (`[generate]`, every puzzle played, mined,
/// rated and verified here) reproduces too: the store is played again in
/// the scratch folder.
#[test]
fn an_all_generated_release_reproduces_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "gen.toml", "G", 2, "batch_games = 3\nmax_games = 40");
    summary(&puzzleforge(
        root,
        &["run", "--config", "gen.toml", "--json"],
    ));
    let manifest = json_file(&root.join("G/gen/release/manifest.json"));
    assert_eq!(manifest["run"]["algorithms"]["generate"], "generate-1");
    let report = summary(&puzzleforge(root, &["reproduce", "G/gen", "--json"]));
    assert_eq!(report["differ"], serde_json::json!([]), "{report:#}");
    assert!(
        report["identical"]
            .as_array()
            .unwrap()
            .contains(&Value::from("selfplay/games.pgn")),
        "{report:#}"
    );
    // One changed byte of a generated game: named.
    let games = root.join("G/gen/selfplay/games.pgn");
    let mut bytes = std::fs::read(&games).unwrap();
    let at = bytes.len() - 3;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    std::fs::write(&games, bytes).unwrap();
    let differs = puzzleforge(root, &["reproduce", "G/gen"]);
    assert_eq!(differs.status.code(), Some(1));
    assert!(
        stderr(&differs).contains("differs: selfplay/games.pgn"),
        "{}",
        stderr(&differs)
    );
}

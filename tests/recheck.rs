//! A release that explains itself, and re-checks in one command: a small
//! generated release names its engines, inputs and played settings, carries
//! the games its puzzles came from, links each generated puzzle to its game,
//! and its card's "Re-check one puzzle" commands, run as written, say that
//! today's engines agree; a puzzle whose recorded verdict was changed is
//! found. `--json` runs report each batch as one JSON line on stderr.
//! Real Stockfish and Ethereal, tiny budgets.

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::common::{puzzleforge, summary};

const STOCKFISH: &str = "/usr/games/stockfish";
const ETHEREAL: &str = "/usr/games/ethereal-chess";

/// A target run (one cell, 2 train + 1 test generated puzzles) verified by
/// both engines.
fn write_config(dir: &Path) -> PathBuf {
    for engine in [STOCKFISH, ETHEREAL] {
        assert!(Path::new(engine).exists(), "{engine} is needed");
    }
    let config = format!(
        r#"
[pipeline]
seed = 5
output_dir = "out"
release = "gen"
stages = ["selfplay", "mine", "rate", "verify", "release"]

[engine]
path = "{STOCKFISH}"
workers = 2

[selfplay]
max_plies = 80

[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3

[rate]
model = "{model}"

[verify]
factor = 2

[verify.second_engine]
path = "{ETHEREAL}"
depth = 8
min_gap_cp = 100

[release]
bin_width = 3000
train_per_cell = 2
test_per_cell = 1
min_puzzles = 0

[[release.bands]]
ratings = [0, 3000]
lengths = [1, 1]
mate = "no_mate"

[generate]
enabled = true
max_per_game = 100
batch_games = 4
max_games = 60

[generate.selfplay]
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]
"#,
        model = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/rate_model.json")
            .display(),
    );
    let path = dir.join("gen.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The rows of a release CSV as (header, rows).
fn rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn a_generated_release_names_its_sources_and_rechecks_from_its_card() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_config(root);
    let output = puzzleforge(root, &["run", "--config", "gen.toml", "--json"]);
    let run = summary(&output);
    // --json: one JSON line per batch on stderr; stdout keeps the summary.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let batches: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!batches.is_empty(), "{stderr}");
    let last = batches.last().unwrap();
    assert_eq!(last["event"], "batch", "{last}");
    assert_eq!(
        last["games"], run["generate"]["last_game"],
        "{last} {run:#}"
    );
    assert_eq!(last["cells_filled"], 1, "{last}");
    // The final table gives the stages the time generation spent for them.
    let selfplay = &run["stages"][0];
    assert_eq!(selfplay["stage"], "selfplay");
    assert!(selfplay["seconds"].as_f64().unwrap() > 0.0, "{run:#}");

    let release = root.join("out/gen/release");
    let manifest = json_file(&release.join("manifest.json"));
    assert!(
        manifest["engine"]["id"]
            .as_str()
            .unwrap()
            .starts_with("Stockfish"),
        "{manifest:#}"
    );
    assert_eq!(manifest["engine"]["name"], "Stockfish");
    assert_eq!(manifest["engine"]["sha256"].as_str().unwrap().len(), 64);
    assert!(
        manifest["second_engine"]["id"]
            .as_str()
            .unwrap()
            .starts_with("Ethereal"),
        "{manifest:#}"
    );
    let sources = manifest["sources"].as_array().unwrap();
    assert!(
        sources
            .iter()
            .any(|s| s["key"] == "rate.model" && s["sha256"].as_str().unwrap().len() == 64),
        "{sources:?}"
    );
    assert_eq!(manifest["settings"]["verify"]["factor"], 2);
    // The settings the games were played with: generation's profile.
    let played = &manifest["generate"]["figures"]["settings"][0];
    assert_eq!(
        played["selfplay"]["chaos_white_elo"],
        serde_json::json!([1350, 1400])
    );
    let stage = json_file(&root.join("out/gen/selfplay/stage.json"));
    assert_eq!(
        stage["fingerprint"]["config"]["selfplay"],
        played["selfplay"]
    );

    // The games travel with the release; each generated puzzle links to its game.
    assert!(manifest["outputs"]["games.pgn"].is_string(), "{manifest:#}");
    let games = std::fs::read_to_string(release.join("games.pgn")).unwrap();
    let (header, test_rows) = rows(&release.join("test.csv"));
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = &test_rows[0];
    let (id, url, game, ply) = (
        row[column("PuzzleId")].clone(),
        row[column("GameUrl")].clone(),
        row[column("GameId")].clone(),
        row[column("Ply")].clone(),
    );
    assert_eq!(url, format!("games.pgn#game={game}&ply={ply}"));
    let round = game.rsplit('-').next().unwrap();
    assert!(games.contains(&format!("[Round \"{round}\"]")), "{games}");

    // The card's commands, as written, from the release folder.
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let section = card.split("## Re-check one puzzle").nth(1).unwrap();
    let commands: Vec<&str> = section
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap()
        .lines()
        .collect();
    assert_eq!(commands.len(), 2, "{section}");
    assert!(commands[0].contains(&id), "{section}");
    // As a shell runs them after the README's quick start: `puzzleforge`
    // found on PATH (where `cargo install` puts it), not by its path.
    let bin = Path::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run_card = |command: &str| {
        assert!(command.starts_with("puzzleforge "), "{command}");
        std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(&release)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let recheck = run_card(commands[0]);
    assert!(
        recheck.status.success(),
        "{}",
        String::from_utf8_lossy(&recheck.stderr)
    );
    let line: Value = serde_json::from_slice(&recheck.stdout).unwrap();
    assert_eq!(line["PuzzleId"], id.as_str());
    assert_eq!(line["agrees"], true, "{line:#}");
    // Typed values, as the release's JSON Lines: recorded and now alike.
    for side in ["recorded", "now"] {
        assert_eq!(line[side]["Verified"], true, "{line:#}");
        assert!(line[side]["Margin"].is_number(), "{line:#}");
    }
    assert!(line["recorded"]["BestScore"].is_i64(), "{line:#}");
    assert!(line["recorded"]["Nodes"].is_i64(), "{line:#}");
    let alone = String::from_utf8_lossy(&recheck.stderr);
    assert!(alone.contains("re-checked 1 puzzle of"), "{alone}");
    // The card's command as older cards wrote it, `verify .`, is the alias
    // of `recheck`: it says so in one line on stderr, and otherwise prints
    // and exits as `recheck` does.
    let note = puzzleforge::cli::RECHECK_ALIAS_NOTE;
    assert!(!alone.contains(note), "{alone}");
    let verify = run_card(&commands[0].replacen("recheck", "verify", 1));
    let said = String::from_utf8_lossy(&verify.stderr);
    assert_eq!(said.matches(note).count(), 1, "{said}");
    assert!(said.contains("re-checked 1 puzzle of"), "{said}");
    assert_eq!(verify.status.code(), recheck.status.code());
    assert_eq!(verify.stdout, recheck.stdout);
    let check = run_card(commands[1]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let line: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(line["PuzzleId"], id.as_str());
    assert_eq!(line["move_is_best"], true, "{line:#}");

    // A recorded verdict that today's engines do not give is found (exit 2).
    let mut text = String::new();
    text.push_str(&header.join(","));
    text.push('\n');
    let mut changed = row.clone();
    changed[column("Margin")] = "999".to_string();
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&changed).unwrap();
    text.push_str(&String::from_utf8(writer.into_inner().unwrap()).unwrap());
    std::fs::write(root.join("changed.csv"), text).unwrap();
    for args in [
        vec!["recheck", "changed.csv", "--config", "gen.toml"],
        vec!["verify", "changed.csv", "--recheck", "--config", "gen.toml"],
    ] {
        let recheck = puzzleforge(root, &args);
        assert_eq!(recheck.status.code(), Some(2), "{args:?}");
        let line: Value = serde_json::from_slice(&recheck.stdout).unwrap();
        assert_eq!(line["agrees"], false, "{line:#}");
        assert_eq!(line["differs"], serde_json::json!(["Margin"]), "{line:#}");
    }
}

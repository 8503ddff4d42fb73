//! `puzzleforge export`: every format read back by a parser of that format,
//! with one record per solver position (or per puzzle for `lichess`).

use std::collections::BTreeSet;
use std::path::Path;

use puzzleforge::chess::record::read_puzzles;
use puzzleforge::stages::export::solver_positions;
use serde_json::Value;

const APO: &str = "tests/data/apo_puzzle_train.csv";

use crate::common::puzzleforge_here as puzzleforge;

fn run_ok(args: &[&str]) {
    let out = puzzleforge(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// Solver positions counted from the CSV's Moves column alone (raw `csv`
/// parsing, not the crate's reader): every second move from the second.
fn positions_in(path: &Path) -> (usize, usize) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let moves_column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "Moves")
        .unwrap();
    let mut puzzles = 0;
    let mut positions = 0;
    for row in reader.records() {
        let moves = row.unwrap()[moves_column].split_whitespace().count();
        puzzles += 1;
        positions += moves / 2;
    }
    (puzzles, positions)
}

#[test]
fn every_format_reads_back_with_one_record_per_solver_position() {
    let root = tempfile::tempdir().unwrap();
    let release = root.path().join("out/r/release");
    run_ok(&[
        "split",
        APO,
        "-o",
        s(&release),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
    ]);
    let (train_puzzles, train_positions) = positions_in(&release.join("train.csv"));
    let (test_puzzles, test_positions) = positions_in(&release.join("test.csv"));
    assert!(
        train_positions > train_puzzles,
        "multi-move puzzles present"
    );

    for format in ["inspect", "dspy", "openai-evals"] {
        let out = root.path().join(format);
        run_ok(&[
            "export",
            s(&release),
            "--format",
            format,
            "-o",
            s(&out),
            "--split",
            "both",
        ]);
        for (split, expected) in [("train", train_positions), ("test", test_positions)] {
            let records = jsonl(&out.join(format!("{split}.jsonl")));
            assert_eq!(records.len(), expected, "{format} {split}");
            for r in &records {
                match format {
                    "inspect" => {
                        let input = r["input"].as_str().unwrap();
                        assert!(input.contains("Legal moves"));
                        assert!(r["target"].is_string() || r["target"].is_array());
                        assert!(r["id"].is_string());
                        assert!(r["metadata"]["puzzle_id"].is_string());
                    }
                    "dspy" => {
                        let side = r["side_to_move"].as_str().unwrap();
                        assert!(side == "white" || side == "black");
                        let legal: Vec<&str> =
                            r["legal_moves_uci"].as_str().unwrap().split(' ').collect();
                        let mut sorted = legal.clone();
                        sorted.sort();
                        assert_eq!(legal, sorted);
                        assert!(legal.contains(&r["move"].as_str().unwrap()));
                        // The FEN's turn field agrees with side_to_move.
                        let turn = r["position_fen"].as_str().unwrap().split(' ').nth(1);
                        assert_eq!(turn, Some(&side[..1]));
                    }
                    _ => {
                        let messages = r["input"].as_array().unwrap();
                        assert_eq!(messages[0]["role"], "system");
                        assert_eq!(messages[1]["role"], "user");
                        assert!(r["ideal"].is_string() || r["ideal"].is_array());
                    }
                }
            }
            let ids: BTreeSet<String> = records
                .iter()
                .map(|r| {
                    r.get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{}-{}", r["puzzle_id"], r["position_index"]))
                })
                .collect();
            assert_eq!(ids.len(), records.len(), "{format}: ids are unique");
        }
        if format == "dspy" {
            let note: Value = serde_json::from_str(
                &std::fs::read_to_string(out.join("dspy_fields.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(note["label"], "move");
        }
    }

    // The default split is both (as under `run`); lichess writes the ten
    // columns, then Source and RatingSource, one row per puzzle.
    let out = root.path().join("lichess");
    run_ok(&["export", s(&release), "--format", "lichess", "-o", s(&out)]);
    assert!(out.join("train.csv").exists());
    let mut reader = csv::Reader::from_path(out.join("test.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..10],
        puzzleforge::chess::record::LICHESS_COLUMNS.map(String::from)
    );
    assert_eq!(header[10..], ["Source", "RatingSource"]);
    assert_eq!(reader.records().count(), test_puzzles);
    assert_eq!(
        read_puzzles(&out.join("test.csv")).unwrap().len(),
        test_puzzles
    );
}

#[test]
fn mate_in_one_accepts_every_mating_move() {
    let puzzles = read_puzzles(Path::new(APO)).unwrap();
    // 43jqD: after e4d5, both Qh2# and Rxh2# mate.
    let mate = puzzles.iter().find(|p| p.id == "43jqD").unwrap();
    let positions = solver_positions(mate).unwrap();
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].expected, "c7h2");
    assert_eq!(positions[0].accepted, vec!["c7h2", "h8h2"]);
    // A five-move puzzle gives five positions, each with its own side to move.
    let long = puzzles.iter().find(|p| p.moves.len() == 10).unwrap();
    let positions = solver_positions(long).unwrap();
    assert_eq!(positions.len(), 5);
    assert!(
        positions
            .windows(2)
            .all(|w| w[0].side_to_move == w[1].side_to_move)
    );
    for (i, position) in positions.iter().enumerate() {
        assert_eq!(position.expected, long.moves[1 + 2 * i].to_string());
        assert!(position.legal_moves.contains(&position.expected));
    }
}

#[test]
fn a_folder_without_a_release_is_bad_input() {
    let root = tempfile::tempdir().unwrap();
    let out = puzzleforge(&[
        "export",
        s(root.path()),
        "--format",
        "dspy",
        "-o",
        s(&root.path().join("x")),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

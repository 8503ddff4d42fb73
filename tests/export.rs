//! `puzzleforge export`: every format read back by a parser of that format,
//! with one record per solver position (or per puzzle for `lichess`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use puzzleforge::chess::record::read_puzzles;
use puzzleforge::stages::eval::task::{is_correct, puzzle_tasks};
use puzzleforge::stages::export::solver_positions;
use serde_json::Value;
use shakmaty::{CastlingMode, Position};

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
        "release",
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

/// Accepted moves of each solver position, by puzzle id and position
/// index: the expected move first, then the others sorted (the order every
/// export writes them in).
type Accepted = BTreeMap<(String, usize), Vec<String>>;

/// The expected move first, then the other accepted moves sorted.
fn expected_first(expected: &str, moves: impl IntoIterator<Item = String>) -> Vec<String> {
    let others: BTreeSet<String> = moves.into_iter().filter(|m| m != expected).collect();
    std::iter::once(expected.to_string())
        .chain(others)
        .collect()
}

/// An Inspect `target` or OpenAI evals `ideal`: one move, or a list when
/// several are accepted.
fn moves_of(target: &Value) -> Vec<String> {
    match target {
        Value::String(one) => vec![one.clone()],
        Value::Array(many) => many
            .iter()
            .map(|m| m.as_str().expect("a move is a string").to_string())
            .collect(),
        other => panic!("a target is a move or a list of moves, not {other}"),
    }
}

/// `puzzle-3` as Inspect and OpenAI evals spell a record's id.
fn split_id(id: &str) -> (String, usize) {
    let (puzzle, index) = id.rsplit_once('-').expect("id is PUZZLE-INDEX");
    (
        puzzle.to_string(),
        index.parse().expect("index is a number"),
    )
}

/// The one acceptance rule: on every solver position of every puzzle of a
/// release, the moves `eval` scores as correct (every legal move put to its
/// judge) are exactly the accepted moves of each export format, the
/// expected move first.
#[test]
fn eval_and_every_export_accept_the_same_moves_on_every_puzzle() {
    let root = tempfile::tempdir().unwrap();
    let release = root.path().join("out/r/release");
    // Quotas above any cell's size: the release holds every puzzle of the
    // real Lichess sample that split keeps.
    run_ok(&[
        "release",
        "tests/data/lichess_db_puzzle_subset_1499.csv",
        "-o",
        s(&release),
        "--train-per-cell",
        "2000",
        "--test-per-cell",
        "2000",
    ]);

    // The card says what the Source column holds.
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(
        card.contains("gives each puzzle's origin: `lichess` (the Lichess puzzle database)"),
        "{card}"
    );

    let mut by_eval = Accepted::new();
    for split in ["train", "test"] {
        let puzzles = read_puzzles(&release.join(format!("{split}.csv"))).unwrap();
        for (index, puzzle) in puzzles.iter().enumerate() {
            for task in puzzle_tasks(index, puzzle).unwrap() {
                let correct = task
                    .position
                    .legal_moves()
                    .into_iter()
                    .map(|m| m.to_uci(CastlingMode::Standard))
                    .filter(|uci| is_correct(&task, uci))
                    .map(|uci| uci.to_string());
                let accepted = expected_first(&task.expected.to_string(), correct);
                by_eval.insert((puzzle.id.clone(), task.move_index), accepted);
            }
        }
    }
    // Mates in one with a second mating move (43jqD's kind): positions
    // whose lists hold more than the expected move. No row of the real
    // Lichess data has a mate away from a mating line's last move (none of
    // tests/data's 6,300); `chess::line`'s table covers those cases.
    let several = by_eval.values().filter(|moves| moves.len() > 1).count();
    assert!(
        several > 0,
        "the release has positions with several answers"
    );

    for format in ["inspect", "dspy", "openai-evals"] {
        let out = root.path().join(format);
        run_ok(&["export", s(&release), "--format", format, "-o", s(&out)]);
        let mut by_export = Accepted::new();
        for split in ["train", "test"] {
            for r in jsonl(&out.join(format!("{split}.jsonl"))) {
                let (key, moves) = match format {
                    "inspect" => (split_id(r["id"].as_str().unwrap()), moves_of(&r["target"])),
                    "dspy" => {
                        let key = (
                            r["puzzle_id"].as_str().unwrap().to_string(),
                            r["position_index"].as_u64().unwrap() as usize,
                        );
                        let moves = moves_of(&r["accepted_moves"]);
                        assert_eq!(moves[0], r["move"], "dspy {key:?}: the label comes first");
                        (key, moves)
                    }
                    _ => (split_id(r["id"].as_str().unwrap()), moves_of(&r["ideal"])),
                };
                assert!(
                    by_export.insert(key.clone(), moves).is_none(),
                    "{format}: {key:?} twice"
                );
            }
        }
        assert_eq!(
            by_export.len(),
            by_eval.len(),
            "{format}: one record per position"
        );
        for (key, moves) in &by_eval {
            assert_eq!(
                by_export.get(key),
                Some(moves),
                "{format} and eval on {key:?}"
            );
        }
    }
}

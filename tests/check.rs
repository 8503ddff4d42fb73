//! `puzzleforge check` end to end: the built binary, a real Stockfish 15.1,
//! real Lichess puzzle positions, and the FAKE puzzleforge-fault-engine for
//! fault injection. Tests fail (never skip) without Stockfish.

use puzzleforge::chess::record::{Puzzle, read_puzzles};
use serde_json::Value;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PUZZLEFORGE: &str = env!("CARGO_BIN_EXE_puzzleforge");
const FAULT_ENGINE: &str = env!("CARGO_BIN_EXE_puzzleforge-fault-engine");
const STOCKFISH: &str = "/usr/games/stockfish";

fn puzzles() -> Vec<Puzzle> {
    assert!(
        Path::new(STOCKFISH).is_file(),
        "Stockfish 15.1 must be installed at {STOCKFISH}"
    );
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lichess_db_puzzle_subset_1499.csv");
    read_puzzles(&path).expect("puzzle sample")
}

/// The puzzle position with the solver to move: the FEN after Moves[0].
fn solver_fen(puzzle: &Puzzle) -> String {
    let fen = Fen::from_ascii(puzzle.fen.as_bytes()).expect("sample FEN");
    let mut position: Chess = fen
        .into_position(CastlingMode::Standard)
        .expect("legal position");
    let mv = UciMove::from_ascii(puzzle.moves[0].as_bytes())
        .expect("UCI move")
        .to_move(&position)
        .expect("legal move");
    position.play_unchecked(mv);
    Fen::from_position(&position, EnPassantMode::Legal).to_string()
}

fn write_input(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("positions.txt");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write input");
    path
}

fn check(input: &Path, extra: &[&str]) -> Output {
    Command::new(PUZZLEFORGE)
        .arg("check")
        .arg(input)
        .args(extra)
        .output()
        .expect("run puzzleforge")
}

fn json_lines(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "puzzleforge check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// Twenty real positions (first twenty sample puzzles, after Moves[0]).
fn twenty_positions(dir: &Path) -> PathBuf {
    let lines: Vec<String> = puzzles().iter().take(20).map(solver_fen).collect();
    write_input(dir, &lines)
}

#[test]
fn same_output_for_repeated_runs_and_any_worker_count() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = twenty_positions(dir.path());
    let first = check(&input, &["--nodes", "20000", "--workers", "2"]);
    let again = check(&input, &["--nodes", "20000", "--workers", "2"]);
    let single = check(&input, &["--nodes", "20000", "--workers", "1"]);
    let lines = json_lines(&first);
    assert_eq!(lines.len(), 20);
    assert_eq!(first.stdout, again.stdout);
    assert_eq!(first.stdout, single.stdout);
    for line in &lines {
        assert_eq!(line["criterion"], "epoch");
        assert!(line["best_move"].is_string(), "{line}");
        assert!(line["best_score"].is_object(), "{line}");
        assert!(line["unique"].is_boolean(), "{line}");
    }
}

fn fault_definition(dir: &Path, mode: &str, state: &Path) -> PathBuf {
    let file = dir.join(format!("fault-{mode}.toml"));
    let text = format!(
        "# FAKE engine for fault injection\npath = {FAULT_ENGINE:?}\n[options]\nHash = 16\n\
         FaultMode = {mode:?}\nFaultAfter = 14\nFaultStateDir = {:?}\nFaultTimes = 2\n",
        state.display().to_string()
    );
    std::fs::write(&file, text).expect("write definition");
    file
}

#[test]
fn faulting_engines_give_the_real_engines_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = twenty_positions(dir.path());
    let expected = check(&input, &["--nodes", "20000", "--workers", "2"]);
    assert_eq!(json_lines(&expected).len(), 20);
    for mode in ["exit", "hang", "garbage"] {
        let state = tempfile::tempdir().expect("state dir");
        let definition = fault_definition(dir.path(), mode, state.path());
        let output = check(
            &input,
            &[
                "--nodes",
                "20000",
                "--workers",
                "2",
                "--deadline",
                "5",
                "--engine",
                definition.to_str().expect("UTF-8 path"),
                "--json",
            ],
        );
        let mut lines = json_lines(&output);
        let summary = lines.pop().expect("summary line");
        assert_eq!(lines.len(), 20, "{mode}");
        let restarts: u64 = summary["engines"]
            .as_array()
            .expect("engine stats")
            .iter()
            .map(|engine| engine["restarts"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(restarts, 2, "{mode}: {summary}");
        let positions: String = lines.iter().map(|line| format!("{line}\n")).collect();
        assert_eq!(positions.as_bytes(), expected.stdout, "{mode}");
    }
}

#[test]
fn finds_the_solution_of_one_move_puzzles() {
    // One-move puzzles from the sample where the solution Moves[1] is the
    // engine's best move at 200k nodes.
    let ids = SOLVED_ONE_MOVERS;
    let puzzles: Vec<Puzzle> = puzzles()
        .into_iter()
        .filter(|p| ids.contains(&p.id.as_str()))
        .collect();
    assert_eq!(puzzles.len(), ids.len());
    let lines: Vec<String> = puzzles
        .iter()
        .map(|p| format!("{},{}", solver_fen(p), p.moves[1]))
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let input = write_input(dir.path(), &lines);
    let output = check(
        &input,
        &[
            "--nodes",
            "200000",
            "--workers",
            "2",
            "--criterion",
            "lichess",
        ],
    );
    for (puzzle, line) in puzzles.iter().zip(json_lines(&output)) {
        assert_eq!(
            line["best_move"],
            puzzle.moves[1].as_str(),
            "{}: {line}",
            puzzle.id
        );
        assert_eq!(line["move"], puzzle.moves[1].as_str());
        assert_eq!(line["move_is_best"], true);
        assert_eq!(line["criterion"], "lichess");
        // Mate in 1 and no other move wins: unique under the Lichess rule.
        assert_eq!(line["best_score"], serde_json::json!({"mate": 1}));
        assert_eq!(line["unique"], true, "{}: {line}", puzzle.id);
    }
}

const SOLVED_ONE_MOVERS: &[&str] = &["000rZ", "002Q2", "002vV", "005Ep", "005x9", "0082f"];

#[test]
fn only_move_and_mated_positions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = [
        // The rook on a2 leaves White a single legal move, Kh1-g1.
        "7k/8/8/8/8/8/r7/7K w - - 0 1".to_string(),
        "# a comment, then a blank line".to_string(),
        String::new(),
        // Fool's mate: white is checkmated.
        "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3".to_string(),
    ];
    let input = write_input(dir.path(), &lines);
    let output = json_lines(&check(&input, &["--depth", "6", "--workers", "1"]));
    assert_eq!(output.len(), 2);
    assert_eq!(output[0]["best_move"], "h1g1");
    assert_eq!(output[0]["second_move"], Value::Null);
    assert_eq!(output[0]["second_score"], Value::Null);
    assert_eq!(output[0]["unique"], true);
    assert_eq!(output[1]["best_move"], Value::Null);
    assert_eq!(output[1]["best_score"], serde_json::json!({"mate": 0}));
    assert_eq!(output[1]["unique"], false);
}

#[test]
fn bad_input_names_the_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = "6k1/5ppp/8/8/8/8/5PPP/3RR1K1 w - - 0 1";
    let input = write_input(
        dir.path(),
        &[good.into(), "# note".into(), "not a fen".into()],
    );
    let output = check(&input, &["--nodes", "1000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("bad FEN"),
        "{stderr}"
    );

    let input = write_input(dir.path(), &[format!("{good},e2e4")]);
    let output = check(&input, &["--nodes", "1000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 1") && stderr.contains("bad move"),
        "{stderr}"
    );

    let output = check(&input, &[]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "--nodes or --depth is required"
    );
}

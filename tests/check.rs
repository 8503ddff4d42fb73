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
    let mut position: Chess = puzzle
        .fen
        .clone()
        .into_position(CastlingMode::Standard)
        .expect("legal position");
    let mv = puzzle.moves[0].to_move(&position).expect("legal move");
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
            puzzle.moves[1].to_string(),
            "{}: {line}",
            puzzle.id
        );
        assert_eq!(line["move"], puzzle.moves[1].to_string());
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
    // A forced move is no puzzle's first move (the one verdict).
    assert_eq!(output[0]["unique"], false);
    assert_eq!(output[0]["why"], "only_legal_move");
    assert_eq!(output[1]["best_move"], Value::Null);
    assert_eq!(output[1]["best_score"], serde_json::json!({"mate": 0}));
    assert_eq!(output[1]["unique"], false);
    assert_eq!(output[1]["why"], "no_legal_move");
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

/// Twenty real positions for the one-verdict test, as two-move puzzles
/// (FEN before the opponent's move, the move, a solution): fifteen sample
/// puzzles as they start, the opening after 1.e4 (no puzzle: many good
/// moves), two whose solver can mate in one with several
/// moves (the Lichess exception), and two solver positions inside sample
/// lines where only one move is legal.
fn one_verdict_puzzles() -> Vec<Puzzle> {
    let sample = puzzles();
    let two_moves = |fen: Fen, opponent: UciMove, solution: UciMove, id: String| Puzzle {
        id,
        fen,
        moves: vec![opponent, solution],
        ..Puzzle::default()
    };
    // The positions along a sample puzzle's line: [k] after k moves.
    let positions = |puzzle: &Puzzle| -> Vec<Chess> {
        let mut position: Chess = puzzle
            .fen
            .clone()
            .into_position(CastlingMode::Standard)
            .expect("legal");
        let mut all = vec![position.clone()];
        for uci in &puzzle.moves {
            let mv = uci.to_move(&position).expect("legal move");
            position.play_unchecked(mv);
            all.push(position.clone());
        }
        all
    };
    let fen_of = |position: &Chess| Fen::from_position(position, EnPassantMode::Legal);
    let mut chosen: Vec<Puzzle> = sample
        .iter()
        .take(15)
        .map(|p| two_moves(p.fen.clone(), p.moves[0], p.moves[1], p.id.clone()))
        .collect();
    // No puzzle: Black after 1.e4 has many moves as good as the best.
    chosen.push(two_moves(
        Fen::default(),
        "e2e4".parse().unwrap(),
        "c7c5".parse().unwrap(),
        "after-e4".to_string(),
    ));
    let mates_in_one = |position: &Chess| {
        position
            .legal_moves()
            .iter()
            .filter(|m| position.clone().play(**m).is_ok_and(|p| p.is_checkmate()))
            .count()
    };
    let lines: Vec<(&Puzzle, Vec<Chess>)> =
        sample.iter().skip(16).map(|p| (p, positions(p))).collect();
    chosen.extend(
        lines
            .iter()
            .filter(|(_, line)| mates_in_one(&line[1]) >= 2)
            .take(2)
            .map(|(p, _)| two_moves(p.fen.clone(), p.moves[0], p.moves[1], p.id.clone())),
    );
    let forced = lines.iter().flat_map(|(p, line)| {
        (3..p.moves.len())
            .step_by(2)
            .filter(|&ply| line[ply].legal_moves().len() == 1)
            .map(|ply| {
                two_moves(
                    fen_of(&line[ply - 1]),
                    p.moves[ply - 1],
                    p.moves[ply],
                    format!("{}-{ply}", p.id),
                )
            })
            .collect::<Vec<_>>()
    });
    chosen.extend(forced.take(2));
    assert_eq!(chosen.len(), 20, "the sample holds every kind of position");
    chosen
}

/// The one verdict: `check`, the miner and verify's deeper search decide
/// uniqueness by one function, so on the same positions, at the same node
/// budget, they agree under every criterion. A mate-in-n line (n > 1) is
/// mined only when its later moves hold too, so the mate criterion compares
/// mates in one and non-mates (where the rule reads the first move alone).
#[test]
fn check_mine_and_verify_give_one_verdict() {
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().expect("temp dir");
    let puzzles = one_verdict_puzzles();
    let candidates = dir.path().join("candidates.csv");
    let as_candidates: Vec<Puzzle> = puzzles
        .iter()
        .map(|p| Puzzle {
            moves: p.moves[..1].to_vec(),
            ..p.clone()
        })
        .collect();
    puzzleforge::chess::record::write_puzzles(&candidates, &as_candidates).expect("write");
    let two_move = dir.path().join("two_move.csv");
    puzzleforge::chess::record::write_puzzles(&two_move, &puzzles).expect("write");
    let input = write_input(
        dir.path(),
        &puzzles.iter().map(solver_fen).collect::<Vec<_>>(),
    );
    let nodes = "30000";
    let mut verdict_counts = BTreeMap::new();
    for criterion in ["epoch", "lichess", "mate"] {
        let checked = json_lines(&check(
            &input,
            &["--nodes", nodes, "--criterion", criterion, "--workers", "2"],
        ));
        assert_eq!(checked.len(), 20);

        let mined = dir.path().join(format!("mined-{criterion}.csv"));
        let output = Command::new(PUZZLEFORGE)
            .args([
                "mine",
                candidates.to_str().unwrap(),
                "-o",
                mined.to_str().unwrap(),
            ])
            .args(["--nodes", nodes, "--exhaustive", "--criterion", criterion])
            .args(["--trivial-captures", "--workers", "2"])
            .output()
            .expect("run mine");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mined_ids: std::collections::HashSet<String> = read_puzzles(&mined)
            .expect("mined puzzles")
            .into_iter()
            .map(|p| p.id)
            .collect();

        let report = dir.path().join(format!("verify-{criterion}.jsonl"));
        let output = Command::new(PUZZLEFORGE)
            .args([
                "verify",
                two_move.to_str().unwrap(),
                "-o",
                report.to_str().unwrap(),
            ])
            .args(["--factor", "1", "--nodes", nodes, "--nodes-override"])
            .args(["--criterion", criterion, "--workers", "2"])
            .output()
            .expect("run verify");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let verified: Vec<Value> = std::fs::read_to_string(&report)
            .expect("verify report")
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(verified.len(), 20);

        for ((puzzle, checked), verified) in puzzles.iter().zip(&checked).zip(&verified) {
            let unique = checked["unique"].as_bool().expect("unique");
            let long_mate = checked["best_score"]["mate"]
                .as_i64()
                .is_some_and(|n| n > 1);
            assert_eq!(
                verified["criterion_holds"].as_bool(),
                Some(unique),
                "{criterion} {}: check {checked} verify {verified}",
                puzzle.id
            );
            if !(criterion == "mate" && long_mate) {
                assert_eq!(
                    mined_ids.contains(&puzzle.id),
                    unique,
                    "{criterion} {}: check {checked}, mined {}",
                    puzzle.id,
                    mined_ids.contains(&puzzle.id)
                );
            }
            *verdict_counts
                .entry((criterion, checked["why"].as_str().unwrap().to_string()))
                .or_insert(0) += 1;
        }
    }
    // The positions exercise the verdict's cases, not only one of them.
    for case in [
        ("epoch", "unique"),
        ("epoch", "only_legal_move"),
        ("epoch", "second_too_good"),
        ("lichess", "unique"),
        ("lichess", "gap_too_small"),
        ("mate", "unique"),
        ("mate", "no_mate"),
    ] {
        assert!(
            verdict_counts.contains_key(&(case.0, case.1.to_string())),
            "no position gave {case:?}: {verdict_counts:?}"
        );
    }
}

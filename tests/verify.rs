//! `verify` with a second engine: per-check verdicts, the release's policy
//! on puzzles that fail one, the verdict columns through release and
//! export, and determinism across worker counts. Real Stockfish and real
//! Ethereal (`./engines/install.sh`); a missing engine fails the test.

use std::path::{Path, PathBuf};

use puzzleforge::chess::record::{Puzzle, read_puzzles};
use puzzleforge::engine::pool::{EnginePool, PoolConfig};
use puzzleforge::engine::process::EngineSpec;
use puzzleforge::stages::verify::{SecondEngineConfig, VerifyConfig, verify_puzzles};

use crate::common::{puzzleforge, puzzleforge_here, summary};

const STOCKFISH: &str = "/usr/games/stockfish";
const ETHEREAL: &str = "/usr/games/ethereal-chess";

fn engines_present() {
    for engine in [STOCKFISH, ETHEREAL] {
        assert!(
            Path::new(engine).exists(),
            "{engine} is needed (./engines/install.sh)"
        );
    }
}

use crate::common::data;

fn stockfish(workers: usize) -> EnginePool {
    EnginePool::new(
        EngineSpec::new(STOCKFISH),
        PoolConfig {
            workers,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Ethereal at a small depth; `min_gap_cp` as given.
fn ethereal(min_gap_cp: i32) -> SecondEngineConfig {
    SecondEngineConfig {
        path: PathBuf::from(ETHEREAL),
        depth: 8,
        min_gap_cp,
        ..Default::default()
    }
}

/// Real Lichess puzzles, non-mate, with one or two solver moves.
fn lichess_puzzles(count: usize) -> Vec<Puzzle> {
    read_puzzles(&data("lichess_db_puzzle_subset_1499.csv"))
        .unwrap()
        .into_iter()
        .filter(|p| !p.has_theme("mate") && (1..=2).contains(&p.solver_moves()))
        .take(count)
        .collect()
}

fn config(second: SecondEngineConfig) -> VerifyConfig {
    VerifyConfig {
        factor: 1,
        nodes: Some(20_000),
        nodes_override: true,
        second_engine: Some(second),
        ..Default::default()
    }
}

#[test]
fn each_check_has_its_own_verdict_and_a_strict_second_engine_rejects() {
    engines_present();
    let puzzles = lichess_puzzles(4);
    let pool = stockfish(2);
    let lenient = config(ethereal(180));
    let second = lenient.second_engine.as_ref().unwrap().pool(&pool).unwrap();
    let verdicts = verify_puzzles(&lenient, &pool, Some(&second), &puzzles).unwrap();
    assert_eq!(verdicts.len(), puzzles.len());
    // Real puzzles with big gaps: both engines confirm most of them, on
    // every solver move.
    let confirmed: Vec<_> = verdicts
        .iter()
        .filter(|v| v.deeper_holds() && v.second_holds == Some(true))
        .collect();
    assert!(confirmed.len() >= 2, "{verdicts:#?}");
    for verdict in &confirmed {
        let puzzle = puzzles.iter().find(|p| p.id == verdict.id).unwrap();
        assert_eq!(verdict.second_moves.len(), puzzle.solver_moves());
        assert!(verdict.verified());
        assert!(verdict.margin_cp.is_some_and(|m| m >= 0), "{verdict:?}");
    }
    // A second engine that needs more than any score gap rejects every
    // puzzle the first engine accepts: each is then unverified.
    let strict = config(ethereal(20_000));
    let verdicts = verify_puzzles(&strict, &pool, Some(&second), &puzzles).unwrap();
    for verdict in verdicts.iter().filter(|v| v.deeper_holds()) {
        assert_eq!(verdict.second_holds, Some(false), "{verdict:?}");
        assert_eq!(verdict.second_moves.len(), 1, "stops at the first move");
        assert!(!verdict.verified());
    }
    // A margin of 10000 cp is more room than any puzzle has.
    let roomy = VerifyConfig {
        min_margin_cp: 10_000,
        ..lenient
    };
    let verdicts = verify_puzzles(&roomy, &pool, Some(&second), &puzzles).unwrap();
    assert!(verdicts.iter().all(|v| !v.margin_holds && !v.verified()));
}

#[test]
fn verdicts_are_the_same_with_one_and_two_workers() {
    engines_present();
    let puzzles = lichess_puzzles(4);
    let config = config(ethereal(180));
    let run = |workers: usize| {
        let pool = stockfish(workers);
        let second = config.second_engine.as_ref().unwrap().pool(&pool).unwrap();
        assert_eq!(second.workers(), workers);
        verify_puzzles(&config, &pool, Some(&second), &puzzles).unwrap()
    };
    assert_eq!(run(1), run(2));
}

/// A pipeline that mines the bundled game, rates, verifies with Ethereal
/// (rejecting everything when `strict`) and releases only mined puzzles,
/// then exports them. `policy` is `[verify]`'s, or its default when `None`.
fn write_config(dir: &Path, policy: Option<&str>, min_gap_cp: i32) -> PathBuf {
    let policy = policy.map_or(String::new(), |p| format!("policy = \"{p}\""));
    let config = format!(
        r#"
[pipeline]
seed = 11
output_dir = "out"
release = "r1"
stages = ["ingest_games", "mine", "rate", "verify", "release", "export"]

[engine]
path = "{STOCKFISH}"
workers = 2

[sources]
games = ["{games}"]

[mine]
nodes = 20000
shallow_depth = 5
max_per_game = 3

[rate]
model = "{model}"

[verify]
{policy}

[verify.second_engine]
path = "{ETHEREAL}"
depth = 6
min_gap_cp = {min_gap_cp}

[release]
train_per_cell = 1
test_per_cell = 1
# Under "drop" with a second engine that rejects everything, the release
# is empty on purpose.
min_puzzles = 0

[[release.bands]]
ratings = [0, 4000]
lengths = [1, 5]

[export]
formats = ["inspect", "lichess"]
split = "both"
"#,
        games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
        model = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/rate_model.json")
            .display(),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn release_rows(release: &Path) -> Vec<Puzzle> {
    let mut rows = Vec::new();
    for split in ["train.csv", "test.csv"] {
        let path = release.join(split);
        if path.is_file() {
            rows.extend(read_puzzles(&path).unwrap());
        }
    }
    rows
}

fn run_pipeline(policy: Option<&str>, min_gap_cp: i32) -> (tempfile::TempDir, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), policy, min_gap_cp);
    let run = summary(&puzzleforge(dir.path(), &["run", "--json"]));
    (dir, run)
}

#[test]
fn a_puzzle_only_stockfish_accepts_is_dropped_by_default_and_marked_under_mark() {
    engines_present();
    // Ethereal must lead by more than any score gap: it rejects every
    // puzzle Stockfish mined.
    let (dir, _) = run_pipeline(Some("mark"), 20_000);
    let root = dir.path().join("out/r1");
    let verify: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("verify/verify.json")).unwrap()).unwrap();
    let mined = verify["puzzles"].as_u64().unwrap();
    assert!(mined > 0, "{verify}");
    assert_eq!(verify["second_engine_pass"], 0, "{verify}");
    assert_eq!(verify["verified"], 0, "{verify}");
    assert!(
        verify["second_engine"]
            .as_str()
            .is_some_and(|id| id.contains("Ethereal")),
        "{verify}"
    );
    // "mark": the release keeps them, and says they failed.
    let marked = release_rows(&root.join("release"));
    assert!(!marked.is_empty());
    for puzzle in &marked {
        assert_eq!(puzzle.get("VerifySecond"), Some("False"), "{puzzle:?}");
        assert_eq!(puzzle.get("Verified"), Some("False"));
        assert!(matches!(puzzle.get("VerifyDeeper"), Some("True" | "False")));
        assert!(puzzle.get("Margin").is_some());
    }
    // The release's JSON Lines hold the verdicts as booleans.
    let jsonl = std::fs::read_to_string(root.join("release/test.jsonl")).unwrap();
    for line in jsonl.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["Verified"], false, "{row}");
        assert_eq!(row["VerifySecond"], false, "{row}");
        assert!(row["VerifyDeeper"].is_boolean(), "{row}");
    }
    // The verdicts survive the export (Inspect's metadata).
    let mut samples = 0;
    for entry in std::fs::read_dir(root.join("export/inspect")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let sample: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(sample["metadata"]["verified"], false, "{sample}");
            assert_eq!(sample["metadata"]["verify_second"], false, "{sample}");
            samples += 1;
        }
    }
    assert!(samples > 0, "no Inspect samples exported");

    // The default policy ("drop") leaves them all out of the release.
    let (dir, _) = run_pipeline(None, 20_000);
    let root = dir.path().join("out/r1");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("release/manifest.json")).unwrap())
            .unwrap();
    assert!(release_rows(&root.join("release")).is_empty(), "{manifest}");
    assert_eq!(
        manifest["skipped"]["failed_verification"].as_u64(),
        Some(mined),
        "{manifest}"
    );
}

/// A generated mate in 3 (self-play seed 7700502, game 42, ply 17): Stockfish
/// sees the mate; Ethereal 12 finds it at depth 12 with one line, but under
/// MultiPV 2 it scores its two lines +10.02 and +14.55, out of order. The
/// second engine asks a mate puzzle with one line, so the puzzle is
/// confirmed on each solver move; judged by the gap rule (Epoch's
/// criterion) the same engine rejects it at once.
#[test]
fn a_mate_puzzle_is_confirmed_by_the_second_engine_with_one_line() {
    engines_present();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("mate.csv");
    std::fs::write(
        &csv,
        "PuzzleId,FEN,Moves,Rating,Themes,Criterion\n\
         pfe9e055d1ea,3qkbr1/1ppb2p1/4p1Q1/B2p1n1P/3P4/P2pP2P/1PP5/R4RK1 b - - 1 21,\
         e8e7 a5b4 c7c5 b4c5 f5d6 g6f7,2312,check long mate mateIn3,mate\n",
    )
    .unwrap();
    let puzzles = read_puzzles(&csv).unwrap();
    let pool = stockfish(1);
    let second_engine = SecondEngineConfig {
        depth: 12,
        ..ethereal(180)
    };
    let mate = VerifyConfig {
        nodes: Some(300_000),
        ..config(second_engine)
    };
    let second = mate.second_engine.as_ref().unwrap().pool(&pool).unwrap();
    let verdicts = verify_puzzles(&mate, &pool, Some(&second), &puzzles).unwrap();
    let verdict = &verdicts[0];
    assert_eq!(verdict.criterion, "mate");
    assert!(verdict.deeper_holds(), "{verdict:?}");
    assert_eq!(verdict.second_holds, Some(true), "{verdict:?}");
    assert_eq!(verdict.second_moves.len(), 3);
    assert!(verdict.second_moves.iter().all(|m| m.gap_cp.is_none()));
    assert!(verdict.verified());
    let as_epoch = VerifyConfig {
        criterion: Some(puzzleforge::engine::criterion::Criterion::Epoch),
        ..mate
    };
    let verdicts = verify_puzzles(&as_epoch, &pool, Some(&second), &puzzles).unwrap();
    let first = &verdicts[0].second_moves[0];
    assert_eq!(verdicts[0].second_holds, Some(false), "{:?}", verdicts[0]);
    assert!(first.gap_cp.is_some_and(|gap| gap < 0), "{first:?}");
}

/// `verify FILE --config C` verifies with C's `[verify]`: its factor, its
/// nodes and its second engine, whose relative path is found from C's
/// folder (as `run` finds it), wherever the command is started.
#[test]
fn verify_with_a_config_uses_its_verify_section_and_second_engine() {
    engines_present();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("engines")).unwrap();
    std::os::unix::fs::symlink(ETHEREAL, dir.path().join("engines/second")).unwrap();
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[verify]\nfactor = 1\nnodes = 20000\nnodes_override = true\n\n\
         [verify.second_engine]\npath = \"engines/second\"\ndepth = 6\nmin_gap_cp = 0\n",
    )
    .unwrap();
    let puzzles = dir.path().join("puzzles.csv");
    puzzleforge::chess::record::write_puzzles(&puzzles, &lichess_puzzles(2)).unwrap();
    let output = puzzleforge_here(&[
        "verify",
        puzzles.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--engine",
        STOCKFISH,
        "--workers",
        "1",
        "--json",
    ]);
    let counts = summary(&output);
    assert_eq!(counts["factor"], 1, "{counts}");
    assert_eq!(counts["checked"], 2, "{counts}");
    let second = counts["second_engine_pass"].as_u64().unwrap()
        + counts["second_engine_fail"].as_u64().unwrap();
    assert_eq!(second, 2, "the config's second engine saw both: {counts}");
}

/// Ethereal 12 scores a position otherwise on its process's 64th search
/// (its hash ages by one a search and wraps every 64; `ucinewgame` does not
/// reset the age). This position, from a generated puzzle, is one it
/// scores 1290 / -61 at depth 12 and 1290 / -33 on that search. The
/// second engine's pool gives every unit a process of its own, so 65 units
/// on one worker agree, where one process's units disagree on the 64th.
#[test]
fn the_second_engine_scores_a_position_alike_whatever_its_worker_ran_before() {
    engines_present();
    let request = puzzleforge::engine::process::SearchRequest {
        fen: "2q1k2r/6p1/2RQbpp1/4p3/3bP3/3P1PB1/1r4PP/4KB1R b Kk - 0 26"
            .parse()
            .unwrap(),
        moves: vec!["c8b7".parse().unwrap()],
        limit: puzzleforge::engine::process::Limit::Depth(12),
        multipv: 2,
    };
    let units: Vec<usize> = (0..65).collect();
    let scores = |pool: &EnginePool| -> Vec<Vec<String>> {
        pool.map(&units, |session, _, _| {
            let result = session.search(&request)?;
            Ok(result
                .lines
                .iter()
                .map(|line| format!("{:?}", line.score))
                .collect())
        })
        .unwrap()
    };
    let second = SecondEngineConfig {
        depth: 12,
        ..ethereal(180)
    }
    .pool(&stockfish(1))
    .unwrap();
    let fresh = scores(&second);
    assert!(
        fresh.iter().all(|score| score == &fresh[0]),
        "the second engine's units disagree: {:?}",
        fresh
            .iter()
            .enumerate()
            .filter(|(_, s)| *s != &fresh[0])
            .collect::<Vec<_>>()
    );
    // The premise, on one process for all units: if it stops holding, the
    // engine changed, and the fresh process per unit could go.
    let one_process = EnginePool::new(EngineSpec::new(ETHEREAL), PoolConfig::default()).unwrap();
    let reused = scores(&one_process);
    assert_eq!(reused[0], fresh[0]);
    assert_ne!(
        reused[63], reused[0],
        "Ethereal's 64th search on one process"
    );
}

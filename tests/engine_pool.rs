//! The engine pool against a real Stockfish 15.1 (/usr/games/stockfish) and
//! the FAKE puzzleforge-fault-engine, which wraps Stockfish and exits, hangs
//! or prints garbage on demand. Tests fail (never skip) without Stockfish.

use puzzleforge::chess::record::read_puzzles;
use puzzleforge::engine::pool::{EnginePool, PoolConfig, UnitFailed};
use puzzleforge::engine::process::{
    Engine, EngineError, EngineSpec, Limit, SearchRequest, SearchResult,
};
use puzzleforge::engine::settings::resolve_engine;
use std::path::{Path, PathBuf};
use std::time::Duration;

const STOCKFISH: &str = "/usr/games/stockfish";
const FAULT_ENGINE: &str = env!("CARGO_BIN_EXE_puzzleforge-fault-engine");

fn stockfish() -> EngineSpec {
    assert!(
        Path::new(STOCKFISH).is_file(),
        "Stockfish 15.1 must be installed at {STOCKFISH}"
    );
    EngineSpec::new(STOCKFISH)
}

/// Puzzle positions after the opponent's first move (the solver to move).
fn requests(count: usize, nodes: u64) -> Vec<SearchRequest> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lichess_db_puzzle_subset_1499.csv");
    read_puzzles(&path)
        .expect("puzzle sample")
        .into_iter()
        .take(count)
        .map(|puzzle| SearchRequest {
            fen: puzzle.fen,
            moves: vec![puzzle.moves[0]],
            limit: Limit::Nodes(nodes),
            multipv: 2,
        })
        .collect()
}

fn config(workers: usize) -> PoolConfig {
    PoolConfig {
        workers,
        deadline: Duration::from_secs(20),
        ..Default::default()
    }
}

fn search_all(
    spec: EngineSpec,
    config: PoolConfig,
    items: &[SearchRequest],
) -> (Vec<SearchResult>, EnginePool) {
    let pool = EnginePool::new(spec, config).expect("pool starts");
    let results = pool
        .map(items, |session, _, request| session.search(request))
        .expect("all units succeed");
    (results, pool)
}

fn fault_spec(mode: &str, after: u32, state_dir: Option<&Path>, times: u32) -> EngineSpec {
    stockfish();
    let mut spec = EngineSpec::new(FAULT_ENGINE)
        .with_option("FaultMode", mode)
        .with_option("FaultAfter", after);
    if let Some(dir) = state_dir {
        spec = spec
            .with_option("FaultStateDir", dir.display())
            .with_option("FaultTimes", times);
    }
    spec
}

#[test]
fn results_are_in_input_order_and_independent_of_worker_count() {
    let items = requests(8, 20_000);
    let (one, pool) = search_all(stockfish(), config(1), &items);
    assert_eq!(pool.engine_id(), "Stockfish 15.1");
    let (two, pool) = search_all(stockfish(), config(2), &items);
    assert_eq!(one, two);
    let stats = pool.stats();
    assert_eq!(stats.iter().map(|s| s.requests).sum::<u64>(), 8);
    assert!(stats.iter().all(|s| s.restarts == 0));
    assert!(stats.iter().map(|s| s.nodes).sum::<u64>() >= 8 * 20_000);
    for result in &one {
        assert_eq!(result.lines.len(), 2);
        assert_eq!(result.lines[0].multipv, 1);
        assert_eq!(result.best_move, result.lines[0].pv.first().copied());
        assert!(!result.best_by_depth.is_empty());
    }
    // Puzzle 001KR: after h8g8 both f1f8 and d1d8 mate.
    let mates: Vec<_> = one[1]
        .lines
        .iter()
        .map(|line| (line.pv[0].to_string(), line.score))
        .collect();
    assert!(
        mates.contains(&("f1f8".to_string(), puzzleforge::engine::uci::Score::Mate(1))),
        "{mates:?}"
    );
    assert!(
        mates.contains(&("d1d8".to_string(), puzzleforge::engine::uci::Score::Mate(1))),
        "{mates:?}"
    );
}

fn assert_recovers_from(mode: &str, deadline: Duration) {
    let items = requests(8, 20_000);
    let (expected, _) = search_all(stockfish(), config(2), &items);
    let state = tempfile::tempdir().expect("temp dir");
    // Each of the first two processes faults once, at its 12th command (in
    // the second or third unit); the processes started after that behave.
    let spec = fault_spec(mode, 12, Some(state.path()), 2);
    let (results, pool) = search_all(
        spec,
        PoolConfig {
            deadline,
            ..config(2)
        },
        &items,
    );
    assert_eq!(
        results, expected,
        "{mode}: results differ from the real engine's"
    );
    let stats = pool.stats();
    assert_eq!(
        stats.iter().map(|s| s.restarts).sum::<u64>(),
        2,
        "{mode}: {stats:?}"
    );
    assert_eq!(
        stats.iter().map(|s| s.faults).sum::<u64>(),
        2,
        "{mode}: {stats:?}"
    );
}

#[test]
fn recovers_from_an_engine_that_exits() {
    assert_recovers_from("exit", Duration::from_secs(20));
}

#[test]
fn recovers_from_an_engine_that_hangs() {
    assert_recovers_from("hang", Duration::from_secs(5));
}

#[test]
fn recovers_from_an_engine_that_prints_garbage() {
    assert_recovers_from("garbage", Duration::from_secs(20));
}

#[test]
fn gives_up_after_max_attempts_naming_the_item() {
    // Every process dies at its 8th command, i.e. during the first search
    // (handshake: 4 commands; unit: ucinewgame, isready, MultiPV, position).
    let spec = fault_spec("exit", 8, None, 0);
    let pool = EnginePool::new(spec, config(1)).expect("the handshake succeeds");
    let items = requests(3, 10_000);
    let error = pool
        .map(&items, |session, _, request| session.search(request))
        .expect_err("every attempt fails");
    let failed = error.downcast_ref::<UnitFailed>().expect("a UnitFailed");
    assert_eq!((failed.item, failed.attempts), (0, 3));
    assert!(
        matches!(failed.error, EngineError::Died(_)),
        "{:?}",
        failed.error
    );
    assert!(
        error
            .to_string()
            .contains("item 0 failed after 3 attempt(s)"),
        "{error}"
    );
}

#[test]
fn a_missing_engine_or_a_rejected_option_is_fatal() {
    let missing = EnginePool::new(EngineSpec::new("/nonexistent/stockfish"), config(1));
    let message = format!("{:#}", missing.err().expect("cannot start"));
    assert!(message.contains("/nonexistent/stockfish"), "{message}");

    let bad_option = stockfish().with_option("NoSuchOption", 1);
    let message = format!(
        "{:#}",
        EnginePool::new(bad_option, config(1))
            .err()
            .expect("rejected")
    );
    assert!(
        message.contains("No such option: NoSuchOption"),
        "{message}"
    );

    let threads = stockfish().with_option("Threads", 4);
    let error = EnginePool::new(threads, config(1))
        .err()
        .expect("Threads is fixed");
    assert_eq!(puzzleforge::core::error::exit_code(&error), 2);
}

#[test]
fn options_set_in_a_unit_are_undone_before_the_next() {
    let pool = EnginePool::new(stockfish(), config(1)).expect("pool");
    let items = requests(2, 5_000);
    let results = pool
        .map(&items, |session, index, request| {
            if index == 0 {
                session.set_option("UCI_ShowWDL", "true")?;
            }
            session.search(request)
        })
        .expect("searches");
    assert!(results[0].lines[0].wdl.is_some());
    assert_eq!(results[1].lines[0].wdl, None);
}

#[test]
fn mated_position_has_no_best_move() {
    let mut engine = Engine::start(&stockfish(), Duration::from_secs(20)).expect("engine");
    engine.new_game().expect("ucinewgame");
    let result = engine
        .search(&SearchRequest {
            fen: "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
                .parse()
                .unwrap(),
            moves: vec![],
            limit: Limit::Depth(5),
            multipv: 2,
        })
        .expect("search");
    assert_eq!(result.best_move, None);
    assert!(result.lines.is_empty());
    assert!(engine.cpu_seconds().is_some());
}

#[test]
fn depth_limited_search_reports_each_depth() {
    let mut engine = Engine::start(&stockfish(), Duration::from_secs(20)).expect("engine");
    let result = engine
        .search(&SearchRequest {
            fen: "6k1/5ppp/8/8/8/8/5PPP/3RR1K1 w - - 0 1".parse().unwrap(),
            moves: vec![],
            limit: Limit::Depth(6),
            multipv: 1,
        })
        .expect("search");
    let depths: Vec<u32> = result
        .best_by_depth
        .iter()
        .map(|(depth, _, _)| *depth)
        .collect();
    assert_eq!(depths, (1..=6).collect::<Vec<_>>());
    assert_eq!(result.lines.len(), 1);
    assert_eq!(
        result.lines[0].score,
        puzzleforge::engine::uci::Score::Mate(1)
    );
}

#[test]
fn engine_definition_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec =
        EngineSpec::from_file(&root.join("engines/stockfish.toml")).expect("shipped definition");
    assert_eq!(spec.path, PathBuf::from(STOCKFISH));
    assert!(
        spec.options
            .contains(&("Hash".to_string(), "16".to_string()))
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("engine.toml");
    std::fs::write(&file, "path = \"/usr/games/stockfish\"\nthreads = 2\n").expect("write");
    let error = EngineSpec::from_file(&file).expect_err("unknown key");
    let message = format!("{error:#}");
    assert!(
        message.contains("threads") && message.contains("engine.toml"),
        "{message}"
    );
    assert_eq!(puzzleforge::core::error::exit_code(&error), 2);

    std::fs::write(
        &file,
        "path = \"/usr/games/stockfish\"\n[options]\nHash = 32\nUCI_ShowWDL = true\n",
    )
    .expect("write");
    let spec = EngineSpec::from_file(&file).expect("valid");
    assert!(
        spec.options
            .contains(&("Hash".to_string(), "32".to_string()))
    );
    assert!(
        spec.options
            .contains(&("UCI_ShowWDL".to_string(), "true".to_string()))
    );
}

#[test]
fn resolve_engine_prefers_flag_then_config_then_default() {
    let fake = Path::new(FAULT_ENGINE);
    assert_eq!(
        resolve_engine(Some(fake), Some(Path::new(STOCKFISH))).expect("flag"),
        fake
    );
    assert_eq!(resolve_engine(None, Some(fake)).expect("config"), fake);
    assert_eq!(
        resolve_engine(None, None).expect("default"),
        PathBuf::from(STOCKFISH)
    );
    let error = resolve_engine(Some(Path::new("/nonexistent/engine")), None).expect_err("missing");
    assert_eq!(puzzleforge::core::error::exit_code(&error), 2);
    assert!(error.to_string().contains("--engine"), "{error}");
}

/// Writes an executable `#!/bin/sh` script `name` in `dir` with `body`:
/// a FAKE engine for the handshake tests.
fn fake_engine_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let script = dir.join(name);
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("make script executable");
    script
}

/// `mine` on the bundled game with `program` as the engine, one worker and
/// a half-second handshake deadline, writing under `out`.
fn mine_with_engine(out: &Path, program: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "mine",
            "tests/data/lichess_game_export_ZlCTzfMG_eval_clk.pgn",
            "-o",
        ])
        .arg(out.join("mined"))
        .arg("--engine")
        .arg(program)
        .args(["--handshake-deadline", "0.5", "--workers", "1"])
        .output()
        .expect("run puzzleforge")
}

/// A program that never answers `uciok` is named as not an engine and the
/// command exits 2 after one try (no restarts), the handshake bounded by
/// its own deadline rather than the search deadline.
#[test]
fn a_program_that_is_not_an_engine_is_a_usage_error() {
    let out = tempfile::tempdir().expect("temp dir");
    let garbage = fake_engine_script(
        out.path(),
        "garbage-engine.sh",
        "echo 'hello, I print garbage'\nexec cat >/dev/null",
    );
    for program in [Path::new("/bin/cat"), garbage.as_path()] {
        let output = mine_with_engine(out.path(), program);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}: {stderr}",
            program.display()
        );
        assert!(
            stderr.contains(&format!("{} is not a UCI engine", program.display())),
            "names the program: {stderr}"
        );
    }
}

/// Garbage in a search is a fault whose message names the engine and
/// quotes the line (the FAKE engine prints one bad `info` line when the
/// search starts, after the handshake's four commands).
#[test]
fn garbage_names_the_engine_and_the_line() {
    let mut engine =
        Engine::start(&fault_spec("garbage", 5, None, 1), Duration::from_secs(20)).expect("engine");
    let error = engine
        .search(&SearchRequest {
            fen: shakmaty::fen::Fen::default(),
            moves: vec!["e2e4".parse().expect("a move")],
            limit: Limit::Depth(3),
            multipv: 1,
        })
        .expect_err("the fault engine's garbage");
    let message = error.to_string();
    assert!(matches!(error, EngineError::Garbage(_)), "{message}");
    assert!(message.contains("Stockfish 15.1: "), "{message}");
    assert!(message.contains("from the fault engine"), "{message}");
}

/// Whether a live process runs `sleep` with exactly `argument` (a zombie's
/// command line reads empty, so an ended one does not count).
fn sleep_is_running(argument: &str) -> bool {
    let wanted = format!("sleep\0{argument}\0");
    std::fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| cmdline.ends_with(wanted.as_bytes()))
}

/// FAKE engines that are wrapper scripts whose child keeps the output pipe
/// open (a `sleep` in the background, and one run without `exec`): the
/// command still ends at the handshake deadline, naming the program as no
/// engine, and the `sleep` ends with it (the engine's process group is
/// killed), where it used to hang the run and outlive it.
#[test]
fn a_wrapper_whose_child_holds_the_pipe_neither_hangs_nor_outlives_the_run() {
    let out = tempfile::tempdir().expect("temp dir");
    // Arguments no other process has: this test's pid in the fraction.
    let pid = std::process::id();
    let scripts = [
        (
            "fake-background-engine.sh",
            format!("1000.{pid}1"),
            "&\nwait",
        ),
        ("fake-no-exec-engine.sh", format!("1000.{pid}2"), ""),
    ];
    for (name, argument, tail) in &scripts {
        let script = fake_engine_script(out.path(), name, &format!("sleep {argument} {tail}"));
        let output = mine_with_engine(out.path(), &script);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("{} is not a UCI engine", script.display())),
            "{name}: names the program: {stderr}"
        );
        assert!(
            !sleep_is_running(argument),
            "{name}: `sleep {argument}` outlived the run"
        );
    }
}

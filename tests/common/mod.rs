//! Helpers shared by the integration tests: driving the `puzzleforge`
//! binary and starting a real Stockfish pool.
// Each test module uses its own subset of it.
#![allow(dead_code)]

use puzzleforge::engine::pool::{EnginePool, PoolConfig};
use puzzleforge::engine::process::EngineSpec;
use puzzleforge::engine::settings::resolve_engine;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A pool of `workers` real Stockfish processes; fails (never skips) when
/// no Stockfish is installed.
pub fn engine_pool(workers: usize) -> EnginePool {
    let path = resolve_engine(None, None).expect("Stockfish is required for this test");
    let config = PoolConfig {
        workers,
        ..PoolConfig::default()
    };
    EnginePool::new(EngineSpec::new(path), config).unwrap()
}

/// Runs the binary in the crate's folder (where `tests/data/...` paths
/// resolve) with `args`.
pub fn puzzleforge_here(args: &[&str]) -> Output {
    puzzleforge(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Runs the binary in `dir` with `args`.
pub fn puzzleforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run puzzleforge")
}

/// Every file under `dir` whose name is not in `skip`, relative to `dir`,
/// sorted: what two runs' folders are compared by.
pub fn files_under(dir: &Path, skip: &[&str]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if !skip.iter().any(|s| path.file_name().unwrap() == *s) {
                found.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

/// The `--json` summary of a run that must have succeeded: exactly one
/// JSON object on stdout.
pub fn summary(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "puzzleforge failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "exactly one JSON object on stdout: {stdout}"
    );
    serde_json::from_str(lines[0]).unwrap()
}

/// A file of `tests/data`.
pub fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The first `rows` rows of the bundled Lichess sample, as a source file.
pub fn puzzle_slice(dir: &Path, rows: usize) -> std::path::PathBuf {
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let slice: Vec<&str> = text.lines().take(rows + 1).collect();
    let path = dir.join("puzzles.csv");
    std::fs::write(&path, slice.join("\n") + "\n").unwrap();
    path
}

/// A cell as every summary, error and card names it, from its JSON
/// (`rating_bin`, `length`, `mate`): `(1900, 2000] 2 moves`,
/// `(400, 500] mate in 1`.
pub fn cell_label(cell: &serde_json::Value) -> String {
    let length = cell["length"].as_u64().unwrap();
    let moves = match (cell["mate"].as_bool().unwrap(), length) {
        (true, n) => format!("mate in {n}"),
        (false, 1) => "1 move".to_string(),
        (false, n) => format!("{n} moves"),
    };
    format!("{} {moves}", cell["rating_bin"].as_str().unwrap())
}

const GENERATION_STOCKFISH: &str = "/usr/games/stockfish";

/// A generation run's config, written to `dir/name`, writing under
/// `dir/<output_dir>`: weak self-play players and small search budgets (real
/// Stockfish), one cell (every rating, single-move, no mate) wanting 2 train
/// + 1 test generated puzzles, `generate` added to `[generate]`.
pub fn generation_config(
    dir: &Path,
    name: &str,
    output_dir: &str,
    workers: u32,
    generate: &str,
) -> PathBuf {
    assert!(
        Path::new(GENERATION_STOCKFISH).exists(),
        "{GENERATION_STOCKFISH} is needed (apt install stockfish)"
    );
    let config = format!(
        r#"
[pipeline]
seed = 5
output_dir = "{output_dir}"
release = "gen"
stages = ["selfplay", "mine", "rate", "verify", "release"]

[engine]
path = "{GENERATION_STOCKFISH}"
workers = {workers}

# Weak players blunder often and search shallowly: puzzles come fast.
[selfplay]
max_plies = 80
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]

[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3

[rate]
model = "{model}"

[verify]
factor = 2

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
{generate}
"#,
        model = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/rate_model.json")
            .display(),
    );
    let path = dir.join(name);
    std::fs::write(&path, config).unwrap();
    path
}

/// The eval run of `engine:stockfish?nodes=1` on the sample's first 300
/// puzzles (what `run --aim` aims at), and a file of the other 1,199 for
/// an aimed tier's source.
pub fn eval_run(dir: &Path) -> (PathBuf, PathBuf) {
    assert!(
        Path::new("/usr/games/stockfish").exists(),
        "Stockfish is required at /usr/games/stockfish"
    );
    let puzzles =
        puzzleforge::chess::record::read_puzzles(&data("lichess_db_puzzle_subset_1499.csv"))
            .unwrap();
    let (seen, unseen) = puzzles.split_at(300);
    let set = dir.join("seen.csv");
    puzzleforge::chess::record::write_puzzles(&set, seen).unwrap();
    let source = dir.join("unseen.csv");
    puzzleforge::chess::record::write_puzzles(&source, unseen).unwrap();
    let eval_config = dir.join("eval.toml");
    std::fs::write(&eval_config, "[eval.regret]\nenabled = false\n").unwrap();
    let run = dir.join("runs/depth1");
    summary(&puzzleforge(
        dir,
        &[
            "--json",
            "eval",
            set.to_str().unwrap(),
            "--model",
            "engine:stockfish?nodes=1",
            "--no-ladder",
            "--config",
            eval_config.to_str().unwrap(),
            "-o",
            run.to_str().unwrap(),
        ],
    ));
    (run, source)
}

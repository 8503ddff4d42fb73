//! `puzzleforge bench ingest`: times `ingest puzzles` with full validation
//! against the python-chess peer (scripts/validate_puzzles.py) on the same
//! machine in the same run, and reports rows/s of each and their ratio.
//!
//! The input is built from the real sample rows (tests/data) repeated with
//! fresh PuzzleIds, so every row is a real Lichess puzzle and all are
//! accepted. Build in release mode: `cargo run --release -- bench ingest`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::core::error::bad_input;
use crate::core::fileio::AtomicFile;
use crate::core::summary::Summary;
use crate::stages::ingest_puzzles::{IngestPuzzlesConfig, IngestStats, ingest_puzzles};

/// `puzzleforge bench ingest`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchIngestArgs {
    pub rows: usize,
    pub python_rows: usize,
    pub threads: usize,
    pub repeat: usize,
    pub sample: PathBuf,
    pub script: PathBuf,
    pub python: String,
    pub no_python: bool,
}

/// The `i`-th fresh PuzzleId, shaped like Lichess's: five base-62
/// characters (the dump's ids are all five long, which the ingest's
/// duplicate check packs without allocating).
fn lichess_style_id(i: usize) -> [u8; 5] {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut id = [b'0'; 5];
    let mut rest = i;
    for slot in id.iter_mut().rev() {
        *slot = DIGITS[rest % 62];
        rest /= 62;
    }
    id
}

/// Writes `rows` rows built from the sample's rows with fresh ids.
fn build_input(sample: &Path, rows: usize, path: &Path) -> Result<()> {
    let mut reader = csv::Reader::from_path(sample)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", sample.display())))?;
    let header = reader.byte_headers()?.clone();
    let id_column = header
        .iter()
        .position(|c| c == b"PuzzleId")
        .ok_or_else(|| bad_input(format!("{}: no PuzzleId column", sample.display())))?;
    let records: Vec<csv::ByteRecord> = reader.byte_records().collect::<Result<_, _>>()?;
    if records.is_empty() {
        return Err(bad_input(format!("{}: no rows", sample.display())));
    }
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(AtomicFile::create(path)?);
    writer.write_byte_record(&header)?;
    let mut row = csv::ByteRecord::new();
    for i in 0..rows {
        let source = &records[i % records.len()];
        row.clear();
        for (column, cell) in source.iter().enumerate() {
            if column == id_column {
                row.push_field(&lichess_style_id(i));
            } else {
                row.push_field(cell);
            }
        }
        writer.write_byte_record(&row)?;
    }
    let mut file = writer
        .into_inner()
        .map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), e.error()))?;
    file.flush()?;
    file.commit()
}

fn run_python(args: &BenchIngestArgs, input: &Path) -> Result<Value> {
    let probe = Command::new(&args.python)
        .args(["-c", "import chess"])
        .output()
        .map_err(|e| bad_input(format!("cannot run {}: {e}", args.python)))?;
    if !probe.status.success() {
        return Err(bad_input(format!(
            "python-chess is not installed for {}: install it with `{} -m pip install chess` \
             (or pass --no-python)",
            args.python, args.python
        )));
    }
    let output = Command::new(&args.python)
        .arg(&args.script)
        .arg(input)
        .output()
        .with_context(|| format!("running {}", args.script.display()))?;
    if !output.status.success() {
        anyhow::bail!(
            "{} failed: {}",
            args.script.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("reading the output of {}", args.script.display()))
}

/// Runs the benchmark.
pub fn run_bench_ingest(args: &BenchIngestArgs) -> Result<Summary> {
    if args.rows > 62usize.pow(5) {
        return Err(bad_input(format!(
            "--rows {} is more than the {} five-character ids",
            args.rows,
            62usize.pow(5)
        )));
    }
    let dir = tempfile_dir()?;
    let input = dir.join("bench_puzzles.csv.zst");
    build_input(&args.sample, args.rows, &input)?;
    let output = dir.join("bench_out.csv");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .context("starting the worker pool")?;
    let (best, best_cpu) = time_ingest(args, &pool, &input, &output)?;
    let threads = pool.current_num_threads();
    let ceiling = pool.install(|| validation_ceiling(&args.sample, args.rows, args.repeat))?;
    let mut human = format!(
        "ingest puzzles: {} rows in {:.3} s = {:.0} rows/s ({threads} threads, best of {})\n",
        best.rows_read,
        best.seconds,
        best.rows_per_sec,
        args.repeat.max(1)
    );
    // On a shared machine wall time depends on the other load; CPU time
    // per row does not, so the bench reports both.
    let rows_per_cpu_sec = if best_cpu.is_finite() && best_cpu > 0.0 {
        best.rows_read as f64 / best_cpu
    } else {
        0.0
    };
    human.push_str(&format!(
        "ingest puzzles: {best_cpu:.3} CPU-s = {rows_per_cpu_sec:.0} rows per CPU-second\n"
    ));
    human.push_str(&format!(
        "shakmaty validation alone (FEN + every move, in memory, no CSV or output): {:.0} rows/s \
         ({threads} threads), the ceiling of any ingest built on it\n",
        ceiling
    ));
    let mut report = IngestBenchReport {
        validation_only_rows_per_sec: ceiling,
        rows: best.rows_read,
        threads,
        seconds: best.seconds,
        rows_per_sec: best.rows_per_sec,
        cpu_seconds: best_cpu,
        rows_per_cpu_sec,
        python: None,
    };
    if !args.no_python {
        let ours = (best.rows_per_sec, rows_per_cpu_sec);
        report.python = Some(compare_with_python(args, &dir, ours, &mut human)?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Summary::new(human, serde_json::to_value(&report)?))
}

/// `bench ingest`'s JSON summary: our figures, then the peer's and the
/// ratios when the peer ran.
#[derive(Serialize)]
struct IngestBenchReport {
    validation_only_rows_per_sec: f64,
    rows: u64,
    threads: usize,
    seconds: f64,
    rows_per_sec: f64,
    /// Null when the CPU time could not be read.
    cpu_seconds: f64,
    rows_per_cpu_sec: f64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    python: Option<PythonComparison>,
}

/// The python-chess peer's output as it came, and our rates over its.
#[derive(Serialize)]
struct PythonComparison {
    python: Value,
    ratio: f64,
    cpu_ratio: f64,
}

/// What the comparison reads of the python-chess peer's output.
#[derive(Deserialize)]
struct PythonFigures {
    /// Shown as the peer wrote it.
    #[serde(default)]
    rows: Value,
    #[serde(default, deserialize_with = "super::number_or_zero")]
    seconds: f64,
    #[serde(default, deserialize_with = "super::number_or_zero")]
    rows_per_sec: f64,
    #[serde(default, deserialize_with = "super::number_or_zero")]
    rows_per_cpu_sec: f64,
}

/// Times `args.repeat` ingests of `input` on `pool`: the fastest run's
/// stats and the least CPU time any run took.
fn time_ingest(
    args: &BenchIngestArgs,
    pool: &rayon::ThreadPool,
    input: &Path,
    output: &Path,
) -> Result<(IngestStats, f64)> {
    let config = IngestPuzzlesConfig::default();
    let mut best: Option<IngestStats> = None;
    let mut best_cpu = f64::INFINITY;
    for _ in 0..args.repeat.max(1) {
        // Each repetition writes a fresh file, as a pipeline stage does:
        // renaming over an existing file costs the filesystem an extra flush.
        let _ = std::fs::remove_file(output);
        let cpu_before = process_cpu_seconds();
        let stats = pool.install(|| ingest_puzzles(&config, input, output, None))?;
        if let (Some(before), Some(after)) = (cpu_before, process_cpu_seconds()) {
            best_cpu = best_cpu.min(after - before);
        }
        if stats.accepted != args.rows as u64 {
            anyhow::bail!(
                "the bench input should be all valid, but {} of {} rows were accepted",
                stats.accepted,
                args.rows
            );
        }
        if best.as_ref().is_none_or(|b| stats.seconds < b.seconds) {
            best = Some(stats);
        }
    }
    let best = best.ok_or_else(|| anyhow::anyhow!("no timed run"))?;
    Ok((best, best_cpu))
}

/// Runs the python-chess peer on `args.python_rows` rows: its output and
/// our ratios over its rates (`ours`: rows per second, rows per
/// CPU-second), for the report.
fn compare_with_python(
    args: &BenchIngestArgs,
    dir: &Path,
    ours: (f64, f64),
    human: &mut String,
) -> Result<PythonComparison> {
    let (rows_per_sec, rows_per_cpu_sec) = ours;
    let subset = dir.join("bench_python.csv");
    build_input(&args.sample, args.python_rows.max(1), &subset)?;
    let python = run_python(args, &subset)?;
    let figures = PythonFigures::deserialize(&python).unwrap_or(PythonFigures {
        rows: Value::Null,
        seconds: 0.0,
        rows_per_sec: 0.0,
        rows_per_cpu_sec: 0.0,
    });
    let python_rate = figures.rows_per_sec;
    let ratio = if python_rate > 0.0 {
        rows_per_sec / python_rate
    } else {
        0.0
    };
    human.push_str(&format!(
        "python-chess: {} rows in {:.3} s = {:.0} rows/s\nratio: {:.0}x\n",
        figures.rows, figures.seconds, python_rate, ratio
    ));
    let python_cpu_rate = figures.rows_per_cpu_sec;
    let cpu_ratio = if python_cpu_rate > 0.0 {
        rows_per_cpu_sec / python_cpu_rate
    } else {
        0.0
    };
    human.push_str(&format!(
        "python-chess: {python_cpu_rate:.0} rows per CPU-second; CPU-time ratio: {cpu_ratio:.0}x\n"
    ));
    Ok(PythonComparison {
        python,
        ratio,
        cpu_ratio,
    })
}

/// Rows per second of the validation alone, on the current rayon pool: the
/// sample's FEN and Moves cells held in memory, each row's FEN parsed and
/// every move checked and played (`PuzzleLine::parse_cells`), nothing read or
/// written. What `ingest puzzles` cannot beat, whatever its I/O.
fn validation_ceiling(sample: &Path, rows: usize, repeat: usize) -> Result<f64> {
    use rayon::prelude::*;
    let mut reader = csv::Reader::from_path(sample)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", sample.display())))?;
    let header = reader.byte_headers()?.clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|c| c == name.as_bytes())
            .ok_or_else(|| bad_input(format!("{}: no {name} column", sample.display())))
    };
    let (fen, moves) = (column("FEN")?, column("Moves")?);
    let mut cells = Vec::new();
    for record in reader.byte_records() {
        let record = record?;
        cells.push((
            record.get(fen).unwrap_or_default().to_vec(),
            record.get(moves).unwrap_or_default().to_vec(),
        ));
    }
    if cells.is_empty() {
        return Err(bad_input(format!("{}: no rows", sample.display())));
    }
    let mut best = 0.0f64;
    for _ in 0..repeat.max(1) {
        let started = std::time::Instant::now();
        let valid = (0..rows)
            .into_par_iter()
            .with_min_len(256)
            .map_init(crate::chess::line::PuzzleLine::default, |line, i| {
                let (fen, moves) = &cells[i % cells.len()];
                line.parse_cells(fen, moves).is_ok()
            })
            .filter(|valid| *valid)
            .count();
        let seconds = started.elapsed().as_secs_f64();
        if valid != rows {
            anyhow::bail!("{} of {rows} sample rows failed validation", rows - valid);
        }
        best = best.max(rows as f64 / seconds.max(1e-9));
    }
    Ok(best)
}

/// User + system CPU seconds of this process so far (Linux
/// `/proc/self/stat`, in clock ticks of 1/100 s); `None` elsewhere.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / 100.0)
}

/// A fresh folder under the system temp dir for the bench's files.
fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("puzzleforge-bench-ingest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

//! Running the stage: `puzzleforge ingest puzzles` and its entry points,
//! and [`ingest_puzzles`], which starts the reader thread, the validators
//! and the commit thread and joins them. Apart because it only wires the
//! other files together.

use anyhow::{Context, Result};
use foldhash::HashSetExt;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use super::commit::{Committer, commit_batches, create_output};
use super::filters::{IngestPuzzlesConfig, MateFilter};
use super::reader::{Batch, BatchResult, start_reader};
use super::rejects::{RejectsFile, default_rejects_path};
use super::sample::Reservoir;
use super::stats::IngestStats;
use super::validate::{BufferPool, ChunkOut, validate_batches};
use crate::chess::record::Format;
use crate::core::fileio::open_input_with;
use crate::core::settings::flags_over;
use crate::core::summary::Summary;

/// `puzzleforge ingest puzzles`' flags (their help: `cli::ingest`).
#[derive(Debug, Clone)]
pub struct PuzzlesArgs {
    pub input: PathBuf,
    pub output: PathBuf,
    pub rejects: Option<PathBuf>,
    /// The flags laid over `[ingest.puzzles]` by
    /// [`crate::core::settings::flags_over`].
    pub overrides: PuzzlesOverrides,
}

/// `ingest puzzles`' filter flags (their help: `cli::ingest`), each over the
/// `[ingest.puzzles]` key of its name.
#[derive(Default, Debug, Clone, Serialize)]
pub struct PuzzlesOverrides {
    pub min_rating: Option<i32>,
    pub max_rating: Option<i32>,
    pub max_rating_deviation: Option<i32>,
    pub min_popularity: Option<i32>,
    pub min_nb_plays: Option<i32>,
    pub themes_any: Vec<String>,
    pub themes_all: Vec<String>,
    pub themes_none: Vec<String>,
    pub solver_lengths: Vec<usize>,
    pub mate: Option<MateFilter>,
    pub sample: Option<u64>,
    pub seed: Option<u64>,
}

/// Runs `ingest puzzles` from the command line (flags over the defaults).
pub fn run_puzzles(args: &PuzzlesArgs) -> Result<Summary> {
    let config = flags_over(&IngestPuzzlesConfig::default(), &args.overrides)?;
    run_puzzles_with(&config, &args.input, &args.output, args.rejects.as_deref())
}

/// Runs `ingest puzzles` with a configuration (the pipeline runner's entry).
pub(crate) fn run_puzzles_with(
    config: &IngestPuzzlesConfig,
    input: &Path,
    output: &Path,
    rejects: Option<&Path>,
) -> Result<Summary> {
    let stats = ingest_puzzles(config, input, output, rejects)?;
    Ok(stats.summary())
}

/// Validates, derives, filters and writes; the library entry point.
pub fn ingest_puzzles(
    config: &IngestPuzzlesConfig,
    input: &Path,
    output: &Path,
    rejects: Option<&Path>,
) -> Result<IngestStats> {
    let started = Instant::now();
    let format = Format::from_output_path(output)?;
    let rejects_path = rejects
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_rejects_path(output));
    let total_bytes = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let bar = crate::core::progress::bytes(total_bytes, "puzzles");
    let wrap_bar = bar.clone();
    let reader = open_input_with(input, move |file| Box::new(wrap_bar.wrap_read(file)))?;
    let (sender, batches) = mpsc::sync_channel::<BatchResult>(2);
    let (recycle, recycled) = mpsc::channel::<Batch>();
    let (layout, reader_thread) = start_reader(input, reader, sender, recycled)?;
    let out = create_output(output, format, &layout)?;
    let rejects_file = RejectsFile::create(&rejects_path)?;

    let stats = IngestStats {
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        rejects: rejects_path.clone(),
        ..IngestStats::default()
    };
    let committer = Committer {
        layout: &layout,
        output,
        stats,
        // Sized from the input so the set rarely rehashes (a compressed dump
        // row is about 45 bytes, a plain one about 180).
        short_ids: foldhash::HashSet::with_capacity(
            (total_bytes / 16).clamp(1 << 16, 1 << 23) as usize
        ),
        long_ids: foldhash::HashSet::new(),
        reservoir: config.sample.map(|n| Reservoir::new(n, config.seed)),
        kept_index: 0,
        out,
        rejects: rejects_file,
    };

    // Three stages overlap: the reader thread parses, this thread validates
    // batch N+1 in parallel while the commit thread writes batch N.
    let buffers: &BufferPool = &std::sync::Mutex::new(Vec::new());
    let result = std::thread::scope(|scope| -> Result<Committer> {
        // Named, so profilers and debuggers tell the stages apart.
        std::thread::Builder::new()
            .name("ingest-read".into())
            .spawn_scoped(scope, reader_thread)
            .context("starting the reader thread")?;
        let (to_commit, commits) = mpsc::sync_channel::<(Batch, Vec<ChunkOut>)>(1);
        let progress = bar.clone();
        let commit_thread = std::thread::Builder::new()
            .name("ingest-commit".into())
            .spawn_scoped(scope, move || {
                commit_batches(committer, commits, recycle, buffers, progress, started)
            })
            .context("starting the commit thread")?;
        let failure =
            validate_batches(batches, &layout, format, config, buffers, &to_commit, input).err();
        drop(to_commit);
        let committed = commit_thread
            .join()
            .map_err(|_| anyhow::anyhow!("the commit thread panicked"))?;
        match failure {
            Some(error) => Err(error),
            None => committed,
        }
    });
    crate::core::progress::finish(&bar);
    let mut stats = result?.finish()?;
    stats.seconds = started.elapsed().as_secs_f64();
    stats.rows_per_sec = stats.rows_read as f64 / stats.seconds.max(1e-9);
    Ok(stats)
}

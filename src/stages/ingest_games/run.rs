//! The stage's run: reads the dump, keeps the candidates of the games the
//! filter admits, writes them and reports the counts and throughput.

use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::candidates::{GameFilter, GameMeta, Thresholds, game_candidates};
use super::config::{GamesArgs, IngestGamesConfig};
use crate::chess::columns::{self};
use crate::chess::pgn::{GameItem, PgnGames, Tags};
use crate::chess::record::PuzzleWriter;
use crate::core::error::bad_input;
use crate::core::fileio::open_input_with;
use crate::core::progress;
use crate::core::settings::flags_over;
use crate::core::summary::{Report, Summary};

/// Runs `ingest games` with the default configuration and the flags.
pub fn run_games(args: &GamesArgs) -> Result<Summary> {
    let config = flags_over(&IngestGamesConfig::default(), &args.overrides)?;
    run_games_with(&config, &args.input, &args.output)
}

/// Counts decompressed PGN bytes as they are read.
struct CountBytes<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountBytes<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// How many invalid games the summary names one by one.
const INVALID_EXAMPLES: usize = 5;

/// What reading one input found, game by game.
#[derive(Default)]
struct GameCounts {
    games_read: u64,
    kept: u64,
    filtered: BTreeMap<&'static str, u64>,
    invalid: BTreeMap<&'static str, u64>,
    /// The first [`INVALID_EXAMPLES`] invalid games, described.
    examples: Vec<String>,
    /// Kept games with at least one candidate.
    candidate_games: u64,
}

/// How much was read, and how fast.
struct Throughput {
    /// Bytes of the input file (compressed, if it is).
    file_bytes: u64,
    /// Bytes of PGN after decompression.
    pgn_bytes: u64,
    seconds: f64,
}

/// Runs the stage: reads `input`, writes candidates to `output`
/// (atomically: nothing is written when reading fails).
pub fn run_games_with(config: &IngestGamesConfig, input: &Path, output: &Path) -> Result<Summary> {
    games_report(config, input, output)?.into_summary()
}

/// [`run_games_with`], its record typed.
pub(crate) fn games_report(
    config: &IngestGamesConfig,
    input: &Path,
    output: &Path,
) -> Result<Report<GamesSummary>> {
    let filter = GameFilter::new(config)?;
    let thresholds = Thresholds::from(config);
    let started = Instant::now();
    let file_bytes = std::fs::metadata(input)
        .map_err(|e| bad_input(format!("cannot open {}: {e}", input.display())))?
        .len();
    let bar = progress::bytes(file_bytes, "games");
    let wrap_bar = bar.clone();
    let reader = open_input_with(input, move |file: File| Box::new(wrap_bar.wrap_read(file)))?;
    let pgn_bytes = Arc::new(AtomicU64::new(0));
    let reader = CountBytes {
        inner: reader,
        count: Arc::clone(&pgn_bytes),
    };
    let extra = columns::names(columns::INGEST_GAMES).map(String::from);
    let mut writer = PuzzleWriter::create(output, &extra)?;
    let counts = write_candidates(config, &filter, &thresholds, reader, input, &mut writer)?;
    let candidates = writer
        .finish()
        .with_context(|| format!("finishing {}", output.display()))?;
    crate::core::progress::finish(&bar);
    let throughput = Throughput {
        file_bytes,
        pgn_bytes: pgn_bytes.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok(stage_summary(
        input,
        output,
        &counts,
        candidates,
        &throughput,
    ))
}

/// Reads every game of `reader` (the PGN of `input`), counts why games are
/// dropped, and writes the kept games' candidates.
fn write_candidates(
    config: &IngestGamesConfig,
    filter: &GameFilter,
    thresholds: &Thresholds,
    reader: impl Read,
    input: &Path,
    writer: &mut PuzzleWriter,
) -> Result<GameCounts> {
    // Unanalysed games are dropped unless all positions are wanted, and
    // then their moves need no replay.
    // Games with at least one well-formed tag pair: a file with none holds
    // no PGN at all (binary data, another format), which is an error, not
    // a file of filtered games.
    let tagged_games = std::cell::Cell::new(0u64);
    let mut games = PgnGames::with_filter(reader, |tags: &Tags| {
        if tags.iter().next().is_some() {
            tagged_games.set(tagged_games.get() + 1);
        }
        filter.check(tags)
    })
    .require_evals(!config.all_positions);
    let mut counts = GameCounts::default();
    for item in games.by_ref() {
        let item = item.map_err(|e| {
            bad_input(format!(
                "{}: the input stream is truncated or corrupt; {} games were read before it failed: {}",
                input.display(),
                e.games_read,
                e.error
            ))
        })?;
        match item {
            GameItem::Filtered { reason, .. } => *counts.filtered.entry(reason).or_default() += 1,
            GameItem::Invalid(game) => {
                *counts.invalid.entry(game.reason).or_default() += 1;
                if counts.examples.len() < INVALID_EXAMPLES {
                    counts.examples.push(game.to_string());
                }
            }
            GameItem::Game(game) => {
                let has_evals = game.has_evals();
                if !has_evals && !config.all_positions {
                    *counts.filtered.entry("no_eval").or_default() += 1;
                    continue;
                }
                // The filter accepted these tags, so they parse.
                let meta = match GameMeta::from_tags(&game.tags) {
                    Ok(meta) => meta,
                    Err(_) => {
                        *counts.invalid.entry("bad_tag").or_default() += 1;
                        continue;
                    }
                };
                counts.kept += 1;
                let all_positions = config.all_positions && !has_evals;
                let found = game_candidates(&game, &meta, thresholds, all_positions);
                if !found.is_empty() {
                    counts.candidate_games += 1;
                }
                for puzzle in &found {
                    writer.write(puzzle)?;
                }
            }
        }
    }
    counts.games_read = games.games_read();
    drop(games);
    if counts.games_read > 0 && tagged_games.get() == 0 {
        crate::bail_input!(
            "{}: no PGN game found: none of the {} games read has a tag pair such as \
             [Event \"...\"] (is it a PGN file?)",
            input.display(),
            counts.games_read
        );
    }
    Ok(counts)
}

/// The stage's JSON summary: counts, reasons and throughput.
#[derive(Serialize, Debug, Clone)]
pub struct GamesSummary {
    pub command: &'static str,
    pub input: String,
    /// The candidates file (where the pipeline commits it).
    pub output: String,
    pub games_read: u64,
    pub games_kept: u64,
    pub filtered: BTreeMap<&'static str, u64>,
    pub invalid: BTreeMap<&'static str, u64>,
    pub invalid_examples: Vec<String>,
    pub candidates: u64,
    pub candidate_games: u64,
    pub input_bytes: u64,
    pub pgn_bytes: u64,
    pub seconds: f64,
    pub mib_per_s: f64,
    pub pgn_mib_per_s: f64,
}

/// The stage's summary: counts, reasons and throughput.
fn stage_summary(
    input: &Path,
    output: &Path,
    counts: &GameCounts,
    candidates: u64,
    throughput: &Throughput,
) -> Report<GamesSummary> {
    let GameCounts {
        games_read,
        kept,
        filtered,
        invalid,
        examples,
        candidate_games,
    } = counts;
    let Throughput {
        file_bytes,
        pgn_bytes,
        seconds,
    } = *throughput;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let rate = |bytes: u64| {
        if seconds > 0.0 {
            mib(bytes) / seconds
        } else {
            0.0
        }
    };
    let reasons = |map: &BTreeMap<&'static str, u64>| {
        if map.is_empty() {
            return "none".to_string();
        }
        map.iter()
            .map(|(reason, n)| format!("{reason} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let filtered_total: u64 = filtered.values().sum();
    let invalid_total: u64 = invalid.values().sum();
    let mut human = format!(
        "ingest games: {} -> {}\n  games read {games_read}, kept {kept}, filtered {filtered_total} ({}), invalid {invalid_total} ({})\n  candidates {candidates} from {candidate_games} games\n  {:.1} MiB read ({:.1} MiB of PGN) in {seconds:.2} s: {:.1} MiB/s, {:.1} MiB/s of PGN\n",
        input.display(),
        output.display(),
        reasons(filtered),
        reasons(invalid),
        mib(file_bytes),
        mib(pgn_bytes),
        rate(file_bytes),
        rate(pgn_bytes),
    );
    for example in examples {
        human.push_str(&format!("  invalid: {example}\n"));
    }
    let record = GamesSummary {
        command: "ingest games",
        input: input.display().to_string(),
        output: output.display().to_string(),
        games_read: *games_read,
        games_kept: *kept,
        filtered: filtered.clone(),
        invalid: invalid.clone(),
        invalid_examples: examples.clone(),
        candidates,
        candidate_games: *candidate_games,
        input_bytes: file_bytes,
        pgn_bytes,
        seconds,
        mib_per_s: rate(file_bytes),
        pgn_mib_per_s: rate(pgn_bytes),
    };
    Report::new(human, record)
}

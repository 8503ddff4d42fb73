//! The stage's run: reads the puzzles, checks them across the pools and
//! writes the report and the puzzles with their verdict columns.
//!
//! One JSON line per puzzle goes to the report file, the totals to the
//! summary; `--puzzles-out` writes the puzzles with the verdict columns
//! (`VerifyDeeper`, `VerifySecond`, `Margin`, `Verified`), which the release
//! reads (`release --drop-unverified`, `[verify] policy = "drop"`).
//! Verification is deterministic across worker counts: one puzzle is one
//! unit of pool work, and the pool starts each unit with `ucinewgame`.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::check::{Item, Verdict, check, criterion_of, second_opinion};
use super::config::{CONFIG_KEY, VerifyArgs, VerifyConfig, load_verify_section};
use super::summary::{VerifyCounts, summarize};
use crate::chess::record::Puzzle;
use crate::core::fileio::AtomicFile;
use crate::core::settings::flags_over;
use crate::core::summary::Summary;
use crate::engine::criterion::Criterion;
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineConfig;

pub fn run_verify(args: &VerifyArgs) -> Result<Summary> {
    let base = match &args.config {
        Some(path) => load_verify_section(path)?,
        None => VerifyConfig::default(),
    };
    let config = flags_over(&base, &args.overrides)?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("puzzles".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    let origin = match (&args.overrides.second_engine, &args.config) {
        (Some(_), _) => "--second-engine".to_string(),
        (None, Some(path)) => format!("{CONFIG_KEY} in {}", path.display()),
        (None, None) => CONFIG_KEY.to_string(),
    };
    let second = match &config.second_engine {
        Some(second) => Some(second.pool_from(&pool, &origin)?),
        None => None,
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_report_path(&args.input));
    let files = VerifyFiles {
        input: &args.input,
        report: &output,
        puzzles_out: args.puzzles_out.as_deref(),
    };
    run_verify_with(&config, &pool, second.as_ref(), &files).map(|(summary, _)| summary)
}

/// `puzzles.csv` -> `puzzles.verify.jsonl`, next to the input.
pub(crate) fn default_report_path(input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .trim_end_matches(".zst")
        .trim_end_matches(".csv")
        .trim_end_matches(".jsonl")
        .to_string();
    input.with_file_name(format!("{stem}.verify.jsonl"))
}

/// Where a verification run reads and writes.
pub struct VerifyFiles<'a> {
    pub input: &'a Path,
    /// The per-puzzle JSON Lines report.
    pub report: &'a Path,
    /// The puzzles with their verdict columns, if wanted.
    pub puzzles_out: Option<&'a Path>,
}

/// Checks `puzzles` (numbered from 1 in the verdicts) with `pool` and, when
/// `config` has a second engine, `second` (its pool). One verdict per
/// puzzle, in order; the same whatever the pools' worker counts.
pub fn verify_puzzles(
    config: &VerifyConfig,
    pool: &EnginePool,
    second: Option<&EnginePool>,
    puzzles: &[Puzzle],
) -> Result<Vec<Verdict>> {
    let items: Vec<Item> = puzzles
        .iter()
        .enumerate()
        .map(|(i, puzzle)| Item {
            line: i as u64 + 1,
            puzzle,
        })
        .collect();
    verify_items(config, pool, second, &items)
}

fn verify_items(
    config: &VerifyConfig,
    pool: &EnginePool,
    second: Option<&EnginePool>,
    items: &[Item],
) -> Result<Vec<Verdict>> {
    if config.factor == 0 {
        crate::bail_input!("--factor must be at least 1");
    }
    let mut verdicts = pool.map(items, |session, _, item| check(session, item, config))?;
    if let (Some(second_config), Some(second)) = (&config.second_engine, second) {
        let opinions = second.map(items, |session, _, item| {
            let mate = criterion_of(item.puzzle, config) == Criterion::Mate;
            second_opinion(session, item.puzzle, second_config, mate)
        })?;
        for (verdict, moves) in verdicts.iter_mut().zip(opinions) {
            verdict.second_holds = Some(!moves.is_empty() && moves.iter().all(|m| m.holds));
            verdict.second_moves = moves;
        }
    } else if config.second_engine.is_some() {
        crate::bail_input!("verify: a second engine is configured but no pool was started for it");
    }
    Ok(verdicts)
}

/// Verifies one file: its summary, and beside it the counts the summary
/// shows, typed, for a caller that adds up several files.
pub fn run_verify_with(
    config: &VerifyConfig,
    pool: &EnginePool,
    second: Option<&EnginePool>,
    files: &VerifyFiles,
) -> Result<(Summary, VerifyCounts)> {
    let mut puzzles = Vec::new();
    let mut unreadable = Vec::new();
    let input = files.input;
    crate::chess::record::for_each_row(input, |(line, row)| {
        match row {
            Ok(puzzle) => puzzles.push((line, puzzle)),
            Err(e) => unreadable.push(format!("{} line {line}: {e}", input.display())),
        }
        Ok(())
    })?;
    let items: Vec<Item> = puzzles
        .iter()
        .map(|(line, puzzle)| Item {
            line: *line,
            puzzle,
        })
        .collect();
    let verdicts = verify_items(config, pool, second, &items)?;
    let mut file = AtomicFile::create(files.report)?;
    for verdict in &verdicts {
        let text = serde_json::to_string(verdict)?;
        writeln!(file, "{text}").with_context(|| format!("writing {}", files.report.display()))?;
    }
    file.commit()?;
    if let Some(path) = files.puzzles_out {
        let marked: Vec<Puzzle> = puzzles
            .into_iter()
            .zip(&verdicts)
            .map(|((_, mut puzzle), verdict)| {
                verdict.mark(&mut puzzle);
                puzzle
            })
            .collect();
        crate::chess::record::write_puzzles(path, &marked)?;
    }
    summarize(config, &verdicts, &unreadable, files.report)
}

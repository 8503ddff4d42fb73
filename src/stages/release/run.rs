//! The stage's run: the `[release]` section with the flags over it, the tier,
//! the draw over the pool, the release files and manifest, the summary and
//! the errors for a pool too small or cells left unfilled.

use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::args::ReleaseArgs;
use super::cells::{ReleaseConfig, Tier};
use super::draw::{CellOutcome, Draw, draw};
use super::pool::{Exclusions, PoolRead, fetch_chosen, load_exclusions, read_pool};
use super::record::release_manifest;
use crate::core::error::bad_input;
use crate::core::settings::{flags_over, load_renamed_section};
use crate::core::summary::{Report, Summary};

/// Runs `puzzleforge release`: the `[release]` section of `--config` (or the
/// defaults) with the flags over it.
pub fn run_release(args: &ReleaseArgs) -> Result<Summary> {
    let section: ReleaseConfig = load_renamed_section(
        args.config.as_deref(),
        super::cells::RELEASE_SECTION,
        super::cells::RELEASE_SECTION_FORMERLY,
    )?;
    let summary = run_release_with(args, flags_over(&section, &args.overrides)?)?.into_summary()?;
    // The manifest's sha256 goes into the registry of the folder above the
    // release, where the commands that read the release look for it.
    super::folder::ReleaseFolder::at(&args.output)
        .register_in(super::folder::holding_folder(&args.output))?;
    Ok(summary)
}

/// The `[release.tiers]` entry `--tier` names (none without it); an unknown
/// name, or a tier whose bounds admit nothing, is an error.
fn chosen_tier(args: &ReleaseArgs, config: &ReleaseConfig) -> Result<Option<Tier>> {
    let Some(name) = &args.tier else {
        return Ok(None);
    };
    let tier = config.tiers.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = config.tiers.keys().map(String::as_str).collect();
        bad_input(format!(
            "release: no tier named {name:?} (configured: {})",
            known.join(", ")
        ))
    })?;
    if let Some((key, why)) = tier.empty_bounds() {
        let from = args
            .config
            .as_ref()
            .map_or_else(String::new, |path| format!("{}: ", path.display()));
        return Err(bad_input(format!(
            "release: {from}release.tiers.{name}.{key}: {why}"
        )));
    }
    Ok(Some(tier))
}

/// Draws a release from `args.pool` with the `[release]` settings `config`
/// (the pipeline runner's entry; `args.config` and the section flags are
/// not read).
pub(crate) fn run_release_with(
    args: &ReleaseArgs,
    config: ReleaseConfig,
) -> Result<Report<ReleaseSummary>> {
    let tier = chosen_tier(args, &config)?;
    let quotas = config.quota_table(tier.as_ref())?;

    let exclude_files = exclusion_files(args)?;
    let mut exclusions = load_exclusions(&exclude_files, config.exclude_by)?;
    let mut pool = read_pool(
        &args.pool,
        &config,
        tier.as_ref(),
        &quotas,
        &mut exclusions,
        args.drop_unverified,
    )?;
    let admitted = pool.candidates.len() as u64 + pool.outside_quota;
    let drawn = draw(std::mem::take(&mut pool.candidates), &quotas, config.seed);
    let unfilled: Vec<&CellOutcome> = drawn.cells.iter().filter(|c| !c.filled()).collect();
    if args.strict && !unfilled.is_empty() {
        return Err(unfilled_cells_error(&unfilled, drawn.cells.len()));
    }
    // `run` (and `merge`) pass their provenance: there every earlier
    // release under output_dir is excluded, with no flag to turn it off.
    let remedy = if args.provenance.is_some() {
        "releases never share a puzzle, so add puzzles to the pool ([sources] puzzles: the full Lichess dump) or generate them ([generate] enabled = true; `run --plan` says what that costs)"
    } else {
        "exclude fewer releases (--exclude, --exclude-releases-under) or add puzzles to the pool"
    };
    too_few_puzzles(&drawn, &config, &exclude_files, &exclusions, remedy)?;
    let manifest = release_manifest(
        args,
        &config,
        &pool,
        &exclusions,
        admitted,
        &drawn,
        &unfilled,
    )?;
    let (mut train, mut test) = fetch_chosen(&args.pool, &drawn)?;
    let games = super::provenance::released_games(&args.games, &mut train, &mut test)?;
    let written = super::card::write_release(
        &args.output,
        &train,
        &test,
        &drawn.cells,
        manifest,
        games.as_deref(),
    )?;

    let removed_total: usize = exclusions.removed.iter().sum();
    let human = release_report(
        args,
        (train.len(), test.len()),
        &drawn,
        &unfilled,
        removed_total,
        exclude_files.len(),
        &pool,
    );
    let record = ReleaseSummary {
        command: "release",
        output: args.output.display().to_string(),
        train: train.len(),
        test: test.len(),
        cells: drawn.cells.len(),
        unfilled_cells: unfilled.len(),
        excluded: removed_total,
        skipped: pool.skipped,
        files: written,
    };
    Ok(Report::new(human, record))
}

/// The JSON summary of a draw.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct ReleaseSummary {
    command: &'static str,
    /// The release folder (where the pipeline commits it).
    pub(crate) output: String,
    train: usize,
    test: usize,
    cells: usize,
    unfilled_cells: usize,
    /// Pool puzzles left out as repeats of the excluded files'.
    excluded: usize,
    /// Pool rows skipped, by reason.
    skipped: BTreeMap<String, u64>,
    /// The release's files and their sha256.
    files: BTreeMap<String, String>,
}

/// The files whose puzzles must not reappear: `--exclude` (a release
/// folder stands for its train and test files), and the releases found
/// under `--exclude-releases-under`. Nothing is excluded unless asked: a
/// release written beside another one does not silently lose its puzzles.
/// Every release read is first checked against its manifest.
fn exclusion_files(args: &ReleaseArgs) -> Result<Vec<PathBuf>> {
    let mut exclude_files = Vec::new();
    let add_release = |dir: &Path, files: &mut Vec<PathBuf>| -> Result<()> {
        super::folder::ReleaseFolder::at(dir).check()?;
        files.extend(super::folder::ReleaseFolder::at(dir).split_files());
        Ok(())
    };
    for path in &args.exclude {
        if path.is_dir() {
            add_release(path, &mut exclude_files)?;
        } else {
            exclude_files.push(path.clone());
        }
    }
    if let Some(root) = args
        .exclude_releases_under
        .as_ref()
        .filter(|_| !args.no_release_exclusion)
    {
        for dir in super::folder::ReleaseFolder::find_under(root, &args.output)? {
            add_release(&dir, &mut exclude_files)?;
        }
    }
    Ok(exclude_files)
}

/// A release with fewer than `release.min_puzzles` puzzles is an error that
/// names what emptied it: the exclusions (each file and what it removed)
/// or the pool.
fn too_few_puzzles(
    drawn: &Draw,
    config: &ReleaseConfig,
    exclude_files: &[PathBuf],
    exclusions: &Exclusions,
    remedy: &str,
) -> Result<()> {
    let total = drawn.train.len() + drawn.test.len();
    if total >= config.min_puzzles {
        return Ok(());
    }
    let removed: usize = exclusions.removed.iter().sum();
    let cause = if removed > 0 {
        let files: Vec<String> = exclude_files
            .iter()
            .zip(&exclusions.removed)
            .filter(|(_, n)| **n > 0)
            .map(|(path, n)| format!("{} removed {n}", path.display()))
            .collect();
        format!(
            "the exclusions removed {removed} puzzle{} ({}); {remedy}",
            if removed == 1 { "" } else { "s" },
            files.join(", ")
        )
    } else {
        "the pool has too few puzzles in the configured cells".to_string()
    };
    Err(bad_input(format!(
        "release: the release would hold {total} puzzles, fewer than release.min_puzzles = {}: {cause}",
        config.min_puzzles
    )))
}

/// `release --strict`'s error: which cells cannot be filled (the first ten).
fn unfilled_cells_error(unfilled: &[&CellOutcome], cells: usize) -> anyhow::Error {
    let list: Vec<String> = unfilled
        .iter()
        .map(|c| {
            format!(
                "{} wanted {} found {}",
                c.cell.label(),
                c.wanted.train + c.wanted.test,
                c.train + c.test
            )
        })
        .collect();
    bad_input(format!(
        "release --strict: {} of {} cells cannot be filled: {}",
        unfilled.len(),
        cells,
        super::cells::first_of(&list, 10).join("; "),
    ))
}

/// The human summary: what was written, the unfilled cells, exclusions and
/// skipped rows with a few examples.
fn release_report(
    args: &ReleaseArgs,
    (train, test): (usize, usize),
    drawn: &Draw,
    unfilled: &[&CellOutcome],
    removed_total: usize,
    excluded_files: usize,
    pool: &PoolRead,
) -> String {
    let mut human = format!(
        "release: {train} train + {test} test puzzles in {} cells -> {}\n",
        drawn.cells.len(),
        args.output.display()
    );
    if !unfilled.is_empty() {
        human.push_str(&format!(
            "release: {} cells not filled (see manifest.json \"unfilled\"), e.g.\n",
            unfilled.len()
        ));
        let list: Vec<String> = unfilled
            .iter()
            .map(|c| {
                format!(
                    "{}: wanted {}, found {}",
                    c.cell.label(),
                    c.wanted.train + c.wanted.test,
                    c.available
                )
            })
            .collect();
        for named in super::cells::first_of(&list, 5) {
            human.push_str(&format!("  {named}\n"));
        }
    }
    if removed_total > 0 {
        human.push_str(&format!(
            "release: excluded {removed_total} puzzles found in {excluded_files} earlier files\n"
        ));
    }
    for (reason, count) in &pool.skipped {
        human.push_str(&format!("release: skipped {count} rows: {reason}\n"));
    }
    for example in &pool.examples {
        human.push_str(&format!("  {example}\n"));
    }
    human
}

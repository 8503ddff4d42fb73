//! What the release's manifest records: the files named relative to the
//! release folder, the engine, the draw method, the embedded verify report
//! and the cells. Apart from the run so one release written to two places
//! (a single run, a `merge` of shards) gets one manifest.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

use super::args::ReleaseArgs;
use super::cells::ReleaseConfig;
use super::draw::{CellOutcome, Draw};
use super::manifest::{Counts, DrawnCellRecord, Embedded, ReleaseManifest, Tool, UnfilledCell};
use super::pool::{Exclusions, PoolRead};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;

/// How the manifest names a file: relative to the release folder (e.g.
/// `../rate/games.puzzles.csv` in a `run`), so that one release written to
/// two places (a single run, a `merge` of shards) has one manifest. A file
/// sharing no folder with the release but the root keeps its absolute path.
fn manifest_path(path: &Path, release: &Path) -> String {
    fn absolute(p: &Path) -> Option<PathBuf> {
        if let Ok(found) = p.canonicalize() {
            return Some(found);
        }
        let parent = p
            .parent()
            .filter(|q| !q.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    }
    let (Some(file), Some(base)) = (absolute(path), absolute(release)) else {
        return path.display().to_string();
    };
    let common = file
        .components()
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    if common <= 1 {
        return file.display().to_string();
    }
    let mut relative = PathBuf::new();
    for _ in base.components().skip(common) {
        relative.push("..");
    }
    for part in file.components().skip(common) {
        relative.push(part);
    }
    relative.display().to_string()
}

/// A path as read (relative to where `release` runs) rewritten with
/// [`manifest_path`].
pub(super) fn relative_to(path: &str, release: &Path) -> String {
    manifest_path(Path::new(path), release)
}

/// The engine identity and options to record (`--engine-id`,
/// `--engine-option NAME=VALUE`), or null.
fn engine_json(args: &ReleaseArgs) -> Result<Value> {
    if args.engine_id.is_none() && args.engine_option.is_empty() {
        return Ok(Value::Null);
    }
    // In the order given; a name given again keeps its place, with the
    // later value.
    let mut options: Vec<(String, String)> = Vec::new();
    for option in &args.engine_option {
        let (name, value) = option
            .split_once('=')
            .ok_or_else(|| bad_input(format!("--engine-option {option:?} is not NAME=VALUE")))?;
        let (name, value) = (name.trim().to_string(), value.trim().to_string());
        match options.iter_mut().find(|(known, _)| *known == name) {
            Some(slot) => slot.1 = value,
            None => options.push((name, value)),
        }
    }
    Ok(serde_json::to_value(RecordedEngine {
        id: args.engine_id.as_deref(),
        options,
    })?)
}

/// The engine a `release` records (`--engine-id`, `--engine-option`).
#[derive(Serialize)]
struct RecordedEngine<'a> {
    id: Option<&'a str>,
    #[serde(serialize_with = "crate::core::summary::serialize_pairs")]
    options: Vec<(String, String)>,
}

/// How a release's cells, draw and grouping work, in words (the
/// manifest's `method`).
#[derive(Serialize)]
struct DrawMethod {
    cells: &'static str,
    draw: &'static str,
    grouping: &'static str,
}

impl DrawMethod {
    const DESCRIBED: DrawMethod = DrawMethod {
        cells: "rating bin (lo, hi] x solver moves x mate",
        draw: "per cell, ChaCha8Rng seeded from sha256(\"puzzleforge-split|<seed>|<cell key>\"), candidates sorted by PuzzleId then shuffled",
        grouping: "greedy over cells, scarcest first: a game's side is fixed by its first selected puzzle; later cells use fixed games only on their side and give free games to the side needing more",
    };
}

/// The verification figures to embed (`--verify FILE`), or null.
fn verify_json(args: &ReleaseArgs) -> Result<Option<Embedded>> {
    args.verify
        .as_deref()
        .map(|path| embedded(path, &args.output))
        .transpose()
}

/// A JSON file of figures as the manifest embeds it.
fn embedded(path: &Path, release: &Path) -> Result<Embedded> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let figures: Value = serde_json::from_str(&text)
        .map_err(|e| bad_input(format!("{}: not JSON: {e}", path.display())))?;
    Ok(Embedded {
        path: manifest_path(path, release),
        sha256: sha256_file(path)?,
        figures,
    })
}

/// The cells' quotas and outcomes, and the unfilled ones, for the manifest.
fn cells_json(
    drawn: &Draw,
    unfilled: &[&CellOutcome],
) -> (Vec<DrawnCellRecord>, Vec<UnfilledCell>) {
    let cells = drawn
        .cells
        .iter()
        .map(|c| DrawnCellRecord {
            rating_bin: c.cell.bin_label(),
            length: c.cell.length,
            mate: c.cell.mate,
            wanted_train: c.wanted.train,
            wanted_test: c.wanted.test,
            available: c.available,
            train: c.train,
            test: c.test,
        })
        .collect();
    let unfilled = unfilled
        .iter()
        .map(|c| UnfilledCell {
            rating_bin: c.cell.bin_label(),
            length: c.cell.length,
            mate: c.cell.mate,
            wanted: c.wanted.train + c.wanted.test,
            found: c.available,
            train: c.train,
            test: c.test,
        })
        .collect();
    (cells, unfilled)
}

/// The release's `manifest.json` (its `outputs` are added when the files
/// are written).
pub(super) fn release_manifest(
    args: &ReleaseArgs,
    config: &ReleaseConfig,
    pool: &PoolRead,
    exclusions: &Exclusions,
    admitted: u64,
    drawn: &Draw,
    unfilled: &[&CellOutcome],
) -> Result<ReleaseManifest> {
    let removed_total: usize = exclusions.removed.iter().sum();
    let mut exclusion_files = exclusions.files.clone();
    for (entry, removed) in exclusion_files.iter_mut().zip(&exclusions.removed) {
        entry.removed = *removed;
        entry.path = relative_to(&entry.path, &args.output);
    }
    let mut inputs = pool.inputs.clone();
    for input in &mut inputs {
        input.path = relative_to(&input.path, &args.output);
    }
    let (cells, unfilled_cells) = cells_json(drawn, unfilled);
    let mut manifest = ReleaseManifest {
        kind: super::manifest::MANIFEST_KIND.to_string(),
        tool: Tool::this(),
        tier: args.tier.clone(),
        aim: args
            .tier
            .as_ref()
            .and_then(|name| config.tiers.get(name))
            .and_then(|tier| tier.aim.clone()),
        seed: config.seed,
        config: serde_json::to_value(config)?,
        method: serde_json::to_value(DrawMethod::DESCRIBED)?,
        engine: engine_json(args)?,
        inputs,
        skipped: pool.skipped.clone(),
        exclusions: super::manifest::Exclusions {
            by: config.exclude_by,
            removed: removed_total,
            files: exclusion_files,
        },
        counts: Counts {
            admitted,
            outside_quota: pool.outside_quota,
            cells: drawn.cells.len(),
            unfilled_cells: unfilled.len(),
            train: drawn.train.len(),
            test: drawn.test.len(),
        },
        cells,
        unfilled: unfilled_cells,
        verify: verify_json(args)?,
        // Only a generated release has the key, so that every other
        // manifest reads as before.
        generate: args
            .generate
            .as_deref()
            .map(|path| embedded(path, &args.output))
            .transpose()?,
        sources: None,
        second_engine: None,
        settings: None,
        run: None,
        outputs: None,
    };
    // A release `run` writes names what made it (a `release` release keeps
    // its `--engine-id`).
    if let Some(provenance) = &args.provenance {
        manifest.set_provenance(provenance);
    }
    Ok(manifest)
}

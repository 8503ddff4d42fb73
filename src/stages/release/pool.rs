//! The pool's reading, and the contamination keys of the excluded files,
//! apart from the draw that chooses among what it admits.
//!
//! The pool is read twice: the first pass keeps only a small [`Candidate`]
//! per admissible row (id, cell, game, file and row number), so the whole
//! Lichess dump fits in memory; the second pass reads the chosen rows in
//! full. Rows that cannot be read, lack a rating, or whose moves are not
//! legal are skipped and counted by reason.

use anyhow::{Context, Result};
use sha2::Digest;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use super::cells::{Cell, ExcludeBy, Quota, ReleaseConfig, Tier, position_key};
use super::draw::{Candidate, Draw};
use super::manifest::{ExcludedFile, PoolFile};
use crate::chess::columns::Column;
use crate::chess::record::{Puzzle, for_each_row};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;

/// Contamination keys from excluded files.
pub(super) struct Exclusions {
    pub(super) ids: HashMap<String, usize>,
    pub(super) positions: HashMap<String, usize>,
    pub(super) files: Vec<ExcludedFile>,
    pub(super) removed: Vec<usize>,
}

pub(super) fn load_exclusions(files: &[PathBuf], by: ExcludeBy) -> Result<Exclusions> {
    let mut exclusions = Exclusions {
        ids: HashMap::new(),
        positions: HashMap::new(),
        files: Vec::new(),
        removed: vec![0; files.len()],
    };
    for (index, path) in files.iter().enumerate() {
        let mut rows = 0u64;
        let mut unreadable = 0u64;
        for_each_row(path, |(_, row)| {
            rows += 1;
            match row {
                Ok(puzzle) => {
                    if !puzzle.id.is_empty() {
                        exclusions.ids.entry(puzzle.id.clone()).or_insert(index);
                    }
                    match position_key(&puzzle, by) {
                        Ok(key) => {
                            exclusions.positions.entry(key).or_insert(index);
                        }
                        Err(_) => unreadable += 1,
                    }
                }
                Err(_) => unreadable += 1,
            }
            Ok(())
        })
        .with_context(|| format!("reading excluded file {}", path.display()))?;
        exclusions.files.push(ExcludedFile {
            path: path.display().to_string(),
            sha256: sha256_file(path)?,
            rows,
            unreadable_rows: unreadable,
            removed: 0,
        });
    }
    Ok(exclusions)
}

/// Reads a pool and keeps the puzzles that can enter the draw, counting the
/// rest by reason.
pub(super) struct PoolRead {
    pub(super) candidates: Vec<Candidate>,
    pub(super) outside_quota: u64,
    pub(super) skipped: BTreeMap<String, u64>,
    pub(super) examples: Vec<String>,
    pub(super) inputs: Vec<PoolFile>,
}

pub(super) fn read_pool(
    paths: &[PathBuf],
    config: &ReleaseConfig,
    tier: Option<&Tier>,
    quotas: &BTreeMap<Cell, Quota>,
    exclusions: &mut Exclusions,
    drop_unverified: bool,
) -> Result<PoolRead> {
    let mut read = PoolRead {
        candidates: Vec::new(),
        outside_quota: 0,
        skipped: BTreeMap::new(),
        examples: Vec::new(),
        inputs: Vec::new(),
    };
    let mut filter = PoolFilter {
        config,
        tier,
        quotas,
        exclusions,
        drop_unverified,
        seen_ids: HashSet::new(),
        seen_positions: HashSet::new(),
    };
    for (file, path) in paths.iter().enumerate() {
        let mut rows = 0u64;
        let mut kept = 0u64;
        let bar = crate::core::progress::counter("release");
        for_each_row(path, |(line, row)| {
            let ordinal = rows;
            rows += 1;
            bar.inc(1);
            let admission = match row {
                Ok(puzzle) => filter.admit(puzzle, file, ordinal),
                Err(e) => Admission::Skipped(e.reason, e.detail),
            };
            match admission {
                Admission::Candidate(candidate) => {
                    kept += 1;
                    read.candidates.push(candidate);
                }
                Admission::OutsideQuota => {
                    kept += 1;
                    read.outside_quota += 1;
                }
                Admission::OutsideTier => {
                    *read.skipped.entry("outside_tier".into()).or_default() += 1;
                }
                Admission::Excluded => {}
                Admission::Skipped(reason, detail) => {
                    *read.skipped.entry(reason.to_string()).or_default() += 1;
                    if read.examples.len() < 5 {
                        read.examples.push(format!(
                            "{} line {line}: {reason}: {detail}",
                            path.display()
                        ));
                    }
                }
            }
            Ok(())
        })
        .with_context(|| format!("reading pool {}", path.display()))?;
        crate::core::progress::finish(&bar);
        read.inputs.push(PoolFile {
            path: path.display().to_string(),
            sha256: sha256_file(path)?,
            rows,
            admitted: kept,
        });
    }
    Ok(read)
}

/// What became of one pool row.
enum Admission {
    /// Drawn from: its cell has a quota.
    Candidate(Candidate),
    /// Admitted, but its cell has no quota.
    OutsideQuota,
    /// Not in the requested tier.
    OutsideTier,
    /// An earlier release has it (counted in [`Exclusions::removed`]).
    Excluded,
    /// Unusable, with the reason counted and an example kept.
    Skipped(&'static str, String),
}

/// The checks a pool row passes to be drawn from, in order, with what they
/// remember across rows (ids and positions seen, exclusions hit).
struct PoolFilter<'a> {
    config: &'a ReleaseConfig,
    tier: Option<&'a Tier>,
    quotas: &'a BTreeMap<Cell, Quota>,
    exclusions: &'a mut Exclusions,
    /// Puzzles whose `Verified` column says `False` (`fail`) are skipped.
    drop_unverified: bool,
    seen_ids: HashSet<String>,
    /// Truncated sha256 of each position key: 16 bytes a puzzle.
    seen_positions: HashSet<[u8; 16]>,
}

impl PoolFilter<'_> {
    fn admit(&mut self, puzzle: Puzzle, file: usize, ordinal: u64) -> Admission {
        let Some(cell) = Cell::of(&puzzle, self.config.bin_width) else {
            return Admission::Skipped("no_rating", format!("puzzle {} has no rating", puzzle.id));
        };
        if puzzle.solver_moves() == 0 {
            return Admission::Skipped(
                "no_solution",
                format!("puzzle {} has no solver move", puzzle.id),
            );
        }
        let key = match position_key(&puzzle, self.config.exclude_by) {
            Ok(k) => k,
            Err(e) => {
                return Admission::Skipped(
                    "bad_position",
                    e.at(format_args!("puzzle {}", puzzle.id)).to_string(),
                );
            }
        };
        if self.tier.is_some_and(|tier| !tier.admits(&puzzle)) {
            return Admission::OutsideTier;
        }
        let excluded_by = self
            .exclusions
            .ids
            .get(&puzzle.id)
            .or_else(|| self.exclusions.positions.get(&key));
        if let Some(&excluding_file) = excluded_by {
            self.exclusions.removed[excluding_file] += 1;
            return Admission::Excluded;
        }
        if self.drop_unverified && puzzle.check(Column::Verified) == Some(false) {
            return Admission::Skipped(
                "failed_verification",
                format!("puzzle {} failed a verify check", puzzle.id),
            );
        }
        if !self.seen_ids.insert(puzzle.id.clone()) {
            return Admission::Skipped("duplicate_id", format!("puzzle {} seen before", puzzle.id));
        }
        if !self.seen_positions.insert(short_digest(&key)) {
            return Admission::Skipped(
                "duplicate_position",
                format!("puzzle {} repeats an earlier position", puzzle.id),
            );
        }
        if !self.quotas.contains_key(&cell) {
            return Admission::OutsideQuota;
        }
        let group = puzzle
            .game_id()
            .unwrap_or_else(|| format!("puzzle:{}", puzzle.id));
        Admission::Candidate(Candidate {
            id: puzzle.id,
            cell,
            group,
            file,
            row: ordinal,
        })
    }
}

fn short_digest(key: &str) -> [u8; 16] {
    let digest = sha2::Sha256::digest(key.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// Reads the chosen rows again in full and adds the derived columns,
/// returning train and test in the draw's order.
pub(super) fn fetch_chosen(paths: &[PathBuf], drawn: &Draw) -> Result<(Vec<Puzzle>, Vec<Puzzle>)> {
    let mut wanted: HashMap<(usize, u64), &Candidate> = HashMap::new();
    for c in drawn.train.iter().chain(&drawn.test) {
        wanted.insert((c.file, c.row), c);
    }
    let mut found: HashMap<(usize, u64), Puzzle> = HashMap::new();
    for (file, path) in paths.iter().enumerate() {
        let mut ordinal = 0u64;
        for_each_row(path, |(_, row)| {
            let here = (file, ordinal);
            ordinal += 1;
            if let Some(candidate) = wanted.get(&here)
                && let Ok(mut puzzle) = row
                && puzzle.id == candidate.id
            {
                super::card::add_derived_columns(&mut puzzle, &candidate.cell);
                found.insert(here, puzzle);
            }
            Ok(())
        })
        .with_context(|| format!("reading pool {} again", path.display()))?;
    }
    let mut take = |list: &[Candidate]| -> Result<Vec<Puzzle>> {
        list.iter()
            .map(|c| {
                found.remove(&(c.file, c.row)).ok_or_else(|| {
                    bad_input(format!(
                        "{}: puzzle {} changed while split was reading it",
                        paths[c.file].display(),
                        c.id
                    ))
                })
            })
            .collect()
    };
    let train = take(&drawn.train)?;
    let test = take(&drawn.test)?;
    Ok((train, test))
}

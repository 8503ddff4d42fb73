//! The target and its count: which cells to fill and which puzzles may
//! count (`Target`), and the count of the puzzles in game order that finds
//! the stopping game (`Counter`). Apart because it is the stopping rule
//! itself, the same for a run, a shard and a merge.

use anyhow::{Context, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chess::novelty::Idea;
use crate::chess::novelty::index::{IndexFile, Lookup, NoveltyIndex};
use crate::chess::record::{Puzzle, for_each_row, read_puzzles};
use crate::core::error::bad_input;
use crate::generate::cost::CellSample;
use crate::stages::rate::{ModelReach, RatingModel};
use crate::stages::release::cells::{Cell, ExcludeBy, Quota, Tier, position_key};
use crate::stages::release::funnel::GenerationFunnel;

use super::config::Sections;
use super::report::{CellReport, Stop, TargetReport};
use super::store::{Segment, read_batch_record};

pub(super) type RowKey = (String, String, String);

pub(super) fn row_key(puzzle: &Puzzle) -> RowKey {
    (
        puzzle.id.clone(),
        puzzle.fen.to_string(),
        puzzle.moves_text(),
    )
}

/// What to fill: the quota table and which puzzles may count.
pub(super) struct Target {
    pub(super) quotas: BTreeMap<Cell, Quota>,
    tier: Option<Tier>,
    bin_width: i32,
    /// Verified puzzles only (`[verify] policy = "drop"`).
    verified_only: bool,
    /// Position keys no generated puzzle may have.
    excluded: HashSet<String>,
    /// Ideas no generated puzzle may be a near copy of: the excluded
    /// files' puzzles and the earlier releases' (one index), and each
    /// public index file named in `generate.exclude`.
    excluded_ideas: Vec<Arc<NoveltyIndex>>,
    /// The index files among them, as the report names them.
    index_files: Vec<IndexFile>,
    /// `generate.dedup_positions`.
    dedup: bool,
    /// The ratings the rating model gives without extrapolating; `None`
    /// without a model file (the rate stage then says why).
    reach: Option<ModelReach>,
}

/// The target's tier (`generate.tier` first) and its cells' quotas: what
/// decides which profiles play, read without the exclude files.
pub(super) fn target_quotas(
    config: &Sections<'_>,
    tier: Option<&str>,
) -> Result<(Option<Tier>, BTreeMap<Cell, Quota>)> {
    let name = config.generate.tier.as_deref().or(tier);
    let tier = match name {
        Some(name) => Some(config.release.tiers.get(name).cloned().ok_or_else(|| {
            bad_input(format!(
                "generate.tier {name:?} is not a tier of [release.tiers]"
            ))
        })?),
        None => None,
    };
    let quotas = config.release.quota_table(tier.as_ref())?;
    if quotas.is_empty() {
        return Err(bad_input("[generate]: the target has no cell with a quota"));
    }
    Ok((tier, quotas))
}

impl Target {
    pub(super) fn of(
        config: &Sections<'_>,
        tier: Option<&str>,
        releases: &[PathBuf],
    ) -> Result<Target> {
        let (tier, quotas) = target_quotas(config, tier)?;
        let mut excluded = HashSet::new();
        let mut ideas = NoveltyIndex::new();
        let mut excluded_ideas = Vec::new();
        let mut index_files = Vec::new();
        let mut files = Vec::new();
        for file in &config.generate.exclude {
            if NoveltyIndex::is_index_file(file) {
                let index = NoveltyIndex::read(file, Lookup::SameMove)
                    .with_context(|| format!("reading the exclusions {}", file.display()))?;
                index_files.push(IndexFile {
                    file: file.display().to_string(),
                    sha256: crate::core::fileio::sha256_file(file)?,
                    ideas: index.len(),
                });
                excluded_ideas.push(Arc::new(index));
            } else {
                files.push(file.clone());
            }
        }
        if config.generate.exclude_earlier_releases {
            for release in releases {
                files.extend(
                    crate::stages::release::folder::ReleaseFolder::at(release).split_files(),
                );
            }
        }
        for file in &files {
            // Strict: a row whose position cannot be read would exclude
            // nothing, silently; the file is refused instead.
            let mut unreadable = Vec::new();
            for_each_row(file, |(line, row)| {
                let key = row.and_then(|p| {
                    let key = position_key(&p, ExcludeBy::Position)
                        .map_err(crate::chess::record::RowError::from)?;
                    let idea = Idea::of_puzzle(&p).map_err(crate::chess::record::RowError::from)?;
                    Ok((key, p.id, idea))
                });
                match key {
                    Ok((key, id, idea)) => {
                        excluded.insert(key);
                        ideas.add(&id, &idea);
                    }
                    Err(e) => unreadable.push(format!("line {line} ({e})")),
                }
                Ok(())
            })
            .with_context(|| format!("reading the exclusions {}", file.display()))?;
            if !unreadable.is_empty() {
                return Err(bad_input(format!(
                    "{}: {} row(s) of this [generate] exclude file cannot be read, so their positions would not be excluded: {}{}; fix or remove them",
                    file.display(),
                    unreadable.len(),
                    unreadable[..unreadable.len().min(5)].join(", "),
                    if unreadable.len() > 5 { ", ..." } else { "" }
                )));
            }
        }
        if !ideas.is_empty() {
            ideas.seal();
            excluded_ideas.insert(0, Arc::new(ideas));
        }
        Ok(Target {
            quotas,
            tier,
            bin_width: config.release.bin_width,
            verified_only: config.verify.policy == crate::stages::verify::Policy::Drop,
            excluded,
            excluded_ideas,
            index_files,
            dedup: config.generate.dedup_positions,
            // A model that does not load is the rate stage's error to
            // report, with its reason; here it only leaves the reach unknown.
            reach: config
                .rate
                .model
                .as_deref()
                .and_then(|path| RatingModel::load(path).ok())
                .and_then(|model| ModelReach::of(&model)),
        })
    }
}

impl Target {
    /// The same target with only `quotas`' cells (one stream's share).
    pub(super) fn restricted_to(&self, quotas: BTreeMap<Cell, Quota>) -> Target {
        Target {
            quotas,
            tier: self.tier.clone(),
            bin_width: self.bin_width,
            verified_only: self.verified_only,
            excluded: self.excluded.clone(),
            excluded_ideas: self.excluded_ideas.clone(),
            index_files: self.index_files.clone(),
            dedup: self.dedup,
            reach: self.reach.clone(),
        }
    }
}

/// Counts the generated puzzles in game order and finds the stopping game.
pub(super) struct Counter<'a> {
    target: &'a Target,
    seed: u64,
    /// The stream whose games are being added (part of the kept keys and
    /// of the draw's game groups).
    pub(super) stream: usize,
    seen: HashSet<String>,
    /// The ideas of the puzzles kept so far: one idea once.
    kept_ideas: NoveltyIndex,
    pub(super) kept: HashSet<(usize, RowKey)>,
    candidates: Vec<crate::stages::release::draw::Candidate>,
    pub(super) funnel: GenerationFunnel,
}

impl<'a> Counter<'a> {
    pub(super) fn new(target: &'a Target, seed: u64, stream: usize) -> Counter<'a> {
        Counter {
            target,
            seed,
            stream,
            seen: HashSet::new(),
            kept_ideas: NoveltyIndex::new(),
            kept: HashSet::new(),
            candidates: Vec::new(),
            funnel: GenerationFunnel::default(),
        }
    }

    /// Adds a segment's games and their puzzles, game by game; with `stop`,
    /// returns the first game at which every quota is met (the games after
    /// it are not counted).
    pub(super) fn add_segment(&mut self, segment: &Segment, stop: bool) -> Result<Option<u64>> {
        let dir = &segment.batch.dir;
        let record = read_batch_record(dir)?;
        let per_game: BTreeMap<u64, crate::stages::mine::UnitFunnel> =
            record.per_game.iter().map(|g| (g.game, g.funnel)).collect();
        let mut by_game: BTreeMap<u64, Vec<Puzzle>> = BTreeMap::new();
        for puzzle in read_puzzles(&dir.join("verified.csv"))? {
            by_game
                .entry(game_number(&puzzle, dir)?)
                .or_default()
                .push(puzzle);
        }
        for game in segment.first..=segment.last {
            self.funnel
                .add_game(per_game.get(&game).copied().unwrap_or_default());
            let puzzles = by_game.remove(&game).unwrap_or_default();
            let added = puzzles.iter().filter(|p| self.add(p, game)).count();
            if stop && added > 0 && self.all_filled() {
                return Ok(Some(game));
            }
        }
        Ok(None)
    }

    /// Counts one puzzle; true when it is a candidate of a cell.
    fn add(&mut self, puzzle: &Puzzle, game: u64) -> bool {
        let funnel = &mut self.funnel;
        funnel.mined += 1;
        let Ok(position) = position_key(puzzle, ExcludeBy::Position) else {
            funnel.unreadable += 1;
            return false;
        };
        if self.target.excluded.contains(&position) {
            funnel.excluded += 1;
            return false;
        }
        // A verified puzzle's line replays (mining wrote it); one that
        // does not is counted unreadable, as its position would be.
        let Ok(idea) = Idea::of_puzzle(puzzle) else {
            funnel.unreadable += 1;
            return false;
        };
        if self
            .target
            .excluded_ideas
            .iter()
            .any(|index| index.nearest(&idea).is_some())
        {
            funnel.near_excluded += 1;
            return false;
        }
        if !self.seen.insert(position) && self.target.dedup {
            funnel.repeated_position += 1;
            return false;
        }
        if self.target.dedup && self.kept_ideas.nearest(&idea).is_some() {
            funnel.near_kept += 1;
            return false;
        }
        self.kept_ideas.add(&puzzle.id, &idea);
        self.kept.insert((self.stream, row_key(puzzle)));
        funnel.kept += 1;
        let verified = puzzle.check(crate::chess::columns::Column::Verified) == Some(true);
        if verified {
            funnel.verified += 1;
        }
        if self.target.verified_only && !verified {
            return false;
        }
        let Some(cell) = Cell::of(puzzle, self.target.bin_width)
            .filter(|cell| self.target.quotas.contains_key(cell))
            .filter(|_| self.target.tier.as_ref().is_none_or(|t| t.admits(puzzle)))
        else {
            return false;
        };
        self.funnel.in_target_cells += 1;
        self.candidates
            .push(crate::stages::release::draw::Candidate {
                id: puzzle.id.clone(),
                cell,
                // Generation's own games keep the group names they always
                // had; a named profile's games are told apart by stream.
                group: match self.stream {
                    0 => format!("game:{game}"),
                    stream => format!("game:{stream}:{game}"),
                },
                file: 0,
                row: self.candidates.len() as u64,
            });
        true
    }

    /// Cells filled and cells, puzzles drawn and wanted, as the release
    /// would draw them now (for the progress lines).
    pub(super) fn fill(&self) -> [u64; 4] {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        let count = |f: &dyn Fn(&crate::stages::release::draw::CellOutcome) -> usize| {
            draw.cells.iter().map(|c| f(c) as u64).sum::<u64>()
        };
        [
            count(&|c| usize::from(c.filled())),
            draw.cells.len() as u64,
            count(&|c| c.train + c.test),
            count(&|c| c.wanted.train + c.wanted.test),
        ]
    }

    fn all_filled(&self) -> bool {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        draw.cells.iter().all(|c| c.filled())
    }

    /// The funnel and per-cell counts, with the unfilled cells.
    pub(super) fn report(&self, stop: Stop, first: u64, last: u64) -> TargetReport {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        TargetReport {
            stop,
            first_game: first,
            last_game: last,
            funnel: self.funnel,
            cells: draw.cells.len(),
            cells_filled: draw.cells.iter().filter(|c| c.filled()).count(),
            per_cell: draw
                .cells
                .iter()
                .filter(|c| c.available > 0)
                .map(CellReport::of)
                .collect(),
            unfilled: draw
                .cells
                .iter()
                .filter(|c| !c.filled())
                .map(CellReport::of)
                .collect(),
            novelty_against: self.target.index_files.clone(),
        }
    }
}

/// The game number of a generated puzzle (its `GameId` is
/// `selfplay-SEED-N`).
pub(super) fn game_number(puzzle: &Puzzle, dir: &Path) -> Result<u64> {
    puzzle
        .get(crate::chess::columns::Column::GameId)
        .and_then(|id| id.rsplit('-').next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            bad_input(format!(
                "{}: puzzle {} has no self-play game number in its GameId",
                dir.display(),
                puzzle.id
            ))
        })
}

impl Counter<'_> {
    /// The target's cells as the counted puzzles fill them.
    pub(super) fn cell_samples(&self) -> Vec<CellSample> {
        let draw = crate::stages::release::draw::draw(
            self.candidates.clone(),
            &self.target.quotas,
            self.seed,
        );
        draw.cells
            .iter()
            .map(|c| CellSample {
                cell: c.cell,
                quota: c.wanted,
                found: c.available,
                filled: c.filled(),
                beyond_model: self.target.reach.as_ref().is_some_and(|reach| {
                    !reach.reaches(c.cell.length, c.cell.mate, c.cell.bin_lo, c.cell.bin_hi)
                }),
            })
            .collect()
    }
}

//! `puzzleforge index` and `puzzleforge audit`: the novelty rule
//! ([`crate::chess::novelty`]) over whole files. `index` turns puzzle files
//! (the Lichess dump) or game files into an index file that generation
//! excludes and `audit` checks against; `audit` counts, for a release (or
//! any puzzle file), its exact and near copies of the indexed puzzles and
//! the near pairs inside it and across its split.

use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::human_games::is_puzzle_file;
use crate::chess::novelty::index::{IndexFile, Lookup, NoveltyIndex};
use crate::chess::novelty::{Idea, RULE};
use crate::chess::pgn::{GameItem, PgnGames};
use crate::chess::record::{Puzzle, for_each_row, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::{open_input, sha256_file};
use crate::core::summary::{Report, Summary};

/// `puzzleforge index`'s arguments.
#[derive(Clone, Debug)]
pub struct IndexArgs {
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
}

/// What an index read from its inputs.
#[derive(Serialize, Debug, Default, Clone)]
pub struct IndexedFile {
    pub file: String,
    /// Puzzles or games indexed.
    pub ideas: u64,
    /// Rows or games that could not be read (skipped, counted).
    pub skipped: u64,
}

#[derive(Serialize)]
struct IndexSummary {
    command: &'static str,
    output: String,
    sha256: String,
    rule: &'static str,
    inputs: Vec<IndexedFile>,
    ideas: usize,
    solver_positions: usize,
    bytes: u64,
    cpu_seconds: f64,
    max_resident_mib: Option<f64>,
}

/// True for a puzzle file or a PGN (`.pgn`, optionally `.zst`), by name.
fn is_puzzle_or_games_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    is_puzzle_file(path) || name.ends_with(".pgn") || name.ends_with(".pgn.zst")
}

/// Adds the puzzles of a puzzle file, or the games of a PGN, to `index`.
/// A row or game that cannot be read is counted and skipped: an index is
/// an exclusion, and the rest of the file still excludes what it holds.
pub fn index_file(index: &mut NoveltyIndex, path: &Path) -> Result<IndexedFile> {
    let mut counts = IndexedFile {
        file: path.display().to_string(),
        ..IndexedFile::default()
    };
    if is_puzzle_file(path) {
        for_each_row(path, |(_, row)| {
            match row.and_then(|p| Ok((Idea::of_puzzle(&p)?, p.id))) {
                Ok((idea, id)) => {
                    index.add(&id, &idea);
                    counts.ideas += 1;
                }
                Err(_) => counts.skipped += 1,
            }
            Ok(())
        })
        .with_context(|| format!("indexing {}", path.display()))?;
        return Ok(counts);
    }
    if !is_puzzle_or_games_file(path) {
        return Err(bad_input(format!(
            "{}: neither a puzzle file (.csv, .jsonl, .json) nor a PGN (.pgn), plain or .zst",
            path.display()
        )));
    }
    let input = open_input(path)?;
    for item in PgnGames::new(input) {
        let item = item.map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
        match item {
            GameItem::Game(game) => {
                let moves: Vec<_> = game
                    .moves
                    .iter()
                    .map(|m| crate::chess::line::uci_of(m.mv))
                    .collect();
                let idea = Idea::of_game(&game.initial, &moves);
                let name = game
                    .tags
                    .get("Site")
                    .filter(|site| !site.is_empty() && *site != "?")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("game {}", game.number));
                index.add(&name, &idea);
                counts.ideas += 1;
            }
            GameItem::Filtered { .. } | GameItem::Invalid(_) => counts.skipped += 1,
        }
    }
    Ok(counts)
}

/// `puzzleforge index INPUT... -o FILE`.
pub fn run_index(args: &IndexArgs) -> Result<Summary> {
    let cpu_before = crate::engine::process::own_cpu_seconds();
    // The file holds each step once whatever the lookup: the cheaper
    // buckets while building.
    let mut index = NoveltyIndex::with_lookup(Lookup::SameMove);
    let mut inputs = Vec::new();
    for input in &args.inputs {
        inputs.push(index_file(&mut index, input)?);
    }
    index.write(&args.output)?;
    let sha256 = sha256_file(&args.output)?;
    let bytes = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or_default();
    let cpu_seconds = crate::engine::process::own_cpu_seconds() - cpu_before;
    let human = format!(
        "index: {} ideas ({} solver positions) from {} file(s) into {} ({:.1} MiB), sha256 {sha256}; {:.1} CPU-s",
        index.len(),
        index.steps(),
        inputs.len(),
        args.output.display(),
        bytes as f64 / (1 << 20) as f64,
        cpu_seconds,
    );
    Report::new(
        human,
        IndexSummary {
            command: "index",
            output: args.output.display().to_string(),
            sha256,
            rule: RULE,
            ideas: index.len(),
            solver_positions: index.steps(),
            inputs,
            bytes,
            cpu_seconds,
            max_resident_mib: crate::engine::process::own_max_resident_mib(),
        },
    )
    .into_summary()
}

/// `puzzleforge audit`'s arguments.
#[derive(Clone, Debug)]
pub struct AuditArgs {
    /// A release folder (its `train.csv` and `test.csv`) or puzzle files.
    pub release: Vec<PathBuf>,
    /// Index files, or puzzle or game files indexed on the fly.
    pub against: Vec<PathBuf>,
    /// Where the JSON report goes (also printed with `--json`).
    pub output: Option<PathBuf>,
    /// Look up the rule exactly in the `against` indexes (every near copy;
    /// about a quarter of the speed) instead of the same-move lookup.
    pub exact: bool,
}

/// One puzzle of the audited set.
struct Audited<'a> {
    puzzle: &'a Puzzle,
    split: &'a str,
    idea: Idea,
}

/// Counts for one group of the audited puzzles.
#[derive(Serialize, Default, Debug, Clone, Copy)]
pub struct GroupCounts {
    pub puzzles: u64,
    pub exact: u64,
    pub near: u64,
}

/// One near copy found, for a person to look at.
#[derive(Serialize, Debug, Clone)]
pub struct NearCopy {
    pub id: String,
    pub split: String,
    pub of: String,
    pub file: String,
    pub squares: u32,
    pub shared_moves: u32,
}

/// The audit's report (`--json`, `-o`).
#[derive(Serialize, Debug, Clone)]
pub struct AuditReport {
    pub command: &'static str,
    pub rule: &'static str,
    /// How the `against` indexes were looked up (`exact`: every near copy
    /// of the rule; `same-move`: those whose near positions play the same
    /// move). Near pairs inside the audited set are always exact.
    pub lookup: Lookup,
    pub puzzles: u64,
    pub unreadable: u64,
    pub against: Vec<IndexFile>,
    /// Exact copies (the same solver position) and near copies (the rule,
    /// exact ones included) of the indexed puzzles.
    pub public: GroupCounts,
    /// The same, by `Source` and where a generated puzzle's game started.
    pub by_group: BTreeMap<String, GroupCounts>,
    /// Pairs of the audited puzzles that are near copies of each other.
    pub near_pairs: u64,
    /// Of them, pairs with one puzzle in `train` and one in `test`.
    pub near_pairs_across_split: u64,
    /// The first near copies of indexed puzzles and near pairs found.
    pub examples: Vec<NearCopy>,
    pub cpu_seconds: f64,
    /// CPU spent on lookups alone (the index loaded), and the rate.
    pub lookup_cpu_seconds: f64,
    pub puzzles_per_lookup_cpu_second: Option<f64>,
    pub max_resident_mib: Option<f64>,
}

impl AuditReport {
    /// The card's line.
    pub fn card_line(&self) -> String {
        let against = self
            .against
            .iter()
            .map(|a| format!("{} (sha256 {})", a.file_name(), a.sha256))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "near copies of public puzzles: {} of {} (exact: {}), against {}; near pairs inside the release: {} ({} across train and test)",
            self.public.near,
            self.puzzles,
            self.public.exact,
            if against.is_empty() {
                "no index".to_string()
            } else {
                against
            },
            self.near_pairs,
            self.near_pairs_across_split,
        )
    }
}

fn group_of(puzzle: &Puzzle) -> String {
    let source = puzzle.get(Column::Source).unwrap_or("").to_string();
    if source == "selfplay" {
        format!(
            "selfplay/{}",
            crate::chess::novelty::start_kind(&puzzle.game_url)
        )
    } else if source.is_empty() {
        "no-source".to_string()
    } else {
        source
    }
}

/// The files an audited path stands for: a release folder's splits, or
/// the file itself (its split named after it).
fn audited_files(path: &Path) -> Vec<(String, PathBuf)> {
    if path.is_dir() {
        ["train", "test"]
            .iter()
            .map(|split| (split.to_string(), path.join(format!("{split}.csv"))))
            .filter(|(_, file)| file.is_file())
            .collect()
    } else {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        vec![(name, path.to_path_buf())]
    }
}

/// Audits `puzzles` (with their split names) against `indexes`.
pub fn audit(puzzles: &[(String, Puzzle)], indexes: &[(IndexFile, NoveltyIndex)]) -> AuditReport {
    let mut unreadable = 0u64;
    let mut audited = Vec::new();
    for (split, puzzle) in puzzles {
        match Idea::of_puzzle(puzzle) {
            Ok(idea) => audited.push(Audited {
                puzzle,
                split,
                idea,
            }),
            Err(_) => unreadable += 1,
        }
    }
    let cpu_before = crate::engine::process::own_cpu_seconds();
    let mut examples = Vec::new();
    let (public, by_group) = near_public(&audited, indexes, &mut examples);
    let lookup_cpu_seconds = crate::engine::process::own_cpu_seconds() - cpu_before;
    let (near_pairs, across) = near_pairs_inside(&audited, &mut examples);
    let puzzles = audited.len() as u64 + unreadable;
    AuditReport {
        command: "audit",
        rule: RULE,
        lookup: indexes
            .first()
            .map_or(Lookup::Exact, |(_, index)| index.lookup()),
        puzzles,
        unreadable,
        against: indexes.iter().map(|(file, _)| file.clone()).collect(),
        public,
        by_group,
        near_pairs,
        near_pairs_across_split: across,
        examples,
        cpu_seconds: 0.0,
        lookup_cpu_seconds,
        puzzles_per_lookup_cpu_second: (lookup_cpu_seconds > 0.0)
            .then(|| audited.len() as f64 / lookup_cpu_seconds),
        max_resident_mib: None,
    }
}

/// Each puzzle against the public `indexes`: the counts of near and exact
/// copies, in all and per group, with the first 40 as examples.
fn near_public(
    audited: &[Audited],
    indexes: &[(IndexFile, NoveltyIndex)],
    examples: &mut Vec<NearCopy>,
) -> (GroupCounts, BTreeMap<String, GroupCounts>) {
    let mut public = GroupCounts::default();
    let mut by_group: BTreeMap<String, GroupCounts> = BTreeMap::new();
    for a in audited {
        let group = by_group.entry(group_of(a.puzzle)).or_default();
        group.puzzles += 1;
        public.puzzles += 1;
        let nearest = indexes
            .iter()
            .filter_map(|(file, index)| {
                index
                    .nearest_where(&a.idea, |i| index.name(i) != a.puzzle.id)
                    .map(|m| (file, index, m))
            })
            .min_by_key(|(_, _, m)| m.nearness.squares);
        if let Some((file, index, m)) = nearest {
            group.near += 1;
            public.near += 1;
            if m.nearness.squares == 0 {
                group.exact += 1;
                public.exact += 1;
            }
            if examples.len() < 40 {
                examples.push(NearCopy {
                    id: a.puzzle.id.clone(),
                    split: a.split.to_string(),
                    of: index.name(m.idea).to_string(),
                    file: file.file.clone(),
                    squares: m.nearness.squares,
                    shared_moves: m.nearness.shared_moves,
                });
            }
        }
    }
    (public, by_group)
}

/// Near pairs inside the set, each puzzle against those before it: all of
/// them and those across splits, the first of each puzzle's as an example
/// while there are fewer than 80.
fn near_pairs_inside(audited: &[Audited], examples: &mut Vec<NearCopy>) -> (u64, u64) {
    let mut inside = NoveltyIndex::new();
    let (mut near_pairs, mut across) = (0u64, 0u64);
    for (k, a) in audited.iter().enumerate() {
        let mut found_any = false;
        // Every earlier puzzle it is near: scan until none is left.
        let mut excluded: Vec<u32> = Vec::new();
        while let Some(m) = inside.nearest_where(&a.idea, |i| !excluded.contains(&i)) {
            excluded.push(m.idea);
            near_pairs += 1;
            let other = &audited[m.idea as usize];
            if other.split != a.split {
                across += 1;
            }
            if !found_any && examples.len() < 80 {
                examples.push(NearCopy {
                    id: a.puzzle.id.clone(),
                    split: a.split.to_string(),
                    of: other.puzzle.id.clone(),
                    file: format!("this set ({})", other.split),
                    squares: m.nearness.squares,
                    shared_moves: m.nearness.shared_moves,
                });
            }
            found_any = true;
        }
        let number = inside.add(&a.puzzle.id, &a.idea);
        debug_assert_eq!(number as usize, k);
    }
    (near_pairs, across)
}

/// Loads an `--against` file: an index file as it is, a puzzle or game
/// file indexed on the fly.
pub fn load_against(path: &Path, lookup: Lookup) -> Result<(IndexFile, NoveltyIndex)> {
    let sha256 = sha256_file(path)?;
    let index = if NoveltyIndex::is_index_file(path) || !is_puzzle_or_games_file(path) {
        // Anything but a puzzle or game file must be an index: its reader
        // names the file and why it is not one.
        NoveltyIndex::read(path, lookup)?
    } else {
        let mut index = NoveltyIndex::with_lookup(lookup);
        index_file(&mut index, path)?;
        index.seal();
        index
    };
    Ok((
        IndexFile {
            file: path.display().to_string(),
            sha256,
            ideas: index.len(),
        },
        index,
    ))
}

/// `puzzleforge audit RELEASE... [--against FILE...] [-o REPORT]`.
pub fn run_audit(args: &AuditArgs) -> Result<Summary> {
    let cpu_before = crate::engine::process::own_cpu_seconds();
    let mut puzzles = Vec::new();
    for path in &args.release {
        let files = audited_files(path);
        if files.is_empty() {
            return Err(bad_input(format!(
                "{}: no train.csv or test.csv (not a release folder)",
                path.display()
            )));
        }
        for (split, file) in files {
            for puzzle in read_puzzles(&file)? {
                puzzles.push((split.clone(), puzzle));
            }
        }
    }
    let indexes = args
        .against
        .iter()
        .map(|path| {
            load_against(
                path,
                if args.exact {
                    Lookup::Exact
                } else {
                    Lookup::SameMove
                },
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut report = audit(&puzzles, &indexes);
    report.cpu_seconds = crate::engine::process::own_cpu_seconds() - cpu_before;
    report.max_resident_mib = crate::engine::process::own_max_resident_mib();
    if let Some(output) = &args.output {
        crate::core::fileio::write_atomic(output, &serde_json::to_vec_pretty(&report)?)?;
    }
    let mut human = format!("audit: {}", report.card_line());
    for (group, counts) in &report.by_group {
        human.push_str(&format!(
            "\n  {group}: {} puzzles, {} near copies ({} exact)",
            counts.puzzles, counts.near, counts.exact
        ));
    }
    human.push_str(&format!(
        "\n  {:.1} CPU-s ({:.3} in lookups)",
        report.cpu_seconds, report.lookup_cpu_seconds
    ));
    Report::new(human, report).into_summary()
}

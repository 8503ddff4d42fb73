//! `puzzleforge split`: stratified, game-grouped, contamination-guarded
//! train/test releases.
//!
//! A pool of puzzles is sorted into cells (rating bin x solver length x
//! mate or not). Each cell has a quota from [`SplitConfig`]; puzzles are
//! drawn per cell with a ChaCha8 RNG seeded from the run seed and the sha256
//! of the cell key, so the draw of one cell never depends on another cell's
//! contents or on thread timing.
//!
//! Grouping by source game uses one greedy pass over the cells, scarcest
//! first (fewest available puzzles per wanted puzzle). A game's side is
//! fixed the first time one of its puzzles is selected; later cells take
//! puzzles of already-fixed games only for that side, and assign a free game
//! to whichever side of the cell still needs more puzzles. Processing the
//! scarcest cells first lets them choose freely before plentiful cells have
//! fixed many games, so with one puzzle per game (the Lichess dump's usual
//! case) every cell the pool can fill is filled exactly.
//!
//! The pool is read twice: the first pass keeps only a small [`Candidate`]
//! per admissible row (id, cell, game, file and row number), so the whole
//! Lichess dump fits in memory; the second pass reads the chosen rows in
//! full. Rows that cannot be read, lack a rating, or whose moves are not
//! legal are skipped and counted by reason.

pub(crate) mod card;
pub mod folder;
pub mod plots;
pub mod cells;
pub(crate) mod draw;
pub(crate) mod funnel;
pub(crate) mod manifest;
pub(crate) mod provenance;
pub(crate) mod theme_mix;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use sha2::Digest;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::record::{Puzzle, for_each_row};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::settings::{flags_over, load_section};
use crate::core::summary::{Report, Summary};
use cells::{Cell, ExcludeBy, Quota, SplitConfig, Tier, position_key};
use draw::{Candidate, CellOutcome, Draw, draw};
use manifest::{
    CellRecord, Counts, Embedded, ExcludedFile, PoolFile, ReleaseManifest, RunProvenance, Tool,
    UnfilledCell,
};

/// Command-line arguments of `puzzleforge split`. The flags that share a
/// name with a key of `[split]` override it
/// ([`crate::core::settings::flags_over`]).
#[derive(Debug, Clone, Serialize)]
pub struct SplitArgs {
    /// Puzzle files (CSV or JSON Lines, plain or zstd): the Lichess dump,
    /// APO files, or what ingest/mine/rate wrote.
    #[serde(skip)]
    pub pool: Vec<PathBuf>,
    /// The release folder to write.
    #[serde(skip)]
    pub output: PathBuf,
    /// pipeline.toml whose [split] section configures quotas and tiers:
    /// bin_width, train_per_cell, test_per_cell; [[split.bands]] with
    /// ratings = [lo, hi] (bins of bin_width), lengths = [min, max] (solver
    /// moves) and mate = "both" | "mate" | "no_mate"; [[split.cells]] rows
    /// (bin, length, mate, train, test); [split.tiers.NAME].
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Produce this named tier of the config (filter the pool, then use the
    /// tier's quotas).
    #[serde(skip)]
    pub tier: Option<String>,
    /// Overrides the config's seed.
    pub seed: Option<u64>,
    /// Overrides the config's rating bin width.
    pub bin_width: Option<i32>,
    /// Overrides the config's train quota per cell.
    pub train_per_cell: Option<usize>,
    /// Overrides the config's test quota per cell.
    pub test_per_cell: Option<usize>,
    /// Fail (exit 2) when a cell cannot be filled.
    #[serde(skip)]
    pub strict: bool,
    /// Earlier releases or any puzzle files whose puzzles must not reappear.
    #[serde(skip)]
    pub exclude: Vec<PathBuf>,
    /// Also exclude every release (a folder with a puzzleforge
    /// manifest.json) found up to three levels under this folder. Without
    /// it (or `--exclude`), `split` excludes nothing; `run` excludes the
    /// releases already under its `output_dir`.
    #[serde(skip)]
    pub exclude_releases_under: Option<PathBuf>,
    /// Ignore `--exclude-releases-under`.
    #[serde(skip)]
    pub no_release_exclusion: bool,
    /// Engine identity to record in the manifest (e.g. "Stockfish 15.1").
    #[serde(skip)]
    pub engine_id: Option<String>,
    /// Engine option NAME=VALUE to record in the manifest (repeatable).
    #[serde(skip)]
    pub engine_option: Vec<String>,
    /// A JSON file of verification figures to embed in the manifest.
    #[serde(skip)]
    pub verify: Option<PathBuf>,
    /// Leave out puzzles whose `Verified` column (from `verify
    /// --puzzles-out`) says `False` (`fail` in older files).
    #[serde(skip)]
    pub drop_unverified: bool,
    /// The generation funnel (`run` under `[generate]`) to embed in the
    /// manifest.
    #[serde(skip)]
    pub generate: Option<PathBuf>,
    /// Self-play PGN files (`run`): the games the released self-play
    /// puzzles came from go into the release as `games.pgn`, and each such
    /// puzzle's `GameUrl` points into it.
    #[serde(skip)]
    pub games: Vec<PathBuf>,
    /// What `run` records of itself in the manifest: `sources`, `engine`,
    /// `second_engine`, `settings`.
    #[serde(skip)]
    pub(crate) provenance: Option<RunProvenance>,
}

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

/// A path as read (relative to where `split` runs) rewritten with
/// [`manifest_path`].
fn relative_to(path: &str, release: &Path) -> String {
    manifest_path(Path::new(path), release)
}

/// Contamination keys from excluded files.
struct Exclusions {
    ids: HashMap<String, usize>,
    positions: HashMap<String, usize>,
    files: Vec<ExcludedFile>,
    removed: Vec<usize>,
}

fn load_exclusions(files: &[PathBuf], by: ExcludeBy) -> Result<Exclusions> {
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
struct PoolRead {
    candidates: Vec<Candidate>,
    outside_quota: u64,
    skipped: BTreeMap<String, u64>,
    examples: Vec<String>,
    inputs: Vec<PoolFile>,
}

fn read_pool(
    paths: &[PathBuf],
    config: &SplitConfig,
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
        let bar = crate::core::progress::counter("split");
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
    config: &'a SplitConfig,
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
fn fetch_chosen(paths: &[PathBuf], drawn: &Draw) -> Result<(Vec<Puzzle>, Vec<Puzzle>)> {
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
                card::add_derived_columns(&mut puzzle, &candidate.cell);
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

/// Runs `puzzleforge split`: the `[split]` section of `--config` (or the
/// defaults) with the flags over it.
pub fn run_split(args: &SplitArgs) -> Result<Summary> {
    let section: SplitConfig = load_section(args.config.as_deref(), "split")?;
    let summary = run_split_with(args, flags_over(&section, args)?)?.into_summary()?;
    // The manifest's sha256 goes into the registry of the folder above the
    // release, where the commands that read the release look for it.
    let holder = match args.output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    folder::ReleaseFolder::at(&args.output).register_in(holder)?;
    Ok(summary)
}

/// The `[split.tiers]` entry `--tier` names (none without it); an unknown
/// name, or a tier whose bounds admit nothing, is an error.
fn chosen_tier(args: &SplitArgs, config: &SplitConfig) -> Result<Option<Tier>> {
    let Some(name) = &args.tier else {
        return Ok(None);
    };
    let tier = config.tiers.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = config.tiers.keys().map(String::as_str).collect();
        bad_input(format!(
            "split: no tier named {name:?} (configured: {})",
            known.join(", ")
        ))
    })?;
    if let Some((key, why)) = tier.empty_bounds() {
        let from = args
            .config
            .as_ref()
            .map_or_else(String::new, |path| format!("{}: ", path.display()));
        return Err(bad_input(format!(
            "split: {from}split.tiers.{name}.{key}: {why}"
        )));
    }
    Ok(Some(tier))
}

/// Draws a release from `args.pool` with the `[split]` settings `config`
/// (the pipeline runner's entry; `args.config` and the section flags are
/// not read).
pub(crate) fn run_split_with(
    args: &SplitArgs,
    config: SplitConfig,
) -> Result<Report<SplitSummary>> {
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
    let games = provenance::released_games(&args.games, &mut train, &mut test)?;
    let written = card::write_release(
        &args.output,
        &train,
        &test,
        &drawn.cells,
        manifest,
        games.as_deref(),
    )?;

    let removed_total: usize = exclusions.removed.iter().sum();
    let human = split_report(
        args,
        (train.len(), test.len()),
        &drawn,
        &unfilled,
        removed_total,
        exclude_files.len(),
        &pool,
    );
    let record = SplitSummary {
        command: "split",
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
pub(crate) struct SplitSummary {
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
fn exclusion_files(args: &SplitArgs) -> Result<Vec<PathBuf>> {
    let mut exclude_files = Vec::new();
    let add_release = |dir: &Path, files: &mut Vec<PathBuf>| -> Result<()> {
        folder::ReleaseFolder::at(dir).check()?;
        files.extend(folder::ReleaseFolder::at(dir).split_files());
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
        for dir in folder::ReleaseFolder::find_under(root, &args.output)? {
            add_release(&dir, &mut exclude_files)?;
        }
    }
    Ok(exclude_files)
}

/// A release with fewer than `split.min_puzzles` puzzles is an error that
/// names what emptied it: the exclusions (each file and what it removed)
/// or the pool.
fn too_few_puzzles(
    drawn: &Draw,
    config: &SplitConfig,
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
        "split: the release would hold {total} puzzles, fewer than split.min_puzzles = {}: {cause}",
        config.min_puzzles
    )))
}

/// `split --strict`'s error: which cells cannot be filled (the first ten).
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
        "split --strict: {} of {} cells cannot be filled: {}",
        unfilled.len(),
        cells,
        cells::first_of(&list, 10).join("; "),
    ))
}

/// The engine identity and options to record (`--engine-id`,
/// `--engine-option NAME=VALUE`), or null.
fn engine_json(args: &SplitArgs) -> Result<Value> {
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

/// The engine a `split` records (`--engine-id`, `--engine-option`).
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
fn verify_json(args: &SplitArgs) -> Result<Option<Embedded>> {
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
fn cells_json(drawn: &Draw, unfilled: &[&CellOutcome]) -> (Vec<CellRecord>, Vec<UnfilledCell>) {
    let cells = drawn
        .cells
        .iter()
        .map(|c| CellRecord {
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
fn release_manifest(
    args: &SplitArgs,
    config: &SplitConfig,
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
        kind: manifest::MANIFEST_KIND.to_string(),
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
        exclusions: manifest::Exclusions {
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
        outputs: None,
    };
    // A release `run` writes names what made it (a `split` release keeps
    // its `--engine-id`).
    if let Some(provenance) = &args.provenance {
        manifest.set_provenance(provenance);
    }
    Ok(manifest)
}

/// The human summary: what was written, the unfilled cells, exclusions and
/// skipped rows with a few examples.
fn split_report(
    args: &SplitArgs,
    (train, test): (usize, usize),
    drawn: &Draw,
    unfilled: &[&CellOutcome],
    removed_total: usize,
    excluded_files: usize,
    pool: &PoolRead,
) -> String {
    let mut human = format!(
        "split: {train} train + {test} test puzzles in {} cells -> {}\n",
        drawn.cells.len(),
        args.output.display()
    );
    if !unfilled.is_empty() {
        human.push_str(&format!(
            "split: {} cells not filled (see manifest.json \"unfilled\"), e.g.\n",
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
        for named in cells::first_of(&list, 5) {
            human.push_str(&format!("  {named}\n"));
        }
    }
    if removed_total > 0 {
        human.push_str(&format!(
            "split: excluded {removed_total} puzzles found in {excluded_files} earlier files\n"
        ));
    }
    for (reason, count) in &pool.skipped {
        human.push_str(&format!("split: skipped {count} rows: {reason}\n"));
    }
    for example in &pool.examples {
        human.push_str(&format!("  {example}\n"));
    }
    human
}

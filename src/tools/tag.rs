//! `puzzleforge tag PUZZLES -o OUT`: (re)writes the `Themes` column of a
//! puzzle file from each row's FEN and moves ([`crate::chess::tagger`]),
//! no engine involved. Rows that cannot be read or replayed go to a
//! rejects file with their line and reason, the good rows around them are
//! written. `--agreement` compares the board themes with the ones the file
//! carried (Lichess's own, on a Lichess dump), theme by theme.

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::chess::record::{
    FirstLines, Puzzle, PuzzleWriter, ReadRow, RowError, extra_columns_of, for_each_row,
};
use crate::chess::tagger::{ThemeKind, board_themes, retag, set_score_theme, theme_kind};
use crate::core::summary::{Report, Summary};
use crate::engine::pool::{EnginePool, EngineStats};
use crate::engine::process::{Limit, SearchRequest, own_cpu_seconds};
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::stages::ingest_puzzles::rejects::{RejectsFile, default_rejects_path};

/// Rows tagged together (in parallel), written in input order.
const BATCH_ROWS: usize = 8192;

/// `puzzleforge tag`'s flags (their help: `cli::tag`).
#[derive(Debug, Clone)]
pub struct TagArgs {
    pub puzzles: PathBuf,
    pub output: PathBuf,
    pub rejects: Option<PathBuf>,
    pub agreement: bool,
    pub nodes: Option<u64>,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// Counts of one theme over the compared rows.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ThemeAgreement {
    /// Rows where the input has the theme.
    pub input: u64,
    /// Rows where our tagger gives it.
    pub ours: u64,
    /// Rows where both do.
    pub both: u64,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

/// How our board themes compare with the input's.
#[derive(Debug, Default, Serialize)]
pub struct Agreement {
    /// Rows compared: read, replayed, and tagged in the input (a mate or a
    /// score theme: rows with neither were never tagged).
    pub rows: u64,
    /// Rows left out because the input carries no tags.
    pub untagged: u64,
    /// Micro-averaged F1 over every board theme of every compared row.
    pub micro_f1: f64,
    /// Share of compared rows whose whole board-theme set matches.
    pub exact_rows: f64,
    pub themes: BTreeMap<String, ThemeAgreement>,
    /// With `--nodes`: how often each input score theme (first key) met
    /// each of ours (second key), over the compared rows that do not mate.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub score_confusion: BTreeMap<String, BTreeMap<String, u64>>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
pub struct TagRecord {
    pub input: String,
    pub output: String,
    pub rejects: String,
    pub rows: u64,
    pub tagged: u64,
    pub rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Rows whose `Themes` cell changed.
    pub changed: u64,
    pub cpu_seconds: f64,
    /// Rows tagged per CPU-second of this process (reading and writing
    /// included).
    pub rows_per_cpu_second: f64,
    pub agreement: Option<Agreement>,
    /// With `--nodes`: the nodes per search and the engines' work.
    pub score_nodes: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineStats>,
}

pub fn run_tag(args: &TagArgs) -> Result<Summary> {
    let record = tag_file(args)?;
    let mut human = format!(
        "tagged {} of {} rows into {} ({} changed, {} rejected into {}); {:.0} rows per CPU-second",
        record.tagged,
        record.rows,
        record.output,
        record.changed,
        record.rejected,
        record.rejects,
        record.rows_per_cpu_second
    );
    if let Some(agreement) = &record.agreement {
        human.push_str(&format!(
            "\nagreement with the input's themes over {} tagged rows ({} untagged left out): micro-F1 {:.4}, whole board-theme set equal on {:.2}%",
            agreement.rows,
            agreement.untagged,
            agreement.micro_f1,
            agreement.exact_rows * 100.0
        ));
        for (theirs, row) in &agreement.score_confusion {
            let cells: Vec<String> = row.iter().map(|(ours, n)| format!("{ours} {n}")).collect();
            human.push_str(&format!(
                "\n  input {theirs:<10} -> ours: {}",
                cells.join(", ")
            ));
        }
        for (theme, counts) in &agreement.themes {
            human.push_str(&format!(
                "\n  {theme:<18} input {:>7}  ours {:>7}  precision {}  recall {}",
                counts.input,
                counts.ours,
                ratio_text(counts.precision),
                ratio_text(counts.recall)
            ));
        }
    }
    Report::new(human, record).into_summary()
}

fn ratio_text(value: Option<f64>) -> String {
    value.map_or_else(|| "  -   ".to_string(), |v| format!("{v:.4}"))
}

/// A row tagged: the puzzle with its new themes, the themes it came with
/// and our board themes.
struct TaggedRow {
    retagged: Puzzle,
    original_themes: Vec<String>,
    ours: Vec<&'static str>,
    /// Its score theme comes from our engine search (`--nodes`).
    scored: bool,
}

/// A row that could not be tagged: its id (empty when the row could not
/// be read) and why.
struct FailedRow {
    id: String,
    error: RowError,
}

/// One row's outcome, with its line.
type Tagged = (u64, Result<TaggedRow, FailedRow>);

fn tag_row((line, row): ReadRow) -> Tagged {
    let outcome = match row {
        Err(error) => Err(FailedRow {
            id: error.id.clone(),
            error,
        }),
        Ok(puzzle) => match puzzle.line() {
            Ok(replayed) => {
                let ours = board_themes(&replayed);
                let themes = retag(&puzzle, &ours);
                let original_themes = puzzle.themes.clone();
                let mut retagged = puzzle;
                retagged.themes = themes;
                Ok(TaggedRow {
                    retagged,
                    original_themes,
                    ours,
                    scored: false,
                })
            }
            Err(error) => Err(FailedRow {
                id: puzzle.id.clone(),
                error: RowError::new(error.code(), error.to_string()),
            }),
        },
    };
    (line, outcome)
}

/// Gives every tagged line that does not mate the score theme of an
/// engine search where the solver plays its last move (the FEN, then
/// every move but the last), in place of the row's own.
fn score_rows(pool: &EnginePool, nodes: u64, rows: &mut [Tagged]) -> Result<()> {
    let mut requests = Vec::new();
    let mut targets = Vec::new();
    for (i, (_, outcome)) in rows.iter().enumerate() {
        if let Ok(row) = outcome
            && !row.ours.contains(&"mate")
            && let Some((_, before_last)) = row.retagged.moves.split_last()
        {
            requests.push(SearchRequest {
                fen: row.retagged.fen.clone(),
                moves: before_last.to_vec(),
                limit: Limit::Nodes(nodes),
                multipv: 1,
            });
            targets.push(i);
        }
    }
    let scores = pool.map(&requests, |session, _, request| {
        let result = session.search(request)?;
        Ok(result.lines.first().map(|line| line.score.to_cp()))
    })?;
    for (i, score) in targets.into_iter().zip(scores) {
        let (_, Ok(row)) = &mut rows[i] else {
            continue;
        };
        let Some(score) = score else { continue };
        set_score_theme(&mut row.retagged.themes, i64::from(score));
        row.scored = true;
    }
    Ok(())
}

fn open_writer(path: &Path, first: &Puzzle) -> Result<PuzzleWriter> {
    PuzzleWriter::create(path, &extra_columns_of(std::slice::from_ref(first)))
}

/// The running counts behind [`Agreement`].
#[derive(Default)]
struct AgreementCounts {
    rows: u64,
    untagged: u64,
    exact: u64,
    themes: BTreeMap<String, ThemeAgreement>,
    score_confusion: BTreeMap<String, BTreeMap<String, u64>>,
}

impl AgreementCounts {
    fn add(&mut self, row: &TaggedRow) {
        let tagged = row
            .original_themes
            .iter()
            .any(|t| t == "mate" || theme_kind(t) == Some(ThemeKind::Score));
        if !tagged {
            self.untagged += 1;
            return;
        }
        self.rows += 1;
        let input: Vec<&str> = row
            .original_themes
            .iter()
            .map(String::as_str)
            .filter(|t| theme_kind(t) == Some(ThemeKind::Board))
            .collect();
        let mut exact = input.len() == row.ours.len();
        for theme in &input {
            let counts = self.themes.entry(theme.to_string()).or_default();
            counts.input += 1;
            if row.ours.contains(theme) {
                counts.both += 1;
            } else {
                exact = false;
            }
        }
        for theme in &row.ours {
            self.themes.entry(theme.to_string()).or_default().ours += 1;
        }
        if exact {
            self.exact += 1;
        }
        if row.scored {
            let score_of = |themes: &[String]| {
                themes
                    .iter()
                    .find(|t| theme_kind(t) == Some(ThemeKind::Score))
                    .cloned()
            };
            if let (Some(theirs), Some(ours)) = (
                score_of(&row.original_themes),
                score_of(&row.retagged.themes),
            ) {
                *self
                    .score_confusion
                    .entry(theirs)
                    .or_default()
                    .entry(ours)
                    .or_default() += 1;
            }
        }
    }

    fn finish(self) -> Agreement {
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let (mut both, mut input, mut ours) = (0, 0, 0);
        let themes = self
            .themes
            .into_iter()
            .map(|(name, mut counts)| {
                both += counts.both;
                input += counts.input;
                ours += counts.ours;
                counts.precision = ratio(counts.both, counts.ours);
                counts.recall = ratio(counts.both, counts.input);
                (name, counts)
            })
            .collect();
        Agreement {
            rows: self.rows,
            untagged: self.untagged,
            micro_f1: if input + ours == 0 {
                0.0
            } else {
                2.0 * both as f64 / (input + ours) as f64
            },
            exact_rows: ratio(self.exact, self.rows).unwrap_or(0.0),
            themes,
            score_confusion: self.score_confusion,
        }
    }
}

/// Turns each row whose PuzzleId an earlier row had into a reject naming
/// the line of the first, which is kept ([`FirstLines`]). `first_lines`
/// holds the ids seen so far.
fn reject_repeated_ids(tagged: &mut [Tagged], first_lines: &mut FirstLines) {
    for (line, outcome) in tagged.iter_mut() {
        let Ok(row) = outcome else { continue };
        if let Err(error) = first_lines.admit(&row.retagged.id, *line) {
            let id = row.retagged.id.clone();
            *outcome = Err(FailedRow { id, error });
        }
    }
}

fn tag_file(args: &TagArgs) -> Result<TagRecord> {
    let started = own_cpu_seconds();
    let mut run = TagRun::open(args)?;
    let mut batch: Vec<ReadRow> = Vec::with_capacity(BATCH_ROWS);
    for_each_row(&args.puzzles, |row| {
        batch.push(row);
        if batch.len() >= BATCH_ROWS {
            run.flush(&mut batch)?;
        }
        Ok(())
    })?;
    run.flush(&mut batch)?;
    run.finish(started)
}

/// One `tag` run as its batches are tagged: its outputs (the puzzle file,
/// opened at the first kept row, and the rejects), its counts and the
/// engines that score rows under `--nodes`.
struct TagRun<'a> {
    args: &'a TagArgs,
    pool: Option<EnginePool>,
    writer: Option<PuzzleWriter>,
    rejects: RejectsFile,
    record: TagRecord,
    agreement: Option<AgreementCounts>,
    first_lines: FirstLines,
}

impl<'a> TagRun<'a> {
    /// The rejects file created, the counts at zero and, under `--nodes`,
    /// the engines started.
    fn open(args: &'a TagArgs) -> Result<Self> {
        let rejects_path = args
            .rejects
            .clone()
            .unwrap_or_else(|| default_rejects_path(&args.output));
        let rejects = RejectsFile::create(&rejects_path)?;
        let record = TagRecord {
            input: args.puzzles.display().to_string(),
            output: args.output.display().to_string(),
            rejects: rejects_path.display().to_string(),
            rows: 0,
            tagged: 0,
            rejected: 0,
            rejected_by_reason: BTreeMap::new(),
            changed: 0,
            cpu_seconds: 0.0,
            rows_per_cpu_second: 0.0,
            agreement: None,
            score_nodes: args.nodes,
            engines: Vec::new(),
        };
        let pool = match args.nodes {
            Some(0) => crate::bail_input!("tag: --nodes must be positive"),
            Some(_) => {
                let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
                pool_config.progress = Some("tag".to_string());
                Some(EnginePool::new(spec, pool_config)?)
            }
            None => None,
        };
        Ok(Self {
            args,
            pool,
            writer: None,
            rejects,
            record,
            agreement: args.agreement.then(AgreementCounts::default),
            first_lines: FirstLines::default(),
        })
    }

    /// Tags the rows of `batch` (emptied), scores them under `--nodes`,
    /// and writes each to the output or the rejects.
    fn flush(&mut self, batch: &mut Vec<ReadRow>) -> Result<()> {
        let mut tagged: Vec<Tagged> = batch.par_drain(..).map(tag_row).collect();
        reject_repeated_ids(&mut tagged, &mut self.first_lines);
        if let (Some(pool), Some(nodes)) = (&self.pool, self.args.nodes) {
            score_rows(pool, nodes, &mut tagged)?;
        }
        for (line, outcome) in tagged {
            self.record.rows += 1;
            match outcome {
                Ok(row) => {
                    let out = match &mut self.writer {
                        Some(out) => out,
                        None => self
                            .writer
                            .insert(open_writer(&self.args.output, &row.retagged)?),
                    };
                    if let Some(counts) = self.agreement.as_mut() {
                        counts.add(&row);
                    }
                    self.record.tagged += 1;
                    out.write(&row.retagged)?;
                    if row.retagged.themes != row.original_themes {
                        self.record.changed += 1;
                    }
                }
                Err(error) => {
                    self.record.rejected += 1;
                    *self
                        .record
                        .rejected_by_reason
                        .entry(error.error.reason.to_string())
                        .or_default() += 1;
                    self.rejects
                        .write(line, error.id.as_bytes(), &error.error)?;
                }
            }
        }
        Ok(())
    }

    /// The output and the rejects committed, and the run's record.
    fn finish(self, started: f64) -> Result<TagRecord> {
        let mut record = self.record;
        match self.writer {
            Some(writer) => {
                writer.finish()?;
            }
            None => {
                // No row survived: an empty file with the Lichess header, so
                // what reads the output finds a puzzle file.
                PuzzleWriter::create(&self.args.output, &[])?.finish()?;
            }
        }
        self.rejects.commit()?;
        if let Some(pool) = &self.pool {
            record.engines = pool.stats();
        }
        record.cpu_seconds = own_cpu_seconds() - started;
        record.rows_per_cpu_second = record.rows as f64 / record.cpu_seconds.max(1e-9);
        record.agreement = self.agreement.map(AgreementCounts::finish);
        Ok(record)
    }
}

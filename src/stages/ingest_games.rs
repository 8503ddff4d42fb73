//! `puzzleforge ingest games`: puzzle candidates from a Lichess game dump.
//!
//! Lichess publishes every rated game each month
//! (`lichess_db_standard_rated_YYYY-MM.pgn.zst`); the few percent that were
//! analysed carry a server evaluation after every move (`[%eval 0.24]`,
//! `[%eval #-6]`). Without running an engine, those evaluations already show
//! where a player threw the game away: when a move hands the opponent a
//! winning position it did not have before, the position after it is a
//! puzzle for the opponent. This stage finds those moves the way
//! lichess-puzzler's generator screens positions (the side to move stands at
//! +200 cp or better, or mates, and its winning chances rose by more than
//! 0.6 with the move) and writes them as puzzle records for the miner, which
//! completes the solution with an engine.
//!
//! Records follow the shared convention: `FEN` is the position before the
//! blunder, `Moves` holds the blunder alone (UCI), `GameUrl` points at the
//! blunder as Lichess puzzle URLs do (`https://lichess.org/ID#PLY`, with
//! `/black` when Black blundered). Extra columns: [`columns::INGEST_GAMES`].
//! `EvalBefore`/`EvalAfter` are from White's point of view, as in the PGN.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Color, EnPassantMode, Position};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::chess::columns::{self, Column};
use crate::chess::derive::parse_game_url;
use crate::chess::pgn::{GameItem, GameRecord, PgnGames, Rejection, Tags};
use crate::chess::record::{Puzzle, PuzzleWriter};
use crate::chess::wincalc::Eval;
use crate::core::bounds::{Bound, Bounded};
use crate::core::error::bad_input;
use crate::core::fileio::open_input_with;
use crate::core::progress;
use crate::core::settings::{flags_over, switch_off, switch_on};
use crate::core::summary::{Report, Summary};

/// The `Source` value of every record this stage writes.
pub(crate) const SOURCE: &str = "lichess-game";

/// Lichess's time-control classes, by estimated game duration.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum TimeClass {
    #[value(name = "ultraBullet")]
    UltraBullet,
    #[value(name = "bullet")]
    Bullet,
    #[value(name = "blitz")]
    Blitz,
    #[value(name = "rapid")]
    Rapid,
    #[value(name = "classical")]
    Classical,
    #[value(name = "correspondence")]
    Correspondence,
}

impl TimeClass {
    pub(crate) const ALL: [TimeClass; 6] = [
        TimeClass::UltraBullet,
        TimeClass::Bullet,
        TimeClass::Blitz,
        TimeClass::Rapid,
        TimeClass::Classical,
        TimeClass::Correspondence,
    ];

    /// The class of a PGN `TimeControl` value (`300+3`, `-`), from the
    /// estimated duration base + 40 x increment as Lichess computes it.
    pub(crate) fn of_time_control(text: &str) -> Option<TimeClass> {
        let text = text.trim();
        if text == "-" {
            return Some(TimeClass::Correspondence);
        }
        let (base, increment) = text.split_once('+')?;
        let base: u64 = base.parse().ok()?;
        let increment: u64 = increment.parse().ok()?;
        let estimate = base.checked_add(increment.checked_mul(40)?)?;
        Some(match estimate {
            0..30 => TimeClass::UltraBullet,
            30..180 => TimeClass::Bullet,
            180..480 => TimeClass::Blitz,
            480..1500 => TimeClass::Rapid,
            _ => TimeClass::Classical,
        })
    }
}

/// The `[ingest_games]` section of the pipeline configuration; flags of
/// `puzzleforge ingest games` override it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IngestGamesConfig {
    /// Keep only rated games (`Event` contains "Rated").
    pub rated_only: bool,
    /// Time-control classes to keep.
    pub time_classes: Vec<TimeClass>,
    /// Both players rated at least this much.
    pub min_elo: Option<u32>,
    /// Both players rated at most this much.
    pub max_elo: Option<u32>,
    /// First `UTCDate` kept, `YYYY-MM-DD`.
    pub date_from: Option<String>,
    /// Last `UTCDate` kept, `YYYY-MM-DD`.
    pub date_to: Option<String>,
    /// Drop games with a BOT account on either side.
    pub exclude_bots: bool,
    /// Games without `[%eval]`: write every position as a candidate instead
    /// of skipping the game.
    pub all_positions: bool,
    /// The side to move must stand at least this well after the blunder
    /// (centipawns), unless it mates.
    pub min_advantage_cp: i32,
    /// Mates in fewer moves than this are marked `Kind=mate`, others
    /// `advantage` (lichess-puzzler's `mate_soon`).
    pub mate_soon: u32,
    /// The blunder must raise the opponent's winning chances (-1..1 scale)
    /// by more than this.
    pub min_win_chance_gain: f64,
}

impl Bounded for IngestGamesConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("min_elo", 0.0, 4000.0, "a player rating"),
        Bound::within("max_elo", 0.0, 4000.0, "a player rating"),
        Bound::within(
            "min_advantage_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within("mate_soon", 1.0, 100.0, "moves to mate"),
        Bound::within(
            "min_win_chance_gain",
            0.0,
            2.0,
            "winning chances run from -1 to 1",
        ),
    ];
}

impl Default for IngestGamesConfig {
    fn default() -> Self {
        Self {
            rated_only: true,
            time_classes: TimeClass::ALL.to_vec(),
            min_elo: None,
            max_elo: None,
            date_from: None,
            date_to: None,
            exclude_bots: true,
            all_positions: false,
            min_advantage_cp: 200,
            mate_soon: 15,
            min_win_chance_gain: 0.6,
        }
    }
}

/// `puzzleforge ingest games FILE -o OUT`. Each filter flag overrides its
/// `[ingest.games]` key ([`crate::core::settings::flags_over`]).
#[derive(Debug, Clone, Serialize)]
pub struct GamesArgs {
    /// Lichess game dump, `.pgn` or `.pgn.zst` (zstd detected by content).
    #[serde(skip)]
    pub input: PathBuf,
    /// Output puzzle file: `.csv`, `.jsonl`, optionally followed by `.zst`.
    #[serde(skip)]
    pub output: PathBuf,
    /// Keep casual (unrated) games too.
    #[serde(rename = "rated_only", serialize_with = "switch_off")]
    pub include_casual: bool,
    /// Time-control classes to keep (comma separated; default all).
    #[serde(rename = "time_classes")]
    pub time_control: Vec<TimeClass>,
    /// Minimum Elo of both players.
    pub min_elo: Option<u32>,
    /// Maximum Elo of both players.
    pub max_elo: Option<u32>,
    /// First game date kept (YYYY-MM-DD, from UTCDate).
    #[serde(rename = "date_from")]
    pub from: Option<String>,
    /// Last game date kept (YYYY-MM-DD, from UTCDate).
    #[serde(rename = "date_to")]
    pub to: Option<String>,
    /// Keep games played by BOT accounts.
    #[serde(rename = "exclude_bots", serialize_with = "switch_off")]
    pub include_bots: bool,
    /// Write every position of games without [%eval] as a candidate.
    #[serde(serialize_with = "switch_on")]
    pub all_positions: bool,
    /// Minimum advantage of the side to move after the blunder, centipawns.
    pub min_advantage_cp: Option<i32>,
    /// Mates in fewer moves than this are Kind=mate.
    pub mate_soon: Option<u32>,
    /// Minimum rise of the opponent's winning chances (-1..1 scale).
    pub min_win_chance_gain: Option<f64>,
}

/// Runs `ingest games` with the default configuration and the flags.
pub fn run_games(args: &GamesArgs) -> Result<Summary> {
    let config = flags_over(&IngestGamesConfig::default(), args)?;
    run_games_with(&config, &args.input, &args.output)
}

/// A calendar day, comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Day {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

impl Day {
    /// Reads `YYYY-MM-DD` or PGN's `YYYY.MM.DD`.
    pub fn parse(text: &str) -> Option<Day> {
        let text = text.trim();
        let separator = if text.contains('.') { '.' } else { '-' };
        let mut fields = text.split(separator);
        let year: u16 = fields.next()?.parse().ok()?;
        let month: u8 = fields.next()?.parse().ok()?;
        let day: u8 = fields.next()?.parse().ok()?;
        if fields.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        Some(Day { year, month, day })
    }
}

impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// The configuration checked and parsed once.
struct GameFilter {
    rated_only: bool,
    time_classes: Vec<TimeClass>,
    min_elo: Option<u32>,
    max_elo: Option<u32>,
    date_from: Option<Day>,
    date_to: Option<Day>,
    exclude_bots: bool,
}

impl GameFilter {
    fn new(config: &IngestGamesConfig) -> Result<Self> {
        let day = |value: &Option<String>, name: &str| -> Result<Option<Day>> {
            match value {
                None => Ok(None),
                Some(text) => Day::parse(text).map(Some).ok_or_else(|| {
                    bad_input(format!("{name} {text:?} is not a date (YYYY-MM-DD)"))
                }),
            }
        };
        let date_from = day(&config.date_from, "date_from")?;
        let date_to = day(&config.date_to, "date_to")?;
        if let (Some(from), Some(to)) = (date_from, date_to)
            && from > to
        {
            return Err(bad_input(format!("date_from {from} is after date_to {to}")));
        }
        if let (Some(min), Some(max)) = (config.min_elo, config.max_elo)
            && min > max
        {
            return Err(bad_input(format!("min_elo {min} is above max_elo {max}")));
        }
        if config.time_classes.is_empty() {
            return Err(bad_input("time_classes is empty: no game could be kept"));
        }
        Ok(Self {
            rated_only: config.rated_only,
            time_classes: config.time_classes.clone(),
            min_elo: config.min_elo,
            max_elo: config.max_elo,
            date_from,
            date_to,
            exclude_bots: config.exclude_bots,
        })
    }

    fn check(&self, tags: &Tags) -> Result<(), Rejection> {
        if !tags
            .get("Variant")
            .is_none_or(|v| v.trim().eq_ignore_ascii_case("standard"))
        {
            return Err(Rejection::Filtered("variant"));
        }
        if self.rated_only && !tags.get("Event").is_some_and(|e| e.contains("Rated")) {
            return Err(Rejection::Filtered("unrated"));
        }
        if self.exclude_bots
            && ["WhiteTitle", "BlackTitle"]
                .iter()
                .any(|t| tags.get(t).is_some_and(|v| v.trim() == "BOT"))
        {
            return Err(Rejection::Filtered("bot"));
        }
        let meta = GameMeta::from_tags(tags)?;
        if !self.time_classes.contains(&meta.time_class) {
            return Err(Rejection::Filtered("time_control"));
        }
        let elos = [meta.white_elo, meta.black_elo];
        if self
            .min_elo
            .is_some_and(|min| elos.iter().any(|&e| e < min))
            || self
                .max_elo
                .is_some_and(|max| elos.iter().any(|&e| e > max))
        {
            return Err(Rejection::Filtered("elo"));
        }
        if self.date_from.is_some_and(|from| meta.date < from)
            || self.date_to.is_some_and(|to| meta.date > to)
        {
            return Err(Rejection::Filtered("date"));
        }
        Ok(())
    }
}

/// What a candidate record needs from a game's tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GameMeta {
    pub game_id: String,
    pub white_elo: u32,
    pub black_elo: u32,
    pub date: Day,
    pub time_control: String,
    pub time_class: TimeClass,
}

impl GameMeta {
    /// Reads the tags every Lichess dump game has; a missing or malformed
    /// one rejects the game as `bad_tag`.
    pub(crate) fn from_tags(tags: &Tags) -> Result<GameMeta, Rejection> {
        let bad = |detail: String| Rejection::Invalid("bad_tag", detail);
        let site = tags
            .get("Site")
            .ok_or_else(|| bad("no Site tag".to_string()))?;
        let (game_id, _) = parse_game_url(site.trim())
            .ok_or_else(|| bad(format!("Site {site:?} is not a Lichess game URL")))?;
        let elo = |name: &str| -> Result<u32, Rejection> {
            let text = tags
                .get(name)
                .ok_or_else(|| bad(format!("no {name} tag")))?;
            text.trim()
                .parse()
                .map_err(|_| bad(format!("{name} {text:?} is not a rating")))
        };
        let white_elo = elo("WhiteElo")?;
        let black_elo = elo("BlackElo")?;
        let date_text = tags
            .get("UTCDate")
            .or_else(|| tags.get("Date"))
            .ok_or_else(|| bad("no UTCDate tag".to_string()))?;
        let date = Day::parse(date_text)
            .ok_or_else(|| bad(format!("UTCDate {date_text:?} is not a date")))?;
        let time_control = tags
            .get("TimeControl")
            .ok_or_else(|| bad("no TimeControl tag".to_string()))?
            .trim()
            .to_string();
        let time_class = TimeClass::of_time_control(&time_control)
            .ok_or_else(|| bad(format!("TimeControl {time_control:?} is malformed")))?;
        Ok(GameMeta {
            game_id,
            white_elo,
            black_elo,
            date,
            time_control,
            time_class,
        })
    }
}

/// The candidate thresholds, from the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    pub min_advantage_cp: i32,
    pub mate_soon: u32,
    pub min_win_chance_gain: f64,
}

impl From<&IngestGamesConfig> for Thresholds {
    fn from(config: &IngestGamesConfig) -> Self {
        Self {
            min_advantage_cp: config.min_advantage_cp,
            mate_soon: config.mate_soon,
            min_win_chance_gain: config.min_win_chance_gain,
        }
    }
}

/// How a position after a move qualifies as a candidate, if it does:
/// `Some("mate")` or `Some("advantage")`. `before` and `after` are the
/// evaluations around the move, from White's point of view; `to_move` is
/// the side to move after it (the one who may punish).
pub(crate) fn candidate_kind(
    before: Eval,
    after: Eval,
    to_move: Color,
    thresholds: &Thresholds,
) -> Option<&'static str> {
    let before = before.for_side(to_move);
    let after = after.for_side(to_move);
    let winning = match after {
        Eval::Cp(cp) => cp >= thresholds.min_advantage_cp,
        Eval::Mate(moves) => moves > 0,
    };
    if !winning || after.win_chance() <= before.win_chance() + thresholds.min_win_chance_gain {
        return None;
    }
    match after {
        Eval::Mate(moves) if u32::try_from(moves).is_ok_and(|m| m < thresholds.mate_soon) => {
            Some("mate")
        }
        _ => Some("advantage"),
    }
}

/// The candidate records of one game. With `all_positions`, every move
/// whose resulting position is not over becomes a candidate, evaluated or
/// not; otherwise only the moves that pass [`candidate_kind`].
pub(crate) fn game_candidates(
    game: &GameRecord,
    meta: &GameMeta,
    thresholds: &Thresholds,
    all_positions: bool,
) -> Vec<Puzzle> {
    // Judge every ply from the evaluations alone first: most analysed games
    // hold no candidate, and those need no replay.
    let first_mover = game.initial.turn();
    let mut kinds: Vec<Option<&'static str>> = Vec::with_capacity(game.moves.len());
    let mut eval_before: Option<Eval> = None;
    for (index, played) in game.moves.iter().enumerate() {
        let mover = if index % 2 == 0 {
            first_mover
        } else {
            first_mover.other()
        };
        kinds.push(match (eval_before, played.eval) {
            (Some(before), Some(after)) => candidate_kind(before, after, mover.other(), thresholds),
            _ => None,
        });
        eval_before = played.eval;
    }
    let mut found = Vec::new();
    let last_ply = if all_positions {
        game.moves.len()
    } else {
        match kinds.iter().rposition(Option::is_some) {
            Some(index) => index + 1,
            None => return found,
        }
    };
    for ply in game.plies().take(last_ply) {
        let index = ply.ply as usize - 1;
        let kind = kinds[index];
        if kind.is_none() && !all_positions {
            continue;
        }
        let previous_eval = index.checked_sub(1).and_then(|i| game.moves[i].eval);
        let eval_after = ply.played.eval;
        let after = ply.after();
        if after.legal_moves().is_empty() {
            continue;
        }
        let eval_text = |eval: Option<Eval>| eval.map(|e| e.to_string()).unwrap_or_default();
        let color_path = if ply.mover() == Color::Black {
            "/black"
        } else {
            ""
        };
        let mut puzzle = Puzzle {
            id: format!("{}_{}", meta.game_id, ply.ply),
            fen: Fen::from_position(&ply.before, EnPassantMode::Legal),
            moves: vec![ply.played.mv.to_uci(CastlingMode::Standard)],
            game_url: format!(
                "https://lichess.org/{}{color_path}#{}",
                meta.game_id, ply.ply
            ),
            ..Puzzle::default()
        };
        puzzle.set(Column::Source, SOURCE);
        puzzle.set(Column::GameId, meta.game_id.clone());
        puzzle.set(Column::Ply, ply.ply.to_string());
        puzzle.set(Column::WhiteElo, meta.white_elo.to_string());
        puzzle.set(Column::BlackElo, meta.black_elo.to_string());
        puzzle.set(Column::Date, meta.date.to_string());
        puzzle.set(
            Column::FenAfter,
            Fen::from_position(&after, EnPassantMode::Legal).to_string(),
        );
        puzzle.set(Column::EvalBefore, eval_text(previous_eval));
        puzzle.set(Column::EvalAfter, eval_text(eval_after));
        puzzle.set(Column::TimeControl, meta.time_control.clone());
        puzzle.set(Column::Kind, kind.unwrap_or(""));
        found.push(puzzle);
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_classes_follow_lichess_estimates() {
        let class = |tc: &str| TimeClass::of_time_control(tc);
        assert_eq!(class("15+0"), Some(TimeClass::UltraBullet));
        assert_eq!(class("0+1"), Some(TimeClass::Bullet));
        assert_eq!(class("60+0"), Some(TimeClass::Bullet));
        assert_eq!(class("180+0"), Some(TimeClass::Blitz));
        assert_eq!(class("300+3"), Some(TimeClass::Blitz));
        assert_eq!(class("600+0"), Some(TimeClass::Rapid));
        assert_eq!(class("900+10"), Some(TimeClass::Rapid));
        assert_eq!(class("1800+0"), Some(TimeClass::Classical));
        assert_eq!(class("-"), Some(TimeClass::Correspondence));
        assert_eq!(class("300"), None);
        assert_eq!(class("a+b"), None);
    }

    #[test]
    fn candidate_kinds() {
        let t = Thresholds::from(&IngestGamesConfig::default());
        // White blunders from -1.38 into a mate in 6 for Black.
        assert_eq!(
            candidate_kind(Eval::Cp(-138), Eval::Mate(-6), Color::Black, &t),
            Some("mate")
        );
        // A mistake that leaves Black only +1.25 is no candidate.
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Cp(-125), Color::Black, &t),
            None
        );
        // Already winning before: the gain is too small.
        assert_eq!(
            candidate_kind(Eval::Cp(-306), Eval::Cp(-575), Color::Black, &t),
            None
        );
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Cp(600), Color::White, &t),
            Some("advantage")
        );
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Mate(20), Color::White, &t),
            Some("advantage")
        );
    }

    #[test]
    fn config_rejects_unknown_fields_and_bad_dates() {
        let parsed: Result<IngestGamesConfig, _> = toml::from_str("min_elo = 1500\nbogus = 1");
        assert!(parsed.is_err());
        let config: IngestGamesConfig =
            toml::from_str("time_classes = [\"blitz\", \"ultraBullet\"]").unwrap();
        assert_eq!(
            config.time_classes,
            vec![TimeClass::Blitz, TimeClass::UltraBullet]
        );
        let bad = IngestGamesConfig {
            date_from: Some("2021-13-01".into()),
            ..IngestGamesConfig::default()
        };
        assert!(GameFilter::new(&bad).is_err());
    }
}

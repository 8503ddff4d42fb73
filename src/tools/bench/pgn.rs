//! `puzzleforge bench pgn`: PGN reading throughput.
//!
//! Generates two multi-megabyte PGN files by repeating a real Lichess game
//! under fresh `Site` tags, one with the game's `[%eval]`/`[%clk]` comments
//! and variations as in an analysed dump, one with bare moves as in most of
//! a dump, and times three readers over each on one core:
//!
//! - `peer`: pgn-reader alone with a visitor that does nothing, the floor
//!   any reader built on it pays;
//! - `read`: [`crate::chess::pgn::PgnGames`], which also collects tags, replays
//!   every move with shakmaty and reads the annotations;
//! - `ingest`: the whole `ingest games` stage, writing candidates to CSV.
//!
//! The best of several rounds is reported, in MiB of PGN per second.

use anyhow::{Context, Result};
use pgn_reader::{Reader, Visitor};
use serde_json::json;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::chess::pgn::{GameItem, PgnGames};
use crate::core::error::bad_input;
use crate::core::summary::Summary;
use crate::stages::ingest_games::{IngestGamesConfig, games_report};

/// `puzzleforge bench pgn`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchPgnArgs {
    pub mib: u64,
    pub rounds: u32,
    pub game: PathBuf,
    pub dir: Option<PathBuf>,
}

/// A pgn-reader visitor that keeps nothing: the parser's own cost.
pub(crate) struct ParseOnly;

impl Visitor for ParseOnly {
    type Tags = ();
    type Movetext = ();
    type Output = ();

    fn begin_tags(&mut self) -> ControlFlow<(), ()> {
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, _tags: ()) -> ControlFlow<(), ()> {
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, _movetext: ()) {}
}

/// The game's text split into its tag section and its movetext, both
/// annotated and bare.
struct Template {
    tags: String,
    annotated: String,
    bare: String,
}

fn template(path: &Path) -> Result<Template> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let text = text.replace("\r\n", "\n");
    let Some((tags, annotated)) = text.trim().split_once("\n\n") else {
        return Err(bad_input(format!(
            "{}: no blank line between tags and moves",
            path.display()
        )));
    };
    let mut games = PgnGames::new(text.as_bytes());
    let game = match games.next() {
        Some(Ok(GameItem::Game(game))) => game,
        _ => {
            return Err(bad_input(format!(
                "{}: the first game cannot be read",
                path.display()
            )));
        }
    };
    let mut bare = String::new();
    for ply in game.plies() {
        if ply.ply % 2 == 1 {
            let _ = write!(bare, "{}. ", ply.ply.div_ceil(2));
        }
        let _ = write!(bare, "{} ", ply.played.san);
    }
    bare.push_str(&game.outcome.to_string());
    let tags: Vec<&str> = tags
        .lines()
        .filter(|line| !line.starts_with("[Site "))
        .collect();
    Ok(Template {
        tags: tags.join("\n"),
        annotated: annotated.trim().to_string(),
        bare,
    })
}

/// Writes copies of the game until the file reaches `bytes`; each copy has
/// its own 8-character game id.
fn generate(path: &Path, tags: &str, movetext: &str, bytes: u64) -> Result<u64> {
    let mut out =
        BufWriter::new(File::create(path).with_context(|| format!("creating {}", path.display()))?);
    let mut written = 0u64;
    let mut games = 0u64;
    while written < bytes {
        let game = format!("[Site \"https://lichess.org/b{games:07}\"]\n{tags}\n\n{movetext}\n\n");
        out.write_all(game.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        written += game.len() as u64;
        games += 1;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(games)
}

fn best_of<T>(rounds: u32, mut pass: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let value = pass()?;
        best = best.min(started.elapsed().as_secs_f64());
        last = Some(value);
    }
    match last {
        Some(value) => Ok((best, value)),
        None => anyhow::bail!("no timed pass ran"),
    }
}

/// Runs the benchmark.
pub fn run_bench_pgn(args: &BenchPgnArgs) -> Result<Summary> {
    if args.mib == 0 {
        return Err(bad_input("--mib must be at least 1"));
    }
    let template = template(&args.game)?;
    let (dir, remove_dir) = match &args.dir {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("puzzleforge-bench-pgn-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = measure(args, &template, &dir);
    if remove_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn measure(args: &BenchPgnArgs, template: &Template, dir: &Path) -> Result<Summary> {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let mut human = format!(
        "bench pgn: {} MiB per file, best of {} rounds, one core\n",
        args.mib,
        args.rounds.max(1)
    );
    let mut files = Vec::new();
    for (name, movetext) in [
        ("with_evals", &template.annotated),
        ("without_evals", &template.bare),
    ] {
        let path = dir.join(format!("bench_{name}.pgn"));
        let games = generate(&path, &template.tags, movetext, args.mib * 1024 * 1024)?;
        let bytes = std::fs::metadata(&path)?.len();

        let (peer_s, peer_games) = best_of(args.rounds, || {
            let mut reader = Reader::new(File::open(&path)?);
            let mut games = 0u64;
            while reader.read_game(&mut ParseOnly)?.is_some() {
                games += 1;
            }
            Ok(games)
        })?;
        let (read_s, (read_games, plies)) = best_of(args.rounds, || {
            let mut games = 0u64;
            let mut plies = 0u64;
            for item in PgnGames::new(File::open(&path)?) {
                if let GameItem::Game(game) = item? {
                    games += 1;
                    plies += game.moves.len() as u64;
                }
            }
            Ok((games, plies))
        })?;
        let config = IngestGamesConfig {
            all_positions: false,
            ..IngestGamesConfig::default()
        };
        let output = dir.join(format!("bench_{name}.csv"));
        let (ingest_s, candidates) = best_of(args.rounds, || {
            Ok(games_report(&config, &path, &output)?.record.candidates)
        })?;
        if peer_games != games || read_games != games {
            anyhow::bail!(
                "{name}: generated {games} games, pgn-reader read {peer_games}, puzzleforge read {read_games}"
            );
        }
        let rate = |seconds: f64| mib(bytes) / seconds;
        let _ = writeln!(
            human,
            "  {name}: {:.1} MiB, {games} games, {plies} plies\n    peer (pgn-reader, no replay) {:.0} MiB/s; read + replay {:.0} MiB/s ({:.2} x peer); ingest {:.0} MiB/s, {candidates} candidates",
            mib(bytes),
            rate(peer_s),
            rate(read_s),
            peer_s / read_s,
            rate(ingest_s),
        );
        files.push(json!({
            "name": name,
            "bytes": bytes,
            "games": games,
            "plies": plies,
            "peer_mib_per_s": rate(peer_s),
            "read_mib_per_s": rate(read_s),
            "read_vs_peer": peer_s / read_s,
            "ingest_mib_per_s": rate(ingest_s),
            "candidates": candidates,
        }));
    }
    let json = json!({
        "command": "bench pgn",
        "mib_per_file": args.mib,
        "rounds": args.rounds.max(1),
        "files": files,
    });
    Ok(Summary::new(human, json))
}

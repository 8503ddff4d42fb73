//! `puzzleforge bench tag`: tagging speed on real Lichess rows, beside its
//! floor. Each round times, on one core, the peer (replaying every line
//! with shakmaty, which tagging needs first) and the tagger (replaying and
//! deciding every board theme); the fastest round of each counts. Reported
//! as puzzles per CPU-second and the tagger's cost as a multiple of the
//! replay's.

use anyhow::Result;
use serde_json::json;
use std::path::PathBuf;

use crate::chess::record::read_puzzles;
use crate::chess::tagger::board_themes;
use crate::core::error::bad_input;
use crate::core::summary::Summary;
use crate::engine::process::own_cpu_seconds;

/// `puzzleforge bench tag`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchTagArgs {
    pub input: PathBuf,
    pub rounds: u32,
}

pub fn run_bench_tag(args: &BenchTagArgs) -> Result<Summary> {
    let puzzles = read_puzzles(&args.input)?;
    if puzzles.is_empty() || args.rounds == 0 {
        return Err(bad_input(format!(
            "bench tag: {} has no puzzles, or --rounds is 0",
            args.input.display()
        )));
    }
    let mut replay_best = f64::INFINITY;
    let mut tag_best = f64::INFINITY;
    let mut themes_given = 0usize;
    for _ in 0..args.rounds {
        let started = own_cpu_seconds();
        let mut plies = 0;
        for puzzle in &puzzles {
            plies += puzzle.line()?.plies();
        }
        replay_best = replay_best.min(own_cpu_seconds() - started);
        std::hint::black_box(plies);

        let started = own_cpu_seconds();
        themes_given = 0;
        for puzzle in &puzzles {
            themes_given += board_themes(&puzzle.line()?).len();
        }
        tag_best = tag_best.min(own_cpu_seconds() - started);
    }
    let rows = puzzles.len() as f64;
    let per_second = |seconds: f64| rows / seconds.max(1e-9);
    let ratio = tag_best / replay_best.max(1e-9);
    let human = format!(
        "bench tag: {} puzzles of {}, best of {} rounds on one core: replay {:.0} puzzles/CPU-s, \
         tag {:.0} puzzles/CPU-s ({:.1}x the replay's cost), {:.1} board themes a puzzle",
        puzzles.len(),
        args.input.display(),
        args.rounds,
        per_second(replay_best),
        per_second(tag_best),
        ratio,
        themes_given as f64 / rows
    );
    Ok(Summary::new(
        human,
        json!({
            "bench": "tag",
            "input": args.input.display().to_string(),
            "puzzles": puzzles.len(),
            "rounds": args.rounds,
            "replay_puzzles_per_cpu_second": per_second(replay_best),
            "tag_puzzles_per_cpu_second": per_second(tag_best),
            "tag_cost_over_replay": ratio,
            "board_themes_per_puzzle": themes_given as f64 / rows,
        }),
    ))
}

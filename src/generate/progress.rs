//! The progress lines while generating: one per batch taken, for a human
//! on a terminal, timestamped without one, as JSON under `--json`. Apart
//! because nothing of it decides anything or reaches a file.

use serde::Serialize;

use super::walk::Walk;

/// One line per batch taken while generating: on a terminal a human line
/// on stderr, without one the same line timestamped, under `--json` a
/// `{"event": "batch", ...}` JSON line on stderr (stdout keeps the one
/// summary object). The rates
/// and the ETA come from the batches played by this process; nothing of
/// it goes into a file.
pub(super) struct BatchProgress {
    started: std::time::Instant,
    max_cpu_hours: Option<f64>,
}

impl BatchProgress {
    pub(super) fn new(max_cpu_hours: Option<f64>) -> BatchProgress {
        BatchProgress {
            started: std::time::Instant::now(),
            max_cpu_hours,
        }
    }

    /// Whether progress lines are shown at all: on a terminal, as plain
    /// timestamped lines without one, as JSON lines under `--json`.
    pub(super) fn shown(&self) -> bool {
        true
    }

    /// Reports the batch walk `index` just took; `fill` is every stream's
    /// [`super::target::Counter::fill`] over the whole target.
    pub(super) fn batch(&self, walks: &[Walk<'_>], index: usize, fill: [u64; 4]) {
        if !self.shown() {
            return;
        }
        let line = self.line(walks, index, fill);
        if crate::core::progress::enabled() {
            eprintln!("{}", line.human());
        } else if crate::core::progress::plain_lines() {
            crate::core::progress::note(&line.human());
        } else {
            match serde_json::to_string(&line) {
                Ok(json) => eprintln!("{json}"),
                Err(error) => eprintln!("puzzleforge: progress line: {error}"),
            }
        }
    }

    /// The batch's progress. The cells are those of every stream's puzzles
    /// taken so far, over the whole target, as the release draws them but
    /// deduplicated in the order the batches were taken (the release
    /// dedups in stream order, so it may differ by a repeated position).
    fn line(&self, walks: &[Walk<'_>], index: usize, fill: [u64; 4]) -> BatchLine {
        let walk = &walks[index];
        let segment = walk.segments.last();
        let sum = |f: &dyn Fn(&Walk<'_>) -> f64| walks.iter().map(f).sum::<f64>();
        // This stream's games of the max_games the user set (each stream
        // has its own), not a sum over the streams.
        let games = walk.next - walk.first;
        let max_games = walk.last + 1 - walk.first;
        let all_games = sum(&|w| (w.next - w.first) as f64) as u64;
        let all_max_games = sum(&|w| (w.last + 1 - w.first) as f64) as u64;
        let verified = walks.iter().map(|w| w.counter.funnel.verified).sum::<u64>();
        let [cells_filled, cells, drawn, wanted] = fill;
        let cpu_seconds = sum(&|w| w.cpu_seconds);
        let elapsed = self.started.elapsed().as_secs_f64();
        // ETA: the soonest of filling the quotas at the rate puzzles were
        // drawn so far, and of spending a budget at the rate it was spent.
        let played_games = sum(&|w| w.played.games as f64);
        let played_cpu = sum(&|w| w.played.cpu_seconds);
        let mut etas = Vec::new();
        if played_games > 0.0 && drawn > 0 {
            etas.push(elapsed * (wanted - drawn.min(wanted)) as f64 / drawn as f64);
        }
        if played_games > 0.0 {
            etas.push(elapsed / played_games * (all_max_games - all_games) as f64);
        }
        if let Some(hours) = self.max_cpu_hours.filter(|_| played_cpu > 0.0) {
            etas.push(elapsed / played_cpu * (hours * 3600.0 - cpu_seconds).max(0.0));
        }
        BatchLine {
            event: "batch",
            profile: walk.profile.clone(),
            first_game: segment.map(|s| s.first),
            last_game: segment.map(|s| s.last),
            played: walk.played.last_batch,
            games,
            max_games,
            engine_cpu_hours: cpu_seconds / 3600.0,
            max_cpu_hours: self.max_cpu_hours,
            verified,
            cells_filled,
            cells,
            puzzles_drawn: drawn,
            puzzles_wanted: wanted,
            elapsed_seconds: elapsed,
            eta_seconds: etas.into_iter().reduce(f64::min),
        }
    }
}

/// One batch's progress line (`{"event": "batch", ...}` under `--json`).
#[derive(Serialize)]
struct BatchLine {
    event: &'static str,
    profile: Option<String>,
    first_game: Option<u64>,
    last_game: Option<u64>,
    /// Played by this process (else taken from the store).
    played: bool,
    games: u64,
    max_games: u64,
    engine_cpu_hours: f64,
    max_cpu_hours: Option<f64>,
    verified: u64,
    cells_filled: u64,
    cells: u64,
    puzzles_drawn: u64,
    puzzles_wanted: u64,
    elapsed_seconds: f64,
    eta_seconds: Option<f64>,
}

impl BatchLine {
    fn human(&self) -> String {
        let clock = |seconds: f64| {
            let s = seconds.round() as u64;
            format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        };
        let game = |game: Option<u64>| game.map_or("?".to_string(), |g| g.to_string());
        let budget = (self.max_cpu_hours).map_or(String::new(), |h| format!("/{h:.2}"));
        format!(
            "generate{}: games {}-{} {} | {}/{} games | engine CPU {:.3}{budget} h | {} verified | cells {}/{} ({}/{} puzzles) | {} elapsed, eta {}",
            (self.profile.as_deref()).map_or(String::new(), |p| format!(" [{p}]")),
            game(self.first_game),
            game(self.last_game),
            if self.played {
                "played"
            } else {
                "from the store"
            },
            self.games,
            self.max_games,
            self.engine_cpu_hours,
            self.verified,
            self.cells_filled,
            self.cells,
            self.puzzles_drawn,
            self.puzzles_wanted,
            clock(self.elapsed_seconds),
            self.eta_seconds.map_or("?".to_string(), clock),
        )
    }
}

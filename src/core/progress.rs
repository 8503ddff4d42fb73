//! Progress for people, by where stderr goes (docs/pipeline.md,
//! "Progress"):
//!
//! - a terminal: bars (indicatif), redrawn at least every second, their
//!   ETA from indicatif's exponentially weighted rate;
//! - no terminal (a cron log, a pipe, a file): the same bars as plain
//!   lines, each with a UTC timestamp (RFC 3339, to the second), one when
//!   a bar starts, then at most one a minute while it runs (and at least
//!   one a minute: a tick redraws a bar that did not move), and one with
//!   its final count when it ends ([`finish`]), plus a line as each `run`
//!   stage starts and ends ([`note`]);
//! - `--json`: no bars and no plain lines; long work reports its steps as
//!   JSON lines on stderr.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Set by `--json`: progress bars and human progress lines stay quiet, and
/// long work reports each step as one JSON line on stderr instead.
static JSON_LINES: AtomicBool = AtomicBool::new(false);

/// `--json`: machine-readable progress lines on stderr, no bars.
pub fn set_json_lines(on: bool) {
    JSON_LINES.store(on, Ordering::Relaxed);
}

/// True under `--json`: progress goes out as JSON lines on stderr.
pub fn json_lines() -> bool {
    JSON_LINES.load(Ordering::Relaxed)
}

/// True when stderr is a terminal (and `--json` is off): progress bars and
/// human progress lines should be drawn.
pub fn enabled() -> bool {
    !json_lines() && std::io::stderr().is_terminal()
}

/// True when progress goes out as plain timestamped lines: stderr is no
/// terminal and `--json` is off.
pub fn plain_lines() -> bool {
    !json_lines() && !std::io::stderr().is_terminal()
}

/// How often a plain line is written while a bar runs.
const PLAIN_EVERY: Duration = Duration::from_secs(60);

/// A line for a person on stderr with its UTC timestamp
/// (`[2026-12-03T07:24:30Z] stage mine: started`); nothing under `--json`.
pub fn note(line: &str) {
    if !json_lines() {
        eprintln!("[{}] {line}", timestamp(SystemTime::now()));
    }
}

/// `at` in UTC as RFC 3339 to the second (`2026-12-03T07:24:30Z`): what a
/// log line starts with, sorted as text in the order of time, and read the
/// same on every machine (no time zone, no locale). A time before 1970
/// (a clock set wrong) reads as 1970.
pub fn timestamp(at: SystemTime) -> String {
    let seconds = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch): no
/// calendar crate for one line of the log.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Ends a bar: on a terminal it is cleared; as plain lines its final
/// count is written (`mine: 40/40 (100%), ...`) when the bar goes, so a
/// log shows what each bar came to even when it ran for less than the
/// minute between its lines.
pub fn finish(bar: &ProgressBar) {
    if plain_lines() {
        bar.finish();
    } else {
        bar.finish_and_clear();
    }
}

/// Where plain lines go and what time it is: stderr and the clock, or a
/// test's.
type Sink = Box<dyn Fn(&str) + Send + Sync>;
type Clock = Box<dyn Fn() -> Instant + Send + Sync>;

/// The draw target of plain lines: what indicatif would draw on a terminal,
/// as one timestamped line when the bar starts, at most one a minute while
/// it runs, and its last frame when it goes (if that was not written yet).
struct PlainLines {
    state: Mutex<PlainState>,
    sink: Sink,
    clock: Clock,
}

impl std::fmt::Debug for PlainLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainLines")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct PlainState {
    /// The frame being drawn (indicatif writes it, then flushes).
    frame: String,
    /// When the last line went out.
    written: Option<Instant>,
    /// The last frame drawn and not written (the minute was not up): the
    /// bar's end line when nothing comes after it.
    pending: Option<String>,
}

impl PlainLines {
    fn target() -> ProgressDrawTarget {
        let lines = PlainLines::new(Box::new(note), Box::new(Instant::now));
        ProgressDrawTarget::term_like_with_hz(Box::new(lines), 1)
    }

    fn new(sink: Sink, clock: Clock) -> PlainLines {
        PlainLines {
            state: Mutex::new(PlainState::default()),
            sink,
            clock,
        }
    }
}

impl Drop for PlainLines {
    /// The bar is gone: its last frame, if the minute held it back (a
    /// finished bar's last frame is its final count).
    fn drop(&mut self) {
        let pending = match self.state.get_mut() {
            Ok(state) => state.pending.take(),
            Err(poisoned) => poisoned.into_inner().pending.take(),
        };
        if let Some(frame) = pending {
            (self.sink)(&frame);
        }
    }
}

impl TermLike for PlainLines {
    fn width(&self) -> u16 {
        160
    }

    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        let s = s.trim();
        if let Ok(mut state) = self.state.lock()
            && !s.is_empty()
        {
            if !state.frame.is_empty() {
                state.frame.push_str(" | ");
            }
            state.frame.push_str(s);
        }
        Ok(())
    }

    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn flush(&self) -> std::io::Result<()> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        let frame = std::mem::take(&mut state.frame);
        if frame.is_empty() {
            // A cleared bar draws nothing: what it last showed stays
            // pending for its end line.
            return Ok(());
        }
        let now = (self.clock)();
        let due = state
            .written
            .is_none_or(|at| now.saturating_duration_since(at) >= PLAIN_EVERY);
        if due {
            (self.sink)(&frame);
            state.written = Some(now);
            state.pending = None;
        } else {
            state.pending = Some(frame);
        }
        Ok(())
    }
}

/// A bar drawn where progress goes: on a terminal as it is, as plain
/// lines without one, hidden under `--json`.
fn hidden_unless_terminal(bar: ProgressBar) -> ProgressBar {
    if plain_lines() {
        bar.set_draw_target(PlainLines::target());
    } else if !enabled() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// Starts a shown bar's tick, once its style and name are set (a tick
/// draws at once: before them, its first line would have neither): every
/// second on a terminal, and often enough without one that a plain line
/// comes at least once a minute even when the bar does not move.
fn ticking(bar: ProgressBar) -> ProgressBar {
    if enabled() {
        bar.enable_steady_tick(Duration::from_secs(1));
    } else if plain_lines() {
        bar.enable_steady_tick(Duration::from_secs(20));
    }
    bar
}

/// The template of a bar: drawn on a terminal, else as a plain line.
fn style(terminal: &str, plain: &str) -> Option<ProgressStyle> {
    let template = if plain_lines() { plain } else { terminal };
    ProgressStyle::with_template(template)
        .ok()
        .map(|style| style.progress_chars("=> "))
}

/// A bar counting items (positions, games, puzzles) towards a known total.
pub fn items(total: u64, what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::new(total));
    if let Some(style) = style(
        "{prefix:>10} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
        "{prefix}: {pos}/{len} ({percent}%), {per_sec}, {elapsed} elapsed, eta {eta} {msg}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    ticking(bar)
}

/// A counter of items whose total is not known in advance (rows of a
/// file read as it streams): a spinner with the count and the rate, not a
/// bar stuck at `N/0`.
pub(crate) fn counter(what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::no_length());
    if let Some(style) = style(
        "{prefix:>10} {spinner} {pos} {per_sec} {msg}",
        "{prefix}: {pos}, {per_sec}, {elapsed} elapsed {msg}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    ticking(bar)
}

/// A bar counting bytes read from an input of known size.
pub fn bytes(total: u64, what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::new(total));
    if let Some(style) = style(
        "{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
        "{prefix}: {bytes}/{total_bytes} ({percent}%), {bytes_per_sec}, {elapsed} elapsed, eta {eta} {msg}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    ticking(bar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// RFC 3339 in UTC to the second, across a leap day and a year's end.
    #[test]
    fn timestamps_are_rfc_3339_utc_to_the_second() {
        let at = |seconds: u64| timestamp(std::time::UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(at(1_798_761_600), "2027-01-01T00:00:00Z");
        assert_eq!(
            timestamp(std::time::UNIX_EPOCH + Duration::from_millis(1_764_731_070_900)),
            "2025-12-03T03:04:30Z"
        );
    }

    /// The plain-line writer on a clock the test moves: the first frame
    /// goes out, frames within the minute are held back, the first one
    /// after it goes out with the count it carries, and what was held back
    /// last goes out when the bar goes.
    #[test]
    fn plain_lines_write_the_start_then_a_count_a_minute_then_the_end() {
        let start = Instant::now();
        let now = Arc::new(Mutex::new(start));
        let written = Arc::new(Mutex::new(Vec::<String>::new()));
        let lines = {
            let (now, written) = (Arc::clone(&now), Arc::clone(&written));
            PlainLines::new(
                Box::new(move |line| written.lock().unwrap().push(line.to_string())),
                Box::new(move || *now.lock().unwrap()),
            )
        };
        let draw = |frame: &str, at_seconds: u64| {
            *now.lock().unwrap() = start + Duration::from_secs(at_seconds);
            lines.write_line(frame).unwrap();
            lines.flush().unwrap();
        };
        draw("mine: 0/40", 0);
        draw("mine: 3/40", 20);
        draw("mine: 7/40", 40);
        draw("mine: 12/40", 60);
        draw("mine: 20/40", 80);
        draw("mine: 40/40", 90);
        // A cleared bar flushes an empty frame: nothing to write.
        lines.flush().unwrap();
        assert_eq!(
            *written.lock().unwrap(),
            ["mine: 0/40", "mine: 12/40"],
            "held back within the minute"
        );
        drop(lines);
        assert_eq!(
            *written.lock().unwrap(),
            ["mine: 0/40", "mine: 12/40", "mine: 40/40"]
        );
    }
}

//! Progress for people, by where stderr goes (docs/pipeline.md,
//! "Progress"):
//!
//! - a terminal: bars (indicatif), redrawn at least every second, their
//!   ETA from indicatif's exponentially weighted rate;
//! - no terminal (a cron log, a pipe, a file): the same bars as plain
//!   lines, each with a UTC timestamp, one when a bar starts and then at
//!   most one a minute while it runs (and at least one a minute: a tick
//!   redraws a bar that did not move), plus a line when each `run` stage
//!   starts ([`note`]);
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

/// A line for a person on stderr with its UTC timestamp (`[Thu, 03 Dec
/// 2026 07:24:30 GMT] stage mine started`); nothing under `--json`.
pub fn note(line: &str) {
    if !json_lines() {
        eprintln!("[{}] {line}", httpdate::fmt_http_date(SystemTime::now()));
    }
}

/// The draw target of plain lines: what indicatif would draw on a terminal,
/// as one timestamped line when the bar starts and at most one a minute.
#[derive(Debug)]
struct PlainLines {
    state: Mutex<PlainState>,
}

#[derive(Debug, Default)]
struct PlainState {
    /// The frame being drawn (indicatif writes it, then flushes).
    frame: String,
    /// When the last line went out.
    written: Option<Instant>,
}

impl PlainLines {
    fn target() -> ProgressDrawTarget {
        let lines = PlainLines {
            state: Mutex::new(PlainState::default()),
        };
        ProgressDrawTarget::term_like_with_hz(Box::new(lines), 1)
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
        let due = state.written.is_none_or(|at| at.elapsed() >= PLAIN_EVERY);
        if due && !frame.is_empty() {
            note(&frame);
            state.written = Some(Instant::now());
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

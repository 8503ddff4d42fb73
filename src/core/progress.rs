//! Progress bars that show on a terminal and stay silent without one.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

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

fn hidden_unless_terminal(bar: ProgressBar) -> ProgressBar {
    if !enabled() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// A bar counting items (positions, games, puzzles) towards a known total.
pub fn items(total: u64, what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::new(total));
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>10} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A counter of items whose total is not known in advance (rows of a
/// file read as it streams): a spinner with the count and the rate, not a
/// bar stuck at `N/0`.
pub(crate) fn counter(what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::no_length());
    if let Ok(style) = ProgressStyle::with_template("{prefix:>10} {spinner} {pos} {per_sec} {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A bar counting bytes read from an input of known size.
pub fn bytes(total: u64, what: &str) -> ProgressBar {
    let bar = hidden_unless_terminal(ProgressBar::new(total));
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

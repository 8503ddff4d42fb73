//! `--help` speaks to users: every command of the real binary says what
//! it does, every flag and argument of every command has help, and no help
//! names a Rust item (`EngineArgs::resolve`, a rustdoc link) that only the
//! source knows.

use crate::common::puzzleforge_here;

/// `puzzleforge ARGS --help`, as printed.
fn help(command: &[&str]) -> String {
    let mut args = command.to_vec();
    args.push("--help");
    let output = puzzleforge_here(&args);
    assert!(output.status.success(), "{args:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The names under a help text's `Commands:` heading (without `help`).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The flags and arguments of a help text without help: an entry (a line
/// indented at most 6 spaces that starts with `-` or `<`) with no text
/// after its name on its line or indented below it.
fn entries_without_help(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let is_entry = |l: &str| {
        let t = l.trim_start();
        !t.is_empty() && indent(l) <= 6 && (t.starts_with('-') || t.starts_with('<'))
    };
    let is_heading = |l: &str| !l.starts_with(' ') && l.ends_with(':');
    let mut missing = Vec::new();
    let mut in_args = false;
    for (at, line) in lines.iter().enumerate() {
        if is_heading(line) {
            in_args = *line != "Commands:";
            continue;
        }
        if !in_args || !is_entry(line) {
            continue;
        }
        // Help on the same line follows the name after two spaces or more.
        let same_line = line
            .trim()
            .split("  ")
            .skip(1)
            .any(|t| !t.trim().is_empty());
        let below = lines[at + 1..]
            .iter()
            .take_while(|l| !is_entry(l) && !is_heading(l))
            .any(|l| indent(l) >= 8 && !l.trim().starts_with('['));
        if !same_line && !below {
            missing.push(line.trim().to_string());
        }
    }
    missing
}

#[test]
fn every_command_and_flag_has_help_written_for_users() {
    let mut pending: Vec<Vec<String>> = vec![vec![]];
    let mut commands = 0;
    let mut failures = Vec::new();
    while let Some(command) = pending.pop() {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let text = help(&args);
        commands += 1;
        let name = format!("puzzleforge {}", command.join(" "));
        let about = text.lines().next().unwrap_or_default();
        if about.trim().is_empty() || about.starts_with("Usage:") {
            failures.push(format!("{name}: no description"));
        }
        for entry in entries_without_help(&text) {
            failures.push(format!("{name}: {entry} has no help"));
        }
        for rust in ["::", "[`", "`]"] {
            for line in text.lines().filter(|l| l.contains(rust)) {
                failures.push(format!("{name}: names a Rust item: {}", line.trim()));
            }
        }
        for sub in subcommands(&text) {
            let mut next = command.clone();
            next.push(sub);
            pending.push(next);
        }
    }
    // puzzleforge, its 19 commands, ingest's 2 and bench's 8: every one
    // was read (a command added or removed changes the count here).
    assert_eq!(commands, 1 + 19 + 2 + 8, "commands read");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The parser of the test finds a flag without help, and one with help on
/// its line or below it: the test above can fail.
#[test]
fn a_flag_without_help_is_found() {
    let text = "About\n\nUsage: x\n\nOptions:\n      --seed <SEED>\n\n      --mate <MATE>  Keep mates\n      --out <OUT>\n          Where it goes\n\n  -h, --help\n          Print help\n";
    assert_eq!(entries_without_help(text), ["--seed <SEED>"]);
}

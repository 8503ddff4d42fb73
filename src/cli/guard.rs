//! The gate every output path goes through before a command does any work:
//! the path-valued flags through which each command writes, and the paths
//! a command derives when such a flag is left out. Apart from the flags
//! themselves, since `tests/guards.rs` reads this list against every
//! path-valued flag of the definition.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::ArgMatches;

use crate::stages::release::folder::{Target, guard_output};

/// One path-valued flag through which a command writes.
#[derive(Clone, Copy, Debug)]
pub struct OutputFlag {
    /// The command's words (`ingest puzzles`).
    pub command: &'static str,
    /// The clap id of the flag (its field's name).
    pub id: &'static str,
    /// Whether it names a file or a folder the command fills.
    pub target: Target,
}

const fn output(command: &'static str, id: &'static str, target: Target) -> OutputFlag {
    OutputFlag {
        command,
        id,
        target,
    }
}

/// Every path-valued flag of every command that writes where it points.
/// `run` and `merge` are not here: they write a release themselves, under
/// its lock, and check a finished one instead of writing it
/// (`docs/integrity.md`). `tests/guards.rs` reads every path-valued flag
/// off [`command`] and fails on one that is neither here nor known to be
/// read only, so a new output flag cannot skip the gate.
pub const OUTPUT_FLAGS: &[OutputFlag] = &[
    output("ingest puzzles", "output", Target::File),
    output("ingest puzzles", "rejects", Target::File),
    output("ingest games", "output", Target::File),
    output("selfplay", "output", Target::File),
    output("mine", "output", Target::File),
    output("verify", "output", Target::File),
    output("verify", "puzzles_out", Target::File),
    output("rate", "output", Target::File),
    output("rate", "rejects", Target::File),
    output("tag", "output", Target::File),
    output("tag", "rejects", Target::File),
    output("rate", "save_model", Target::File),
    output("rate", "features", Target::Folder),
    output("rate", "features_out", Target::File),
    output("release", "output", Target::Folder),
    output("export", "output", Target::Folder),
    output("eval", "output", Target::Folder),
    output("compare", "output", Target::Folder),
    output("rollout", "output", Target::Folder),
    output("index", "output", Target::File),
    output("audit", "output", Target::File),
    output("bench generate", "dir", Target::Folder),
    output("bench pgn", "dir", Target::Folder),
];

/// How `--help` shows the flag `id` of `command` (`--output`, or the
/// value's name for a positional argument).
fn flag_name(command: &clap::Command, id: &str) -> String {
    let Some(arg) = command.get_arguments().find(|a| a.get_id() == id) else {
        return id.to_string();
    };
    match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => format!("<{}>", id.to_uppercase()),
    }
}

/// Refuses (exit 2), before the command starts, every output path its
/// flags name that lies in a finished release, a run's folder or behind a
/// link into either ([`guard_output`]), naming the flag. `root` is the
/// definition `matches` was parsed by.
pub fn guard_outputs(root: &clap::Command, matches: &ArgMatches) -> Result<()> {
    let mut words = Vec::new();
    let (mut definition, mut matches) = (root, matches);
    while let Some((name, sub)) = matches.subcommand() {
        words.push(name);
        definition = definition
            .find_subcommand(name)
            .with_context(|| format!("no command `{name}` in the definition it was parsed by"))?;
        matches = sub;
    }
    let words = words.join(" ");
    for flag in OUTPUT_FLAGS.iter().filter(|f| f.command == words) {
        let path = matches
            .try_get_one::<PathBuf>(flag.id)
            .with_context(|| format!("`{words}`: no path flag `{}`", flag.id))?;
        if let Some(path) = path {
            guard_output(path, flag.target, &words, &flag_name(definition, flag.id))?;
        }
    }
    Ok(())
}

/// The rejects file a command writes beside `output` when `--rejects` is
/// left out, through the gate.
pub(super) fn guard_default_rejects(output: &std::path::Path, command: &str) -> Result<()> {
    guard_output(
        &crate::stages::ingest_puzzles::rejects::default_rejects_path(output),
        Target::File,
        command,
        "--rejects (by default the output's name plus .rejects.csv)",
    )
}

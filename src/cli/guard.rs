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
    output("bench generate", "cache", Target::Folder),
    output("bench pgn", "dir", Target::Folder),
    output("reproduce", "scratch", Target::Folder),
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

/// A path a command writes that no flag names: derived from another
/// (`tag`'s rejects beside its output, `mine`'s checkpoint), named by how
/// the flag that would name it reads in an error.
#[derive(Clone, Debug)]
pub struct DerivedOutput {
    /// The flag that would name it, and how the path was derived.
    pub flag: String,
    pub path: PathBuf,
}

/// Refuses (exit 2), before the command starts, every output path its
/// flags name or it derives (`derived`) that lies in a finished release,
/// a run's folder or behind a link into either ([`guard_output`]), naming
/// the flag; then every path it writes that is the same file as another
/// it reads or writes ([`guard_distinct`]). `root` is the definition
/// `matches` was parsed by.
pub fn guard_outputs(
    root: &clap::Command,
    matches: &ArgMatches,
    derived: &[DerivedOutput],
) -> Result<()> {
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
    for output in derived {
        guard_output(&output.path, Target::File, &words, &output.flag)?;
    }
    let mut paths = Vec::new();
    for arg in definition.get_arguments() {
        if arg.get_value_parser().type_id() != std::any::TypeId::of::<PathBuf>() {
            continue;
        }
        let id = arg.get_id().as_str();
        let writes = WRITTEN_WITHOUT_GATE.contains(&(words.as_str(), id))
            || OUTPUT_FLAGS
                .iter()
                .any(|f| f.command == words && f.id == id);
        let values = matches
            .try_get_many::<PathBuf>(id)
            .with_context(|| format!("`{words}`: no path flag `{id}`"))?;
        for path in values.into_iter().flatten() {
            paths.push(NamedPath {
                flag: flag_name(definition, id),
                path: path.clone(),
                writes,
            });
        }
    }
    paths.extend(derived.iter().map(|output| NamedPath {
        flag: output.flag.clone(),
        path: output.path.clone(),
        writes: true,
    }));
    guard_distinct(&words, &paths)
}

/// Path-valued flags a command writes through that are not in
/// [`OUTPUT_FLAGS`] (a release `merge` writes itself, under its lock): no
/// input may be the same file as these either.
pub const WRITTEN_WITHOUT_GATE: &[(&str, &str)] = &[("merge", "output")];

/// A path a command reads or writes, by the flag that names it.
#[derive(Clone, Debug)]
pub struct NamedPath {
    /// The flag (`--rejects`, `<INPUT>`), as an error names it.
    pub flag: String,
    pub path: PathBuf,
    /// Whether the command writes there (else it only reads).
    pub writes: bool,
}

/// What makes two paths one file: the device and inode of what exists
/// (links followed, so a symbolic or hard link is the file it reaches),
/// else the path made absolute with its links and `.`/`..` resolved.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &std::path::Path) -> Identity {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(meta) => Identity::Inode(meta.dev(), meta.ino()),
        Err(_) => Identity::Path(crate::stages::release::folder::resolved(path)),
    }
}

/// The one rule for every path a command writes (outputs, rejects,
/// checkpoints, models, features, caches): never the same file as any
/// path it reads, nor as another path it writes, by identity, not by
/// spelling (`./x.csv` and `x.csv`, a symbolic or hard link and its
/// file). Refuses (exit 2) naming both flags, before any work: writing
/// would destroy the input (a rejects file over its puzzles) or leave one
/// output overwriting the other.
pub fn guard_distinct(command: &str, paths: &[NamedPath]) -> Result<()> {
    let identities: Vec<Identity> = paths.iter().map(|p| identity(&p.path)).collect();
    for (i, written) in paths.iter().enumerate().filter(|(_, p)| p.writes) {
        for (j, other) in paths.iter().enumerate() {
            // Two outputs are compared once; an output with itself never.
            if i == j || (other.writes && j < i) || identities[i] != identities[j] {
                continue;
            }
            let what = match other.writes {
                true => "another output of the command: one would overwrite the other",
                false => "an input of the command: writing it would destroy the input",
            };
            return Err(crate::core::error::bad_input(format!(
                "{} ({}) and {} ({}) are the same file, {what}. `{command}` never writes over \
                 a file it reads, nor one file twice; give {} another path",
                written.path.display(),
                written.flag,
                other.path.display(),
                other.flag,
                written.flag
            )));
        }
    }
    Ok(())
}

/// The rejects file a command writes beside `output` when `--rejects` is
/// left out.
pub(super) fn default_rejects(output: &std::path::Path) -> DerivedOutput {
    DerivedOutput {
        flag: "--rejects (by default the output's name plus .rejects.csv)".to_string(),
        path: crate::stages::ingest_puzzles::rejects::default_rejects_path(output),
    }
}

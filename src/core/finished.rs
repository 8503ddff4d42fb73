//! Finished work on disk, known by its file names alone, and the one rule
//! that keeps every command from writing into it.
//!
//! - A release folder holds `manifest.json` (written last by `split` and by
//!   a run's `release` stage; it lists every other file with its sha256).
//! - A run's folder (`<output_dir>/<release>/`) holds one folder per
//!   committed stage, each with its `stage.json`; its release is finished
//!   once `release/stage.json` is there.
//!
//! A finished release never changes: `run` only checks it (rewriting needs
//! `--rewrite-release`), and no standalone command (`split -o`, `export
//! -o`, `eval -o`, ...) writes into a release folder, into a run's folder or
//! into a folder holding releases. Where a command may write is decided
//! here, once, by [`refuse_finished_target`].

use anyhow::Result;
use std::path::{Component, Path, PathBuf};

use crate::core::error::bad_input;

/// A release folder's manifest, listing its files and their sha256.
pub(crate) const RELEASE_MANIFEST: &str = "manifest.json";
/// The record of one committed stage of a run, in its stage folder.
pub(crate) const STAGE_RECORD: &str = "stage.json";
/// The stage folder of a run that holds its release.
pub(crate) const RELEASE_STAGE: &str = "release";

/// Whether `dir` looks like a release folder, readable or not: it holds a
/// `manifest.json` (whatever is in it), it is a run's committed `release`
/// stage, or it holds train and test puzzles beside a `report/` folder (a
/// `split` whose manifest was lost). Nothing else puzzleforge writes has
/// any of these, so a folder that looks like a release but cannot be read
/// as one is damaged, never something else.
pub(crate) fn looks_like_release(dir: &Path) -> bool {
    let has = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    if has(RELEASE_MANIFEST) {
        return true;
    }
    if dir.file_name().is_some_and(|n| n == RELEASE_STAGE) && has(STAGE_RECORD) {
        return true;
    }
    let split = |name: &str| {
        ["csv", "csv.zst", "jsonl", "jsonl.zst"]
            .iter()
            .any(|ext| has(&format!("{name}.{ext}")))
    };
    split("train") && split("test") && dir.join("report").is_dir()
}

/// Whether `dir` is a run's folder: a (not hidden) folder in it holds a
/// stage record.
pub(crate) fn is_run_folder(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|entry| {
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        !hidden
            && entry.file_type().is_ok_and(|t| t.is_dir())
            && entry.path().join(STAGE_RECORD).is_file()
    })
}

/// Whether the run folder `run_dir` holds a finished release (its release
/// stage committed).
pub(crate) fn run_release_is_finished(run_dir: &Path) -> bool {
    run_dir.join(RELEASE_STAGE).join(STAGE_RECORD).is_file()
}

/// What a command writes at the path it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A folder the command fills (`split`, `export`, `eval`, `rollout`).
    Folder,
    /// One file (`ingest`, `selfplay`, `mine`, `rate`, `verify`, `compare`).
    File,
}

/// Refuses (exit 2) a path `command` would write that is, or is inside, a
/// release folder or a run's folder, a folder that holds a release, or a
/// symbolic link to a folder. The error names the release and the two
/// commands that make a new one instead. A finished release is immutable
/// to every command but `run --rewrite-release`.
pub fn refuse_finished_target(path: &Path, target: Target, command: &str) -> Result<()> {
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link && (target == Target::Folder || path.is_dir()) {
        return Err(bad_input(format!(
            "{} is a symbolic link: `{command}` writes no release or report through a link \
             (it would change the folder the link points at); give a new folder",
            path.display()
        )));
    }
    let resolved = resolved(path);
    let start = match target {
        Target::Folder => resolved.as_path(),
        Target::File => resolved.parent().unwrap_or(Path::new("/")),
    };
    for folder in start.ancestors() {
        if looks_like_release(folder) {
            return Err(written_into(path, command, folder, "the finished release"));
        }
        if is_run_folder(folder) {
            return Err(written_into(path, command, folder, "the run folder"));
        }
    }
    if target == Target::Folder
        && let Some(release) = release_within(&resolved, 3)
    {
        return Err(written_into(
            path,
            command,
            &release,
            "a folder holding the finished release",
        ));
    }
    Ok(())
}

/// `path` made absolute, its `.` and `name/..` removed, with every link of
/// the part of it that exists resolved (the rest, not yet created,
/// appended as written).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut normal = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    let mut existing = normal.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(mut whole) = existing.canonicalize() {
            whole.extend(rest.iter().rev());
            return whole;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return normal,
        }
    }
}

/// The first release folder found in `dir` down to `depth` levels.
fn release_within(dir: &Path, depth: usize) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for sub in dirs {
        if looks_like_release(&sub) {
            return Some(sub);
        }
        if depth > 1
            && let Some(found) = release_within(&sub, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

/// The error of a command asked to write `path`, inside `what` `folder`.
fn written_into(path: &Path, command: &str, folder: &Path, what: &str) -> anyhow::Error {
    bad_input(format!(
        "{}: `{command}` would write into {what} {}, and a finished release never changes. \
         Give `{command}` a new folder outside it, or make a new release with \
         `puzzleforge run --release NEW` (or `puzzleforge split POOL -o NEW`)",
        path.display(),
        folder.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path through `..` and not yet created is judged where it lands.
    #[test]
    fn a_path_is_judged_where_it_lands() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("r");
        std::fs::create_dir_all(&release).unwrap();
        std::fs::write(release.join(RELEASE_MANIFEST), "{}").unwrap();
        let inside = dir.path().join("other/../r/new");
        assert!(refuse_finished_target(&inside, Target::Folder, "split").is_err());
        let beside = dir.path().join("r/../new");
        assert!(refuse_finished_target(&beside, Target::Folder, "split").is_ok());
        assert!(refuse_finished_target(dir.path(), Target::Folder, "split").is_err());
        let file = dir.path().join("pool.csv");
        assert!(refuse_finished_target(&file, Target::File, "ingest puzzles").is_ok());
    }
}

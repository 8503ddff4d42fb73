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
//! here, once, by [`guard_output`], which every output flag goes through.

use anyhow::Result;
use std::path::{Component, Path, PathBuf};

use crate::core::error::bad_input;

/// A release folder's manifest, listing its files and their sha256.
pub(crate) const RELEASE_MANIFEST: &str = "manifest.json";
/// The record of one committed stage of a run, in its stage folder.
pub(crate) const STAGE_RECORD: &str = "stage.json";
/// The stage folder of a run that holds its release.
pub(crate) const RELEASE_STAGE: &str = "release";

/// The registry of the releases of a folder (a run's `output_dir`, the
/// parent of a `split -o` folder): one `sha256  PATH` line per release
/// manifest (PATH relative to the registry's folder, sorted), the format
/// `sha256sum -c` reads. It is the manifests' root of trust outside their
/// release folders: an edit of a release's files together with its
/// manifest is caught by every command that reads the release.
pub(crate) const RELEASES_REGISTRY: &str = "releases.sha256";

/// Records the sha256 of `release_dir`'s manifest in the registry of
/// `holder` (a folder above it), replacing the release's earlier line.
/// Called with the output folder's releases lock held where releases are
/// drawn side by side, so no two writers lose each other's line.
pub(crate) fn register_release(holder: &Path, release_dir: &Path) -> Result<()> {
    let manifest = release_dir.join(RELEASE_MANIFEST);
    let sha256 = crate::core::fileio::sha256_file(&manifest)?;
    let name = registry_name(holder, &manifest)?;
    let registry = holder.join(RELEASES_REGISTRY);
    let mut lines = registry_lines(&registry)?;
    lines.retain(|(_, path)| *path != name);
    lines.push((sha256, name));
    lines.sort_by(|a, b| a.1.cmp(&b.1));
    let text: String = lines
        .iter()
        .map(|(sha256, path)| format!("{sha256}  {path}\n"))
        .collect();
    crate::core::fileio::write_atomic(&registry, text.as_bytes())
}

/// Checks `release_dir`'s manifest against the registry of the folder
/// above it (its parent, for a `split -o` folder; its run's parent, for a
/// run's `release/`), where one records it: a manifest that differs is an
/// error naming both files. A release no registry lists (copied out on its
/// own, or written before registries existed) is not checked here.
pub(crate) fn check_registered(release_dir: &Path) -> Result<()> {
    let manifest = release_dir.join(RELEASE_MANIFEST);
    let absolute = resolved(&manifest);
    for holder in absolute.ancestors().skip(2).take(2) {
        let registry = holder.join(RELEASES_REGISTRY);
        let Ok(name) = registry_name(holder, &absolute) else {
            continue;
        };
        let Some((expected, _)) = registry_lines(&registry)?
            .into_iter()
            .find(|(_, path)| *path == name)
        else {
            continue;
        };
        let actual = crate::core::fileio::sha256_file(&manifest)?;
        if actual != expected {
            return Err(bad_input(format!(
                "{}: its sha256 {actual} is not the {expected} that {} records: the release \
                 was changed after it was written (its files and its manifest together); \
                 restore it from a copy, or write it again (`puzzleforge run --release NAME \
                 --rewrite-release`)",
                manifest.display(),
                registry.display()
            )));
        }
        return Ok(());
    }
    Ok(())
}

/// How the registry of `holder` names `manifest`: its path relative to
/// `holder`, `/`-separated.
fn registry_name(holder: &Path, manifest: &Path) -> Result<String> {
    let holder = resolved(holder);
    let manifest = resolved(manifest);
    let relative = manifest.strip_prefix(&holder).map_err(|_| {
        bad_input(format!(
            "{} is not inside {}",
            manifest.display(),
            holder.display()
        ))
    })?;
    Ok(relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

/// The `(sha256, path)` lines of a registry (none when it does not exist).
fn registry_lines(registry: &Path) -> Result<Vec<(String, String)>> {
    let text = match std::fs::read_to_string(registry) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(bad_input(format!(
                "cannot read the registry of releases {}: {e}",
                registry.display()
            )));
        }
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            line.split_once("  ")
                .filter(|(sha256, _)| {
                    sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit())
                })
                .map(|(sha256, path)| (sha256.to_string(), path.to_string()))
                .ok_or_else(|| {
                    bad_input(format!(
                        "{} line {}: not a `sha256  PATH` line",
                        registry.display(),
                        i + 1
                    ))
                })
        })
        .collect()
}

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

/// The one gate every path-valued output flag of every command goes
/// through before the command does any work: refuses (exit 2) a path
/// `command` would write through `flag` that is, or is inside, a release
/// folder or a run's folder (so any of its stage folders,
/// `<output_dir>/<release>/<stage>/`), a folder that holds a release, or a
/// symbolic link to a folder; a link anywhere on the path is followed, so
/// a link into a release is judged where it leads. The error names the
/// flag, the release and the two commands that make a new one instead. A
/// finished release is immutable to every command but `run
/// --rewrite-release`.
pub fn guard_output(path: &Path, target: Target, command: &str, flag: &str) -> Result<()> {
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link && (target == Target::Folder || path.is_dir()) {
        return Err(bad_input(format!(
            "{} ({flag}) is a symbolic link: `{command}` writes no release or report through \
             a link (it would change the folder the link points at); give a new folder",
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
            return Err(written_into(
                path,
                command,
                flag,
                folder,
                "the finished release",
            ));
        }
        if is_run_folder(folder) {
            return Err(written_into(path, command, flag, folder, "the run folder"));
        }
    }
    if target == Target::Folder
        && let Some(release) = release_within(&resolved, 3)
    {
        return Err(written_into(
            path,
            command,
            flag,
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

/// The error of a command asked to write `path` (given by `flag`), inside
/// `what` `folder`.
fn written_into(
    path: &Path,
    command: &str,
    flag: &str,
    folder: &Path,
    what: &str,
) -> anyhow::Error {
    bad_input(format!(
        "{}: `{command} {flag}` would write into {what} {}, and a finished release never \
         changes. Give {flag} a path outside it, or make a new release with \
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
        assert!(guard_output(&inside, Target::Folder, "split", "-o").is_err());
        let beside = dir.path().join("r/../new");
        assert!(guard_output(&beside, Target::Folder, "split", "-o").is_ok());
        assert!(guard_output(dir.path(), Target::Folder, "split", "-o").is_err());
        let file = dir.path().join("pool.csv");
        assert!(guard_output(&file, Target::File, "ingest puzzles", "-o").is_ok());
    }
}

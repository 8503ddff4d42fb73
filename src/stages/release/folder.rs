//! A release folder, the one type every command asks what a release is
//! ([`ReleaseFolder`]), and finished work on disk known by its file names
//! alone, with the one rule that keeps every command from writing into it
//! ([`guard_output`]). Apart because these rules were spread over six
//! files in three rooms; `card.rs` now writes only the release's files.
//!
//! - A release folder holds `manifest.json` (written last by `release` and by
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
use crate::core::fileio::sha256_file;
use crate::stages::release::manifest::{MANIFEST_FILE, ReleaseManifest, ReleaseOutputs};

/// A release folder (`split -o`'s folder, a run's `release/` stage
/// folder) and what every command asks of one: is it a release, are its
/// files the ones its manifest lists, which are its puzzle files, which
/// releases lie under a folder, and its manifest registered above it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReleaseFolder<'a> {
    dir: &'a Path,
}

impl<'a> ReleaseFolder<'a> {
    pub(crate) fn at(dir: &'a Path) -> Self {
        Self { dir }
    }

    /// It holds a puzzleforge release manifest.
    pub(crate) fn is_release(self) -> bool {
        is_release_dir(self.dir)
    }

    /// It looks like a release by its files alone, readable or not (see
    /// [`looks_like_release`]).
    pub(crate) fn looks_like_release(self) -> bool {
        looks_like_release(self.dir)
    }

    /// Every file its manifest lists against its sha256, no file it does
    /// not list, and the manifest against the registry above it (exit 2,
    /// naming the file); a folder without a manifest is not checked.
    pub(crate) fn check(self) -> Result<()> {
        check_release_files(self.dir)
    }

    /// Its puzzle files: `train` and `test`, CSV preferred.
    pub(crate) fn split_files(self) -> Vec<PathBuf> {
        split_files(self.dir)
    }

    /// Records its manifest's sha256 in the registry of `holder`.
    pub(crate) fn register_in(self, holder: &Path) -> Result<()> {
        register_release(holder, self.dir)
    }

    /// The release folders under `root` (up to three levels down), sorted,
    /// skipping `own` (see [`find_releases`]).
    pub(crate) fn find_under(root: &Path, own: &Path) -> Result<Vec<PathBuf>> {
        find_releases(root, own)
    }
}

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
fn register_release(holder: &Path, release_dir: &Path) -> Result<()> {
    let manifest = release_dir.join(MANIFEST_FILE);
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
fn check_registered(release_dir: &Path) -> Result<()> {
    let manifest = release_dir.join(MANIFEST_FILE);
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

/// Reads the registry of releases of `holder` (a run's `output_dir`), so
/// that one that cannot be read, or a folder standing at its name, is
/// explained (exit 2, with the command that repairs it) before any work,
/// not at the release stage.
pub(crate) fn check_registry(holder: &Path) -> Result<()> {
    registry_lines(&holder.join(RELEASES_REGISTRY)).map(|_| ())
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
        Err(_) if registry.is_dir() => {
            let holder = registry.parent().unwrap_or(Path::new("."));
            return Err(bad_input(format!(
                "{} is a folder where the registry of releases of {} goes: a release (or \
                 another folder) was given the registry's name, which puzzleforge now refuses, \
                 so no release of that folder can be recorded. Rename the folder, and the next \
                 release writes the registry: `mv {} {}`",
                registry.display(),
                holder.display(),
                registry.display(),
                holder.join("releases-renamed").display()
            )));
        }
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
/// `release` whose manifest was lost). Nothing else puzzleforge writes has
/// any of these, so a folder that looks like a release but cannot be read
/// as one is damaged, never something else.
pub(crate) fn looks_like_release(dir: &Path) -> bool {
    let has = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    if has(MANIFEST_FILE) {
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

/// The folder that holds `dir` (a release folder, or a run's folder of
/// stages): its parent, or `.` for a name without one. Its registry of
/// releases, its releases lock and the releases beside `dir` are there.
pub(crate) fn holding_folder(dir: &Path) -> &Path {
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Whether the run folder `run_dir` holds a finished release (its release
/// stage committed).
pub(crate) fn run_release_is_finished(run_dir: &Path) -> bool {
    run_dir.join(RELEASE_STAGE).join(STAGE_RECORD).is_file()
}

/// What a command writes at the path it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A folder the command fills (`release`, `export`, `eval`, `rollout`).
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
    if target == Target::Folder && path.file_name().is_some_and(|n| n == RELEASES_REGISTRY) {
        return Err(bad_input(format!(
            "{} ({flag}): a folder named {RELEASES_REGISTRY} would stand where its parent's \
             registry of releases goes, and no release there could be recorded; give \
             another name",
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
pub(crate) fn resolved(path: &Path) -> PathBuf {
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
         `puzzleforge run --release NEW` (or `puzzleforge release POOL -o NEW`)",
        path.display(),
        folder.display()
    ))
}

/// True when `dir` holds a puzzleforge release manifest.
fn is_release_dir(dir: &Path) -> bool {
    ReleaseManifest::is_in(dir)
}

/// Checks every file the release manifest of `dir` lists against its
/// sha256, so that a damaged release (a truncated `test.csv`) is refused
/// (exit 2, naming the file) before anything reads it. A folder without a
/// `manifest.json` is not a puzzleforge release and is not checked.
fn check_release_files(dir: &Path) -> Result<()> {
    check_registered(dir)?;
    let manifest_path = dir.join(MANIFEST_FILE);
    let Some(manifest) = ReleaseManifest::load_as::<ReleaseOutputs>(dir)? else {
        return Ok(());
    };
    let Some(outputs) = &manifest.outputs else {
        return Err(bad_input(format!(
            "{}: a release manifest without \"outputs\"",
            manifest_path.display()
        )));
    };
    for (name, expected) in outputs {
        let path = dir.join(name);
        let actual = sha256_file(&path).map_err(|e| {
            bad_input(format!(
                "{}: listed in {} but cannot be read: {e:#}",
                path.display(),
                manifest_path.display()
            ))
        })?;
        if &actual != expected {
            return Err(bad_input(format!(
                "{}: its sha256 {actual} is not the {expected} that {} records: the release is damaged (restore it, or write it again)",
                path.display(),
                manifest_path.display()
            )));
        }
    }
    // A file the manifest does not list was put there after the release
    // was written (or is left from another one): readers that take every
    // file of the folder (an export's copy, a reader globbing `*.csv`)
    // would take it for the release's, so it is damage like an edit.
    for name in files_in(dir)? {
        let known = name == MANIFEST_FILE || name == STAGE_RECORD || outputs.contains_key(&name);
        if !known {
            return Err(bad_input(format!(
                "{}: a file that {} does not list: the release is damaged (move the file out \
                 of the release folder, or write the release again)",
                dir.join(&name).display(),
                manifest_path.display()
            )));
        }
    }
    Ok(())
}

/// The files under `dir` (its folders walked, links not followed), each
/// named as a manifest names it: relative to `dir`, `/`-separated.
fn files_in(dir: &Path) -> Result<Vec<String>> {
    // The parent of a bare file name (`train.csv`, run in the release's
    // folder) is the empty path: the current folder.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut names = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let folder = dir.join(&relative);
        let entries = std::fs::read_dir(&folder)
            .map_err(|e| bad_input(format!("cannot list {}: {e}", folder.display())))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| bad_input(format!("cannot list {}: {e}", folder.display())))?;
            let name = relative.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(name);
            } else {
                let parts: Vec<String> = name
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                names.push(parts.join("/"));
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The puzzle files of a release: `train` and `test`, CSV preferred, JSON
/// Lines when the CSV is absent.
fn split_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for split in ["train", "test"] {
        for ext in ["csv", "csv.zst", "jsonl", "jsonl.zst"] {
            let path = dir.join(format!("{split}.{ext}"));
            if path.is_file() {
                files.push(path);
                break;
            }
        }
    }
    files
}

/// Release folders under `root` (up to three levels down), sorted, skipping
/// `own` (the folder being written).
///
/// Exclusion never degrades to nothing: a folder that looks like a
/// release but cannot be read as one (its `manifest.json` missing,
/// corrupt or not a release's), and a symbolic link to a folder holding a
/// release, are errors (exit 2) naming the folder and the two ways out,
/// never skipped; so is a `root` that cannot be read.
fn find_releases(root: &Path, own: &Path) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, depth: usize, own: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| bad_input(format!("cannot read the folder {}: {e}", dir.display())))?;
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Shard folders of `run --shard` hold no release.
            if name.starts_with('.')
                || name == "target"
                || crate::core::shard::is_shard_folder_name(&name)
            {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                dirs.push((path, false));
            } else if kind.is_symlink() && path.is_dir() {
                dirs.push((path, true));
            }
        }
        dirs.sort();
        for (sub, link) in dirs {
            let same = sub
                .canonicalize()
                .ok()
                .zip(own.canonicalize().ok())
                .is_some_and(|(a, b)| a == b);
            if same {
                continue;
            }
            if link {
                if holds_release(&sub, depth) {
                    return Err(linked_release_error(&sub));
                }
                continue;
            }
            if looks_like_release(&sub) {
                if !is_release_dir(&sub) {
                    return Err(unreadable_release_error(&sub));
                }
                found.push(sub.clone());
            }
            if depth > 1 {
                walk(&sub, depth - 1, own, found)?;
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    // An output folder not made yet (`run --plan`) holds no release.
    if std::fs::symlink_metadata(root).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(found);
    }
    walk(root, 3, own, &mut found)?;
    Ok(found)
}

/// Whether `dir` (a link followed) is or holds, `depth` levels down, a
/// folder that looks like a release.
fn holds_release(dir: &Path, depth: usize) -> bool {
    if looks_like_release(dir) {
        return true;
    }
    depth > 1
        && std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .filter_map(|e| e.ok())
                .any(|e| e.path().is_dir() && holds_release(&e.path(), depth - 1))
        })
}

/// The error of a release folder whose manifest cannot be read: a
/// release drawn now could not exclude its puzzles.
fn unreadable_release_error(dir: &Path) -> anyhow::Error {
    let manifest = dir.join(MANIFEST_FILE);
    let why = match ReleaseManifest::load(dir) {
        Err(e) => format!("{e:#}"),
        Ok(_) if std::fs::symlink_metadata(&manifest).is_err() => {
            format!("{} is missing", manifest.display())
        }
        Ok(_) => format!("{} is not a release manifest", manifest.display()),
    };
    bad_input(format!(
        "{} looks like a release but cannot be read ({why}), so a new release could not \
         exclude its puzzles; nothing was drawn. Either restore it (its manifest.json from a \
         copy, or write it again with `puzzleforge run --release NAME --rewrite-release`), \
         or move it out of this output folder",
        dir.display()
    ))
}
/// The error of a symbolic link to a release among the releases.
fn linked_release_error(link: &Path) -> anyhow::Error {
    bad_input(format!(
        "{} is a symbolic link to a release folder: puzzleforge reads no release through a \
         link (another path may write it unseen); nothing was drawn. Either move the folder \
         itself here in place of the link, or remove the link",
        link.display()
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
        std::fs::write(release.join(MANIFEST_FILE), "{}").unwrap();
        let inside = dir.path().join("other/../r/new");
        assert!(guard_output(&inside, Target::Folder, "split", "-o").is_err());
        let beside = dir.path().join("r/../new");
        assert!(guard_output(&beside, Target::Folder, "split", "-o").is_ok());
        assert!(guard_output(dir.path(), Target::Folder, "split", "-o").is_err());
        let file = dir.path().join("pool.csv");
        assert!(guard_output(&file, Target::File, "ingest puzzles", "-o").is_ok());
    }

    /// A release's files are checked against its `outputs` whatever else
    /// its manifest holds (an earlier version's keys).
    #[test]
    fn files_are_checked_against_any_release_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("test.csv"), "PuzzleId\n").unwrap();
        let sha = sha256_file(&dir.path().join("test.csv")).unwrap();
        let manifest = |sha: &str| {
            serde_json::json!({"kind": crate::stages::release::manifest::MANIFEST_KIND, "seed": 1,
                "outputs": {"test.csv": sha}})
            .to_string()
        };
        std::fs::write(dir.path().join("manifest.json"), manifest(&sha)).unwrap();
        check_release_files(dir.path()).unwrap();
        std::fs::write(dir.path().join("manifest.json"), manifest("00")).unwrap();
        let error = check_release_files(dir.path()).unwrap_err().to_string();
        assert!(error.contains("the release is damaged"), "{error}");
    }
}

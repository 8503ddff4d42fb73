//! The locks of an output folder: one run (or merge) at a time writes a
//! release folder, one release at a time draws in an output folder, one
//! process at a time plays a batch of the generation store.
//!
//! Each lock is an OS file lock (`flock`) on a file: the kernel grants it
//! to exactly one of any number of simultaneous starts and drops it when
//! its holder exits, however it exits. The file's text (pid, host, start
//! time, a random token) only explains who holds it; a lock file nobody
//! holds a lock on is free, so a reused pid never blocks a run.
//!
//! - `<release>/.lock` ([`ReleaseLock`]), held for the whole run: a second
//!   start on the same release exits 2 naming the holder.
//! - `<output_dir>/.releases.lock` ([`lock_releases`]), held while a
//!   release stage decides what it excludes, draws and commits: releases
//!   of one output folder drawn at the same time take turns, and each
//!   sees every release finished before its turn.
//! - `<store>/.batch-FIRST-LAST.lock`, held while a batch is played: a
//!   second run wanting the same batch waits and takes the first's.
//!
//! A lock file is opened without following a symbolic link (a link there
//! is an error naming it): on a shared folder, or as root, following one
//! would overwrite whatever file it points at.

use anyhow::Result;
use std::path::Path;

use crate::core::error::bad_input;
pub(crate) use crate::core::lock::FileLock;

/// Holds `<release>/.lock` locked until dropped; the file is removed then.
pub(crate) struct ReleaseLock {
    _lock: FileLock,
}

impl ReleaseLock {
    /// Takes the lock of `release_dir`, or fails (exit 2) naming the run
    /// that holds it and how to recover.
    pub(crate) fn acquire(release_dir: &Path) -> Result<Self> {
        let path = release_dir.join(".lock");
        match FileLock::try_take(&path)? {
            Some(lock) => Ok(Self { _lock: lock }),
            None => Err(held_error(release_dir, &path)),
        }
    }
}

/// Takes the output folder's lock (`<output_dir>/.releases.lock`, beside
/// `release_dir`), waiting for a release drawn there at the same time.
pub(crate) fn lock_releases(release_dir: &Path) -> Result<FileLock> {
    FileLock::wait(
        &crate::stages::release::folder::holding_folder(release_dir).join(".releases.lock"),
        "another release drawing in the same output folder",
    )
}

/// The error of a start that finds the lock held: who holds it (as its
/// record says) and what to do.
fn held_error(release_dir: &Path, path: &Path) -> anyhow::Error {
    let owner = crate::core::lock::holder(path);
    bad_input(format!(
        "{} is being written by another run ({}); wait for it to finish. \
         The lock is held by a live process: if that process is stuck, stop it \
         and rerun (a lock file that no process holds is free and needs no removal)",
        release_dir.display(),
        if owner.is_empty() {
            format!("lock {}", path.display())
        } else {
            format!("lock {}: {owner}", path.display())
        }
    ))
}

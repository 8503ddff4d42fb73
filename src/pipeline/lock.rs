//! The release lock: one run (or merge) at a time writes a release folder.
//!
//! The lock is an OS file lock (`flock`) on `<release>/.lock`, held for the
//! whole run: the kernel grants it to exactly one of any number of
//! simultaneous starts and drops it when its holder exits, however it
//! exits. The file's text (pid, host, start time, a random token) only
//! explains who holds it; a lock file nobody holds a lock on is free, so a
//! reused pid never blocks a run.

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;

/// Holds `<release>/.lock` locked until dropped; the file is removed then.
pub(crate) struct ReleaseLock {
    path: PathBuf,
    /// The locked file: closing it releases the lock.
    file: Option<File>,
}

impl ReleaseLock {
    /// Takes the lock of `release_dir`, or fails (exit 2) naming the run
    /// that holds it and how to recover.
    pub(crate) fn acquire(release_dir: &Path) -> Result<Self> {
        let path = release_dir.join(".lock");
        // A holder removes the file when it is done; a start that locked
        // the file just before it was removed holds a lock on nothing, so it
        // tries again on the new file.
        for _ in 0..100 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .with_context(|| format!("opening lock {}", path.display()))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Err(held_error(release_dir, &path)),
                Err(TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("locking {}", path.display()));
                }
            }
            if !same_file(&file, &path) {
                continue;
            }
            record_owner(&file, &path)?;
            return Ok(Self {
                path,
                file: Some(file),
            });
        }
        Err(bad_input(format!(
            "could not take the lock {}: it keeps being replaced",
            path.display()
        )))
    }
}

impl Drop for ReleaseLock {
    fn drop(&mut self) {
        // Removed while still locked, so no other start can lock this file
        // and then find it gone unnoticed (it checks it is the same file).
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// Whether the open `file` is still the one at `path`.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Writes who holds the lock into it, for the message another start shows.
fn record_owner(mut file: &File, path: &Path) -> Result<()> {
    let started = httpdate::fmt_http_date(std::time::SystemTime::now());
    let text = format!(
        "pid {}\nhost {}\nstarted {started}\ntoken {:016x}\n",
        std::process::id(),
        host_name(),
        rand::random::<u64>()
    );
    file.set_len(0)
        .and_then(|()| file.write_all(text.as_bytes()))
        .and_then(|()| file.flush())
        .with_context(|| format!("writing lock {}", path.display()))
}

/// This machine's name, for the lock's record (and the batch store's
/// scratch names).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The error of a start that finds the lock held: who holds it (as its
/// record says) and what to do.
fn held_error(release_dir: &Path, path: &Path) -> anyhow::Error {
    let owner = std::fs::read_to_string(path)
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
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

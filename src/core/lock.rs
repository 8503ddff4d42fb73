//! An OS file lock (`flock`) on a file: the kernel grants it to exactly one
//! of any number of simultaneous starts and drops it when its holder
//! exits, however it exits. The file's text (pid, host, start time, a
//! random token) only explains who holds it; a lock file nobody holds a
//! lock on is free, so a reused pid never blocks a start.
//!
//! A lock file is opened without following a symbolic link (a link there
//! is an error naming it): on a shared folder, or as root, following one
//! would overwrite whatever file it points at.

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::link_error;

/// Holds a lock file locked until dropped; the file is removed then.
pub(crate) struct FileLock {
    path: PathBuf,
    /// The locked file: closing it releases the lock.
    file: Option<File>,
}

impl FileLock {
    /// Takes the lock at `path`; `None` when another process holds it.
    pub(crate) fn try_take(path: &Path) -> Result<Option<FileLock>> {
        Self::take(path, false)
    }

    /// Takes the lock at `path`, waiting while another process holds it
    /// (said once on stderr, naming `what` is waited for).
    pub(crate) fn wait(path: &Path, what: &str) -> Result<FileLock> {
        if let Some(lock) = Self::take(path, false)? {
            return Ok(lock);
        }
        eprintln!("waiting for {what} ({})", path.display());
        Self::take(path, true)?.ok_or_else(|| anyhow::anyhow!("{}: not locked", path.display()))
    }

    fn take(path: &Path, block: bool) -> Result<Option<FileLock>> {
        // A holder removes the file when it is done; a start that locked
        // the file just before it was removed holds a lock on nothing, so it
        // tries again on the new file.
        for _ in 0..100 {
            let file = open_no_follow(path)?;
            if block {
                file.lock()
                    .with_context(|| format!("locking {}", path.display()))?;
            } else {
                match file.try_lock() {
                    Ok(()) => {}
                    Err(TryLockError::WouldBlock) => return Ok(None),
                    Err(TryLockError::Error(e)) => {
                        return Err(e).with_context(|| format!("locking {}", path.display()));
                    }
                }
            }
            if !same_file(&file, path) {
                continue;
            }
            record_owner(&file, path)?;
            return Ok(Some(FileLock {
                path: path.to_path_buf(),
                file: Some(file),
            }));
        }
        Err(bad_input(format!(
            "could not take the lock {}: it keeps being replaced",
            path.display()
        )))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still locked, so no other start can lock this file
        // and then find it gone unnoticed (it checks it is the same file).
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// Opens (creating) the lock file at `path` for writing, refusing a
/// symbolic link there and anything but a regular file.
fn open_no_follow(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(link_error(path)),
        Err(e) => return Err(e).with_context(|| format!("opening lock {}", path.display())),
    };
    let is_file = file.metadata().is_ok_and(|m| m.file_type().is_file());
    if !is_file {
        return Err(bad_input(format!(
            "{} is not a regular file: puzzleforge writes its lock there; remove it",
            path.display()
        )));
    }
    Ok(file)
}

/// Whether the open `file` is still the one at `path` (a link there is
/// not followed).
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
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

/// Who holds the lock file at `path`, as its record says (its words on one
/// line; empty when it cannot be read).
pub(crate) fn holder(path: &Path) -> String {
    std::fs::read_to_string(path)
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

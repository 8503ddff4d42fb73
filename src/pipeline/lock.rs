//! The release lock: one run at a time writes a release folder.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;

/// Stops two runs writing one release. The lock file holds the owner's
/// pid; a lock whose process is gone is stale and taken over.
pub(crate) struct ReleaseLock {
    path: PathBuf,
}

impl ReleaseLock {
    pub(crate) fn acquire(release_dir: &Path) -> Result<Self> {
        let path = release_dir.join(".lock");
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    use std::io::Write;
                    writeln!(file, "{}", std::process::id())?;
                    return Ok(Self { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|text| text.trim().parse::<u32>().ok());
                    match owner {
                        Some(pid) if process_alive(pid) => {
                            return Err(bad_input(format!(
                                "{} is being written by process {pid} (lock {})",
                                release_dir.display(),
                                path.display()
                            )));
                        }
                        _ => {
                            // The owner died without cleaning up: stale.
                            std::fs::remove_file(&path).with_context(|| {
                                format!("removing stale lock {}", path.display())
                            })?;
                        }
                    }
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("creating lock {}", path.display()));
                }
            }
        }
        Err(bad_input(format!(
            "could not take the lock {}",
            path.display()
        )))
    }
}

impl Drop for ReleaseLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

//! Mining's checkpoint: each finished game's result, written as the games
//! finish, so that a `mine` killed after hours keeps its work and the same
//! command run again mines only the games left. A standalone `mine` and
//! the pipeline's `mine` stage keep one alike (generation resumes by
//! batch, whose games are few).
//!
//! The file is a header line with the fingerprint of what the results
//! depend on, then one line per finished game. A standalone `mine`'s sits
//! beside the output (`OUTPUT.checkpoint.jsonl`), its fingerprint made of
//! the input's bytes, the `[mine]` settings, the engine's build and
//! options; the stage's sits in the release folder (beside the stage's
//! scratch folder, which a killed run's successor removes), its
//! fingerprint the stage's own. A result is the same bytes whichever run found
//! it (searches are limited by nodes), so the output of a resumed run is
//! byte for byte the output of one run. A checkpoint of other inputs or
//! settings is set aside, never mixed in; a line cut short by a kill is
//! dropped and its game mined again. The file goes when the output is
//! written.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use super::config::MineConfig;
use super::results::UnitResult;
use crate::core::fileio::{sha256_bytes, sha256_file};
use crate::engine::process::EngineSpec;

/// Games mined between two writes of the checkpoint, per engine worker:
/// small enough that a kill loses minutes, large enough that the workers
/// rarely wait on the slowest game of a chunk.
pub(crate) const GAMES_PER_WORKER_PER_CHUNK: usize = 8;

#[derive(Serialize, Deserialize)]
struct Header {
    checkpoint: String,
    fingerprint: String,
    units: usize,
    /// The build that started the checkpoint: recorded, never compared
    /// (the fingerprint holds mining's algorithm version).
    #[serde(default)]
    build: String,
}

#[derive(Serialize, Deserialize)]
struct Line {
    unit: usize,
    result: UnitResult,
}

/// Where a mining run keeps its checkpoint, and the fingerprint a former
/// run's checkpoint must have to be resumed.
pub(crate) struct CheckpointAt {
    pub(crate) path: PathBuf,
    pub(crate) fingerprint: String,
}

/// The checkpoint of one mining run.
pub(crate) struct Checkpoint {
    path: PathBuf,
    file: std::fs::File,
    /// Finished units' results, by unit index.
    pub done: BTreeMap<usize, UnitResult>,
}

/// `OUTPUT.checkpoint.jsonl`.
pub(crate) fn checkpoint_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".checkpoint.jsonl");
    PathBuf::from(name)
}

/// What a game's result depends on: the input's bytes, the settings, the
/// engine's build and options.
pub(crate) fn fingerprint(
    input: &Path,
    config: &MineConfig,
    engine: &EngineSpec,
) -> Result<String> {
    let parts = serde_json::json!({
        "input": sha256_file(input)?,
        "mine": config,
        "engine": sha256_file(&engine.path)?,
        "options": engine.options,
        "version": env!("CARGO_PKG_VERSION"),
        "algorithm": format!("{}{}", super::config::ALGORITHM, crate::engine::criterion::rule_variant()),
    });
    Ok(sha256_bytes(parts.to_string().as_bytes()))
}

impl Checkpoint {
    /// Opens the checkpoint `at`, keeping the results of a former run with
    /// the same fingerprint and `units`; any other file there is replaced.
    pub(crate) fn open(at: &CheckpointAt, units: usize) -> Result<Self> {
        let (path, fingerprint) = (at.path.clone(), at.fingerprint.as_str());
        let header = Header {
            checkpoint: "puzzleforge mine".into(),
            fingerprint: fingerprint.into(),
            units,
            build: crate::core::build::BUILD.to_string(),
        };
        let mut done = BTreeMap::new();
        let mut kept_bytes = 0u64;
        if let Ok(file) = std::fs::File::open(&path) {
            let mut lines = std::io::BufReader::new(file).lines();
            let same = lines
                .next()
                .and_then(|l| l.ok())
                .and_then(|l| {
                    serde_json::from_str::<Header>(&l)
                        .ok()
                        .map(|h| (h, l.len()))
                })
                .filter(|(h, _)| {
                    (&h.checkpoint, &h.fingerprint, h.units)
                        == (&header.checkpoint, &header.fingerprint, header.units)
                });
            if let Some((_, header_len)) = same {
                kept_bytes = header_len as u64 + 1;
                for line in lines {
                    // A line a kill cut short ends the file's good part.
                    let Ok(text) = line else { break };
                    let Ok(entry) = serde_json::from_str::<Line>(&text) else {
                        break;
                    };
                    if entry.unit >= units {
                        break;
                    }
                    kept_bytes += text.len() as u64 + 1;
                    done.insert(entry.unit, entry.result);
                }
            }
        }
        let file = if kept_bytes > 0 {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            file.set_len(kept_bytes)
                .with_context(|| format!("trimming {}", path.display()))?;
            let mut file = file;
            std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
            file
        } else {
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder)
                    .with_context(|| format!("creating {}", folder.display()))?;
            }
            let mut file = std::fs::File::create(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            writeln!(file, "{}", serde_json::to_string(&header)?)?;
            file
        };
        Ok(Self { path, file, done })
    }

    /// Records finished units' results (flushed before it returns).
    pub(crate) fn record(&mut self, results: &[(usize, &UnitResult)]) -> Result<()> {
        let mut text = String::new();
        for (unit, result) in results {
            text.push_str(&serde_json::to_string(&Line {
                unit: *unit,
                result: (*result).clone(),
            })?);
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Removes the file once the output is written.
    pub(crate) fn finish(self) -> Result<()> {
        drop(self.file);
        std::fs::remove_file(&self.path)
            .with_context(|| format!("removing {}", self.path.display()))
    }
}

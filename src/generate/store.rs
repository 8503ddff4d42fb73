//! The batch store: a store's finished batches (`batch-FIRST-LAST/`), the
//! record each holds (`batch.json`, with the sha256 of its files), the
//! check of those files before a batch is used, and the scratch folders a
//! batch is written in before it is moved into place. Apart because it is
//! the format on disk that every run, shard and merge reads; playing a
//! batch is [`super::play`], taking batches in order [`super::walk`].

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::{left_by_dead_process, sha256_file, write_atomic};
use crate::stages::StageName;

use super::config::{Engine, Sections, Settings};

/// One finished batch in the store.
#[derive(Clone, Debug)]
pub(super) struct Batch {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) dir: PathBuf,
    pub(super) cpu_seconds: f64,
}

/// The games `[first, last]` taken from one batch.
#[derive(Clone, Debug)]
pub(super) struct Segment {
    pub(super) batch: Batch,
    pub(super) first: u64,
    pub(super) last: u64,
}

/// The store a run of these settings uses: this build's own key, or,
/// under `--keep-stored-work`, a store of the same settings whose batches
/// other algorithm versions played.
pub(super) struct StoreChoice {
    pub(super) key: String,
    /// What the key hashes, as the store's `settings.json` says.
    pub(super) described: Value,
    /// A store of the same settings played by other algorithm versions
    /// that holds batches: the one used (kept), or the one passed over.
    pub(super) other: Option<OtherStore>,
}

/// A store of the same settings as this build's, played by other
/// algorithm versions.
pub(super) struct OtherStore {
    pub(super) key: String,
    pub(super) batches: usize,
    /// The versions that differ, there and here (`mine-1`,
    /// `mine-1+min-gap-250`), each as `step: version` pairs joined.
    pub(super) recorded: String,
    pub(super) this_build: String,
    pub(super) kept: bool,
}

impl OtherStore {
    /// The line a run prints about it.
    pub(super) fn line(&self, ours: &str) -> String {
        let what = format!(
            "the {} batch{} stored under .generate/{} were played by other algorithms ({} there, {} here)",
            self.batches,
            if self.batches == 1 { "" } else { "es" },
            self.key,
            self.recorded,
            self.this_build
        );
        if self.kept {
            format!(
                "generation: {what}; reused, as --keep-stored-work asks (the release records it)"
            )
        } else {
            format!(
                "generation: {what}; their games are played again into .generate/{ours} (run --keep-stored-work would reuse them)"
            )
        }
    }
}

/// Which store these settings use ([`StoreChoice`]).
pub(super) fn store_of(
    config: &Sections<'_>,
    settings: &Settings,
    engine: Engine,
) -> Result<StoreChoice> {
    let (key, described) = settings.key(engine)?;
    // Passed over, the other store is named when this build's store is
    // new: the run that plays again what the other had played.
    let own =
        stored_batches(&config.output_dir.join(".generate").join(&key)).map_or(0, |b| b.len());
    let Some((other_key, other_described, batches)) =
        other_algorithms_store(config.output_dir, &key, &described)
            .filter(|_| config.keep_stored_work || own == 0)
    else {
        return Ok(StoreChoice {
            key,
            described,
            other: None,
        });
    };
    let versions = |settings: &Value| -> BTreeMap<String, String> {
        serde_json::from_value(settings["algorithms"].clone()).unwrap_or_default()
    };
    let (there, here) = (versions(&other_described), versions(&described));
    let differing = |of: &BTreeMap<String, String>, other: &BTreeMap<String, String>| {
        let names: std::collections::BTreeSet<&String> = of.keys().chain(other.keys()).collect();
        names
            .into_iter()
            .filter(|name| of.get(*name) != other.get(*name))
            .map(|name| format!("{name}: {}", of.get(name).map_or("none", String::as_str)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let other = OtherStore {
        key: other_key,
        batches,
        recorded: differing(&there, &here),
        this_build: differing(&here, &there),
        kept: config.keep_stored_work,
    };
    Ok(if other.kept {
        StoreChoice {
            key: other.key.clone(),
            described: other_described,
            other: Some(other),
        }
    } else {
        StoreChoice {
            key,
            described,
            other: Some(other),
        }
    })
}

/// The store under `output_dir/.generate` (not `key`'s) whose settings are
/// `described`'s but for the algorithm versions, holding the most stored
/// batches (the first by key among equals): its key, its settings and
/// its batches.
fn other_algorithms_store(
    output_dir: &Path,
    key: &str,
    described: &Value,
) -> Option<(String, Value, usize)> {
    let strip = |settings: &Value| {
        let mut settings = settings.clone();
        if let Some(table) = settings.as_object_mut() {
            table.remove("algorithms");
        }
        settings
    };
    let ours = strip(described);
    let mut entries: Vec<_> = std::fs::read_dir(output_dir.join(".generate"))
        .ok()?
        .filter_map(|entry| entry.ok())
        .map(|entry| {
            (
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            )
        })
        .filter(|(name, _)| name != key && !name.starts_with('.'))
        .collect();
    entries.sort();
    let mut best: Option<(String, Value, usize)> = None;
    for (name, dir) in entries {
        let Some(theirs) = std::fs::read(dir.join("settings.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        else {
            continue;
        };
        if strip(&theirs) != ours || theirs.get("algorithms") == described.get("algorithms") {
            continue;
        }
        let batches = stored_batches(&dir).map(|b| b.len()).unwrap_or(0);
        if batches > 0 && best.as_ref().is_none_or(|(_, _, most)| batches > *most) {
            best = Some((name, theirs, batches));
        }
    }
    best
}

/// The store of these settings under the output folder ([`store_of`]),
/// created with a `settings.json` saying what its key hashes; its dead
/// scratch removed. A store of the same settings played by other
/// algorithm versions is named in a line, reused or passed over.
pub(super) fn open_store(
    config: &Sections<'_>,
    settings: &Settings,
    engine: Engine,
) -> Result<(PathBuf, String)> {
    let StoreChoice {
        key,
        described,
        other,
    } = store_of(config, settings, engine)?;
    if let Some(other) = other {
        crate::core::progress::note(&other.line(&key));
    }
    let store = config.output_dir.join(".generate").join(&key);
    std::fs::create_dir_all(&store).with_context(|| format!("creating {}", store.display()))?;
    let described_path = store.join("settings.json");
    if !described_path.is_file() {
        write_atomic(
            &described_path,
            format!("{}\n", serde_json::to_string_pretty(&described)?).as_bytes(),
        )?;
    }
    remove_dead_scratch(&store)?;
    Ok((store, key))
}

/// The stored batch holding game `game`.
pub(super) fn covering(batches: &BTreeMap<u64, Batch>, game: u64) -> Option<Batch> {
    batches
        .range(..=game)
        .next_back()
        .map(|(_, b)| b)
        .filter(|b| b.last >= game)
        .cloned()
}

/// The first stored batch starting after `game`.
pub(super) fn next_stored_start(batches: &BTreeMap<u64, Batch>, game: u64) -> Option<u64> {
    batches.range(game + 1..).next().map(|(start, _)| *start)
}

pub(super) fn batch_name(first: u64, last: u64) -> String {
    format!("batch-{first:08}-{last:08}")
}

/// The finished batches of a store, by first game.
pub(super) fn stored_batches(store: &Path) -> Result<BTreeMap<u64, Batch>> {
    let mut batches = BTreeMap::new();
    let entries =
        std::fs::read_dir(store).with_context(|| format!("reading {}", store.display()))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((first, last)) = name
            .strip_prefix("batch-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        else {
            continue;
        };
        batches.insert(first, Batch::stored(entry.path(), first, last)?);
    }
    Ok(batches)
}

impl Batch {
    pub(super) fn stored(dir: PathBuf, first: u64, last: u64) -> Result<Batch> {
        let cpu_seconds = read_batch_record(&dir)?.engine_cpu_seconds;
        Ok(Batch {
            first,
            last,
            dir,
            cpu_seconds,
        })
    }
}

/// The sha256 of each of a batch's files, as `batch.json` records them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchFiles {
    #[serde(rename = "games.pgn")]
    games: String,
    #[serde(rename = "mined.csv")]
    mined: String,
    #[serde(rename = "rated.csv")]
    rated: String,
    #[serde(rename = "verify.jsonl")]
    verify_report: String,
    #[serde(rename = "verified.csv")]
    verified: String,
}

impl BatchFiles {
    /// The files of a batch, in the order `batch.json` records them (the
    /// names the fields are serialized under).
    const NAMES: [&'static str; 5] = [
        "games.pgn",
        "mined.csv",
        "rated.csv",
        "verify.jsonl",
        "verified.csv",
    ];

    /// The sha256 of each file in `dir`.
    pub(super) fn of(dir: &Path) -> Result<BatchFiles> {
        let [games, mined, rated, verify_report, verified] =
            Self::NAMES.map(|name| sha256_file(&dir.join(name)));
        Ok(BatchFiles {
            games: games?,
            mined: mined?,
            rated: rated?,
            verify_report: verify_report?,
            verified: verified?,
        })
    }

    /// Each file's name and recorded sha256.
    fn named(&self) -> [(&'static str, &str); 5] {
        let [games, mined, rated, verify_report, verified] = Self::NAMES;
        [
            (games, &self.games),
            (mined, &self.mined),
            (rated, &self.rated),
            (verify_report, &self.verify_report),
            (verified, &self.verified),
        ]
    }
}

/// A stored batch proves its bytes: each of its files has the sha256
/// `batch.json` records; else an error (exit 2) naming the file and how
/// to play the batch again.
pub(super) fn check_batch(dir: &Path) -> Result<()> {
    let record = read_batch_record(dir)?;
    let again = play_again(dir);
    let Some(files) = record.files else {
        return Err(bad_input(format!(
            "{}: records no sha256 of the batch's files (an older puzzleforge wrote the batch); {again}",
            dir.join("batch.json").display()
        )));
    };
    for (name, sha) in files.named() {
        let path = dir.join(name);
        if sha256_file(&path).ok().as_deref() != Some(sha) {
            return Err(bad_input(format!(
                "{}: changed or missing since the batch was stored ({} records its sha256); {again}",
                path.display(),
                dir.join("batch.json").display()
            )));
        }
    }
    Ok(())
}

/// What to do about a damaged stored batch `dir`: remove it and rerun,
/// which plays its games again.
fn play_again(dir: &Path) -> String {
    format!(
        "remove {} and rerun (`puzzleforge run`, or the `run --shard I/N` that played those games) to play its games again",
        dir.display()
    )
}

/// A stored batch's `batch.json`; missing, unreadable or not a record,
/// an error (exit 2) saying how to play the batch again. A batch folder
/// is moved into the store with its `batch.json` written, so one without
/// it was damaged after: it is bad input, not a failure of this run.
pub(crate) fn read_batch_record(dir: &Path) -> Result<BatchRecord> {
    let path = dir.join("batch.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "missing (the batch folder holds no record of its games)".to_string()
        } else {
            format!("cannot be read: {e}")
        };
        bad_input(format!("{}: {why}; {}", path.display(), play_again(dir)))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "{}: not a batch record: {e}; {}",
            path.display(),
            play_again(dir)
        ))
    })
}

/// The scratch folder name of a batch being written by this process: the
/// host is part of it, since shards on other machines may share the store.
pub(super) fn scratch_name(batch: &str) -> String {
    format!(".{batch}.{}.tmp-{}", host_name(), std::process::id())
}

/// This machine's name as a file name part.
fn host_name() -> String {
    crate::core::lock::host_name().replace(['/', '.'], "_")
}

/// Removes the scratch folders this host's dead processes left (a killed
/// run's half-written batch).
fn remove_dead_scratch(store: &Path) -> Result<()> {
    let host = format!(".{}.tmp-", host_name());
    for entry in std::fs::read_dir(store)?.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".batch-") && left_by_dead_process(&name, &host) {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// A stored batch's record, `batch.json`: its games' funnel, in total and
/// per game, the engine CPU it cost, and the sha256 of each of its files.
/// Written once, when the batch is played; read by every run that takes
/// the batch from the store.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchRecord {
    pub first: u64,
    pub last: u64,
    pub games: u64,
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
    pub mined: u64,
    pub verified: u64,
    pub engine_cpu_seconds: f64,
    pub engine_cpu_seconds_by_step: StepSeconds,
    pub per_game: Vec<GameFunnel>,
    /// `None` in a batch an older puzzleforge wrote, which [`check_batch`]
    /// then names.
    #[serde(default)]
    pub files: Option<BatchFiles>,
    /// The build that played the batch ([`crate::core::build::BUILD`]);
    /// absent in a batch written before builds were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// A batch's engine CPU seconds by step (the rating's own engines
/// included in `rate`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct StepSeconds {
    pub selfplay: f64,
    pub mine: f64,
    pub rate: f64,
    pub verify: f64,
}

impl StepSeconds {
    /// The seconds of the chain's step `step`
    /// ([`crate::generate::chain::steps`]; 0 for another stage).
    pub fn of(&self, step: StageName) -> f64 {
        match step {
            StageName::Selfplay => self.selfplay,
            StageName::Mine => self.mine,
            StageName::Rate => self.rate,
            StageName::Verify => self.verify,
            _ => 0.0,
        }
    }

    /// Adds `seconds` to the chain's step `step` (another stage has none).
    pub fn add(&mut self, step: StageName, seconds: f64) {
        let slot = match step {
            StageName::Selfplay => &mut self.selfplay,
            StageName::Mine => &mut self.mine,
            StageName::Rate => &mut self.rate,
            StageName::Verify => &mut self.verify,
            _ => return,
        };
        *slot += seconds;
    }

    /// The steps by name, in the order a batch runs them.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        crate::generate::chain::steps()
            .map(|step| (step.as_str(), self.of(step)))
            .collect()
    }
}

/// One game's funnel in a batch, so that a release's counts never depend
/// on where the batches begin and end.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct GameFunnel {
    pub game: u64,
    #[serde(flatten)]
    pub funnel: crate::stages::mine::UnitFunnel,
}

/// Moves a played batch from `scratch` to its place `dir` in the store.
pub(super) fn store_played_batch(
    scratch: &Path,
    dir: PathBuf,
    first: u64,
    last: u64,
    cpu_seconds: f64,
) -> Result<Batch> {
    if let Err(error) = std::fs::rename(scratch, &dir) {
        // Stored meanwhile by a process the lock does not reach (a
        // shard on another machine): its batch has the same games.
        if dir.join("batch.json").is_file() {
            std::fs::remove_dir_all(scratch)
                .with_context(|| format!("removing {}", scratch.display()))?;
            return Batch::stored(dir, first, last);
        }
        return Err(error)
            .with_context(|| format!("renaming {} to {}", scratch.display(), dir.display()));
    }
    Ok(Batch {
        first,
        last,
        dir,
        cpu_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `batch.json` as the stores already on users' disks hold it (this
    /// one's figures from a real batch, two of its games kept): the typed
    /// record reads it, and writes it back key for key, in the same order.
    #[test]
    fn a_stored_batch_record_reads_and_writes_back_unchanged() {
        let stored = r#"{
  "first": 1,
  "last": 2,
  "games": 2,
  "positions": 206,
  "full_searches": 37,
  "candidates": 11,
  "mined": 11,
  "verified": 9,
  "engine_cpu_seconds": 61.466570084999994,
  "engine_cpu_seconds_by_step": {
    "selfplay": 2.104326085,
    "mine": 40.14,
    "rate": 3.302244,
    "verify": 15.92
  },
  "per_game": [
    {
      "game": 1,
      "positions": 79,
      "full_searches": 8,
      "candidates": 3
    },
    {
      "game": 2,
      "positions": 127,
      "full_searches": 29,
      "candidates": 8
    }
  ],
  "files": {
    "games.pgn": "aa",
    "mined.csv": "bb",
    "rated.csv": "cc",
    "verify.jsonl": "dd",
    "verified.csv": "ee"
  }
}"#;
        let record: BatchRecord = serde_json::from_str(stored).unwrap();
        assert_eq!(record.per_game[1].game, 2);
        assert_eq!(record.per_game[1].funnel.full_searches, 29);
        assert_eq!(record.engine_cpu_seconds_by_step.verify, 15.92);
        let files = record.files.as_ref().unwrap();
        assert_eq!(files.named()[3], ("verify.jsonl", "dd"));
        assert_eq!(serde_json::to_string_pretty(&record).unwrap(), stored);
    }

    /// A record an older puzzleforge wrote, without file hashes, still
    /// reads, so that `check_batch` can name what to do about it.
    #[test]
    fn a_batch_record_without_file_hashes_reads() {
        let mut record: serde_json::Value = serde_json::json!({
            "first": 1, "last": 1, "games": 1, "positions": 0, "full_searches": 0,
            "candidates": 0, "mined": 0, "verified": 0, "engine_cpu_seconds": 1.5,
            "engine_cpu_seconds_by_step": {"selfplay": 1.5, "mine": 0.0, "rate": 0.0, "verify": 0.0},
            "per_game": [{"game": 1, "positions": 0, "full_searches": 0, "candidates": 0}],
        });
        let read: BatchRecord = serde_json::from_value(record.clone()).unwrap();
        assert!(read.files.is_none());
        record["per_game"] = serde_json::json!("not a list");
        assert!(serde_json::from_value::<BatchRecord>(record).is_err());
    }
}

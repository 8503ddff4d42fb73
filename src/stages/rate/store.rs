//! The feature store: the calibration rows' features, computed once and
//! kept by content, so that a refit, a resumed extraction or the next
//! session's larger fit computes no row twice.
//!
//! A store is a folder with one subfolder per feature version: the hash of
//! [`FeatureSettings`] (the nets' sha256 and the feature names), with that `settings.json` inside. Its rows
//! live in part files `part-<sha256>.csv.zst`, each written atomically when a
//! batch of rows is done (a killed extraction loses at most one batch) and
//! named by its own bytes (two shards on two machines never collide: copy
//! their parts into one folder). A row is keyed by its puzzle id and the
//! hash of its position and moves, so an edited puzzle is computed again.
//!
//! Values are stored as `f32` (shortest text that reads back the same), and
//! a calibration fits on those values whether it computed them now or read
//! them, so a model rebuilt from the store is the model fitted first.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::MaiaSpec;
use super::features::Features;
use crate::chess::record::Puzzle;
use crate::core::error::bad_input;
use crate::core::fileio::{sha256_bytes, write_atomic};

/// The settings features depend on: rows computed under other settings
/// are other rows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct FeatureSettings {
    pub maia: MaiaSpec,
    pub features: Vec<String>,
}

impl FeatureSettings {
    /// The feature version: the first 16 hex digits of the settings' hash.
    pub(crate) fn version(&self) -> Result<String> {
        let text = serde_json::to_string(self)?;
        Ok(sha256_bytes(text.as_bytes())[..16].to_string())
    }
}

/// Rows written per part file: the most an interrupted extraction loses.
pub(crate) const ROWS_PER_PART: usize = 200;

/// The columns before the features in a part file.
const KEY_COLUMNS: [&str; 2] = ["PuzzleId", "Content"];

/// A row's key: its id and the hash of its position and moves.
pub(crate) fn row_key(puzzle: &Puzzle) -> (String, String) {
    let content = format!("{} {}", puzzle.fen, puzzle.moves_text());
    (
        puzzle.id.clone(),
        sha256_bytes(content.as_bytes())[..16].to_string(),
    )
}

/// A value as the store keeps it.
pub(crate) fn stored_value(value: f64) -> f64 {
    f64::from(value as f32)
}

/// Features as the store keeps them.
pub(crate) fn stored(features: Features) -> Features {
    Features {
        values: features.values.into_iter().map(stored_value).collect(),
    }
}

/// One feature version's rows, read from its folder.
pub(crate) struct FeatureStore {
    folder: PathBuf,
    width: usize,
    header: Vec<String>,
    rows: HashMap<(String, String), Features>,
    /// Part files read.
    pub parts: usize,
}

impl FeatureStore {
    /// Opens (creating it when missing) the folder of `settings`' version
    /// under `root`, and reads every part file in it.
    pub(crate) fn open(root: &Path, settings: &FeatureSettings) -> Result<Self> {
        let folder = root.join(settings.version()?);
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("creating the feature store {}", folder.display()))?;
        let settings_file = folder.join("settings.json");
        match std::fs::read_to_string(&settings_file) {
            Ok(text) => {
                let found: FeatureSettings = serde_json::from_str(&text).map_err(|e| {
                    bad_input(format!(
                        "{}: not feature settings ({e})",
                        settings_file.display()
                    ))
                })?;
                if found != *settings {
                    return Err(bad_input(format!(
                        "{}: written for other settings than its folder's name says; \
                         remove the folder to compute its rows again",
                        settings_file.display()
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = serde_json::to_string_pretty(settings)?;
                write_atomic(&settings_file, format!("{text}\n").as_bytes())?;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", settings_file.display()));
            }
        }
        let header: Vec<String> = KEY_COLUMNS
            .iter()
            .map(|s| s.to_string())
            .chain(settings.features.iter().cloned())
            .collect();
        let mut store = Self {
            folder,
            width: settings.features.len(),
            header,
            rows: HashMap::new(),
            parts: 0,
        };
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&store.folder)
            .with_context(|| format!("listing {}", store.folder.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("part-") && n.ends_with(".csv.zst"))
            })
            .collect();
        parts.sort();
        for part in &parts {
            store.read_part(part)?;
        }
        store.parts = parts.len();
        Ok(store)
    }

    fn read_part(&mut self, path: &Path) -> Result<()> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let text = zstd::decode_all(bytes.as_slice())
            .with_context(|| format!("{}: not a zstd file; remove it", path.display()))?;
        let mut reader = csv::Reader::from_reader(text.as_slice());
        let bad = |line: usize, what: String| {
            bad_input(format!(
                "{} line {line}: {what}; remove the file to compute its rows again",
                path.display()
            ))
        };
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad(1, e.to_string()))?
            .iter()
            .map(String::from)
            .collect();
        if header != self.header {
            return Err(bad(1, "its columns are not the store's features".into()));
        }
        for (index, record) in reader.records().enumerate() {
            let line = index + 2;
            let record = record.map_err(|e| bad(line, e.to_string()))?;
            if record.len() != KEY_COLUMNS.len() + self.width {
                return Err(bad(line, format!("{} fields", record.len())));
            }
            // Read back as the f32 it was written from, so that a value
            // read equals the value computed and stored ([`stored_value`]).
            let number = |text: &str| -> Result<f64> {
                let value: f32 = text
                    .parse()
                    .map_err(|e| bad(line, format!("{text:?} is not a number ({e})")))?;
                if value.is_finite() {
                    Ok(f64::from(value))
                } else {
                    Err(bad(line, format!("{text:?} is not finite")))
                }
            };
            let values = (KEY_COLUMNS.len()..record.len())
                .map(|j| number(&record[j]))
                .collect::<Result<Vec<f64>>>()?;
            self.rows.insert(
                (record[0].to_string(), record[1].to_string()),
                Features { values },
            );
        }
        Ok(())
    }

    /// The stored features of `puzzle`, if any.
    pub(crate) fn get(&self, puzzle: &Puzzle) -> Option<&Features> {
        self.rows.get(&row_key(puzzle))
    }

    /// Writes one part file of `rows` (features as the store keeps them)
    /// and holds them.
    pub(crate) fn add_part(&mut self, rows: &[(&Puzzle, Features)]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(&self.header)?;
        for (puzzle, features) in rows {
            let (id, content) = row_key(puzzle);
            let mut record = vec![id, content];
            record.extend(features.values.iter().map(|v| (*v as f32).to_string()));
            writer.write_record(&record)?;
        }
        let text = writer.into_inner().context("writing a feature part")?;
        let packed = zstd::encode_all(text.as_slice(), 19).context("compressing a feature part")?;
        let name = format!("part-{}.csv.zst", &sha256_bytes(&packed)[..16]);
        let path = self.folder.join(&name);
        // Written under a name that does not end in `.zst` (which the
        // atomic writer would compress again), then renamed into place.
        let packed_path = self.folder.join(format!("{name}.packed"));
        write_atomic(&packed_path, &packed)?;
        std::fs::rename(&packed_path, &path)
            .with_context(|| format!("renaming {} into place", packed_path.display()))?;
        self.parts += 1;
        for (puzzle, features) in rows {
            self.rows.insert(row_key(puzzle), stored(features.clone()));
        }
        Ok(())
    }

    /// The folder of this feature version.
    pub(crate) fn folder(&self) -> &Path {
        &self.folder
    }
}

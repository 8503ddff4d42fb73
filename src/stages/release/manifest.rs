//! The release's `manifest.json` as one type: [`ReleaseManifest::write`]
//! is its only writer, [`ReleaseManifest::load`] (and
//! [`ReleaseManifest::kind_of`]) its readers.
//!
//! Field order is the file's key order, and a key that only some releases
//! carry (`generate`, what `run` records of itself, `outputs` before the
//! files are written) is left out when absent, so the file reads as the
//! one earlier puzzleforge versions wrote. The parts no reader looks
//! into (`config`, `method`, the engines' identities, the embedded
//! figures, the stages' settings) stay JSON: their shape belongs to the
//! stages that make them, and a release written by another version must
//! still be read.

use anyhow::Result;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::stages::release::cells::{Aim, ExcludeBy};

/// The `kind` every release manifest carries; how earlier releases are
/// recognised.
pub(crate) const MANIFEST_KIND: &str = "puzzleforge-release";

/// The file a release folder records itself in.
pub(crate) const MANIFEST_FILE: &str = "manifest.json";

/// A release's `manifest.json`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct ReleaseManifest {
    pub kind: String,
    pub tool: Tool,
    pub tier: Option<String>,
    /// What an aimed tier (`run --aim`) was aimed at; only such a release
    /// has the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aim: Option<Aim>,
    pub seed: u64,
    /// The `[release]` settings the release was drawn with.
    pub config: Value,
    /// How cells, draw and grouping work, in words.
    pub method: Value,
    /// `release --engine-id/--engine-option`, or the engine `run` used
    /// ([`RunProvenance::engine`]), or null.
    pub engine: Value,
    pub inputs: Vec<PoolFile>,
    /// Pool rows skipped, by reason.
    pub skipped: BTreeMap<String, u64>,
    pub exclusions: Exclusions,
    pub counts: Counts,
    pub cells: Vec<DrawnCellRecord>,
    pub unfilled: Vec<UnfilledCell>,
    /// `--verify FILE`, or null.
    pub verify: Option<Embedded>,
    /// The generation funnel; only a generated release has the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Embedded>,
    /// The rest of [`RunProvenance`]: only a release `run` wrote has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<Source>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub second_engine: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
    /// What `run` made it by: the algorithm versions and the stored work
    /// kept (how the run was asked, the config's text, is its release
    /// stage's `stage.json`). Only a release `run` wrote has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunRecord>,
    /// `{file name: sha256}` of every other file of the release; set when
    /// the files are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<BTreeMap<String, String>>,
}

/// A key present with `null` is `Some(Value::Null)` (absent is `None`), so
/// that reading and writing a manifest keeps the key.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// The program that wrote the release.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Tool {
    pub name: String,
    pub version: String,
    /// The build ([`crate::core::build::BUILD`]); absent in a release
    /// written before builds were recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub build: String,
}

impl Tool {
    /// This program.
    pub(crate) fn this() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: crate::core::build::VERSION.to_string(),
            build: crate::core::build::BUILD.to_string(),
        }
    }
}

/// What `run` records of the algorithms that made the release.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct RunRecord {
    /// The algorithm version of each stage that ran (and of generation's
    /// store, under `[generate]`), as this build states them.
    pub algorithms: BTreeMap<String, String>,
    /// Stored work made by other algorithm versions that
    /// `run --keep-stored-work` kept; absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_work: Vec<KeptWork>,
}

/// Stored work a run kept though this build's algorithm differs from the
/// one that made it (`run --keep-stored-work`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct KeptWork {
    /// `stage mine`, or `generation store KEY`.
    pub what: String,
    /// The algorithm versions that made it.
    pub recorded: String,
    /// This build's.
    pub this_build: String,
}

/// One pool file read.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct PoolFile {
    pub path: String,
    pub sha256: String,
    pub rows: u64,
    pub admitted: u64,
}

/// What the release excluded.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Exclusions {
    #[serde(rename = "match")]
    pub by: ExcludeBy,
    pub removed: usize,
    pub files: Vec<ExcludedFile>,
}

/// One excluded file (an earlier release's split, or `--exclude FILE`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct ExcludedFile {
    pub path: String,
    pub sha256: String,
    pub rows: u64,
    pub unreadable_rows: u64,
    /// Pool puzzles it removed.
    pub removed: usize,
}

/// The release's totals.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Counts {
    pub admitted: u64,
    pub outside_quota: u64,
    pub cells: usize,
    pub unfilled_cells: usize,
    pub train: usize,
    pub test: usize,
}

/// One cell of the release's draw as `manifest.json` records it (under
/// `cells`): its quota and what was drawn.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct DrawnCellRecord {
    pub rating_bin: String,
    pub length: usize,
    pub mate: bool,
    pub wanted_train: usize,
    pub wanted_test: usize,
    pub available: usize,
    pub train: usize,
    pub test: usize,
}

/// A cell the pool could not fill.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct UnfilledCell {
    pub rating_bin: String,
    pub length: usize,
    pub mate: bool,
    /// Train and test together.
    pub wanted: usize,
    pub found: usize,
    pub train: usize,
    pub test: usize,
}

/// A JSON file embedded in the manifest (`--verify`, the generation
/// funnel), named relative to the release.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Embedded {
    pub path: String,
    pub sha256: String,
    pub figures: Value,
}

/// One input file of a `run`, named relative to the config's folder.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Source {
    pub key: String,
    pub path: String,
    pub sha256: String,
}

/// The settings the puzzles were made with, per stage that ran (each as
/// its stage records it).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selfplay: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mine: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Value>,
}

/// What `run` records of itself in its release's manifest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunProvenance {
    pub sources: Vec<Source>,
    /// The engine's identity (replaces `release`'s `--engine-id`).
    pub engine: Value,
    /// The second engine's identity, or null.
    pub second_engine: Value,
    pub settings: Settings,
    pub run: Option<RunRecord>,
}

/// The two fields the card names an engine by.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct EngineName {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
}

impl EngineName {
    /// The `id` and `sha256` of an engine identity, when it is an object.
    pub(crate) fn of(identity: &Value) -> Option<EngineName> {
        identity
            .is_object()
            .then(|| serde_json::from_value(identity.clone()).unwrap_or_default())
    }
}

/// Just the `kind` of a JSON file, to tell a release manifest from others.
#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<String>,
}

/// What checking a release's files needs of its manifest: its `outputs`,
/// read from a manifest of any puzzleforge version (an earlier release
/// whose other keys differ is still checked, then excluded).
#[derive(Deserialize)]
pub(crate) struct ReleaseOutputs {
    #[serde(default)]
    pub outputs: Option<BTreeMap<String, String>>,
}

impl ReleaseManifest {
    /// Records what `run` made the release with.
    pub(crate) fn set_provenance(&mut self, provenance: &RunProvenance) {
        self.sources = Some(provenance.sources.clone());
        self.engine = provenance.engine.clone();
        self.second_engine = Some(provenance.second_engine.clone());
        self.settings = Some(provenance.settings.clone());
        self.run = provenance.run.clone();
    }

    /// The manifest's text: pretty JSON and a final newline.
    pub(crate) fn to_text(&self) -> Result<String> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

    /// Writes `dir/manifest.json` atomically.
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        write_atomic(&dir.join(MANIFEST_FILE), self.to_text()?.as_bytes())
    }

    /// Reads `dir/manifest.json`: `None` when the folder has none or its
    /// `kind` is another's; a file that is not JSON, or a release manifest
    /// that does not read, is an error naming it.
    pub(crate) fn load(dir: &Path) -> Result<Option<ReleaseManifest>> {
        Self::load_as(dir)
    }

    /// [`ReleaseManifest::load`] into `T`, a part of the manifest.
    pub(crate) fn load_as<T: serde::de::DeserializeOwned>(dir: &Path) -> Result<Option<T>> {
        let path = dir.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(bad_input(format!("cannot read {}: {e}", path.display()))),
        };
        let kind: KindOnly = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("{}: not JSON: {e}", path.display())))?;
        if kind.kind.as_deref() != Some(MANIFEST_KIND) {
            return Ok(None);
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad_input(format!("{}: not a release manifest: {e}", path.display())))
    }

    /// `settings.mine.nodes`: the node budget the puzzles were mined with.
    pub(crate) fn mine_nodes(&self) -> Option<Value> {
        #[derive(Deserialize)]
        struct Mine {
            #[serde(default)]
            nodes: Option<Value>,
        }
        let mine = self.settings.as_ref()?.mine.clone()?;
        serde_json::from_value::<Mine>(mine).ok()?.nodes
    }

    /// True when `dir/manifest.json` says it is a release manifest (its
    /// `kind`), whether or not the rest reads.
    pub(crate) fn is_in(dir: &Path) -> bool {
        std::fs::read_to_string(dir.join(MANIFEST_FILE))
            .ok()
            .and_then(|text| serde_json::from_str::<KindOnly>(&text).ok())
            .is_some_and(|k| k.kind.as_deref() == Some(MANIFEST_KIND))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What only some releases carry (`generate`, `run`'s provenance, a
    /// null second engine) is kept, after `verify`, in the order written.
    #[test]
    fn a_run_release_keeps_its_optional_keys_in_order() {
        let cell = |train| UnfilledCell {
            rating_bin: "(400, 500]".into(),
            length: 1,
            mate: false,
            wanted: 10,
            found: 3,
            train,
            test: 0,
        };
        let mut manifest = ReleaseManifest {
            kind: MANIFEST_KIND.into(),
            tool: Tool::this(),
            tier: None,
            aim: None,
            seed: 1,
            config: json!({"bin_width": 100, "ratio": 0.1}),
            method: json!({"cells": "x"}),
            engine: json!({"id": null, "options": {}}),
            inputs: vec![],
            skipped: BTreeMap::from([("no_rating".to_string(), 2)]),
            exclusions: Exclusions {
                by: ExcludeBy::default(),
                removed: 0,
                files: vec![],
            },
            counts: Counts {
                admitted: 3,
                outside_quota: 0,
                cells: 1,
                unfilled_cells: 1,
                train: 3,
                test: 0,
            },
            cells: vec![],
            unfilled: vec![cell(3)],
            verify: None,
            generate: Some(Embedded {
                path: "../selfplay/generate.json".into(),
                sha256: "ab".into(),
                figures: json!({"first_game": 1, "funnel": {"kept": 3}, "hours": 0.75}),
            }),
            sources: None,
            second_engine: None,
            settings: None,
            run: None,
            outputs: None,
        };
        manifest.set_provenance(&RunProvenance {
            sources: vec![Source {
                key: "lichess".into(),
                path: "data/p.csv".into(),
                sha256: "cd".into(),
            }],
            engine: json!({"id": "Stockfish 15.1", "version": "15.1", "sha256": "ef"}),
            second_engine: Value::Null,
            settings: Settings {
                mine: Some(json!({"nodes": 300000, "margin": 1.5})),
                verify: Some(json!({"nodes": 1000})),
                ..Settings::default()
            },
            run: Some(RunRecord {
                algorithms: BTreeMap::from([("mine".to_string(), "mine-1".to_string())]),
                kept_work: vec![],
            }),
        });
        manifest.outputs = Some(BTreeMap::from([(
            "train.csv".to_string(),
            "01".to_string(),
        )]));
        let text = manifest.to_text().unwrap();
        let read: ReleaseManifest = serde_json::from_str(&text).unwrap();
        assert_eq!(read, manifest);
        assert_eq!(read.to_text().unwrap(), text);
        assert_eq!(read.mine_nodes(), Some(json!(300000)));
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys.join(" "),
            "kind tool tier seed config method engine inputs skipped exclusions counts cells \
             unfilled verify generate sources second_engine settings run outputs"
        );
        assert!(text.contains("\"second_engine\": null,"));
        assert!(text.contains("\"verify\": null,"));
    }
}

//! A stage's record beside its outputs (`stage.json`): the fingerprint of
//! what decided them (inputs' sha256, config section, engine, tool version,
//! the stage's algorithm version; and the build, recorded but not compared),
//! counts, seconds and every output's sha256; and the scratch folder a
//! stage writes into before it is renamed into place.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::{sha256_file, write_atomic};
use crate::core::shard::Shard;
use crate::pipeline::stage::{RunContext, Stage};
use crate::stages::StageName;

/// The runner's record of a stage, beside the stage's outputs (a stage may
/// write a `manifest.json` of its own, as the release does).
pub(crate) const MANIFEST: &str = crate::stages::release::folder::STAGE_RECORD;

/// A stage's `stage.json`. The fields are written in this order; `shard`
/// only by `run --shard`, `merged_from` only by `merge`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct StageManifest {
    pub stage: StageName,
    pub fingerprint: Fingerprint,
    /// The stage's own summary (its counts, and the files it wrote).
    pub counts: Value,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The shard folders a `merge` took the stage's outputs from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
    /// How the run was asked for (only the release stage's record holds
    /// it): what `reproduce` asks again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunAsked>,
    /// sha256 of every output, by path relative to the stage's folder.
    pub outputs: BTreeMap<String, String>,
}

/// What decides a stage's outputs: a stage whose fingerprint is unchanged
/// and whose outputs are intact is not run again. Equal fingerprints are
/// equal in everything but `build`, which says which binary wrote the
/// stage and decides nothing: a new commit that leaves the stage's
/// algorithm as it was reuses its outputs.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Fingerprint {
    pub tool_version: String,
    /// The build that wrote the stage ([`crate::core::build::BUILD`]);
    /// empty in a `stage.json` written before builds were recorded.
    #[serde(default)]
    pub build: String,
    /// The version of what the stage computes
    /// ([`StageName::algorithm`]); empty in a `stage.json` written before
    /// stages recorded it, which is then redone.
    #[serde(default)]
    pub algorithm: String,
    /// sha256 of every input, by path (relative to the release folder for
    /// inputs inside it).
    pub inputs: BTreeMap<String, String>,
    /// The stage's config section (see [`Stage::config_section`]).
    pub config: Value,
    /// The engine, for a stage whose results depend on it; else null.
    pub engine: Option<EngineIdentity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
}

impl PartialEq for Fingerprint {
    fn eq(&self, other: &Self) -> bool {
        self.same_but_algorithm(other) && self.algorithm == other.algorithm
    }
}

impl Fingerprint {
    /// Whether the two decide the same outputs under the same algorithm:
    /// what `run --keep-stored-work` asks of a stage it keeps.
    pub(crate) fn same_but_algorithm(&self, other: &Self) -> bool {
        self.same_but_algorithm_by(other, EnginePath::Compared)
    }

    /// [`Fingerprint::same_but_algorithm`], with the engine's path compared
    /// or not as `engine_path` says.
    fn same_but_algorithm_by(&self, other: &Self, engine_path: EnginePath) -> bool {
        let same_engine = match (engine_path, &self.engine, &other.engine) {
            (EnginePath::Ignored, Some(ours), Some(theirs)) => {
                ours.sha256 == theirs.sha256 && ours.options == theirs.options
            }
            (_, ours, theirs) => ours == theirs,
        };
        self.tool_version == other.tool_version
            && self.inputs == other.inputs
            && self.config == other.config
            && same_engine
            && self.shard == other.shard
    }

    /// The sha256 of what decides the stage's outputs: the fingerprint
    /// less the build that computes them (a rebuild of the same version
    /// and algorithm computes the same bytes). What a stage's checkpoint
    /// is keyed by.
    pub(crate) fn work_key(&self) -> Result<String> {
        let decides = Fingerprint {
            build: String::new(),
            ..self.clone()
        };
        Ok(crate::core::fileio::sha256_bytes(&serde_json::to_vec(
            &decides,
        )?))
    }

    /// The line a run prints for a stage redone because its recorded
    /// algorithm is not this build's; `None` when they agree.
    pub(crate) fn algorithm_change(&self, now: &Self, stage: StageName) -> Option<String> {
        (self.algorithm != now.algorithm).then(|| {
            let recorded = match self.algorithm.as_str() {
                "" => "none (written before stages recorded one)",
                other => other,
            };
            format!(
                "{stage}: redone, recorded algorithm {recorded}, this build {}",
                now.algorithm
            )
        })
    }
}

/// How a `run` (or `merge`) was asked for, as its release stage's
/// `stage.json` records it: the config file's name (its paths are relative
/// to its folder), sha256 and text, the release's name (the seeds derive
/// from it) and the flags that change what is made. The runner's record,
/// not the manifest's: two configs that differ only in how the work is
/// done (workers, batch sizes) make the same release bytes.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct RunAsked {
    pub release: String,
    /// `run --tier`, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_flag: Option<String>,
    /// Whether `run --engine` replaced the config's engine (its identity is
    /// the manifest's `engine`).
    #[serde(default)]
    pub engine_flag: bool,
    pub config: ConfigFile,
}

/// The config file a run read: its name, its sha256 and its text.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct ConfigFile {
    pub name: String,
    pub sha256: String,
    pub text: String,
}

impl RunAsked {
    /// What a stage's `stage.json` records of `invocation`.
    pub(crate) fn of(invocation: &crate::pipeline::stage::Invocation) -> RunAsked {
        RunAsked {
            release: invocation.release.clone(),
            tier_flag: invocation.tier_flag.clone(),
            engine_flag: invocation.engine_flag,
            config: ConfigFile {
                name: invocation
                    .config_path
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                sha256: crate::core::fileio::sha256_bytes(invocation.config_text.as_bytes()),
                text: invocation.config_text.clone(),
            },
        }
    }
}

/// The engine a stage ran: its binary's sha256 and the UCI options sent.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct EngineIdentity {
    /// Where the binary was; it may differ between machines.
    pub path: PathBuf,
    pub sha256: String,
    pub options: Vec<(String, String)>,
}

/// Whether the engine's path is part of what a stage's stored outputs are
/// weighed by ([`StageManifest::standing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EnginePath {
    /// A stage redone when its engine was found elsewhere (a rerun, a merge).
    Compared,
    /// A finished release checked on another machine, which may keep its
    /// engine elsewhere: the engine's build and options decide, not where
    /// it lies.
    Ignored,
}

/// How a stage's stored outputs stand for this run ([`StageManifest::standing`]).
#[derive(Debug)]
pub(crate) enum Standing {
    /// Outputs that no longer have their recorded sha256 (missing or
    /// changed), named as `outputs` names them; the fingerprint was not
    /// worked out.
    Damaged(Vec<String>),
    /// Intact, and this run's fingerprint decides the same outputs: they
    /// stand as they are.
    Current,
    /// Intact, and this run's fingerprint (held here) differs only in the
    /// stage's algorithm version: what `--keep-stored-work` keeps.
    OtherAlgorithm(Fingerprint),
    /// Intact, and this run's fingerprint (held here) decides other outputs.
    Changed(Fingerprint),
}

impl StageManifest {
    /// Whether the stage stored in `dir` with this manifest stands for a
    /// run whose fingerprint of it `now` works out: every output intact
    /// (checked first, and then `now` is not asked), and the fingerprints
    /// equal (the engine's path compared as `engine_path` says). The one
    /// test of a stage's currency that run, merge and a finished release's
    /// check all ask.
    pub(crate) fn standing(
        &self,
        dir: &Path,
        now: impl FnOnce() -> Result<Fingerprint>,
        engine_path: EnginePath,
    ) -> Result<Standing> {
        let damaged: Vec<String> = self
            .outputs
            .iter()
            .filter(|(name, sha)| {
                sha256_file(&dir.join(name)).map_or(true, |actual| &actual != *sha)
            })
            .map(|(name, _)| name.clone())
            .collect();
        if !damaged.is_empty() {
            return Ok(Standing::Damaged(damaged));
        }
        let now = now()?;
        let before = &self.fingerprint;
        Ok(if !before.same_but_algorithm_by(&now, engine_path) {
            Standing::Changed(now)
        } else if before.algorithm != now.algorithm {
            Standing::OtherAlgorithm(now)
        } else {
            Standing::Current
        })
    }

    /// Reads a `stage.json`.
    pub(crate) fn load(path: &Path) -> Result<StageManifest> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| bad_input(format!("{}: not a stage manifest: {e}", path.display())))
    }

    /// The `stage.json` in a stage's folder, when there is a readable one.
    pub(crate) fn previous(dir: &Path) -> Option<StageManifest> {
        Self::load(&dir.join(MANIFEST)).ok()
    }
}

/// Seconds as the manifest records them: to the millisecond.
pub(crate) fn manifest_seconds(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// What decides a stage's outputs. Inputs inside the release folder are
/// named relative to it, so the same release written elsewhere (a `merge`
/// of shards) has the same fingerprints.
pub(crate) fn fingerprint(stage: &dyn Stage, ctx: &RunContext) -> Result<Fingerprint> {
    let mut inputs = BTreeMap::new();
    for input in stage.inputs(ctx)? {
        let sha = sha256_file(&input).map_err(|e| {
            bad_input(format!(
                "input {} of stage {}: {e:#}",
                input.display(),
                stage.name()
            ))
        })?;
        let name = input
            .strip_prefix(&ctx.release_dir)
            .or_else(|_| input.strip_prefix(&ctx.config_dir))
            .unwrap_or(&input)
            .display()
            .to_string();
        inputs.insert(name, sha);
    }
    let engine = match (&ctx.engine, stage.uses_engine()) {
        (Some(engine), true) => Some(EngineIdentity {
            path: engine.spec.path.clone(),
            sha256: engine.sha256.clone(),
            options: engine.spec.options.clone(),
        }),
        _ => None,
    };
    Ok(Fingerprint {
        tool_version: crate::core::build::VERSION.to_string(),
        build: crate::core::build::BUILD.to_string(),
        algorithm: stage.name().algorithm(),
        inputs,
        config: relative_to_config(stage.config_section(ctx)?, &ctx.config_dir),
        engine,
        shard: ctx.shard,
    })
}

/// `section` with every path under the config file's folder (resolved
/// when the config was loaded) named relative to that folder again, so the
/// fingerprint does not depend on the working directory.
fn relative_to_config(mut section: Value, config_dir: &Path) -> Value {
    fn walk(value: &mut Value, prefix: &str) {
        match value {
            Value::String(text) => {
                if let Some(rest) = text.strip_prefix(prefix) {
                    *text = rest.to_string();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, prefix)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, prefix)),
            _ => {}
        }
    }
    if !config_dir.as_os_str().is_empty() {
        let prefix = format!(
            "{}/",
            config_dir.display().to_string().trim_end_matches('/')
        );
        walk(&mut section, &prefix);
    }
    section
}

/// An empty scratch folder for a stage, `<release>/.<stage>.partial`: what a
/// stage writes is renamed into place only once it is complete.
/// A symbolic link there is an error naming it, never followed.
pub(crate) fn fresh_scratch(release_dir: &Path, stage: StageName) -> Result<PathBuf> {
    let scratch = release_dir.join(format!(".{stage}.partial"));
    crate::core::fileio::create_scratch_dir(&scratch)?;
    Ok(scratch)
}

/// The sha256 of every output in a stage's folder, by path relative to it.
pub(crate) fn output_hashes(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut outputs = BTreeMap::new();
    for entry in walk_files(dir)? {
        let relative = entry
            .strip_prefix(dir)
            .unwrap_or(&entry)
            .to_string_lossy()
            .into_owned();
        outputs.insert(relative, sha256_file(&entry)?);
    }
    Ok(outputs)
}

/// The folder where a stage records its finished work as it goes,
/// `<release>/.<stage>.checkpoint` ([`crate::pipeline::stage::StageFolder`]).
pub(crate) fn checkpoint_dir(release_dir: &Path, stage: StageName) -> PathBuf {
    release_dir.join(format!(".{stage}.checkpoint"))
}

/// Writes `manifest` as the stage's `stage.json` into the scratch folder and
/// renames the scratch folder into place as `dir`.
pub(crate) fn commit_stage_dir(scratch: &Path, dir: &Path, manifest: &StageManifest) -> Result<()> {
    write_atomic(
        &scratch.join(MANIFEST),
        format!("{}\n", serde_json::to_string_pretty(manifest)?).as_bytes(),
    )?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("replacing {}", dir.display()))?;
    }
    std::fs::rename(scratch, dir)
        .with_context(|| format!("renaming {} to {}", scratch.display(), dir.display()))?;
    Ok(())
}

/// Every regular file under `dir`, sorted, skipping hidden scratch files.
pub(crate) fn walk_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in
            std::fs::read_dir(&folder).with_context(|| format!("listing {}", folder.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with('.') && n != MANIFEST)
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The build that wrote a stage decides nothing; its algorithm version
    /// does, and a change of it is said in one line.
    #[test]
    fn fingerprints_agree_across_builds_but_not_across_algorithms() {
        let print = Fingerprint {
            tool_version: "0.1.0".into(),
            build: "git:aa".into(),
            algorithm: "mine-1".into(),
            inputs: BTreeMap::new(),
            config: json!({}),
            engine: None,
            shard: None,
        };
        let other_build = Fingerprint {
            build: "git:bb+dirty".into(),
            ..print.clone()
        };
        assert_eq!(print, other_build);
        let other_rule = Fingerprint {
            algorithm: "mine-2".into(),
            ..print.clone()
        };
        assert_ne!(print, other_rule);
        assert!(print.same_but_algorithm(&other_rule));
        assert_eq!(
            print
                .algorithm_change(&other_rule, StageName::Mine)
                .as_deref(),
            Some("mine: redone, recorded algorithm mine-1, this build mine-2")
        );
        assert_eq!(print.algorithm_change(&other_build, StageName::Mine), None);
    }

    /// `stage.json` keeps the key order it always had: readers diff them.
    #[test]
    fn a_manifest_is_written_in_its_documented_order() {
        let manifest = StageManifest {
            stage: StageName::Mine,
            fingerprint: Fingerprint {
                tool_version: "0.1.0".into(),
                build: "git:0123+dirty".into(),
                algorithm: "mine-1".into(),
                inputs: BTreeMap::from([("selfplay/games.pgn".into(), "ab".into())]),
                config: json!({"depth": 18}),
                engine: Some(EngineIdentity {
                    path: PathBuf::from("/usr/games/stockfish"),
                    sha256: "cd".into(),
                    options: vec![("Hash".into(), "16".into())],
                }),
                shard: Some(Shard { index: 0, count: 2 }),
            },
            counts: json!({"inputs": 1}),
            seconds: 1.5,
            shard: Some(Shard { index: 0, count: 2 }),
            merged_from: None,
            run: None,
            outputs: BTreeMap::from([("games.puzzles.csv".into(), "ef".into())]),
        };
        let text = serde_json::to_string(&manifest).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"stage":"mine","fingerprint":{"tool_version":"0.1.0","#,
                r#""build":"git:0123+dirty","algorithm":"mine-1","#,
                r#""inputs":{"selfplay/games.pgn":"ab"},"config":{"depth":18},"#,
                r#""engine":{"path":"/usr/games/stockfish","sha256":"cd","options":[["Hash","16"]]},"#,
                r#""shard":{"index":0,"count":2}},"counts":{"inputs":1},"seconds":1.5,"#,
                r#""shard":{"index":0,"count":2},"outputs":{"games.puzzles.csv":"ef"}}"#
            )
        );
        let read: StageManifest = serde_json::from_str(&text).unwrap();
        assert_eq!(read, manifest);
        let unsharded = StageManifest {
            fingerprint: Fingerprint {
                engine: None,
                shard: None,
                ..manifest.fingerprint.clone()
            },
            shard: None,
            merged_from: Some(vec!["out/r.shard-0-of-2".into()]),
            ..manifest
        };
        let text = serde_json::to_string(&unsharded).unwrap();
        assert!(
            text.contains(r#""config":{"depth":18},"engine":null},"counts""#),
            "{text}"
        );
        assert!(
            text.contains(r#""seconds":1.5,"merged_from":["out/r.shard-0-of-2"],"outputs""#),
            "{text}"
        );
    }
}

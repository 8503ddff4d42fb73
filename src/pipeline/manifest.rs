//! A stage's record beside its outputs (`stage.json`): the fingerprint of
//! what decided them (inputs' sha256, config section, engine, tool version),
//! counts, seconds and every output's sha256; and the scratch folder a
//! stage writes into before it is renamed into place.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::{sha256_file, write_atomic};
use crate::pipeline::stage::{RunContext, Stage};

/// The runner's record of a stage, beside the stage's outputs (a stage may
/// write a `manifest.json` of its own, as the release does).
pub(crate) const MANIFEST: &str = "stage.json";

/// What decides a stage's outputs. Inputs inside the release folder are
/// named relative to it, so the same release written elsewhere (a `merge`
/// of shards) has the same fingerprints.
pub(crate) fn fingerprint(stage: &dyn Stage, ctx: &RunContext) -> Result<Value> {
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
            .unwrap_or(&input)
            .display()
            .to_string();
        inputs.insert(name, sha);
    }
    let engine = match (&ctx.engine, stage.uses_engine()) {
        (Some(engine), true) => json!({
            "path": engine.spec.path,
            "sha256": engine.sha256,
            "options": engine.spec.options,
        }),
        _ => Value::Null,
    };
    let mut print = json!({
        "tool_version": env!("CARGO_PKG_VERSION"),
        "inputs": inputs,
        "config": stage.config_section(ctx),
        "engine": engine,
    });
    if let Some(shard) = &ctx.shard {
        print["shard"] = shard.to_json();
    }
    Ok(print)
}

pub(crate) fn outputs_intact(dir: &Path, manifest: &Value) -> bool {
    let Some(outputs) = manifest.get("outputs").and_then(Value::as_object) else {
        return false;
    };
    outputs.iter().all(|(name, sha)| {
        sha.as_str()
            .is_some_and(|sha| sha256_file(&dir.join(name)).is_ok_and(|actual| actual == sha))
    })
}

/// An empty scratch folder for a stage, `<release>/.<stage>.partial`: what a
/// stage writes is renamed into place only once it is complete.
pub(crate) fn fresh_scratch(release_dir: &Path, stage: &str) -> Result<PathBuf> {
    let scratch = release_dir.join(format!(".{stage}.partial"));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
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

/// Records `outputs` (see [`output_hashes`]) in `manifest`, writes it as
/// the stage's `stage.json` and renames the scratch folder into place as
/// `dir`.
pub(crate) fn commit_stage_dir(
    scratch: &Path,
    dir: &Path,
    mut manifest: Value,
    outputs: BTreeMap<String, String>,
) -> Result<()> {
    manifest["outputs"] = json!(outputs);
    write_atomic(
        &scratch.join(MANIFEST),
        format!("{}\n", serde_json::to_string_pretty(&manifest)?).as_bytes(),
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

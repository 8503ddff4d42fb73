//! `reproduce`'s comparison of two release folders, file by file (see
//! [`super`]'s comment): identical, identical but for the fields a run
//! cannot repeat (each set aside by name), skipped (timing), or differing
//! (where first). Kept apart from the code that runs the reproduction:
//! this only reads the two folders, and runs nothing.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::core::fileio::sha256_bytes;
use crate::pipeline::manifest::MANIFEST as STAGE_RECORD;

/// Files a run cannot repeat byte for byte, by name, and why: skipped.
const TIMING_FILES: [(&str, &str); 1] =
    [("runtime.json", "timing: the eval's wall and CPU seconds")];

/// The files of the two folders by how they compare.
#[derive(Serialize, Debug)]
pub(super) struct Comparison {
    /// Files whose bytes agree.
    pub(super) identical: Vec<String>,
    /// Files that agree once the named fields are set aside.
    pub(super) identical_but: Vec<Aside>,
    /// Files compared by neither (timing).
    pub(super) skipped: Vec<Aside>,
    /// Files that differ, each with where.
    pub(super) differ: Vec<Difference>,
}

#[derive(Serialize, Debug)]
pub(super) struct Aside {
    pub(super) file: String,
    pub(super) fields: String,
}

#[derive(Serialize, Debug)]
pub(super) struct Difference {
    pub(super) file: String,
    pub(super) why: String,
}

/// Every file of a release folder (hidden ones, the lock's, left out),
/// relative to it.
pub(super) fn files_of(dir: &Path) -> Result<BTreeSet<String>> {
    let mut files = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in
            std::fs::read_dir(&folder).with_context(|| format!("listing {}", folder.display()))?
        {
            let path = entry?.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                files.insert(relative.to_string_lossy().into_owned());
            }
        }
    }
    Ok(files)
}

/// Compares the two release folders file by file (see the module's
/// comment); `recorded_build` is the build the release's manifest names.
/// `outputs`: each side's output folder, as its `stage.json`s name it.
pub(super) fn compare(
    original: &Path,
    reproduced: &Path,
    recorded_build: &str,
    outputs: &(String, String),
) -> Result<Comparison> {
    let (ours, theirs) = (files_of(original)?, files_of(reproduced)?);
    let mut summary = Comparison {
        identical: Vec::new(),
        identical_but: Vec::new(),
        skipped: Vec::new(),
        differ: Vec::new(),
    };
    for file in ours.symmetric_difference(&theirs) {
        let why = if ours.contains(file) {
            "only in the release: the reproduction did not write it"
        } else {
            "only in the reproduction: the release does not hold it"
        };
        summary.differ.push(Difference {
            file: file.clone(),
            why: why.to_string(),
        });
    }
    let both: Vec<&String> = ours.intersection(&theirs).collect();
    let (mut left, mut right) = substitutions(recorded_build, outputs);
    let mut pending: Vec<&String> = Vec::new();
    for file in both {
        let name = file.rsplit('/').next().unwrap_or(file);
        if let Some((_, why)) = TIMING_FILES.iter().find(|(n, _)| *n == name) {
            summary.skipped.push(Aside {
                file: file.clone(),
                fields: why.to_string(),
            });
            continue;
        }
        let (a, b) = (read(original, file)?, read(reproduced, file)?);
        if a == b {
            summary.identical.push(file.clone());
        } else {
            pending.push(file);
        }
    }
    // Records last: a `stage.json` names its outputs' sha256.
    pending.sort_by_key(|file| file.ends_with(STAGE_RECORD));
    let sides = (original, reproduced);
    let (pending, asides) = set_aside(sides, pending, (&mut left, &mut right), outputs)?;
    for (file, fields) in asides {
        summary.identical_but.push(Aside {
            file,
            fields: fields.join("; "),
        });
    }
    for file in pending {
        let (a, b) = (read(original, file)?, read(reproduced, file)?);
        summary.differ.push(Difference {
            file: file.clone(),
            why: first_difference(&a, &b),
        });
    }
    summary.differ.sort_by(|x, y| x.file.cmp(&y.file));
    Ok(summary)
}

/// Text substitutions (`from`, `to`) applied in order.
type Substitutions = Vec<(String, String)>;

/// Fields set aside per file, as `identical_but` lists them.
type Asides = BTreeMap<String, Vec<String>>;

/// The text substitutions that set a field aside, each side's own
/// (`left` the release's, `right` the reproduction's): the build identity,
/// and where each run's output folder is, as its records name it.
fn substitutions(
    recorded_build: &str,
    outputs: &(String, String),
) -> (Substitutions, Substitutions) {
    let build = crate::core::build::BUILD;
    let mut left: Substitutions = Vec::new();
    let mut right: Substitutions = Vec::new();
    if !recorded_build.is_empty() && recorded_build != build {
        left.push((recorded_build.to_string(), "<build>".to_string()));
        right.push((build.to_string(), "<build>".to_string()));
    }
    let folder = "<output folder>/".to_string();
    if !matches!(outputs.0.as_str(), "" | ".") {
        left.push((
            format!("{}/", outputs.0.trim_end_matches('/')),
            folder.clone(),
        ));
    }
    right.push((format!("{}/", outputs.1.trim_end_matches('/')), folder));
    (left, right)
}

/// The files of `pending` (differing byte for byte) that agree once
/// fields are set aside, until no more does: each that agrees adds its
/// sha256 to the substitutions (so that a record naming it agrees too).
/// The files that still differ, and the fields set aside per file.
fn set_aside<'f>(
    (original, reproduced): (&Path, &Path),
    mut pending: Vec<&'f String>,
    (left, right): (&mut Substitutions, &mut Substitutions),
    outputs: &(String, String),
) -> Result<(Vec<&'f String>, Asides)> {
    let mut asides: Asides = BTreeMap::new();
    let mut changed = true;
    while changed {
        changed = false;
        let mut still = Vec::new();
        for file in pending {
            let (a, b) = (read(original, file)?, read(reproduced, file)?);
            let fields = if file.rsplit('/').next() == Some(STAGE_RECORD) {
                same_stage_record(&a, &b, (left, &outputs.0), (right, &outputs.1))
            } else {
                (substitute(&a, left) == substitute(&b, right)).then(|| {
                    "the build identity, the output folder's path, the sha256 of files set aside"
                        .to_string()
                })
            };
            match fields {
                Some(fields) => {
                    left.push((sha256_bytes(&a), format!("<sha256 of {file}>")));
                    right.push((sha256_bytes(&b), format!("<sha256 of {file}>")));
                    asides.entry(file.clone()).or_default().push(fields);
                    changed = true;
                }
                None => still.push(file),
            }
        }
        pending = still;
    }
    Ok((pending, asides))
}

fn read(dir: &Path, file: &str) -> Result<Vec<u8>> {
    let path = dir.join(file);
    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
}

/// `bytes` as text with each substitution made where it starts a word (a
/// path `out/` inside `layout/` is left alone); bytes that are not UTF-8
/// are compared as they are.
fn substitute(bytes: &[u8], substitutions: &[(String, String)]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return bytes.to_vec();
    };
    let mut text = text.to_string();
    for (from, to) in substitutions {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(from.as_str()) {
            let starts_word = out
                .chars()
                .chain(rest[..at].chars())
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')));
            out.push_str(&rest[..at]);
            out.push_str(if starts_word { to } else { from });
            rest = &rest[at + from.len()..];
        }
        out.push_str(rest);
        text = out;
    }
    text.into_bytes()
}

/// Two `stage.json`s agree on what decides and what they hold: compared
/// but for the run's log (`seconds`, and `counts`, which name where the
/// run wrote), the build, the engine's path on this machine and where the
/// output folder is (`(substitutions, output folder)` of each side); the
/// fields set aside, when they agree.
fn same_stage_record(
    a: &[u8],
    b: &[u8],
    left: (&[(String, String)], &str),
    right: (&[(String, String)], &str),
) -> Option<String> {
    let strip = |bytes: &[u8], (substitutions, output): (&[(String, String)], &str)| {
        let mut record: Value = serde_json::from_slice(&substitute(bytes, substitutions)).ok()?;
        let table = record.as_object_mut()?;
        table.remove("seconds");
        table.remove("counts");
        // A merged release names the shard folders it was assembled from.
        table.remove("merged_from");
        // The sha256 of a file skipped as timing.
        if let Some(outputs) = table.get_mut("outputs").and_then(Value::as_object_mut) {
            outputs.retain(|name, _| {
                let name = name.rsplit('/').next().unwrap_or(name);
                !TIMING_FILES.iter().any(|(timing, _)| *timing == name)
            });
        }
        if let Some(print) = table.get_mut("fingerprint").and_then(Value::as_object_mut) {
            print.remove("build");
            if let Some(engine) = print.get_mut("engine").and_then(Value::as_object_mut) {
                engine.remove("path");
            }
            if let Some(inputs) = print.get_mut("inputs").and_then(Value::as_object_mut) {
                let prefix = format!("{}/", output.trim_end_matches('/'));
                // A stored batch's record holds the engine CPU seconds it
                // took: timing, set aside (its files are compared by sha256).
                *inputs = std::mem::take(inputs)
                    .into_iter()
                    .filter(|(name, _)| !name.ends_with("/batch.json"))
                    .map(|(name, sha)| match name.strip_prefix(&prefix) {
                        Some(rest) => (format!("<output folder>/{rest}"), sha),
                        None => (name, sha),
                    })
                    .collect();
            }
        }
        Some(record)
    };
    // How the run was asked (the config's text) is compared as written:
    // the substitutions are for paths the runs wrote, not for its text.
    let asked = |bytes: &[u8]| -> Option<Value> {
        let record: Value = serde_json::from_slice(bytes).ok()?;
        Some(record.get("run").cloned().unwrap_or(Value::Null))
    };
    let without_run = |record: Option<Value>| {
        let mut record = record?;
        record.as_object_mut()?.remove("run");
        Some(record)
    };
    let (x, y) = (without_run(strip(a, left))?, without_run(strip(b, right))?);
    (x == y && asked(a)? == asked(b)?).then(|| {
        "its seconds and counts (the run's log: how long, where it wrote), the build, the \
         engine's and the output folder's paths, the stored batches' records (CPU seconds)"
            .to_string()
    })
}

/// Where two files first differ: the line and byte, or their lengths.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(at) => {
            let line = a[..at].iter().filter(|&&c| c == b'\n').count() + 1;
            format!("first differs at line {line} (byte {at})")
        }
        None => format!(
            "one is a prefix of the other ({} bytes in the release, {} reproduced)",
            a.len(),
            b.len()
        ),
    }
}

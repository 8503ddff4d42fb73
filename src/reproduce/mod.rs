//! `puzzleforge reproduce RELEASE`: runs the run a release's manifest
//! records again, into a scratch folder, and compares every file of the
//! release folder byte for byte.
//!
//! Before anything runs it checks what the manifest names: the config's
//! text (recorded whole), each input file and the rating model by sha256,
//! the engines by their binaries' sha256 and options, and the earlier
//! releases the draw excluded (copied into the scratch folder, so the
//! draw excludes them again). What it cannot reproduce it refuses (exit
//! 2), naming it. After the run, a file is identical, or identical but
//! for the fields a run cannot repeat (each named: the build identity when
//! another build reproduces, timing, where the run wrote), or it differs
//! (exit 1, as `cmp` exits, naming each file and where it first differs).
//!
//! - `mod.rs`: the checks of what the manifest names, the scratch folder
//!   and the repeated run.
//! - `compare`: the two release folders compared file by file.
//!
//! A room above the pipeline: it repeats a run through
//! [`crate::pipeline::run`] and reads what the run recorded (the stages'
//! `stage.json`, the release's `manifest.json`), never running a stage by
//! itself, so that what it repeats is what `run` did.
//!
//! May use: [`crate::pipeline`], [`crate::tools`] and everything below.
//! Only [`crate::cli`] uses it.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::fileio::{sha256_content, sha256_file};
use crate::core::summary::Summary;
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::manifest::MANIFEST as STAGE_RECORD;
use crate::pipeline::manifest::RunAsked;
use crate::pipeline::run::{RunArgs, run_pipeline_from};
use crate::stages::release::manifest::{MANIFEST_FILE, ReleaseManifest};

mod compare;
use compare::{Comparison, compare};

/// `puzzleforge reproduce`'s flags (their help: `cli::reproduce`).
#[derive(Debug, Clone)]
pub struct ReproduceArgs {
    pub release: PathBuf,
    pub scratch: Option<PathBuf>,
    pub engine: Option<PathBuf>,
    pub config_dir: Option<PathBuf>,
}

/// The exit code when files differ: 1, as `cmp` and `diff` exit.
const EXIT_DIFFERS: i32 = 1;

/// What `reproduce --json` prints.
#[derive(Serialize, Debug)]
struct ReproduceSummary {
    release: PathBuf,
    scratch: PathBuf,
    /// The files compared: identical, identical but for fields set
    /// aside, skipped, differing.
    #[serde(flatten)]
    comparison: Comparison,
    /// Seconds the release's stages recorded in their `stage.json` (under
    /// `[generate]` the batches' play is not among them), and the
    /// reproduction's wall seconds.
    stage_seconds: f64,
    reproduce_seconds: f64,
}

/// Runs `reproduce`.
pub fn run_reproduce(args: &ReproduceArgs) -> Result<Summary> {
    let (release_dir, stage_dir) = locate(&args.release)?;
    let (manifest, run) = recorded_run(&stage_dir)?;
    let manifest_path = stage_dir.join(MANIFEST_FILE);
    let config_dir = config_dir(args, &release_dir, &run, &manifest_path)?;
    let config_path = config_dir.join(&run.config.name);
    let config = PipelineConfig::from_text(&run.config.text, &config_path)?;
    check_inputs(&manifest, &config_dir)?;
    check_engines(&manifest, &config, args.engine.as_ref(), &run)?;

    let (scratch, temporary) = scratch_folder(args, &run)?;
    copy_earlier_releases(&manifest, &stage_dir, &scratch)?;
    let reproduce_seconds = repeat_run(args, &run, &config_dir, &scratch, &release_dir)?;
    let reproduced = scratch.join(&run.release);

    // Earlier releases' files are inputs of the draw, named by where the
    // output folder is: as the config writes it there, the scratch here.
    let written_output = config_output_dir(&run, &manifest_path)?;
    let outputs = (
        written_output.display().to_string(),
        scratch.display().to_string(),
    );
    let summary = ReproduceSummary {
        release: release_dir.clone(),
        scratch: scratch.clone(),
        comparison: compare(&release_dir, &reproduced, &manifest.tool.build, &outputs)?,
        stage_seconds: recorded_seconds(&release_dir),
        reproduce_seconds: (reproduce_seconds * 1000.0).round() / 1000.0,
    };
    reproduce_outcome(&summary, &reproduced, temporary)
}

/// The release's manifest in `stage_dir` and the run its release stage
/// recorded: refused when there is none to repeat, or when the run aimed
/// its tier at an eval the manifest does not hold.
fn recorded_run(stage_dir: &Path) -> Result<(ReleaseManifest, RunAsked)> {
    let manifest = ReleaseManifest::load(stage_dir)?.ok_or_else(|| {
        bad_input(format!(
            "{}: not a release manifest",
            stage_dir.join(MANIFEST_FILE).display()
        ))
    })?;
    let manifest_path = stage_dir.join(MANIFEST_FILE);
    // How the run was asked: the release stage's record.
    let record_path = stage_dir.join(STAGE_RECORD);
    let asked = crate::pipeline::manifest::StageManifest::load(&record_path)
        .ok()
        .and_then(|record| record.run);
    let Some(run) = asked else {
        return Err(bad_input(format!(
            "{}: records no run to repeat (a release written by `release`, or by a puzzleforge \
             before releases recorded their config); only a release `run` wrote can be reproduced",
            record_path.display()
        )));
    };
    if manifest.aim.is_some() {
        return Err(bad_input(format!(
            "{}: an aimed tier (`run --aim`) depends on the eval run it was aimed at, which the \
             manifest does not hold; it cannot be reproduced",
            manifest_path.display()
        )));
    }
    Ok((manifest, run))
}

/// Repeats `run` from the config's folder into `scratch`, as it was asked
/// (under `--engine` when given): the seconds it took.
fn repeat_run(
    args: &ReproduceArgs,
    run: &RunAsked,
    config_dir: &Path,
    scratch: &Path,
    release_dir: &Path,
) -> Result<f64> {
    let engine = match &args.engine {
        Some(engine) => Some(
            engine
                .canonicalize()
                .map_err(|e| bad_input(format!("--engine {}: {e}", engine.display())))?,
        ),
        None => None,
    };
    // The run is repeated from the config's folder, as `run` is run from
    // the project's folder: the eval's records name paths as the run was
    // asked (`models/maia`), and so they name the same here.
    let config_dir = config_dir.canonicalize().map_err(|e| {
        bad_input(format!(
            "cannot reproduce: the config's folder {}: {e}",
            config_dir.display()
        ))
    })?;
    std::env::set_current_dir(&config_dir)
        .with_context(|| format!("changing to {}", config_dir.display()))?;
    let run_args = RunArgs {
        config: PathBuf::from(&run.config.name),
        release: Some(run.release.clone()),
        engine,
        tier: run.tier_flag.clone(),
        force: false,
        rewrite_release: false,
        shard: None,
        strict: false,
        keep_stored_work: false,
        plan: Default::default(),
        aim: Default::default(),
    };
    let started = Instant::now();
    run_pipeline_from(&run_args, &run.config.text, Some(scratch))
        .with_context(|| format!("reproducing {}", release_dir.display()))?;
    Ok(started.elapsed().as_secs_f64())
}

/// The command's summary: a shortfall and [`EXIT_DIFFERS`] when files
/// differ; a temporary scratch folder removed when none does.
fn reproduce_outcome(
    summary: &ReproduceSummary,
    reproduced: &Path,
    temporary: bool,
) -> Result<Summary> {
    let (release_dir, scratch) = (&summary.release, &summary.scratch);
    let human = human_lines(summary, temporary);
    let differ = summary
        .comparison
        .differ
        .iter()
        .map(|d| d.file.clone())
        .collect::<Vec<_>>();
    if differ.is_empty() && temporary {
        std::fs::remove_dir_all(scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    let mut out = Summary::new(human, serde_json::to_value(summary)?);
    if !differ.is_empty() {
        out.shortfall = Some(format!(
            "{} file{} of {} differ from the reproduction in {}: {}",
            differ.len(),
            if differ.len() == 1 { "" } else { "s" },
            release_dir.display(),
            reproduced.display(),
            differ.join(", ")
        ));
        out.exit_code = Some(EXIT_DIFFERS);
    }
    Ok(out)
}

/// The release folder and its `release` stage folder, from either.
fn locate(given: &Path) -> Result<(PathBuf, PathBuf)> {
    let given = given
        .canonicalize()
        .map_err(|e| bad_input(format!("{}: not a release folder: {e}", given.display())))?;
    if ReleaseManifest::is_in(&given) {
        let release_dir = given.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok((release_dir, given));
    }
    let stage = given.join(crate::stages::StageName::Release.as_str());
    if ReleaseManifest::is_in(&stage) {
        return Ok((given, stage));
    }
    Err(bad_input(format!(
        "{}: neither a release folder `run` wrote (with release/{MANIFEST_FILE}) nor its release \
         stage folder (with {MANIFEST_FILE})",
        given.display()
    )))
}

/// The folder the recorded config's paths are relative to: `--config-dir`,
/// else the release folder's parent (the output folder) with the config's
/// `pipeline.output_dir` taken off its end.
fn config_dir(
    args: &ReproduceArgs,
    release_dir: &Path,
    run: &RunAsked,
    manifest_path: &Path,
) -> Result<PathBuf> {
    if let Some(dir) = &args.config_dir {
        return Ok(dir.clone());
    }
    let written = config_output_dir(run, manifest_path)?;
    let mut dir = release_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for component in written.components().rev() {
        match component {
            Component::CurDir => {}
            Component::Normal(name) if dir.file_name() == Some(name) => {
                dir.pop();
            }
            _ => {
                return Err(bad_input(format!(
                    "{}: the recorded config's pipeline.output_dir {:?} does not lead to {}, so \
                     the config's folder (where its paths start) is unknown; name it with \
                     --config-dir",
                    manifest_path.display(),
                    written.display(),
                    release_dir.display()
                )));
            }
        }
    }
    Ok(dir)
}

/// `pipeline.output_dir` as the recorded config writes it.
fn config_output_dir(run: &RunAsked, manifest_path: &Path) -> Result<PathBuf> {
    Ok(PipelineConfig::parse(&run.config.text, manifest_path)?
        .pipeline
        .output_dir)
}

/// Every input the manifest names, present with its recorded sha256.
fn check_inputs(manifest: &ReleaseManifest, config_dir: &Path) -> Result<()> {
    let mut inputs: Vec<(String, String, String)> = manifest
        .sources
        .iter()
        .flatten()
        .map(|s| (s.key.clone(), s.path.clone(), s.sha256.clone()))
        .collect();
    let model = manifest
        .settings
        .as_ref()
        .and_then(|s| s.rate.as_ref())
        .map(|rate| &rate["model"]);
    if let Some(model) = model
        && let (Some(path), Some(sha)) = (model["path"].as_str(), model["sha256"].as_str())
    {
        inputs.push(("rate.model".into(), path.into(), sha.into()));
    }
    for (key, path, recorded) in inputs {
        let file = config_dir.join(&path);
        if !file.is_file() {
            return Err(bad_input(format!(
                "cannot reproduce: input {path} ({key}) is missing: no file {}",
                file.display()
            )));
        }
        // Human games by their text, as the manifest records them.
        let now = if key == "sources.human_games" {
            sha256_content(&file)?
        } else {
            sha256_file(&file)?
        };
        if now != recorded {
            return Err(bad_input(format!(
                "cannot reproduce: input {path} ({key}) changed: the release recorded sha256 \
                 {recorded}, {} has {now}",
                file.display()
            )));
        }
    }
    Ok(())
}

/// The engines the run would start now are the recorded binaries (by
/// sha256) with the recorded options.
fn check_engines(
    manifest: &ReleaseManifest,
    config: &PipelineConfig,
    engine_flag: Option<&PathBuf>,
    run: &RunAsked,
) -> Result<()> {
    if let Some(recorded) = manifest.engine.get("sha256").and_then(Value::as_str) {
        if run.engine_flag && engine_flag.is_none() {
            return Err(bad_input(format!(
                "cannot reproduce: the run was given `run --engine` (engine {}, sha256 \
                 {recorded}); name that binary with --engine",
                manifest.engine["id"].as_str().unwrap_or("?")
            )));
        }
        let flags = crate::engine::settings::EngineArgs {
            engine: engine_flag.cloned(),
            ..Default::default()
        };
        let (spec, _) = flags.resolve(&config.engine)?;
        same_engine("the engine", &manifest.engine, &spec)?;
    }
    let second = manifest.second_engine.as_ref().filter(|s| s.is_object());
    if let (Some(recorded), Some(section)) = (second, &config.verify.second_engine) {
        same_engine("verify's second engine", recorded, &section.spec()?)?;
    }
    Ok(())
}

/// Refuses an engine whose binary or options are not the recorded ones.
fn same_engine(
    what: &str,
    recorded: &Value,
    spec: &crate::engine::process::EngineSpec,
) -> Result<()> {
    let id = recorded["id"].as_str().unwrap_or("?");
    let sha = recorded["sha256"].as_str().unwrap_or_default();
    let now = sha256_file(&spec.path).map_err(|e| {
        bad_input(format!(
            "cannot reproduce: {what} {} cannot be read: {e:#}",
            spec.path.display()
        ))
    })?;
    if now != sha {
        return Err(bad_input(format!(
            "cannot reproduce: the release was made by {what} {id} with sha256 {sha}; {} is \
             another binary (sha256 {now})",
            spec.path.display()
        )));
    }
    let options: serde_json::Map<String, Value> = spec
        .options
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    if let Some(theirs) = recorded.get("options")
        && *theirs != Value::Object(options.clone())
    {
        return Err(bad_input(format!(
            "cannot reproduce: {what} {id} ran with the options {theirs}; the config now sends {}",
            Value::Object(options)
        )));
    }
    Ok(())
}

/// The scratch output folder (`--scratch`, which must be new or empty, or
/// a new temporary folder) and whether it is temporary.
fn scratch_folder(args: &ReproduceArgs, run: &RunAsked) -> Result<(PathBuf, bool)> {
    let (dir, temporary) = match &args.scratch {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!(
                "puzzleforge-reproduce-{}-{}",
                run.release,
                std::process::id()
            )),
            true,
        ),
    };
    if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(bad_input(format!(
            "--scratch {}: not empty; reproduce writes into a new or empty folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok((dir.canonicalize()?, temporary))
}

/// The earlier releases the draw excluded, copied into the scratch output
/// folder where the release's manifest names them (relative to its
/// release stage folder), and registered there: the repeated draw
/// excludes the same puzzles. Each file is checked by sha256 first.
fn copy_earlier_releases(
    manifest: &ReleaseManifest,
    stage_dir: &Path,
    scratch: &Path,
) -> Result<()> {
    let name = crate::stages::StageName::Release.as_str();
    // Where the reproduced release's stage folder will be, relative to the
    // scratch output folder: `<release>/release`.
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    for file in &manifest.exclusions.files {
        let path = stage_dir.join(&file.path);
        let now = sha256_file(&path).map_err(|e| {
            bad_input(format!(
                "cannot reproduce: the earlier release file {} the draw excluded: {e:#}",
                path.display()
            ))
        })?;
        if now != file.sha256 {
            return Err(bad_input(format!(
                "cannot reproduce: the earlier release file {} changed since the draw excluded \
                 it (sha256 recorded {}, now {now})",
                path.display(),
                file.sha256
            )));
        }
        // `../../OTHER/release/test.csv`: OTHER must sit beside this release.
        let parts: Vec<Component> = Path::new(&file.path).components().collect();
        match parts.as_slice() {
            [
                Component::ParentDir,
                Component::ParentDir,
                Component::Normal(other),
                Component::Normal(stage),
                _,
            ] if *stage == name => {
                folders.insert(PathBuf::from(other));
            }
            _ => {
                return Err(bad_input(format!(
                    "cannot reproduce: the draw excluded {}, which is not a release beside this \
                     one in its output folder",
                    path.display()
                )));
            }
        }
    }
    let output_dir = stage_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    for other in folders {
        let from = output_dir.join(&other).join(name);
        let to = scratch.join(&other).join(name);
        copy_folder(&from, &to)?;
        crate::stages::release::folder::ReleaseFolder::at(&to).register_in(scratch)?;
    }
    Ok(())
}

fn copy_folder(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_folder(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| {
                format!("copying {} to {}", entry.path().display(), target.display())
            })?;
        }
    }
    Ok(())
}

/// The seconds the release's stages recorded in their `stage.json`.
fn recorded_seconds(release_dir: &Path) -> f64 {
    let total: f64 = crate::stages::StageName::ALL
        .iter()
        .filter_map(|stage| {
            crate::pipeline::manifest::StageManifest::previous(&release_dir.join(stage.as_str()))
        })
        .map(|record| record.seconds)
        .sum();
    (total * 1000.0).round() / 1000.0
}

fn human_lines(summary: &ReproduceSummary, temporary: bool) -> String {
    let mut text = format!(
        "reproduced {} in {}: {} files identical, {} identical but for fields set aside, {} \
         skipped, {} differ (in {:.1}s; the release's stage.json files record {:.1}s)\n",
        summary.release.display(),
        summary.scratch.display(),
        summary.comparison.identical.len(),
        summary.comparison.identical_but.len(),
        summary.comparison.skipped.len(),
        summary.comparison.differ.len(),
        summary.reproduce_seconds,
        summary.stage_seconds,
    );
    // One line per kind of field set aside, naming its files.
    let mut by_fields: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for aside in &summary.comparison.identical_but {
        by_fields
            .entry(aside.fields.as_str())
            .or_default()
            .push(aside.file.as_str());
    }
    for (fields, files) in by_fields {
        text.push_str(&format!(
            "  identical but for {fields}: {}\n",
            files.join(", ")
        ));
    }
    for skipped in &summary.comparison.skipped {
        text.push_str(&format!(
            "  skipped ({}): {}\n",
            skipped.fields, skipped.file
        ));
    }
    for difference in &summary.comparison.differ {
        text.push_str(&format!(
            "  differs: {} ({})\n",
            difference.file, difference.why
        ));
    }
    if summary.comparison.differ.is_empty() && temporary {
        text.push_str("every file agrees; the scratch folder was removed\n");
    }
    text
}

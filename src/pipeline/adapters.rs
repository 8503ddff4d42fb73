//! The stages `puzzleforge run` chains, each a thin adapter from
//! `pipeline.toml` to the stage's own module.
//!
//! Data flows one way: sources -> ingest -> (selfplay -> mine -> rate) ->
//! release -> export -> eval. A stage reads only the config and the
//! committed outputs of the stages before it.

use anyhow::Result;
use clap::ValueEnum;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::pipeline::stage::{RunContext, Stage};

/// Every stage `run` knows, in pipeline order.
pub fn all() -> Vec<Box<dyn Stage>> {
    vec![
        Box::new(IngestPuzzles),
        Box::new(IngestGames),
        Box::new(Selfplay),
        Box::new(Mine),
        Box::new(Rate),
        Box::new(Verify),
        Box::new(Release),
        Box::new(Export),
        Box::new(Eval),
    ]
}

/// The file name a source gets inside a stage folder: its name without
/// compression and format suffixes, plus `suffix`.
fn output_name(source: &Path, suffix: &str) -> String {
    let mut stem = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into());
    for ext in [".zst", ".csv", ".jsonl", ".json", ".pgn", ".candidates"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s.to_string();
        }
    }
    format!("{stem}{suffix}")
}

/// Files with one of the given endings in a stage's committed folder,
/// sorted by name.
fn stage_files(ctx: &RunContext, stage: &str, ending: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(ctx.stage_dir(stage))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().ends_with(ending))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn configured_paths(ctx: &RunContext, paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().map(|p| ctx.config_relative(p)).collect()
}

/// `ingest_puzzles`: validates every configured puzzle source.
struct IngestPuzzles;

impl Stage for IngestPuzzles {
    fn name(&self) -> &'static str {
        "ingest_puzzles"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!({"filters": ctx.config.ingest.puzzles, "seed": ctx.config.pipeline.seed})
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(configured_paths(ctx, &ctx.config.sources.puzzles))
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let mut files = Vec::new();
        for source in self.inputs(ctx)? {
            let output = out_dir.join(output_name(&source, ".csv"));
            let rejects = out_dir.join(output_name(&source, ".rejects.csv"));
            let config = crate::stages::ingest_puzzles::IngestPuzzlesConfig {
                seed: ctx.config.pipeline.seed,
                ..ctx.config.ingest.puzzles.clone()
            };
            let summary = crate::stages::ingest_puzzles::run_puzzles_with(
                &config,
                &source,
                &output,
                Some(&rejects),
            )?;
            files.push(json!({"source": source, "summary": summary.json}));
        }
        Ok(json!({"sources": files.len(), "files": files}))
    }
}

/// `ingest_games`: finds candidate positions in the configured game dumps.
struct IngestGames;

impl Stage for IngestGames {
    fn name(&self) -> &'static str {
        "ingest_games"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(ctx.config.ingest.games)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(configured_paths(ctx, &ctx.config.sources.games))
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let mut files = Vec::new();
        for source in self.inputs(ctx)? {
            let output = out_dir.join(output_name(&source, ".candidates.csv"));
            let summary = crate::stages::ingest_games::run_games_with(
                &ctx.config.ingest.games,
                &source,
                &output,
            )?;
            files.push(json!({"source": source, "summary": summary.json}));
        }
        Ok(json!({"sources": files.len(), "files": files}))
    }
}

/// `selfplay`: reproducible Epoch-style games.
struct Selfplay;

impl Selfplay {
    fn config(ctx: &RunContext) -> crate::stages::selfplay::SelfplayConfig {
        crate::stages::selfplay::SelfplayConfig {
            seed: ctx.config.pipeline.seed,
            ..ctx.config.selfplay.clone()
        }
    }
}

impl Stage for Selfplay {
    fn name(&self) -> &'static str {
        "selfplay"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(Self::config(ctx))
    }

    fn inputs(&self, _ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let pool = ctx.engine_pool()?;
        let config = Self::config(ctx);
        // A shard plays its slice of the game numbers; each game's bytes
        // depend only on the seed and its number.
        let numbers = match &ctx.shard {
            Some(shard) => {
                let range = shard.range(config.games);
                range.start + 1..=range.end
            }
            None => 1..=config.games,
        };
        let summary = crate::stages::selfplay::run_selfplay_range(
            &config,
            &pool,
            &out_dir.join("games.pgn"),
            numbers,
        )?;
        Ok(summary.json)
    }
}

/// `mine`: unique-best-move puzzles from the self-play games and from the
/// Lichess game candidates.
struct Mine;

impl Stage for Mine {
    fn name(&self) -> &'static str {
        "mine"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(ctx.config.mine)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, "selfplay", ".pgn");
        inputs.extend(stage_files(ctx, "ingest_games", ".candidates.csv"));
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let pool = ctx.engine_pool()?;
        let mut files = Vec::new();
        let games = stage_files(ctx, "selfplay", ".pgn");
        let candidates = stage_files(ctx, "ingest_games", ".candidates.csv");
        for (input, sliced_here) in games
            .into_iter()
            .map(|p| (p, false))
            .chain(candidates.into_iter().map(|p| (p, true)))
        {
            let output = out_dir.join(output_name(&input, ".puzzles.csv"));
            let loaded = match &ctx.shard {
                // Self-play games are sliced by the selfplay stage already;
                // a shard may have none of them (more shards than games).
                Some(_) if !sliced_here && std::fs::metadata(&input)?.len() == 0 => {
                    crate::stages::mine::Loaded {
                        units: Vec::new(),
                        skipped: Vec::new(),
                    }
                }
                Some(_) if !sliced_here => crate::stages::mine::load_input(&input)?,
                // Every shard ingests the same candidates; each mines its
                // slice of them.
                Some(shard) => {
                    let mut loaded = crate::stages::mine::load_input(&input)?;
                    let range = shard.range(loaded.units.len() as u64);
                    loaded.units = loaded.units[range.start as usize..range.end as usize].to_vec();
                    loaded
                }
                None => crate::stages::mine::load_input(&input)?,
            };
            let summary =
                crate::stages::mine::run_mine_loaded(&ctx.config.mine, &pool, &loaded, &output)?;
            files.push(json!({"input": input, "summary": summary.json}));
        }
        Ok(json!({"inputs": files.len(), "files": files}))
    }
}

/// `rate`: engine-estimated ratings for the mined puzzles, from the
/// committed (or a configured) model fitted on real Lichess puzzles.
struct Rate;

impl Rate {
    fn config(ctx: &RunContext) -> crate::stages::rate::RateConfig {
        crate::stages::rate::RateConfig {
            seed: ctx.config.pipeline.seed,
            model: ctx
                .config
                .rate
                .model
                .as_ref()
                .map(|m| ctx.config_relative(m)),
            ..ctx.config.rate.clone()
        }
    }
}

impl Stage for Rate {
    fn name(&self) -> &'static str {
        "rate"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(Self::config(ctx))
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = stage_files(ctx, "mine", ".puzzles.csv");
        if let Some(model) = &Self::config(ctx).model {
            inputs.push(model.clone());
        }
        Ok(inputs)
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let engine = ctx
            .engine
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the rate stage runs without an engine"))?;
        let config = Self::config(ctx);
        let mut files = Vec::new();
        for input in stage_files(ctx, "mine", ".puzzles.csv") {
            let output = out_dir.join(output_name(&input, ".csv"));
            let job = crate::stages::rate::RateJob {
                input: &input,
                output: &output,
                calibrate: &[],
                save_model: None,
                features_out: None,
                config: &config,
                engine: engine.spec.clone(),
                pool: engine.pool.clone(),
            };
            let summary = crate::stages::rate::run_rate_with(&job)?;
            files.push(json!({"input": input, "summary": summary.json}));
        }
        Ok(json!({"inputs": files.len(), "files": files}))
    }
}

/// `verify`: every mined puzzle searched again with more nodes; the
/// figures go into the release manifest.
struct Verify;

impl Verify {
    /// The stage's totals, which the release manifest records.
    const SUMMARY: &'static str = "verify.json";
}

impl Stage for Verify {
    fn name(&self) -> &'static str {
        "verify"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(ctx.config.verify)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(stage_files(ctx, "mine", ".puzzles.csv"))
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let pool = ctx.engine_pool()?;
        let config = crate::stages::verify::VerifyConfig {
            factor: ctx.config.verify.factor,
            nodes: None,
            nodes_override: false,
            criterion: None,
        };
        let mut files = Vec::new();
        let mut totals = json!({"factor": config.factor, "puzzles": 0, "checked": 0,
            "best_holds": 0, "best_and_criterion_hold": 0, "not_checkable": 0});
        for input in self.inputs(ctx)? {
            let output = out_dir.join(output_name(&input, ".verify.jsonl"));
            let summary = crate::stages::verify::run_verify_with(&config, &pool, &input, &output)?;
            for key in [
                "puzzles",
                "checked",
                "best_holds",
                "best_and_criterion_hold",
                "not_checkable",
            ] {
                let sum =
                    totals[key].as_u64().unwrap_or(0) + summary.json[key].as_u64().unwrap_or(0);
                totals[key] = json!(sum);
            }
            // Names, not paths: the release manifest embeds this file, and
            // its bytes must not depend on where the release folder is.
            let mut counts = summary.json;
            if let Some(map) = counts.as_object_mut() {
                map.remove("report");
            }
            files.push(json!({
                "input": output_name(&input, ".csv"),
                "report": output_name(&input, ".verify.jsonl"),
                "counts": counts,
            }));
        }
        totals["files"] = json!(files);
        crate::core::fileio::write_atomic(
            &out_dir.join(Self::SUMMARY),
            format!("{}\n", serde_json::to_string_pretty(&totals)?).as_bytes(),
        )?;
        Ok(totals)
    }
}

/// `release`: the stratified, game-grouped train/test split.
struct Release;

impl Release {
    /// The puzzle pool: every validated Lichess puzzle file, and the rated
    /// mined puzzles when the pipeline mines.
    fn pool(ctx: &RunContext) -> Vec<PathBuf> {
        let mut pool = stage_files(ctx, "ingest_puzzles", ".csv");
        pool.retain(|p| !p.to_string_lossy().ends_with(".rejects.csv"));
        pool.extend(stage_files(ctx, "rate", ".csv"));
        pool
    }

    /// The `verify` stage's totals, when the pipeline verifies.
    fn verify_summary(ctx: &RunContext) -> Option<PathBuf> {
        let path = ctx.stage_dir("verify").join(Verify::SUMMARY);
        let verifies = ctx.config.pipeline.stages.iter().any(|s| s == "verify");
        (verifies && path.is_file()).then_some(path)
    }

    /// Earlier releases under the output folder (other release names), whose
    /// puzzles the new release must not repeat.
    fn earlier_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let root = ctx
            .release_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let own = ctx.stage_dir("release");
        let mut releases = crate::stages::release::find_releases(&root, &own)?;
        let this_run = ctx.release_dir.canonicalize().ok();
        releases.retain(|r| {
            r.canonicalize()
                .ok()
                .zip(this_run.as_ref())
                .is_none_or(|(r, this)| !r.starts_with(this))
        });
        Ok(releases)
    }
}

impl Stage for Release {
    fn name(&self) -> &'static str {
        "release"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!({"split": ctx.config.split, "seed": ctx.config.pipeline.seed, "tier": ctx.tier})
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        let mut inputs = Self::pool(ctx);
        inputs.extend(Self::verify_summary(ctx));
        for release in Self::earlier_releases(ctx)? {
            inputs.extend(crate::stages::release::card::split_files(&release));
        }
        Ok(inputs)
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let pool = Self::pool(ctx);
        if pool.is_empty() {
            return Err(bad_input(
                "the release stage has no puzzles: add ingest_puzzles (or mine and rate) to pipeline.stages",
            ));
        }
        let args = crate::stages::release::SplitArgs {
            pool,
            output: out_dir.to_path_buf(),
            config: Some(ctx.config_path.to_path_buf()),
            tier: ctx.tier.clone(),
            seed: Some(ctx.config.pipeline.seed),
            bin_width: None,
            train_per_cell: None,
            test_per_cell: None,
            strict: false,
            exclude: Self::earlier_releases(ctx)?
                .iter()
                .flat_map(|release| crate::stages::release::card::split_files(release))
                .collect(),
            exclude_releases_under: None,
            no_release_exclusion: true,
            engine_id: None,
            engine_option: Vec::new(),
            verify: Self::verify_summary(ctx),
        };
        Ok(crate::stages::release::run_split(&args)?.json)
    }
}

/// `export`: the release in the configured exchange formats.
struct Export;

impl Stage for Export {
    fn name(&self) -> &'static str {
        "export"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!(ctx.config.export)
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(crate::stages::release::card::split_files(
            &ctx.stage_dir("release"),
        ))
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let split = crate::stages::export::SplitChoice::from_str(&ctx.config.export.split, true)
            .map_err(|_| {
                bad_input(format!(
                    "{}: export.split must be train, test or both, not {:?}",
                    ctx.config_path.display(),
                    ctx.config.export.split
                ))
            })?;
        let mut done = Vec::new();
        for name in &ctx.config.export.formats {
            let format = crate::stages::export::ExportFormat::from_str(name, true).map_err(|_| {
                bad_input(format!(
                    "{}: export.formats has unknown format {name:?} (inspect, dspy, openai-evals, lichess)",
                    ctx.config_path.display()
                ))
            })?;
            let args = crate::stages::export::ExportArgs {
                release: ctx.stage_dir("release"),
                format,
                output: out_dir.join(name),
                split,
            };
            let summary = crate::stages::export::run_export(&args)?;
            done.push(json!({"format": name, "summary": summary.json}));
        }
        Ok(json!({"formats": done.len(), "exports": done}))
    }
}

/// `eval`: the fresh test split played by the configured player (a
/// built-in baseline by default), with its report.
struct Eval;

impl Stage for Eval {
    fn name(&self) -> &'static str {
        "eval"
    }

    fn config_section(&self, ctx: &RunContext) -> Value {
        json!({"eval": ctx.config.eval, "seed": ctx.config.pipeline.seed})
    }

    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>> {
        Ok(crate::stages::release::card::split_files(
            &ctx.stage_dir("release"),
        ))
    }

    fn uses_engine(&self) -> bool {
        true
    }

    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value> {
        let args = crate::stages::eval::EvalArgs {
            set: ctx.stage_dir("release"),
            model: None,
            templates: Vec::new(),
            prompt: None,
            output: out_dir.to_path_buf(),
            split: "test".to_string(),
            repeats: None,
            seed: Some(ctx.config.pipeline.seed),
            limit: None,
            workers: None,
            config: Some(ctx.config_path.to_path_buf()),
            retry_failed: false,
            no_regret: false,
            engine: ctx.engine.as_ref().map(|e| e.spec.path.clone()),
            engine_workers: Some(ctx.engine.as_ref().map_or(1, |e| e.pool.workers)),
        };
        Ok(crate::stages::eval::run_eval(&args)?.json)
    }
}

//! `run --aim RUN --solve-rate P`: the flags' arguments, and the tier
//! aimed at a model added to the config's `[release.tiers]` as `aimed`.
//! The tier itself, whose rating window is where the model's solve curve
//! in eval run `RUN` gives `P`, is the eval stage's
//! ([`crate::stages::eval::aim`]). The tier is the `[release]` cells inside
//! that window, filled as any tier is (from the puzzle sources, or by
//! generation with its quotas, budgets, plan and stopping rule), and its
//! card names what it was aimed at.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::pipeline::config::PipelineConfig;
use crate::stages::eval::aim::aimed_tier;

/// The name of the tier `run --aim` adds to `[release.tiers]`.
pub(crate) const AIMED_TIER: &str = "aimed";

/// `run --aim` and `--solve-rate` (their help: `cli::run::AimFlags`).
#[derive(Debug, Clone, Default)]
pub struct AimArgs {
    pub aim: Option<PathBuf>,
    pub solve_rate: Option<f64>,
}

/// Parses `--solve-rate`: a share strictly between 0 and 1.
pub(crate) fn parse_solve_rate(text: &str) -> std::result::Result<f64, String> {
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if rate > 0.0 && rate < 1.0 {
        Ok(rate)
    } else {
        Err(format!(
            "{text} is not a solve rate strictly between 0 and 1 (0.3 asks for 30%)"
        ))
    }
}

/// The aimed tier of `run` (if `--aim` was given) added to the config's
/// `[release.tiers]`; returns the tier name `run` should produce.
pub(crate) fn add_aimed_tier(
    args: &AimArgs,
    config: &mut PipelineConfig,
    config_path: &Path,
) -> Result<Option<String>> {
    let (Some(run), Some(solve_rate)) = (&args.aim, args.solve_rate) else {
        return Ok(None);
    };
    if config.release.tiers.contains_key(AIMED_TIER) {
        return Err(bad_input(format!(
            "{}: [release.tiers] already has a tier named {AIMED_TIER:?}, the name `run --aim` gives \
             its tier: rename it",
            config_path.display()
        )));
    }
    let tier = aimed_tier(run, solve_rate, config.release.bin_width)?;
    config.release.tiers.insert(AIMED_TIER.to_string(), tier);
    Ok(Some(AIMED_TIER.to_string()))
}

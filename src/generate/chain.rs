//! The self-play chain: games played, mined, rated and verified
//! (`selfplay` -> `mine` -> `rate` -> `verify`). Its order is
//! [`StageName::ALL`]'s ([`steps`]), and each step is one function here
//! that both routes call: the plain stages for their files
//! ([`crate::pipeline::adapters`]) and generation for each batch of games
//! ([`crate::generate`]). Apart so that the two routes run one
//! chain and cannot drift.

use anyhow::Result;
use std::ops::RangeInclusive;
use std::path::Path;

use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::stages::StageName;
use crate::stages::mine::{Loaded, MineConfig, MinedUnits};
use crate::stages::rate::{RateConfig, RateSummary};
use crate::stages::selfplay::{SelfplayConfig, SelfplaySummary};
use crate::stages::verify::{VerifyConfig, VerifyCounts, VerifyFiles};

/// Whether `stage` is a step of the chain.
pub(crate) fn is_step(stage: StageName) -> bool {
    matches!(
        stage,
        StageName::Selfplay | StageName::Mine | StageName::Rate | StageName::Verify
    )
}

/// The chain's steps, in pipeline order.
pub(crate) fn steps() -> impl Iterator<Item = StageName> {
    StageName::ALL.into_iter().filter(|&stage| is_step(stage))
}

/// `selfplay`: games `numbers` played into `output` (a game's bytes depend
/// only on the settings, the seed and its number).
pub(crate) fn play(
    section: &SelfplayConfig,
    pool: &EnginePool,
    output: &Path,
    numbers: RangeInclusive<u64>,
) -> Result<Report<SelfplaySummary>> {
    crate::stages::selfplay::run_selfplay_range(section, pool, output, numbers)
}

/// `mine`: the puzzles of `loaded` (games or candidates) into `output`,
/// with each unit's funnel.
pub(crate) fn mine(
    section: &MineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    output: &Path,
) -> Result<MinedUnits> {
    crate::stages::mine::mine_loaded_per_unit(section, pool, loaded, output)
}

/// `rate`: the mined puzzles of `input` rated into `output` with the
/// configured model. The rows not rated are counted in the summary, not
/// listed: a rejects file would be one more output of every stage folder
/// and batch.
pub(crate) fn rate(
    section: &RateConfig,
    input: &Path,
    output: &Path,
) -> Result<Report<RateSummary>> {
    crate::stages::rate::run_rate_with(&crate::stages::rate::RateJob {
        input,
        output,
        rejects: None,
        calibrate: &[],
        save_model: None,
        features: Default::default(),
        learning_curve: &[],
        config: section,
    })
}

/// `verify`: every puzzle of `files.input` searched again (and by the
/// second engine's pool `second`, when `[verify.second_engine]` is set);
/// the summary and its counts.
pub(crate) fn verify(
    section: &VerifyConfig,
    pool: &EnginePool,
    second: Option<&EnginePool>,
    files: &VerifyFiles,
) -> Result<(Summary, VerifyCounts)> {
    crate::stages::verify::run_verify_with(section, pool, second, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_runs_in_pipeline_order() {
        assert_eq!(StageName::list(steps()), "selfplay, mine, rate, verify");
    }
}

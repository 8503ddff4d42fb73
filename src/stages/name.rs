//! The stages `run` knows, by name ([`StageName`]): in `pipeline.stages`,
//! in `stage.json` and as their folders' names, with their order
//! ([`StageName::ALL`]). Apart because everything that orders or names the
//! stages (the config, the manifests, generation's chain) reads it without
//! the stage contract.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A stage `run` knows: its name in `pipeline.stages`, in `stage.json` and
/// as its folder's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageName {
    IngestPuzzles,
    IngestGames,
    Selfplay,
    Mine,
    Rate,
    Verify,
    Release,
    Export,
    Eval,
}

impl StageName {
    /// Every stage, in pipeline order.
    pub(crate) const ALL: [StageName; 9] = [
        StageName::IngestPuzzles,
        StageName::IngestGames,
        StageName::Selfplay,
        StageName::Mine,
        StageName::Rate,
        StageName::Verify,
        StageName::Release,
        StageName::Export,
        StageName::Eval,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StageName::IngestPuzzles => "ingest_puzzles",
            StageName::IngestGames => "ingest_games",
            StageName::Selfplay => "selfplay",
            StageName::Mine => "mine",
            StageName::Rate => "rate",
            StageName::Verify => "verify",
            StageName::Release => "release",
            StageName::Export => "export",
            StageName::Eval => "eval",
        }
    }

    /// The stage named `name`, if `run` knows one.
    pub(crate) fn from_name(name: &str) -> Option<StageName> {
        StageName::ALL
            .into_iter()
            .find(|stage| stage.as_str() == name)
    }

    /// The version of what the stage computes (its `ALGORITHM`), as its
    /// `stage.json` records it: a stage recorded under another version is
    /// redone. The stages that judge by the uniqueness rule carry the
    /// test-only switch on its threshold ([`crate::engine::criterion::rule_variant`]).
    pub(crate) fn algorithm(self) -> String {
        let version = match self {
            StageName::IngestPuzzles => crate::stages::ingest_puzzles::ALGORITHM,
            StageName::IngestGames => crate::stages::ingest_games::ALGORITHM,
            StageName::Selfplay => crate::stages::selfplay::ALGORITHM,
            StageName::Mine => crate::stages::mine::ALGORITHM,
            StageName::Rate => crate::stages::rate::ALGORITHM,
            StageName::Verify => crate::stages::verify::ALGORITHM,
            StageName::Release => crate::stages::release::ALGORITHM,
            StageName::Export => crate::stages::export::ALGORITHM,
            StageName::Eval => crate::stages::eval::ALGORITHM,
        };
        match self {
            StageName::Mine | StageName::Verify => {
                format!("{version}{}", crate::engine::criterion::rule_variant())
            }
            _ => version.to_string(),
        }
    }

    /// What the pipeline knows of the stage beyond its name: the one table
    /// of stage properties, one row per stage, that every other place
    /// reads ([`StageName::is_sharded`], the chain's steps, the config's
    /// checks, the stages' [`crate::pipeline::stage::Stage::uses_engine`]).
    #[rustfmt::skip]
    pub(crate) const fn properties(self) -> StageProperties {
        let (sharded, chain_step, generate_needs, uses_engine, ingest) = match self {
            //                           sharded  chain   generate  engine  ingest
            StageName::IngestPuzzles => (true,    false,  false,    false,  true),
            StageName::IngestGames   => (true,    false,  false,    false,  true),
            StageName::Selfplay      => (true,    true,   true,     true,   false),
            StageName::Mine          => (true,    true,   true,     true,   false),
            StageName::Rate          => (true,    true,   true,     false,  false),
            StageName::Verify        => (false,   true,   false,    true,   false),
            StageName::Release       => (false,   false,  false,    false,  false),
            StageName::Export        => (false,   false,  false,    false,  false),
            StageName::Eval          => (false,   false,  false,    true,   false),
        };
        StageProperties { sharded, chain_step, generate_needs, uses_engine, ingest }
    }

    /// Whether `run --shard` runs the stage (on its slice of the work); the
    /// others are left for `merge` ([`StageProperties::sharded`]).
    pub(crate) const fn is_sharded(self) -> bool {
        self.properties().sharded
    }

    /// The names of `stages`, comma-separated, for messages.
    pub(crate) fn list(stages: impl IntoIterator<Item = StageName>) -> String {
        stages
            .into_iter()
            .map(StageName::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The properties of one stage, as [`StageName::properties`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StageProperties {
    /// `run --shard` runs the stage on its slice of the work; the others
    /// are left for `merge`.
    pub sharded: bool,
    /// A step of the self-play chain (`selfplay` -> `mine` -> `rate` ->
    /// `verify`), in pipeline order.
    pub chain_step: bool,
    /// `[generate]` makes the stage's work from its batches, so a run with
    /// `[generate]` on must list it in `pipeline.stages`.
    pub generate_needs: bool,
    /// The stage's results depend on the engine binary: a run that lists
    /// it resolves `[engine]` and needs its path. `rate` uses none (the
    /// rating model reads Maia nets and the board, no UCI engine).
    pub uses_engine: bool,
    /// The stage reads the sources (`[sources]`), before any game is
    /// played: generation leaves it to the plain route.
    pub ingest: bool,
}

impl fmt::Display for StageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_are_one_list_in_config_manifests_and_folders() {
        for stage in StageName::ALL {
            assert_eq!(serde_json::to_value(stage).unwrap(), stage.as_str());
            assert_eq!(StageName::from_name(stage.as_str()), Some(stage));
            assert_eq!(format!("{stage:<16}").trim_end(), stage.as_str());
        }
        assert_eq!(StageName::from_name("split"), None);
        let sharded: Vec<StageName> = StageName::ALL
            .into_iter()
            .filter(|s| s.is_sharded())
            .collect();
        assert_eq!(
            StageName::list(sharded),
            "ingest_puzzles, ingest_games, selfplay, mine, rate"
        );
    }

    #[test]
    fn the_table_of_stage_properties_reads_as_the_stages_do() {
        let with = |property: fn(StageProperties) -> bool| {
            StageName::list(
                StageName::ALL
                    .into_iter()
                    .filter(|s| property(s.properties())),
            )
        };
        assert_eq!(with(|p| p.chain_step), "selfplay, mine, rate, verify");
        assert_eq!(with(|p| p.generate_needs), "selfplay, mine, rate");
        assert_eq!(with(|p| p.uses_engine), "selfplay, mine, verify, eval");
        assert_eq!(with(|p| p.ingest), "ingest_puzzles, ingest_games");
    }
}

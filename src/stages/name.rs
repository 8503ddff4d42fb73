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

    /// Whether `run --shard` runs the stage (on its slice of the work); the
    /// others are left for `merge`.
    pub(crate) fn is_sharded(self) -> bool {
        matches!(
            self,
            StageName::IngestPuzzles
                | StageName::IngestGames
                | StageName::Selfplay
                | StageName::Mine
                | StageName::Rate
        )
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
}

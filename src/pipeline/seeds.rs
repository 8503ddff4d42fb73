//! The seeds of one release's run ([`RunSeeds`]): the run seed and the
//! self-play seed of the release it makes, worked out once from the config
//! and the release's name and handed to the stages that draw with them.
//! Apart so that the config stays as its file says (nothing is written into
//! it at run time), and so that `run`, a shard and `merge` of one release
//! derive the same seeds the same way.

use crate::pipeline::config::PipelineSection;

/// The seeds a run's stages draw with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunSeeds {
    /// `pipeline.seed`: every stage's draws but the plain self-play games'.
    pub run: u64,
    /// The seed the `selfplay` stage plays its games with (without
    /// `[generate]`): the run seed for `pipeline.release`, one derived from
    /// the release's name for any other
    /// ([`crate::stages::selfplay::release_seed`]).
    pub selfplay: u64,
}

impl RunSeeds {
    /// The seeds of release `release` of a config whose `[pipeline]` is
    /// `pipeline`.
    pub(crate) fn of(pipeline: &PipelineSection, release: &str) -> RunSeeds {
        let selfplay = if release == pipeline.release {
            pipeline.seed
        } else {
            crate::stages::selfplay::release_seed(pipeline.seed, release)
        };
        RunSeeds {
            run: pipeline.seed,
            selfplay,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config's own release plays with the run seed (the games it
    /// always played); any other release with a seed of its name.
    #[test]
    fn only_another_release_plays_with_a_seed_of_its_own() {
        let pipeline = PipelineSection {
            seed: 7,
            release: "default".to_string(),
            ..PipelineSection::default()
        };
        let own = RunSeeds::of(&pipeline, "default");
        assert_eq!((own.run, own.selfplay), (7, 7));
        let other = RunSeeds::of(&pipeline, "second");
        assert_eq!(other.run, 7);
        assert_eq!(
            other.selfplay,
            crate::stages::selfplay::release_seed(7, "second")
        );
        assert_ne!(other.selfplay, 7);
    }
}

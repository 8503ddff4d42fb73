//! Every random draw in puzzleforge comes from [`rng`]: one function of the
//! run seed, a [`Domain`] naming what the draws are for, and a [`Key`]
//! naming the item they are for (a game number, a puzzle id, a cell key).
//! An item's draws depend on nothing else: not on the thread, worker or
//! shard that handled it, nor on which items came before it. That is what
//! makes a rerun, any worker count and `run --shard` + `merge` give the
//! same bytes.
//!
//! # Fixed derivations
//!
//! Three domains keep the derivations they had before this module existed,
//! because published releases depend on them: the default run's self-play
//! games and its train/test split are made from these numbers, and so are
//! the folds of the committed rating model's held-out figures
//! (`models/rate_model.json`, which `rate --calibrate` must reproduce).
//! A release must be reproducible from its config. Never change them:
//!
//! - [`Domain::SelfplayGame`], key the game number `n`:
//!   `ChaCha8Rng::seed_from_u64(seed)` on stream `n`.
//! - [`Domain::RateCalibrationFolds`], key [`Key::Run`]:
//!   `ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_f01d)`.
//! - [`Domain::ReleaseCell`], key the cell key:
//!   `ChaCha8Rng::from_seed(sha256("puzzleforge-split|<seed>|<cell key>"))`.
//!
//! # Every other domain
//!
//! `ChaCha8Rng::from_seed(sha256("puzzleforge-seed|<domain>|<seed>|<key>"))`,
//! with `<domain>` the domain's [`Domain::name`] and `<key>` written as
//! `run`, `index:<n>`, `pair:<a>:<b>` or `name:<text>`. The text fixes
//! every part but the last, so distinct (seed, domain, key) triples hash
//! distinct texts. A fixed domain given a key of another kind than its own
//! also draws by this rule.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// What a stream of draws is for. Each use of randomness in the program has
/// its own domain, so two uses never share draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    /// The reservoir sample of `ingest puzzles --sample`. Key: [`Key::Run`].
    IngestSample,
    /// The random opening plies and player Elos of one self-play game.
    /// Key: [`Key::Index`], the 1-based game number. Fixed (see the module
    /// comment).
    SelfplayGame,
    /// Which calibration rows are kept when there are more than
    /// `calibrate_max_rows`. Key: [`Key::Run`].
    RateCalibrationSample,
    /// The assignment of calibration rows to folds. Key: [`Key::Run`].
    /// Fixed (see the module comment).
    RateCalibrationFolds,
    /// The shuffle of one release cell's candidates. Key: [`Key::Name`],
    /// the cell key. Fixed (see the module comment).
    ReleaseCell,
    /// The `random` player's move. Key: [`Key::Pair`], (repeat, position).
    EvalRandomMove,
    /// The Elo-limited engine player's weakened choice. Key: [`Key::Pair`],
    /// (repeat, position).
    EvalEngineMove,
    /// The `seed` a model request carries. Key: [`Key::Index`], the repeat.
    EvalRequestSeed,
    /// The retry jitter of one model call. Key: [`Key::Index`], the job.
    EvalRetryJitter,
    /// The puzzles `eval --limit N` asks: the shuffle of one cell's puzzles
    /// (key [`Key::Name`], the cell key, as the release writes it) and the
    /// order the cells take turns in (key [`Key::Run`]).
    EvalSample,
    /// The `random` player's move in a rollout. Key: [`Key::Pair`],
    /// (game, model move).
    RolloutRandomMove,
    /// The `seed` a rollout's model request carries. Key: [`Key::Pair`],
    /// (game, model move).
    RolloutRequestSeed,
    /// The retry jitter of one rollout model call. Key: [`Key::Pair`],
    /// (game, model move).
    RolloutRetryJitter,
    /// The self-play seed of a named generation profile's games (a band's
    /// profile under `[generate]`). Key: [`Key::Name`], the profile name.
    GenerateProfileSeed,
    /// The self-play seed of a release other than the config's
    /// `pipeline.release` (without `[generate]`). Key: [`Key::Name`], the
    /// release name.
    SelfplayRelease,
    /// The Monte Carlo draws of a generation cost plan (`run --plan`, and
    /// the cost of the cells a run left unfilled): each cell's rate from
    /// its posterior, then its waiting time. Key: [`Key::Run`].
    GeneratePlan,
    /// A `maia:RATING?sample=1` player's move, drawn from the net's move
    /// probabilities at temperature 1. Key: [`Key::Pair`], (repeat,
    /// position).
    EvalMaiaMove,
    /// Which games of the human games file `run` mines for human-game
    /// puzzles (`[human_games] mine_games`). Key: [`Key::Run`].
    HumanGamesSample,
}

impl Domain {
    /// The name hashed into the domain's streams. Changing one changes
    /// every draw of that domain.
    pub fn name(self) -> &'static str {
        match self {
            Domain::IngestSample => "ingest-sample",
            Domain::SelfplayGame => "selfplay-game",
            Domain::RateCalibrationSample => "rate-calibration-sample",
            Domain::RateCalibrationFolds => "rate-calibration-folds",
            Domain::ReleaseCell => "release-cell",
            Domain::EvalRandomMove => "eval-random-move",
            Domain::EvalEngineMove => "eval-engine-move",
            Domain::EvalRequestSeed => "eval-request-seed",
            Domain::EvalRetryJitter => "eval-retry-jitter",
            Domain::EvalSample => "eval-sample",
            Domain::RolloutRandomMove => "rollout-random-move",
            Domain::RolloutRequestSeed => "rollout-request-seed",
            Domain::RolloutRetryJitter => "rollout-retry-jitter",
            Domain::GenerateProfileSeed => "generate-profile-seed",
            Domain::GeneratePlan => "generate-plan",
            Domain::SelfplayRelease => "selfplay-release",
            Domain::EvalMaiaMove => "eval-maia-move",
            Domain::HumanGamesSample => "human-games-sample",
        }
    }
}

/// Which item of a domain the draws are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key<'a> {
    /// One stream for the whole run: a sample, a fold assignment.
    Run,
    /// An item by number: a game, a job.
    Index(u64),
    /// An item by two numbers: (repeat, position), (game, move).
    Pair(u64, u64),
    /// An item by name: a puzzle id, a cell key.
    Name(&'a str),
}

/// The generator of `key`'s draws in `domain` for a run with `run_seed`.
pub fn rng(run_seed: u64, domain: Domain, key: Key<'_>) -> ChaCha8Rng {
    match (domain, key) {
        (Domain::SelfplayGame, Key::Index(game)) => seeded_stream(run_seed, game),
        (Domain::RateCalibrationFolds, Key::Run) => {
            ChaCha8Rng::seed_from_u64(run_seed ^ CALIBRATION_FOLDS_MIX)
        }
        (Domain::ReleaseCell, Key::Name(cell)) => ChaCha8Rng::from_seed(
            Sha256::digest(format!("puzzleforge-split|{run_seed}|{cell}").as_bytes()).into(),
        ),
        _ => {
            let key = match key {
                Key::Run => "run".to_string(),
                Key::Index(n) => format!("index:{n}"),
                Key::Pair(a, b) => format!("pair:{a}:{b}"),
                Key::Name(text) => format!("name:{text}"),
            };
            let text = format!("puzzleforge-seed|{}|{run_seed}|{key}", domain.name());
            ChaCha8Rng::from_seed(Sha256::digest(text.as_bytes()).into())
        }
    }
}

/// What the calibration folds' seed was mixed with before this module.
const CALIBRATION_FOLDS_MIX: u64 = 0x5eed_f01d;

/// One number drawn from [`rng`]: a seed to hand on (a request's `seed`,
/// a retry jitter's seed).
pub fn value(run_seed: u64, domain: Domain, key: Key<'_>) -> u64 {
    rng(run_seed, domain, key).next_u64()
}

/// A self-play seed drawn from [`rng`], in 63 bits: it is released in the
/// `Seed` column, an int64 in a release's card and JSON Lines files.
pub fn selfplay_seed(run_seed: u64, domain: Domain, key: Key<'_>) -> u64 {
    value(run_seed, domain, key) & (i64::MAX as u64)
}

/// The fixed domains' base: the run seed expanded by `seed_from_u64`, on
/// one of its 2^64 streams.
fn seeded_stream(run_seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(run_seed);
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every domain, in pipeline order (`listed_at` makes a new domain a
    /// compile error until it is added here).
    const ALL: [Domain; 18] = [
        Domain::IngestSample,
        Domain::SelfplayGame,
        Domain::RateCalibrationSample,
        Domain::RateCalibrationFolds,
        Domain::ReleaseCell,
        Domain::EvalRandomMove,
        Domain::EvalEngineMove,
        Domain::EvalRequestSeed,
        Domain::EvalRetryJitter,
        Domain::EvalSample,
        Domain::RolloutRandomMove,
        Domain::RolloutRequestSeed,
        Domain::RolloutRetryJitter,
        Domain::GenerateProfileSeed,
        Domain::GeneratePlan,
        Domain::EvalMaiaMove,
        Domain::SelfplayRelease,
        Domain::HumanGamesSample,
    ];

    fn listed_at(domain: Domain) -> usize {
        match domain {
            Domain::IngestSample => 0,
            Domain::SelfplayGame => 1,
            Domain::RateCalibrationSample => 2,
            Domain::RateCalibrationFolds => 3,
            Domain::ReleaseCell => 4,
            Domain::EvalRandomMove => 5,
            Domain::EvalEngineMove => 6,
            Domain::EvalRequestSeed => 7,
            Domain::EvalRetryJitter => 8,
            Domain::EvalSample => 9,
            Domain::RolloutRandomMove => 10,
            Domain::RolloutRequestSeed => 11,
            Domain::RolloutRetryJitter => 12,
            Domain::GenerateProfileSeed => 13,
            Domain::GeneratePlan => 14,
            Domain::EvalMaiaMove => 15,
            Domain::SelfplayRelease => 16,
            Domain::HumanGamesSample => 17,
        }
    }

    #[test]
    fn every_domain_is_listed_once_under_its_own_name() {
        for (i, domain) in ALL.into_iter().enumerate() {
            assert_eq!(listed_at(domain), i, "{domain:?}");
        }
        let names: HashSet<&str> = ALL.into_iter().map(Domain::name).collect();
        assert_eq!(names.len(), ALL.len(), "two domains share a name");
    }

    fn first_draws(mut rng: ChaCha8Rng) -> [u64; 2] {
        [rng.next_u64(), rng.next_u64()]
    }

    #[test]
    fn distinct_triples_give_distinct_streams() {
        let names = [
            "",
            "a",
            "b",
            "00sHx",
            "index:1",
            "rating=(1400, 1500]|length=2|mate=false",
        ];
        let mut keys = vec![Key::Run];
        for n in [0, 1, 2, 7, 8, 1 << 32, u64::MAX] {
            keys.push(Key::Index(n));
        }
        for a in [0, 1, 2, 1 << 32] {
            for b in [0, 1, 2, 1 << 32] {
                keys.push(Key::Pair(a, b));
            }
        }
        keys.extend(names.iter().map(|name| Key::Name(name)));
        let mut seen = HashSet::new();
        let mut triples = 0;
        for seed in [0, 1, 7, 8, 20261130, u64::MAX] {
            for domain in ALL {
                for &key in &keys {
                    triples += 1;
                    assert!(
                        seen.insert(first_draws(rng(seed, domain, key))),
                        "({seed}, {domain:?}, {key:?}) repeats another triple's stream"
                    );
                }
            }
        }
        assert_eq!(seen.len(), triples);
    }

    #[test]
    fn the_same_triple_gives_the_same_stream() {
        for domain in ALL {
            for key in [Key::Run, Key::Index(3), Key::Pair(1, 2), Key::Name("x")] {
                assert_eq!(
                    first_draws(rng(42, domain, key)),
                    first_draws(rng(42, domain, key))
                );
                assert_eq!(value(42, domain, key), rng(42, domain, key).next_u64());
            }
        }
    }

    #[test]
    fn neighbouring_seeds_do_not_share_repeats() {
        // `seed + repeat` made seed 7 repeat 1 the same as seed 8 repeat 0.
        for domain in [Domain::EvalRequestSeed, Domain::EvalRetryJitter] {
            assert_ne!(
                value(7, domain, Key::Index(1)),
                value(8, domain, Key::Index(0))
            );
        }
        for domain in [Domain::EvalRandomMove, Domain::EvalEngineMove] {
            for position in 0..4 {
                assert_ne!(
                    first_draws(rng(7, domain, Key::Pair(1, position))),
                    first_draws(rng(8, domain, Key::Pair(0, position)))
                );
            }
        }
    }

    /// The derivations the fixed domains had as separate functions, written
    /// out again: the module must keep producing their numbers.
    fn old_selfplay_game(seed: u64, index: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(index);
        rng
    }

    fn old_calibration_folds(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_f01d)
    }

    fn old_release_cell(seed: u64, cell: &str) -> ChaCha8Rng {
        let digest = Sha256::digest(format!("puzzleforge-split|{seed}|{cell}").as_bytes());
        ChaCha8Rng::from_seed(digest.into())
    }

    #[test]
    fn fixed_domains_reproduce_the_published_numbers() {
        // Numbers drawn by the earlier `selfplay::game_rng`,
        // `rate::puzzle_rng`, `release::draw::cell_rng` and the calibration
        // folds' `seed_from_u64(seed ^ 0x5eed_f01d)`.
        assert_eq!(
            first_draws(rng(20261130, Domain::SelfplayGame, Key::Index(7))),
            [14627344655436464904, 16386968402278839488]
        );
        assert_eq!(
            first_draws(rng(1, Domain::SelfplayGame, Key::Index(0))),
            [7424550030962593201, 1482817706323250795]
        );
        let cell = "rating=(1400, 1500]|length=2|mate=false";
        assert_eq!(
            first_draws(rng(20261130, Domain::ReleaseCell, Key::Name(cell))),
            [1897208359386559304, 766978759528204169]
        );
        assert_eq!(
            first_draws(rng(1, Domain::RateCalibrationFolds, Key::Run)),
            [2981053585532799929, 14560057779485191138]
        );
        for seed in [0, 1, 7, 20261130, u64::MAX] {
            assert_eq!(
                first_draws(rng(seed, Domain::RateCalibrationFolds, Key::Run)),
                first_draws(old_calibration_folds(seed))
            );
            for index in [0, 1, 2, 40, 1 << 40] {
                assert_eq!(
                    first_draws(rng(seed, Domain::SelfplayGame, Key::Index(index))),
                    first_draws(old_selfplay_game(seed, index))
                );
            }
            for name in [
                "",
                "00sHx",
                "selfplay-20261130-12-34",
                "rating=(400, 500]|length=1|mate=true",
            ] {
                assert_eq!(
                    first_draws(rng(seed, Domain::ReleaseCell, Key::Name(name))),
                    first_draws(old_release_cell(seed, name))
                );
            }
        }
    }
}

//! Playing one batch: games `first..=last` run through the self-play
//! chain's steps ([`crate::generate::chain`]: played, mined, rated and
//! verified, in pipeline order) with the engine pools into a scratch
//! folder, each step's engine CPU and wall time measured, then stored.
//! Apart because it is the one place generation runs the engines; the
//! store it writes into is [`super::store`].

use anyhow::Result;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::fileio::write_atomic;
use crate::engine::pool::EnginePool;
use crate::stages::StageName;

use super::config::{Engine, Sections, Settings};
use super::store::{
    Batch, BatchFiles, BatchRecord, GameFunnel, StepSeconds, batch_name, scratch_name,
    store_played_batch,
};

/// For `bench generate`: games `1..=games` played, mined, rated and
/// verified into `dir` as one batch, exactly as a target run of `tier`
/// plays a batch. Returns the batch folder, the mine settings it used, and
/// the self-play and mine settings as JSON.
pub(crate) fn play_one_batch(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
    games: u64,
    dir: &Path,
) -> Result<(PathBuf, crate::stages::mine::MineConfig, Value)> {
    let settings = Settings::of(config, tier, None)?;
    let described = json!({"selfplay": settings.selfplay, "mine": settings.mine});
    let mut player = Player {
        settings: &settings,
        engine,
        store: dir,
        pools: None,
        wall_seconds: BTreeMap::new(),
    };
    let batch = player.play(1, games.max(1))?;
    Ok((batch.dir, settings.mine.clone(), described))
}

/// Plays, mines, rates and verifies batches into the store.
pub(super) struct Player<'a> {
    pub(super) settings: &'a Settings,
    pub(super) engine: Engine<'a>,
    pub(super) store: &'a Path,
    /// The engine pools, started with the first batch played.
    pub(super) pools: Option<(EnginePool, Option<EnginePool>)>,
    /// Wall seconds of the batches played, by stage.
    pub(super) wall_seconds: BTreeMap<&'static str, f64>,
}

/// Engine CPU and wall time of a batch's steps.
struct StepClock {
    cpu_mark: f64,
    wall_mark: std::time::Instant,
}

impl StepClock {
    fn new(cpu_now: f64) -> StepClock {
        StepClock {
            cpu_mark: cpu_now,
            wall_mark: std::time::Instant::now(),
        }
    }

    /// Ends step `name` (`extra`: CPU seconds the pools do not count);
    /// gives the step's engine CPU seconds.
    fn lap(
        &mut self,
        name: &'static str,
        cpu_now: f64,
        extra: f64,
        wall: &mut BTreeMap<&'static str, f64>,
    ) -> f64 {
        let cpu = cpu_now - self.cpu_mark + extra;
        self.cpu_mark = cpu_now;
        *wall.entry(name).or_default() += self.wall_mark.elapsed().as_secs_f64();
        self.wall_mark = std::time::Instant::now();
        cpu
    }
}

/// The engine CPU seconds of the pools' searches.
fn pools_cpu(pool: &EnginePool, second: &Option<EnginePool>) -> f64 {
    pool.search_cpu_seconds() + second.as_ref().map_or(0.0, |p| p.search_cpu_seconds())
}

impl Player<'_> {
    /// Batch `first..=last`: taken from the store when there, else played
    /// into a scratch folder and stored under its name.
    pub(super) fn play(&mut self, first: u64, last: u64) -> Result<Batch> {
        let name = batch_name(first, last);
        let dir = self.store.join(&name);
        // One process plays a batch; another run wanting it (a release
        // generated at the same time from this store) waits and takes it.
        let _playing = crate::core::lock::FileLock::wait(
            &self.store.join(format!(".{name}.lock")),
            "another run playing the same batch",
        )?;
        if dir.is_dir() {
            return Batch::stored(dir, first, last);
        }
        self.start_pools()?;
        let scratch = self.store.join(scratch_name(&name));
        crate::core::fileio::create_scratch_dir(&scratch)?;
        let cpu_seconds = self.play_steps(&scratch, first, last)?;
        store_played_batch(&scratch, dir, first, last, cpu_seconds)
    }

    /// Starts the engine pools, once: a run whose batches are all stored
    /// never starts an engine.
    fn start_pools(&mut self) -> Result<()> {
        if self.pools.is_none() {
            let pool = EnginePool::new(self.engine.spec.clone(), self.engine.pool.clone())?;
            let second = match &self.settings.verify.second_engine {
                Some(second) => Some(second.pool(&pool)?),
                None => None,
            };
            self.pools = Some((pool, second));
        }
        Ok(())
    }

    /// Plays, mines, rates and verifies games `first..=last` into
    /// `scratch` (the chain's steps in order, [`crate::generate::chain`]),
    /// ending with its `batch.json`; gives the engine CPU seconds spent.
    fn play_steps(&mut self, scratch: &Path, first: u64, last: u64) -> Result<f64> {
        let Some((pool, second)) = self.pools.as_mut() else {
            unreachable!("the pools are started before a batch is played")
        };
        let before = pools_cpu(pool, second);
        let mut clock = StepClock::new(before);
        let files = StepFiles::in_folder(scratch);
        let mut steps = Steps::default();
        let mut cpu_by_step = StepSeconds::default();
        // The rating's CPU is in this process: the pools' counters do not
        // see it.
        let mut cpu_outside_pools = 0.0;
        for step in crate::generate::chain::steps() {
            // Bars on a terminal (quiet without one, or under --json).
            pool.set_progress(Some(step.as_str()));
            let pools = (&*pool, second.as_ref());
            let outside = steps.run(step, self.settings, pools, &files, first..=last)?;
            cpu_outside_pools += outside;
            let now = pools_cpu(pool, second);
            let spent = clock.lap(step.as_str(), now, outside, &mut self.wall_seconds);
            cpu_by_step.add(step, spent);
        }
        let cpu_seconds = pools_cpu(pool, second) - before + cpu_outside_pools;
        let record = steps.record(first, last, cpu_seconds, cpu_by_step, scratch)?;
        write_atomic(
            &scratch.join("batch.json"),
            format!("{}\n", serde_json::to_string_pretty(&record)?).as_bytes(),
        )?;
        Ok(cpu_seconds)
    }
}

/// The files of a batch the chain's steps write, in its scratch folder.
struct StepFiles {
    games: PathBuf,
    mined: PathBuf,
    rated: PathBuf,
    verify_report: PathBuf,
    verified: PathBuf,
}

impl StepFiles {
    fn in_folder(scratch: &Path) -> StepFiles {
        StepFiles {
            games: scratch.join("games.pgn"),
            mined: scratch.join("mined.csv"),
            rated: scratch.join("rated.csv"),
            verify_report: scratch.join("verify.jsonl"),
            verified: scratch.join("verified.csv"),
        }
    }
}

/// What a batch's steps found, for its `batch.json`.
#[derive(Default)]
struct Steps {
    /// Each game's funnel, in game order (from `mine`).
    per_unit: Vec<crate::stages::mine::UnitFunnel>,
    /// Puzzles kept by `mine` and passed by `verify`.
    mined: u64,
    verified: u64,
}

impl Steps {
    /// Runs the chain's step `step` on games `games` of the batch; gives
    /// the CPU seconds it spent outside the engine pools.
    fn run(
        &mut self,
        step: StageName,
        settings: &Settings,
        (pool, second): (&EnginePool, Option<&EnginePool>),
        files: &StepFiles,
        games: std::ops::RangeInclusive<u64>,
    ) -> Result<f64> {
        use crate::generate::chain;
        match step {
            StageName::Selfplay => {
                chain::play(&settings.selfplay, pool, &files.games, games)?;
            }
            StageName::Mine => {
                let loaded = crate::stages::mine::load_input(&files.games)?;
                let mined = chain::mine(&settings.mine, pool, &loaded, &files.mined)?;
                self.per_unit = mined.per_unit;
                self.mined = mined.puzzles;
            }
            StageName::Rate => {
                let rate_before = crate::engine::process::process_tree_cpu_seconds();
                chain::rate(&settings.rate, &files.mined, &files.rated)?;
                return Ok(crate::engine::process::process_tree_cpu_seconds() - rate_before);
            }
            StageName::Verify => {
                let (_, verify) = chain::verify(
                    &settings.verify,
                    pool,
                    second,
                    &crate::stages::verify::VerifyFiles {
                        input: &files.rated,
                        report: &files.verify_report,
                        puzzles_out: Some(&files.verified),
                    },
                )?;
                self.verified = verify.verified;
            }
            other => unreachable!("{other} is not a step of the self-play chain"),
        }
        Ok(0.0)
    }

    /// The batch's record: its funnel per game and in all, and the CPU.
    fn record(
        self,
        first: u64,
        last: u64,
        cpu_seconds: f64,
        by_step: StepSeconds,
        scratch: &Path,
    ) -> Result<BatchRecord> {
        let total = |count: fn(&crate::stages::mine::UnitFunnel) -> u64| {
            self.per_unit.iter().map(count).sum::<u64>()
        };
        Ok(BatchRecord {
            first,
            last,
            // Self-play plays every game of the range: the count its summary gives.
            games: last - first + 1,
            positions: total(|f| f.positions),
            full_searches: total(|f| f.full_searches),
            candidates: total(|f| f.candidates),
            mined: self.mined,
            verified: self.verified,
            engine_cpu_seconds: cpu_seconds,
            engine_cpu_seconds_by_step: by_step,
            per_game: (first..=last)
                .zip(&self.per_unit)
                .map(|(game, funnel)| GameFunnel {
                    game,
                    funnel: *funnel,
                })
                .collect(),
            files: Some(BatchFiles::of(scratch)?),
            build: Some(crate::core::build::BUILD.to_string()),
        })
    }
}

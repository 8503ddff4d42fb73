//! Playing one batch: games `first..=last` run through the self-play
//! chain's step types ([`crate::generate::chain`]: played, mined, rated and
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

use super::chain::{BatchStepFiles, MineStep, RateStep, SelfplayStep, VerifyStep};
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

/// Engine CPU and wall time of a batch's steps, lap by lap.
struct BatchClock<'w> {
    /// The pools' engine CPU seconds when the batch started.
    cpu_start: f64,
    cpu_mark: f64,
    wall_mark: std::time::Instant,
    /// CPU seconds spent outside the pools (the rating's, in this process).
    cpu_outside_pools: f64,
    cpu_by_step: StepSeconds,
    /// Wall seconds by stage, summed over the batches played.
    wall: &'w mut BTreeMap<&'static str, f64>,
}

impl<'w> BatchClock<'w> {
    fn new(cpu_now: f64, wall: &'w mut BTreeMap<&'static str, f64>) -> BatchClock<'w> {
        BatchClock {
            cpu_start: cpu_now,
            cpu_mark: cpu_now,
            wall_mark: std::time::Instant::now(),
            cpu_outside_pools: 0.0,
            cpu_by_step: StepSeconds::default(),
            wall,
        }
    }

    /// Ends step `step`: the pools' CPU since the last lap (`cpu_now`, the
    /// pools' total now) plus `outside`, CPU seconds the pools do not count.
    fn lap(&mut self, step: StageName, cpu_now: f64, outside: f64) {
        self.cpu_outside_pools += outside;
        let cpu = cpu_now - self.cpu_mark + outside;
        self.cpu_mark = cpu_now;
        *self.wall.entry(step.as_str()).or_default() += self.wall_mark.elapsed().as_secs_f64();
        self.wall_mark = std::time::Instant::now();
        self.cpu_by_step.add(step, cpu);
    }

    /// The batch's engine CPU seconds (`cpu_now`: the pools' total at its
    /// end) and their split by step.
    fn finish(self, cpu_now: f64) -> (f64, StepSeconds) {
        (
            cpu_now - self.cpu_start + self.cpu_outside_pools,
            self.cpu_by_step,
        )
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
            let second = VerifyStep {
                section: &self.settings.verify,
            }
            .second_pool(&pool)?;
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
        let settings = self.settings;
        let files = BatchStepFiles::in_folder(scratch);
        let mut clock = BatchClock::new(pools_cpu(pool, second), &mut self.wall_seconds);
        // Bars on a terminal (quiet without one, or under --json), each
        // labelled with its step.
        pool.set_progress(Some(SelfplayStep::STAGE.as_str()));
        SelfplayStep {
            section: &settings.selfplay,
        }
        .run(pool, &files.games, first..=last)?;
        clock.lap(SelfplayStep::STAGE, pools_cpu(pool, second), 0.0);

        pool.set_progress(Some(MineStep::STAGE.as_str()));
        let loaded = crate::stages::mine::load_input(&files.games)?;
        let mined = MineStep {
            section: &settings.mine,
        }
        .run(pool, &loaded, &files.mined, None)?;
        clock.lap(MineStep::STAGE, pools_cpu(pool, second), 0.0);

        pool.set_progress(Some(RateStep::STAGE.as_str()));
        // The rating's CPU is in this process: the pools' counters do not
        // see it.
        let rate_before = crate::engine::process::process_tree_cpu_seconds();
        RateStep {
            section: &settings.rate,
        }
        .run(&files.mined, &files.rated)?;
        let rate_cpu = crate::engine::process::process_tree_cpu_seconds() - rate_before;
        clock.lap(RateStep::STAGE, pools_cpu(pool, second), rate_cpu);

        pool.set_progress(Some(VerifyStep::STAGE.as_str()));
        let (_, verify) = VerifyStep {
            section: &settings.verify,
        }
        .run(
            pool,
            second.as_ref(),
            &crate::stages::verify::VerifyFiles {
                input: &files.rated,
                report: &files.verify_report,
                puzzles_out: Some(&files.verified),
            },
        )?;
        clock.lap(VerifyStep::STAGE, pools_cpu(pool, second), 0.0);

        let (cpu_seconds, cpu_by_step) = clock.finish(pools_cpu(pool, second));
        let found = StepsFound {
            per_unit: mined.per_unit,
            mined: mined.puzzles,
            verified: verify.verified,
        };
        let record = found.record(first, last, cpu_seconds, cpu_by_step, scratch)?;
        write_atomic(
            &scratch.join("batch.json"),
            format!("{}\n", serde_json::to_string_pretty(&record)?).as_bytes(),
        )?;
        Ok(cpu_seconds)
    }
}

/// What a batch's steps found, for its `batch.json`.
struct StepsFound {
    /// Each game's funnel, in game order (from `mine`).
    per_unit: Vec<crate::stages::mine::UnitFunnel>,
    /// Puzzles kept by `mine` and passed by `verify`.
    mined: u64,
    verified: u64,
}

impl StepsFound {
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

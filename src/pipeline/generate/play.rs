//! Playing one batch: games `first..=last` played, mined, rated and
//! verified with the engine pools into a scratch folder, each step's
//! engine CPU and wall time measured, then stored. Apart because it is the
//! one place generation runs the engines; the store it writes into is
//! [`super::store`].

use anyhow::Result;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::fileio::write_atomic;
use crate::engine::pool::EnginePool;

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
        let _playing = crate::pipeline::lock::FileLock::wait(
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
    /// `scratch`, ending with its `batch.json`; gives the engine CPU
    /// seconds spent.
    fn play_steps(&mut self, scratch: &Path, first: u64, last: u64) -> Result<f64> {
        let Some((pool, second)) = self.pools.as_mut() else {
            unreachable!("the pools are started before a batch is played")
        };
        let wall = &mut self.wall_seconds;
        let before = pools_cpu(pool, second);
        let mut clock = StepClock::new(before);
        let settings = self.settings;
        let games = scratch.join("games.pgn");
        // Bars on a terminal (quiet without one, or under --json).
        pool.set_progress(Some("selfplay"));
        crate::stages::selfplay::run_selfplay_range(
            &settings.selfplay,
            pool,
            &games,
            first..=last,
        )?;
        let selfplay_cpu = clock.lap("selfplay", pools_cpu(pool, second), 0.0, wall);
        let loaded = crate::stages::mine::load_input(&games)?;
        let mined = scratch.join("mined.csv");
        pool.set_progress(Some("mine"));
        let mine =
            crate::stages::mine::mine_loaded_per_unit(&settings.mine, pool, &loaded, &mined)?;
        pool.set_progress(Some("verify"));
        let mine_cpu = clock.lap("mine", pools_cpu(pool, second), 0.0, wall);
        let rated = scratch.join("rated.csv");
        let rate_cpu = rate_batch(settings, &mined, &rated)?;
        let rate_step_cpu = clock.lap("rate", pools_cpu(pool, second), rate_cpu, wall);
        let (_, verify) = crate::stages::verify::run_verify_with(
            &settings.verify,
            pool,
            second.as_ref(),
            &crate::stages::verify::VerifyFiles {
                input: &rated,
                report: &scratch.join("verify.jsonl"),
                puzzles_out: Some(&scratch.join("verified.csv")),
            },
        )?;
        let verify_cpu = clock.lap("verify", pools_cpu(pool, second), 0.0, wall);
        let cpu_seconds = pools_cpu(pool, second) - before + rate_cpu;
        let per_game: Vec<GameFunnel> = (first..=last)
            .zip(&mine.per_unit)
            .map(|(game, funnel)| GameFunnel {
                game,
                funnel: *funnel,
            })
            .collect();
        let total = |count: fn(&crate::stages::mine::UnitFunnel) -> u64| {
            mine.per_unit.iter().map(count).sum::<u64>()
        };
        let record = BatchRecord {
            first,
            last,
            // Self-play plays every game of the range: the count its summary gives.
            games: last - first + 1,
            positions: total(|f| f.positions),
            full_searches: total(|f| f.full_searches),
            candidates: total(|f| f.candidates),
            mined: mine.puzzles,
            verified: verify.verified,
            engine_cpu_seconds: cpu_seconds,
            engine_cpu_seconds_by_step: StepSeconds {
                selfplay: selfplay_cpu,
                mine: mine_cpu,
                rate: rate_step_cpu,
                verify: verify_cpu,
            },
            per_game,
            files: Some(BatchFiles::of(scratch)?),
        };
        write_atomic(
            &scratch.join("batch.json"),
            format!("{}\n", serde_json::to_string_pretty(&record)?).as_bytes(),
        )?;
        Ok(cpu_seconds)
    }
}

/// Rates the batch's mined puzzles into `rated`; gives the rating's CPU
/// seconds (the nets' forward passes, in this process: the pools'
/// counters do not see them).
fn rate_batch(settings: &Settings, mined: &Path, rated: &Path) -> Result<f64> {
    let rate_before = crate::engine::process::process_tree_cpu_seconds();
    crate::stages::rate::run_rate_with(&crate::stages::rate::RateJob {
        input: mined,
        output: rated,
        // A batch's files are the five batch.json records.
        rejects: None,
        calibrate: &[],
        save_model: None,
        features: Default::default(),
        learning_curve: &[],
        config: &settings.rate,
    })?;
    Ok(crate::engine::process::process_tree_cpu_seconds() - rate_before)
}

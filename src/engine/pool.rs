//! N supervised engines, one per worker thread.
//!
//! Work is handed out by an atomic index and results are stored by index, so
//! output order is input order whatever the thread timing. Each unit starts
//! with `ucinewgame` (and options a previous unit changed put back), and a
//! faulting engine is killed, restarted with backoff and the whole unit is
//! redone, so a result never depends on which engine served it.

use crate::engine::process::{Engine, EngineError, EngineSpec, SearchRequest, SearchResult};
use serde::Serialize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Engine processes (and worker threads).
    pub workers: usize,
    /// Longest wait for one engine answer (a search, `isready`).
    pub deadline: Duration,
    /// Longest wait for each handshake answer (`uciok`, the first
    /// `readyok`); a program that never answers `uciok` is not an engine.
    pub handshake_deadline: Duration,
    /// Tries per unit (first try included) before the call fails.
    pub max_attempts: u32,
    /// First restart delay; doubled per consecutive fault up to `backoff_cap`.
    pub backoff: Duration,
    pub backoff_cap: Duration,
    /// Show a progress bar with this label during [`EnginePool::map`].
    pub progress: Option<String>,
    /// Give every unit a process of its own (the slot's engine quits after
    /// each unit and a new one starts for the next), for an engine whose
    /// search depends on how many searches its process ran before, which
    /// `ucinewgame` does not reset: Ethereal 12's hash ages by one each
    /// search and wraps every 64, and its 64th search of a position can
    /// score otherwise. Without it a unit's result would depend on which
    /// units its worker happened to run first.
    pub fresh_process_per_unit: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            workers: 1,
            deadline: Duration::from_secs(60),
            handshake_deadline: Duration::from_secs(10),
            max_attempts: 3,
            backoff: Duration::from_millis(50),
            backoff_cap: Duration::from_secs(2),
            progress: None,
            fresh_process_per_unit: false,
        }
    }
}

/// What one engine slot did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EngineStats {
    pub slot: usize,
    /// Searches answered.
    pub requests: u64,
    pub nodes: u64,
    /// Engine CPU seconds spent in searches (from /proc, per process), plus
    /// what [`Session::charge_cpu_seconds`] counted.
    pub cpu_seconds: f64,
    /// All CPU seconds of this slot's engine processes so far, start-up,
    /// `ucinewgame` and idle polling included.
    pub process_cpu_seconds: f64,
    /// Processes started after a fault.
    pub restarts: u64,
    /// Faults seen (each one kills the process).
    pub faults: u64,
}

/// A session's searches so far: what a caller subtracts to learn what one
/// step of its work cost ([`Session::usage`]).
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Usage {
    pub searches: u64,
    pub nodes: u64,
    /// Engine CPU seconds of the searches (as [`EngineStats::cpu_seconds`]).
    pub cpu_seconds: f64,
}

impl Usage {
    /// What was used between `earlier` and `self`.
    pub fn since(self, earlier: Usage) -> Usage {
        Usage {
            searches: self.searches.saturating_sub(earlier.searches),
            nodes: self.nodes.saturating_sub(earlier.nodes),
            cpu_seconds: (self.cpu_seconds - earlier.cpu_seconds).max(0.0),
        }
    }

    /// Adds `other` to this total.
    pub fn add(&mut self, other: Usage) {
        self.searches += other.searches;
        self.nodes += other.nodes;
        self.cpu_seconds += other.cpu_seconds;
    }
}

/// A unit of work failed on every attempt (or hit a fatal engine error).
#[derive(Debug, thiserror::Error)]
#[error("item {item} failed after {attempts} attempt(s): {error}")]
pub struct UnitFailed {
    /// Index of the item in the slice given to [`EnginePool::map`].
    pub item: usize,
    pub attempts: u32,
    pub error: EngineError,
}

struct Slot {
    engine: Option<Engine>,
    stats: EngineStats,
    /// Options a unit changed, to put back before the next unit.
    changed_options: Vec<String>,
    /// Consecutive faults, for the backoff delay.
    consecutive_faults: u32,
    /// The last process quit after a unit it finished
    /// ([`PoolConfig::fresh_process_per_unit`]): the next start is not a
    /// restart after a fault.
    retired: bool,
}

/// A set of engines, one per worker.
pub struct EnginePool {
    spec: EngineSpec,
    config: PoolConfig,
    slots: Vec<Mutex<Slot>>,
    engine_id: String,
}

/// One engine lent to one unit of work.
pub struct Session<'a> {
    engine: &'a mut Engine,
    stats: &'a mut EngineStats,
    changed_options: &'a mut Vec<String>,
}

impl Session<'_> {
    /// Runs one search; its nodes and engine CPU time go to the slot's stats.
    pub fn search(&mut self, request: &SearchRequest) -> Result<SearchResult, EngineError> {
        let before = self.engine.cpu_seconds();
        let result = self.engine.search(request)?;
        if let (Some(before), Some(after)) = (before, self.engine.cpu_seconds()) {
            self.stats.cpu_seconds += (after - before).max(0.0);
        }
        self.stats.requests += 1;
        self.stats.nodes += result.nodes;
        Ok(result)
    }

    /// The slot's searches, nodes and search CPU so far.
    pub fn usage(&self) -> Usage {
        Usage {
            searches: self.stats.requests,
            nodes: self.stats.nodes,
            cpu_seconds: self.stats.cpu_seconds,
        }
    }

    /// Counts CPU seconds spent in this process on the unit's behalf in
    /// place of a search (a Maia player's moves), so that CPU figures and
    /// budgets see them beside the engine's.
    pub fn charge_cpu_seconds(&mut self, seconds: f64) {
        self.stats.cpu_seconds += seconds.max(0.0);
    }

    /// Sets a UCI option for the rest of this unit; it is undone before the
    /// next unit. `MultiPV` is set per request instead.
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        if !self
            .changed_options
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name))
        {
            self.changed_options.push(name.to_string());
        }
        self.engine.set_option(name, value)
    }

    /// The engine's `id name`.
    pub fn engine_id(&self) -> &str {
        self.engine.id_name()
    }
}

impl EnginePool {
    /// Shows a progress bar with this label during the next
    /// [`EnginePool::map`] calls (`None`: none), so that one pool serving
    /// several steps (self-play, then mining) names each.
    pub fn set_progress(&mut self, label: Option<&str>) {
        self.config.progress = label.map(str::to_string);
    }
}

impl EnginePool {
    /// Starts `config.workers` engines (retrying faults like a unit would).
    pub fn new(spec: EngineSpec, config: PoolConfig) -> anyhow::Result<Self> {
        spec.validate().map_err(crate::core::error::bad_input)?;
        let workers = config.workers.max(1);
        let started: Vec<Result<(Engine, u64), EngineError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| scope.spawn(|| start_with_retries(&spec, &config)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|_| {
                        Err(EngineError::Fatal("engine start-up thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut slots = Vec::with_capacity(workers);
        for (index, result) in started.into_iter().enumerate() {
            let (engine, faults) = result.map_err(|error| match error {
                // The wrong program was named: the user's to fix.
                EngineError::NotAnEngine { .. } => crate::core::error::bad_input(error.to_string()),
                _ => anyhow::anyhow!("cannot start engine {}: {error}", spec.path.display()),
            })?;
            slots.push(Slot {
                engine: Some(engine),
                stats: EngineStats {
                    slot: index,
                    faults,
                    restarts: faults,
                    ..Default::default()
                },
                changed_options: Vec::new(),
                consecutive_faults: 0,
                retired: false,
            });
        }
        let engine_id = slots
            .first()
            .and_then(|slot| slot.engine.as_ref())
            .map_or_else(String::new, |engine| engine.id_name().to_string());
        Ok(Self {
            spec,
            config: PoolConfig { workers, ..config },
            slots: slots.into_iter().map(Mutex::new).collect(),
            engine_id,
        })
    }

    /// The engine's `id name`, e.g. "Stockfish 15.1".
    pub fn engine_id(&self) -> &str {
        &self.engine_id
    }

    /// Number of engines.
    pub fn workers(&self) -> usize {
        self.slots.len()
    }

    /// The spec the engines were started from.
    pub fn spec(&self) -> &EngineSpec {
        &self.spec
    }

    /// Runs one unit of work per item across the pool; results in input
    /// order. A faulting engine is killed and restarted with backoff and the
    /// whole unit redone, at most `max_attempts` times; then the call fails
    /// with a [`UnitFailed`] naming the item (the lowest failing index).
    pub fn map<T: Sync, R: Send>(
        &self,
        items: &[T],
        unit: impl Fn(&mut Session, usize, &T) -> Result<R, EngineError> + Sync,
    ) -> anyhow::Result<Vec<R>> {
        let next = AtomicUsize::new(0);
        let abort = AtomicBool::new(false);
        let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
        let failures: Mutex<Vec<UnitFailed>> = Mutex::new(Vec::new());
        let bar = self
            .config
            .progress
            .as_deref()
            .map(|label| crate::core::progress::items(items.len() as u64, label));
        let workers = self.slots.len().min(items.len());
        std::thread::scope(|scope| {
            for slot in &self.slots[..workers] {
                let (next, abort, results, failures, bar, unit) =
                    (&next, &abort, &results, &failures, &bar, &unit);
                scope.spawn(move || {
                    let mut slot = match slot.lock() {
                        Ok(slot) => slot,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                    while !abort.load(Ordering::Relaxed) {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else { break };
                        match self.run_unit(&mut slot, index, item, unit) {
                            Ok(result) => {
                                if let Ok(mut cell) = results[index].lock() {
                                    *cell = Some(result);
                                }
                                if let Some(bar) = bar {
                                    bar.inc(1);
                                }
                            }
                            Err(failure) => {
                                abort.store(true, Ordering::Relaxed);
                                if let Ok(mut failures) = failures.lock() {
                                    failures.push(failure);
                                }
                            }
                        }
                    }
                });
            }
        });
        if let Some(bar) = bar {
            crate::core::progress::finish(&bar);
        }
        let mut failures = failures
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        failures.sort_by_key(|failure| failure.item);
        if let Some(first) = failures.into_iter().next() {
            return Err(first.into());
        }
        let mut output = Vec::with_capacity(items.len());
        for (index, cell) in results.into_iter().enumerate() {
            let value = cell
                .into_inner()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match value {
                Some(value) => output.push(value),
                None => anyhow::bail!("engine pool lost the result of item {index}"),
            }
        }
        Ok(output)
    }

    fn run_unit<T, R>(
        &self,
        slot: &mut Slot,
        index: usize,
        item: &T,
        unit: &(impl Fn(&mut Session, usize, &T) -> Result<R, EngineError> + Sync),
    ) -> Result<R, UnitFailed> {
        let max_attempts = self.config.max_attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.try_unit(slot, index, item, unit);
            let error = match outcome {
                Ok(result) => {
                    slot.consecutive_faults = 0;
                    if self.config.fresh_process_per_unit
                        && let Some(engine) = slot.engine.take()
                    {
                        slot.stats.process_cpu_seconds += engine.cpu_seconds().unwrap_or(0.0);
                        slot.changed_options.clear();
                        slot.retired = true;
                        drop(engine);
                    }
                    return Ok(result);
                }
                Err(error) => error,
            };
            // The process state is unknown after any error: never reuse it.
            if let Some(engine) = slot.engine.take() {
                slot.stats.process_cpu_seconds += engine.cpu_seconds().unwrap_or(0.0);
                engine.kill();
            }
            slot.changed_options.clear();
            if !error.is_fault() || attempt >= max_attempts {
                return Err(UnitFailed {
                    item: index,
                    attempts: attempt,
                    error,
                });
            }
            slot.stats.faults += 1;
            slot.consecutive_faults += 1;
        }
    }

    fn try_unit<T, R>(
        &self,
        slot: &mut Slot,
        index: usize,
        item: &T,
        unit: &(impl Fn(&mut Session, usize, &T) -> Result<R, EngineError> + Sync),
    ) -> Result<R, EngineError> {
        if slot.engine.is_none() {
            std::thread::sleep(self.backoff(slot.consecutive_faults));
            slot.engine = Some(Engine::start_with_handshake(
                &self.spec,
                self.config.handshake_deadline,
                self.config.deadline,
            )?);
            if !std::mem::take(&mut slot.retired) {
                slot.stats.restarts += 1;
            }
        }
        let Slot {
            engine,
            stats,
            changed_options,
            ..
        } = slot;
        let Some(engine) = engine.as_mut() else {
            return Err(EngineError::Died("no engine in slot".into()));
        };
        engine.send_new_game_restoring(&self.spec, changed_options)?;
        let mut session = Session {
            engine,
            stats,
            changed_options,
        };
        unit(&mut session, index, item)
    }

    fn backoff(&self, consecutive_faults: u32) -> Duration {
        if consecutive_faults == 0 {
            return Duration::ZERO;
        }
        let factor = 1u32 << consecutive_faults.saturating_sub(1).min(16);
        (self.config.backoff * factor).min(self.config.backoff_cap)
    }

    /// Engine CPU seconds the pool's searches have spent so far, all
    /// engines together: what a step's cost is measured by (the difference
    /// before and after).
    pub fn search_cpu_seconds(&self) -> f64 {
        self.stats().iter().map(|s| s.cpu_seconds).sum()
    }

    /// Per-engine statistics.
    pub fn stats(&self) -> Vec<EngineStats> {
        self.slots
            .iter()
            .map(|slot| {
                let slot = match slot.lock() {
                    Ok(slot) => slot,
                    Err(poisoned) => poisoned.into_inner(),
                };
                let mut stats = slot.stats.clone();
                let live = slot.engine.as_ref().and_then(Engine::cpu_seconds);
                stats.process_cpu_seconds += live.unwrap_or(0.0);
                stats
            })
            .collect()
    }
}

impl Engine {
    /// `ucinewgame`, options changed by the last unit set back (to the
    /// spec's value, else the engine's declared default), then `isready`.
    fn send_new_game_restoring(
        &mut self,
        spec: &EngineSpec,
        changed_options: &mut Vec<String>,
    ) -> Result<(), EngineError> {
        for name in std::mem::take(changed_options) {
            let value = spec
                .options
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(&name))
                .map(|(_, value)| value.clone())
                .or_else(|| self.option_default(&name).map(str::to_string));
            if let Some(value) = value {
                self.set_option(&name, &value)?;
            }
        }
        self.new_game()
    }
}

/// Starts one engine, retrying faults with backoff; returns it and the
/// number of faults it took.
fn start_with_retries(
    spec: &EngineSpec,
    config: &PoolConfig,
) -> Result<(Engine, u64), EngineError> {
    let mut faults = 0u32;
    loop {
        match Engine::start_with_handshake(spec, config.handshake_deadline, config.deadline) {
            Ok(engine) => return Ok((engine, u64::from(faults))),
            Err(error) if error.is_fault() && faults + 1 < config.max_attempts.max(1) => {
                faults += 1;
                let delay =
                    (config.backoff * (1u32 << (faults - 1).min(16))).min(config.backoff_cap);
                std::thread::sleep(delay);
            }
            Err(error) => return Err(error),
        }
    }
}

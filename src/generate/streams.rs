//! The streams and their turns: which profile plays for which cells of
//! the target, the streams taking turns a batch each under a shared
//! budget, and the entry points that run them (`prepare`, `sample`,
//! `store_key`). Apart because it ties the rest together: the settings,
//! the store, the walks, the count and the progress.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::core::error::bad_input;
use crate::generate::cost::StreamSample;
use crate::stages::release::cells::{Cell, Quota};

use super::config::{Engine, Sections, Settings};
use super::generated::{Generated, StreamPart};
use super::play::Player;
use super::progress::BatchProgress;
use super::report::{Stop, TargetReport};
use super::store::{open_store, store_of, stored_batches};
use super::target::{Counter, Target, target_quotas};
use super::walk::{Mode, Played, Walk};

/// Fills the stores as `mode` asks and works out the games the release (or
/// shard) holds. `excluded_releases` are the earlier releases' folders.
///
/// Each profile that plays for the target (generation's own, and each
/// named profile `[[generate.bands]]` hand cells to) is a stream of its own
/// games with its own stopping rule over its own cells; the streams take
/// turns, a batch each, so that a CPU budget is shared. The release then
/// holds every stream's games up to its stopping game, and their puzzles,
/// deduplicated across streams in stream order.
pub(crate) fn prepare(
    config: &Sections<'_>,
    engine: Engine,
    mode: Mode,
    tier: Option<&str>,
    excluded_releases: &[PathBuf],
) -> Result<Generated> {
    let target = Target::of(config, tier, excluded_releases)?;
    let plan = stream_cells(config, &target.quotas)?;
    let settings: Vec<Settings> = plan
        .iter()
        .map(|(profile, _)| Settings::of(config, tier, profile.as_deref()))
        .collect::<Result<_>>()?;
    let stores: Vec<(PathBuf, String)> = settings
        .iter()
        .map(|settings| open_store(config, settings, engine))
        .collect::<Result<_>>()?;
    let targets: Vec<Target> = plan
        .iter()
        .map(|(_, quotas)| target.restricted_to(quotas.clone()))
        .collect();
    let (first, last) = game_range(config, mode);
    let mut walks = Vec::new();
    for (((settings, (store, _)), target), (profile, _)) in
        settings.iter().zip(&stores).zip(&targets).zip(&plan)
    {
        walks.push(Walk {
            profile: profile.clone(),
            first,
            config,
            mode,
            player: Player {
                settings,
                engine,
                store,
                pools: None,
                wall_seconds: BTreeMap::new(),
            },
            batches: stored_batches(store)?,
            counter: Counter::new(target, config.seed, 0),
            segments: Vec::new(),
            cpu_seconds: 0.0,
            played: Played::default(),
            next: first,
            last,
            games_allowed: None,
        });
    }
    let progress = BatchProgress::new(config.generate.max_cpu_hours);
    let stops = take_turns(
        &mut walks,
        mode,
        config.generate.max_cpu_hours,
        (&target, config.seed),
        &progress,
    )?;
    let seconds_by_stage = wall_seconds_by_stage(&walks);
    let played = played_settings(config, &settings, &stores, &plan, engine)?;
    let (streams, reports) = stream_parts(walks, stops, &stores, plan, first);
    let mut generated = Generated::assemble(&target, config.seed, first, streams, reports)?;
    generated.report.settings = played;
    generated.seconds_by_stage = seconds_by_stage;
    Ok(generated)
}

/// The games this process may play: a shard's own range, else all of
/// `1..=max_games`.
fn game_range(config: &Sections<'_>, mode: Mode) -> (u64, u64) {
    match mode {
        Mode::Shard(shard) => {
            let range = shard.range(config.generate.max_games);
            (range.start + 1, range.end)
        }
        _ => (1, config.generate.max_games),
    }
}

/// The wall seconds of every stream's batches, added up by stage.
fn wall_seconds_by_stage(walks: &[Walk<'_>]) -> BTreeMap<&'static str, f64> {
    let mut seconds_by_stage: BTreeMap<&'static str, f64> = BTreeMap::new();
    for walk in walks {
        for (stage, seconds) in &walk.player.wall_seconds {
            *seconds_by_stage.entry(stage).or_default() += seconds;
        }
    }
    seconds_by_stage
}

/// The settings each profile's games were played with (after the
/// overlays), as their store key hashes them: machine-independent.
fn played_settings(
    config: &Sections<'_>,
    settings: &[Settings],
    stores: &[(PathBuf, String)],
    plan: &[StreamCells],
    engine: Engine,
) -> Result<Vec<Value>> {
    settings
        .iter()
        .zip(stores)
        .zip(plan)
        .map(|((settings, (_, key)), (profile, _))| {
            let described = store_of(config, settings, engine)?.described;
            let played = PlayedSettings {
                settings: described,
                profile,
                store: key,
            };
            Ok(serde_json::to_value(played)?)
        })
        .collect()
}

/// One profile's entry in `generate.json`'s `settings`: what its store key
/// hashes ([`Settings::key`]), then the profile and the store key.
#[derive(Serialize)]
struct PlayedSettings<'a> {
    #[serde(flatten)]
    settings: Value,
    profile: &'a Option<String>,
    store: &'a str,
}

/// Each stream's part of the release (its games up to its stop) and its
/// report, in stream order.
fn stream_parts(
    walks: Vec<Walk<'_>>,
    stops: Vec<Stop>,
    stores: &[(PathBuf, String)],
    plan: Vec<StreamCells>,
    first: u64,
) -> (Vec<StreamPart>, Vec<TargetReport>) {
    let mut streams = Vec::new();
    let mut reports = Vec::new();
    for (((walk, stop), (store, key)), (profile, _)) in walks
        .into_iter()
        .zip(stops)
        .zip(stores.iter().cloned())
        .zip(plan)
    {
        let last = walk.segments.last().map_or(first - 1, |s| s.last);
        reports.push(walk.counter.report(stop, first, last));
        let sample = walk.sample(profile.clone(), key.clone(), stop);
        streams.push(StreamPart {
            profile,
            store,
            key,
            first,
            last,
            stop,
            segments: walk.segments,
            cpu_seconds: walk.cpu_seconds,
            sample,
        });
    }
    (streams, reports)
}

/// A profile (`None`: generation's own) and the target cells it plays for.
type StreamCells = (Option<String>, BTreeMap<Cell, Quota>);

/// The target's cells by the profile that plays for them: generation's
/// own first (`None`, the cells no band holds), then each named profile in
/// name order. A profile that holds no cell plays nothing.
/// Builds the settings of every profile as `run` will, before any stage:
/// each named profile over generation's own (played by this run or not,
/// so that a bad key waits for no later run), and each stream this run
/// plays as it lays its layers (generation's own, the tier's, the band's
/// profile), so that a value only the layering makes bad
/// (`min_solver_moves` above a lower layer's `max_solver_moves`) is
/// refused at once. A profile whose band holds none of the target's cells
/// is not laid over the tier: the run never plays it.
pub(crate) fn check_profiles(config: &Sections<'_>, tier: Option<&str>) -> Result<()> {
    Settings::of(config, None, None)?;
    for name in config.generate.profiles.keys() {
        Settings::of(config, None, Some(name))?;
    }
    let (_, quotas) = target_quotas(config, tier)?;
    for (profile, _) in stream_cells(config, &quotas)? {
        Settings::of(config, tier, profile.as_deref())?;
    }
    Ok(())
}

fn stream_cells(config: &Sections<'_>, quotas: &BTreeMap<Cell, Quota>) -> Result<Vec<StreamCells>> {
    let generate = config.generate;
    for band in &generate.bands {
        if !generate.profiles.contains_key(&band.profile) {
            return Err(bad_input(format!(
                "[[generate.bands]]: profile {:?} is not in [generate.profiles]",
                band.profile
            )));
        }
    }
    let mut by_profile: BTreeMap<Option<String>, BTreeMap<Cell, Quota>> = BTreeMap::new();
    for (cell, quota) in quotas {
        let profile = generate
            .bands
            .iter()
            .find(|band| band.holds(cell))
            .map(|band| band.profile.clone());
        by_profile.entry(profile).or_default().insert(*cell, *quota);
    }
    Ok(by_profile.into_iter().collect())
}

/// Plays the streams in turns, a batch each, until each stops. Under a CPU
/// budget (`run` only) each turn's batch is sized to the stream's share of
/// what the budget leaves (the budget left split evenly among the streams
/// still playing, at the CPU per game the stream has measured), so every
/// stream plays from the first round and the run ends within about one
/// game of the budget; a stream whose share is under half a game stops,
/// and every stream stops once the budget is spent. Returns each stream's
/// stop.
///
/// Lock-step turns, not turns by need: giving the next batch to the stream
/// with the least CPU per puzzle it still wanted sent the CPU to the hard
/// band, which turns it into cells slowest, and filled fewer of the APO
/// shape's cells for the same CPU (docs/results/generation.md, "turns by need").
fn take_turns(
    walks: &mut [Walk<'_>],
    mode: Mode,
    max_cpu_hours: Option<f64>,
    (target, seed): (&Target, u64),
    progress: &BatchProgress,
) -> Result<Vec<Stop>> {
    let mut stops: Vec<Option<Stop>> = vec![None; walks.len()];
    // Every stream's puzzles in every cell, as the release draws them (the
    // streams' own counters hold their own cells only); kept for the
    // progress lines alone.
    let mut all_streams = Counter::new(target, seed, 0);
    let budget = max_cpu_hours
        .filter(|_| matches!(mode, Mode::Run | Mode::Check))
        .map(|h| h * 3600.0);
    while stops.iter().any(Option::is_none) {
        for index in 0..walks.len() {
            if stops[index].is_some() {
                continue;
            }
            if let Some(budget) = budget {
                let spent: f64 = walks.iter().map(|w| w.cpu_seconds).sum();
                let playing = stops.iter().filter(|s| s.is_none()).count();
                let share = (budget - spent) / playing.max(1) as f64;
                let allowed = games_within(walks, index, share);
                if allowed == 0 {
                    stops[index] = Some(Stop::MaxCpuHours);
                    continue;
                }
                walks[index].games_allowed = Some(allowed);
            }
            let taken = walks[index].segments.len();
            stops[index] = walks[index].step()?;
            if walks[index].segments.len() > taken && progress.shown() {
                if let Some(segment) = walks[index].segments.last() {
                    all_streams.stream = index;
                    all_streams.add_segment(segment, false)?;
                }
                progress.batch(walks, index, all_streams.fill());
            }
            let spent: f64 = walks.iter().map(|w| w.cpu_seconds).sum();
            if stops[index].is_none() && budget.is_some_and(|b| spent >= b) {
                for stop in stops.iter_mut().filter(|s| s.is_none()) {
                    *stop = Some(Stop::MaxCpuHours);
                }
            }
        }
    }
    Ok(stops.into_iter().flatten().collect())
}

/// The games `share` engine CPU-seconds pay for in stream `index`, at the
/// CPU per game it measured (else the mean of the streams that measured
/// one), rounded: 0 when the share is under half a game. Before any
/// stream measured a game: a first batch of a quarter of `batch_games`,
/// so that no stream's first batch spends the others' budget.
fn games_within(walks: &[Walk<'_>], index: usize, share: f64) -> u64 {
    let per_game = |w: &Walk<'_>| {
        let games = w.next - w.first;
        (games > 0 && w.cpu_seconds > 0.0).then(|| w.cpu_seconds / games as f64)
    };
    let measured: Vec<f64> = walks.iter().filter_map(per_game).collect();
    let mean = (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / measured.len() as f64);
    if share <= 0.0 {
        return 0;
    }
    match per_game(&walks[index]).or(mean) {
        Some(per_game) => (share / per_game).round() as u64,
        None => walks[index].config.generate.batch_games.max(1).div_ceil(4),
    }
}

/// The store key of a run of `tier`, nothing played: a rerun of a
/// finished release checks it before generating anything.
pub(crate) fn store_key(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
) -> Result<String> {
    // The quotas decide which profiles play: no exclude file is read.
    let (_, quotas) = target_quotas(config, tier)?;
    let keys = stream_cells(config, &quotas)?
        .iter()
        .map(|(profile, _)| {
            let settings = Settings::of(config, tier, profile.as_deref())?;
            Ok(store_of(config, &settings, engine)?.key)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(keys.join("+"))
}

/// The stores of other algorithm versions `--keep-stored-work` reuses for
/// these settings ([`store_of`]), as the release records them.
pub(crate) fn kept_stores(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
) -> Result<Vec<crate::stages::release::manifest::KeptWork>> {
    let (_, quotas) = target_quotas(config, tier)?;
    let mut kept = Vec::new();
    for (profile, _) in stream_cells(config, &quotas)? {
        let settings = Settings::of(config, tier, profile.as_deref())?;
        if let Some(other) = store_of(config, &settings, engine)?
            .other
            .filter(|o| o.kept)
        {
            kept.push(crate::stages::release::manifest::KeptWork {
                what: format!("generation store {}", other.key),
                recorded: other.recorded,
                this_build: other.this_build,
            });
        }
    }
    Ok(kept)
}

/// For `run --plan` ([`crate::generate::plan`]): each stream's first
/// games, taken as `run` takes them (stored batches reused, missing ones
/// played into the store, the stopping rule applied), up to `games` games
/// rounded up to whole batches (at most `max_games`), or until the
/// stream's batches spend `cpu_hours` split evenly across the streams.
/// A run after the plan plays none of these games again.
pub(crate) fn sample(
    config: &Sections<'_>,
    engine: Engine,
    tier: Option<&str>,
    excluded_releases: &[PathBuf],
    games: u64,
    cpu_hours: Option<f64>,
) -> Result<Vec<StreamSample>> {
    let target = Target::of(config, tier, excluded_releases)?;
    let streams = stream_cells(config, &target.quotas)?;
    let batch = config.generate.batch_games.max(1);
    let last = games
        .max(1)
        .div_ceil(batch)
        .saturating_mul(batch)
        .min(config.generate.max_games);
    let share = cpu_hours.map(|hours| hours * 3600.0 / streams.len().max(1) as f64);
    let mut samples = Vec::new();
    for (profile, quotas) in streams {
        let settings = Settings::of(config, tier, profile.as_deref())?;
        let (store, key) = open_store(config, &settings, engine)?;
        let target = target.restricted_to(quotas);
        let mut walk = Walk {
            config,
            mode: Mode::Run,
            player: Player {
                settings: &settings,
                engine,
                store: &store,
                pools: None,
                wall_seconds: BTreeMap::new(),
            },
            batches: stored_batches(&store)?,
            counter: Counter::new(&target, config.seed, 0),
            segments: Vec::new(),
            cpu_seconds: 0.0,
            played: Played::default(),
            profile: profile.clone(),
            first: 1,
            next: 1,
            last,
            games_allowed: None,
        };
        let stop = loop {
            if let Some(stop) = walk.step()? {
                break stop;
            }
            if share.is_some_and(|share| walk.cpu_seconds >= share) {
                break Stop::MaxCpuHours;
            }
        };
        samples.push(walk.sample(profile, key, stop));
    }
    Ok(samples)
}

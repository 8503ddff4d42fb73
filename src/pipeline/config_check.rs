//! The whole config checked in one pass before the first stage runs:
//! every key within its bound (as the file is read, [`PipelineConfig::parse`]),
//! then the keys that bound each other, the stage list, `[release]` whole,
//! every generation profile as the run lays it, names and files. Apart
//! from the sections' types (`config.rs`) because it reads them all and
//! owns none.

use anyhow::Result;
use std::path::Path;

use crate::core::error::bad_input;
use crate::core::settings::line_of;
use crate::pipeline::config::PipelineConfig;
use crate::stages::StageName;

impl PipelineConfig {
    /// Checks the whole config and every path it names before the first
    /// stage runs, so that a mistake is reported at once (exit 2, naming the
    /// file, the key and its line) instead of after hours of self-play.
    /// `tier` is `run --tier`.
    pub(crate) fn validate(&self, path: &Path, tier: Option<&str>) -> Result<()> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let fail = |section: &str, key: &str, why: String| {
            let line = line_of(&text, section, key)
                .map(|n| format!(" (line {n})"))
                .unwrap_or_default();
            let dotted = if section.is_empty() {
                key.to_string()
            } else {
                format!("{section}.{key}")
            };
            Err(bad_input(format!(
                "{}: {dotted}{line}: {why}",
                path.display()
            )))
        };
        let stages = &self.pipeline.stages;
        self.validate_stage_list(&fail)?;
        self.validate_output_dir(&fail)?;
        if let Some(name) = tier
            && !self.release.tiers.contains_key(name)
        {
            let known: Vec<&str> = self.release.tiers.keys().map(String::as_str).collect();
            return fail(
                "release",
                "tiers",
                format!(
                    "--tier {name:?} is not configured (configured: {})",
                    known.join(", ")
                ),
            );
        }
        self.validate_ranges(path, &fail)?;
        self.validate_generate(&fail, tier)?;
        self.validate_stage_sections(path, &fail, tier)?;
        if !is_pgn_date(&self.selfplay.date) {
            let date = &self.selfplay.date;
            return fail(
                "selfplay",
                "date",
                format!("{date:?} is not a PGN date (YYYY.MM.DD, ? for unknown digits)"),
            );
        }
        if stages.contains(&StageName::Eval)
            && let Some(model) = &self.eval.model
            && let Err(e) = crate::stages::eval::players::ModelSpec::parse(model)
        {
            return fail("eval", "model", format!("{e:#}"));
        }
        self.validate_paths(&fail)
    }

    /// `pipeline.stages`: not empty, no stage twice, in pipeline order.
    fn validate_stage_list(&self, fail: &dyn Fn(&str, &str, String) -> Result<()>) -> Result<()> {
        let stages = &self.pipeline.stages;
        if stages.is_empty() {
            return fail(
                "pipeline",
                "stages",
                "no stage to run (an empty or missing pipeline.stages does nothing)".into(),
            );
        }
        // Each stage reads what the ones before it in pipeline order wrote,
        // so a list out of that order (or naming a stage twice) would fail
        // or repeat work only after earlier stages ran.
        let order = |stage: &StageName| StageName::ALL.iter().position(|s| s == stage);
        for (i, pair) in stages.windows(2).enumerate() {
            let (earlier, later) = (&pair[0], &pair[1]);
            if stages[..=i].contains(later) {
                return fail(
                    "pipeline",
                    "stages",
                    format!("{} is listed twice", later.as_str()),
                );
            }
            if order(later) < order(earlier) {
                let all: Vec<&str> = StageName::ALL.iter().map(|s| s.as_str()).collect();
                return fail(
                    "pipeline",
                    "stages",
                    format!(
                        "{} comes after {}; stages run in pipeline order: {}",
                        later.as_str(),
                        earlier.as_str(),
                        all.join(", ")
                    ),
                );
            }
        }
        Ok(())
    }

    /// Each listed stage's rules across its keys (the bounds of each key
    /// were checked as the file was read), and every generation profile as
    /// generation lays it over `[selfplay]` and `[mine]`: a mistake in any
    /// is refused before the first stage, not when its stage or profile is
    /// reached hours later.
    fn validate_stage_sections(
        &self,
        path: &Path,
        fail: &dyn Fn(&str, &str, String) -> Result<()>,
        tier: Option<&str>,
    ) -> Result<()> {
        let named = |e: anyhow::Error| bad_input(format!("{}: {e:#}", path.display()));
        let stages = &self.pipeline.stages;
        if stages.contains(&StageName::Selfplay) && !self.generate.enabled {
            if self.selfplay.games == 0 {
                fail(
                    "selfplay",
                    "games",
                    "0 games: the selfplay stage would write an empty PGN (set games, or \
                     [generate] enabled = true to generate to order)"
                        .into(),
                )?;
            }
            self.selfplay.validate().map_err(named)?;
        }
        if stages.contains(&StageName::Mine) {
            self.mine.validate().map_err(named)?;
        }
        if self.generate.enabled {
            crate::generate::check_profiles(&self.generate_sections(), tier).map_err(named)?;
        }
        Ok(())
    }

    /// `[generate]`, when enabled: a tier that exists, positive budgets,
    /// the stages it feeds, its exclusion files.
    fn validate_generate(
        &self,
        fail: &dyn Fn(&str, &str, String) -> Result<()>,
        tier: Option<&str>,
    ) -> Result<()> {
        let generate = &self.generate;
        if !generate.enabled {
            return Ok(());
        }
        if let Some(name) = &generate.tier
            && !self.release.tiers.contains_key(name)
        {
            let known: Vec<&str> = self.release.tiers.keys().map(String::as_str).collect();
            fail(
                "generate",
                "tier",
                format!(
                    "{name:?} is not a tier of [release.tiers] ({})",
                    known.join(", ")
                ),
            )?;
        }
        if let (Some(ours), Some(flag)) = (&generate.tier, tier)
            && ours != flag
        {
            fail(
                "generate",
                "tier",
                format!("{ours:?} differs from --tier {flag:?}"),
            )?;
        }
        let needed: Vec<StageName> = StageName::ALL
            .into_iter()
            .filter(|s| s.properties().generate_needs)
            .collect();
        for &stage in &needed {
            if !self.pipeline.stages.contains(&stage) {
                fail(
                    "pipeline",
                    "stages",
                    format!("[generate] needs {}; {stage} is missing", and_list(&needed)),
                )?;
            }
        }
        for why in generate.exclude.iter().filter_map(|p| unreadable(p)) {
            fail("generate", "exclude", why)?;
        }
        for band in &generate.bands {
            if !generate.profiles.contains_key(&band.profile) {
                fail(
                    "generate.bands",
                    "profile",
                    format!(
                        "{:?} is not in [generate.profiles] (known: {:?})",
                        band.profile,
                        generate.profiles.keys().collect::<Vec<_>>()
                    ),
                )?;
            }
        }
        Ok(())
    }

    /// The keys that bound each other, checked whole before any stage
    /// (each key's own bound was checked as the file was read,
    /// [`crate::core::bounds`]): the ingest filters' ranges, `[release]` (its
    /// cells and tiers, with or without `[generate]`: the quota tables, a
    /// `min_puzzles` the quotas can reach), the client's backoff, so that a
    /// mistake never hangs a run or surfaces hours later at the release
    /// stage.
    fn validate_ranges(
        &self,
        path: &Path,
        fail: &dyn Fn(&str, &str, String) -> Result<()>,
    ) -> Result<()> {
        // Each key's own range (ratings 0..=4000, lengths 1..=10, the
        // win-chance gain) is its bound, checked as the file was read.
        let puzzles = &self.ingest.puzzles;
        if let (Some(lo), Some(hi)) = (puzzles.min_rating, puzzles.max_rating)
            && lo > hi
        {
            fail(
                "ingest.puzzles",
                "min_rating",
                format!("{lo} is above max_rating {hi}: no puzzle would pass"),
            )?;
        }
        for (name, tier) in &self.release.tiers {
            let section = format!("release.tiers.{name}");
            if let Some((key, why)) = tier.empty_bounds() {
                fail(&section, key, why)?;
            }
        }
        let quotas = std::iter::once((None, None))
            .chain(self.release.tiers.iter().map(|(n, t)| (Some(n), Some(t))));
        for (name, tier) in quotas {
            let which = name.map(|n| format!(" (tier {n:?})")).unwrap_or_default();
            let table = self
                .release
                .quota_table(tier)
                .map_err(|e| bad_input(format!("{}: {e:#}{which}", path.display())))?;
            let total: usize = table.values().map(|q| q.train + q.test).sum();
            // A tier may hold none of the configured cells (it is then an
            // empty release of that tier); the whole table may not.
            if name.is_none() && total == 0 {
                fail(
                    "release",
                    "train_per_cell",
                    "every cell's quota is 0: a release would hold no puzzle".into(),
                )?;
            }
            if name.is_none() && self.release.min_puzzles > total {
                fail(
                    "release",
                    "min_puzzles",
                    format!(
                        "{} is above the {total} puzzles the quotas can ever draw: no release \
                         would pass",
                        self.release.min_puzzles
                    ),
                )?;
            }
        }
        let games = &self.ingest.games;
        if let (Some(lo), Some(hi)) = (games.min_elo, games.max_elo)
            && lo > hi
        {
            fail(
                "ingest.games",
                "min_elo",
                format!("{lo} is above max_elo {hi}: no game would pass"),
            )?;
        }
        let client = &self.eval.client;
        if client.backoff_min_ms > client.backoff_max_ms {
            fail(
                "eval.client",
                "backoff_min_ms",
                format!(
                    "{} is above backoff_max_ms {}",
                    client.backoff_min_ms, client.backoff_max_ms
                ),
            )?;
        }
        Ok(())
    }

    /// `pipeline.output_dir`: a folder (or none yet), not the filesystem
    /// root, where every release is written and read to be excluded.
    fn validate_output_dir(&self, fail: &dyn Fn(&str, &str, String) -> Result<()>) -> Result<()> {
        let output_dir = &self.pipeline.output_dir;
        let real = output_dir
            .canonicalize()
            .or_else(|_| std::path::absolute(output_dir))
            .unwrap_or_else(|_| output_dir.clone());
        if real.parent().is_none() {
            return fail(
                "pipeline",
                "output_dir",
                format!(
                    "{} is the filesystem root: releases go into a folder of their own, which \
                     every new release reads to exclude their puzzles",
                    output_dir.display()
                ),
            );
        }
        if std::fs::metadata(output_dir).is_ok_and(|m| !m.is_dir()) {
            return fail(
                "pipeline",
                "output_dir",
                format!("{} is not a folder", output_dir.display()),
            );
        }
        Ok(())
    }

    /// Every file the configured stages read must exist and be a file
    /// (not a folder, a FIFO or a device), named by its key: a stage that
    /// found it missing would fail only after the stages before it wrote
    /// their folders (hours of self-play, for `mine`'s human games).
    /// `[generate] exclude` is checked with the rest of `[generate]`.
    fn validate_paths(&self, fail: &dyn Fn(&str, &str, String) -> Result<()>) -> Result<()> {
        let stages = &self.pipeline.stages;
        let missing = |p: &Path| !p.exists();
        self.validate_human_games(fail)?;
        self.validate_maia_players(fail)?;
        if stages.contains(&StageName::IngestPuzzles) {
            for why in self.sources.puzzles.iter().filter_map(|p| unreadable(p)) {
                fail("sources", "puzzles", why)?;
            }
        }
        if stages.contains(&StageName::IngestGames) {
            for why in self.sources.games.iter().filter_map(|p| unreadable(p)) {
                fail("sources", "games", why)?;
            }
        }
        if stages.contains(&StageName::Rate)
            && let Some(why) = self.rate.model.as_deref().and_then(unreadable)
        {
            fail("rate", "model", why)?;
        }
        if stages.contains(&StageName::Rate)
            && let Some(folder) = &self.rate.maia
            && let Err(e) = crate::stages::rate::MaiaSpec::of_dir(folder)
        {
            fail("rate", "maia", format!("{e:#}"))?;
        }
        let uses_engine = stages.iter().any(|s| s.properties().uses_engine);
        if let Some(engine) = self
            .engine
            .path
            .as_ref()
            .filter(|p| uses_engine && missing(p))
        {
            fail(
                "engine",
                "path",
                format!("{} does not exist", engine.display()),
            )?;
        }
        Ok(())
    }

    /// The human games the listed stages read: the start file of
    /// `[selfplay] human` and of every generation layer's `human` table
    /// (each profile's is read whole, hashed into its store key, only when
    /// its first batch is played), and the file `mine` draws
    /// `[human_games]` from. Each is named by the key that set it, and
    /// worded for what it is (a puzzle file or a PGN).
    fn validate_human_games(&self, fail: &dyn Fn(&str, &str, String) -> Result<()>) -> Result<()> {
        let stages = &self.pipeline.stages;
        let sources = self.sources.human_games.as_deref();
        // A `human` table without its own `games` took `[sources]
        // human_games` when the file was loaded: that key names it.
        let check = |section: &str, games: &Path| match crate::chess::human_games::unreadable(games)
        {
            Some(why) if sources == Some(games) => fail("sources", "human_games", why),
            Some(why) => fail(section, "games", why),
            None => Ok(()),
        };
        if stages.contains(&StageName::Selfplay) {
            // Generation lays its layers over `[selfplay]`, so its `human`
            // is read with `[generate]` on too (unless every layer replaces
            // it). An unset `games` is the section's own check's to report.
            if let Some(human) = &self.selfplay.human
                && !human.games.as_os_str().is_empty()
            {
                check("selfplay.human", &human.games)?;
            }
            for (layer, table) in self.generation_layers() {
                let games = table
                    .get("human")
                    .and_then(|human| human.get("games"))
                    .and_then(toml::Value::as_str);
                if let Some(games) = games {
                    check(&format!("{layer}.human"), Path::new(games))?;
                }
            }
        }
        if stages.contains(&StageName::Mine)
            && self.human_games.mine_games > 0
            && let Some(games) = sources
        {
            check("sources", games)?;
        }
        Ok(())
    }

    /// The Maia nets the players of `[selfplay] maia` and of every
    /// generation layer's `maia` table draw from are in their folder
    /// (each net read and hashed: a few megabytes), named by the key of
    /// the table. Otherwise a missing net is found when the stage (or a
    /// profile's first batch) starts, after the stages before it ran.
    fn validate_maia_players(&self, fail: &dyn Fn(&str, &str, String) -> Result<()>) -> Result<()> {
        use crate::stages::selfplay::MaiaPlayers;
        if !self.pipeline.stages.contains(&StageName::Selfplay) {
            return Ok(());
        }
        if let Some(maia) = &self.selfplay.maia
            && let Err(e) = maia.fingerprint()
        {
            fail("selfplay.maia", "models_dir", format!("{e:#}"))?;
        }
        for (layer, table) in self.generation_layers() {
            // A table that is not a valid `maia` is the layer's own check's
            // to report, with its key.
            let Some(Ok(maia)) = table
                .get("maia")
                .cloned()
                .map(toml::Value::try_into::<MaiaPlayers>)
            else {
                continue;
            };
            if let Err(e) = maia.fingerprint() {
                fail(&format!("{layer}.maia"), "models_dir", format!("{e:#}"))?;
            }
        }
        Ok(())
    }

    /// Generation's `selfplay` layers by the section that holds each
    /// (`generate.selfplay`, `generate.tiers.NAME.selfplay`,
    /// `generate.profiles.NAME.selfplay`); none with `[generate]` off.
    fn generation_layers(&self) -> Vec<(String, &toml::Table)> {
        let generate = &self.generate;
        if !generate.enabled {
            return Vec::new();
        }
        std::iter::once(("generate.selfplay".to_string(), &generate.selfplay))
            .chain(generate.tiers.iter().map(|(name, profile)| {
                (format!("generate.tiers.{name}.selfplay"), &profile.selfplay)
            }))
            .chain(generate.profiles.iter().map(|(name, profile)| {
                (
                    format!("generate.profiles.{name}.selfplay"),
                    &profile.selfplay,
                )
            }))
            .collect()
    }
}

/// Why `path` cannot be read as a file (missing, or a folder, a FIFO, a
/// device, each named as what it is); `None` when it can.
fn unreadable(path: &Path) -> Option<String> {
    if !path.exists() && !path.is_symlink() {
        return Some(format!("{} does not exist", path.display()));
    }
    crate::core::fileio::require_file(path)
        .err()
        .map(|e| format!("{e:#}"))
}

/// Whether `date` is a PGN date: `YYYY.MM.DD`, each digit or `?`.
fn is_pgn_date(date: &str) -> bool {
    let parts: Vec<&str> = date.split('.').collect();
    parts.len() == 3
        && [4, 2, 2].iter().zip(&parts).all(|(len, part)| {
            part.len() == *len && part.chars().all(|c| c.is_ascii_digit() || c == '?')
        })
}

/// `stages` named for a sentence: `selfplay, mine and rate`.
fn and_list(stages: &[StageName]) -> String {
    match stages {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", StageName::list(rest.iter().copied())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `engine.path` is needed by the stages that use the engine (their
    /// row of [`StageName::properties`]), not by `rate`, which reads Maia
    /// nets and the board and whose stage resolves no engine.
    #[test]
    fn only_a_stage_that_uses_the_engine_needs_its_path() {
        let path = Path::new("p.toml");
        let config = |stages: &str| {
            let text = format!(
                "[pipeline]\nstages = [{stages}]\n[engine]\npath = \"/nowhere/stockfish\"\n"
            );
            PipelineConfig::parse(&text, path).unwrap()
        };
        config("\"rate\"").validate(path, None).unwrap();
        let error = config("\"rate\", \"verify\"")
            .validate(path, None)
            .unwrap_err();
        assert!(format!("{error:#}").contains("engine.path"), "{error:#}");
    }

    /// The keys whose bounds `validate` once re-checked by hand are refused
    /// as the file is read, each named with its line and its bound.
    #[test]
    fn the_bounds_refuse_zero_counts_as_the_file_is_read() {
        for (text, said) in [
            (
                "[engine]\nmax_attempts = 0\n",
                "engine.max_attempts = 0 (line 2)",
            ),
            (
                "[release]\nbin_width = 0\n",
                "release.bin_width = 0 (line 2)",
            ),
            (
                "[release]\nbin_width = -100\n",
                "release.bin_width = -100 (line 2)",
            ),
            (
                "[generate]\nbatch_games = 0\n",
                "generate.batch_games = 0 (line 2)",
            ),
            (
                "[generate]\nmax_games = 0\n",
                "generate.max_games = 0 (line 2)",
            ),
            (
                "[generate]\nmax_per_game = 0\n",
                "generate.max_per_game = 0 (line 2)",
            ),
        ] {
            let error = PipelineConfig::parse(text, Path::new("p.toml")).unwrap_err();
            let message = format!("{error:#}");
            assert!(
                message.starts_with(&format!("p.toml: {said}: must lie within 1..=")),
                "{message}"
            );
            assert_eq!(crate::core::error::exit_code(&error), 2, "{message}");
        }
    }
}

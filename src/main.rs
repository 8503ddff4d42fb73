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
    /// Ask a model (or a baseline player) every solver position of a puzzle set and report.
    Eval(puzzleforge::eval::EvalArgs),
    /// Compare two eval runs metric by metric with one-sided Welch t-tests.
    Compare(puzzleforge::eval::compare::CompareArgs),
    /// Play short games from start positions against Stockfish and report regret.
    Rollout(puzzleforge::eval::rollout::RolloutArgs),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(puzzleforge::check::CheckArgs),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Push positions through the engine pool and report CPU and wall-time ratios.
    Pool(puzzleforge::bench_pool::BenchPoolArgs),
}

fn dispatch(command: &Command) -> anyhow::Result<Summary> {
    match command {
        Command::Eval(args) => puzzleforge::eval::run_eval(args),
        Command::Compare(args) => puzzleforge::eval::compare::run_compare(args),
        Command::Rollout(args) => puzzleforge::eval::rollout::run_rollout(args),
        Command::Check(args) => puzzleforge::check::run_check(args),
        Command::Bench(BenchCommand::Pool(args)) => puzzleforge::bench_pool::run_bench_pool(args),
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

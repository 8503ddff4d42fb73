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
    /// Bring outside sources (Lichess puzzles, Lichess games) into puzzleforge.
    Ingest(puzzleforge::ingest::IngestArgs),
    /// Benchmarks (run in release mode).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Time `ingest puzzles` against the python-chess peer.
    Ingest(puzzleforge::bench_ingest::BenchIngestArgs),
}

fn dispatch(command: &Command) -> anyhow::Result<Summary> {
    match command {
        Command::Ingest(args) => puzzleforge::ingest::run_ingest(args),
        Command::Bench(BenchCommand::Ingest(args)) => {
            puzzleforge::bench_ingest::run_bench_ingest(args)
        }
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

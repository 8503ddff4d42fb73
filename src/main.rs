//! The puzzleforge command line.

use clap::{Parser, Subcommand};
use puzzleforge::core::error::{EXIT_SHORTFALL, exit_code};
use puzzleforge::core::summary::Summary;

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
    Run(puzzleforge::pipeline::run::RunArgs),
    /// Combine the shard folders of `run --shard I/N` into one release
    /// (byte-identical to an unsharded run), then run the remaining stages.
    Merge(puzzleforge::pipeline::merge::MergeArgs),
    /// Bring outside sources (Lichess puzzles, Lichess games) into puzzleforge.
    #[command(subcommand)]
    Ingest(IngestCommand),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(puzzleforge::tools::check::CheckArgs),
    /// Play reproducible self-play games (Epoch's generator) into a PGN file.
    Selfplay(puzzleforge::stages::selfplay::SelfplayArgs),
    /// Mine Epoch-style puzzles from games or candidate positions.
    Mine(puzzleforge::stages::mine::MineArgs),
    /// Re-analyse mined puzzles at K times the nodes and with a second engine.
    Verify(puzzleforge::stages::verify::VerifyArgs),
    /// Estimate Lichess-scale ratings of mined puzzles with the fitted
    /// rating model (fit on real Lichess puzzles with --calibrate).
    Rate(puzzleforge::stages::rate::RateArgs),
    /// Draw a stratified, game-grouped train/test release from puzzle pools.
    Split(Box<puzzleforge::stages::release::SplitArgs>),
    /// Export a release for Inspect, DSPy, OpenAI evals or as Lichess CSV.
    Export(puzzleforge::stages::export::ExportArgs),
    /// Ask a model (or a baseline player) every solver position of a puzzle set and report.
    Eval(puzzleforge::stages::eval::EvalArgs),
    /// Compare two eval runs metric by metric: paired tests on the puzzles
    /// both scored (McNemar, paired t), else one-sided Welch t-tests.
    Compare(puzzleforge::stages::eval::compare::CompareArgs),
    /// Play short games from start positions against Stockfish and report regret.
    Rollout(puzzleforge::stages::eval::rollout::RolloutArgs),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// The `ingest` subcommands.
// Parsed once per run, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum IngestCommand {
    /// Validate the Lichess puzzle dump (CSV or CSV.zst), derive our columns,
    /// filter and sample; OUT's extension picks CSV or JSON Lines.
    Puzzles(puzzleforge::stages::ingest_puzzles::PuzzlesArgs),
    /// Find puzzle candidates in a Lichess game dump (PGN, plain or .zst)
    /// from its embedded `[%eval]` analysis.
    Games(puzzleforge::stages::ingest_games::GamesArgs),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Push positions through the engine pool and report CPU and wall-time ratios.
    Pool(puzzleforge::tools::bench::pool::BenchPoolArgs),
    /// Time `ingest puzzles` against the python-chess peer.
    Ingest(puzzleforge::tools::bench::ingest::BenchIngestArgs),
    /// PGN parse + replay throughput against pgn-reader alone.
    Pgn(puzzleforge::tools::bench::pgn::BenchPgnArgs),
    /// Compare the mining funnel with exhaustive analysis: recall and engine nodes.
    Mine(puzzleforge::tools::bench::mine::BenchMineArgs),
    /// Generated puzzles per engine CPU-hour, overall and for a tier, side
    /// by side with Epoch's exhaustive procedure on the same games.
    Generate(puzzleforge::pipeline::generate_bench::BenchGenerateArgs),
    /// Positions per second per core through the nine Maia nets, against
    /// lc0's own backend.
    Maia(puzzleforge::tools::bench::maia::BenchMaiaArgs),
}

/// Refuses, before a command starts, a path it would write inside a
/// finished release, a run's folder or a folder holding releases
/// (`run` and `merge` guard their own release folders).
fn refuse_finished_targets(command: &Command) -> anyhow::Result<()> {
    use puzzleforge::core::finished::{Target, refuse_finished_target as refuse};
    match command {
        Command::Ingest(IngestCommand::Puzzles(args)) => {
            refuse(&args.output, Target::File, "ingest puzzles")
        }
        Command::Ingest(IngestCommand::Games(args)) => {
            refuse(&args.output, Target::File, "ingest games")
        }
        Command::Selfplay(args) => refuse(&args.output, Target::File, "selfplay"),
        Command::Mine(args) => refuse(&args.output, Target::File, "mine"),
        Command::Rate(args) => match &args.output {
            Some(output) => refuse(output, Target::File, "rate"),
            None => Ok(()),
        },
        Command::Split(args) => refuse(&args.output, Target::Folder, "split"),
        Command::Export(args) => refuse(&args.output, Target::Folder, "export"),
        Command::Eval(args) => refuse(&args.output, Target::Folder, "eval"),
        Command::Rollout(args) => refuse(&args.output, Target::Folder, "rollout"),
        _ => Ok(()),
    }
}

fn dispatch(command: &Command) -> anyhow::Result<Summary> {
    refuse_finished_targets(command)?;
    match command {
        Command::Run(args) => puzzleforge::pipeline::run::run_pipeline(args),
        Command::Merge(args) => puzzleforge::pipeline::merge::run_merge(args),
        Command::Ingest(IngestCommand::Puzzles(args)) => {
            puzzleforge::stages::ingest_puzzles::run_puzzles(args)
        }
        Command::Ingest(IngestCommand::Games(args)) => {
            puzzleforge::stages::ingest_games::run_games(args)
        }
        Command::Check(args) => puzzleforge::tools::check::run_check(args),
        Command::Selfplay(args) => puzzleforge::stages::selfplay::run_selfplay(args),
        Command::Mine(args) => puzzleforge::stages::mine::run_mine(args),
        Command::Verify(args) if puzzleforge::tools::recheck::is_recheck(args) => {
            puzzleforge::tools::recheck::run_recheck(args)
        }
        Command::Verify(args) => puzzleforge::stages::verify::run_verify(args),
        Command::Rate(args) => puzzleforge::stages::rate::run_rate(args),
        Command::Split(args) => puzzleforge::stages::release::run_split(args),
        Command::Export(args) => puzzleforge::stages::export::run_export(args),
        Command::Eval(args) => puzzleforge::stages::eval::run_eval(args),
        Command::Compare(args) => puzzleforge::stages::eval::compare::run_compare(args),
        Command::Rollout(args) => puzzleforge::stages::eval::rollout::run_rollout(args),
        Command::Bench(BenchCommand::Pool(args)) => {
            puzzleforge::tools::bench::pool::run_bench_pool(args)
        }
        Command::Bench(BenchCommand::Ingest(args)) => {
            puzzleforge::tools::bench::ingest::run_bench_ingest(args)
        }
        Command::Bench(BenchCommand::Pgn(args)) => {
            puzzleforge::tools::bench::pgn::run_bench_pgn(args)
        }
        Command::Bench(BenchCommand::Mine(args)) => {
            puzzleforge::tools::bench::mine::run_bench_mine(args)
        }
        Command::Bench(BenchCommand::Generate(args)) => {
            puzzleforge::pipeline::generate_bench::run_bench_generate(args)
        }
        Command::Bench(BenchCommand::Maia(args)) => {
            puzzleforge::tools::bench::maia::run_bench_maia(args)
        }
    }
}

fn main() {
    let cli = Cli::parse();
    puzzleforge::core::progress::set_json_lines(cli.json);
    match dispatch(&cli.command) {
        Ok(summary) => {
            if !summary.human.is_empty() {
                eprintln!("{}", summary.human.trim_end());
            }
            if cli.json {
                println!("{}", summary.json);
            }
            if let Some(shortfall) = summary.shortfall {
                eprintln!("puzzleforge: error: {shortfall}");
                std::process::exit(EXIT_SHORTFALL);
            }
        }
        Err(error) => {
            eprintln!("puzzleforge: error: {error:#}");
            std::process::exit(exit_code(&error));
        }
    }
}

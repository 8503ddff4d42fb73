//! The command line: the commands and their flags (one clap definition,
//! which `main.rs` parses and the tests read), and the dispatch of a parsed
//! command to its stage or tool. The gate every output path goes through
//! before a command does any work is `guard`.

pub mod bench;
pub mod check;
pub mod compare;
pub mod eval;
pub mod groups;
pub mod guard;
pub mod merge;
pub mod rollout;
pub mod run;
pub mod tag;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::core::summary::Summary;
use crate::stages::release::folder::{Target, guard_output};

pub use guard::{OUTPUT_FLAGS, OutputFlag, guard_outputs};

#[derive(Parser, Debug)]
#[command(
    name = "puzzleforge",
    version,
    about = "Renews chess puzzle benchmarks for evaluating and prompt-optimizing LLMs"
)]
pub struct Cli {
    /// Print exactly one JSON summary object on stdout.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the stages of pipeline.toml in order into output/<release>/,
    /// skipping stages whose inputs and config are unchanged.
    Run(run::RunFlags),
    /// Combine the shard folders of `run --shard I/N` into one release
    /// (byte-identical to an unsharded run), then run the remaining stages.
    Merge(merge::MergeFlags),
    /// Bring outside sources (Lichess puzzles, Lichess games) into puzzleforge.
    #[command(subcommand)]
    Ingest(IngestCommand),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(check::CheckFlags),
    /// Play reproducible self-play games (Epoch's generator) into a PGN file.
    Selfplay(crate::stages::selfplay::SelfplayArgs),
    /// Mine Epoch-style puzzles from games or candidate positions.
    Mine(crate::stages::mine::MineArgs),
    /// (Re)write the Themes column of a puzzle file with Lichess's themes,
    /// decided from each row's FEN and moves.
    Tag(tag::TagFlags),
    /// Re-analyse mined puzzles at K times the nodes and with a second engine.
    Verify(crate::stages::verify::VerifyArgs),
    /// Estimate Lichess-scale ratings of mined puzzles with the fitted
    /// rating model (fit on real Lichess puzzles with --calibrate).
    Rate(crate::stages::rate::RateArgs),
    /// Draw a stratified, game-grouped train/test release from puzzle pools.
    Split(Box<crate::stages::release::SplitArgs>),
    /// Export a release for Inspect, DSPy, OpenAI evals or as Lichess CSV.
    Export(crate::stages::export::ExportArgs),
    /// Ask a model (or a baseline player) every solver position of a puzzle set and report.
    Eval(eval::EvalFlags),
    /// Compare two eval runs metric by metric: paired tests on the puzzles
    /// both scored (McNemar, paired t), else one-sided Welch t-tests.
    Compare(compare::CompareFlags),
    /// Play short games from start positions against Stockfish and report regret.
    Rollout(rollout::RolloutFlags),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// The `ingest` subcommands.
// Parsed once per run, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum IngestCommand {
    /// Validate the Lichess puzzle dump (CSV or CSV.zst), derive our columns,
    /// filter and sample; OUT's extension picks CSV or JSON Lines.
    Puzzles(crate::stages::ingest_puzzles::PuzzlesArgs),
    /// Find puzzle candidates in a Lichess game dump (PGN, plain or .zst)
    /// from its embedded `[%eval]` analysis.
    Games(crate::stages::ingest_games::GamesArgs),
}

/// The clap definition of every command and flag, as `main` parses it.
pub fn command() -> clap::Command {
    Cli::command()
}

/// The output paths a command derives when its flag is left out, through
/// the same gate: `verify`'s report beside its input, `tag`'s and `rate`'s
/// rejects beside their output. (`eval`'s response cache, which its config
/// may place, is guarded where it is resolved.)
fn guard_derived_outputs(command: &Command) -> Result<()> {
    match command {
        Command::Tag(args) if args.rejects.is_none() => {
            guard::guard_default_rejects(&args.output, "tag")
        }
        Command::Rate(args) if args.rejects.is_none() => match &args.output {
            // Rating writes its rejects beside its output; without an
            // output (clap then has no input either) it rates nothing.
            Some(output) => guard::guard_default_rejects(output, "rate"),
            None => Ok(()),
        },
        Command::Verify(args)
            if args.output.is_none() && !crate::tools::recheck::is_recheck(args) =>
        {
            guard_output(
                &crate::stages::verify::default_report_path(&args.input),
                Target::File,
                "verify",
                "--output (by default INPUT's name with .verify.jsonl, beside it)",
            )
        }
        _ => Ok(()),
    }
}

/// Parses the command line (exiting on a usage error, as clap does),
/// guards its output paths and runs it. Returns whether `--json` was
/// given, with the command's summary or error.
pub fn parse_and_run() -> (bool, Result<Summary>) {
    let root = command();
    let matches = root.clone().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    crate::core::progress::set_json_lines(cli.json);
    let result = guard_outputs(&root, &matches).and_then(|()| dispatch(&cli.command));
    (cli.json, result)
}

/// Runs one parsed command; its output paths were guarded by
/// [`guard_outputs`] (the paths it derives are guarded here).
fn dispatch(command: &Command) -> Result<Summary> {
    guard_derived_outputs(command)?;
    match command {
        Command::Run(flags) => crate::pipeline::run::run_pipeline(&flags.args()),
        Command::Merge(flags) => crate::pipeline::merge::run_merge(&flags.args()),
        Command::Ingest(IngestCommand::Puzzles(args)) => {
            crate::stages::ingest_puzzles::run_puzzles(args)
        }
        Command::Ingest(IngestCommand::Games(args)) => crate::stages::ingest_games::run_games(args),
        Command::Check(flags) => crate::tools::check::run_check(&flags.args()),
        Command::Selfplay(args) => crate::stages::selfplay::run_selfplay(args),
        Command::Mine(args) => crate::stages::mine::run_mine(args),
        Command::Verify(args) if crate::tools::recheck::is_recheck(args) => {
            crate::tools::recheck::run_recheck(args)
        }
        Command::Verify(args) => crate::stages::verify::run_verify(args),
        Command::Rate(args) => crate::stages::rate::run_rate(args),
        Command::Tag(flags) => crate::tools::tag::run_tag(&flags.args()),
        Command::Split(args) => crate::stages::release::run_split(args),
        Command::Export(args) => crate::stages::export::run_export(args),
        Command::Eval(flags) => crate::stages::eval::run_eval(&flags.args()),
        Command::Compare(flags) => crate::stages::eval::compare::run_compare(&flags.args()),
        Command::Rollout(flags) => crate::stages::eval::rollout::run_rollout(&flags.args()),
        Command::Bench(command) => bench::run(command),
    }
}

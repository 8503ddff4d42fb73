//! The command line: the commands and their flags (one clap definition,
//! which `main.rs` parses and the tests read), and the dispatch of a parsed
//! command to its stage or tool.
//!
//! Each command's flags sit in a file of their own, shaped like ripgrep's
//! `crates/core/flags/`: the flags parse into a clap struct here, which
//! lays them into the plain argument struct its stage or tool takes
//! (`args()`), so that nothing below this room knows clap. A flag's help
//! is written here only: the plain struct's doc names the command whose
//! flags fill it, and its fields keep a doc only where they say what the
//! help does not. Flags several commands share are one group each
//! (`groups`), flattened where they appear. The gate every output path
//! goes through before a command does any work is `guard`.

pub mod audit;
pub mod bench;
pub mod check;
pub mod compare;
pub mod eval;
pub mod export;
pub mod groups;
pub mod guard;
pub mod index;
pub mod ingest;
pub mod merge;
pub mod mine;
pub mod rate;
pub mod recheck;
pub mod rollout;
pub mod run;
pub mod selfplay;
pub mod release;
pub mod reproduce;
pub mod tag;
pub mod verify;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::core::summary::Summary;

pub use guard::{OUTPUT_FLAGS, OutputFlag, guard_distinct, guard_outputs};

#[derive(Parser, Debug)]
#[command(
    name = "puzzleforge",
    version = crate::core::build::LONG_VERSION,
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
    /// Run a release's recorded run again into a scratch folder and compare
    /// every file byte for byte (exit 1 naming the files that differ; exit
    /// 2 when an input or engine is not the recorded one).
    Reproduce(reproduce::ReproduceFlags),
    /// Bring outside sources (Lichess puzzles, Lichess games) into puzzleforge.
    #[command(subcommand)]
    Ingest(ingest::IngestCommand),
    /// Analyse positions (FEN or FEN,move per line) with MultiPV 2 and say
    /// whether the best move is unique; one JSON object per position on stdout.
    Check(check::CheckFlags),
    /// Play reproducible self-play games (Epoch's generator) into a PGN file.
    Selfplay(selfplay::SelfplayFlags),
    /// Mine Epoch-style puzzles from games or candidate positions.
    Mine(mine::MineFlags),
    /// (Re)write the Themes column of a puzzle file with Lichess's themes,
    /// decided from each row's FEN and moves.
    Tag(tag::TagFlags),
    /// Re-analyse mined puzzles at K times the nodes and with a second engine.
    Verify(verify::VerifyFlags),
    /// Re-check a release's verdicts: its puzzles (or a puzzle file's)
    /// searched again by today's engines with the settings it records
    /// (exit 2 when one disagrees).
    Recheck(recheck::RecheckFlags),
    /// Estimate Lichess-scale ratings of mined puzzles with the fitted
    /// rating model (fit on real Lichess puzzles with --calibrate).
    Rate(rate::RateFlags),
    /// Draw a stratified, game-grouped train/test release from puzzle pools.
    #[command(alias = "split")]
    Release(Box<release::ReleaseFlags>),
    /// Export a release for Inspect, DSPy, OpenAI evals or as Lichess CSV.
    Export(export::ExportFlags),
    /// Ask a model (or a baseline player) every solver position of a puzzle set and report.
    Eval(eval::EvalFlags),
    /// Compare two eval runs metric by metric: paired tests on the puzzles
    /// both scored (McNemar, paired t), else one-sided Welch t-tests.
    Compare(compare::CompareFlags),
    /// Play short games from start positions against Stockfish and report regret.
    Rollout(rollout::RolloutFlags),
    /// Index puzzle or game files for the novelty rule: near copies of
    /// their puzzles are never kept by generation (`[generate] exclude`)
    /// and are counted by `audit`.
    Index(index::IndexFlags),
    /// Count a release's exact and near copies of public puzzles (an
    /// index), and the near pairs inside it and across its split.
    Audit(audit::AuditFlags),
    /// Benchmarks (measure speed; not tests).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// The clap definition of every command and flag, as `main` parses it.
pub fn command() -> clap::Command {
    Cli::command()
}

/// The output paths a command derives when its flag is left out, which go
/// through the same gate as its flags: `verify`'s report beside its input,
/// `tag`'s, `rate`'s and `ingest puzzles`' rejects beside their output, `mine`'s checkpoint
/// beside its output. (`eval`'s response cache, which its config may
/// place, is guarded where it is resolved.)
fn derived_outputs(command: &Command) -> Vec<guard::DerivedOutput> {
    match command {
        Command::Tag(args) if args.rejects.is_none() => vec![guard::default_rejects(&args.output)],
        Command::Ingest(ingest::IngestCommand::Puzzles(flags)) if flags.rejects.is_none() => {
            vec![guard::default_rejects(&flags.output)]
        }
        Command::Rate(args) if args.rejects.is_none() => match &args.output {
            // Rating writes its rejects beside its output; without an
            // output (clap then has no input either) it rates nothing.
            Some(output) => vec![guard::default_rejects(output)],
            None => Vec::new(),
        },
        Command::Mine(flags) => vec![guard::DerivedOutput {
            flag: "the checkpoint (the output's name plus .checkpoint.jsonl)".to_string(),
            path: crate::stages::mine::checkpoint_path(&flags.output),
        }],
        Command::Verify(flags) if flags.output.is_none() => {
            let args = flags.args();
            if crate::tools::recheck::is_recheck(&args) {
                return Vec::new();
            }
            vec![guard::DerivedOutput {
                flag: "--output (by default INPUT's name with .verify.jsonl, beside it)"
                    .to_string(),
                path: crate::stages::verify::default_report_path(&args.input),
            }]
        }
        _ => Vec::new(),
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
    let result = guard_outputs(&root, &matches, &derived_outputs(&cli.command))
        .and_then(|()| dispatch(&cli.command));
    (cli.json, result)
}

/// What `verify` says on stderr when it re-checks (a release folder,
/// `--puzzle` or `--recheck`): the command is `recheck` now.
pub const RECHECK_ALIAS_NOTE: &str = "puzzleforge: note: `verify RELEASE` (or `--puzzle`, `--recheck`) is an alias of `puzzleforge recheck`";

/// Runs one parsed command; its output paths, those its flags name and
/// those it derives, were guarded by [`guard_outputs`].
fn dispatch(command: &Command) -> Result<Summary> {
    match command {
        Command::Run(flags) => crate::pipeline::run::run_pipeline(&flags.args()),
        Command::Merge(flags) => crate::pipeline::merge::run_merge(&flags.args()),
        Command::Reproduce(flags) => crate::reproduce::run_reproduce(&flags.args()),
        Command::Ingest(command) => ingest::run(command),
        Command::Check(flags) => crate::tools::check::run_check(&flags.args()),
        Command::Selfplay(flags) => crate::stages::selfplay::run_selfplay(&flags.args()),
        Command::Mine(flags) => crate::stages::mine::run_mine(&flags.args()),
        Command::Verify(flags) => {
            let args = flags.args();
            match crate::tools::recheck::is_recheck(&args) {
                true => {
                    // The folder form (or `--puzzle`, `--recheck`) is
                    // `recheck`'s old name, kept as an alias.
                    eprintln!("{RECHECK_ALIAS_NOTE}");
                    crate::tools::recheck::run_recheck(&args)
                }
                false => crate::stages::verify::run_verify(&args),
            }
        }
        Command::Recheck(flags) => crate::tools::recheck::run_recheck(&flags.args()),
        Command::Rate(flags) => crate::stages::rate::run_rate(&flags.args()),
        Command::Tag(flags) => crate::tools::tag::run_tag(&flags.args()),
        Command::Release(flags) => crate::stages::release::run_release(&flags.args()),
        Command::Export(flags) => crate::stages::export::run_export(&flags.args()),
        Command::Eval(flags) => crate::stages::eval::run_eval(&flags.args()),
        Command::Compare(flags) => crate::stages::eval::compare::run_compare(&flags.args()),
        Command::Rollout(flags) => crate::stages::eval::rollout::run_rollout(&flags.args()),
        Command::Index(flags) => crate::tools::novelty::run_index(&flags.args()),
        Command::Audit(flags) => crate::tools::novelty::run_audit(&flags.args()),
        Command::Bench(command) => bench::run(command),
    }
}

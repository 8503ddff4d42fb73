//! Runs the PGN reading benchmark until `puzzleforge bench pgn` is wired:
//! `cargo run --release --example bench_pgn -- --mib 64`.

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: puzzleforge::bench_pgn::BenchPgnArgs,
}

fn main() -> anyhow::Result<()> {
    let summary = puzzleforge::bench_pgn::run_bench_pgn(&Cli::parse().args)?;
    eprintln!("{}", summary.human.trim_end());
    println!("{}", summary.json);
    Ok(())
}

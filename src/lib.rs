//! puzzleforge: renews chess puzzle benchmarks for evaluating and
//! prompt-optimizing large language models.
//!
//! One module per pipeline stage; stages exchange [`record::Puzzle`]s.

pub mod bench_ingest;
pub mod bench_mine;
pub mod bench_pgn;
pub mod bench_pool;
pub mod capture;
pub mod check;
pub mod config;
pub mod criterion;
pub mod derive;
pub mod engine;
pub mod error;
pub mod eval;
pub mod export;
pub mod fileio;
pub mod ingest;
pub mod mine;
pub mod pgn;
pub mod plots;
pub mod pool;
pub mod progress;
pub mod rate;
pub mod record;
pub mod release;
pub mod run;
pub mod selfplay;
pub mod shard;
pub mod split;
pub mod stages;
pub mod summary;
pub mod themes;
pub mod uci;
pub mod verify;
pub mod weaken;
pub mod wincalc;

//! puzzleforge: renews chess puzzle benchmarks for evaluating and
//! prompt-optimizing large language models.
//!
//! One module per pipeline stage; stages exchange [`record::Puzzle`]s.

pub mod bench_mine;
pub mod bench_pool;
pub mod capture;
pub mod check;
pub mod criterion;
pub mod engine;
pub mod error;
pub mod fileio;
pub mod mine;
pub mod pool;
pub mod progress;
pub mod rate;
pub mod record;
pub mod selfplay;
pub mod summary;
pub mod themes;
pub mod uci;
pub mod verify;
pub mod weaken;

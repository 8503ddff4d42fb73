//! The integration tests, one binary (as ripgrep's `tests/tests.rs`): each
//! file of `tests/` is a module of it, sharing `common`'s helpers. One
//! binary links the crate once, where one per file linked it 23 times.

mod common;

mod aim;
mod algorithms;
mod capture;
mod check;
mod engine_pool;
mod eval_baselines;
mod eval_faults;
mod eval_llm;
mod eval_parse;
mod export;
mod flags;
mod generate;
mod guards;
mod help;
mod hints;
mod human_games;
mod ingest_games;
mod ingest_puzzles;
mod layout;
mod maia;
mod mine;
mod novelty;
mod rate;
mod recheck;
mod release_files;
mod reproduce;
mod run_pipeline;
mod selfplay;
mod shard_merge;
mod release_draw;
mod tag;
mod uci_parser;
mod verify;

//! puzzleforge: renews chess puzzle benchmarks for evaluating and
//! prompt-optimizing large language models.
//!
//! The folders follow the data, in layers: each may use the folders of the
//! layers below its own, never those above nor the other folder of its own
//! layer. The table's rows go down the layers, `pipeline` and `tools` on
//! one, `maia` and `engine` on another, so `pipeline` and `tools` never use
//! each other, nor do `maia` and `engine` (`tests/layout.rs` checks this,
//! that a stage uses only the stages before it, and that no files import
//! each other in a circle).
//!
//! | folder | owns |
//! |---|---|
//! | [`reproduce`] | `puzzleforge reproduce`: a release's recorded run repeated into a scratch folder, and the two folders compared byte for byte |
//! | [`pipeline`] | `puzzleforge run` and `merge`: the config, the stage contract and adapters, manifests, the release lock, `run --aim`'s tier added to the config (`aim`) |
//! | [`tools`] | commands beside the pipeline: `check`, `recheck` (a release's verdicts searched again; `verify RELEASE` is its alias) and the `bench` benchmarks |
//! | [`generate`] | generating to order: the self-play chain's steps (`chain`), the batch loop and its store, `run --plan`'s sample (`plan`), a target's projected cost (`cost`), `bench generate` (`bench`) |
//! | [`stages`] | one module per stage, in the order they run |
//! | [`maia`] | human-move networks: the Maia-1 nets read from lc0's files, lc0's input and move encoding, the forward pass |
//! | [`engine`] | UCI engines: the protocol, the process, the pool, the weakened player, the uniqueness criteria |
//! | [`chess`] | the puzzle record and what is read off a board: lines, derived columns, themes, PGN |
//! | [`core`] | files, errors, progress, summaries, shards, seeds: nothing about chess |
//!
//! [`cli`] sits on top: the commands and their flags, and the gate every
//! output path goes through; `main.rs` parses the command line with it and
//! calls one command.

pub mod chess;
pub mod cli;
pub mod core;
pub mod engine;
pub mod generate;
pub mod maia;
pub mod pipeline;
pub mod reproduce;
pub mod stages;
pub mod tools;

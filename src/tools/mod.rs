//! Commands beside the pipeline: `check` (engine analysis of positions),
//! `recheck` (the verdicts a release recorded searched again by today's
//! engines; `verify RELEASE` is its alias) and the `bench` benchmarks,
//! which measure speed side by side with a peer.
//!
//! May use: [`crate::stages`] and everything below; the pipeline does not
//! use it.

pub mod bench;
pub mod check;
pub mod novelty;
pub mod recheck;
pub mod tag;

//! `puzzleforge bench ...`: speed measured side by side with a peer in the
//! same run, reported as ratios. Benchmarks, not tests.
//!
//! `bench generate` measures generation's profiles, so it lives in the
//! generation room beside the batch loop it plays through:
//! [`crate::generate::bench`].

pub mod human_games;
pub mod ingest;
pub mod maia;
pub mod mine;
pub mod pgn;
pub mod pool;
pub mod tag;

/// A figure of a peer's JSON (python-chess, lc0) as a number: 0 when it is
/// missing or not a number, so that a peer's odd output still leaves the
/// bench's own figures (the peer's JSON goes into the report as it came).
fn number_or_zero<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value: serde_json::Value = serde::Deserialize::deserialize(deserializer)?;
    Ok(value.as_f64().unwrap_or(0.0))
}

//! Human-move networks: the nine Maia-1 nets (one per Lichess rating,
//! 1100..1900), which give the probability that a human of that rating
//! plays each legal move of a position.
//!
//! This module owns reading lc0's weight files (`weights`), lc0's input
//! encoding of a position with its history (`encode`), lc0's policy move
//! index (`policy`), the nets' forward pass on the CPU (`forward`) and the
//! batch call over positions and nets (`nets`), and the one fingerprint of
//! the weight files (name and sha256) that runs record (`files`). It matches lc0 0.32 (the
//! engine these nets were made for) within 1e-3 on every move
//! (`tests/maia.rs`, against `tests/data/maia_reference.jsonl` from
//! `scripts/maia_reference.py`). The weights are the committed upstream
//! files in `models/maia/`, read as they are: no Python, no conversion, no
//! network at run time. It uses `core` (and may use `chess`); it never
//! reaches into `engine`, the stages or anything above them, and `stages`
//! may use it.
//!
//! ```no_run
//! use puzzleforge::maia::{History, MaiaNets};
//! # fn main() -> anyhow::Result<()> {
//! let nets = MaiaNets::load(std::path::Path::new("models/maia"))?;
//! // A puzzle: its FEN, the opponent's move, then the line so far.
//! let position = History::from_fen_and_moves(
//!     "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24",
//!     ["f2g3", "e6e7"],
//! )?;
//! let results = nets.evaluate(&[position]);
//! for (net, rating) in nets.ratings().iter().enumerate() {
//!     let best = results[0].at_net(net).iter().cloned().fold(0.0, f32::max);
//!     println!("{rating}: most likely move has p = {best:.3}");
//! }
//! # Ok(()) }
//! ```

mod encode;
mod files;
mod forward;
mod nets;
mod policy;
mod weights;

pub use encode::{History, INPUT_PLANES, InputPlanes, move_policy_index};
pub use files::{MAIA_SHA256, NetFile, check_pinned, net_files};
pub use nets::{DEFAULT_MODELS_DIR, MAIA_RATINGS, MaiaNets, MoveProbabilities, weight_file_name};
pub use policy::POLICY_SIZE;

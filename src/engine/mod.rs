//! UCI engines: the protocol parser ([`uci`]), one supervised process
//! ([`process`]), how a command finds and configures its engine
//! ([`settings`]), N engines as a pool ([`pool`]), Stockfish's strength
//! limit replayed with a seeded RNG ([`weaken`]) and the uniqueness
//! criteria a best move must meet ([`criterion`]).
//!
//! May use: [`crate::chess`], [`crate::core`]. Must not reach into stages or
//! the pipeline.

pub mod criterion;
pub mod pool;
pub mod process;
pub mod settings;
pub mod uci;
pub mod weaken;

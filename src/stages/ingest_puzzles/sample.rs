//! The seeded reservoir sample (`sample`): a uniform choice of at most N
//! kept rows, the same for the same input and seed. Apart because it is
//! the one random choice of the stage.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::core::seed::{self, Domain, Key};

/// Uniform sample of at most `capacity` rows (Algorithm R) from a seeded
/// ChaCha8 stream: the same input and seed always choose the same rows.
pub(super) struct Reservoir {
    pub(super) capacity: u64,
    pub(super) seen: u64,
    rng: ChaCha8Rng,
    rows: Vec<(u64, Vec<u8>)>,
}

impl Reservoir {
    pub(super) fn new(capacity: u64, seed: u64) -> Self {
        Self {
            capacity,
            seen: 0,
            rng: seed::rng(seed, Domain::IngestSample, Key::Run),
            rows: Vec::new(),
        }
    }

    pub(super) fn offer(&mut self, index: u64, bytes: &[u8]) {
        if self.seen < self.capacity {
            self.rows.push((index, bytes.to_vec()));
        } else {
            let slot = self.rng.random_range(0..=self.seen);
            if slot < self.capacity {
                self.rows[slot as usize] = (index, bytes.to_vec());
            }
        }
        self.seen += 1;
    }

    /// The chosen rows in input order.
    pub(super) fn into_sorted(mut self) -> Vec<(u64, Vec<u8>)> {
        self.rows.sort_unstable_by_key(|(index, _)| *index);
        self.rows
    }
}

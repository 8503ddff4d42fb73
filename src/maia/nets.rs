//! The nine nets together: loading them from a folder and the batch call
//! that gives, for each position, every legal move's probability at each
//! net's rating.

use anyhow::Result;
use rayon::prelude::*;
use shakmaty::{CastlingMode, Move, Position};
use std::path::Path;

use super::encode::{History, INPUT_PLANES, RULE50_PLANE, move_policy_index};
use super::forward::{Network, Scratch};
use super::policy::conv_slot;
use super::weights;
use crate::core::error::bad_input;

/// The ratings of the Maia-1 nets, lowest first.
pub const MAIA_RATINGS: [u32; 9] = [1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900];

/// Where the committed weight files are, relative to the repository root.
pub const DEFAULT_MODELS_DIR: &str = "models/maia";

/// Positions run through the nets together (one matrix product per layer).
/// Fixed, so the work split never depends on the thread count; results do
/// not depend on it either way.
const BATCH: usize = 16;

/// The file name of the net for `rating` (`maia-1500.pb.gz`).
pub fn weight_file_name(rating: u32) -> String {
    format!("maia-{rating}.pb.gz")
}

struct RatedNet {
    rating: u32,
    network: Network,
}

/// Loaded human-move nets, one per rating.
pub struct MaiaNets {
    nets: Vec<RatedNet>,
}

/// Every legal move of one position with its probability under each net:
/// the softmax of the net's policy over the legal moves only, as lc0 gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveProbabilities {
    moves: Vec<Move>,
    nets: usize,
    /// `[net][move]`.
    probabilities: Vec<f32>,
    /// The tower's output averaged over the squares, `[net][filter]`.
    pooled: Vec<f32>,
}

impl MoveProbabilities {
    /// The legal moves, in shakmaty's generation order.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Number of nets (ratings) the probabilities are given for.
    pub fn nets(&self) -> usize {
        self.nets
    }

    /// The probability of every move (in [`Self::moves`] order) under net
    /// `net` (an index into [`MaiaNets::ratings`]); they sum to 1.
    pub fn at_net(&self, net: usize) -> &[f32] {
        let n = self.moves.len();
        &self.probabilities[net * n..(net + 1) * n]
    }

    /// The residual tower's output under net `net`, averaged over the
    /// squares: one value per filter.
    pub fn pooled_at(&self, net: usize) -> &[f32] {
        let filters = self.pooled.len() / self.nets.max(1);
        &self.pooled[net * filters..(net + 1) * filters]
    }

    /// The probability of move `move_index` under each net, lowest rating
    /// first.
    pub fn of_move(&self, move_index: usize) -> impl Iterator<Item = f32> + '_ {
        let n = self.moves.len();
        self.probabilities
            .iter()
            .skip(move_index)
            .step_by(n.max(1))
            .copied()
    }

    /// The index of the move written `uci` (castling as `e1g1`), if legal.
    pub fn index_of_uci(&self, uci: &str) -> Option<usize> {
        self.moves
            .iter()
            .position(|m| m.to_uci(CastlingMode::Standard).to_string() == uci)
    }
}

impl MaiaNets {
    /// Loads the nine nets `maia-1100.pb.gz` .. `maia-1900.pb.gz` from `dir`.
    pub fn load(dir: &Path) -> Result<MaiaNets> {
        MaiaNets::load_ratings(dir, &MAIA_RATINGS)
    }

    /// Loads the nets of the given ratings from `dir` (in the order given).
    pub fn load_ratings(dir: &Path, ratings: &[u32]) -> Result<MaiaNets> {
        if ratings.is_empty() {
            return Err(bad_input("no Maia ratings to load"));
        }
        let loaded: Vec<Result<RatedNet>> = ratings
            .par_iter()
            .map(|&rating| {
                let path = dir.join(weight_file_name(rating));
                let weights = weights::load(&path)?;
                Ok(RatedNet {
                    rating,
                    network: Network::new(&weights),
                })
            })
            .collect();
        // The first failure in rating order, whichever thread saw one first.
        let nets = loaded.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(MaiaNets { nets })
    }

    /// The residual tower's filters of each net, in rating order.
    pub fn filters(&self) -> Vec<usize> {
        self.nets.iter().map(|n| n.network.filters()).collect()
    }

    /// The nets' ratings, in the order results are given.
    pub fn ratings(&self) -> Vec<u32> {
        self.nets.iter().map(|n| n.rating).collect()
    }

    /// The probability of every legal move of every position under every
    /// net, in the order of `positions`. Runs on the current rayon pool;
    /// the results are the same bits whatever the thread count and however
    /// the positions are grouped into calls.
    pub fn evaluate(&self, positions: &[History]) -> Vec<MoveProbabilities> {
        positions
            .par_chunks(BATCH)
            .flat_map_iter(|chunk| self.evaluate_batch(chunk))
            .collect()
    }

    /// [`Self::evaluate`] for one position, on the calling thread (no
    /// rayon hand-off: a self-play move is one position, and its CPU time is
    /// the caller's to count). The same bits as `evaluate`.
    pub fn evaluate_one(&self, position: &History) -> MoveProbabilities {
        self.evaluate_batch(std::slice::from_ref(position))
            .pop()
            .unwrap_or_else(|| unreachable!("a batch of one position gives one result"))
    }

    fn evaluate_batch(&self, positions: &[History]) -> Vec<MoveProbabilities> {
        let boards = positions.len();
        let mut input = vec![0.0f32; boards * 64 * INPUT_PLANES];
        let mut legal = Vec::with_capacity(boards);
        for (board, history) in positions.iter().enumerate() {
            let planes = history.planes();
            let rows = &mut input[board * 64 * INPUT_PLANES..(board + 1) * 64 * INPUT_PLANES];
            for (plane, mask) in planes.masks.iter().enumerate() {
                let value = if plane == RULE50_PLANE {
                    planes.rule50
                } else {
                    1.0
                };
                let mut bits = *mask;
                while bits != 0 {
                    let square = bits.trailing_zeros() as usize;
                    rows[square * INPUT_PLANES + plane] = value;
                    bits &= bits - 1;
                }
            }
            let position = history.position();
            let moves: Vec<Move> = position.legal_moves().into_iter().collect();
            // Every legal chess move has an lc0 index (a policy_index test
            // covers all of them); a missing one would be a table bug.
            let slots: Vec<(usize, usize)> = moves
                .iter()
                .map(|m| {
                    let index = move_policy_index(position, m)
                        .unwrap_or_else(|| panic!("no lc0 policy index for {m:?}"));
                    conv_slot(index)
                })
                .collect();
            legal.push((moves, slots));
        }
        let mut results: Vec<MoveProbabilities> = legal
            .iter()
            .map(|(moves, _)| MoveProbabilities {
                moves: moves.clone(),
                nets: self.nets.len(),
                probabilities: Vec::with_capacity(moves.len() * self.nets.len()),
                pooled: Vec::new(),
            })
            .collect();
        let mut scratch = Scratch::default();
        let mut policy = Vec::new();
        let mut logits = Vec::new();
        let mut pooled = Vec::new();
        for net in &self.nets {
            net.network
                .forward(boards, &input, &mut scratch, &mut policy, &mut pooled);
            let filters = net.network.filters();
            for (board, result) in results.iter_mut().enumerate() {
                result
                    .pooled
                    .extend_from_slice(&pooled[board * filters..(board + 1) * filters]);
            }
            let planes = net.network.policy_planes();
            for (board, (_, slots)) in legal.iter().enumerate() {
                logits.clear();
                logits.extend(
                    slots
                        .iter()
                        .map(|&(plane, square)| policy[(board * 64 + square) * planes + plane]),
                );
                softmax_into(&logits, &mut results[board].probabilities);
            }
        }
        results
    }
}

/// Appends the softmax of `logits` to `out` (computed in f64).
fn softmax_into(logits: &[f32], out: &mut Vec<f32>) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f64> = logits.iter().map(|&l| f64::from(l - max).exp()).collect();
    let total: f64 = exps.iter().sum();
    out.extend(exps.iter().map(|e| (e / total) as f32));
}

//! What the human-move nets say about a puzzle's line: for every solver
//! move, how likely players of each rating net are to play it
//! ([`crate::maia`]), how it ranks among their choices, how spread their
//! choices are, and how likely the best wrong move is. The opponent's
//! replies are not read: they would cost as many forward passes again.
//!
//! The nets see each position with its history: the puzzle's FEN, the
//! opponent's first move, then the line up to the move asked about.
//! Positions of many puzzles are evaluated together, each distinct one
//! once (a single-move proxy shares its position with its puzzle).

use anyhow::{Result, anyhow};
use shakmaty::Move;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::chess::line::ucis_text;
use crate::chess::record::Puzzle;
use crate::maia::{History, MaiaNets, MoveProbabilities};

/// One move of the line as the nets see it, with per-net figures in the
/// order of the nets' ratings (lowest first).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MoveChoice {
    /// Probability of an accepted move (the line's move; on a mating last
    /// move, any mate), per net.
    pub probability: Vec<f64>,
    /// Rank of the best accepted move among all moves by probability (1:
    /// the net's most likely move), per net.
    pub rank: Vec<f64>,
    /// Entropy of the net's move distribution (nats), per net.
    pub entropy: Vec<f64>,
    /// Probability of the most likely move that is not accepted, per net.
    pub wrong_probability: Vec<f64>,
    /// Legal moves in the position.
    pub legal_moves: usize,
}

/// The nets' view of a whole puzzle.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct HumanSignals {
    /// The solver's moves, in order.
    pub solver: Vec<MoveChoice>,
    /// The nets' ratings, lowest first.
    pub ratings: Vec<f64>,
    /// Each net's residual tower averaged over the squares at the first
    /// solver move ([`MoveProbabilities::pooled_at`]), per net.
    pub first_pooled: Vec<Vec<f32>>,
}

/// The position before line move `ply` of `puzzle`, as a history.
fn history_before(puzzle: &Puzzle, ply: usize) -> Result<History> {
    History::from_read_line(&puzzle.fen, &puzzle.moves[..ply])
}

/// The key of a position with its history: FEN and the moves before.
fn position_key(puzzle: &Puzzle, ply: usize) -> String {
    format!("{} {}", puzzle.fen, ucis_text(&puzzle.moves[..ply]))
}

/// The nets' signals of every puzzle, in order (the caller counts
/// progress). Lines must replay legally (the rate stage checks them when
/// reading).
pub(crate) fn human_signals(nets: &MaiaNets, puzzles: &[&Puzzle]) -> Result<Vec<HumanSignals>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut histories = Vec::new();
    for puzzle in puzzles {
        for ply in (1..puzzle.moves.len()).step_by(2) {
            if let Entry::Vacant(slot) = index.entry(position_key(puzzle, ply)) {
                slot.insert(histories.len());
                histories.push(history_before(puzzle, ply).map_err(|e| {
                    anyhow!("puzzle {}: the nets cannot read its line: {e:#}", puzzle.id)
                })?);
            }
        }
    }
    let evaluated = nets.evaluate(&histories);
    let ratings: Vec<f64> = nets.ratings().iter().map(|&r| f64::from(r)).collect();
    puzzles
        .iter()
        .map(|puzzle| {
            let line = puzzle
                .line()
                .map_err(|e| anyhow!("puzzle {}: {e}", puzzle.id))?;
            let mut signals = HumanSignals {
                ratings: ratings.clone(),
                ..HumanSignals::default()
            };
            for ply in (1..puzzle.moves.len()).step_by(2) {
                let probabilities = &evaluated[index[&position_key(puzzle, ply)]];
                if ply == 1 {
                    signals.first_pooled = (0..probabilities.nets())
                        .map(|net| probabilities.pooled_at(net).to_vec())
                        .collect();
                }
                signals
                    .solver
                    .push(move_choice(probabilities, |m| line.accepts(ply, m)));
            }
            Ok(signals)
        })
        .collect()
}

/// The figures of one position's accepted moves under every net.
fn move_choice(probabilities: &MoveProbabilities, accepted: impl Fn(Move) -> bool) -> MoveChoice {
    let moves = probabilities.moves();
    let is_accepted: Vec<bool> = moves.iter().map(|m| accepted(*m)).collect();
    let nets = probabilities.nets();
    let mut choice = MoveChoice {
        legal_moves: moves.len(),
        ..MoveChoice::default()
    };
    for net in 0..nets {
        let p = probabilities.at_net(net);
        let accepted_p: f64 = p
            .iter()
            .zip(&is_accepted)
            .filter(|(_, ok)| **ok)
            .map(|(p, _)| f64::from(*p))
            .sum();
        let best_accepted = p
            .iter()
            .zip(&is_accepted)
            .filter(|(_, ok)| **ok)
            .map(|(p, _)| *p)
            .fold(0.0f32, f32::max);
        // Ties count against the solution: a net indifferent between two
        // moves does not point at it.
        let above = p
            .iter()
            .zip(&is_accepted)
            .filter(|(q, ok)| !**ok && **q >= best_accepted)
            .count();
        let wrong_best = p
            .iter()
            .zip(&is_accepted)
            .filter(|(_, ok)| !**ok)
            .map(|(p, _)| f64::from(*p))
            .fold(0.0, f64::max);
        let entropy: f64 = p
            .iter()
            .filter(|q| **q > 0.0)
            .map(|q| -f64::from(*q) * f64::from(*q).ln())
            .sum();
        choice.probability.push(accepted_p);
        choice.rank.push((above + 1) as f64);
        choice.entropy.push(entropy);
        choice.wrong_probability.push(wrong_best);
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_keys_share_a_prefix_between_a_puzzle_and_its_proxy() {
        let puzzle = Puzzle {
            fen: "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24"
                .parse()
                .unwrap(),
            moves: crate::chess::line::read_ucis(["f2g3", "e6e7", "b2b1", "b3c1"]).unwrap(),
            ..Puzzle::default()
        };
        let mut proxy = puzzle.clone();
        proxy.moves.truncate(2);
        assert_eq!(position_key(&puzzle, 1), position_key(&proxy, 1));
        assert_ne!(position_key(&puzzle, 1), position_key(&puzzle, 3));
    }
}

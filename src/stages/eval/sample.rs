//! `eval --limit N`: which N puzzles of a set are asked.
//!
//! The first N rows of a release are its lowest-rated cells (a release is
//! written cell by cell, in rating order), so a limited run would measure
//! only the easiest puzzles. Instead the N are drawn across the set's
//! cells (rating bin x solver moves x mate, as a release stratifies) as
//! evenly as the cells allow: the cells take turns in a seeded order, each
//! giving its next puzzle in a seeded shuffle, until N are taken; a cell
//! that runs out drops out of the turns. On a release, whose cells hold
//! equal quotas, that is a proportional sample; on a file with uneven
//! cells, the small cells are kept rather than drowned. The puzzles are
//! asked in file order.

use rand::seq::SliceRandom;
use std::collections::BTreeMap;

use crate::chess::record::Puzzle;
use crate::core::seed::{self, Domain, Key};
use crate::stages::release::cells::Cell;

/// The cell key of a puzzle: the release's own ([`Cell::key`]), or one
/// naming its length and mate flag when it has no rating.
fn cell_key(puzzle: &Puzzle, bin_width: i32) -> String {
    match Cell::of(puzzle, bin_width) {
        Some(cell) => cell.key(),
        None => format!(
            "rating=unrated|length={}|mate={}",
            puzzle.solver_moves(),
            puzzle.is_mate()
        ),
    }
}

/// At most `limit` of `puzzles`, drawn across their cells with `seed`
/// ([`Domain::EvalSample`]), in their original order. All of them when
/// there are no more than `limit`.
pub(crate) fn stratified(
    puzzles: Vec<Puzzle>,
    limit: usize,
    run_seed: u64,
    bin_width: i32,
) -> Vec<Puzzle> {
    if puzzles.len() <= limit {
        return puzzles;
    }
    let mut cells: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, puzzle) in puzzles.iter().enumerate() {
        cells
            .entry(cell_key(puzzle, bin_width))
            .or_default()
            .push(index);
    }
    let mut turns: Vec<Vec<usize>> = cells
        .into_iter()
        .map(|(key, mut members)| {
            members.shuffle(&mut seed::rng(
                run_seed,
                Domain::EvalSample,
                Key::Name(&key),
            ));
            members
        })
        .collect();
    turns.shuffle(&mut seed::rng(run_seed, Domain::EvalSample, Key::Run));
    let mut chosen = vec![false; puzzles.len()];
    let mut taken = 0;
    let mut round = 0;
    while taken < limit {
        for members in &turns {
            if taken == limit {
                break;
            }
            if let Some(&index) = members.get(round) {
                chosen[index] = true;
                taken += 1;
            }
        }
        round += 1;
    }
    puzzles
        .into_iter()
        .zip(chosen)
        .filter_map(|(puzzle, keep)| keep.then_some(puzzle))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn puzzle(id: usize, rating: i32, mate: bool) -> Puzzle {
        let mut p = Puzzle {
            id: format!("p{id}"),
            rating: Some(rating),
            moves: crate::chess::line::read_ucis(["e2e4", "e7e5"]).unwrap(),
            ..Puzzle::default()
        };
        p.set("Mate", if mate { "True" } else { "False" });
        p
    }

    #[test]
    fn every_cell_gets_its_share_and_the_draw_follows_the_seed() {
        // A release-like file: 4 cells of 10 puzzles, in rating order.
        let mut puzzles = Vec::new();
        for (cell, (rating, mate)) in [(450, false), (450, true), (1450, false), (2450, true)]
            .into_iter()
            .enumerate()
        {
            for i in 0..10 {
                puzzles.push(puzzle(cell * 10 + i, rating, mate));
            }
        }
        let sample = stratified(puzzles.clone(), 8, 7, 100);
        assert_eq!(sample.len(), 8);
        let mut per_cell: BTreeMap<String, usize> = BTreeMap::new();
        for p in &sample {
            *per_cell.entry(cell_key(p, 100)).or_default() += 1;
        }
        assert_eq!(per_cell.values().copied().collect::<Vec<_>>(), [2, 2, 2, 2]);
        // File order kept; the same seed draws the same puzzles, another
        // seed others.
        let ids = |s: &[Puzzle]| s.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
        let mut sorted = ids(&sample);
        sorted.sort_by_key(|id| id[1..].parse::<usize>().unwrap());
        assert_eq!(ids(&sample), sorted);
        assert_eq!(ids(&stratified(puzzles.clone(), 8, 7, 100)), ids(&sample));
        assert_ne!(ids(&stratified(puzzles.clone(), 8, 8, 100)), ids(&sample));
        // Not the first N rows.
        assert_ne!(ids(&sample), ids(&puzzles[..8]));
        // Fewer than the cells: one puzzle from each of N cells.
        let three = stratified(puzzles.clone(), 3, 7, 100);
        let keys: std::collections::BTreeSet<String> =
            three.iter().map(|p| cell_key(p, 100)).collect();
        assert_eq!(keys.len(), 3);
        // A small cell gives what it has; the others fill the rest.
        let mut uneven = puzzles[..10].to_vec();
        uneven.push(puzzle(99, 2450, true));
        let sample = stratified(uneven, 6, 7, 100);
        assert_eq!(sample.len(), 6);
        assert!(sample.iter().any(|p| p.id == "p99"));
        // No limit to speak of: every puzzle, as it was.
        assert_eq!(ids(&stratified(puzzles.clone(), 40, 7, 100)), ids(&puzzles));
    }
}

//! The draw: puzzles chosen per cell, train and test, grouped by source
//! game so that two puzzles of one game never land on both sides (see the
//! release module's comment for the method).

use rand::seq::SliceRandom;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

use crate::core::seed::{self, Domain, Key};
use crate::stages::release::cells::{Cell, Quota};

/// Where a puzzle goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Side {
    Train,
    Test,
}

/// One pool puzzle admitted to the draw, kept small so that the whole
/// Lichess dump fits in memory; the chosen rows are read again in full.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub id: String,
    pub cell: Cell,
    /// Grouping key: the source game, or `puzzle:<id>` when unknown.
    pub group: String,
    /// Index of the pool file.
    pub file: usize,
    /// Ordinal of the row in that file (0-based, every row counted).
    pub row: u64,
}

/// What one cell got.
#[derive(Clone, Debug)]
pub struct CellOutcome {
    pub cell: Cell,
    pub wanted: Quota,
    pub available: usize,
    pub train: usize,
    pub test: usize,
}

impl CellOutcome {
    pub fn filled(&self) -> bool {
        self.train == self.wanted.train && self.test == self.wanted.test
    }
}

/// The result of the draw: train and test in release order, and per cell.
#[derive(Clone, Debug)]
pub struct Draw {
    pub train: Vec<Candidate>,
    pub test: Vec<Candidate>,
    pub cells: Vec<CellOutcome>,
}

/// Draws train and test per cell, grouped by source game (see the module
/// comment for the method). `candidates` may be in any order.
pub(crate) fn draw(candidates: Vec<Candidate>, quotas: &BTreeMap<Cell, Quota>, seed: u64) -> Draw {
    let by_cell = candidates_by_cell(candidates, quotas);
    let mut sides = Sides::default();
    let mut picked: BTreeMap<Cell, (Vec<Candidate>, Vec<Candidate>)> = BTreeMap::new();
    let mut outcomes = Vec::new();
    for (cell, quota) in scarcest_first(quotas, &by_cell) {
        let mut list: Vec<&Candidate> = by_cell
            .get(cell)
            .map(|l| l.iter().collect())
            .unwrap_or_default();
        let mut rng = seed::rng(seed, Domain::ReleaseCell, Key::Name(&cell.key()));
        list.shuffle(&mut rng);
        let (train, test) = sides.fill_cell(&list, quota);
        outcomes.push(CellOutcome {
            cell: *cell,
            wanted: *quota,
            available: list.len(),
            train: train.len(),
            test: test.len(),
        });
        picked.insert(*cell, (train, test));
    }
    outcomes.sort_by_key(|a| a.cell);
    let mut draw = Draw {
        train: Vec::new(),
        test: Vec::new(),
        cells: outcomes,
    };
    for (_, (mut train, mut test)) in picked {
        train.sort_by(|a, b| a.id.cmp(&b.id));
        test.sort_by(|a, b| a.id.cmp(&b.id));
        draw.train.extend(train);
        draw.test.extend(test);
    }
    draw
}

/// The candidates of each cell that has a quota, sorted by puzzle id (so
/// the seeded shuffle, not the pool's order, decides).
fn candidates_by_cell(
    candidates: Vec<Candidate>,
    quotas: &BTreeMap<Cell, Quota>,
) -> BTreeMap<Cell, Vec<Candidate>> {
    let mut by_cell: BTreeMap<Cell, Vec<Candidate>> = BTreeMap::new();
    for candidate in candidates {
        if quotas.contains_key(&candidate.cell) {
            by_cell.entry(candidate.cell).or_default().push(candidate);
        }
    }
    for list in by_cell.values_mut() {
        list.sort_by(|a, b| a.id.cmp(&b.id));
    }
    by_cell
}

/// The cells in the order they choose games: scarcest first (available
/// puzzles per wanted puzzle, compared without division), then by cell.
fn scarcest_first<'a>(
    quotas: &'a BTreeMap<Cell, Quota>,
    by_cell: &BTreeMap<Cell, Vec<Candidate>>,
) -> Vec<(&'a Cell, &'a Quota)> {
    let available = |cell: &Cell| by_cell.get(cell).map_or(0, Vec::len);
    let mut order: Vec<(&Cell, &Quota)> = quotas.iter().collect();
    order.sort_by(|(a, qa), (b, qb)| {
        let wa = qa.train + qa.test;
        let wb = qb.train + qb.test;
        (available(a) * wb)
            .cmp(&(available(b) * wa))
            .then_with(|| a.cmp(b))
    });
    order
}

/// Which side each source game went to, and how many puzzles each side has
/// so far across cells: a cell that cannot fill both sides breaks its tie
/// towards the smaller side, so partly filled cells do not all tilt the
/// release towards train.
#[derive(Default)]
struct Sides {
    game_side: HashMap<String, Side>,
    train_total: usize,
    test_total: usize,
}

impl Sides {
    /// Fills one cell from its shuffled candidates: first the puzzles of
    /// games whose side is already fixed, then free games, each given to
    /// the side that needs more.
    fn fill_cell(
        &mut self,
        list: &[&Candidate],
        quota: &Quota,
    ) -> (Vec<Candidate>, Vec<Candidate>) {
        let mut train = Vec::new();
        let mut test = Vec::new();
        let mut taken = vec![false; list.len()];
        for (i, c) in list.iter().enumerate() {
            match self.game_side.get(&c.group) {
                Some(Side::Train) if train.len() < quota.train => {
                    self.place(Side::Train, c, &mut train, &mut test);
                    taken[i] = true;
                }
                Some(Side::Test) if test.len() < quota.test => {
                    self.place(Side::Test, c, &mut train, &mut test);
                    taken[i] = true;
                }
                _ => {}
            }
        }
        for (i, c) in list.iter().enumerate() {
            let need_train = quota.train - train.len();
            let need_test = quota.test - test.len();
            if need_train == 0 && need_test == 0 {
                break;
            }
            if taken[i] {
                continue;
            }
            let side = self.side_of(&c.group, need_train, need_test);
            let room = match side {
                Side::Train => need_train > 0,
                Side::Test => need_test > 0,
            };
            if room {
                self.place(side, c, &mut train, &mut test);
            }
        }
        (train, test)
    }

    /// The side of a game: the one it already has, else the side of the
    /// cell that needs more (ties to the smaller side overall).
    fn side_of(&mut self, group: &str, need_train: usize, need_test: usize) -> Side {
        if let Some(side) = self.game_side.get(group) {
            return *side;
        }
        let side = if need_train > need_test
            || (need_train == need_test && self.train_total <= self.test_total)
        {
            Side::Train
        } else {
            Side::Test
        };
        self.game_side.insert(group.to_string(), side);
        side
    }

    fn place(
        &mut self,
        side: Side,
        candidate: &Candidate,
        train: &mut Vec<Candidate>,
        test: &mut Vec<Candidate>,
    ) {
        match side {
            Side::Train => {
                train.push(candidate.clone());
                self.train_total += 1;
            }
            Side::Test => {
                test.push(candidate.clone());
                self.test_total += 1;
            }
        }
    }
}

//! An index of ideas: every solver position of many puzzles (or every
//! position of many games), looked up by the novelty rule of [`super`]
//! fast enough to run on every generated candidate. Built in memory from
//! puzzle or game files, or read from a compact file that
//! `puzzleforge index` writes ([`NoveltyIndex::write`]).
//!
//! **Lookup.** Two ideas are near only when they share a solver move, so
//! steps are filed in buckets by (side to move, solver move). An
//! [`Lookup::Exact`] index files each step once for every solver move of
//! its idea, and a query scans, per solver position, the buckets of all
//! its idea's moves: the rule exactly. A [`Lookup::SameMove`] index files
//! each step under the move played there, and a query scans one bucket per
//! solver position: the near copies whose near positions play the same
//! move, 99% of the rule's on Lichess's puzzles (docs/novelty.md), for a
//! quarter of the work. Small indexes (a run's excluded files, the puzzles
//! a run kept) are exact; a public index read from its file is same-move
//! unless asked otherwise. A bucket holds each step's occupied
//! squares beside its number, so most steps are turned away by one XOR and
//! a popcount (squares occupied in one board and empty in the other all
//! differ) before their placements are compared.
//!
//! **File.** zstd-compressed: a magic line, then per idea its name, its
//! solver moves and its steps (placement, side, move), little-endian. The
//! buckets are rebuilt when the file is read (a second or two for
//! millions of puzzles), so the file holds each step once.

use anyhow::{Context, Result};
use foldhash::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::Path;

use super::{Idea, Nearness, Placement, SolverStep, is_near, shared_sorted};
use crate::core::error::bad_input;

/// The first bytes of an index file (after decompression), with its
/// format's version.
pub const INDEX_MAGIC: &[u8; 16] = b"puzzleforge-nx1\n";

/// An index file as a record names it: its path, its sha256 and how many
/// ideas it holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexFile {
    pub file: String,
    pub sha256: String,
    pub ideas: usize,
}

impl IndexFile {
    /// The file's name without its folder, as a card or a line names it.
    pub fn file_name(&self) -> String {
        Path::new(&self.file)
            .file_name()
            .map_or_else(|| self.file.clone(), |n| n.to_string_lossy().into_owned())
    }
}

/// What a lookup found: the nearest indexed idea and how near it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The indexed idea's number (in the order they were added).
    pub idea: u32,
    pub nearness: Nearness,
}

#[derive(Default)]
struct Bucket {
    steps: Vec<u32>,
    occupied: Vec<u64>,
    /// Once sorted by pieces on the board ([`NoveltyIndex::seal`]): where
    /// the steps with `n` pieces begin (`n` = 0..=32, then the end). Two
    /// boards differ on at least the difference of their piece counts, so
    /// a lookup scans only counts within the rule's widest distance.
    by_pieces: Option<Box<[u32; 34]>>,
}

impl Bucket {
    /// The range of entries whose piece count is within `widest` of
    /// `pieces` (every entry while unsorted).
    fn range(&self, pieces: u32, widest: u32) -> std::ops::Range<usize> {
        match &self.by_pieces {
            Some(starts) => {
                let low = pieces.saturating_sub(widest) as usize;
                let high = (pieces + widest).min(32) as usize + 1;
                starts[low] as usize..starts[high] as usize
            }
            None => 0..self.steps.len(),
        }
    }

    fn sort_by_pieces(&mut self) {
        let mut order: Vec<usize> = (0..self.steps.len()).collect();
        order.sort_by_key(|&k| (self.occupied[k].count_ones(), k));
        self.steps = order.iter().map(|&k| self.steps[k]).collect();
        self.occupied = order.iter().map(|&k| self.occupied[k]).collect();
        let mut starts = [0u32; 34];
        for n in 0..34u32 {
            starts[n as usize] = self.occupied.partition_point(|o| o.count_ones() < n) as u32;
        }
        self.by_pieces = Some(Box::new(starts));
    }
}

/// How an index files its steps, and so which near copies it finds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lookup {
    /// Every near copy the rule defines.
    #[default]
    Exact,
    /// The near copies whose near positions play the same solver move.
    SameMove,
}

/// Many ideas, with buckets for lookups.
#[derive(Default)]
pub struct NoveltyIndex {
    lookup: Lookup,
    /// Names, one after another (`name_ends[i]` ends the `i`th).
    names: String,
    name_ends: Vec<u32>,
    /// Solver moves, sorted per idea (`move_ends[i]` ends the `i`th).
    moves: Vec<u16>,
    move_ends: Vec<u32>,
    steps: Vec<SolverStep>,
    /// The idea each step belongs to.
    step_idea: Vec<u32>,
    buckets: HashMap<u32, Bucket>,
}

fn bucket_key(white_to_move: bool, mv: u16) -> u32 {
    (u32::from(mv) << 1) | u32::from(white_to_move)
}

impl NoveltyIndex {
    /// An empty exact index.
    pub fn new() -> NoveltyIndex {
        NoveltyIndex::default()
    }

    /// An empty index that files its steps for `lookup`.
    pub fn with_lookup(lookup: Lookup) -> NoveltyIndex {
        NoveltyIndex {
            lookup,
            ..NoveltyIndex::default()
        }
    }

    pub fn lookup(&self) -> Lookup {
        self.lookup
    }

    /// Ideas held.
    pub fn len(&self) -> usize {
        self.name_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.name_ends.is_empty()
    }

    /// Solver positions held.
    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    /// The name an idea was added under (a puzzle's id, a game's number).
    pub fn name(&self, idea: u32) -> &str {
        let i = idea as usize;
        let start = if i == 0 {
            0
        } else {
            self.name_ends[i - 1] as usize
        };
        &self.names[start..self.name_ends[i] as usize]
    }

    fn moves_of(&self, idea: u32) -> &[u16] {
        let i = idea as usize;
        let start = if i == 0 {
            0
        } else {
            self.move_ends[i - 1] as usize
        };
        &self.moves[start..self.move_ends[i] as usize]
    }

    /// Adds an idea under `name`; returns its number.
    pub fn add(&mut self, name: &str, idea: &Idea) -> u32 {
        let number = self.name_ends.len() as u32;
        self.names.push_str(name);
        self.name_ends.push(self.names.len() as u32);
        self.moves.extend_from_slice(&idea.moves);
        self.move_ends.push(self.moves.len() as u32);
        for step in &idea.steps {
            let step_number = self.steps.len() as u32;
            let occupied = step.placement.occupied();
            self.steps.push(*step);
            self.step_idea.push(number);
            let own = [step.mv];
            let moves: &[u16] = match self.lookup {
                Lookup::Exact => &idea.moves,
                Lookup::SameMove => &own,
            };
            for &mv in moves {
                let bucket = self
                    .buckets
                    .entry(bucket_key(step.white_to_move, mv))
                    .or_default();
                bucket.steps.push(step_number);
                bucket.occupied.push(occupied);
                bucket.by_pieces = None;
            }
        }
        number
    }

    /// Sorts every bucket by pieces on the board, so that lookups skip the
    /// boards too far apart in material to be near (an index read whole:
    /// a later [`NoveltyIndex::add`] unsorts the bucket it adds to).
    pub fn seal(&mut self) {
        for bucket in self.buckets.values_mut() {
            bucket.sort_by_pieces();
        }
    }

    /// The nearest indexed idea of which `idea` is a near copy (the rule
    /// of [`super`]), if any; ties go to the idea added first.
    pub fn nearest(&self, idea: &Idea) -> Option<Match> {
        self.nearest_where(idea, |_| true)
    }

    /// [`NoveltyIndex::nearest`] among the indexed ideas `keep` accepts.
    pub fn nearest_where(&self, idea: &Idea, keep: impl Fn(u32) -> bool) -> Option<Match> {
        let mut best: Option<Match> = None;
        let widest = super::NEAR_SQUARES_SHARED_LINE;
        for (i, step) in idea.steps.iter().enumerate() {
            let occupied = step.placement.occupied();
            let pieces = occupied.count_ones();
            let own = [step.mv];
            let moves: &[u16] = match self.lookup {
                Lookup::Exact => &idea.moves,
                Lookup::SameMove => &own,
            };
            for &mv in moves {
                let Some(bucket) = self.buckets.get(&bucket_key(step.white_to_move, mv)) else {
                    continue;
                };
                let range = bucket.range(pieces, widest);
                let start = range.start;
                for (k, other_occupied) in bucket.occupied[range].iter().enumerate() {
                    if (occupied ^ other_occupied).count_ones() > widest {
                        continue;
                    }
                    let k = start + k;
                    let s = bucket.steps[k] as usize;
                    let squares = step.placement.changed_squares(&self.steps[s].placement);
                    if squares > widest {
                        continue;
                    }
                    let other = self.step_idea[s];
                    if best
                        .as_ref()
                        .is_some_and(|b| (b.nearness.squares, b.idea) <= (squares, other))
                        || !keep(other)
                    {
                        continue;
                    }
                    let shared = shared_sorted(&idea.moves, self.moves_of(other));
                    if is_near(squares, shared) {
                        best = Some(Match {
                            idea: other,
                            nearness: Nearness {
                                squares,
                                shared_moves: shared,
                                steps: (i, self.first_step_of(other, s)),
                            },
                        });
                    }
                }
            }
        }
        best
    }

    /// Step `s`'s place among its idea's steps.
    fn first_step_of(&self, idea: u32, s: usize) -> usize {
        let mut k = s;
        while k > 0 && self.step_idea[k - 1] == idea {
            k -= 1;
        }
        s - k
    }

    /// Writes the index file (zstd) at `path`, atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        let file = crate::core::fileio::AtomicFile::create(path)?;
        let mut out = zstd::Encoder::new(std::io::BufWriter::new(file), 3)
            .with_context(|| format!("writing {}", path.display()))?;
        out.write_all(INDEX_MAGIC)?;
        out.write_all(&(self.len() as u64).to_le_bytes())?;
        let mut step = 0usize;
        for idea in 0..self.len() as u32 {
            let name = self.name(idea).as_bytes();
            out.write_all(&(name.len() as u16).to_le_bytes())?;
            out.write_all(name)?;
            let moves = self.moves_of(idea);
            out.write_all(&[moves.len() as u8])?;
            for mv in moves {
                out.write_all(&mv.to_le_bytes())?;
            }
            let first = step;
            while step < self.steps.len() && self.step_idea[step] == idea {
                step += 1;
            }
            out.write_all(&((step - first) as u16).to_le_bytes())?;
            for s in &self.steps[first..step] {
                for word in s.placement.0 {
                    out.write_all(&word.to_le_bytes())?;
                }
                out.write_all(&[u8::from(s.white_to_move)])?;
                out.write_all(&s.mv.to_le_bytes())?;
            }
        }
        let writer = out
            .finish()
            .with_context(|| format!("writing {}", path.display()))?;
        let file = writer
            .into_inner()
            .map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), e.error()))?;
        file.commit()
    }

    /// Reads an index file that [`NoveltyIndex::write`] wrote; a file of
    /// another kind, or a damaged one, is an error naming it.
    pub fn read(path: &Path, lookup: Lookup) -> Result<NoveltyIndex> {
        let damaged = |what: &str| {
            bad_input(format!(
                "{}: not a readable puzzleforge index ({what}); `puzzleforge index` writes one",
                path.display()
            ))
        };
        let file =
            std::fs::File::open(path).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
        let decoder = zstd::Decoder::new(file).map_err(|e| damaged(&e.to_string()))?;
        let mut input = std::io::BufReader::with_capacity(1 << 20, decoder);
        let mut magic = [0u8; 16];
        input
            .read_exact(&mut magic)
            .map_err(|e| damaged(&e.to_string()))?;
        if &magic != INDEX_MAGIC {
            return Err(damaged("its first bytes are not an index's"));
        }
        let read_err = |e: std::io::Error| damaged(&e.to_string());
        let mut u64b = [0u8; 8];
        input.read_exact(&mut u64b).map_err(read_err)?;
        let count = u64::from_le_bytes(u64b);
        let mut index = NoveltyIndex::with_lookup(lookup);
        let mut name = Vec::new();
        let mut idea = Idea::default();
        for _ in 0..count {
            let mut u16b = [0u8; 2];
            input.read_exact(&mut u16b).map_err(read_err)?;
            name.resize(u16::from_le_bytes(u16b) as usize, 0);
            input.read_exact(&mut name).map_err(read_err)?;
            let mut one = [0u8; 1];
            input.read_exact(&mut one).map_err(read_err)?;
            idea.moves.clear();
            for _ in 0..one[0] {
                input.read_exact(&mut u16b).map_err(read_err)?;
                idea.moves.push(u16::from_le_bytes(u16b));
            }
            input.read_exact(&mut u16b).map_err(read_err)?;
            idea.steps.clear();
            for _ in 0..u16::from_le_bytes(u16b) {
                let mut words = [0u64; 4];
                for word in &mut words {
                    input.read_exact(&mut u64b).map_err(read_err)?;
                    *word = u64::from_le_bytes(u64b);
                }
                input.read_exact(&mut one).map_err(read_err)?;
                input.read_exact(&mut u16b).map_err(read_err)?;
                idea.steps.push(SolverStep {
                    placement: Placement(words),
                    white_to_move: one[0] == 1,
                    mv: u16::from_le_bytes(u16b),
                });
            }
            let name = std::str::from_utf8(&name).map_err(|_| damaged("a name is not UTF-8"))?;
            index.add(name, &idea);
        }
        if input.fill_buf().map_err(read_err)?.is_empty() {
            index.seal();
            Ok(index)
        } else {
            Err(damaged("bytes after its last idea"))
        }
    }

    /// True when `path` is an index file (its first bytes, decompressed,
    /// are the magic line); false for anything else, a missing file
    /// included (its reader says why).
    pub fn is_index_file(path: &Path) -> bool {
        let Ok(file) = std::fs::File::open(path) else {
            return false;
        };
        let Ok(mut decoder) = zstd::Decoder::new(file) else {
            return false;
        };
        let mut magic = [0u8; 16];
        decoder.read_exact(&mut magic).is_ok() && &magic == INDEX_MAGIC
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::line::{read_fen, read_ucis};
    use crate::chess::record::Puzzle;

    fn idea(fen: &str, moves: &str) -> Idea {
        let puzzle = Puzzle {
            id: "t".into(),
            fen: read_fen(fen).expect("fen"),
            moves: read_ucis(moves.split_whitespace().collect::<Vec<_>>()).expect("moves"),
            ..Puzzle::default()
        };
        Idea::of_puzzle(&puzzle).expect("idea")
    }

    #[test]
    fn the_index_finds_what_the_pairwise_rule_finds_and_survives_its_file() {
        let source = idea(
            "r4r2/p1R3R1/1p2p1pk/2p5/7P/8/P4PP1/6K1 b - - 0 26",
            "h6h5 f2f3 h5h4 g7g6 h4h5 c7g7",
        );
        let unrelated = idea(
            "8/8/6p1/4k1p1/2r3Pp/4RK1P/8/8 b - - 3 54",
            "e5d4 e3e4 d4d5 e4c4 d5c4 f3e4 c4c3 e4e5",
        );
        let generated = idea(
            "2r2r2/R5R1/1p2p1p1/2p4k/7P/8/P4PP1/6K1 b - - 0 28",
            "c8c6 f2f3 h5h4 g7g6 h4h5 a7g7",
        );
        let mut index = NoveltyIndex::new();
        index.add("endgame", &unrelated);
        index.add("source", &source);
        let found = index.nearest(&generated).expect("a near copy");
        assert_eq!(index.name(found.idea), "source");
        let pairwise = generated.near_copy_of(&source).expect("pairwise");
        assert_eq!(
            (found.nearness.squares, found.nearness.shared_moves),
            (pairwise.squares, pairwise.shared_moves)
        );

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ideas.idx");
        index.write(&path).expect("write");
        assert!(NoveltyIndex::is_index_file(&path));
        let read = NoveltyIndex::read(&path, Lookup::Exact).expect("read");
        assert_eq!(read.len(), 2);
        assert_eq!(read.steps(), index.steps());
        assert_eq!(read.nearest(&generated), Some(found));
        assert!(read.nearest_where(&generated, |i| i != 1).is_none());
    }

    #[test]
    fn a_damaged_index_file_is_refused_with_its_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.idx");
        std::fs::write(&path, b"not an index").expect("write");
        let error = NoveltyIndex::read(&path, Lookup::SameMove)
            .err()
            .expect("refused")
            .to_string();
        assert!(error.contains("bad.idx"), "{error}");
        assert!(!NoveltyIndex::is_index_file(&path));
    }
}

//! The novelty rule over files: `puzzleforge index` and `puzzleforge
//! audit` on the two near copies that generation once kept (each with the
//! public puzzle its game started from), a puzzle one move away from a
//! public one with another solution, and the committed Lichess rows.

use std::path::Path;

use crate::common::{data, puzzleforge_here, summary};

const HEADER: &str =
    "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n";

/// The two public puzzles the near copies' games started from.
const SOURCES: &[(&str, &str, &str)] = &[
    (
        "mating-net",
        "r4r2/p1R3R1/1p2p1pk/2p5/7P/8/P4PP1/6K1 b - - 0 26",
        "h6h5 f2f3 h5h4 g7g6 h4h5 c7g7",
    ),
    (
        "pawn-ending",
        "8/8/6p1/4k1p1/2r3Pp/4RK1P/8/8 b - - 3 54",
        "e5d4 e3e4 d4d5 e4c4 d5c4 f3e4 c4c3 e4e5",
    ),
];

/// Two puzzles generation kept before the rule (the same mating net two
/// plies later, the same pawn ending a move later), and one that is not a
/// copy: the mating net's position with another move of Black's, after
/// which White wins with another move (Rxf7, found by Stockfish 15.1).
const CANDIDATES: &[(&str, &str, &str)] = &[
    (
        "pf-mating-net",
        "2r2r2/R5R1/1p2p1p1/2p4k/7P/8/P4PP1/6K1 b - - 0 28",
        "c8c6 f2f3 h5h4 g7g6 h4h5 a7g7",
    ),
    (
        "pf-pawn-ending",
        "8/8/6p1/6p1/2rkR1Pp/5K1P/8/8 b - - 5 55",
        "d4c5 e4c4 c5c4 f3e4 c4c3 e4e5 c3d2 e5f6 d2e3 f6g5",
    ),
    (
        "pf-other-solution",
        "r4r2/p1R3R1/1p2p1pk/2p5/7P/8/P4PP1/6K1 b - - 0 26",
        "f8f7 c7f7",
    ),
];

fn write_puzzles(path: &Path, rows: &[(&str, &str, &str)]) {
    let mut text = HEADER.to_string();
    for (id, fen, moves) in rows {
        text.push_str(&format!("{id},{fen},{moves},,,,,,,\n"));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_near_copies_generation_once_kept_are_found_and_another_solution_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let sources = dir.path().join("sources.csv");
    let candidates = dir.path().join("candidates.csv");
    write_puzzles(&sources, SOURCES);
    write_puzzles(&candidates, CANDIDATES);
    let index = dir.path().join("sources.idx");
    let built = summary(&puzzleforge_here(&[
        "index",
        sources.to_str().unwrap(),
        "-o",
        index.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(built["ideas"], 2, "{built:#}");
    let on_disk = puzzleforge::core::fileio::sha256_file(&index).unwrap();
    assert_eq!(built["sha256"], on_disk.as_str(), "{built:#}");

    // Against the index file and against the puzzle file itself, indexed
    // on the fly: the same verdicts.
    for against in [&index, &sources] {
        let report = summary(&puzzleforge_here(&[
            "audit",
            candidates.to_str().unwrap(),
            "--against",
            against.to_str().unwrap(),
            "--json",
        ]));
        assert_eq!(report["puzzles"], 3, "{report:#}");
        assert_eq!(report["public"]["near"], 2, "{report:#}");
        // The pawn ending reaches a solver position of its source's line
        // exactly (after c5c4 f3e4); the mating net is four squares off.
        assert_eq!(report["public"]["exact"], 1, "{report:#}");
        let found: Vec<(&str, &str)> = report["examples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["id"].as_str().unwrap(), e["of"].as_str().unwrap()))
            .collect();
        assert_eq!(
            found,
            [
                ("pf-mating-net", "mating-net"),
                ("pf-pawn-ending", "pawn-ending")
            ],
            "{report:#}"
        );
        // The candidate with another solution is one move from the mating
        // net's puzzle, and not a near pair of anything in the set.
        assert_eq!(report["near_pairs"], 0, "{report:#}");
    }
}

#[test]
fn every_committed_lichess_row_is_an_exact_copy_of_itself_under_another_id() {
    let dir = tempfile::tempdir().unwrap();
    let rows = data("lichess_db_puzzle_subset_1499.csv");
    let index = dir.path().join("subset.idx");
    let built = summary(&puzzleforge_here(&[
        "index",
        rows.to_str().unwrap(),
        "-o",
        index.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(built["ideas"], 1499, "{built:#}");
    // The same rows under new ids: each is found, exactly.
    let text = std::fs::read_to_string(&rows).unwrap();
    let mut renamed = String::new();
    for (k, line) in text.lines().enumerate() {
        if k == 0 {
            renamed.push_str(line);
        } else {
            renamed.push_str(&format!("copy-{line}"));
        }
        renamed.push('\n');
    }
    let copies = dir.path().join("copies.csv");
    std::fs::write(&copies, renamed).unwrap();
    let report_path = dir.path().join("audit.json");
    let report = summary(&puzzleforge_here(&[
        "audit",
        copies.to_str().unwrap(),
        "--against",
        index.to_str().unwrap(),
        "-o",
        report_path.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(report["puzzles"], 1499, "{report:#}");
    assert_eq!(report["public"]["exact"], 1499, "{report:#}");
    assert_eq!(report["public"]["near"], 1499, "{report:#}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(written["public"], report["public"]);
    // The same rows under their own ids are not copies of themselves.
    let itself = summary(&puzzleforge_here(&[
        "audit",
        rows.to_str().unwrap(),
        "--against",
        index.to_str().unwrap(),
        "--json",
    ]));
    assert!(
        itself["public"]["exact"].as_u64().unwrap() < 10,
        "only positions two Lichess puzzles share: {itself:#}"
    );
}

#[test]
fn a_file_that_is_no_index_is_refused_by_name_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.idx");
    std::fs::write(&bogus, b"\x28\xb5\x2f\xfd garbage").unwrap();
    let candidates = dir.path().join("candidates.csv");
    write_puzzles(&candidates, CANDIDATES);
    let output = puzzleforge_here(&[
        "audit",
        candidates.to_str().unwrap(),
        "--against",
        bogus.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bogus.idx"), "{stderr}");
}

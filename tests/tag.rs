//! `puzzleforge tag`: Lichess's themes from FEN and moves, on real Lichess
//! rows (the committed sample of the dump), with bad rows named in a
//! rejects file and the good rows around them kept.

use serde_json::Value;

use crate::common::{data, puzzleforge_here, summary};

/// On the committed 1,499 rows of the Lichess dump, our board themes are
/// Lichess's own: micro-F1 and whole-set agreement over every tagged row,
/// and precision and recall of every theme with 100 rows or more.
#[test]
fn board_themes_agree_with_lichess_on_the_committed_dump_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tagged.csv");
    let input = data("lichess_db_puzzle_subset_1499.csv");
    let run = summary(&puzzleforge_here(&[
        "tag",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--agreement",
        "--json",
    ]));
    assert_eq!(run["rows"], 1499, "{run:#}");
    assert_eq!(run["tagged"], 1499, "{run:#}");
    assert_eq!(run["rejected"], 0, "{run:#}");
    let agreement = &run["agreement"];
    assert!(agreement["rows"].as_u64().unwrap() > 1400, "{agreement:#}");
    assert!(
        agreement["micro_f1"].as_f64().unwrap() >= 0.998,
        "{agreement:#}"
    );
    assert!(
        agreement["exact_rows"].as_f64().unwrap() >= 0.99,
        "{agreement:#}"
    );
    let themes = agreement["themes"].as_object().unwrap();
    assert!(themes.len() >= 50, "{}", themes.len());
    for (theme, counts) in themes {
        if counts["input"].as_u64().unwrap() >= 100 {
            for measure in ["precision", "recall"] {
                let value = counts[measure].as_f64().unwrap();
                assert!(value >= 0.99, "{theme} {measure} {value}: {counts:#}");
            }
        }
    }
    // The themes the board does not decide stay as Lichess gave them.
    let input_rows: Vec<csv::StringRecord> = csv::Reader::from_path(&input)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect();
    let output_rows: Vec<csv::StringRecord> = csv::Reader::from_path(&out)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect();
    assert_eq!(input_rows.len(), output_rows.len());
    for (before, after) in input_rows.iter().zip(&output_rows) {
        assert_eq!(&before[0], &after[0]);
        for kept in ["crushing", "advantage", "equality", "master", "zugzwang"] {
            let had = before[7].split(' ').any(|t| t == kept);
            let has = after[7].split(' ').any(|t| t == kept);
            assert_eq!(had, has, "{kept} on {}", &before[0]);
        }
    }
}

/// A row that cannot be read or replayed, or repeats an earlier row's
/// PuzzleId, goes to the rejects file with its line and reason; the rows
/// around it are tagged and written.
#[test]
fn bad_rows_are_named_and_the_good_rows_around_them_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mixed.csv");
    std::fs::write(
        &input,
        "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n\
         good1,8/1R2B3/5p2/1k2bP1p/p6r/5K2/8/8 b - - 7 45,b5c4 b7b4 c4d5 b4h4,1500,80,90,100,crushing,,\n\
         illegal,8/1R2B3/5p2/1k2bP1p/p6r/5K2/8/8 b - - 7 45,b5c4 b7b4 c4d5 b4h5,1500,80,90,100,crushing,,\n\
         badfen,8/1R2B3/5p2/1k2bP1p/p6r/5K2/8 b - - 7 45,b5c4 b7b4,1500,80,90,100,crushing,,\n\
         good2,3rk2r/p1p2pp1/1p6/2pQ1b2/2Pn1P2/8/PP1P1KBq/R1B1R3 b - - 3 25,e8f8 d5d8,900,80,90,100,,,\n\
         good1,3rk2r/p1p2pp1/1p6/2pQ1b2/2Pn1P2/8/PP1P1KBq/R1B1R3 b - - 3 25,e8f8 d5d8,900,80,90,100,,,\n",
    )
    .unwrap();
    let out = dir.path().join("tagged.jsonl");
    let run = summary(&puzzleforge_here(&[
        "tag",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(run["rows"], 5, "{run:#}");
    assert_eq!(run["tagged"], 2, "{run:#}");
    assert_eq!(run["rejected"], 3, "{run:#}");
    let rejects = std::fs::read_to_string(dir.path().join("tagged.jsonl.rejects.csv")).unwrap();
    let lines: Vec<&str> = rejects.lines().collect();
    assert_eq!(lines[0], "line,PuzzleId,reason,detail");
    assert!(lines[1].starts_with("3,illegal,"), "{rejects}");
    assert!(lines[1].contains("b4h5"), "{rejects}");
    assert!(lines[2].starts_with("4,"), "{rejects}");
    // A repeated PuzzleId: the first is kept, the repeat named with it.
    assert!(
        lines[3].starts_with("6,good1,duplicate_id,") && lines[3].contains("appeared on line 2"),
        "{rejects}"
    );
    let written: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(written.len(), 2);
    assert_eq!(written[0]["PuzzleId"], "good1");
    let themes = |row: &Value| row["Themes"].as_str().unwrap().to_string();
    assert_eq!(themes(&written[0]), "crushing endgame short skewer");
    assert_eq!(
        themes(&written[1]),
        "hangingPiece mate mateIn1 middlegame oneMove"
    );
}

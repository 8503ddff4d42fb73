//! The one puzzle record every stage reads and writes.
//!
//! The convention is Lichess's: `FEN` is the position *before* the
//! opponent's move, `Moves` is UCI with the opponent's move first, then the
//! solver and the opponent alternating. The ten Lichess columns come first,
//! in Lichess's order; every other column (`DailyDate`, the APO benchmark's
//! `NumMoves`/`RatingBin`/..., the columns our stages add) follows in
//! [`Puzzle::extra`], in the order it was first seen.
//!
//! What a puzzle's cells mean (its length in solver moves, whether it is a
//! mate, its source game, where its rating comes from) are its methods in
//! [`crate::chess::derive`], the home of a puzzle's rules.
//!
//! Files are CSV or JSON Lines, either optionally zstd-compressed. On input
//! the compression is detected from magic bytes and the format from the
//! first byte of content (`{` means JSON Lines); on output the file name
//! decides (`.csv`, `.jsonl`, each optionally followed by `.zst`).
//!
//! The record and its cells are in `puzzle`, why a row is refused in
//! `row_error`, reading files in `read`, writing them in `write`.

mod puzzle;
mod read;
mod row_error;
mod write;

pub use puzzle::{LICHESS_COLUMNS, Puzzle};
pub use read::read_puzzles;
pub(crate) use read::{Header, ReadRow, for_each_row, puzzle_from_json};
pub use row_error::RowError;
pub(crate) use row_error::{FirstLines, check_puzzle_id};
pub use write::write_puzzles;
pub(crate) use write::{Format, PuzzleWriter, extra_columns_of};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::line::{read_fen, read_ucis};
    use std::path::Path;

    fn sample() -> Puzzle {
        Puzzle {
            id: "00008".into(),
            fen: "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24"
                .parse()
                .unwrap(),
            moves: read_ucis("f2g3 e6e7 b2b1 b3c1 b1c1 h6c1".split(' ')).unwrap(),
            rating: Some(1913),
            rating_deviation: Some(75),
            popularity: Some(94),
            nb_plays: Some(6230),
            themes: vec!["crushing".into(), "hangingPiece".into()],
            game_url: "https://lichess.org/787zsVup/black#48".into(),
            opening_tags: vec![],
            extra: vec![("DailyDate".into(), String::new())],
        }
    }

    #[test]
    fn csv_and_jsonl_round_trip_with_and_without_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let mut unrated = sample();
        unrated.id = "x1".into();
        unrated.rating = None;
        unrated.set("Source", "selfplay");
        let puzzles = vec![sample(), unrated];
        for name in ["p.csv", "p.jsonl", "p.csv.zst", "p.jsonl.zst"] {
            let path = dir.path().join(name);
            write_puzzles(&path, &puzzles).unwrap();
            let back = read_puzzles(&path).unwrap();
            assert_eq!(back.len(), 2, "{name}");
            assert_eq!(back[0].moves, puzzles[0].moves, "{name}");
            assert_eq!(back[1].rating, None, "{name}");
            assert_eq!(back[1].get("Source"), Some("selfplay"), "{name}");
            assert_eq!(
                back[0].game_id_and_ply(),
                Some(("787zsVup".into(), Some(48)))
            );
        }
    }

    #[test]
    fn bad_row_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csv");
        std::fs::write(
            &path,
            "PuzzleId,FEN,Moves,Rating\na,8/8/8/8/8/8/8/8 w - - 0 1,e2e4 e7e5,12x\n",
        )
        .unwrap();
        let error = read_puzzles(&path).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("Rating"), "{error}");
    }

    #[test]
    fn a_bad_fen_or_move_is_an_error_naming_its_row_and_the_good_rows_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.csv");
        let good = "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24";
        std::fs::write(
            &path,
            format!(
                "PuzzleId,FEN,Moves\n\
                 a,{good},f2g3 e6e7\n\
                 b,r6k/pp2r2p/9/8/8/8/8/7K b - - 0 24,f2g3 e6e7\n\
                 c,{good},f2g3 e6\n\
                 d,{good},f2g3 e6e7\n"
            ),
        )
        .unwrap();
        let mut rows = Vec::new();
        for_each_row(&path, |(line, row)| {
            rows.push((line, row.map(|p| p.id).map_err(|e| e.to_string())));
            Ok(())
        })
        .unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0], (2, Ok("a".to_string())));
        let (line, bad_fen) = &rows[1];
        assert_eq!(*line, 3);
        assert!(
            bad_fen.as_ref().is_err_and(|e| e.starts_with("bad_fen: ")),
            "{bad_fen:?}"
        );
        assert_eq!(
            rows[2],
            (4, Err("bad_move: move 2 is not UCI: \"e6\"".to_string()))
        );
        assert_eq!(rows[3], (5, Ok("d".to_string())));
        let error = read_puzzles(&path).unwrap_err().to_string();
        assert!(error.contains("p.csv line 3: bad_fen"), "{error}");
    }

    /// The bytes guard: every FEN and move in the puzzle files of
    /// tests/data (Lichess's dump, the APO benchmark's, ours) prints back
    /// from shakmaty's types exactly as the file spells it, so a file read
    /// into [`Puzzle`]s and written again keeps its lines.
    #[test]
    fn test_data_fens_and_moves_print_back_as_read() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let copies = tempfile::tempdir().unwrap();
        let mut csvs: Vec<_> = std::fs::read_dir(&data)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "csv"))
            .collect();
        csvs.sort();
        let (mut fens, mut moves) = (0, 0);
        for path in &csvs {
            let mut reader = csv::Reader::from_path(path).unwrap();
            let header = reader.headers().unwrap().clone();
            let column = |name| header.iter().position(|c| c == name).unwrap();
            let (fen_at, moves_at) = (column("FEN"), column("Moves"));
            for row in reader.records() {
                let row = row.unwrap();
                let text = &row[fen_at];
                assert_eq!(
                    read_fen(text).unwrap().to_string(),
                    text,
                    "{}",
                    path.display()
                );
                fens += 1;
                for word in row[moves_at].split(' ') {
                    let uci = read_ucis([word]).unwrap();
                    assert_eq!(uci[0].to_string(), word, "{}", path.display());
                    moves += 1;
                }
            }
            let copy = copies.path().join(path.file_name().unwrap());
            write_puzzles(&copy, &read_puzzles(path).unwrap()).unwrap();
            let (written, original) = (
                std::fs::read_to_string(&copy).unwrap(),
                std::fs::read_to_string(path).unwrap(),
            );
            for (number, (a, b)) in written.lines().zip(original.lines()).enumerate() {
                assert_eq!(a, b, "{} line {}", path.display(), number + 1);
            }
            // Line by line: the APO file ends its lines with CRLF, ours LF.
            assert_eq!(
                written.lines().count(),
                original.lines().count(),
                "{}",
                path.display()
            );
        }
        assert!(
            csvs.len() >= 4 && fens >= 6000 && moves >= 30_000,
            "{fens} {moves}"
        );
    }
}

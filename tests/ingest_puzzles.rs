//! `puzzleforge ingest puzzles` on real Lichess rows (tests/data), through
//! the real binary and the library.

use proptest::prelude::*;
use puzzleforge::chess::record::read_puzzles;
use puzzleforge::stages::ingest_puzzles::{
    IngestPuzzlesConfig, MateFilter, RowLayout, check_row, ingest_puzzles,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SAMPLE: &str = "tests/data/lichess_db_puzzle_subset_1499.csv";
const APO: &str = "tests/data/apo_puzzle_train.csv";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// Runs the binary; returns (exit code, stdout JSON or Null, stderr).
fn run(args: &[&std::ffi::OsStr]) -> (i32, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .arg("--json")
        .args(args)
        .output()
        .expect("the puzzleforge binary runs");
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn ingest_cli(input: &Path, output: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "ingest".as_ref(),
        "puzzles".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        output.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    run(&args)
}

/// The sample's header line and row lines (LF endings, as the file has).
fn sample_lines() -> (String, Vec<String>) {
    let text = std::fs::read_to_string(data(SAMPLE)).unwrap();
    let mut lines = text.lines().map(str::to_string);
    let header = lines.next().unwrap();
    (header, lines.collect())
}

#[test]
fn the_1499_row_sample_is_all_accepted_with_derived_columns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("puzzles.csv");
    let (code, json, stderr) = ingest_cli(&data(SAMPLE), &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["rows_read"], 1499);
    assert_eq!(json["accepted"], 1499);
    assert_eq!(json["rejected"], 0);
    assert_eq!(json["written"], 1499);
    let puzzles = read_puzzles(&out).unwrap();
    assert_eq!(puzzles.len(), 1499);
    let (_, rows) = sample_lines();
    for (puzzle, row) in puzzles.iter().zip(&rows) {
        assert!(
            row.starts_with(&format!("{},", puzzle.id)),
            "input order kept"
        );
        assert_eq!(puzzle.get("Source"), Some("lichess"));
        assert_eq!(
            puzzle.get("NumMoves"),
            Some(puzzle.solver_moves().to_string().as_str())
        );
        assert!(matches!(puzzle.get("Mate"), Some("True" | "False")));
        assert!(matches!(
            puzzle.get("Phase"),
            Some("opening" | "middlegame" | "endgame")
        ));
        let (game, ply) = puzzle.game_id_and_ply().unwrap();
        assert_eq!(puzzle.get("GameId"), Some(game.as_str()));
        assert_eq!(puzzle.get("Ply"), Some(ply.unwrap().to_string().as_str()));
        assert!(
            puzzle.get("DailyDate").is_some(),
            "input's extra column kept"
        );
    }
    // A puzzle tagged mateIn1 ends in checkmate and its bin is pandas-style.
    let first = &puzzles[0];
    assert_eq!(first.id, "000rZ");
    assert_eq!(first.get("Mate"), Some("True"));
    assert_eq!(first.get("MateCheck"), Some("agree"));
    assert_eq!(first.get("RatingBin"), Some("(600, 700]"));
    assert_eq!(first.get("RatingBin200"), Some("(600, 800]"));
    assert_eq!(first.get("Phase"), Some("opening"));
    // The rejects file exists and holds only its header.
    let rejects = std::fs::read_to_string(dir.path().join("puzzles.csv.rejects.csv")).unwrap();
    assert_eq!(rejects.trim(), "line,PuzzleId,reason,detail");
}

#[test]
fn apo_training_file_is_accepted_and_derivations_match_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("apo.csv.zst");
    let (code, json, stderr) = ingest_cli(&data(APO), &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["accepted"], 559);
    assert_eq!(json["written"], 559);
    let original = read_puzzles(&data(APO)).unwrap();
    let ours = read_puzzles(&out).unwrap();
    assert_eq!(ours.len(), 559);
    for (theirs, ours) in original.iter().zip(&ours) {
        assert_eq!(theirs.id, ours.id);
        // Their extra columns are kept, and our derivations agree with them.
        for column in ["NumMoves", "RatingBin", "Mate", "GameId", "GameSAN"] {
            assert_eq!(theirs.get(column), ours.get(column), "{} {column}", ours.id);
        }
        assert!(ours.get("RatingBin200").is_some());
    }
}

#[test]
fn jsonl_written_by_puzzleforge_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.jsonl.zst");
    let (code, _, stderr) = ingest_cli(&data(SAMPLE), &first, &[]);
    assert_eq!(code, 0, "{stderr}");
    let second = dir.path().join("second.csv");
    let (code, json, stderr) = ingest_cli(&first, &second, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["accepted"], 1499);
    let a = read_puzzles(&first).unwrap();
    let b = read_puzzles(&second).unwrap();
    assert_eq!(a, b);
}

#[test]
fn corrupted_rows_are_rejected_by_reason_and_good_rows_kept() {
    let (header, rows) = sample_lines();
    let good: Vec<String> = rows[..40].to_vec();
    let cells = |row: &str| -> Vec<String> { row.split(',').map(str::to_string).collect() };
    // Rows of the sample have no quoted cells, so a plain split is exact.
    assert!(good.iter().all(|r| !r.contains('"')));
    let with = |row: &str, column: usize, value: &str| -> String {
        let mut c = cells(row);
        c[column] = value.to_string();
        c.join(",")
    };
    let long_row = rows[40..]
        .iter()
        .find(|r| cells(r)[2].split(' ').count() >= 4)
        .unwrap();
    let mut odd = cells(long_row);
    let moves: Vec<&str> = odd[2].split(' ').collect();
    odd[2] = moves[..moves.len() - 1].join(" ");
    odd[0] = "odd01".into();
    let bad_fen = with(
        &with(
            &rows[41],
            1,
            "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        ),
        0,
        "fen01",
    );
    let illegal = with(
        &with(
            &with(
                &rows[42],
                1,
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            ),
            2,
            "e2e5 e7e5",
        ),
        0,
        "ill01",
    );
    let rating = with(&with(&rows[43], 3, "15x0"), 0, "rat01");
    let mut short = cells(&rows[44]);
    short.pop();
    short[0] = "col01".into();
    let short = short.join(",");
    let duplicate = good[3].clone();

    let mut bytes = Vec::new();
    let mut push = |line: &[u8]| {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    };
    push(header.as_bytes());
    for (i, row) in good.iter().enumerate() {
        push(row.as_bytes());
        match i {
            5 => push(bad_fen.as_bytes()),
            10 => push(illegal.as_bytes()),
            15 => push(odd.join(",").as_bytes()),
            20 => push(rating.as_bytes()),
            25 => push(short.as_bytes()),
            30 => push(duplicate.as_bytes()),
            33 => push(b""),
            35 => {
                let mut utf = with(&rows[45], 0, "utf01").into_bytes();
                utf.extend_from_slice(b"\xff\xfe");
                push(&utf);
            }
            _ => {}
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corrupt.csv");
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.path().join("out.csv");
    let rejects = dir.path().join("bad.csv");
    let (code, json, stderr) = ingest_cli(&input, &out, &["--rejects", rejects.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["rows_read"], 47, "the blank line is not a row");
    assert_eq!(json["accepted"], 40);
    assert_eq!(json["written"], 40);
    assert_eq!(json["rejected"], 7);
    let by_reason = json["rejected_by_reason"].as_object().unwrap();
    for reason in [
        "bad_fen",
        "illegal_move",
        "odd_move_count",
        "bad_integer",
        "wrong_column_count",
        "duplicate_id",
        "invalid_utf8",
    ] {
        assert_eq!(
            by_reason.get(reason),
            Some(&Value::from(1)),
            "{reason}: {by_reason:?}"
        );
    }
    let kept: Vec<String> = read_puzzles(&out)
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let expected: Vec<String> = good.iter().map(|r| cells(r)[0].clone()).collect();
    assert_eq!(kept, expected);
    let rejected = std::fs::read_to_string(&rejects).unwrap();
    let lines: Vec<&str> = rejected.lines().collect();
    assert_eq!(lines.len(), 8);
    assert!(lines[1].starts_with("8,fen01,bad_fen,"), "{}", lines[1]);
    assert!(rejected.contains(",ill01,illegal_move,"));
    assert!(rejected.contains(",odd01,odd_move_count,"));
    assert!(rejected.contains(",rat01,bad_integer,"));
    assert!(rejected.contains(",col01,wrong_column_count,"));
    assert!(rejected.contains(&format!(",{},duplicate_id,", cells(&good[3])[0])));
    assert!(rejected.contains(",utf01,invalid_utf8,"));
}

/// The CSV writer copies plain cells as they are and quotes the rest by
/// csv's rule: cells holding a delimiter or a quote, and space-runs inside
/// Themes/Moves/OpeningTags, come back exactly as `Puzzle` reads them, and
/// every other row is byte-identical to the input. (A line break inside a
/// cell is no puzzle row's: `tests/guards.rs` has it rejected with its
/// line.)
#[test]
fn cells_needing_quotes_or_spacing_fixes_round_trip() {
    let (header, rows) = sample_lines();
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer.write_record(header.split(',')).unwrap();
    let mut quoted: Vec<String> = rows[0].split(',').map(str::to_string).collect();
    quoted[9] = "Sicilian_Defense, \"Najdorf\"\tVariation".to_string();
    writer.write_record(&quoted).unwrap();
    let mut spaced: Vec<String> = rows[1].split(',').map(str::to_string).collect();
    spaced[7] = format!("  {}\t", spaced[7].replace(' ', "   "));
    writer.write_record(&spaced).unwrap();
    for row in &rows[2..6] {
        writer.write_record(row.split(',')).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("quoted.csv");
    std::fs::write(&input, writer.into_inner().unwrap()).unwrap();
    let out = dir.path().join("out.csv");
    let (code, json, stderr) = ingest_cli(&input, &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["written"], 6, "{json}");
    let puzzles = read_puzzles(&out).unwrap();
    assert_eq!(
        puzzles[0].opening_tags,
        vec!["Sicilian_Defense,", "\"Najdorf\"", "Variation"]
    );
    let themes: Vec<&str> = rows[1].split(',').nth(7).unwrap().split(' ').collect();
    assert_eq!(puzzles[1].themes, themes);
    // Unchanged rows keep their input bytes, then the derived columns.
    let written = std::fs::read_to_string(&out).unwrap();
    for (line, row) in written.lines().skip(3).zip(&rows[2..6]) {
        assert!(line.starts_with(&format!("{row},")), "{line}");
        assert!(line.contains(",\"("), "RatingBin is quoted: {line}");
    }
}

/// Rejects name the line a row is on, across a blank line, and before and
/// after the first line that needs the full csv grammar (a quoted cell).
#[test]
fn reject_lines_are_exact_before_and_after_quoted_rows() {
    let (header, rows) = sample_lines();
    let cells = |row: &str| -> Vec<String> { row.split(',').map(str::to_string).collect() };
    let mut bad_fen = cells(&rows[1]);
    bad_fen[0] = "fen01".into();
    bad_fen[1] = "8/8/8/8/8/8/8/8 w - - 0 1".into();
    let mut quoted = cells(&rows[2]);
    quoted[9] = format!("\"{}\"", quoted[9]);
    let mut bad_rating = cells(&rows[3]);
    bad_rating[0] = "rat01".into();
    bad_rating[3] = "x".into();
    let text = [
        header.clone(),
        rows[0].clone(),
        String::new(),
        bad_fen.join(","),
        quoted.join(","),
        bad_rating.join(","),
        rows[4].clone(),
        rows[5].clone(),
    ]
    .join("\n")
        + "\n";
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mixed.csv");
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out.csv");
    let (code, json, stderr) = ingest_cli(&input, &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["accepted"], 4, "{json}");
    assert_eq!(json["rejected"], 2, "{json}");
    let rejects = std::fs::read_to_string(dir.path().join("out.csv.rejects.csv")).unwrap();
    let lines: Vec<&str> = rejects.lines().skip(1).collect();
    assert!(lines[0].starts_with("4,fen01,"), "{rejects}");
    assert!(lines[1].starts_with("6,rat01,bad_integer,"), "{rejects}");
    let ids: Vec<String> = read_puzzles(&out)
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let expected: Vec<String> = [0, 2, 4, 5]
        .iter()
        .map(|&i| cells(&rows[i])[0].clone())
        .collect();
    assert_eq!(ids, expected);
}

#[test]
fn truncated_zstd_is_an_error_naming_the_file_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(data(SAMPLE)).unwrap();
    let compressed = zstd::encode_all(&plain[..], 3).unwrap();
    let input = dir.path().join("cut.csv.zst");
    std::fs::write(&input, &compressed[..compressed.len() * 2 / 3]).unwrap();
    let out = dir.path().join("out.csv");
    let (code, _, stderr) = ingest_cli(&input, &out, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cut.csv.zst"), "{stderr}");
    assert!(stderr.contains("truncated or corrupt after"), "{stderr}");
    assert!(stderr.contains(" rows"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("cut.csv.zst")],
        "{left:?}"
    );
}

/// Counts the sample's rows matching a predicate on (rating, themes).
fn count_sample(pred: impl Fn(i32, &[&str]) -> bool) -> u64 {
    let (_, rows) = sample_lines();
    rows.iter()
        .filter(|row| {
            let c: Vec<&str> = row.split(',').collect();
            let themes: Vec<&str> = c[7].split(' ').collect();
            pred(c[3].parse().unwrap(), &themes)
        })
        .count() as u64
}

fn ingest_lib(
    config: &IngestPuzzlesConfig,
    out: &Path,
) -> puzzleforge::stages::ingest_puzzles::IngestStats {
    ingest_puzzles(config, &data(SAMPLE), out, None).unwrap()
}

#[test]
fn filters_count_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.csv");
    let config = IngestPuzzlesConfig {
        min_rating: Some(1500),
        max_rating: Some(2000),
        ..Default::default()
    };
    let stats = ingest_lib(&config, &out);
    let expected = count_sample(|r, _| (1500..=2000).contains(&r));
    assert_eq!(stats.written, expected);
    assert_eq!(stats.filtered_by_filter["rating"], 1499 - expected);

    let config = IngestPuzzlesConfig {
        themes_any: vec!["fork".into(), "pin".into()],
        themes_none: vec!["endgame".into()],
        ..Default::default()
    };
    let stats = ingest_lib(&config, &out);
    let any = count_sample(|_, t| !t.contains(&"fork") && !t.contains(&"pin"));
    let none =
        count_sample(|_, t| (t.contains(&"fork") || t.contains(&"pin")) && t.contains(&"endgame"));
    assert_eq!(stats.filtered_by_filter["themes_any"], any);
    assert_eq!(stats.filtered_by_filter["themes_none"], none);
    assert_eq!(stats.written, 1499 - any - none);

    let config = IngestPuzzlesConfig {
        themes_all: vec!["mate".into(), "short".into()],
        ..Default::default()
    };
    let stats = ingest_lib(&config, &out);
    assert_eq!(
        stats.written,
        count_sample(|_, t| t.contains(&"mate") && t.contains(&"short"))
    );

    // Solver lengths, and mate only / no mate partition the sample.
    let config = IngestPuzzlesConfig {
        solver_lengths: vec![1],
        ..Default::default()
    };
    let one_move = ingest_lib(&config, &out).written;
    assert_eq!(
        one_move,
        read_puzzles(&data(SAMPLE))
            .unwrap()
            .iter()
            .filter(|p| p.moves.len() == 2)
            .count() as u64
    );
    let only = ingest_lib(
        &IngestPuzzlesConfig {
            mate: MateFilter::Only,
            ..Default::default()
        },
        &out,
    );
    assert!(
        read_puzzles(&out)
            .unwrap()
            .iter()
            .all(|p| p.get("Mate") == Some("True"))
    );
    let exclude = ingest_lib(
        &IngestPuzzlesConfig {
            mate: MateFilter::Exclude,
            ..Default::default()
        },
        &out,
    );
    assert!(
        read_puzzles(&out)
            .unwrap()
            .iter()
            .all(|p| p.get("Mate") == Some("False"))
    );
    assert_eq!(only.written + exclude.written, 1499);
    assert!(only.written > 100 && exclude.written > 100);
}

#[test]
fn flags_override_and_sample_is_deterministic_per_seed() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    let b = dir.path().join("b.csv");
    let c = dir.path().join("c.csv");
    let flags = ["--sample", "100", "--seed", "7", "--min-popularity", "90"];
    let (code, json, stderr) = ingest_cli(&data(SAMPLE), &a, &flags);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["written"], 100);
    assert_eq!(json["filtered_by_filter"]["sample"], 1399);
    let (code, _, _) = ingest_cli(&data(SAMPLE), &b, &flags);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let (code, _, _) = ingest_cli(&data(SAMPLE), &c, &["--sample", "100", "--seed", "8"]);
    assert_eq!(code, 0);
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
    // The sample keeps input order.
    let (_, rows) = sample_lines();
    let order: Vec<String> = rows
        .iter()
        .map(|r| r.split(',').next().unwrap().to_string())
        .collect();
    let picked: Vec<usize> = read_puzzles(&a)
        .unwrap()
        .iter()
        .map(|p| order.iter().position(|id| *id == p.id).unwrap())
        .collect();
    assert!(picked.windows(2).all(|w| w[0] < w[1]));
    // A sample larger than the input keeps everything.
    let (_, json, _) = ingest_cli(&data(SAMPLE), &c, &["--sample", "5000"]);
    assert_eq!(json["written"], 1499);
}

#[test]
fn missing_input_and_bad_output_name_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) =
        ingest_cli(&dir.path().join("nope.csv"), &dir.path().join("o.csv"), &[]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = ingest_cli(&data(SAMPLE), &dir.path().join("o.txt"), &[]);
    assert_eq!(code, 2, "{stderr}");
}

fn lichess_layout() -> RowLayout {
    let (header, _) = sample_lines();
    RowLayout::new(header.split(',').map(str::to_string).collect(), true).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary cells: a row of the wrong width is refused as such, and
    /// any other refusal names a reason and says why.
    #[test]
    fn row_validator_refuses_a_wrong_width_and_explains_every_refusal(
        cells in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..14)
    ) {
        let layout = lichess_layout();
        let width = sample_lines().0.split(',').count();
        let refs: Vec<&[u8]> = cells.iter().map(Vec::as_slice).collect();
        let checked = check_row(&layout, &refs);
        if cells.len() != width {
            prop_assert_eq!(checked.as_ref().err().map(|e| e.reason), Some("wrong_column_count"));
        }
        if let Err(error) = checked {
            prop_assert!(!error.reason.is_empty() && !error.detail.is_empty(), "{:?}", error);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Real rows with some cells (not the PuzzleId) replaced by arbitrary
    /// text, quoted as CSV needs, ingested: every row the validator accepts
    /// is written, in order, and every row it refuses is in the rejects
    /// file on the line the row starts on, with the validator's reason.
    #[test]
    fn every_good_row_is_kept_and_every_bad_row_rejected_on_its_line(
        first in 0usize..1480,
        edits in prop::collection::vec((0usize..16, 1usize..10, ".{0,40}"), 0..6),
    ) {
        let layout = lichess_layout();
        let (header, rows) = sample_lines();
        let mut rows: Vec<Vec<String>> = rows[first..first + 16]
            .iter()
            .map(|row| row.split(',').map(str::to_string).collect())
            .collect();
        for (row, column, text) in &edits {
            rows[*row][*column] = text.clone();
        }
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        writer.write_record(header.split(',')).unwrap();
        writer.flush().unwrap();
        // Where each row starts: one line past the line ends before it.
        let mut starts = Vec::new();
        for row in &rows {
            let written = writer.get_ref();
            starts.push(1 + written.iter().filter(|&&b| b == b'\n').count());
            writer.write_record(row).unwrap();
            writer.flush().unwrap();
        }
        let text = writer.into_inner().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("edited.csv");
        std::fs::write(&input, &text).unwrap();
        let out = dir.path().join("out.csv");
        let stats = ingest_puzzles(&IngestPuzzlesConfig::default(), &input, &out, None).unwrap();

        let mut kept = Vec::new();
        let mut refused = Vec::new();
        for (row, line) in rows.iter().zip(&starts) {
            let cells: Vec<&[u8]> = row.iter().map(|c| c.as_bytes()).collect();
            match check_row(&layout, &cells) {
                Ok(_) => kept.push(row[0].clone()),
                Err(error) => {
                    refused.push((line.to_string(), row[0].clone(), error.reason.to_string()))
                }
            }
        }
        let written: Vec<String> = read_puzzles(&out).unwrap().into_iter().map(|p| p.id).collect();
        prop_assert_eq!(&written, &kept);
        prop_assert_eq!(stats.rows_read, rows.len() as u64);
        prop_assert_eq!(stats.rejected, refused.len() as u64);
        let found: Vec<(String, String, String)> = csv::Reader::from_path(&stats.rejects)
            .unwrap()
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[0].to_string(), r[1].to_string(), r[2].to_string())
            })
            .collect();
        prop_assert_eq!(found, refused);
    }
}

/// On CRLF input (read by the csv grammar, line by line) rejects name the
/// row's own line, after blank lines and after a cell that opens a quote
/// and runs past its line's end (no puzzle row's: its line and the stray
/// quote of the next are rejected each with its line, and the rows after
/// them read as before).
#[test]
fn reject_lines_are_exact_on_crlf_input() {
    let (header, rows) = sample_lines();
    let cells = |row: &str| -> Vec<String> { row.split(',').map(str::to_string).collect() };
    let mut bad_rating = cells(&rows[1]);
    bad_rating[0] = "rat01".into();
    bad_rating[3] = "x".into();
    let mut two_lines = cells(&rows[2]);
    two_lines[9] = format!("\"{}\r\n\"", two_lines[9]);
    let mut bad_fen = cells(&rows[3]);
    bad_fen[0] = "fen01".into();
    bad_fen[1] = "8/8/8/8/8/8/8/8 w - - 0 1".into();
    let text = [
        header.clone(),
        rows[0].clone(),
        bad_rating.join(","),
        String::new(),
        two_lines.join(","),
        bad_fen.join(","),
        rows[4].clone(),
    ]
    .join("\r\n")
        + "\r\n";
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("crlf.csv");
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out.csv");
    let (code, json, stderr) = ingest_cli(&input, &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["rejected"], 4, "{json}");
    let rejects = std::fs::read_to_string(dir.path().join("out.csv.rejects.csv")).unwrap();
    let lines: Vec<&str> = rejects.lines().skip(1).collect();
    assert!(lines[0].starts_with("3,rat01,bad_integer,"), "{rejects}");
    let opened = format!("5,{},unclosed_quote,", two_lines[0]);
    assert!(lines[1].starts_with(&opened), "{rejects}");
    assert!(lines[2].starts_with("6,,unclosed_quote,"), "{rejects}");
    assert!(lines[3].starts_with("7,fen01,"), "{rejects}");
}

/// A row longer than 1 MiB is rejected as `row_too_long` without being
/// held whole: its reject line keeps the row's first bytes only, and the
/// rows around it are read as before. On a plain line, inside quotes (the
/// csv grammar), and in JSON Lines.
#[test]
fn a_row_longer_than_a_mebibyte_is_rejected_and_its_reject_line_cut() {
    let (header, rows) = sample_lines();
    let long = "x".repeat(3 << 20);
    let mut quoted: Vec<String> = rows[2].split(',').map(str::to_string).collect();
    quoted[9] = format!("\"{}\"", quoted[9]);
    let plain = [
        header.clone(),
        rows[0].clone(),
        format!("long1,{long}"),
        rows[1].clone(),
    ]
    .join("\n")
        + "\n";
    let in_quotes = [
        header.clone(),
        rows[0].clone(),
        quoted.join(","),
        format!("long2,\"{long},\"\"{long}\",3"),
        rows[1].clone(),
    ]
    .join("\n")
        + "\n";
    let dir = tempfile::tempdir().unwrap();
    // JSON Lines written by puzzleforge, with a long line between two rows.
    let jsonl = dir.path().join("rows.jsonl");
    std::fs::write(
        dir.path().join("two.csv"),
        [&header, &rows[0], &rows[1]].map(String::as_str).join("\n") + "\n",
    )
    .unwrap();
    let (code, _, stderr) = ingest_cli(&dir.path().join("two.csv"), &jsonl, &[]);
    assert_eq!(code, 0, "{stderr}");
    let json_rows: Vec<String> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let in_json = format!(
        "{}\n{{\"PuzzleId\": \"long3\", \"FEN\": \"{long}\"}}\n{}\n",
        json_rows[0], json_rows[1]
    );
    for (name, text, line, id, accepted) in [
        ("plain.csv", plain, 3, "long1", 2),
        ("quoted.csv", in_quotes, 4, "long2", 3),
        ("long.jsonl", in_json, 2, "", 2),
    ] {
        let input = dir.path().join(name);
        std::fs::write(&input, text).unwrap();
        let out = dir.path().join(format!("{name}.out.csv"));
        let (code, json, stderr) = ingest_cli(&input, &out, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(json["accepted"], accepted, "{name}: {json}");
        assert_eq!(
            json["rejected_by_reason"]["row_too_long"], 1,
            "{name}: {json}"
        );
        let rejects_path = dir.path().join(format!("{name}.out.csv.rejects.csv"));
        let rejects = std::fs::read_to_string(&rejects_path).unwrap();
        assert!(rejects.len() < 1000, "{name}: the reject line is not cut");
        let reject = rejects.lines().nth(1).unwrap();
        assert!(
            reject.starts_with(&format!("{line},{id},row_too_long,")),
            "{name}: {reject}"
        );
    }
}

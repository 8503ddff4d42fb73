//! `puzzleforge rate` on real Lichess rows, the real Maia nets and real
//! files. Trees are tiny: these tests check behaviour, not accuracy
//! (accuracy is measured by `rate --calibrate` and `rate --evaluate`, see
//! docs/rating.md). Rating runs no engine.

use puzzleforge::chess::record::{Puzzle, read_puzzles, write_puzzles};
use puzzleforge::stages::rate::{
    RateConfig, RatingModel, TreeConfig, average_ranks, feature_names, has_lichess_rating, spearman,
};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::data;

/// Small trees, every multi-move puzzle's proxy.
fn tiny_config() -> RateConfig {
    RateConfig {
        seed: 7,
        folds: 3,
        proxy_share: 1.0,
        trees: TreeConfig {
            iterations: 60,
            learning_rate: 0.1,
            max_depth: 3,
            min_leaf_weight: 3.0,
            ..TreeConfig::default()
        },
        ..RateConfig::default()
    }
}

fn write_config(dir: &Path, config: &RateConfig) -> PathBuf {
    let path = dir.join("rate.toml");
    std::fs::write(&path, toml::to_string(config).expect("config serializes"))
        .expect("write config");
    path
}

/// Eight Lichess puzzles of each length group (1, 2, 3+ solver moves).
fn calibration_rows() -> Vec<Puzzle> {
    let all = read_puzzles(&data("lichess_db_puzzle_subset_1499.csv")).expect("read sample");
    let mut picked = Vec::new();
    for group in [1..=1, 2..=2, 3..=9] {
        picked.extend(
            all.iter()
                .filter(|p| group.contains(&p.solver_moves()))
                .take(8)
                .cloned(),
        );
    }
    picked
}

/// Puzzles to rate: APO rows stripped of their rating (as mined puzzles
/// come), plus two Lichess rows that must keep theirs.
fn puzzles_to_rate() -> Vec<Puzzle> {
    let apo = read_puzzles(&data("apo_puzzle_train.csv")).expect("read APO");
    let mut out: Vec<Puzzle> = [0usize, 170, 330, 420, 500]
        .iter()
        .map(|&i| {
            let mut p = apo[i].clone();
            p.rating = None;
            p.rating_deviation = None;
            p.nb_plays = None;
            p.popularity = None;
            p
        })
        .collect();
    out.extend(apo[200..202].iter().cloned());
    out
}

fn rate(args: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .arg("rate")
        .args(args)
        .output()
        .expect("run puzzleforge");
    assert!(
        output.status.success(),
        "puzzleforge rate {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn spearman_on_known_inputs() {
    // y has a tie: its ranks are 1, 2, 3.5, 5, 3.5.
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let y = [5.0, 6.0, 7.0, 8.0, 7.0];
    assert_eq!(average_ranks(&y), vec![1.0, 2.0, 3.5, 5.0, 3.5]);
    let expected = 8.0 / 95f64.sqrt();
    let rho = spearman(&x, &y).expect("defined");
    assert!((rho - expected).abs() < 1e-12, "{rho} != {expected}");
    assert_eq!(spearman(&x, &[9.0, 7.0, 5.0, 3.0, 1.0]), Some(-1.0));
    // Monotone but not linear: still 1.
    assert_eq!(
        spearman(&x, &[1.0, 10.0, 100.0, 1000.0, 10000.0]),
        Some(1.0)
    );
    // A constant side has no rank correlation.
    assert_eq!(spearman(&x, &[2.0; 5]), None);
    assert_eq!(spearman(&[1.0], &[1.0]), None);
}

#[test]
fn feature_names_are_unique_and_need_no_engine() {
    let names = feature_names();
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a feature name is used twice");
    let has = |name: &str| names.iter().any(|n| n == name);
    for name in [
        "ends_in_mate",
        "maia_first_p_1100",
        "maia_min_log_p_1900",
        "maia_first_pool_1100_00",
        "maia_first_pool_1900_63",
    ] {
        assert!(has(name), "{name} is missing");
    }
    for engine_feature in ["ladder_solve_rate", "found_depth_max", "log_gap_min"] {
        assert!(!has(engine_feature), "{engine_feature}");
    }
}

#[test]
fn calibrated_model_is_reused_with_identical_results_and_rating_is_reproducible() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &tiny_config());
    let calibration = dir.path().join("lichess.csv");
    write_puzzles(&calibration, &calibration_rows()).expect("write calibration rows");
    let input = dir.path().join("mined.csv");
    let puzzles = puzzles_to_rate();
    write_puzzles(&input, &puzzles).expect("write input");
    let model = dir.path().join("model.json");
    let first = dir.path().join("rated-1.csv");
    let second = dir.path().join("rated-2.csv");
    let third = dir.path().join("rated-3.csv");

    let calibrated = rate(&[
        input.to_str().unwrap(),
        "-o",
        first.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--calibrate",
        calibration.to_str().unwrap(),
        "--save-model",
        model.to_str().unwrap(),
        "--json",
    ]);
    let summary: serde_json::Value =
        serde_json::from_slice(&calibrated.stdout).expect("one JSON summary");
    assert_eq!(summary["estimated"], 5);
    assert_eq!(summary["kept_lichess_rating"], 2);
    let held_out = summary["calibration"]["figures"]["held_out"]
        .as_array()
        .expect("held-out figures");
    let groups: Vec<&str> = held_out
        .iter()
        .filter_map(|h| h["group"].as_str())
        .collect();
    assert_eq!(groups[..6], ["all", "1", "2", "3+", "mates", "non-mates"]);
    assert_eq!(groups.last(), Some(&"1 proxy"));
    assert_eq!(
        held_out[0]["rows"], 24,
        "proxies are not counted as puzzles"
    );
    // Each of the 16 multi-move puzzles adds its single-move proxy.
    assert_eq!(summary["calibration"]["proxy_rows"], 16);
    assert_eq!(held_out.last().expect("proxy group")["rows"], 16);
    let bands = summary["calibration"]["figures"]["bands"]
        .as_array()
        .expect("bands");
    assert_eq!(
        bands.len(),
        2,
        "band tables of the puzzles and of the proxies"
    );

    let loaded = RatingModel::load(&model).expect("the saved model loads");
    assert_eq!(loaded.maia.ratings, [1100, 1900]);
    // The model records the longest line it was fitted on, which decides
    // which lines `rate` flags as beyond it.
    let longest = calibration_rows().iter().map(Puzzle::solver_moves).max();
    assert_eq!(loaded.longest_line, longest);
    assert_eq!(loaded.trees_config, tiny_config().trees);

    // The saved model rates the same puzzles to the same bytes, twice.
    for out in [&second, &third] {
        rate(&[
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--model",
            model.to_str().unwrap(),
        ]);
    }
    let bytes = |p: &Path| std::fs::read(p).expect("read output");
    assert_eq!(
        bytes(&first),
        bytes(&second),
        "--model reproduces the calibrated run"
    );
    assert_eq!(
        bytes(&second),
        bytes(&third),
        "rating twice gives the same bytes"
    );

    let rated = read_puzzles(&first).expect("read rated");
    assert_eq!(rated.len(), puzzles.len());
    for (before, after) in puzzles.iter().zip(&rated) {
        assert_eq!(before.id, after.id);
        let rating = after.rating.expect("every row has a rating");
        let deviation = after.rating_deviation.expect("every row has a deviation");
        assert!(deviation > 0);
        if has_lichess_rating(before) {
            assert_eq!(
                Some(rating),
                before.rating,
                "{} keeps its rating",
                before.id
            );
            assert_eq!(after.rating_deviation, before.rating_deviation);
            assert_eq!(after.get("RatingSource"), Some("lichess"));
        } else {
            assert!((400..=3300).contains(&rating), "{}: {rating}", after.id);
            assert_eq!(after.get("RatingSource"), Some("estimated"));
        }
    }
}

#[test]
fn committed_model_rates_and_bad_rows_are_reported_not_fatal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("mined.csv");
    let mut puzzles = puzzles_to_rate();
    puzzles.truncate(2);
    let mut broken = puzzles[0].clone();
    broken.id = "broken".into();
    broken.moves[1] = "a1a8".parse().unwrap();
    puzzles.insert(1, broken);
    write_puzzles(&input, &puzzles).expect("write input");
    let out = dir.path().join("rated.jsonl");
    let rejects = dir.path().join("bad-rows.csv");
    let run = rate(&[
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--rejects",
        rejects.to_str().unwrap(),
        "--model",
        committed_model().to_str().unwrap(),
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    assert_eq!(summary["rejected"], 1);
    assert_eq!(summary["rejected_by_reason"]["illegal_move"], 1);
    assert_eq!(summary["rejects"], rejects.to_str().unwrap());
    assert_eq!(
        reject_rows(&rejects),
        [(3, "broken".to_string(), "illegal_move".to_string())]
    );
    assert!(
        !dir.path().join("rated.jsonl.rejects.csv").exists(),
        "--rejects is where they go"
    );
    let rated = read_puzzles(&out).expect("read rated");
    let ids: Vec<&str> = rated.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, [puzzles[0].id.as_str(), puzzles[2].id.as_str()]);
    assert!(
        rated
            .iter()
            .all(|p| p.rating.is_some() && p.rating_deviation.is_some())
    );
    // Lines of the lengths the model was fitted on carry no flag, nor its
    // column: such files keep the bytes they had before flags.
    assert_eq!(summary["beyond_model_lengths"], 0);
    assert!(rated.iter().all(|p| p.get("RatingFlag").is_none()));
}

fn committed_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json")
}

/// The rows of a rejects file (`line,PuzzleId,reason,detail`): line, id
/// and reason of each.
fn reject_rows(path: &Path) -> Vec<(u64, String, String)> {
    let mut reader = csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("{}: no rejects file: {e}", path.display()));
    let header = reader.headers().expect("a header").clone();
    assert_eq!(
        header.iter().collect::<Vec<_>>(),
        ["line", "PuzzleId", "reason", "detail"]
    );
    reader
        .records()
        .map(|row| {
            let row = row.expect("a rejects row");
            (
                row[0].parse().expect("a line number"),
                row[1].to_string(),
                row[2].to_string(),
            )
        })
        .collect()
}

/// A Lichess-columns CSV row of an unrated puzzle (the other seven cells
/// empty).
fn unrated_row(id: &str, fen: &str, moves: &str) -> String {
    format!("{id},{fen},{moves},,,,,,,")
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Twelve bad rows among good ones, of every kind a row can be bad: each
/// is named in the rejects file with its line, id (whenever its cell could
/// be read, issue 67) and reason, and the good rows around them are rated and written.
/// Before, the summary named the first five and no file named them all.
#[test]
fn every_bad_row_is_named_in_the_rejects_file_with_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good: Vec<Puzzle> = puzzles_to_rate()[..3]
        .iter()
        .cloned()
        .map(|mut p| {
            p.extra.clear();
            p
        })
        .collect();
    let good_file = dir.path().join("good.csv");
    write_puzzles(&good_file, &good).expect("write good rows");
    let good_text = std::fs::read_to_string(&good_file).expect("read good rows");
    let mut good_lines = good_text.lines();
    let header = good_lines.next().expect("a header");
    let good_lines: Vec<&str> = good_lines.collect();
    let (first_fen, first_moves) = (good[0].fen.to_string(), good[0].moves_text());
    // (row, PuzzleId the rejects file names, reason)
    let bad: Vec<(String, &str, &str)> = vec![
        (
            unrated_row("b01", START, "e2e5 e7e5"),
            "b01",
            "illegal_move",
        ),
        (unrated_row("b02", START, "zz99 e7e5"), "b02", "bad_move"),
        (
            unrated_row("b03", "not a fen", "e2e4 e7e5"),
            "b03",
            "bad_fen",
        ),
        (
            unrated_row("b04", "8/8/8/8/8/8/8/8 w - - 0 1", "e2e4 e7e5"),
            "b04",
            "illegal_position",
        ),
        (
            unrated_row("b05", START, "e2e4 e7e5 g1f3"),
            "b05",
            "odd_move_count",
        ),
        (unrated_row("b06", START, "e2e4"), "b06", "too_few_moves"),
        (
            format!("b07,{START},e2e4 e7e5,abc,,,,,,"),
            "b07",
            "bad_integer",
        ),
        (
            format!("b08,{START},e2e4 e7e5,,,,,,"),
            "b08",
            "wrong_column_count",
        ),
        (
            unrated_row(&good[0].id, &first_fen, &first_moves),
            good[0].id.as_str(),
            "duplicate_id",
        ),
        (
            unrated_row("b10", START, "e2e4 e7e4"),
            "b10",
            "illegal_move",
        ),
        (
            unrated_row("b11", START, "g1g3 e7e5"),
            "b11",
            "illegal_move",
        ),
        (
            unrated_row("b12", START, "e2e4 e8e7"),
            "b12",
            "illegal_move",
        ),
    ];
    assert_eq!(bad.len(), 12);
    // The good rows first, middle and last; the bad ones between.
    let mut lines = vec![header.to_string(), good_lines[0].to_string()];
    let mut expected = Vec::new();
    for (i, (row, id, reason)) in bad.iter().enumerate() {
        if i == 6 {
            lines.push(good_lines[1].to_string());
        }
        lines.push(row.clone());
        expected.push((lines.len() as u64, id.to_string(), reason.to_string()));
    }
    lines.push(good_lines[2].to_string());
    let input = dir.path().join("mixed.csv");
    std::fs::write(&input, lines.join("\n") + "\n").expect("write input");

    let out = dir.path().join("rated.csv");
    let run = rate(&[
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--model",
        committed_model().to_str().unwrap(),
        "--json",
    ]);
    let rejects = dir.path().join("rated.csv.rejects.csv");
    assert_eq!(reject_rows(&rejects), expected, "every bad row, by line");
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    assert_eq!(summary["rejected"], 12);
    assert_eq!(summary["rejects"], rejects.to_str().unwrap());
    let by_reason = summary["rejected_by_reason"]
        .as_object()
        .expect("by reason");
    assert_eq!(by_reason["illegal_move"], 4);
    assert_eq!(
        by_reason.values().filter_map(|n| n.as_u64()).sum::<u64>(),
        12
    );
    assert_eq!(summary["written"], 3);
    let rated = read_puzzles(&out).expect("read rated");
    let ids: Vec<&str> = rated.iter().map(|p| p.id.as_str()).collect();
    let good_ids: Vec<&str> = good.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, good_ids);
    assert!(
        rated
            .iter()
            .all(|p| p.get("RatingSource") == Some("estimated"))
    );
}

/// A PuzzleId seen earlier in the file is refused and named with the line
/// of the first, which is kept (as `ingest puzzles` keeps it). Before,
/// both rows were rated and written under one id.
#[test]
fn a_repeated_puzzle_id_is_rejected_naming_its_first_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut puzzles: Vec<Puzzle> = puzzles_to_rate()[5..7].to_vec();
    let first = puzzles[0].clone();
    let mut other = puzzles[1].clone();
    other.id = first.id.clone();
    puzzles[1] = other;
    assert_ne!(puzzles[0].fen, puzzles[1].fen, "two puzzles under one id");
    let input = dir.path().join("pool.csv");
    write_puzzles(&input, &puzzles).expect("write input");
    let out = dir.path().join("rated.csv");
    // Both keep their Lichess rating: no model is needed.
    let run = rate(&[
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    let rated = read_puzzles(&out).expect("read rated");
    assert_eq!(rated.len(), 1, "one puzzle per id");
    assert_eq!(
        (&rated[0].id, &rated[0].fen),
        (&first.id, &first.fen),
        "the first is kept"
    );
    let rejects = dir.path().join("rated.csv.rejects.csv");
    assert_eq!(
        reject_rows(&rejects),
        [(3, first.id.clone(), "duplicate_id".to_string())]
    );
    let text = std::fs::read_to_string(&rejects).expect("read rejects");
    assert!(text.contains("appeared on line 2"), "{text}");
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    assert_eq!(summary["rejected_by_reason"]["duplicate_id"], 1);
}

/// A line far longer than any the model was fitted on (the committed
/// model's sample holds lines up to 14 solver moves): 100 solver moves of knights
/// going out and back from the start, every move legal. It is rated, and
/// flagged `RatingFlag` `beyond_model_lengths` where a row of a length
/// the model knows is not; the summary counts it. Before, it took a
/// rating like any other without a word.
#[test]
fn a_line_beyond_the_models_lengths_is_rated_and_flagged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"].repeat(50).join(" ");
    let normal = &puzzles_to_rate()[0];
    let text = format!(
        "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n\
         {}\n{}\n",
        unrated_row(&normal.id, &normal.fen.to_string(), &normal.moves_text()),
        unrated_row("knights100", START, &shuffle),
    );
    let input = dir.path().join("long.csv");
    std::fs::write(&input, text).expect("write input");
    let out = dir.path().join("rated.csv");
    let run = rate(&[
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--model",
        committed_model().to_str().unwrap(),
        "--json",
    ]);
    let rated = read_puzzles(&out).expect("read rated");
    assert_eq!(rated.len(), 2, "both are rated");
    let long = &rated[1];
    assert_eq!(long.solver_moves(), 100);
    let rating = long.rating.expect("the long line is rated");
    assert!((400..=3300).contains(&rating), "{rating}");
    assert_eq!(long.get("RatingFlag"), Some("beyond_model_lengths"));
    assert_eq!(long.get("RatingSource"), Some("estimated"));
    assert_eq!(
        rated[0].get("RatingFlag"),
        Some(""),
        "a line the model knows"
    );
    assert!(rated[0].rating.is_some());
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    assert_eq!(summary["beyond_model_lengths"], 1);
    // The committed model records the longest line of its sample.
    assert_eq!(summary["longest_fitted_line"], 14);
    assert_eq!(summary["rejected"], 0);
}

#[test]
fn unrated_input_without_a_model_is_a_user_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("mined.csv");
    write_puzzles(&input, &puzzles_to_rate()[..1]).expect("write input");
    let output = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["rate", input.to_str().unwrap(), "-o"])
        .arg(dir.path().join("out.csv"))
        .output()
        .expect("run puzzleforge");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--model"));
}

/// The held-out folds never split a source game: a puzzle and its
/// single-move proxy, and two puzzles cut from one game, share a fold.
#[test]
fn calibration_folds_are_grouped_by_source_game() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &tiny_config());
    let mut rows = calibration_rows();
    // Two more puzzles of the first puzzle's game.
    for (k, donor) in [1usize, 9].into_iter().enumerate() {
        let mut twin = rows[donor].clone();
        twin.id = format!("{}twin{k}", rows[0].id);
        twin.game_url = rows[0].game_url.clone();
        rows.push(twin);
    }
    let calibration = dir.path().join("lichess.csv");
    write_puzzles(&calibration, &rows).expect("write calibration rows");
    let features = dir.path().join("features.csv");
    let input = dir.path().join("mined.csv");
    write_puzzles(&input, &puzzles_to_rate()[..1]).expect("write input");
    rate(&[
        input.to_str().unwrap(),
        "-o",
        dir.path().join("rated.csv").to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--calibrate",
        calibration.to_str().unwrap(),
        "--features-out",
        features.to_str().unwrap(),
    ]);
    let mut reader = csv::Reader::from_path(&features).expect("features CSV");
    let mut fold_of = std::collections::HashMap::new();
    let mut proxies = Vec::new();
    for record in reader.records() {
        let record = record.expect("a features row");
        let (id, proxy, fold) = (&record[0], &record[3], &record[4]);
        if proxy == "true" {
            proxies.push((id.to_string(), fold.to_string()));
        } else {
            fold_of.insert(id.to_string(), fold.to_string());
        }
    }
    assert_eq!(fold_of.len(), rows.len());
    assert_eq!(proxies.len(), 16 + 1, "the two-move twin adds a proxy too");
    let folds: std::collections::HashSet<&String> = fold_of.values().collect();
    assert_eq!(folds.len(), 3, "every fold is used");
    for (proxy, fold) in &proxies {
        let parent = proxy.strip_suffix("~first").expect("proxy id");
        assert_eq!(&fold_of[parent], fold, "{proxy} sits with {parent}");
    }
    for k in 0..2 {
        assert_eq!(
            fold_of[&format!("{}twin{k}", rows[0].id)],
            fold_of[&rows[0].id],
            "puzzles of one game share a fold"
        );
    }
}

/// Reads a `--features-out` file: its header and rows of numbers.
fn read_features(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).expect("features CSV");
    let header = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.expect("a row").iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// A held-out figure of the calibration summary.
fn figure(summary: &serde_json::Value, group: &str, key: &str) -> f64 {
    summary["calibration"]["figures"]["held_out"]
        .as_array()
        .expect("held-out figures")
        .iter()
        .find(|h| h["group"] == group)
        .and_then(|h| h[key].as_f64())
        .unwrap_or_else(|| panic!("no {key} for {group}"))
}

/// A seeded subset of every rated file: the features are finite, the
/// held-out figures clear floors set for a subset this small, and fitting
/// the model again, from the cached features and on one thread, gives
/// the same bytes.
#[test]
fn calibration_on_a_seeded_subset_is_sound_and_deterministic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &RateConfig {
            calibrate_max_rows: 200,
            ..tiny_config()
        },
    );
    let input = dir.path().join("mined.csv");
    write_puzzles(&input, &puzzles_to_rate()[..2]).expect("write input");
    let features = dir.path().join("features.csv");
    let store = dir.path().join("store");
    let calibrate = |model: &Path, threads: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
            .env("RAYON_NUM_THREADS", threads)
            .arg("rate")
            .arg(&input)
            .arg("-o")
            .arg(dir.path().join("rated.csv"))
            .arg("--config")
            .arg(&config)
            .args(
                [
                    "lichess_puzzles_rated_4236.csv",
                    "lichess_db_puzzle_subset_1499.csv",
                ]
                .iter()
                .flat_map(|f| [std::ffi::OsString::from("--calibrate"), data(f).into()]),
            )
            .arg("--calibrate")
            .arg(data("apo_puzzle_train.csv"))
            .arg("--features-out")
            .arg(&features)
            .arg("--features")
            .arg(&store)
            .arg("--save-model")
            .arg(model)
            .args(["--learning-curve", "30", "--json"])
            .output()
            .expect("run puzzleforge");
        assert!(
            output.status.success(),
            "calibration failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&output.stdout).expect("JSON summary")
    };
    let first_model = dir.path().join("model-1.json");
    let summary = calibrate(&first_model, "2");
    assert_eq!(summary["calibration"]["rows"], 200);
    assert_eq!(summary["calibration"]["cached_rows"], 0);

    let (header, rows) = read_features(&features);
    assert_eq!(header[5..], feature_names()[..]);
    assert_eq!(
        rows.len(),
        200 + summary["calibration"]["proxy_rows"].as_u64().unwrap() as usize
    );
    for row in &rows {
        for (name, value) in header[5..].iter().zip(&row[5..]) {
            let value: f64 = value.parse().expect("a number");
            assert!(value.is_finite(), "{}: {name} = {value}", row[0]);
        }
    }

    // The learning curve: 30 puzzles of folds 1 and 2, then all of them
    // (the out-of-fold output itself), each scored on fold 0.
    let curve = summary["calibration"]["learning_curve"]
        .as_array()
        .expect("a learning curve");
    assert_eq!(curve.len(), 2, "{curve:?}");
    assert_eq!(curve[0]["rows"], 30);
    let everything = curve[1]["rows"].as_u64().expect("rows");
    assert!((31..200).contains(&everything), "{everything}");
    assert!(
        curve
            .iter()
            .all(|p| p["rmse"].as_f64().is_some_and(f64::is_finite))
    );

    // Floors for 200 puzzles and small trees: far below what the full
    // calibration measures, far above chance.
    let all = figure(&summary, "all", "spearman");
    assert!(all >= 0.5, "held-out Spearman {all}");
    let rmse = figure(&summary, "all", "rmse");
    assert!(rmse <= 600.0, "held-out RMSE {rmse}");
    let within = figure(&summary, "all", "within_deviation");
    assert!(
        (0.45..=0.9).contains(&within),
        "{within} within one deviation"
    );
    let proxies = figure(&summary, "1 proxy", "spearman");
    assert!(proxies >= 0.3, "proxies' held-out Spearman {proxies}");

    let second_model = dir.path().join("model-2.json");
    let again = calibrate(&second_model, "1");
    assert_eq!(again["calibration"]["cached_rows"], rows.len());
    assert_eq!(
        again["calibration"]["figures"],
        summary["calibration"]["figures"]
    );
    let bytes = |p: &Path| std::fs::read(p).expect("read model");
    assert!(
        bytes(&first_model) == bytes(&second_model),
        "the model's bytes depend on the thread count or on the cache"
    );
    RatingModel::load(&first_model).expect("the model loads");
}

/// The part files of the one feature version in a store.
fn store_parts(store: &Path) -> Vec<PathBuf> {
    let versions: Vec<PathBuf> = std::fs::read_dir(store)
        .expect("the store")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(versions.len(), 1, "one feature version: {versions:?}");
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&versions[0])
        .expect("the version folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".csv.zst"))
        .collect();
    parts.sort();
    parts
}

/// The feature store: three shards fill one store; a fit on the stored
/// rows computes nothing and writes the same model bytes as a fit that
/// computed every row itself; a lost part is computed again, alone, to the
/// same bytes.
#[test]
fn feature_store_is_shardable_resumable_and_rebuilds_the_same_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &tiny_config());
    let calibration = dir.path().join("lichess.csv");
    write_puzzles(&calibration, &calibration_rows()).expect("write calibration rows");
    let store = dir.path().join("store");
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "--calibrate",
            calibration.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_slice(&rate(&args).stdout).expect("JSON summary")
    };
    let store_arg = store.to_str().unwrap();
    let mut computed_by_shard = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        let summary = run(&["--features", store_arg, "--shard", shard]);
        assert!(summary["calibration"].is_null(), "a shard fits nothing");
        computed_by_shard.push(summary["features"]["computed"].as_u64().expect("computed"));
    }
    let rows = run(&["--features", store_arg, "--features-only"])["features"].clone();
    assert_eq!(rows["computed"], 0, "the shards left nothing: {rows}");
    assert_eq!(rows["missing"], 0);
    let total = rows["rows"].as_u64().expect("rows");
    assert_eq!(computed_by_shard.iter().sum::<u64>(), total);
    assert!(total > 24, "the 24 puzzles and their proxies");
    let parts = store_parts(&store);
    assert_eq!(parts.len(), 3, "one part a shard");

    let from_store = dir.path().join("from-store.json");
    let refit = run(&[
        "--features",
        store_arg,
        "--stored-only",
        "--save-model",
        from_store.to_str().unwrap(),
    ]);
    assert_eq!(refit["features"]["computed"], 0);
    assert_eq!(refit["calibration"]["cached_rows"], total);

    let fresh_store = dir.path().join("fresh");
    let computed_now = dir.path().join("computed.json");
    let fresh = run(&[
        "--features",
        fresh_store.to_str().unwrap(),
        "--save-model",
        computed_now.to_str().unwrap(),
    ]);
    assert_eq!(fresh["features"]["computed"], total);
    let bytes = |p: &Path| std::fs::read(p).expect("read");
    assert!(
        bytes(&from_store) == bytes(&computed_now),
        "the model rebuilt from the store differs from the one fitted as its rows were computed"
    );

    // A lost part (an interrupted copy): only its rows are computed again.
    let lost = bytes(&parts[1]);
    std::fs::remove_file(&parts[1]).expect("remove a part");
    let resumed = run(&["--features", store_arg, "--features-only"]);
    let again = resumed["features"]["computed"].as_u64().expect("computed");
    assert!(
        computed_by_shard.contains(&again) && again > 0,
        "{again} rows computed again, the shards computed {computed_by_shard:?}"
    );
    let parts_after = store_parts(&store);
    assert_eq!(
        parts_after, parts,
        "the part is written again under its name"
    );
    assert!(bytes(&parts[1]) == lost, "to the same bytes");
}

/// `rate --evaluate`: the committed model rates real rated Lichess puzzles
/// as if unrated, and the report holds the held-out figures' shape; a
/// file without a rated row is refused by name.
#[test]
fn evaluate_scores_the_committed_model_on_rated_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rated = dir.path().join("rated.csv");
    let rows = read_puzzles(&data("lichess_puzzles_rated_4236.csv")).expect("read rated rows");
    write_puzzles(&rated, &rows[..300]).expect("write rated rows");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json");
    let run = rate(&[
        "--evaluate",
        rated.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    let evaluation = &summary["evaluations"][0];
    assert_eq!(evaluation["rows"], 300);
    let all = &evaluation["figures"]["held_out"][0];
    assert_eq!(all["group"], "all");
    // The committed model on 300 real puzzles it never saw: it ranks them
    // (chance is 0) and its deviations cover about two thirds.
    let rho = all["spearman"].as_f64().expect("spearman");
    assert!(rho > 0.6, "Spearman {rho}");
    let within = all["within_deviation"].as_f64().expect("within");
    assert!((0.5..=0.85).contains(&within), "{within}");
    assert!(evaluation["cpu_seconds_per_puzzle"].as_f64().expect("cpu") > 0.0);

    let unrated = dir.path().join("unrated.csv");
    write_puzzles(&unrated, &puzzles_to_rate()[..3]).expect("write unrated rows");
    let output = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["rate", "--evaluate"])
        .arg(&unrated)
        .arg("--model")
        .arg(&model)
        .output()
        .expect("run puzzleforge");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unrated.csv") && stderr.contains("no puzzle with a Lichess rating"),
        "{stderr}"
    );
}

//! `puzzleforge release` on the real APO training file, through the binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use puzzleforge::chess::derive::{rating_bin_edges as rating_bin, rating_bin_label};
use puzzleforge::chess::record::{Puzzle, read_puzzles, write_puzzles};
use puzzleforge::stages::release::cells::ReleaseConfig;

const APO: &str = "tests/data/apo_puzzle_train.csv";

use crate::common::puzzleforge_here as puzzleforge;

fn split_ok(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["release", "--json"];
    all.extend_from_slice(args);
    let out = puzzleforge(&all);
    assert!(
        out.status.success(),
        "release failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON summary")
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every file under `dir`, relative path -> bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// (RatingBin recomputed from Rating, solver moves from Moves, Mate) per row.
fn cells_of(puzzles: &[Puzzle]) -> BTreeMap<(i32, usize, String), usize> {
    let mut cells = BTreeMap::new();
    for p in puzzles {
        let (lo, _) = rating_bin(p.rating.unwrap(), 100);
        let length = p.moves.len() / 2;
        *cells
            .entry((lo, length, p.get("Mate").unwrap().to_string()))
            .or_insert(0) += 1;
    }
    cells
}

#[test]
fn bins_are_right_closed_like_the_apo_file() {
    let puzzles = read_puzzles(Path::new(APO)).unwrap();
    assert_eq!(puzzles.len(), 559);
    for p in &puzzles {
        let (lo, hi) = rating_bin(p.rating.unwrap(), 100);
        assert_eq!(
            Some(rating_bin_label(lo, hi).as_str()),
            p.get("RatingBin"),
            "{}",
            p.id
        );
    }
    assert_eq!(rating_bin(2000, 100), (1900, 2000));
    assert_eq!(rating_bin(2001, 200), (2000, 2200));
}

#[test]
fn paper_quotas_fill_every_cell_exactly_and_are_reproducible() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("a/release");
    let summary = split_ok(&[
        APO,
        "-o",
        s(&first),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--no-release-exclusion",
    ]);
    assert_eq!(summary["cells"], 112);
    assert_eq!(summary["unfilled_cells"], 0);
    let train = read_puzzles(&first.join("train.csv")).unwrap();
    let test = read_puzzles(&first.join("test.csv")).unwrap();
    assert_eq!((train.len(), test.len()), (112, 112));
    for split in [&train, &test] {
        let cells = cells_of(split);
        assert_eq!(cells.len(), 112);
        assert!(cells.values().all(|&n| n == 1), "{cells:?}");
        // The paper's bands: 400-2000 with 1-2 moves, 2000-2800 with 3-5.
        for &(lo, length, _) in cells.keys() {
            assert!(
                (400..2000).contains(&lo) && (1..=2).contains(&length)
                    || (2000..2800).contains(&lo) && (3..=5).contains(&length),
                "{lo} {length}"
            );
        }
    }
    // JSON Lines hold the same rows.
    let train_jsonl = read_puzzles(&first.join("train.jsonl")).unwrap();
    assert_eq!(train_jsonl, train);
    let m = manifest(&first);
    assert_eq!(m["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["cells"].as_array().unwrap().len(), 112);
    for name in [
        "train.csv",
        "test.csv",
        "train.jsonl",
        "test.jsonl",
        "README.md",
    ] {
        let hash = puzzleforge::core::fileio::sha256_file(&first.join(name)).unwrap();
        assert_eq!(m["outputs"][name], hash.as_str(), "{name}");
    }
    let card = std::fs::read_to_string(first.join("README.md")).unwrap();
    assert!(card.starts_with("---\n"));
    assert!(card.contains("license: cc0-1.0"));
    // The typed JSON Lines files are the dataset the card declares.
    assert!(card.contains("- split: test\n    path: test.jsonl"));
    for picture in puzzleforge::stages::release::plots::REPORT_PICTURES {
        let svg = std::fs::read_to_string(first.join("report").join(picture.1)).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("<rect"),
            "{}",
            picture.1
        );
    }

    // Same seed, same inputs: the same bytes in every file.
    let again = root.path().join("b/release");
    split_ok(&[
        APO,
        "-o",
        s(&again),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--no-release-exclusion",
    ]);
    let (one, two) = (files(&first), files(&again));
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        two.keys().collect::<Vec<_>>()
    );
    assert!(one.len() >= 10, "{:?}", one.keys());
    for (name, bytes) in &one {
        assert!(
            two[name] == *bytes,
            "{} differs between runs",
            name.display()
        );
    }

    // Another seed draws other puzzles.
    let other = root.path().join("c/release");
    split_ok(&[
        APO,
        "-o",
        s(&other),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--seed",
        "7",
        "--no-release-exclusion",
    ]);
    assert_ne!(
        std::fs::read(first.join("train.csv")).unwrap(),
        std::fs::read(other.join("train.csv")).unwrap()
    );
}

#[test]
fn unfillable_cells_are_reported_and_strict_exits_2() {
    let root = tempfile::tempdir().unwrap();
    // The APO file has 5 puzzles per cell except one with 4.
    let out = root.path().join("r/release");
    let summary = split_ok(&[
        APO,
        "-o",
        s(&out),
        "--train-per-cell",
        "3",
        "--test-per-cell",
        "2",
    ]);
    assert_eq!(summary["unfilled_cells"], 1);
    let m = manifest(&out);
    let unfilled = m["unfilled"].as_array().unwrap();
    assert_eq!(unfilled.len(), 1);
    assert_eq!(unfilled[0]["rating_bin"], "(400, 500]");
    assert_eq!(unfilled[0]["wanted"], 5);
    assert_eq!(unfilled[0]["found"], 4);
    let train = read_puzzles(&out.join("train.csv")).unwrap();
    let test = read_puzzles(&out.join("test.csv")).unwrap();
    assert_eq!(train.len() + test.len(), 111 * 5 + 4);

    let strict = root.path().join("s/release");
    let result = puzzleforge(&[
        "release",
        APO,
        "-o",
        s(&strict),
        "--train-per-cell",
        "3",
        "--test-per-cell",
        "2",
        "--strict",
        "--no-release-exclusion",
    ]);
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("(400, 500]"), "{stderr}");
    assert!(!strict.join("train.csv").exists());
}

#[test]
fn no_source_game_lands_on_both_sides() {
    let root = tempfile::tempdir().unwrap();
    // Real APO rows regrouped so that each game has puzzles in many cells.
    let mut puzzles = read_puzzles(Path::new(APO)).unwrap();
    for (i, p) in puzzles.iter_mut().enumerate() {
        p.set("GameId", format!("game{:03}", i % 97));
    }
    let pool = root.path().join("grouped.csv");
    write_puzzles(&pool, &puzzles).unwrap();
    let out = root.path().join("g/release");
    split_ok(&[
        s(&pool),
        "-o",
        s(&out),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
    ]);
    let train = read_puzzles(&out.join("train.csv")).unwrap();
    let test = read_puzzles(&out.join("test.csv")).unwrap();
    assert!(
        train.len() > 50 && test.len() > 50,
        "{} {}",
        train.len(),
        test.len()
    );
    let train_games: BTreeSet<String> = train.iter().filter_map(Puzzle::game_id).collect();
    let test_games: BTreeSet<String> = test.iter().filter_map(Puzzle::game_id).collect();
    assert_eq!(train_games.len() + test_games.len(), {
        let mut all = train_games.clone();
        all.extend(test_games.iter().cloned());
        all.len()
    });
    assert!(train_games.is_disjoint(&test_games));
}

#[test]
fn an_earlier_release_is_excluded() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("output/one/release");
    split_ok(&[
        APO,
        "-o",
        s(&first),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
    ]);
    // The second release finds the first under the folder it is told.
    let second = root.path().join("output/two/release");
    let summary = split_ok(&[
        APO,
        "-o",
        s(&second),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--exclude-releases-under",
        s(&root.path().join("output")),
    ]);
    assert_eq!(summary["excluded"], 224);
    let ids = |dir: &Path| -> BTreeSet<String> {
        ["train.csv", "test.csv"]
            .iter()
            .flat_map(|f| read_puzzles(&dir.join(f)).unwrap())
            .map(|p| p.id)
            .collect()
    };
    let (a, b) = (ids(&first), ids(&second));
    assert_eq!(a.len(), 224);
    assert_eq!(b.len(), 224);
    assert!(a.is_disjoint(&b));
    let m = manifest(&second);
    assert_eq!(m["exclusions"]["removed"], 224);
    let files = m["exclusions"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert!(files[0]["path"].as_str().unwrap().ends_with("train.csv"));
    assert_eq!(files[0]["removed"], 112);

    // An explicit --exclude of a JSON Lines file works the same way, and a
    // third release can exclude both earlier ones.
    let third = root.path().join("elsewhere/three/release");
    let summary = split_ok(&[
        APO,
        "-o",
        s(&third),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--exclude",
        s(&first.join("train.jsonl")),
        s(&first.join("test.jsonl")),
        "--exclude-releases-under",
        s(&root.path().join("output/two")),
    ]);
    assert_eq!(summary["excluded"], 448);
    let c = ids(&third);
    assert!(c.is_disjoint(&a) && c.is_disjoint(&b));
}

#[test]
fn tiers_and_pipeline_toml() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("pipeline.toml");
    std::fs::write(
        &config,
        r#"
[other]
anything = 1

[release]
seed = 3
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]
mate = "both"

[[release.bands]]
ratings = [2000, 2800]
lengths = [3, 5]

[[release.cells]]
bin = [1900, 2000]
length = 2
mate = true
train = 2
test = 2

[release.tiers.hard]
min_rating = 2000
min_solver_moves = 3

[release.tiers.mates]
mate = "mate"
themes_any = ["mateIn2", "mateIn3"]
bands = [{ ratings = [400, 2800], lengths = [2, 3], mate = "mate" }]
"#,
    )
    .unwrap();
    let base = root.path().join("base/release");
    let summary = split_ok(&[APO, "-o", s(&base), "--config", s(&config)]);
    assert_eq!(summary["train"], 113);
    assert_eq!(manifest(&base)["seed"], 3);

    let hard = root.path().join("hard/release");
    let summary = split_ok(&[
        APO,
        "-o",
        s(&hard),
        "--config",
        s(&config),
        "--tier",
        "hard",
        "--no-release-exclusion",
    ]);
    assert_eq!(summary["cells"], 48);
    assert_eq!(summary["unfilled_cells"], 0);
    for p in read_puzzles(&hard.join("test.csv")).unwrap() {
        assert!(
            p.rating.unwrap() >= 2000 && p.moves.len() / 2 >= 3,
            "{}",
            p.id
        );
    }

    let mates = root.path().join("mates/release");
    split_ok(&[
        APO,
        "-o",
        s(&mates),
        "--config",
        s(&config),
        "--tier",
        "mates",
        "--no-release-exclusion",
    ]);
    let test = read_puzzles(&mates.join("test.csv")).unwrap();
    assert!(!test.is_empty());
    assert!(test.iter().all(|p| p.get("Mate") == Some("True")));

    // Into a new folder: a finished release (`mates`) takes no second split.
    let fresh = root.path().join("fresh");
    let unknown_tier = puzzleforge(&["release", APO, "-o", s(&fresh), "--tier", "nope"]);
    assert_eq!(unknown_tier.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown_tier.stderr).contains("nope"));

    std::fs::write(&config, "[release]\nbin_wdth = 100\n").unwrap();
    let typo = puzzleforge(&["release", APO, "-o", s(&fresh), "--config", s(&config)]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&typo.stderr).contains("bin_wdth"));

    // The default config is the paper's release.
    let paper = ReleaseConfig::default().quota_table(None).unwrap();
    assert_eq!(paper.len(), 112);
    assert!(paper.values().all(|q| q.train == 5 && q.test == 5));
}

#[test]
fn bad_and_unrated_rows_are_skipped_with_counts() {
    let root = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(APO).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // First row: rating removed; second: rating not a number; fourth: an
    // illegal opponent move.
    let blank_rating = |line: &str, value: &str| {
        let mut cells: Vec<String> = line.splitn(5, ',').map(str::to_string).collect();
        cells[3] = value.to_string();
        cells.join(",")
    };
    lines[1] = blank_rating(&lines[1], "");
    lines[2] = blank_rating(&lines[2], "12x");
    assert!(lines[4].starts_with("e5nms,"));
    lines[4] = lines[4].replacen(",h3f3 f6f3,", ",h3a8 f6f3,", 1);
    let pool = root.path().join("dirty.csv");
    std::fs::write(&pool, lines.join("\n")).unwrap();
    let out = root.path().join("d/release");
    let summary = split_ok(&[
        s(&pool),
        "-o",
        s(&out),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
    ]);
    assert_eq!(summary["skipped"]["no_rating"], 1);
    assert_eq!(summary["skipped"]["bad_integer"], 1);
    assert_eq!(summary["skipped"]["bad_position"], 1);
    assert_eq!(summary["train"], 112);
}

#[test]
fn engine_and_verify_figures_go_into_the_manifest() {
    let root = tempfile::tempdir().unwrap();
    let verify = root.path().join("verify.json");
    std::fs::write(&verify, r#"{"checked": 224, "unique_solution": 0.97}"#).unwrap();
    let out = root.path().join("v/release");
    split_ok(&[
        APO,
        "-o",
        s(&out),
        "--train-per-cell",
        "1",
        "--test-per-cell",
        "1",
        "--engine-id",
        "Stockfish 15.1",
        "--engine-option",
        "Threads=1",
        "--engine-option",
        "Hash=16",
        "--verify",
        s(&verify),
    ]);
    let m = manifest(&out);
    assert_eq!(m["engine"]["id"], "Stockfish 15.1");
    assert_eq!(m["engine"]["options"]["Hash"], "16");
    assert_eq!(m["verify"]["figures"]["checked"], 224);
    assert_eq!(
        m["verify"]["sha256"],
        puzzleforge::core::fileio::sha256_file(&verify)
            .unwrap()
            .as_str()
    );
    let bad = puzzleforge(&["release", APO, "-o", s(&out), "--engine-option", "Threads"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `split` excludes only what it is told: a second release written beside
/// a first one keeps its puzzles; a release that an exclusion empties is an
/// error naming the exclusion, not an empty release.
#[test]
fn split_excludes_only_what_it_is_told_and_an_emptied_release_is_an_error() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("a/r1");
    let quota = ["--train-per-cell", "1", "--test-per-cell", "1"];
    let mut args = vec![APO, "-o", s(&first)];
    args.extend(quota);
    split_ok(&args);
    let second = root.path().join("a/r2");
    let mut args = vec![APO, "-o", s(&second)];
    args.extend(quota);
    let summary = split_ok(&args);
    assert_eq!(summary["excluded"], 0);
    assert_eq!(summary["train"], 112);
    assert_eq!(
        std::fs::read(first.join("test.csv")).unwrap(),
        std::fs::read(second.join("test.csv")).unwrap()
    );

    // Excluding the APO file itself leaves nothing to draw.
    let third = root.path().join("a/r3");
    let mut args = vec!["release", APO, "-o", s(&third), "--exclude", APO];
    args.extend(quota);
    let output = puzzleforge(&args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("min_puzzles"), "{stderr}");
    assert!(stderr.contains(&format!("{APO} removed")), "{stderr}");
    assert!(!third.join("manifest.json").exists());
}

/// `split --drop-unverified` reads the verdict columns in both spellings:
/// `True`/`False` (today's) and `pass`/`fail`/`none` (files written before
/// the verdicts were booleans). The release writes them as booleans:
/// `True`/`False` or empty in CSV, `true`/`false`/`null` in JSON Lines,
/// `dtype: bool` in the card.
#[test]
fn verdicts_of_either_spelling_are_read_and_released_as_booleans() {
    let root = tempfile::tempdir().unwrap();
    let mut puzzles = read_puzzles(Path::new(APO)).unwrap();
    // (VerifyDeeper, VerifySecond, Verified) by row, cycling.
    let spellings = [
        ("pass", "pass", "pass"),
        ("pass", "fail", "fail"),
        ("pass", "none", "pass"),
        ("True", "True", "True"),
        ("True", "False", "False"),
        ("True", "", "True"),
    ];
    for (i, puzzle) in puzzles.iter_mut().enumerate() {
        let (deeper, second, verified) = spellings[i % spellings.len()];
        puzzle.set("VerifyDeeper", deeper);
        puzzle.set("VerifySecond", second);
        puzzle.set("Verified", verified);
    }
    let failing = puzzles
        .iter()
        .filter(|p| matches!(p.get("Verified"), Some("fail" | "False")))
        .count();
    let pool = root.path().join("verified.csv");
    write_puzzles(&pool, &puzzles).unwrap();
    let out = root.path().join("v/release");
    let summary = split_ok(&[
        s(&pool),
        "-o",
        s(&out),
        "--train-per-cell",
        "5",
        "--test-per-cell",
        "5",
        "--drop-unverified",
    ]);
    assert_eq!(
        summary["skipped"]["failed_verification"].as_u64(),
        Some(failing as u64),
        "{summary}"
    );
    let mut released = read_puzzles(&out.join("train.csv")).unwrap();
    released.extend(read_puzzles(&out.join("test.csv")).unwrap());
    assert_eq!(released.len(), puzzles.len() - failing);
    let mut second_cells = BTreeSet::new();
    for puzzle in &released {
        assert_eq!(puzzle.get("Verified"), Some("True"), "{puzzle:?}");
        assert_eq!(puzzle.get("VerifyDeeper"), Some("True"), "{puzzle:?}");
        second_cells.insert(puzzle.get("VerifySecond").unwrap().to_string());
    }
    // "none" and an empty cell both mean the check did not run.
    assert_eq!(
        second_cells,
        BTreeSet::from(["True".to_string(), String::new()])
    );
    let mut nulls = 0;
    for split in ["train", "test"] {
        let text = std::fs::read_to_string(out.join(format!("{split}.jsonl"))).unwrap();
        for line in text.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(row["Verified"], true, "{row}");
            assert_eq!(row["VerifyDeeper"], true, "{row}");
            match &row["VerifySecond"] {
                serde_json::Value::Null => nulls += 1,
                value => assert_eq!(value, true, "{row}"),
            }
        }
    }
    assert!(nulls > 0);
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    for column in ["VerifyDeeper", "VerifySecond", "Verified"] {
        assert!(
            card.contains(&format!("  - name: {column}\n    dtype: bool\n")),
            "{column}: {card}"
        );
    }
}

/// The stage's former name still works: `puzzleforge split` with a
/// `[split]` section draws the same bytes as `puzzleforge release` with
/// `[release]`, and both sections at once is an error naming them.
#[test]
fn the_former_name_split_draws_the_same_release() {
    let root = tempfile::tempdir().unwrap();
    let section = "bin_width = 200\ntrain_per_cell = 1\ntest_per_cell = 1\n";
    let config_new = root.path().join("new.toml");
    let config_old = root.path().join("old.toml");
    std::fs::write(&config_new, format!("[release]\n{section}")).unwrap();
    std::fs::write(&config_old, format!("[split]\n{section}")).unwrap();
    let new = root.path().join("a/new");
    let old = root.path().join("b/old");
    split_ok(&[APO, "-o", s(&new), "--config", s(&config_new)]);
    let out = puzzleforge(&[
        "split",
        "--json",
        APO,
        "-o",
        s(&old),
        "--config",
        s(&config_old),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (new_files, old_files) = (files(&new), files(&old));
    assert_eq!(
        new_files.keys().collect::<Vec<_>>(),
        old_files.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &new_files {
        if name != Path::new("manifest.json") && name != Path::new("README.md") {
            assert!(bytes == &old_files[name], "{} differs", name.display());
        }
    }
    assert_eq!(manifest(&new)["config"], manifest(&old)["config"]);
    assert_eq!(manifest(&new)["config"]["bin_width"], 200);

    let both = root.path().join("both.toml");
    std::fs::write(&both, format!("[release]\n{section}[split]\n{section}")).unwrap();
    let refused = puzzleforge(&[
        "release",
        APO,
        "-o",
        s(&root.path().join("c/x")),
        "--config",
        s(&both),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("[release]") && stderr.contains("[split]"),
        "{stderr}"
    );
}

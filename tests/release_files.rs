//! A release and its exports as their tools read them: the Lichess export
//! re-ingests with zero rejects, JSON Lines rows share one key set with
//! typed values, the dataset card declares those types, export metadata is
//! typed and carries the source fields, each export ships the file its tool
//! runs, and `export` writes both splits by default.
//!
//! The release is drawn by the binary from real puzzles: the bundled
//! Lichess sample and the three puzzles the default `run` mined and rated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{puzzleforge_here, summary};

const LICHESS: &str = "tests/data/lichess_db_puzzle_subset_1499.csv";
const GENERATED: &str = "tests/data/generated_rated_puzzles.csv";

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `puzzleforge ARGS --json`, which must succeed.
fn run_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    summary(&puzzleforge_here(&all))
}

/// A release drawn from the Lichess sample and the generated puzzles.
fn release(root: &Path) -> PathBuf {
    let release = root.join("out/r/release");
    run_json(&[
        "release",
        LICHESS,
        GENERATED,
        "-o",
        s(&release),
        "--train-per-cell",
        "2",
        "--test-per-cell",
        "2",
    ]);
    release
}

fn jsonl(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(
            |line| match serde_json::from_str(line).expect("each line is JSON") {
                Value::Object(map) => map,
                other => panic!("{}: not an object: {other}", path.display()),
            },
        )
        .collect()
}

fn csv_header(path: &Path) -> Vec<String> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader.headers().unwrap().iter().map(String::from).collect()
}

fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            header
                .iter()
                .zip(row.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The card's `dataset_info` features: `(name, feature)` with feature as
/// written (`dtype: int64`, `list: string`).
fn card_features(card: &str) -> Vec<(String, String)> {
    let front = card
        .strip_prefix("---\n")
        .and_then(|rest| rest.split("\n---\n").next())
        .expect("the card starts with YAML front matter");
    let info = front
        .split("\ndataset_info:\n  config_name: default\n  features:\n")
        .nth(1)
        .expect("the card declares the default config's features");
    let mut features = Vec::new();
    let mut name = None;
    for line in info.lines() {
        if let Some(n) = line.strip_prefix("  - name: ") {
            name = Some(n.to_string());
        } else if let Some(feature) = line.strip_prefix("    ") {
            let n = name.take().expect("a feature follows its name");
            features.push((n, feature.to_string()));
        } else {
            break;
        }
    }
    features
}

/// True when a JSON value has the declared feature's type (`null` is any
/// scalar's empty value).
fn has_feature_type(value: &Value, feature: &str) -> bool {
    match feature {
        "dtype: string" => value.is_string() || value.is_null(),
        "dtype: int64" => value.is_i64() || value.is_null(),
        "dtype: float64" => value.is_number() || value.is_null(),
        "dtype: bool" => value.is_boolean() || value.is_null(),
        "list: string" => value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string)),
        other => panic!("unknown feature {other:?}"),
    }
}

#[test]
fn lichess_export_reingests_with_zero_rejects_and_says_what_is_generated() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    let out = root.path().join("lichess");
    run_json(&["export", s(&release), "--format", "lichess", "-o", s(&out)]);

    let mut generated = 0;
    for split in ["train", "test"] {
        let file = out.join(format!("{split}.csv"));
        let header = csv_header(&file);
        assert_eq!(
            header[..10],
            puzzleforge::chess::record::LICHESS_COLUMNS.map(String::from)
        );
        assert_eq!(header[10..], ["Source", "RatingSource"]);
        for row in csv_rows(&file) {
            for column in ["Rating", "RatingDeviation", "Popularity", "NbPlays"] {
                assert!(
                    row[column].parse::<i64>().is_ok(),
                    "{split} {}: {column} {:?} is not an integer",
                    row["PuzzleId"],
                    row[column]
                );
            }
            if row["Source"] != "lichess" {
                generated += 1;
                assert_eq!(row["RatingSource"], "estimated", "{row:?}");
                assert_eq!((&*row["Popularity"], &*row["NbPlays"]), ("0", "0"));
            }
        }
        let ingested = root.path().join(format!("ingested-{split}.csv"));
        let report = run_json(&["ingest", "puzzles", s(&file), "-o", s(&ingested)]);
        let rows = csv_rows(&file).len() as u64;
        assert_eq!(report["rows_read"], rows, "{report}");
        assert_eq!(report["rejected"], 0, "{report}");
        assert_eq!(report["written"], rows, "{report}");
    }
    assert!(generated > 0, "the release holds generated puzzles");
}

#[test]
fn release_jsonl_rows_share_the_csv_columns_with_typed_values() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    let header = csv_header(&release.join("train.csv"));
    assert_eq!(header, csv_header(&release.join("test.csv")));
    let mut sources = std::collections::BTreeSet::new();
    for split in ["train", "test"] {
        let rows = jsonl(&release.join(format!("{split}.jsonl")));
        assert!(!rows.is_empty());
        for row in &rows {
            let keys: Vec<&String> = row.keys().collect();
            assert_eq!(keys, header.iter().collect::<Vec<_>>(), "{split} row keys");
            assert!(row["NumMoves"].is_i64(), "{:?}", row["NumMoves"]);
            assert!(row["Rating"].is_i64());
            assert!(row["Popularity"].is_i64() && row["NbPlays"].is_i64());
            assert!(row["Mate"].is_boolean(), "{:?}", row["Mate"]);
            assert!(row["Themes"].is_array() && row["OpeningTags"].is_array());
            assert!(row["Ply"].is_i64() || row["Ply"].is_null());
            assert!(row["Seed"].is_i64() || row["Seed"].is_null());
            sources.insert(row["Source"].as_str().unwrap().to_string());
            if row["Source"] == "selfplay" {
                for column in ["Seed", "WhiteElo", "BestScore", "Nodes", "Ply"] {
                    assert!(row[column].is_i64(), "{column}: {:?}", row[column]);
                }
                assert_eq!(row["RatingSource"], "estimated");
                assert!(row["GameUrl"].is_null(), "an empty cell is null");
            }
        }
    }
    assert!(
        sources.contains("lichess") && sources.len() > 1,
        "{sources:?}"
    );
}

#[test]
fn the_card_declares_the_features_the_files_hold() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    for split in ["train", "test"] {
        let files = format!("  - split: {split}\n    path: {split}.jsonl\n");
        assert!(
            card.contains(&files),
            "the default config lists {split}.jsonl"
        );
    }
    let features = card_features(&card);
    let header = csv_header(&release.join("train.csv"));
    let names: Vec<&String> = features.iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        header.iter().collect::<Vec<_>>(),
        "one feature a column"
    );
    let jsonl_features: BTreeMap<&str, &str> = features
        .iter()
        .map(|(n, f)| (n.as_str(), f.as_str()))
        .collect();
    assert_eq!(jsonl_features["NumMoves"], "dtype: int64");
    assert_eq!(jsonl_features["Mate"], "dtype: bool");
    assert_eq!(jsonl_features["Themes"], "list: string");
    // verify's verdicts are booleans, null where a check did not run.
    for verdict in ["VerifyDeeper", "VerifySecond", "Verified"] {
        assert_eq!(jsonl_features[verdict], "dtype: bool", "{verdict}");
    }
    for split in ["train", "test"] {
        for row in jsonl(&release.join(format!("{split}.jsonl"))) {
            for (name, value) in &row {
                let feature = jsonl_features[name.as_str()];
                assert!(
                    has_feature_type(value, feature),
                    "{split} {name}: {value} is not {feature}"
                );
            }
        }
    }
    // The CSV config reads the same cells: an integer column holds
    // integers or nothing, a bool column True or False.
    for (name, feature) in &features {
        for row in csv_rows(&release.join("test.csv")) {
            let cell = &row[name];
            let fits = match feature.as_str() {
                "dtype: int64" => cell.is_empty() || cell.parse::<i64>().is_ok(),
                "dtype: bool" => cell.is_empty() || cell == "True" || cell == "False",
                _ => true,
            };
            assert!(fits, "csv {name}: {cell:?} is not {feature}");
        }
    }
}

/// The text elements of an SVG written by plotters: (x, text).
fn svg_texts(svg: &str) -> Vec<(i64, String)> {
    svg.split("<text ")
        .skip(1)
        .map(|element| {
            let x = element
                .strip_prefix("x=\"")
                .and_then(|rest| rest.split('"').next())
                .and_then(|x| x.parse().ok())
                .expect("a text element starts with its x");
            let text = element
                .split_once(">\n")
                .and_then(|(_, rest)| rest.split("\n</text>").next())
                .expect("a text element's text")
                .replace("&lt;", "<")
                .replace("&gt;", ">");
            (x, text)
        })
        .collect()
}

/// The cell heat map writes every target cell's count (drawn / wanted,
/// train + test) in the cell, and each rating bin's label once, centred
/// under its column (at the x of that column's counts).
#[test]
fn the_cell_heat_map_writes_counts_under_aligned_labels() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap())
            .unwrap();
    let svg = std::fs::read_to_string(release.join("report/cell_heatmap.svg")).unwrap();
    let texts = svg_texts(&svg);
    let cells = manifest["cells"].as_array().unwrap();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut bins = std::collections::BTreeSet::new();
    for cell in cells {
        let drawn = cell["train"].as_u64().unwrap() + cell["test"].as_u64().unwrap();
        let wanted = cell["wanted_train"].as_u64().unwrap() + cell["wanted_test"].as_u64().unwrap();
        *counts.entry(format!("{drawn}/{wanted}")).or_default() += 1;
        bins.insert(cell["rating_bin"].as_str().unwrap().to_string());
    }
    let mut written: BTreeMap<String, usize> = BTreeMap::new();
    for (_, text) in &texts {
        if text.contains('/') && !text.contains(' ') {
            *written.entry(text.clone()).or_default() += 1;
        }
    }
    assert_eq!(written, counts, "one count per cell");
    let count_columns: std::collections::BTreeSet<i64> = texts
        .iter()
        .filter(|(_, t)| counts.contains_key(t))
        .map(|(x, _)| *x)
        .collect();
    for bin in &bins {
        let at: Vec<i64> = texts
            .iter()
            .filter(|(_, t)| t == bin)
            .map(|(x, _)| *x)
            .collect();
        assert_eq!(at.len(), 1, "{bin} labelled once");
        assert!(
            count_columns.contains(&at[0]),
            "{bin} at x {} not under a column",
            at[0]
        );
    }
}

#[test]
fn export_metadata_is_typed_and_names_the_sources() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    for format in ["inspect", "openai-evals", "dspy"] {
        let out = root.path().join(format);
        run_json(&["export", s(&release), "--format", format, "-o", s(&out)]);
        let mut sources = std::collections::BTreeSet::new();
        for split in ["train", "test"] {
            for record in jsonl(&out.join(format!("{split}.jsonl"))) {
                let meta = match format {
                    "dspy" => Value::Object(record.clone()),
                    _ => record["metadata"].clone(),
                };
                assert!(meta["mate"].is_boolean(), "{format}: {meta}");
                assert!(meta["themes"].is_array(), "{format}: {meta}");
                assert!(meta["rating"].is_i64(), "{format}: {meta}");
                assert!(meta["num_moves"].is_u64(), "{format}: {meta}");
                assert!(meta["position_index"].is_u64(), "{format}: {meta}");
                let source = meta["source"].as_str().expect("source is text");
                let rating_source = meta["rating_source"].as_str().expect("rating_source");
                if source == "lichess" {
                    assert_eq!(rating_source, "lichess");
                } else {
                    assert_eq!(rating_source, "estimated");
                }
                sources.insert(source.to_string());
            }
        }
        assert!(sources.len() > 1, "{format}: {sources:?}");
    }
}

#[test]
fn each_export_ships_the_file_its_tool_runs() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    let expected = [
        ("inspect", "task.py"),
        ("dspy", "dspy_load.py"),
        ("openai-evals", "registry/evals/puzzleforge.yaml"),
    ];
    for (format, tool_file) in expected {
        let out = root.path().join(format);
        let report = run_json(&["export", s(&release), "--format", format, "-o", s(&out)]);
        let files: Vec<&str> = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(files.contains(&tool_file), "{format}: {files:?}");
        let text = std::fs::read_to_string(out.join(tool_file)).unwrap();
        match format {
            "openai-evals" => {
                for split in ["train", "test"] {
                    assert!(text.contains(&format!(
                        "puzzleforge.{split}.v0:\n  class: evals.elsuite.basic.match:Match\n  \
                         args:\n    samples_jsonl: ../../{split}.jsonl\n"
                    )));
                    // evals resolves the relative path under registry/data.
                    let resolved = out
                        .join("registry/data/../..")
                        .join(format!("{split}.jsonl"));
                    assert!(resolved.is_file(), "{}", resolved.display());
                }
                assert!(text.contains("puzzleforge:\n  id: puzzleforge.test.v0\n"));
            }
            _ => {
                assert!(text.contains(r#"SPLITS = ["train", "test"]"#), "{text}");
                assert!(text.contains(r#"f"{split}.jsonl""#), "{text}");
                for placeholder in ["__SPLITS__", "__DEFAULT_SPLIT__", "__SYSTEM_PROMPT__"] {
                    assert!(!text.contains(placeholder), "{placeholder} is filled");
                }
            }
        }
        if format == "inspect" {
            assert!(text.contains("generate()") && text.contains("target.target"));
        }
    }
    // Only the test split: the task names only it.
    let out = root.path().join("inspect-test");
    run_json(&[
        "export",
        s(&release),
        "--format",
        "inspect",
        "--split",
        "test",
        "-o",
        s(&out),
    ]);
    let task = std::fs::read_to_string(out.join("task.py")).unwrap();
    assert!(task.contains(r#"SPLITS = ["test"]"#), "{task}");
    assert!(!out.join("train.jsonl").exists());
}

#[test]
fn export_writes_both_splits_by_default_and_names_formats_as_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let release = release(root.path());
    for format in ["openai-evals", "inspect", "dspy", "lichess"] {
        let out = root.path().join(format);
        let report = run_json(&["export", s(&release), "--format", format, "-o", s(&out)]);
        assert_eq!(report["format"], format, "{report}");
        let splits: Vec<&String> = report["splits"].as_object().unwrap().keys().collect();
        assert_eq!(splits, ["train", "test"], "{format}");
        let ext = if format == "lichess" { "csv" } else { "jsonl" };
        for split in ["train", "test"] {
            assert!(
                out.join(format!("{split}.{ext}")).is_file(),
                "{format} {split}"
            );
        }
    }
}

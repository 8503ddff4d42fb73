//! `puzzleforge run`: stages in order, manifests, skipping unchanged stages,
//! config errors, the release lock.

use std::path::{Path, PathBuf};

use crate::common;
use crate::common::{puzzleforge as run, summary};

use crate::common::{data, puzzle_slice};

/// A small pipeline over the bundled Lichess sample, in `dir`.
fn write_config(dir: &Path, extra_ingest: &str) -> PathBuf {
    let config = format!(
        r#"
[pipeline]
seed = 7
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "ingest_games", "release", "export"]

[sources]
puzzles = ["{puzzles}"]
games = ["{games}"]

[ingest.puzzles]
{extra_ingest}

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[export]
formats = ["dspy", "lichess"]
split = "test"
"#,
        puzzles = data("lichess_db_puzzle_subset_1499.csv").display(),
        games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, config).unwrap();
    path
}

/// Every file under `dir` (hidden ones too) with its bytes.
fn folder_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::files_under(dir, &[])
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

fn skipped(summary: &serde_json::Value) -> Vec<(String, bool)> {
    summary["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap().to_string(),
                s["skipped"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn stages_run_in_order_then_skip_until_inputs_or_config_change() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let first = summary(&run(dir.path(), &["run", "--json"]));
    assert_eq!(
        skipped(&first),
        vec![
            ("ingest_puzzles".into(), false),
            ("ingest_games".into(), false),
            ("release".into(), false),
            ("export".into(), false)
        ]
    );
    let release = dir.path().join("out/r1");
    for stage in ["ingest_puzzles", "ingest_games", "release", "export"] {
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(release.join(stage).join("stage.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["stage"], stage);
        assert!(manifest["fingerprint"]["config"].is_object(), "{stage}");
        assert!(manifest["seconds"].as_f64().is_some(), "{stage}");
        assert!(
            !manifest["outputs"].as_object().unwrap().is_empty(),
            "{stage}"
        );
    }
    let ingest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(release.join("ingest_puzzles/stage.json")).unwrap())
            .unwrap();
    let inputs = ingest["fingerprint"]["inputs"].as_object().unwrap();
    assert_eq!(
        inputs.values().next().unwrap(),
        "4ca7e935cc5f4ba5e6fa8848f7a7641b784112c0092bc2a4a5bb76fce257b100"
    );
    let test_csv = std::fs::read(release.join("release/test.csv")).unwrap();
    // Train and test have equal sizes even where cells are only partly filled.
    let release_counts = &first["stages"][2]["counts"];
    assert!(
        release_counts["train"].as_u64().unwrap() > 0,
        "{release_counts}"
    );
    let (train, test) = (
        release_counts["train"].as_i64().unwrap(),
        release_counts["test"].as_i64().unwrap(),
    );
    assert!((train - test).abs() <= 1, "{release_counts}");

    let second = summary(&run(dir.path(), &["run", "--json"]));
    assert!(skipped(&second).iter().all(|(_, s)| *s), "{second}");

    // A changed filter would change the finished release, so the run
    // stops before it redoes any stage (every file of the release folder
    // stays as it was) unless told to rewrite it, and then redoes ingest
    // and everything downstream.
    write_config(dir.path(), "max_rating = 1500");
    let before = folder_bytes(&release);
    let refused = run(dir.path(), &["run", "--json"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--rewrite-release"), "{stderr}");
    assert!(stderr.contains("ingest_puzzles"), "{stderr}");
    assert!(
        folder_bytes(&release) == before,
        "the refused run changed the release folder"
    );
    let third = summary(&run(dir.path(), &["run", "--json", "--rewrite-release"]));
    assert_eq!(
        skipped(&third),
        vec![
            ("ingest_puzzles".into(), false),
            ("ingest_games".into(), true),
            ("release".into(), false),
            ("export".into(), false)
        ]
    );
    assert_ne!(
        std::fs::read(release.join("release/test.csv")).unwrap(),
        test_csv
    );

    // A damaged output is redone even though nothing else changed.
    std::fs::write(release.join("export/lichess/test.csv"), "torn").unwrap();
    let fourth = summary(&run(dir.path(), &["run", "--json"]));
    assert_eq!(
        skipped(&fourth).last().unwrap(),
        &("export".to_string(), false)
    );
}

/// A second release under the same output folder repeats no puzzle of the
/// first: its manifest names the first release's files and what they
/// removed.
#[test]
fn a_new_release_excludes_the_puzzles_of_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let config = config.to_str().unwrap();
    summary(&run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "first"],
    ));
    summary(&run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "second"],
    ));
    let ids = |release: &str| -> std::collections::BTreeSet<String> {
        ["train.csv", "test.csv"]
            .iter()
            .flat_map(|file| {
                puzzleforge::chess::record::read_puzzles(
                    &dir.path()
                        .join("out")
                        .join(release)
                        .join("release")
                        .join(file),
                )
                .unwrap()
            })
            .map(|p| p.id)
            .collect()
    };
    let (first, second) = (ids("first"), ids("second"));
    assert!(!first.is_empty() && !second.is_empty());
    assert!(
        first.is_disjoint(&second),
        "{:?}",
        first.intersection(&second)
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/second/release/manifest.json")).unwrap(),
    )
    .unwrap();
    let exclusions = &manifest["exclusions"];
    assert_eq!(
        exclusions["removed"].as_u64(),
        Some(first.len() as u64),
        "{exclusions}"
    );
    let files = exclusions["files"].to_string();
    assert!(files.contains("first/release/train.csv"), "{files}");
}

/// A pool the earlier releases have used up: `run` names the releases that
/// emptied it and what a run can do about it (run has no flag that turns
/// the exclusion off, unlike `split`).
#[test]
fn a_pool_earlier_releases_used_up_names_what_run_can_do() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "sample = 2");
    let config = config.to_str().unwrap();
    summary(&run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "first"],
    ));
    let output = run(
        dir.path(),
        &["run", "--json", "--config", config, "--release", "second"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for said in [
        "fewer than release.min_puzzles = 1: the exclusions removed",
        "first/release/",
        "add puzzles to the pool ([sources] puzzles",
        "[generate] enabled = true",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    assert!(!stderr.contains("--exclude-releases-under"), "{stderr}");
}

#[test]
fn same_config_and_seed_give_the_same_bytes() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        write_config(dir.path(), "");
        summary(&run(dir.path(), &["run", "--json"]));
    }
    for file in [
        "release/train.csv",
        "release/test.jsonl",
        "release/manifest.json",
        "export/dspy/test.jsonl",
    ] {
        assert_eq!(
            std::fs::read(a.path().join("out/r1").join(file)).unwrap(),
            std::fs::read(b.path().join("out/r1").join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn unknown_key_and_wrong_type_are_config_errors_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    for (bad, key) in [
        (text.replace("seed = 7", "seed = 7\nseeds = 8"), "seeds"),
        (text.replace("seed = 7", "seed = \"seven\""), "seed"),
        (
            text.replace("train_per_cell = 1", "train_per_cel = 1"),
            "train_per_cel",
        ),
    ] {
        std::fs::write(&config, bad).unwrap();
        let output = run(dir.path(), &["run"]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("pipeline.toml"), "{stderr}");
        assert!(stderr.contains(key), "{stderr}");
    }
}

/// A run holding the OS lock stops a second writer (exit 2, naming the
/// holder); a lock file that no process has locked is free, whatever pid it
/// names, even a live one.
#[test]
fn a_live_lock_stops_a_second_writer_and_a_stale_one_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let release = dir.path().join("out/r1");
    std::fs::create_dir_all(&release).unwrap();
    let held = std::fs::File::create(release.join(".lock")).unwrap();
    held.try_lock().unwrap();
    std::fs::write(release.join(".lock"), "pid 1\nhost elsewhere\n").unwrap();
    let output = run(dir.path(), &["run"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("being written"), "{stderr}");
    assert!(stderr.contains("host elsewhere"), "{stderr}");
    assert!(stderr.contains("stop it"), "{stderr}");
    drop(held);

    // This test process is alive, but holds no lock: the file is free.
    std::fs::write(release.join(".lock"), std::process::id().to_string()).unwrap();
    summary(&run(dir.path(), &["run", "--json"]));
    assert!(!release.join(".lock").exists());
}

/// Simultaneous starts on one release: exactly one takes the lock and the
/// others exit 2, every time. The winner blocks in its self-play stage on
/// an engine that answers the handshake but never a search (a FIFO source
/// once served, and is now refused as bad input, issue 67), so it still
/// holds the lock while the others start; it is then killed, leaving its
/// lock file behind for the next round.
#[test]
fn of_simultaneous_starts_exactly_one_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("silent-engine");
    let script = r#"#!/bin/sh
while read -r line; do
  case "$line" in
    uci) echo 'id name silent'; echo uciok ;;
    isready) echo readyok ;;
    quit) exit 0 ;;
  esac
done
"#;
    std::fs::write(&engine, script).unwrap();
    let mut permissions = std::fs::metadata(&engine).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&engine, permissions).unwrap();
    std::fs::write(
        dir.path().join("pipeline.toml"),
        format!(
            "[pipeline]\noutput_dir = \"out\"\nrelease = \"r\"\nstages = [\"selfplay\"]\n\
             [engine]\npath = \"{}\"\nworkers = 1\ndeadline_secs = 600\n\
             [selfplay]\ngames = 1\n",
            engine.display()
        ),
    )
    .unwrap();
    for round in 0..20 {
        let mut children: Vec<std::process::Child> = (0..4)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
                    .current_dir(dir.path())
                    .args(["run", "--force"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut refused = Vec::new();
        // Bounded, so that two winners (both blocked) fail the test
        // instead of hanging it.
        for _ in 0..12_000 {
            let mut index = 0;
            while index < children.len() {
                if children[index].try_wait().unwrap().is_some() {
                    refused.push(children.remove(index).wait_with_output().unwrap());
                } else {
                    index += 1;
                }
            }
            if refused.len() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            refused.len(),
            3,
            "round {round}: {} still running",
            children.len()
        );
        assert_eq!(children.len(), 1, "round {round}");
        for output in &refused {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "round {round}: {stderr}");
            assert!(stderr.contains("being written"), "round {round}: {stderr}");
        }
        let mut winner = children.pop().unwrap();
        winner.kill().unwrap();
        winner.wait().unwrap();
    }
}

/// A finished release never changes: jan, then feb (which excludes jan's
/// puzzles), then jan again leaves jan's files byte for byte as they were,
/// and `--force` only checks it.
#[test]
fn a_finished_release_is_not_rewritten_by_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let config = config.to_str().unwrap();
    let files = |release: &str| -> Vec<(String, Vec<u8>)> {
        let folder = dir.path().join("out").join(release).join("release");
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.') && n != "report")
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| (n.clone(), std::fs::read(folder.join(&n)).unwrap()))
            .collect()
    };
    let release = |name: &str, extra: &[&str]| {
        let mut args = vec!["run", "--json", "--config", config, "--release", name];
        args.extend_from_slice(extra);
        summary(&run(dir.path(), &args))
    };
    release("jan", &[]);
    let jan = files("jan");
    let feb = release("feb", &[]);
    assert!(
        feb["stages"][2]["counts"]["excluded"].as_u64().unwrap() > 0,
        "{feb}"
    );
    let again = release("jan", &[]);
    assert_eq!(again["stages"][2]["skipped"], true, "{again}");
    assert_eq!(files("jan"), jan);
    let forced = release("jan", &["--force"]);
    assert_eq!(forced["stages"][2]["skipped"], true, "{forced}");
    assert_eq!(files("jan"), jan);
}

/// A release whose files no longer match its manifest is refused by
/// `export` (exit 2, naming the file) and by a rerun of `run`.
#[test]
fn a_truncated_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    let release = dir.path().join("out/r1/release");
    let test_csv = release.join("test.csv");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&test_csv)
        .unwrap();
    file.set_len(500).unwrap();
    drop(file);
    let target = dir.path().join("exported");
    let output = run(
        dir.path(),
        &[
            "export",
            release.to_str().unwrap(),
            "--format",
            "dspy",
            "-o",
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("test.csv"), "{stderr}");
    assert!(!target.exists());
    let output = run(dir.path(), &["run"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("test.csv"), "{stderr}");
}

/// Config mistakes are reported before any stage runs (no stage folder is
/// written), naming the file and the key.
#[test]
fn config_errors_are_reported_before_any_stage_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    let with_stages = |stages: &str, extra: &str| {
        text.replace(
            r#"stages = ["ingest_puzzles", "ingest_games", "release", "export"]"#,
            &format!("stages = {stages}"),
        ) + extra
    };
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (text.clone(), vec!["--tier", "nope"], "nope"),
        (
            text.replace("[release]", "[release]\nbin_width = 0"),
            vec![],
            "release.bin_width",
        ),
        (with_stages("[]", ""), vec![], "pipeline.stages"),
        (String::new(), vec![], "pipeline.stages"),
        (
            text.clone() + "\n[engine]\nmax_attempts = 0\n",
            vec![],
            "engine.max_attempts",
        ),
        (
            text.clone() + "\n[selfplay]\ndate = \"yesterday\"\n",
            vec![],
            "selfplay.date",
        ),
        (
            with_stages(
                r#"["ingest_puzzles", "rate"]"#,
                "\n[rate]\nmodel = \"missing.json\"\n",
            ),
            vec![],
            "rate.model",
        ),
        (
            with_stages(
                r#"["ingest_puzzles", "release", "eval"]"#,
                "\n[eval]\nmodel = \"oracle\"\n",
            ),
            vec![],
            "eval.model",
        ),
    ];
    for (bad, flags, key) in cases {
        std::fs::write(&config, &bad).unwrap();
        let mut args = vec!["run"];
        args.extend(flags);
        let output = run(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{key}: {stderr}");
        assert!(stderr.contains("pipeline.toml"), "{key}: {stderr}");
        assert!(stderr.contains(key), "{key}: {stderr}");
        assert!(!dir.path().join("out/r1").exists(), "{key}: a stage ran");
    }
}

/// What killed runs leave behind (stage scratch folders, temporary files of
/// processes that are gone) is removed by the next run; a live process's
/// temporary file is left alone.
#[test]
fn leftovers_of_killed_runs_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let release = dir.path().join("out/r1");
    std::fs::create_dir_all(release.join(".ingest_puzzles.partial")).unwrap();
    std::fs::write(release.join(".ingest_puzzles.partial/x.csv"), "half").unwrap();
    std::fs::create_dir_all(release.join("release")).unwrap();
    let dead = release.join("release/.test.csv.tmp-4194305");
    std::fs::write(&dead, "half").unwrap();
    let live = release.join(format!(".x.tmp-{}", std::process::id()));
    std::fs::write(&live, "mine").unwrap();
    summary(&run(dir.path(), &["run", "--json"]));
    assert!(!release.join(".ingest_puzzles.partial").exists());
    assert!(!dead.exists());
    assert!(live.exists());
}

/// Running one config from another working directory finds every stage
/// unchanged: fingerprints name files relative to the config's folder.
#[test]
fn a_config_run_from_another_directory_skips_its_unchanged_stages() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    // Sources named relative to the config, as pipeline.toml names them.
    let puzzles = data("lichess_db_puzzle_subset_1499.csv");
    std::fs::copy(&puzzles, dir.path().join("puzzles.csv")).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(puzzles.to_str().unwrap(), "puzzles.csv"),
    )
    .unwrap();
    summary(&run(dir.path(), &["run", "--json"]));
    let parent = dir.path().parent().unwrap();
    let again = summary(&run(
        parent,
        &["run", "--json", "--config", config.to_str().unwrap()],
    ));
    assert!(skipped(&again).iter().all(|(_, s)| *s), "{again}");
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    let relative = format!("{name}/pipeline.toml");
    let third = summary(&run(parent, &["run", "--json", "--config", &relative]));
    assert!(skipped(&third).iter().all(|(_, s)| *s), "{third}");
}

/// `run --strict` on a target the bundled sample cannot fill (1 + 1 per
/// cell of bins 400-2000, lengths 1-2, mate and not): the release is
/// written, the summary is printed (`--json`: one object, its `strict`
/// listing the unfilled cells), the error names the cells, and the exit
/// code is 2, as `split --strict`'s. A rerun that skips every stage says
/// the same; a target the sample fills exits 0. Without `--strict` the
/// short release exits 0.
#[test]
fn strict_exits_2_after_writing_a_release_with_unfilled_cells() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let release = dir.path().join("out/r1/release");
    for attempt in ["first", "rerun"] {
        let output = run(dir.path(), &["run", "--json", "--strict"]);
        assert_eq!(output.status.code(), Some(2), "{attempt}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("puzzleforge: error: run --strict: "),
            "{stderr}"
        );
        assert!(stderr.contains("target cells unfilled"), "{stderr}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        let unfilled = json["strict"]["unfilled"].as_array().unwrap();
        assert!(!unfilled.is_empty(), "{json}");
        // The first unfilled cell is named with its counts.
        let cell = &unfilled[0];
        let named = format!("{}: ", crate::common::cell_label(cell));
        assert!(stderr.contains(&named), "{named} in {stderr}");
        // The release is written, and says the same.
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(release.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(&manifest["unfilled"], &json["strict"]["unfilled"]);
        assert!(release.join("test.csv").is_file());
        if attempt == "rerun" {
            assert!(skipped(&json).iter().all(|(_, s)| *s), "{json}");
        }
    }
    // Without --strict the same release is a success.
    summary(&run(dir.path(), &["run", "--json"]));

    // A target the sample fills: two non-mating 2-move cells.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace(
            "ratings = [400, 2000]\nlengths = [1, 2]",
            "ratings = [1400, 1600]\nlengths = [2, 2]\nmate = \"no_mate\"",
        )
        .replace("release = \"r1\"", "release = \"r2\"");
    std::fs::write(&config, text).unwrap();
    let filled = summary(&run(dir.path(), &["run", "--json", "--strict"]));
    assert_eq!(filled["strict"]["cells"], 2, "{filled}");
    assert_eq!(filled["strict"]["unfilled"], serde_json::json!([]));

    // --strict checks a release: a run without one (and no [generate]) is
    // refused before any stage runs, and a shard has none to check.
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "stages = [\"ingest_puzzles\", \"ingest_games\", \"release\", \"export\"]",
        "stages = [\"ingest_puzzles\"]",
    );
    std::fs::write(&config, text.replace("\"r2\"", "\"r3\"")).unwrap();
    let refused = run(dir.path(), &["run", "--strict"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no release stage"));
    assert!(!dir.path().join("out/r3/ingest_puzzles").exists());
    let sharded = run(dir.path(), &["run", "--strict", "--shard", "0/2"]);
    assert_eq!(sharded.status.code(), Some(2));
}

/// The puzzle ids and FENs of a release's train and test files.
fn release_puzzles(release: &Path) -> std::collections::BTreeSet<(String, String)> {
    ["train.csv", "test.csv"]
        .iter()
        .flat_map(|file| puzzleforge::chess::record::read_puzzles(&release.join(file)).unwrap())
        .map(|p| (p.id, p.fen.to_string()))
        .collect()
}

/// The release folders a release's manifest says it excluded.
fn excluded_by(release: &Path) -> std::collections::BTreeSet<String> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(release.join("manifest.json")).unwrap()).unwrap();
    manifest["exclusions"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            let path = file["path"].as_str().unwrap();
            // `../../NAME/release/train.csv`
            path.split('/').rev().nth(2).unwrap().to_string()
        })
        .collect()
}

/// Releases of one output folder started at the same time never share a
/// puzzle: they take turns drawing, each excluding every release finished
/// before its turn, and its manifest names them. 20 rounds of 4 releases.
#[test]
fn releases_started_at_once_never_share_a_puzzle() {
    let dir = tempfile::tempdir().unwrap();
    let puzzles = puzzle_slice(dir.path(), 600);
    let names = ["a", "b", "c", "d"];
    for round in 0..20 {
        let config = dir.path().join(format!("round{round}.toml"));
        std::fs::write(
            &config,
            format!(
                "[pipeline]\nseed = {round}\noutput_dir = \"out{round}\"\nstages = [\"ingest_puzzles\", \"release\"]\n\
                 [sources]\npuzzles = [\"{}\"]\n\
                 [release]\ntrain_per_cell = 1\ntest_per_cell = 1\n\
                 [[release.bands]]\nratings = [400, 2000]\nlengths = [1, 2]\n",
                puzzles.display()
            ),
        )
        .unwrap();
        let children: Vec<std::process::Child> = names
            .iter()
            .map(|name| {
                std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
                    .current_dir(dir.path())
                    .args([
                        "run",
                        "--config",
                        config.to_str().unwrap(),
                        "--release",
                        name,
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let root = dir.path().join(format!("out{round}"));
        let release = |name: &str| root.join(name).join("release");
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                let (x, y) = (release_puzzles(&release(a)), release_puzzles(&release(b)));
                assert!(!x.is_empty() && !y.is_empty(), "round {round}");
                let shared = x.intersection(&y).count();
                assert_eq!(
                    shared, 0,
                    "round {round}: {a} and {b} share {shared} puzzles"
                );
                // One drew after the other, excluding it, and says so.
                let (a_excludes_b, b_excludes_a) = (
                    excluded_by(&release(a)).contains(*b),
                    excluded_by(&release(b)).contains(*a),
                );
                assert!(
                    a_excludes_b != b_excludes_a,
                    "round {round}: {a} excludes {b}: {a_excludes_b}, {b} excludes {a}: {b_excludes_a}"
                );
            }
        }
    }
}

/// Where `run` writes, a symbolic link is an error naming it, never
/// followed: the release lock, a stage's scratch folder.
#[test]
fn no_symbolic_link_is_followed_where_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let release = dir.path().join("out/r1");
    std::fs::create_dir_all(&release).unwrap();
    std::os::unix::fs::symlink(&victim, release.join(".lock")).unwrap();
    let output = run(dir.path(), &["run"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("out/r1/.lock is a symbolic link"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_file(release.join(".lock")).unwrap();

    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, release.join(".ingest_puzzles.partial")).unwrap();
    let output = run(dir.path(), &["run"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("out/r1/.ingest_puzzles.partial is a symbolic link"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A write that fails (here: past a file-size limit, as a full disk
/// fails it) is an error naming the file it was writing, whichever file
/// that is.
#[test]
fn a_failed_write_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    let target = dir.path().join("release");
    let mut failures = 0;
    // 512-byte blocks: limits below and between the release's file sizes.
    for blocks in [1, 8, 32, 128] {
        let output = std::process::Command::new("sh")
            .args([
                "-c",
                "trap '' XFSZ; ulimit -f \"$1\"; shift; exec \"$@\"",
                "sh",
                &blocks.to_string(),
                env!("CARGO_BIN_EXE_puzzleforge"),
                "release",
                pool.to_str().unwrap(),
                "-o",
                target.to_str().unwrap(),
                "--train-per-cell",
                "3",
                "--test-per-cell",
                "3",
            ])
            .output()
            .unwrap();
        if output.status.success() {
            continue;
        }
        failures += 1;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(target.to_str().unwrap()),
            "{blocks} blocks: the error names no file: {stderr}"
        );
    }
    assert!(failures >= 3, "the limits failed {failures} writes");
}

/// Every engine a run uses, the second engine of `[verify]` included, is
/// started once before the first stage: a path that is no engine is an
/// error (exit 2) naming its key, and no stage has run.
#[test]
fn engines_are_checked_before_the_first_stage() {
    let dir = tempfile::tempdir().unwrap();
    let not_an_engine = dir.path().join("second.toml");
    std::fs::write(&not_an_engine, "# not an engine\n").unwrap();
    let config = |engine: &str, second: &str| {
        format!(
            "[pipeline]\noutput_dir = \"out\"\nrelease = \"r1\"\n\
             stages = [\"ingest_puzzles\", \"ingest_games\", \"mine\", \"rate\", \"verify\", \"release\"]\n\
             [engine]\npath = \"{engine}\"\nworkers = 1\n\
             [sources]\npuzzles = [\"{}\"]\ngames = [\"{}\"]\n\
             [rate]\nmodel = \"{}\"\n\
             [verify.second_engine]\npath = \"{second}\"\n",
            data("lichess_db_puzzle_subset_1499.csv").display(),
            data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("models/rate_model.json")
                .display(),
        )
    };
    let stockfish = "/usr/games/stockfish";
    assert!(Path::new(stockfish).exists(), "{stockfish} is needed");
    for (engine, second, key) in [
        (
            stockfish,
            not_an_engine.to_str().unwrap(),
            "verify.second_engine.path",
        ),
        // A program that ends at once: no `uciok`, found without waiting.
        (stockfish, "/bin/true", "verify.second_engine.path"),
        ("/bin/true", stockfish, "engine.path"),
    ] {
        std::fs::write(dir.path().join("pipeline.toml"), config(engine, second)).unwrap();
        let output = run(dir.path(), &["run"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{second}: {stderr}");
        assert!(stderr.contains("pipeline.toml"), "{stderr}");
        assert!(stderr.contains(key), "{key}: {stderr}");
        assert!(!dir.path().join("out/r1").exists(), "{key}: a stage ran");
    }
}

/// Without a terminal (as under cron), `run` writes a timestamped line as
/// each stage starts and its progress bars as timestamped plain lines;
/// under `--json` neither (stdout keeps the one summary). It ends with
/// what it made, the cells it left unfilled and the next command, and the
/// release's card gives the source mix of each split.
#[test]
fn a_run_without_a_terminal_writes_plain_lines_and_ends_with_what_it_made() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    let output = run(dir.path(), &["run"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // `[2026-12-03T03:00:12Z] ...`: UTC, RFC 3339 to the second.
    let stamped = |line: &str| {
        line.len() > 23
            && line.starts_with("[20")
            && line[1..21].ends_with('Z')
            && line.as_bytes()[11] == b'T'
            && line[21..].starts_with("] ")
    };
    for stage in ["ingest_puzzles", "ingest_games", "release", "export"] {
        for said in [
            format!("Z] stage {stage}: started"),
            format!("Z] stage {stage}: done in "),
        ] {
            assert!(
                stderr.lines().any(|l| stamped(l) && l.contains(&said)),
                "{said}: {stderr}"
            );
        }
    }
    // The summary's stage lines say when each stage ended.
    assert!(
        stderr.lines().any(|l| l.starts_with("  release ")
            && l.split_whitespace()
                .nth(3)
                .is_some_and(|t| t.len() == 20 && t.ends_with('Z'))),
        "{stderr}"
    );
    // A bar's end line gives its final count.
    assert!(
        stderr
            .lines()
            .any(|l| stamped(l) && l.contains("puzzles: 262.41 KiB/262.41 KiB (100%)")),
        "{stderr}"
    );
    // The ingest's byte bar, as a plain line.
    assert!(
        stderr
            .lines()
            .any(|l| stamped(l) && l.contains("puzzles: ") && l.contains("elapsed")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("[="),
        "no bar drawn for a terminal: {stderr}"
    );
    // What it made, what it left, what next.
    let release = dir.path().join("out/r1/release");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(release.join("manifest.json")).unwrap()).unwrap();
    let counts = &manifest["counts"];
    let made = format!(
        "made: {} train + {} test puzzles in out/r1/release (its card: out/r1/release/README.md), {} of {} cells filled",
        counts["train"],
        counts["test"],
        counts["cells"].as_u64().unwrap() - counts["unfilled_cells"].as_u64().unwrap(),
        counts["cells"]
    );
    assert!(stderr.contains(&made), "{made}: {stderr}");
    let unfilled = manifest["unfilled"].as_array().unwrap();
    assert!(unfilled.len() > 3, "{manifest:#}");
    let first = common::cell_label(&unfilled[0]);
    let listed = format!("unfilled: {} cells ({first}, ", unfilled.len());
    assert!(stderr.contains(&listed), "{listed}: {stderr}");
    assert!(
        stderr.contains(&format!("... {} more", unfilled.len() - 3)),
        "{stderr}"
    );
    assert!(
        stderr.contains("next: the puzzle sources hold too few puzzles")
            && stderr.contains("[generate] enabled = true")
            && stderr.contains("`puzzleforge run --plan --release r1-generated`")
            && stderr.contains("`puzzleforge run --release r1-generated`"),
        "{stderr}"
    );
    // The card's source mix: every puzzle of this release is Lichess's.
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let lichess = format!(
        "| Lichess puzzle database (`lichess`) | {} | {} |",
        counts["train"], counts["test"]
    );
    assert!(
        card.contains("## Source mix") && card.contains(&lichess),
        "{card}"
    );
    assert!(
        card.contains("| generated (puzzleforge self-play) (`selfplay`) | 0 | 0 |"),
        "{card}"
    );
    assert!(card.contains(&format!("- {first}: ")), "{card}");
    // The card's theme mix: each theme's share beside Lichess's share in
    // the same cells; every puzzle here has a rating, so every one has a
    // cell in the reference.
    let total = counts["train"].as_u64().unwrap() + counts["test"].as_u64().unwrap();
    assert!(
        card.contains("## Theme mix")
            && card.contains(&format!(
                "{total} of the release's {total} puzzles have a cell"
            )),
        "{card}"
    );
    let shares: Vec<f64> = card
        .lines()
        .find(|line| line.starts_with("| mate |"))
        .unwrap_or_else(|| panic!("no mate row: {card}"))
        .split('|')
        .filter_map(|cell| cell.trim().strip_suffix('%')?.parse().ok())
        .collect();
    assert_eq!(shares.len(), 2, "{card}");
    assert!(shares.iter().all(|s| (0.0..=100.0).contains(s)), "{card}");

    // Under --json: no plain lines, one JSON object on stdout.
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let quiet = run(dir.path(), &["run", "--json"]);
    summary(&quiet);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(!stderr.contains("Z] "), "{stderr}");
}

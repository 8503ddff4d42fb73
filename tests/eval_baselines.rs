//! The `random` and `engine` baseline players on 20 real Lichess puzzles,
//! with regret from a real Stockfish (/usr/games/stockfish; the test fails
//! without it), determinism of the report, and `compare` between them;
//! the Maia players and the human ladder with the committed nets.

use std::path::Path;
use std::process::Command;

use puzzleforge::chess::record::{read_puzzles, write_puzzles};

fn puzzleforge(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A folder holding `rows` of the Lichess sample as `set.csv` and a
/// `pipeline.toml` with `config`; returns (folder, set path, config path).
/// Fails when Stockfish is missing: these tests need the real engine.
fn sample_set(rows: std::ops::Range<usize>, config: &str) -> (tempfile::TempDir, String, String) {
    assert!(
        Path::new("/usr/games/stockfish").exists(),
        "Stockfish is required at /usr/games/stockfish"
    );
    let dir = tempfile::tempdir().unwrap();
    let puzzles = read_puzzles(Path::new("tests/data/lichess_db_puzzle_subset_1499.csv")).unwrap();
    let set = dir.path().join("set.csv");
    write_puzzles(&set, &puzzles[rows]).unwrap();
    let config_path = dir.path().join("pipeline.toml");
    std::fs::write(&config_path, config).unwrap();
    let (set, config_path) = (
        set.to_str().unwrap().to_string(),
        config_path.to_str().unwrap().to_string(),
    );
    (dir, set, config_path)
}

/// `eval SET --model MODEL --config CONFIG [EXTRA] -o DIR/NAME`: the run
/// folder and the JSON summary.
fn eval_into(
    dir: &Path,
    set: &str,
    config: &str,
    name: &str,
    model: &str,
    extra: &[&str],
) -> (std::path::PathBuf, serde_json::Value) {
    let out = dir.join(name);
    let mut args = vec!["eval", set, "--model", model, "--config", config];
    args.extend_from_slice(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    let summary = puzzleforge(&args);
    (out, summary)
}

#[test]
fn engine_scores_far_above_random_and_reports_are_deterministic() {
    let (dir, set, config) = sample_set(
        0..20,
        "[eval.regret]\nnodes = 5000\n[eval.engine]\nworkers = 2\n",
    );
    let (set, config) = (set.as_str(), config.as_str());
    let run = |name: &str, model: &str| eval_into(dir.path(), set, config, name, model, &[]);
    let (random_dir, random) = run("random", "random");
    let (engine_dir, engine) = run("engine", "engine:stockfish?nodes=200000");
    let random_acc = random["puzzle_accuracy"].as_f64().unwrap();
    let engine_acc = engine["puzzle_accuracy"].as_f64().unwrap();
    assert!(engine_acc >= 0.7, "engine accuracy {engine_acc}");
    assert!(random_acc <= 0.2, "random accuracy {random_acc}");
    assert!(engine_acc - random_acc >= 0.5);
    assert_eq!(engine["illegal_rate"], 0.0);
    let engine_regret = engine["median_regret"].as_f64().unwrap();
    let random_regret = random["median_regret"].as_f64().unwrap();
    assert!(
        engine_regret < random_regret,
        "{engine_regret} vs {random_regret}"
    );
    // The bounded score loss: 0 to 1 per position, the engine's far lower.
    let engine_loss = engine["mean_score_loss"].as_f64().unwrap();
    let random_loss = random["mean_score_loss"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&random_loss), "{random_loss}");
    assert!(
        engine_loss + 0.1 < random_loss,
        "{engine_loss} vs {random_loss}"
    );

    // Every report pins the engine binary its figures came from by sha256
    // (the player's and regret's: one Stockfish here) and the nets of the
    // human ladder, under `pins`.
    let stockfish_sha256 =
        puzzleforge::core::fileio::sha256_file(Path::new("/usr/games/stockfish")).unwrap();
    for run_dir in [&random_dir, &engine_dir] {
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run_dir.join("report.json")).unwrap()).unwrap();
        let pins = &report["pins"];
        assert_eq!(
            pins["engine"]["sha256"],
            stockfish_sha256.as_str(),
            "{pins}"
        );
        assert_eq!(pins["engine"]["id"], report["engine"], "{pins}");
        // A puzzle file names no rating model (a release does: generate.rs).
        assert_eq!(pins["rating_model"], serde_json::Value::Null, "{pins}");
        // The human ladder ran beside the player: its nine nets are pinned.
        let nets = pins["maia_nets"].as_array().unwrap();
        let ratings: Vec<u64> = nets.iter().map(|n| n["rating"].as_u64().unwrap()).collect();
        assert_eq!(
            ratings,
            (1100..=1900).step_by(100).collect::<Vec<u64>>(),
            "{pins}"
        );
        assert!(
            nets.iter()
                .all(|n| n["sha256"].as_str().unwrap().len() == 64),
            "{pins}"
        );
    }
    let report = std::fs::read(random_dir.join("report.json")).unwrap();
    for key in [
        "puzzle_accuracy",
        "position_accuracy",
        "illegal_rate",
        "unparseable_rate",
        "mean_score_loss",
        "mean_regret",
        "median_regret",
    ] {
        let v: serde_json::Value = serde_json::from_slice(&report).unwrap();
        assert!(v.get(key).is_some(), "report.json lacks {key}");
    }
    // Pictures only where they mean something: a baseline has no prompt
    // template, so no illegal rate by template; the report shows what is
    // drawn and explains the score loss beside the raw regret.
    let md = std::fs::read_to_string(random_dir.join("report.md")).unwrap();
    for picture in ["accuracy_by_rating.svg", "regret_distribution.svg"] {
        let svg = std::fs::read_to_string(random_dir.join(picture)).unwrap();
        assert!(svg.starts_with("<svg"), "{picture}");
        assert!(md.contains(&format!("]({picture})")), "{picture}");
    }
    assert!(!random_dir.join("illegal_rate_by_template.svg").exists());
    assert!(!md.contains("illegal_rate_by_template"), "{md}");
    assert!(md.contains("| mean score loss (0-1) | "), "{md}");
    assert!(md.contains("| mean regret (cp, raw) | "), "{md}");
    assert!(md.contains("Score loss is the expected score"), "{md}");
    // Same inputs, same report bytes.
    let (again_dir, _) = run("random-again", "random");
    assert_eq!(
        std::fs::read(again_dir.join("report.json")).unwrap().len(),
        report.len()
    );
    let strip = |bytes: Vec<u8>| {
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v["config"]["config"]["cache_dir"] = serde_json::Value::Null;
        v
    };
    assert_eq!(
        strip(std::fs::read(again_dir.join("report.json")).unwrap()),
        strip(report.clone())
    );
    // Regret's searches are cached by content in the run folder: a rerun
    // into it searches nothing and writes the same report.
    let runtime = |dir: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("runtime.json")).unwrap()).unwrap()
    };
    let first = runtime(&random_dir);
    assert!(first["regret_searches"].as_u64().unwrap() > 0, "{first}");
    assert_eq!(first["regret_cached_searches"], 0, "{first}");
    run("random", "random");
    let rerun = runtime(&random_dir);
    assert_eq!(rerun["regret_searches"], 0, "{rerun}");
    assert_eq!(
        rerun["regret_cached_searches"], first["regret_searches"],
        "{rerun}"
    );
    assert_eq!(
        std::fs::read(random_dir.join("report.json")).unwrap(),
        report
    );

    let compared = puzzleforge(&[
        "compare",
        random_dir.to_str().unwrap(),
        engine_dir.to_str().unwrap(),
        "-o",
        dir.path().join("cmp").to_str().unwrap(),
    ]);
    let overall = compared["overall"].as_array().unwrap();
    assert_eq!(overall[0]["metric"], "puzzle_accuracy");
    // The same 20 puzzles: paired, McNemar on solved or not.
    let solved = &overall[0]["paired"];
    assert_eq!(solved["test"], "mcnemar_exact", "{compared}");
    assert_eq!(solved["pairs"], 20, "{compared}");
    assert!(overall[0]["p_one_sided"].as_f64().unwrap() < 0.01);
    assert_eq!(overall[0]["p_one_sided"], solved["p_one_sided"]);
    // Regret is tested on the bounded score loss; the raw cp mean is shown
    // untested.
    let metric = |name: &str| {
        overall
            .iter()
            .find(|d| d["metric"] == name)
            .unwrap_or_else(|| panic!("no {name} in {compared}"))
    };
    let loss = metric("mean_score_loss");
    assert_eq!(loss["paired"]["test"], "paired_t", "{loss}");
    assert!(loss["p_one_sided"].as_f64().unwrap() < 0.01, "{loss}");
    assert_eq!(loss["a"].as_f64(), Some(random_loss));
    assert!(metric("mean_regret")["welch"].is_null());
    assert!(dir.path().join("cmp/compare.md").exists());
    // Two baselines: no templates, so no illegal-rate-by-template picture.
    assert!(!dir.path().join("cmp/illegal_rate_by_template.svg").exists());
}

/// `--limit N` asks N puzzles drawn across the set's cells with the run's
/// seed, not the first N rows: on 60 rows of the sample (many cells) the
/// 12 asked are spread over as many rating bins as they can be, the same
/// seed asks the same puzzles and another seed others.
#[test]
fn limit_draws_a_seeded_sample_across_the_cells() {
    let (dir, set, config) = sample_set(
        0..60,
        "[eval.regret]\nenabled = false\n[eval.engine]\nworkers = 1\n",
    );
    let (set, config) = (set.as_str(), config.as_str());
    let asked = |name: &str, seed: &str| -> Vec<String> {
        let out = dir.path().join(name);
        let summary = puzzleforge(&[
            "eval",
            set,
            "--model",
            "random",
            "--config",
            config,
            "--limit",
            "12",
            "--seed",
            seed,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(summary["puzzles"], 12, "{summary}");
        let mut ids: Vec<String> = std::fs::read_to_string(out.join("positions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["puzzle_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        ids.dedup();
        ids
    };
    let first = asked("a", "1");
    assert_eq!(first.len(), 12);
    assert_eq!(asked("b", "1"), first, "same seed, same sample");
    assert_ne!(asked("c", "2"), first, "the seed draws the sample");
    let puzzles = read_puzzles(Path::new(set)).unwrap();
    let first_rows: Vec<String> = puzzles[..12].iter().map(|p| p.id.clone()).collect();
    assert_ne!(first, first_rows, "not the first 12 rows");
    // Spread over the cells: as many distinct cells as puzzles asked
    // (the 60 rows span more than 12 cells).
    let cell = |p: &puzzleforge::chess::record::Puzzle| {
        puzzleforge::stages::release::cells::Cell::of(p, 100).unwrap()
    };
    let all_cells: std::collections::BTreeSet<_> = puzzles.iter().map(cell).collect();
    assert!(all_cells.len() > 12, "{} cells", all_cells.len());
    let asked_cells: std::collections::BTreeSet<_> = puzzles
        .iter()
        .filter(|p| first.contains(&p.id))
        .map(cell)
        .collect();
    assert_eq!(asked_cells.len(), 12, "{asked_cells:?}");
}

/// `engine:stockfish?elo=E` replays Stockfish 15.1's skill rule with the
/// run's seed: the same seed gives the same answers, another seed other
/// answers, and the weak player scores below the full-strength one.
#[test]
fn elo_limited_engine_is_reproducible_per_seed() {
    let (dir, set, config) = sample_set(
        100..130,
        "[eval.regret]\nenabled = false\n[eval.engine]\nworkers = 2\n",
    );
    let (set, config) = (set.as_str(), config.as_str());
    let run = |name: &str, model: &str, seed: &str| {
        let out = dir.path().join(name);
        let summary = puzzleforge(&[
            "eval",
            set,
            "--model",
            model,
            "--config",
            config,
            "--seed",
            seed,
            "-o",
            out.to_str().unwrap(),
        ]);
        let played: Vec<serde_json::Value> = std::fs::read_to_string(out.join("positions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["played"].clone())
            .collect();
        (summary, played)
    };
    let (weak, first) = run("weak-a", "engine:stockfish?elo=1350", "1");
    let (_, again) = run("weak-b", "engine:stockfish?elo=1350", "1");
    let (_, other_seed) = run("weak-c", "engine:stockfish?elo=1350", "2");
    assert_eq!(first, again, "same seed, same moves");
    assert_ne!(first, other_seed, "the seed drives the weakened choice");
    let (strong, _) = run("strong", "engine:stockfish?nodes=100000", "1");
    let weak_acc = weak["position_accuracy"].as_f64().unwrap();
    let strong_acc = strong["position_accuracy"].as_f64().unwrap();
    assert!(
        weak_acc < strong_acc,
        "Elo 1350 {weak_acc} vs full strength {strong_acc}"
    );
    assert_eq!(weak["illegal_rate"], 0.0);
}

#[test]
fn random_rollouts_end_on_engine_checkmate_or_move_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pipeline.toml");
    std::fs::write(
        &config,
        "[eval.regret]\nnodes = 2000\n[eval.engine]\nworkers = 2\n[rollout]\nmax_moves = 4\nopponent_nodes = 2000\n",
    )
    .unwrap();
    let out = dir.path().join("rollout");
    let summary = puzzleforge(&[
        "rollout",
        "--model",
        "random",
        "--config",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary["games"], 10);
    assert_eq!(summary["illegal_attempt_rate"], 0.0);
    assert!(summary["accepted_moves"].as_u64().unwrap() >= 20);
    assert!(summary["mean_regret"].as_f64().unwrap() > 0.0);
    assert!(out.join("moves.jsonl").exists());
}

/// Runs puzzleforge and returns its exit code and stderr.
fn puzzleforge_fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `maia:1500` (the committed nets in models/maia) on 12 real puzzles:
/// only legal moves, the same answers and report with 1 or 3 workers and
/// from the cache, and report.json places it on the human ladder (the nine
/// nets, their accuracy by rating bin, a human-equivalent rating), where
/// its own net's row is its own figures. `?sample=1` draws reproducibly.
#[test]
fn maia_players_are_deterministic_legal_and_placed_on_the_human_ladder() {
    let (dir, set, config) = sample_set(0..12, "[eval.regret]\nenabled = false\n");
    let (set, config) = (set.as_str(), config.as_str());
    let run = |name: &str, model: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "eval",
            set,
            "--model",
            model,
            "--config",
            config,
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        (puzzleforge(&args), out)
    };
    let (summary, one) = run("one", "maia:1500", &["--workers", "1"]);
    let (_, three) = run("three", "maia:1500", &["--workers", "3"]);
    // Into the same folder again: every position from the cache.
    let (_, again) = run("one", "maia:1500", &["--workers", "2"]);
    let runtime: serde_json::Value =
        serde_json::from_slice(&std::fs::read(again.join("runtime.json")).unwrap()).unwrap();
    let positions = jsonl(&one.join("positions.jsonl"));
    assert_eq!(
        runtime["maia_cached_positions"],
        positions.len(),
        "{runtime}"
    );
    assert_eq!(runtime["maia_computed_positions"], 0, "{runtime}");

    let report = |out: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        v["config"]["config"]["client"]["workers"] = serde_json::Value::Null;
        v
    };
    assert_eq!(report(&one), report(&three));
    assert_eq!(
        std::fs::read(one.join("positions.jsonl")).unwrap(),
        std::fs::read(three.join("positions.jsonl")).unwrap()
    );
    for record in &positions {
        let fen: shakmaty::fen::Fen = record["fen"].as_str().unwrap().parse().unwrap();
        let position: shakmaty::Chess =
            fen.into_position(shakmaty::CastlingMode::Standard).unwrap();
        let played = record["played"]
            .as_str()
            .unwrap_or_else(|| panic!("{record}"));
        let uci: shakmaty::uci::UciMove = played.parse().unwrap();
        assert!(
            uci.to_move(&position).is_ok(),
            "illegal {played} in {record}"
        );
        assert!(["correct", "wrong"].contains(&record["verdict"].as_str().unwrap()));
    }

    let report = report(&one);
    let ladder = &report["human_ladder"];
    let players = ladder["players"].as_array().unwrap();
    let ratings: Vec<u64> = players
        .iter()
        .map(|p| p["rating"].as_u64().unwrap())
        .collect();
    assert_eq!(
        ratings,
        [1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900]
    );
    assert_eq!(ladder["nets"].as_array().unwrap().len(), 9);
    // The pins name every net the run read by sha256 (the player's is
    // among the ladder's nine); no engine ran.
    let pins = &report["pins"];
    assert!(pins["engine"].is_null(), "{pins}");
    let pinned = pins["maia_nets"].as_array().unwrap();
    assert_eq!(pinned.len(), 9, "{pins}");
    assert!(pinned.iter().any(|net| net["rating"] == 1500), "{pins}");
    for net in pinned {
        let rating = net["rating"].as_u64().unwrap() as u32;
        let published = puzzleforge::maia::MAIA_SHA256
            .iter()
            .find(|(r, _)| *r == rating)
            .map(|(_, sha256)| *sha256);
        assert_eq!(net["sha256"].as_str(), published, "{net}");
    }
    for p in players {
        assert_eq!(p["puzzles"], 12, "{p}");
        assert!(!p["by_rating_bin"].as_object().unwrap().is_empty(), "{p}");
    }
    // The player is the ladder's 1500 net: the same answers, so the same
    // figures overall and in every bin.
    let own = &players[4];
    for key in ["puzzle_accuracy", "position_accuracy", "by_rating_bin"] {
        assert_eq!(own[key], ladder["model"][key], "{key}");
    }
    assert_eq!(
        ladder["model"]["puzzle_accuracy"],
        report["puzzle_accuracy"]
    );
    let equivalent = &ladder["human_equivalent_rating"];
    let label = equivalent["label"].as_str().unwrap();
    assert!(
        ["below", "within", "above"].contains(&equivalent["placement"].as_str().unwrap()),
        "{equivalent}"
    );
    assert_eq!(summary["human_equivalent_rating"]["label"], label);
    let md = std::fs::read_to_string(one.join("report.md")).unwrap();
    assert!(md.contains("## Human ladder (Maia-1)"), "{md}");
    assert!(md.contains(&format!(
        "| human-equivalent rating (Maia ladder) | {label} |"
    )));
    assert!(md.contains("](human_ladder.svg)"), "{md}");
    let svg = std::fs::read_to_string(one.join("human_ladder.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("maia:1900"));

    // Sampling at temperature 1: the same seed, the same draws.
    let sampled = |name: &str| {
        let (summary, out) = run(
            name,
            "maia:1500?sample=1",
            &["--repeats", "2", "--no-ladder"],
        );
        assert_eq!(summary["illegal_rate"], 0.0);
        assert!(summary["human_equivalent_rating"].is_null(), "{summary}");
        let played: Vec<serde_json::Value> = jsonl(&out.join("positions.jsonl"))
            .iter()
            .map(|r| r["played"].clone())
            .collect();
        assert!(played.iter().all(|p| p.is_string()));
        played
    };
    assert_eq!(sampled("sample-a"), sampled("sample-b"));
}

/// A rating with no net is refused (exit 2) naming the nine; a Maia player
/// without its nets is refused; a baseline without them is reported with a
/// note and no ladder.
#[test]
fn maia_players_need_a_rating_with_a_net() {
    let (dir, set, config) = sample_set(0..3, "[eval.regret]\nenabled = false\n");
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let base = ["eval", set.as_str(), "--config", config.as_str(), "-o", out];
    let (code, stderr) = puzzleforge_fails(&[&base[..], &["--model", "maia:1550"]].concat());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900"),
        "{stderr}"
    );
    let nowhere = dir.path().join("no-nets");
    let nowhere = nowhere.to_str().unwrap();
    let (code, stderr) = puzzleforge_fails(
        &[
            &base[..],
            &["--model", "maia:1500", "--maia-models", nowhere],
        ]
        .concat(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("maia-1500.pb.gz"), "{stderr}");
    puzzleforge(&[&base[..], &["--model", "random", "--maia-models", nowhere]].concat());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(Path::new(out).join("report.json")).unwrap())
            .unwrap();
    assert!(report["human_ladder"].is_null());
    assert!(
        report["notes"]
            .to_string()
            .contains("human ladder not computed"),
        "{}",
        report["notes"]
    );
}

/// The puzzle rating of players whose order is known: `random`, Stockfish
/// at 1 node and at 100,000 nodes on 60 real puzzles come out in that
/// order, each rating inside its 95% interval, in `report.json` (overall
/// and per solver length), `report.md`, `puzzle_rating.svg` and `compare`.
#[test]
fn puzzle_ratings_order_players_of_known_strength() {
    let (dir, set, config) = sample_set(0..60, "[eval.regret]\nenabled = false\n");
    let (set, config) = (set.as_str(), config.as_str());
    let run =
        |name: &str, model: &str| eval_into(dir.path(), set, config, name, model, &["--no-ladder"]);
    let mut ratings = Vec::new();
    for (name, model) in [
        ("random", "random"),
        ("depth-1", "engine:stockfish?nodes=1"),
        ("strong", "engine:stockfish?nodes=100000"),
    ] {
        let (out, summary) = run(name, model);
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        let rating = &report["puzzle_rating"];
        assert_eq!(rating, &summary["puzzle_rating"]);
        let (r, low, high) = (
            rating["rating"].as_f64().unwrap(),
            rating["low"].as_f64().unwrap(),
            rating["high"].as_f64().unwrap(),
        );
        assert!(low <= r && r <= high, "{name}: {rating}");
        assert_eq!(rating["attempts"], 60, "{name}: {rating}");
        assert!(
            rating["by_length"].as_object().unwrap().contains_key("2"),
            "{name}: {rating}"
        );
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("| puzzle rating (Lichess scale"), "{md}");
        let svg = std::fs::read_to_string(out.join("puzzle_rating.svg")).unwrap();
        assert!(svg.starts_with("<svg"));
        ratings.push((name, r, low, high, out));
    }
    assert!(
        ratings[0].1 < ratings[1].1 && ratings[1].1 < ratings[2].1,
        "not in order: {:?}",
        ratings.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>()
    );
    // Random and the depth-1 engine are far apart: intervals disjoint.
    assert!(
        ratings[0].3 < ratings[1].2,
        "{:?}",
        (ratings[0].3, ratings[1].2)
    );
    let compared = puzzleforge(&[
        "compare",
        ratings[0].4.to_str().unwrap(),
        ratings[2].4.to_str().unwrap(),
    ]);
    assert_eq!(compared["puzzle_rating"]["a"]["rating"], ratings[0].1);
    assert_eq!(compared["puzzle_rating"]["b"]["rating"], ratings[2].1);
}

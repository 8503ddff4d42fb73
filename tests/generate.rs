//! Generating to order (`[generate]`): the stopping game and the release
//! are a function of (config, seed, engine) alone: the same across worker
//! counts and batch sizes, after an interruption or a raised budget, and
//! for a shard pair + merge; an excluded position is dropped and counted.
//! Real Stockfish, tiny budgets.

use serde_json::{Value, json};
use sha2::Digest;
use std::path::{Path, PathBuf};

use crate::common::{cell_label, files_under, generation_config, puzzleforge, summary};

/// Every file of a release folder but the runner's records, with its bytes.
fn release_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(dir, &["stage.json", "runtime.json", ".lock"])
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

fn assert_same_release(a: &Path, b: &Path) {
    let (left, right) = (release_bytes(a), release_bytes(b));
    let names =
        |files: &[(PathBuf, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&left),
        names(&right),
        "{} vs {}",
        a.display(),
        b.display()
    );
    for ((name, x), (_, y)) in left.iter().zip(&right) {
        assert!(
            x == y,
            "{} differs between {} and {}",
            name.display(),
            a.display(),
            b.display()
        );
    }
}

fn run(dir: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    summary(&puzzleforge(dir, &all))
}

/// The stored batches of the one store under `output`.
fn batches(output: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store(output))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("batch-"))
        .collect();
    names.sort();
    names
}

#[test]
fn target_runs_agree_across_workers_batch_sizes_budgets_and_interruptions() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "a.toml", "A", 1, "batch_games = 3\nmax_games = 40");
    generation_config(root, "b.toml", "B", 2, "batch_games = 7\nmax_games = 40");
    let a = run(root, &["run", "--config", "a.toml"]);
    assert_eq!(a["generate"]["stop"], "quotas_met", "{a:#}");
    let last = a["generate"]["last_game"].as_u64().unwrap();
    assert!(last < 40, "{a:#}");
    // Games are played in batches of 3: one batch at most past the stop.
    assert_eq!(batches(&root.join("A")).len() as u64, last.div_ceil(3));
    let b = run(root, &["run", "--config", "b.toml"]);
    assert_eq!(b["generate"]["last_game"], a["generate"]["last_game"]);
    assert_same_release(&root.join("A/gen"), &root.join("B/gen"));

    // A budget that ends first: the release is still written, the
    // unfilled cell named; raised, the run reuses the stored batches.
    let short = last - 1;
    generation_config(
        root,
        "c.toml",
        "C",
        2,
        &format!("batch_games = 2\nmax_games = {short}"),
    );
    let c = run(root, &["run", "--config", "c.toml"]);
    assert_eq!(c["generate"]["stop"], "max_games", "{c:#}");
    assert_eq!(
        c["generate"]["unfilled"].as_array().unwrap().len(),
        1,
        "{c:#}"
    );
    assert!(root.join("C/gen/release/manifest.json").is_file());
    // `run --strict` says so (the rerun replays the store): the summary,
    // then exit 2 naming the unfilled cell.
    let strict = puzzleforge(root, &["run", "--config", "c.toml", "--strict", "--json"]);
    assert_eq!(strict.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    let cell = &c["generate"]["unfilled"][0];
    let named = format!(
        "run --strict: 1 of {} target cells unfilled: {}: ",
        c["generate"]["cells"],
        cell_label(cell)
    );
    assert!(stderr.contains(&named), "{named} in {stderr}");
    let json: Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(json["strict"]["unfilled"], c["generate"]["unfilled"]);
    let before = batches(&root.join("C"));
    // A finished release never changes: the larger target goes into the
    // release folder anew, from the same store.
    std::fs::remove_dir_all(root.join("C/gen")).unwrap();
    generation_config(root, "c.toml", "C", 2, "batch_games = 2\nmax_games = 40");
    let raised = run(root, &["run", "--config", "c.toml", "--strict"]);
    assert_eq!(raised["generate"]["last_game"], a["generate"]["last_game"]);
    assert_eq!(raised["strict"]["unfilled"], serde_json::json!([]));
    let after = batches(&root.join("C"));
    assert!(
        before.iter().all(|b| after.contains(b)),
        "{before:?} {after:?}"
    );
    assert_eq!(
        after.len(),
        before.len() + 1,
        "only the missing games played: {after:?}"
    );
    assert_same_release(&root.join("A/gen"), &root.join("C/gen"));

    // Killed after its first batch is stored, a run resumes to the bytes
    // of an uninterrupted one.
    generation_config(root, "d.toml", "D", 1, "batch_games = 3\nmax_games = 40");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .current_dir(root)
        .args(["run", "--config", "d.toml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let store_has_a_batch = || {
        std::fs::read_dir(root.join("D/.generate"))
            .ok()
            .and_then(|mut stores| stores.next())
            .and_then(|store| std::fs::read_dir(store.ok()?.path()).ok())
            .is_some_and(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().starts_with("batch-"))
            })
    };
    let started = std::time::Instant::now();
    while !store_has_a_batch() && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let finished_early = child.try_wait().unwrap().is_some();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(store_has_a_batch(), "no batch stored in 120 s");
    if !finished_early {
        let resumed = run(root, &["run", "--config", "d.toml"]);
        assert_eq!(resumed["generate"]["last_game"], a["generate"]["last_game"]);
    }
    assert_same_release(&root.join("A/gen"), &root.join("D/gen"));
}

#[test]
fn a_shard_pair_merged_under_a_target_equals_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let generate = "batch_games = 4\nmax_games = 16";
    generation_config(root, "a.toml", "A", 2, generate);
    generation_config(root, "b.toml", "B", 2, generate);
    let single = run(root, &["run", "--config", "a.toml"]);
    for shard in ["0/2", "1/2"] {
        let part = run(root, &["run", "--config", "b.toml", "--shard", shard]);
        assert_eq!(part["generate"]["stop"], "shard_slice", "{part:#}");
    }
    let merged = run(
        root,
        &[
            "merge",
            "B/gen.shard-1-of-2",
            "B/gen.shard-0-of-2",
            "-o",
            "B/gen",
            "--config",
            "b.toml",
        ],
    );
    assert_eq!(merged["command"], "merge");
    let generated = |root: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(root.join("selfplay/generate.json")).unwrap())
            .unwrap()
    };
    assert_eq!(
        generated(&root.join("B/gen")),
        single["generate"].clone().tap_cpu()
    );
    assert_same_release(&root.join("A/gen"), &root.join("B/gen"));
}

/// The run summary's generate object without its CPU time (which no file
/// holds).
trait TapCpu {
    fn tap_cpu(self) -> Value;
}

impl TapCpu for Value {
    fn tap_cpu(mut self) -> Value {
        if let Some(map) = self.as_object_mut() {
            map.remove("engine_cpu_hours");
        }
        self
    }
}

#[test]
fn an_excluded_position_is_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "a.toml", "A", 2, "batch_games = 4\nmax_games = 40");
    let first = run(root, &["run", "--config", "a.toml"]);
    assert_eq!(
        first["generate"]["funnel"]["excluded"],
        Value::Null,
        "{first:#}"
    );
    // An all-generated release says so, with the funnel in its manifest.
    let release = root.join("A/gen/release");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(
        card.contains("none comes from a public puzzle source"),
        "{card}"
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(release.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["generate"]["figures"]["funnel"],
        first["generate"]["funnel"]
    );
    // An eval of it pins the rating model that rated its puzzles (the
    // ratings its by-rating figures read), as the manifest names it.
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json");
    let model_sha256 = puzzleforge::core::fileio::sha256_file(&model).unwrap();
    run(
        root,
        &[
            "eval",
            "A/gen/release",
            "--model",
            "random",
            "--no-regret",
            "--no-ladder",
            "-o",
            "ev",
        ],
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(root.join("ev/report.json")).unwrap()).unwrap();
    assert_eq!(
        report["pins"]["rating_model"], manifest["settings"]["rate"]["model"],
        "{report:#}"
    );
    assert_eq!(
        report["pins"]["rating_model"]["sha256"],
        model_sha256.as_str()
    );
    // One generated puzzle of the first release, as a Lichess puzzle file.
    let train = std::fs::read_to_string(root.join("A/gen/release/train.csv")).unwrap();
    let mut lines = train.lines();
    let header = lines.next().unwrap();
    let row = lines.next().unwrap();
    std::fs::write(root.join("exclude.csv"), format!("{header}\n{row}\n")).unwrap();
    let id = row.split(',').next().unwrap().to_string();
    generation_config(
        root,
        "b.toml",
        "A",
        2,
        "batch_games = 4\nmax_games = 40\nexclude = [\"exclude.csv\"]\nexclude_earlier_releases = false",
    );
    let second = run(root, &["run", "--config", "b.toml", "--release", "fresh"]);
    assert_eq!(second["generate"]["funnel"]["excluded"], 1, "{second:#}");
    for split in ["train.csv", "test.csv"] {
        let text = std::fs::read_to_string(root.join("A/fresh/release").join(split)).unwrap();
        assert!(!text.contains(&id), "{id} is in the fresh {split}");
    }
    let mined = std::fs::read_to_string(root.join("A/fresh/mine/games.puzzles.csv")).unwrap();
    assert!(
        !mined.contains(&id),
        "{id} was mined into the fresh release"
    );
}

/// The stderr of a run that must fail.
fn fails(dir: &Path, args: &[&str]) -> String {
    let output = puzzleforge(dir, args);
    assert!(!output.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The Elo tags of every game in the PGN files under `dir`.
fn elo_tags(dir: &Path) -> Vec<i32> {
    files_under(dir, &[])
        .into_iter()
        .filter(|name| name.extension().is_some_and(|e| e == "pgn"))
        .flat_map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            text.lines()
                .filter(|l| l.starts_with("[WhiteElo ") || l.starts_with("[BlackElo "))
                .map(|l| l.split('"').nth(1).unwrap().parse::<i32>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_tier_profile_sets_the_players_and_the_lines_of_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let profiles = "batch_games = 4\nmax_games = 8\n\
        [generate.selfplay]\nchaos_white_elo = [1600, 1650]\nchaos_black_elo = [1600, 1650]\n\
        [generate.tiers.long.selfplay]\nchaos_white_elo = [1400, 1450]\nchaos_black_elo = [1400, 1450]\n\
        [generate.tiers.long.mine]\nmin_solver_moves = 2\n";
    let path = generation_config(root, "a.toml", "A", 2, profiles);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("lengths = [1, 1]", "lengths = [1, 3]")
        .replace(
            "[generate]",
            "[release.tiers.long]\nmin_solver_moves = 2\n\n[generate]",
        );
    std::fs::write(&path, &text).unwrap();

    // Without a tier: generation's own players, the lines of [mine].
    run(root, &["run", "--config", "a.toml"]);
    // The selfplay stage's games (the release's games.pgn repeats some).
    let plain = elo_tags(&root.join("A/gen/selfplay"));
    assert_eq!(plain.len(), 16, "{plain:?}");
    assert!(plain.iter().all(|e| (1600..=1650).contains(e)), "{plain:?}");

    // The tier's target: its players, and no line shorter than its minimum.
    let long_run = run(
        root,
        &[
            "run",
            "--config",
            "a.toml",
            "--tier",
            "long",
            "--release",
            "long",
        ],
    );
    let long = elo_tags(&root.join("A/long/selfplay"));
    assert_eq!(long.len(), 16, "{long:?}");
    assert!(long.iter().all(|e| (1400..=1450).contains(e)), "{long:?}");
    let mined = std::fs::read_to_string(root.join("A/long/mine/games.puzzles.csv")).unwrap();
    let mut lines = mined.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let moves = header.iter().position(|c| *c == "Moves").unwrap();
    let mut long_lines = 0;
    for row in lines {
        let solver_moves = row.split(',').nth(moves).unwrap().split(' ').count() / 2;
        assert!(
            solver_moves >= 2,
            "a {solver_moves}-move line was mined: {row}"
        );
        long_lines += 1;
    }
    // The games had candidates; the single-move ones were not kept.
    let candidates = long_run["generate"]["funnel"]["candidates"]
        .as_u64()
        .unwrap();
    assert!(candidates > long_lines, "{long_run:#}");
    // The two profiles are two stores: neither run reused the other's games.
    assert_eq!(
        std::fs::read_dir(root.join("A/.generate")).unwrap().count(),
        2
    );

    // A key neither section has, or a tier [release.tiers] lacks, is an error
    // naming the table.
    for (bad, named) in [
        ("chaos_elo = [1400, 1450]", "generate.tiers.long.selfplay"),
        ("seed = 3", "generate.tiers.long.selfplay"),
    ] {
        let config = text.replace("chaos_white_elo = [1400, 1450]", bad);
        std::fs::write(root.join("b.toml"), config).unwrap();
        let out = fails(
            root,
            &[
                "run",
                "--config",
                "b.toml",
                "--tier",
                "long",
                "--release",
                "bad",
            ],
        );
        assert!(out.contains(named), "{bad}: {out}");
    }
    std::fs::write(
        root.join("c.toml"),
        text.replace("[generate.tiers.long.mine]", "[generate.tiers.lnog.mine]"),
    )
    .unwrap();
    let out = fails(root, &["run", "--config", "c.toml", "--release", "c"]);
    assert!(out.contains("generate.tiers.lnog"), "{out}");
    // A key no section has is an error even where this run does not play
    // the table: a tier not asked for, a profile no band names.
    for (bad, named) in [
        (
            "[generate.tiers.long.mine]\nmin_solver_mvoes = 2\n",
            "generate.tiers.long.mine",
        ),
        (
            "[generate.profiles.spare.mine]\nratings = [400, 800]\n",
            "generate.profiles.spare.mine",
        ),
    ] {
        let config = text.replace("[generate.tiers.long.mine]\nmin_solver_moves = 2\n", bad);
        std::fs::write(root.join("d.toml"), config).unwrap();
        let out = fails(root, &["run", "--config", "d.toml", "--release", "d"]);
        assert!(out.contains(named), "{bad}: {out}");
    }
}

#[test]
fn bench_generate_sets_the_funnel_beside_the_exhaustive_search_on_the_same_games() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "a.toml", "A", 2, "");
    let out = run(
        root,
        &[
            "bench",
            "generate",
            "--config",
            "a.toml",
            "--games",
            "6",
            "--seed",
            "11",
            "--exhaustive-every",
            "2",
            "--dir",
            "work",
        ],
    );
    let ours = &out["puzzleforge"];
    let epoch = &out["epoch_modelled"];
    let sample = &out["sample"];
    // Every step of a target run's batch spent engine time.
    let steps = ours["cpu_seconds_by_step"].as_object().unwrap();
    let names: Vec<&str> = steps.keys().map(String::as_str).collect();
    assert_eq!(names, ["selfplay", "mine", "rate", "verify"], "{out:#}");
    assert!(steps.values().all(|s| s.as_f64().unwrap() > 0.0), "{out:#}");
    // Games 1, 3 and 5 were sampled; the exhaustive search analysed every
    // position the funnel did, with more nodes.
    assert_eq!(epoch["sample_games"], 3, "{out:#}");
    assert!(sample["nodes_ratio"].as_f64().unwrap() > 1.0, "{out:#}");
    let found = sample["found"].as_u64().unwrap();
    assert!(found <= sample["exhaustive_candidates"].as_u64().unwrap());
    assert!(found <= sample["funnel_candidates"].as_u64().unwrap());
    // Verified puzzles are mined puzzles, and the games are kept in --dir.
    assert!(ours["verified"].as_u64().unwrap() <= ours["mined"].as_u64().unwrap());
    let games = std::fs::read_to_string(root.join("work/batch-00000001-00000006/games.pgn"));
    assert_eq!(games.unwrap().matches("[Event ").count(), 6);
}

/// Profiles per band: the cells a band holds are played for by its named
/// profile, in games of its own (its players, its store, its seed), the
/// rest by generation's own profile; each stops on its own cells, the
/// release holds both, and a shard pair + merge gives the same bytes.
#[test]
fn each_band_is_filled_by_its_own_profile_and_shards_merge_to_the_same_release() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bands = "batch_games = 3\nmax_games = 12\n\
        [generate.selfplay]\nchaos_white_elo = [1600, 1650]\nchaos_black_elo = [1600, 1650]\n\
        [[generate.bands]]\nratings = [0, 1500]\nlengths = [1, 1]\nmate = \"no_mate\"\nprofile = \"low\"\n\
        [generate.profiles.low.selfplay]\nchaos_white_elo = [1350, 1400]\nchaos_black_elo = [1350, 1400]\n";
    for (name, output) in [("a.toml", "A"), ("b.toml", "B")] {
        let path = generation_config(root, name, output, 2, bands);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("bin_width = 3000", "bin_width = 1500")
            .replace(
                "train_per_cell = 2\ntest_per_cell = 1",
                "train_per_cell = 1\ntest_per_cell = 1",
            );
        std::fs::write(&path, text).unwrap();
    }
    let output = puzzleforge(root, &["run", "--config", "a.toml", "--json"]);
    let single = summary(&output);
    let generated = &single["generate"];
    // The last progress line counts the cells as the release fills them,
    // every profile's puzzles in every cell.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last: Value = stderr
        .lines()
        .rfind(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap_or_else(|| panic!("no progress line: {stderr}"));
    assert_eq!(last["cells"], generated["cells"], "{last} {generated:#}");
    assert_eq!(
        last["cells_filled"], generated["cells_filled"],
        "{last} {generated:#}"
    );
    let profiles = generated["profiles"]
        .as_array()
        .expect("a report per profile");
    assert_eq!(profiles.len(), 2, "{generated:#}");
    assert_eq!(profiles[0]["profile"], Value::Null);
    assert_eq!(profiles[1]["profile"], "low");
    for profile in profiles {
        assert_eq!(profile["cells"], 1, "one cell each: {profile:#}");
    }
    // Two stores, and both profiles' players in the release's games, their
    // game ids apart.
    assert_eq!(
        std::fs::read_dir(root.join("A/.generate")).unwrap().count(),
        2
    );
    let elos = elo_tags(&root.join("A/gen/selfplay"));
    assert!(elos.iter().any(|e| (1600..=1650).contains(e)), "{elos:?}");
    assert!(elos.iter().any(|e| (1350..=1400).contains(e)), "{elos:?}");
    assert!(
        elos.iter()
            .all(|e| (1350..=1400).contains(e) || (1600..=1650).contains(e))
    );
    let pgn = std::fs::read_to_string(root.join("A/gen/selfplay/games.pgn")).unwrap();
    let seeds: std::collections::BTreeSet<&str> =
        pgn.lines().filter(|l| l.starts_with("[Seed ")).collect();
    assert_eq!(seeds.len(), 2, "one seed per profile: {seeds:?}");

    for shard in ["0/2", "1/2"] {
        let part = run(root, &["run", "--config", "b.toml", "--shard", shard]);
        assert_eq!(part["generate"]["stop"], "shard_slice", "{part:#}");
    }
    run(
        root,
        &[
            "merge",
            "B/gen.shard-0-of-2",
            "B/gen.shard-1-of-2",
            "-o",
            "B/gen",
            "--config",
            "b.toml",
        ],
    );
    assert_same_release(&root.join("A/gen"), &root.join("B/gen"));

    // A band naming no profile of [generate.profiles] is refused.
    let text = std::fs::read_to_string(root.join("a.toml"))
        .unwrap()
        .replace("profile = \"low\"", "profile = \"lwo\"");
    std::fs::write(root.join("c.toml"), text).unwrap();
    let out = fails(root, &["run", "--config", "c.toml", "--release", "c"]);
    assert!(
        out.contains("generate.bands") && out.contains("lwo"),
        "{out}"
    );
}

/// The puzzle ids of a release's train and test files.
fn release_ids(release: &Path) -> std::collections::BTreeSet<String> {
    ["train.csv", "test.csv"]
        .iter()
        .flat_map(|f| puzzleforge::chess::record::read_puzzles(&release.join(f)).unwrap())
        .map(|p| p.id)
        .collect()
}

/// Two releases generated at once from one store take turns on each batch
/// (neither fails, no batch is played twice) and share no puzzle. Every
/// stored batch proves its bytes: a file changed after it was stored is
/// refused (exit 2) by a run and by a merge, naming the file and what
/// plays it again; removed, the batch is played again. An `exclude`
/// file's unreadable row is an error naming the file and the line.
#[test]
fn batches_are_shared_by_runs_at_once_and_prove_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "a.toml", "A", 2, "batch_games = 4\nmax_games = 40");
    let children: Vec<std::process::Child> = ["one", "two"]
        .iter()
        .map(|release| {
            std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
                .current_dir(root)
                .args(["run", "--config", "a.toml", "--release", release])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
    }
    let (one, two) = (
        release_ids(&root.join("A/one/release")),
        release_ids(&root.join("A/two/release")),
    );
    // Whichever drew second excluded the first's puzzles (here: all it had).
    assert!(!one.is_empty() || !two.is_empty());
    assert!(one.is_disjoint(&two), "{:?}", one.intersection(&two));
    let drawn_first = if one.is_empty() { "two" } else { "one" };
    let stored = batches(&root.join("A"));
    let store = std::fs::read_dir(root.join("A/.generate"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let leftovers: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Shards of another release reuse the stored batches.
    generation_config(root, "s.toml", "A", 2, "batch_games = 4\nmax_games = 8");
    for shard in ["0/2", "1/2"] {
        run(
            root,
            &[
                "run",
                "--config",
                "s.toml",
                "--release",
                "s",
                "--shard",
                shard,
            ],
        );
    }
    assert_eq!(batches(&root.join("A")), stored);

    // A batch's verified puzzles edited after the shards played it, with
    // the edit's sha256 written into its batch.json (which then vouches
    // for it): merge refuses the batch from the shards' own record.
    let first = store.join("batch-00000001-00000004");
    let (verified, record) = (first.join("verified.csv"), first.join("batch.json"));
    let (verified_bytes, record_bytes) = (
        std::fs::read(&verified).unwrap(),
        std::fs::read(&record).unwrap(),
    );
    let edited = [verified_bytes.as_slice(), b"\n"].concat();
    std::fs::write(&verified, &edited).unwrap();
    let mut vouching: Value = serde_json::from_slice(&record_bytes).unwrap();
    vouching["files"]["verified.csv"] = json!(format!("{:x}", sha2::Sha256::digest(&edited)));
    std::fs::write(&record, serde_json::to_vec(&vouching).unwrap()).unwrap();
    let merge_s = [
        "merge",
        "A/s.shard-0-of-2",
        "A/s.shard-1-of-2",
        "-o",
        "A/s",
        "--config",
        "s.toml",
    ];
    let merged = fails(root, &merge_s);
    for named in ["batch-00000001-00000004/batch.json", "changed", "remove"] {
        assert!(merged.contains(named), "{named}: {merged}");
    }
    assert!(!root.join("A/s/release").exists());
    std::fs::write(&verified, &verified_bytes).unwrap();
    std::fs::write(&record, &record_bytes).unwrap();

    // One byte of a stored batch changes.
    let batch = store.join("batch-00000005-00000008");
    let games = batch.join("games.pgn");
    let mut text = std::fs::read_to_string(&games).unwrap();
    text.push('\n');
    std::fs::write(&games, text).unwrap();
    let merged = fails(root, &merge_s);
    for named in ["batch-00000005-00000008/games.pgn", "remove"] {
        assert!(merged.contains(named), "{named}: {merged}");
    }
    let rerun = fails(root, &["run", "--config", "a.toml", "--release", "three"]);
    for named in [
        "batch-00000005-00000008/games.pgn",
        "changed or missing",
        "remove",
    ] {
        assert!(rerun.contains(named), "{named}: {rerun}");
    }
    assert!(!root.join("A/three/release").exists());
    // Removed, the batch is played again.
    std::fs::remove_dir_all(&batch).unwrap();
    run(root, &["run", "--config", "a.toml", "--release", "three"]);
    assert!(batch.join("batch.json").is_file());

    // An exclude file whose second row has no moves.
    let train = std::fs::read_to_string(root.join("A").join(drawn_first).join("release/train.csv"))
        .unwrap();
    let mut lines: Vec<String> = train.lines().map(str::to_string).collect();
    let moves = lines[0].split(',').position(|c| c == "Moves").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    cells[moves] = String::new();
    lines[1] = cells.join(",");
    std::fs::write(root.join("exclude.csv"), lines.join("\n") + "\n").unwrap();
    generation_config(
        root,
        "x.toml",
        "A",
        2,
        "batch_games = 4\nmax_games = 40\nexclude = [\"exclude.csv\"]",
    );
    let refused = fails(root, &["run", "--config", "x.toml", "--release", "four"]);
    for named in ["exclude.csv", "line 2", "cannot be read"] {
        assert!(refused.contains(named), "{named}: {refused}");
    }
}

/// `run --plan`: a short sample of the target's first games, kept in the
/// store, gives the projected engine CPU-hours per cell and in total, the
/// same bytes on a second call, the cells it never reached, and a run
/// after it plays none of its games again; a run a budget stops says what
/// its unfilled cells would cost.
#[test]
fn a_plan_projects_the_cost_from_a_sample_that_the_run_reuses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Two cells: single-move puzzles of any rating, and mates in one,
    // which these games do not make.
    let path = generation_config(root, "two.toml", "A", 2, "batch_games = 4\nmax_games = 40");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[generate]",
        "[[release.bands]]\nratings = [0, 3000]\nlengths = [1, 1]\nmate = \"mate\"\n\n[generate]",
    );
    std::fs::write(&path, text).unwrap();
    let plan_args = ["run", "--config", "two.toml", "--plan", "--plan-games", "6"];
    let first = run(root, &plan_args);
    let plan = &first["plan"];
    // 6 games, rounded up to whole batches of 4.
    assert_eq!(plan["sample"]["games"], 8, "{first:#}");
    assert_eq!(
        batches(&root.join("A")),
        ["batch-00000001-00000004", "batch-00000005-00000008"]
    );
    assert!(!root.join("A/gen").exists(), "a plan writes no release");
    let cells = plan["per_cell"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{plan:#}");
    let (moves, mates) = (&cells[0], &cells[1]);
    assert_eq!(mates["mate"], true);
    assert_eq!(mates["found"], 0, "{plan:#}");
    assert_eq!(mates["never_reached"], true);
    let spent = plan["spent_cpu_hours"].as_f64().unwrap();
    assert!(spent > 0.0, "{plan:#}");
    assert!(mates["at_least_cpu_hours"].as_f64().unwrap() > spent);
    assert_eq!(plan["never_reached"].as_array().unwrap().len(), 1);
    assert_eq!(plan["total_excludes_never_reached"], true);
    assert!(moves["found"].as_u64().unwrap() > 0, "{plan:#}");
    // The plan file holds the plan; a second call reads the store and
    // gives the same bytes, playing nothing.
    let file = PathBuf::from(first["plan_file"].as_str().unwrap());
    assert_eq!(file, PathBuf::from("A/gen.plan.json"));
    let written = std::fs::read(root.join(&file)).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&written).unwrap(), *plan);
    let second = run(root, &plan_args);
    assert_eq!(second, first);
    assert_eq!(std::fs::read(root.join(&file)).unwrap(), written);
    assert_eq!(batches(&root.join("A")).len(), 2);

    // The reached cell alone: every cell reached, a finite positive total
    // with its interval, from the same stored games.
    let one = generation_config(root, "one.toml", "A", 2, "batch_games = 4\nmax_games = 8");
    let reached = run(
        root,
        &["run", "--config", "one.toml", "--plan", "--plan-games", "8"],
    );
    let total = &reached["plan"]["total_cpu_hours"];
    let [low, median, high] = ["low", "median", "high"].map(|k| total[k].as_f64().unwrap());
    assert!(median.is_finite() && median > 0.0, "{reached:#}");
    assert!(low <= median && median <= high, "{reached:#}");
    assert!(median >= spent);
    assert_eq!(reached["plan"]["cells_never_reached"], 0);
    assert_eq!(reached["plan"]["total_excludes_never_reached"], false);
    assert_eq!(
        batches(&root.join("A")).len(),
        2,
        "the store's games reused"
    );

    // Cells above the ratings the committed model gives 3-move lines
    // without extrapolating (about 2925): named as beyond the model, not
    // as merely not reached, and no budget is projected for them.
    let top = std::fs::read_to_string(&one)
        .unwrap()
        .replace("bin_width = 3000", "bin_width = 100")
        .replace(
            "ratings = [0, 3000]\nlengths = [1, 1]\nmate = \"no_mate\"",
            "ratings = [3000, 3100]\nlengths = [3, 3]\nmate = \"both\"",
        );
    std::fs::write(root.join("top.toml"), top).unwrap();
    let beyond = run(
        root,
        &["run", "--config", "top.toml", "--plan", "--plan-games", "8"],
    );
    let plan = &beyond["plan"];
    assert_eq!(plan["cells_beyond_model_range"], 2, "{beyond:#}");
    assert_eq!(plan["beyond_model_range"].as_array().unwrap().len(), 2);
    assert_eq!(plan["cells_never_reached"], 0, "{beyond:#}");
    assert_eq!(plan["per_cell"][0]["beyond_model_range"], true);
    assert_eq!(batches(&root.join("A")).len(), 2, "no game played");

    // A run after the plan plays none of the sample's games: its batches
    // are the plan's, their records untouched.
    let batch_json =
        |name: &str| std::fs::read(store(&root.join("A")).join(name).join("batch.json"));
    let recorded = batch_json("batch-00000001-00000004").unwrap();
    let short = run(root, &["run", "--config", "one.toml"]);
    let generated = &short["generate"];
    assert_eq!(generated["last_game"], 8, "{short:#}");
    assert_eq!(batches(&root.join("A")).len(), 2);
    assert_eq!(batch_json("batch-00000001-00000004").unwrap(), recorded);
    // max_games ended it with the cell unfilled: the summary says what the
    // cell would cost at the rate its games measured, and what to raise.
    if generated["stop"] == "max_games" {
        let cost = &generated["cost_of_unfilled"];
        assert!(
            cost["more_cpu_hours"]["median"].as_f64().unwrap() > 0.0,
            "{short:#}"
        );
        assert!(cost["suggested"]["max_games"].as_u64().unwrap() > 8);
    } else {
        assert_eq!(generated["stop"], "quotas_met", "{short:#}");
        assert_eq!(generated["cost_of_unfilled"], Value::Null);
    }
    generation_config(root, "one.toml", "A", 2, "batch_games = 4\nmax_games = 40");
    let full = run(root, &["run", "--config", "one.toml", "--release", "full"]);
    assert_eq!(full["generate"]["stop"], "quotas_met", "{full:#}");
    let after = batches(&root.join("A"));
    assert!(after[..2] == ["batch-00000001-00000004", "batch-00000005-00000008"]);
    assert_eq!(batch_json("batch-00000001-00000004").unwrap(), recorded);
    assert!(
        after[2..].iter().all(|b| b.as_str() > "batch-00000008"),
        "{after:?}"
    );

    // A plan prices generation whether [generate] is on or not (it says
    // which), reusing the sample above; its flags need --plan.
    let off = std::fs::read_to_string(&one)
        .unwrap()
        .replace("enabled = true", "enabled = false");
    std::fs::write(root.join("off.toml"), off).unwrap();
    let output = puzzleforge(root, &["run", "--config", "off.toml", "--plan"]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("[generate] is off") && err.contains("planned as if on"),
        "{err}"
    );
    let out = fails(root, &["run", "--config", "one.toml", "--plan-games", "4"]);
    assert!(out.contains("--plan"), "{out}");
}

/// The one store under `output`.
fn store(output: &Path) -> PathBuf {
    let stores: Vec<PathBuf> = std::fs::read_dir(output.join(".generate"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stores.len(), 1, "one store: {stores:?}");
    stores[0].clone()
}

/// A sample that found no puzzle in the target (a mate-in-one cell these
/// games do not make) promises nothing it cannot show: the plan gives a
/// lower bound and an unknown chance, never an interval or 100%. A run
/// that then ends with too few puzzles for the release still prints its
/// generation summary and the cost of what is missing, and exits 2.
#[test]
fn a_sample_without_a_puzzle_promises_nothing_and_a_short_run_still_prices_its_cells() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mates = |name: &str, generate: &str, min_puzzles: usize| {
        let path = generation_config(root, name, "M", 2, generate);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("mate = \"no_mate\"", "mate = \"mate\"")
            .replace("min_puzzles = 0", &format!("min_puzzles = {min_puzzles}"));
        std::fs::write(&path, text).unwrap();
    };
    mates("plan.toml", "batch_games = 4\nmax_games = 10", 0);
    let output = puzzleforge(
        root,
        &[
            "run",
            "--config",
            "plan.toml",
            "--plan",
            "--plan-games",
            "4",
            "--json",
        ],
    );
    let human = String::from_utf8_lossy(&output.stderr).into_owned();
    let plan = &summary(&output)["plan"];
    assert_eq!(plan["sample"]["games"], 4, "{plan:#}");
    assert_eq!(plan["per_cell"][0]["found"], 0, "{plan:#}");
    let spent = plan["spent_cpu_hours"].as_f64().unwrap();
    let at_least = plan["total_cpu_hours"]["at_least"].as_f64().unwrap();
    assert!(at_least > spent, "{plan:#}");
    assert_eq!(plan["total_cpu_hours"]["median"], Value::Null, "{plan:#}");
    let profile = &plan["profiles"][0];
    assert_eq!(profile["quotas_met"], false);
    assert_eq!(
        profile["projected_games"]["median"],
        Value::Null,
        "{plan:#}"
    );
    assert!(profile["projected_games"]["at_least"].as_f64().unwrap() > 4.0);
    assert_eq!(plan["budget"]["chance_within_max_games"], "unknown");
    assert_eq!(plan["budget"]["cells_without_a_rate"], 1);
    assert_eq!(plan["wall_hours"]["median"], Value::Null, "{plan:#}");
    for claim in [
        "projected: at least",
        "is enough is unknown",
        "no rate is measured",
    ] {
        assert!(human.contains(claim), "{claim}: {human}");
    }
    for promise in ["100%", "90% interval", "probability"] {
        assert!(!human.contains(promise), "{promise}: {human}");
    }

    // The run after it: max_games = 4 ends it on the sample's games (none
    // played again), the release would hold no puzzle: exit 2, after the
    // generation summary with what the cell would cost.
    mates("run.toml", "batch_games = 4\nmax_games = 4", 1);
    let output = puzzleforge(root, &["run", "--config", "run.toml", "--json"]);
    assert_eq!(output.status.code(), Some(2));
    let human = String::from_utf8_lossy(&output.stderr).into_owned();
    for said in [
        "generate: games 1-4 (max_games), cells filled 0/1",
        "unfilled (0, 3000] mate in 1",
        "the whole target needs at least",
        "raise max_games to at least",
        "1 cell never reached",
        "fewer than release.min_puzzles = 1",
    ] {
        assert!(human.contains(said), "{said}: {human}");
    }
    let stdout = String::from_utf8(output.stdout).unwrap();
    let json: Value = serde_json::from_str(stdout.trim()).unwrap();
    let generated = &json["generate"];
    assert_eq!(generated["stop"], "max_games", "{json:#}");
    assert!(generated["engine_cpu_hours"].as_f64().unwrap() > 0.0);
    let cost = &generated["cost_of_unfilled"];
    assert!(cost["total_cpu_hours"]["at_least"].as_f64().unwrap() > 0.0);
    assert_eq!(cost["suggested_is_lower_bound"], true, "{cost:#}");
    assert!(cost["suggested"]["max_games"].as_u64().unwrap() > 4);
    assert!(json["error"].as_str().unwrap().contains("min_puzzles"));
    assert_eq!(batches(&root.join("M")), ["batch-00000001-00000004"]);
}

/// A CPU budget is kept to within about a game, and shared: two profiles
/// whose cells the budget cannot fill both play from the first round, the
/// batches shrink to what the budget leaves, and the run stops within a
/// few games' CPU of it (`batch_games = 20` would overshoot by many games);
/// each progress line counts its profile's games of the max_games set.
#[test]
fn a_cpu_budget_is_kept_within_a_game_and_shared_by_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let budget = 0.004;
    let bands = format!(
        "batch_games = 20\nmax_games = 200\nmax_cpu_hours = {budget}\n\
        [[generate.bands]]\nratings = [0, 1500]\nlengths = [1, 1]\nmate = \"no_mate\"\nprofile = \"low\"\n\
        [generate.profiles.low.selfplay]\nchaos_white_elo = [1350, 1400]\nchaos_black_elo = [1350, 1400]\n"
    );
    let path = generation_config(root, "a.toml", "A", 2, &bands);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("bin_width = 3000", "bin_width = 1500")
        .replace(
            "train_per_cell = 2\ntest_per_cell = 1",
            "train_per_cell = 50\ntest_per_cell = 50",
        );
    std::fs::write(&path, text).unwrap();
    let output = puzzleforge(root, &["run", "--config", "a.toml", "--json"]);
    let run = summary(&output);
    let generated = &run["generate"];
    assert_eq!(generated["stop"], "max_cpu_hours", "{generated:#}");
    let spent = generated["engine_cpu_hours"].as_f64().unwrap();
    let profiles = generated["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2, "{generated:#}");
    let mut most_per_game: f64 = 0.0;
    for profile in profiles {
        let games = profile["last_game"].as_u64().unwrap();
        assert!(games >= 1, "every profile plays: {profile:#}");
        let hours = profile["engine_cpu_hours"].as_f64().unwrap();
        most_per_game = most_per_game.max(hours / games as f64);
    }
    assert!(spent >= budget * 0.9, "{spent} of {budget}: {generated:#}");
    // Within about a game: this test's games cost about half a CPU-second
    // each, so each small batch's fixed cost (rating) weighs on the
    // estimate; measured, 2.2 games over. Batches of 20 would end 8 over.
    assert!(
        spent <= budget + 3.0 * most_per_game,
        "{spent} h against {budget} h, {most_per_game} h a game: {generated:#}"
    );
    // The progress lines: each profile's games of the max_games set.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 2, "{stderr}");
    for line in &lines {
        assert_eq!(line["max_games"], 200, "{line}");
    }
    // The first round: each profile's first batch before either's second.
    let first_of = |profile: &Value| lines.iter().position(|l| l["profile"] == *profile);
    let (own, low) = (first_of(&Value::Null), first_of(&Value::from("low")));
    assert!(
        own.is_some_and(|i| i < 2) && low.is_some_and(|i| i < 2),
        "{stderr}"
    );
}

/// The rows of a puzzle file as maps of column to value.
fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            let record = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(record.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// Branches (`[mine] branch_moves`) add puzzles the games alone do not
/// give, each under its root game's id (so the per-game cap, the dedup,
/// the split and the draw treat a game and its branches as one), keep
/// every puzzle of the games, and give the same release with any number of
/// workers.
#[test]
fn branches_add_puzzles_under_their_games_id_the_same_with_any_workers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let budget =
        "batch_games = 3\nmax_games = 6\n[generate.mine]\nmissed_only = false\nmates = true\n";
    generation_config(root, "plain.toml", "P", 2, budget);
    let branched = format!("{budget}branch_moves = 3\n");
    generation_config(root, "one.toml", "B1", 1, &branched);
    generation_config(root, "two.toml", "B2", 2, &branched);
    for config in ["plain.toml", "one.toml", "two.toml"] {
        run(root, &["run", "--config", config]);
    }
    assert_same_release(&root.join("B1/gen"), &root.join("B2/gen"));

    let mined = |output: &str| {
        let mut rows = Vec::new();
        for batch in batches(&root.join(output)) {
            rows.extend(csv_rows(
                &store(&root.join(output)).join(batch).join("mined.csv"),
            ));
        }
        rows
    };
    let (plain, branched) = (mined("P"), mined("B1"));
    let ids = |rows: &[std::collections::BTreeMap<String, String>]| {
        rows.iter()
            .map(|r| r["PuzzleId"].clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert!(
        ids(&plain).is_subset(&ids(&branched)),
        "a game's puzzle was lost"
    );
    let added: Vec<_> = branched
        .iter()
        .filter(|r| !ids(&plain).contains(&r["PuzzleId"]))
        .collect();
    assert!(!added.is_empty(), "the branches added no puzzle");
    // Each added puzzle carries the id of one of the 6 games it branched.
    for row in &added {
        let game: u64 = row["GameId"]
            .strip_prefix("selfplay-5-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{row:?}"));
        assert!((1..=6).contains(&game), "{row:?}");
    }
    // The batch records count the positions analysed on branches.
    let record: Value = serde_json::from_slice(
        &std::fs::read(
            store(&root.join("B1"))
                .join(&batches(&root.join("B1"))[0])
                .join("batch.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let branches: u64 = record["per_game"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["branches"].as_u64().unwrap_or(0))
        .sum();
    assert!(branches > 0, "{record:#}");
}

/// Renewal without `[generate]`: a release other than the config's
/// `pipeline.release` plays games of its own (a self-play seed from its
/// name), so a later release of the default config mines puzzles the
/// first did not have; the config's own release keeps the run seed (its
/// games are the ones it always played), and a rerun of a later release
/// plays nothing again.
#[test]
fn a_later_release_of_a_fixed_game_count_plays_new_games() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = r#"
[pipeline]
seed = 7
output_dir = "out"
release = "first"
stages = ["selfplay", "mine"]

[engine]
path = "/usr/games/stockfish"
workers = 2

[selfplay]
games = 6
max_plies = 80
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]

[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3
max_per_game = 100
# Found moves and hanging pieces kept: puzzles in a few games.
missed_only = false
trivial_captures = true
"#;
    std::fs::write(root.join("pipeline.toml"), config).unwrap();
    run(root, &["run"]);
    run(root, &["run", "--release", "second"]);
    let games = |release: &str| {
        std::fs::read_to_string(root.join(format!("out/{release}/selfplay/games.pgn"))).unwrap()
    };
    assert!(
        games("first").contains("[Seed \"7\"]"),
        "{}",
        games("first")
    );
    assert!(!games("second").contains("[Seed \"7\"]"));
    let fens = |release: &str| {
        csv_rows(&root.join(format!("out/{release}/mine/games.puzzles.csv")))
            .into_iter()
            .map(|r| r["FEN"].clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (first, second) = (fens("first"), fens("second"));
    assert!(!first.is_empty() && !second.is_empty());
    assert!(
        second.difference(&first).next().is_some(),
        "the second release mined only the first's puzzles"
    );
    // A rerun of the later release plays and mines nothing again.
    let again = run(root, &["run", "--release", "second"]);
    for stage in again["stages"].as_array().unwrap() {
        assert_eq!(stage["skipped"], true, "{stage:#}");
    }
}

/// Issue 67, defect 5: a finished generated release rerun with a larger
/// `max_games` is refused (exit 2, naming the release and the game it
/// would play) before any batch is played: the store holds the batches it
/// held; rerun as it was made, it is accepted.
#[test]
fn a_finished_release_is_refused_before_any_batch_is_played() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generation_config(root, "g.toml", "G", 1, "batch_games = 2\nmax_games = 2\n");
    run(root, &["run", "--config", "g.toml"]);
    let stored = batches(&root.join("G"));
    assert_eq!(stored.len(), 1, "{stored:?}");
    generation_config(root, "g.toml", "G", 1, "batch_games = 2\nmax_games = 6\n");
    let output = puzzleforge(root, &["run", "--config", "g.toml"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for needle in [
        "G/gen/release",
        "never changes",
        "game 3",
        "no game was played",
    ] {
        assert!(stderr.contains(needle), "no {needle:?} in {stderr}");
    }
    assert_eq!(batches(&root.join("G")), stored, "a refused run played");
    generation_config(root, "g.toml", "G", 1, "batch_games = 2\nmax_games = 2\n");
    run(root, &["run", "--config", "g.toml"]);
}

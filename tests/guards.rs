//! What every command guards (issue 36): a finished release no standalone
//! command writes into, exclusion that never silently degrades to nothing,
//! and a config checked whole before any stage runs.

use std::path::{Path, PathBuf};

use crate::common::{data, files_under, puzzleforge as run, summary};

/// A small engine-free pipeline (ingest, release, export) in `dir`,
/// releasing into `out/`.
fn write_config(dir: &Path, extra: &str) -> PathBuf {
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

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[export]
formats = ["lichess"]
split = "test"
{extra}"#,
        puzzles = data("lichess_db_puzzle_subset_1499.csv").display(),
        games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, config).unwrap();
    path
}

/// Every file under `dir` with its bytes.
fn folder_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(dir, &[])
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// Runs `args` in `dir`, expecting exit 2 with every one of `needles` in
/// its stderr; returns the stderr.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let output = run(dir, args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: no {needle:?} in {stderr}"
        );
    }
    stderr
}

/// The ids of a run release's puzzles.
fn release_ids(release: &Path) -> std::collections::BTreeSet<String> {
    ["train.csv", "test.csv"]
        .iter()
        .flat_map(|file| puzzleforge::chess::record::read_puzzles(&release.join(file)).unwrap())
        .map(|p| p.id)
        .collect()
}

/// `split -o`, `export -o`, `eval -o` (and a file command) pointed into a
/// finished release, into a run's folder, or at a folder holding releases
/// exit 2 naming the release and the commands that make a new one; not
/// one byte of the release changes. A standalone `split`'s release is as
/// immutable as a run's.
#[test]
fn no_standalone_command_writes_into_a_finished_release() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    let pool = pool.to_str().unwrap();
    let before = folder_bytes(&dir.path().join("out"));
    let new_one = "puzzleforge run --release NEW";
    for (args, named) in [
        (
            vec!["release", pool, "-o", "out/r1/release"],
            "out/r1/release",
        ),
        (
            vec![
                "export",
                "out/r1/release",
                "--format",
                "lichess",
                "-o",
                "out/r1/release",
            ],
            "out/r1/release",
        ),
        (
            vec![
                "eval",
                "out/r1/release",
                "--model",
                "random",
                "--limit",
                "1",
                "-o",
                "out/r1/release",
            ],
            "out/r1/release",
        ),
        (
            vec![
                "eval",
                "out/r1/release",
                "--model",
                "random",
                "--limit",
                "1",
                "-o",
                "out/r1/eval-2",
            ],
            "out/r1",
        ),
        (vec!["release", pool, "-o", "out"], "out/r1/release"),
        (
            vec!["ingest", "puzzles", pool, "-o", "out/r1/release/test.csv"],
            "out/r1/release",
        ),
    ] {
        let stderr = refused(dir.path(), &args, &[named, new_one]);
        assert!(stderr.contains("never changes"), "{stderr}");
    }
    assert!(
        folder_bytes(&dir.path().join("out")) == before,
        "a refused command wrote"
    );

    // A standalone split's release: written once, then refused.
    summary(&run(dir.path(), &["release", "--json", pool, "-o", "mine"]));
    let mine = folder_bytes(&dir.path().join("mine"));
    refused(
        dir.path(),
        &["release", pool, "-o", "mine"],
        &["mine", new_one],
    );
    refused(
        dir.path(),
        &[
            "export",
            "mine",
            "--format",
            "lichess",
            "-o",
            "mine/lichess",
        ],
        &["mine", new_one],
    );
    assert!(folder_bytes(&dir.path().join("mine")) == mine);
    // Beside it is fine.
    summary(&run(
        dir.path(),
        &[
            "export",
            "--json",
            "mine",
            "--format",
            "lichess",
            "-o",
            "mine-lichess",
        ],
    ));
}

/// A folder under the output folder that looks like a release but cannot
/// be read (manifest deleted, corrupt), or a symbolic link to a release,
/// stops the next release (exit 2, naming it and the two ways out) instead
/// of being skipped; a release folder that is a link is refused when
/// written. Once the damage is undone, the release excludes it again.
#[test]
fn exclusion_never_degrades_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json", "--release", "first"]));
    let manifest = dir.path().join("out/first/release/manifest.json");
    let kept = std::fs::read(&manifest).unwrap();
    let ways_out = ["out/first/release", "restore it", "move it out"];

    std::fs::write(&manifest, "{").unwrap();
    refused(dir.path(), &["run", "--release", "second"], &ways_out);
    std::fs::remove_file(&manifest).unwrap();
    let stderr = refused(dir.path(), &["run", "--release", "second"], &ways_out);
    assert!(stderr.contains("missing"), "{stderr}");
    assert!(!dir.path().join("out/second/release").exists());
    std::fs::write(&manifest, &kept).unwrap();

    // A release reached through a link is refused when read ...
    let elsewhere = dir.path().join("elsewhere");
    std::fs::rename(dir.path().join("out/first"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("out/first")).unwrap();
    refused(
        dir.path(),
        &["run", "--release", "second"],
        &["out/first", "symbolic link", "remove the link"],
    );
    // ... and when written.
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(&linked, dir.path().join("out/third")).unwrap();
    refused(
        dir.path(),
        &["run", "--release", "third"],
        &["out/third", "symbolic link"],
    );
    assert_eq!(std::fs::read_dir(&linked).unwrap().count(), 0);
    std::fs::remove_file(dir.path().join("out/third")).unwrap();
    std::fs::remove_file(dir.path().join("out/first")).unwrap();
    std::fs::rename(&elsewhere, dir.path().join("out/first")).unwrap();

    summary(&run(dir.path(), &["run", "--json", "--release", "second"]));
    let (first, second) = (
        release_ids(&dir.path().join("out/first/release")),
        release_ids(&dir.path().join("out/second/release")),
    );
    assert!(!first.is_empty() && first.is_disjoint(&second));
}

/// `output_dir` must name a real folder: empty (which turned exclusion
/// off) and the filesystem root are refused before anything is written.
#[test]
fn output_dir_empty_or_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    for bad in ["\"\"", "\"/\"", "\"/..\""] {
        let line = format!("output_dir = {bad}");
        std::fs::write(&config, text.replace("output_dir = \"out\"", &line)).unwrap();
        refused(dir.path(), &["run"], &["pipeline.toml", "output_dir"]);
    }
    assert!(!dir.path().join("r1").exists());
    assert!(!Path::new("/r1").exists());
}

/// Every range of the config has bounds, checked before any stage: a huge
/// band (which hung at 10 GB), a huge length, a negative rating, two rows
/// for one cell, zero or NaN deadlines and a NaN threshold are errors
/// naming the file and key, and `[release]` is checked without `[generate]`
/// before ingest runs; so are a tier's theme that is not a Lichess theme,
/// and a stage list out of pipeline order or naming a stage twice (which
/// once failed in `release` after ingest, or ran with exit 0).
#[test]
fn config_is_checked_whole_before_any_stage() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    let band = "ratings = [400, 2000]\nlengths = [1, 2]";
    let cell =
        "\n[[release.cells]]\nbin = [400, 500]\nlength = 1\nmate = false\ntrain = 1\ntest = 1\n";
    let cases: Vec<(String, &[&str])> = vec![
        (
            text.replace(band, "ratings = [400, 2000000000]\nlengths = [1, 2]"),
            &["release", "2000000000", "4000"],
        ),
        (
            text.replace(band, "ratings = [400, 2000]\nlengths = [1, 1000000]"),
            &["release", "1000000", "10"],
        ),
        (
            text.replace(band, "ratings = [-4000, 2000]\nlengths = [1, 2]"),
            &["release", "-4000"],
        ),
        (
            text.replace("[release]\n", "[release]\nbin_width = 1\n")
                .replace(band, "ratings = [0, 4000]\nlengths = [1, 10]"),
            &["release", "10000 cells"],
        ),
        (format!("{text}{cell}{cell}"), &["release", "two cell rows"]),
        (
            format!("{text}\n[engine]\ndeadline_secs = 0\n"),
            &["engine.deadline_secs"],
        ),
        (
            format!("{text}\n[engine]\ndeadline_secs = nan\n"),
            &["engine.deadline_secs", "NaN"],
        ),
        (
            format!("{text}\n[ingest.games]\nmin_win_chance_gain = nan\n"),
            &["ingest.games.min_win_chance_gain"],
        ),
        (
            format!("{text}\n[ingest.puzzles]\nmin_rating = 2000\nmax_rating = 1000\n"),
            &["ingest.puzzles.min_rating", "max_rating"],
        ),
        (
            format!("{text}\n[release.tiers.hard]\nmin_rating = -5\n"),
            &["release.tiers.hard.min_rating"],
        ),
        (
            format!("{text}\n[release.tiers.hard]\nthemes_all = [\"forkk\"]\n"),
            &[
                "release.tiers.hard.themes_all",
                "forkk",
                "not a Lichess theme",
            ],
        ),
        (
            text.replace(
                r#"stages = ["ingest_puzzles", "ingest_games", "release", "export"]"#,
                r#"stages = ["release", "ingest_puzzles"]"#,
            ),
            &["pipeline.stages", "ingest_puzzles comes after release"],
        ),
        (
            text.replace(
                r#"stages = ["ingest_puzzles", "ingest_games", "release", "export"]"#,
                r#"stages = ["ingest_puzzles", "ingest_puzzles", "release"]"#,
            ),
            &["pipeline.stages", "ingest_puzzles is listed twice"],
        ),
    ];
    for (bad, needles) in cases {
        std::fs::write(&config, &bad).unwrap();
        let mut all = vec!["pipeline.toml"];
        all.extend_from_slice(needles);
        refused(dir.path(), &["run"], &all);
        assert!(
            !dir.path().join("out/r1").exists(),
            "{needles:?}: a stage ran"
        );
    }
}

/// Every absurd value issue 57 found starting work (or passing
/// silently) is refused before any stage, exit 2, naming the file, the
/// key and its bound: a key out of its bound in any section (a profile's
/// too), keys that bound each other, a quota table of zeros, a stage
/// list with no games to play. The bounds are the code's one list
/// (docs/config-bounds.md).
#[test]
fn a_value_out_of_its_bound_is_refused_before_any_stage() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    let stages = r#"stages = ["ingest_puzzles", "ingest_games", "release", "export"]"#;
    let with_stages = |list: &str, extra: &str| {
        format!(
            "{}\n{extra}",
            text.replace(stages, &format!("stages = {list}"))
        )
    };
    let selfplay = r#"["selfplay", "mine", "rate", "release"]"#;
    let generation = "[generate]\nenabled = true\nmax_games = 20\n";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!(
                "{text}\n{generation}[[generate.bands]]\nratings = [2800, 400]\nlengths = [3, 5]\nprofile = \"hard\"\n"
            ),
            vec!["generate.bands.ratings = [2800, 400]", "an empty range"],
        ),
        (
            with_stages(
                selfplay,
                "[mine]\nmin_solver_moves = 4\nmax_solver_moves = 2\n",
            ),
            vec!["mine.min_solver_moves = 4 is above max_solver_moves = 2"],
        ),
        (
            format!("{text}\n[mine]\nmax_per_game = 0\n"),
            vec!["mine.max_per_game = 0 (line", "must lie within 1..=10000"],
        ),
        (
            format!("{text}\n[mine]\nmax_solver_moves = 0\n"),
            vec!["mine.max_solver_moves = 0", "must lie within 1..=10"],
        ),
        (
            format!("{text}\n[mine]\nmax_solver_moves = 50\n"),
            vec!["mine.max_solver_moves = 50", "must lie within"],
        ),
        (
            format!("{text}\n[mine]\nnodes = 0\n"),
            vec!["mine.nodes = 0", "must lie within"],
        ),
        (
            format!("{text}\n[mine]\ndepth = 0\n"),
            vec!["mine.depth = 0", "must lie within"],
        ),
        (
            format!("{text}\n[mine]\nshallow_depth = 0\n"),
            vec!["mine.shallow_depth = 0", "must lie within"],
        ),
        (
            format!("{text}\n[mine]\nshallow_depth = 200\n"),
            vec!["mine.shallow_depth = 200", "must lie within"],
        ),
        (
            format!("{text}\n[verify]\nfactor = 0\n"),
            vec!["verify.factor = 0", "must lie within"],
        ),
        (
            format!("{text}\n[verify]\nmin_margin_cp = -500\n"),
            vec!["verify.min_margin_cp = -500", "must lie within"],
        ),
        (
            text.replace(
                "train_per_cell = 1\ntest_per_cell = 1",
                "train_per_cell = 0\ntest_per_cell = 0",
            ),
            vec!["release.train_per_cell", "every cell's quota is 0"],
        ),
        (
            format!("{text}\n[eval]\nrepeats = 0\n"),
            vec!["eval.repeats = 0", "must lie within"],
        ),
        (
            format!("{text}\n[eval]\nrating_bin_width = 0\n"),
            vec!["eval.rating_bin_width = 0", "must lie within"],
        ),
        (
            format!("{text}\n[eval.regret]\nnodes = 0\n"),
            vec!["eval.regret.nodes = 0", "must lie within"],
        ),
        (
            format!("{text}\n[rate]\nproxy_share = 2.0\n"),
            vec!["rate.proxy_share = 2.0", "must lie within 0..=1"],
        ),
        (
            format!("{text}\n[selfplay]\nchaos_plies = 100000\n"),
            vec!["selfplay.chaos_plies = 100000", "must lie within"],
        ),
        (
            text.replace("[release]\n", "[release]\nmin_puzzles = 1000000000\n"),
            vec!["release.min_puzzles = 1000000000", "must lie within"],
        ),
        (
            text.replace("[release]\n", "[release]\nmin_puzzles = 100000\n"),
            vec!["release.min_puzzles", "100000 is above the"],
        ),
        (
            format!("{text}\n[engine]\nworkers = 100000\n"),
            vec!["engine.workers = 100000", "must lie within 0..=256"],
        ),
        (
            format!("{text}\n[selfplay]\nmax_plies = 0\n"),
            vec!["selfplay.max_plies = 0", "must lie within"],
        ),
        (
            format!("{text}\n[selfplay]\nchaos_white_elo = [2500, 1500]\n"),
            vec!["selfplay.chaos_white_elo = [2500, 1500]", "empty range"],
        ),
        (
            with_stages(selfplay, "[selfplay]\ngames = 0\n"),
            vec!["selfplay.games", "0 games"],
        ),
        (
            format!("{text}\n[generate.profiles.hard.mine]\nnodes = 0\n"),
            vec!["generate.profiles.hard.mine.nodes = 0", "must lie within"],
        ),
        (
            with_stages(
                selfplay,
                &format!(
                    "{generation}[mine]\nmax_solver_moves = 2\n[generate.mine]\nmin_solver_moves = 3\n"
                ),
            ),
            vec!["min_solver_moves = 3 is above max_solver_moves = 2"],
        ),
    ];
    for (bad, needles) in cases {
        std::fs::write(&config, &bad).unwrap();
        let mut all = vec!["pipeline.toml"];
        all.extend_from_slice(&needles);
        refused(dir.path(), &["run"], &all);
        assert!(
            !dir.path().join("out/r1").exists(),
            "{needles:?}: a stage ran"
        );
    }
    // A standalone command checks its section after its flags.
    let pgn = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn");
    let out = dir.path().join("mined.csv");
    let args = [
        "mine",
        pgn.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--max-per-game",
        "0",
    ];
    refused(
        dir.path(),
        &args,
        &["max_per_game = 0", "must lie within 1..=10000"],
    );
    assert!(!out.exists());
}

/// An edited `rate_model.json` (a base score of 1e300, a tree child out of
/// the tree; and what a damaged file once passed with wrong ratings and
/// exit 0: a deviation of -500, no tree, fewer shifts than groups, a shift
/// of 1e6, a falling map) is refused when loaded (exit 2), naming the file
/// and the field, and no output is written.
#[test]
fn an_edited_rating_model_is_refused_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json");
    let model: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&committed).unwrap()).unwrap();
    let puzzles = data("generated_rated_puzzles.csv");
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit, &str); 7] = [
        (
            "deviation.json",
            |m| m["estimator"]["deviations"]["deviations"][1][3] = serde_json::json!(-500.0),
            "estimator.deviations.deviations[1][3] is -500",
        ),
        (
            "no-trees.json",
            |m| m["estimator"]["trees"]["trees"] = serde_json::json!([]),
            "estimator.trees.trees is empty",
        ),
        (
            "shifts.json",
            |m| {
                m["estimator"]["shifts"]["shifts"]
                    .as_array_mut()
                    .unwrap()
                    .pop();
            },
            "estimator.shifts.shifts has 3 shifts for the model's 4 groups",
        ),
        (
            "shift.json",
            |m| m["estimator"]["shifts"]["shifts"][2] = serde_json::json!(1e6),
            "estimator.shifts.shifts[2] is 1000000",
        ),
        (
            "map.json",
            |m| m["estimator"]["recalibration"]["points"][1][1] = serde_json::json!(100.0),
            "estimator.recalibration.points[1]",
        ),
        (
            "base.json",
            |m| m["estimator"]["trees"]["base_score"] = serde_json::json!(1e300),
            "base_score",
        ),
        (
            "child.json",
            |m| {
                let tree = m["estimator"]["trees"]["trees"][0]
                    .as_str()
                    .unwrap()
                    .to_string();
                let mut nodes: serde_json::Value = serde_json::from_str(&tree).unwrap();
                let split = nodes
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|n| n.is_array())
                    .unwrap();
                split[2] = serde_json::json!(99999);
                m["estimator"]["trees"]["trees"][0] = serde_json::json!(nodes.to_string());
            },
            "child 99999",
        ),
    ];
    for (name, edit, needle) in edits {
        let mut edited = model.clone();
        edit(&mut edited);
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(&edited).unwrap()).unwrap();
        let rated = dir.path().join("rated.csv");
        // In the crate's folder, where the model's nets (models/maia) are.
        refused(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &[
                "rate",
                puzzles.to_str().unwrap(),
                "--model",
                path.to_str().unwrap(),
                "-o",
                rated.to_str().unwrap(),
            ],
            &[name, needle],
        );
        assert!(!rated.exists());
    }
}

/// Edits a rating in `release`'s `train.csv` (its first puzzle to 2999)
/// and writes the file's new sha256 into `manifest.json`, as someone
/// covering the edit would.
fn edit_data_and_manifest(release: &Path) {
    let train = release.join("train.csv");
    let text = std::fs::read_to_string(&train).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    cells[3] = "2999".to_string();
    lines[1] = cells.join(",");
    std::fs::write(&train, lines.join("\n") + "\n").unwrap();
    let path = release.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["outputs"]["train.csv"] =
        serde_json::json!(puzzleforge::core::fileio::sha256_file(&train).unwrap());
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&manifest).unwrap() + "\n",
    )
    .unwrap();
}

/// A release's manifest has a root outside its folder: the registry of
/// releases (`releases.sha256`) of the output folder, or of the folder a
/// `split -o` wrote into. A rating edited in `train.csv` with its new
/// sha256 written into `manifest.json` is refused by `recheck` (and
/// `verify`, its alias) and `export` (exit 2, naming the registry), as
/// `run` refuses it.
#[test]
fn an_edit_of_data_and_manifest_together_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    summary(&run(
        dir.path(),
        &["release", "--json", pool.to_str().unwrap(), "-o", "mine"],
    ));
    let registry = std::fs::read_to_string(dir.path().join("out/releases.sha256")).unwrap();
    assert!(
        registry.ends_with("  r1/release/manifest.json\n"),
        "{registry}"
    );
    for release in ["out/r1/release", "mine"] {
        // Untouched, both read.
        summary(&run(
            dir.path(),
            &[
                "export", "--json", release, "--format", "lichess", "-o", "before",
            ],
        ));
        std::fs::remove_dir_all(dir.path().join("before")).unwrap();
        edit_data_and_manifest(&dir.path().join(release));
        let needles = [release, "releases.sha256", "changed after it was written"];
        refused(
            dir.path(),
            &["export", release, "--format", "lichess", "-o", "after"],
            &needles,
        );
        refused(dir.path(), &["verify", release], &needles);
        refused(dir.path(), &["recheck", release], &needles);
        assert!(!dir.path().join("after").exists());
    }
}

/// Runs the binary in `dir` with its address space capped at `mib` MiB
/// (`ulimit -v`; two malloc arenas, so that the cap bounds what is used,
/// not what each thread's arena reserves).
fn capped(dir: &Path, mib: u64, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {}; exec \"$0\" \"$@\"", mib * 1024))
        .arg(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(args)
        .current_dir(dir)
        .env("MALLOC_ARENA_MAX", "2")
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap()
}

/// Writes `path` (zstd): the sample's header and first rows, then a row
/// whose `Themes` cell is `filler` repeated `count` times, quoted when
/// `quoted`, then the sample's next rows.
fn puzzles_with_a_huge_row(path: &Path, filler: &[u8], count: usize, quoted: bool) {
    use std::io::Write;
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = zstd::Encoder::new(std::fs::File::create(path).unwrap(), 1).unwrap();
    for line in &lines[..21] {
        writeln!(out, "{line}").unwrap();
    }
    out.write_all(b"HUGE01,8/8/8/8/8/8/8/K6k w - - 0 1,a1a2,1500,80,90,100,")
        .unwrap();
    if quoted {
        out.write_all(b"\"").unwrap();
    }
    let chunk = filler.repeat((1 << 20) / filler.len());
    let mut left = count;
    while left > 0 {
        let n = left.min(chunk.len() / filler.len());
        out.write_all(&chunk[..n * filler.len()]).unwrap();
        left -= n;
    }
    if quoted {
        out.write_all(b"\"").unwrap();
    }
    out.write_all(b",https://lichess.org/abcdefgh#1,\n")
        .unwrap();
    for line in &lines[21..41] {
        writeln!(out, "{line}").unwrap();
    }
    out.finish().unwrap();
}

/// Every CSV goes through the one bounded reader: a quoted field of 256
/// Mi line breaks (once a row of 256 MiB, now two stray quotes, each
/// rejected with its line alone) is read by `ingest puzzles`, and an
/// unquoted 512 MiB line is rejected as too long by `split`, each under a
/// 256 MiB address-space cap (they took 8 bytes per line break, and the
/// whole line twice over), with the rows around it kept and numbered
/// right.
#[test]
fn every_csv_reader_is_bounded_and_memory_stays_flat() {
    let dir = tempfile::tempdir().unwrap();
    let quoted = dir.path().join("quoted.csv.zst");
    puzzles_with_a_huge_row(&quoted, b"\n", 256 << 20, true);
    let output = capped(
        dir.path(),
        256,
        &[
            "ingest",
            "puzzles",
            "--json",
            "quoted.csv.zst",
            "-o",
            "pool.csv",
        ],
    );
    let ingest = summary(&output);
    assert_eq!(ingest["rows_read"], 42, "{ingest}");
    assert_eq!(ingest["written"], 40, "{ingest}");
    assert_eq!(
        ingest["rejected_by_reason"]["unclosed_quote"], 2,
        "{ingest}"
    );
    let rejects = std::fs::read_to_string(dir.path().join("pool.csv.rejects.csv")).unwrap();
    // The field's first line break ends line 22.
    let closing = 22 + (256u64 << 20);
    assert!(rejects.contains("\n22,HUGE01,unclosed_quote,"), "{rejects}");
    assert!(rejects.contains("would take more than"), "{rejects}");
    assert!(
        rejects.contains(&format!("\n{closing},,unclosed_quote,")),
        "{rejects}"
    );

    let unquoted = dir.path().join("unquoted.csv.zst");
    puzzles_with_a_huge_row(&unquoted, b"x", 512 << 20, false);
    let output = capped(
        dir.path(),
        256,
        &["release", "--json", "unquoted.csv.zst", "-o", "release"],
    );
    summary(&output);
    let train = std::fs::read_to_string(dir.path().join("release/train.csv")).unwrap();
    assert!(!train.contains("HUGE01"));
}

/// The Maia nets `eval --model maia:NNNN` plays with are held to the same
/// published sha256 as `rate`'s: with the 1100 and 1900 nets swapped the
/// eval exits 2 naming the file (the ladder's nets too); with the real
/// nets its report records the net it played by sha256.
#[test]
fn eval_plays_only_the_pinned_maia_nets_and_records_them() {
    let dir = tempfile::tempdir().unwrap();
    let set = crate::common::puzzle_slice(dir.path(), 3);
    let set = set.to_str().unwrap();
    let nets = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/maia");
    let swapped = dir.path().join("swapped");
    std::fs::create_dir(&swapped).unwrap();
    for rating in (1100..=1900).step_by(100) {
        let from = match rating {
            1100 => 1900,
            1900 => 1100,
            other => other,
        };
        std::fs::copy(
            nets.join(format!("maia-{from}.pb.gz")),
            swapped.join(format!("maia-{rating}.pb.gz")),
        )
        .unwrap();
    }
    let eval = |models: &Path, ladder: bool, out: &str| {
        let mut args = vec![
            "eval",
            "--json",
            set,
            "--model",
            "maia:1100",
            "--no-regret",
            "--maia-models",
            models.to_str().unwrap(),
            "-o",
            out,
        ];
        if !ladder {
            args.push("--no-ladder");
        }
        run(dir.path(), &args)
    };
    for ladder in [false, true] {
        let output = eval(&swapped, ladder, "swapped-run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "ladder {ladder}: {stderr}");
        assert!(stderr.contains("maia-1100.pb.gz"), "{stderr}");
        assert!(stderr.contains("not the Maia-1 1100 net's"), "{stderr}");
    }
    summary(&eval(&nets, false, "real-run"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("real-run/report.json")).unwrap())
            .unwrap();
    let recorded = report["maia_nets"].to_string();
    assert!(
        recorded.contains("e1cf1cd0c96b8a4fa6a275f4b9fd54ed1ffebf9fe44641b9fceded310e9619c4"),
        "{recorded}"
    );
}

/// The pins are the nets the committed rating model was fitted with: one
/// set of nine hashes, whoever checks them.
#[test]
fn the_maia_pins_are_the_rating_models_nets() {
    let model: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json"))
            .unwrap(),
    )
    .unwrap();
    // The model reads some of the nine nets (format 6: 1100 and 1900); each
    // it reads is pinned by the same sha256 as the nets everything else
    // reads.
    let ratings = model["maia"]["ratings"]
        .as_array()
        .expect("the model's nets");
    let sha256 = model["maia"]["sha256"].as_array().expect("their sha256");
    assert_eq!(ratings.len(), sha256.len());
    assert!(!ratings.is_empty());
    for (rating, sha) in ratings.iter().zip(sha256) {
        let pinned = puzzleforge::maia::MAIA_SHA256
            .iter()
            .find(|(r, _)| serde_json::json!(r) == *rating)
            .map(|(_, sha)| serde_json::json!(sha));
        assert_eq!(pinned.as_ref(), Some(sha), "net {rating}");
    }
}

/// Small gaps, each an error naming the value: a release name with a line
/// break, a tab or a right-to-left override (it would read as another
/// name), and `eval --limit 0` (which said "no puzzles" of the file).
#[test]
fn names_that_read_as_others_and_a_zero_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    for name in ["a\nb", "a\tb", "ab\u{202E}lmx.exe"] {
        refused(
            dir.path(),
            &["run", "--release", name],
            &["release name", "U+"],
        );
    }
    assert!(!dir.path().join("out").exists());
    let set = crate::common::puzzle_slice(dir.path(), 3);
    refused(
        dir.path(),
        &[
            "eval",
            set.to_str().unwrap(),
            "--model",
            "random",
            "--limit",
            "0",
            "-o",
            "ev",
        ],
        &["--limit 0"],
    );
}

/// One eval at a time per output folder: while another holds the folder's
/// lock (here the test holds it, as a running eval does), a second exits 2
/// naming the holder and writes nothing; once it is free, the eval runs.
#[test]
fn a_second_eval_into_one_folder_exits_naming_the_first() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let set = crate::common::puzzle_slice(dir.path(), 3);
    let out = dir.path().join("ev");
    std::fs::create_dir(&out).unwrap();
    let mut held = std::fs::File::create(out.join(".lock")).unwrap();
    held.lock().unwrap();
    writeln!(held, "pid 4242 host here").unwrap();
    let args = [
        "eval",
        "--json",
        set.to_str().unwrap(),
        "--model",
        "random",
        "--no-regret",
        "--no-ladder",
        "-o",
        "ev",
    ];
    refused(dir.path(), &args, &["another eval", "pid 4242"]);
    assert!(!out.join("report.json").exists());
    drop(held);
    summary(&run(dir.path(), &args));
    assert!(out.join("report.json").exists());
    assert!(!out.join(".lock").exists());
}

/// A tier whose minimum is above its maximum holds no puzzle: `run`
/// refuses it when it checks the config, before any stage, and `split
/// --tier` before reading the pool, each naming the tier's key and both
/// values (a drawn tier only said "the pool has too few puzzles").
#[test]
fn a_tier_with_its_minimum_above_its_maximum_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    for (tier, needles) in [
        (
            "min_rating = 2000\nmax_rating = 1000\n",
            ["release.tiers.hard.min_rating", "2000", "max_rating 1000"],
        ),
        (
            "min_solver_moves = 3\nmax_solver_moves = 2\n",
            [
                "release.tiers.hard.min_solver_moves",
                "3",
                "max_solver_moves 2",
            ],
        ),
    ] {
        let config = write_config(dir.path(), &format!("\n[release.tiers.hard]\n{tier}"));
        let mut all = vec!["pipeline.toml"];
        all.extend_from_slice(&needles);
        let stderr = refused(dir.path(), &["run"], &all);
        assert!(!stderr.contains("too few puzzles"), "{stderr}");
        assert!(!dir.path().join("out/r1").exists(), "{tier}: a stage ran");

        let pool = data("lichess_db_puzzle_subset_1499.csv");
        let stderr = refused(
            dir.path(),
            &[
                "release",
                pool.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--tier",
                "hard",
                "-o",
                "hard",
            ],
            &all,
        );
        assert!(!stderr.contains("too few puzzles"), "{stderr}");
        assert!(!dir.path().join("hard").exists(), "{tier}: split wrote");
    }
}

/// A `[verify.second_engine] path` that is no executable is named as the
/// config key it came from (and the config file), not as `--engine`,
/// which the user never gave; given by `--second-engine`, as that flag.
#[test]
fn a_missing_second_engine_names_where_its_path_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let set = crate::common::puzzle_slice(dir.path(), 3);
    let set = set.to_str().unwrap();
    std::fs::write(
        dir.path().join("v.toml"),
        "[verify.second_engine]\npath = \"/nowhere/ethereal\"\n",
    )
    .unwrap();
    let stderr = refused(
        dir.path(),
        &["verify", set, "--config", "v.toml", "--workers", "1"],
        &[
            "/nowhere/ethereal",
            "verify.second_engine.path",
            "v.toml",
            "not found",
        ],
    );
    assert!(!stderr.contains("--engine"), "{stderr}");
    let stderr = refused(
        dir.path(),
        &[
            "verify",
            set,
            "--second-engine",
            "/nowhere/ethereal",
            "--workers",
            "1",
        ],
        &["/nowhere/ethereal", "(from --second-engine)", "not found"],
    );
    assert!(!stderr.contains("(from --engine)"), "{stderr}");
}

/// Ingest rejects rows no puzzle can have, as bad rows (file, line,
/// reason; the good rows around them kept): a PuzzleId holding a NUL or
/// another control character, a Rating of -500, a negative NbPlays.
#[test]
fn ingest_rejects_control_characters_in_ids_and_impossible_integers() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().take(7).map(str::to_string).collect();
    // Lines 3 to 6 are broken, one cell each; lines 2 and 7 stay good.
    let edit = |line: &mut String, column: usize, value: &str| {
        let mut cells: Vec<&str> = line.split(',').collect();
        cells[column] = value;
        *line = cells.join(",");
    };
    edit(&mut lines[2], 0, "ab\0cd");
    edit(&mut lines[3], 3, "-500");
    edit(&mut lines[4], 0, "x\u{7}y");
    edit(&mut lines[5], 6, "-3");
    let good: Vec<String> = [1, 6]
        .iter()
        .map(|&i| lines[i].split(',').next().unwrap().to_string())
        .collect();
    std::fs::write(dir.path().join("bad.csv"), lines.join("\n") + "\n").unwrap();
    let json = summary(&run(
        dir.path(),
        &["ingest", "puzzles", "--json", "bad.csv", "-o", "out.csv"],
    ));
    assert_eq!(json["rejected"], 4, "{json}");
    assert_eq!(json["written"], 2, "{json}");
    assert_eq!(json["rejected_by_reason"]["bad_id"], 2, "{json}");
    assert_eq!(json["rejected_by_reason"]["out_of_range"], 2, "{json}");
    let kept: Vec<String> = puzzleforge::chess::record::read_puzzles(&dir.path().join("out.csv"))
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(kept, good);
    let rejects = std::fs::read_to_string(dir.path().join("out.csv.rejects.csv")).unwrap();
    let rows: Vec<&str> = rejects.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{rejects}");
    for (row, start) in rows
        .iter()
        .zip(["3,ab\\u{0}cd,bad_id,", "4,", "5,x\\u{7}y,bad_id,", "6,"])
    {
        assert!(row.starts_with(start), "{start}: {rejects}");
    }
    assert!(rows[0].contains("U+0000"), "{rejects}");
    assert!(
        rows[1].contains("out_of_range,Rating -500 is outside 0..=4000"),
        "{rejects}"
    );
    assert!(
        rows[3].contains("out_of_range,NbPlays -3 is negative"),
        "{rejects}"
    );
    assert!(!rejects.contains('\0'), "a NUL got into the rejects file");
}

/// A stored generation batch whose `batch.json` is gone (a sync that lost
/// it, a hand edit) is damaged input: the next run exits 2 naming the file
/// and saying to remove the batch folder and rerun, as for every other
/// damaged batch file (it exited 1 with "No such file or directory").
#[test]
fn a_stored_batch_without_its_record_says_how_to_play_it_again() {
    let dir = tempfile::tempdir().unwrap();
    // One game of the generation tests' weak players: one stored batch.
    crate::common::generation_config(
        dir.path(),
        "pipeline.toml",
        "out",
        1,
        "max_games = 1\nbatch_games = 1",
    );
    summary(&run(dir.path(), &["run", "--json"]));
    let stores: Vec<PathBuf> = std::fs::read_dir(dir.path().join("out/.generate"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    let batch = stores[0].join("batch-00000001-00000001");
    std::fs::remove_file(batch.join("batch.json")).unwrap();
    let stderr = refused(
        dir.path(),
        &["run", "--release", "two"],
        &[
            "batch-00000001-00000001/batch.json",
            "missing",
            "remove",
            "and rerun",
        ],
    );
    assert!(!stderr.contains("os error"), "{stderr}");
    assert!(!dir.path().join("out/two/release").exists());
}

/// A Lichess CSV of 40 rows with one stray quote on line 22 (it opens a
/// quoted field it never closes): the reader rejects line 22 alone, naming
/// it, and reads the 19 rows after it (they vanished into one
/// `wrong_column_count` reject, exit 0). `read_puzzles`, for files that
/// must be clean, names the line.
#[test]
fn a_stray_quote_rejects_its_line_and_the_rows_after_it_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().take(41).map(str::to_string).collect();
    // Line 22 (the header is line 1): a quote opening its Themes cell.
    let themes = 7;
    let mut cells: Vec<String> = lines[21].split(',').map(str::to_string).collect();
    let stray_id = cells[0].clone();
    cells[themes].insert(0, '"');
    lines[21] = cells.join(",");
    let bad = dir.path().join("stray.csv");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let json = summary(&run(
        dir.path(),
        &["ingest", "puzzles", "--json", "stray.csv", "-o", "out.csv"],
    ));
    assert_eq!(json["rows_read"], 40, "{json}");
    assert_eq!(json["accepted"], 39, "{json}");
    assert_eq!(json["rejected"], 1, "{json}");
    assert_eq!(json["rejected_by_reason"]["unclosed_quote"], 1, "{json}");
    let rejects = std::fs::read_to_string(dir.path().join("out.csv.rejects.csv")).unwrap();
    let rows: Vec<&str> = rejects.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{rejects}");
    assert!(
        rows[0].starts_with(&format!("22,{stray_id},unclosed_quote,")),
        "{rejects}"
    );
    assert!(rows[0].contains("column 8 on line 22"), "{rejects}");
    // Read on, the quote would have swallowed every row after it.
    assert!(
        rows[0].contains("it would take 20 lines, to the end of the file"),
        "{rejects}"
    );
    let kept = puzzleforge::chess::record::read_puzzles(&dir.path().join("out.csv")).unwrap();
    let last_id = lines[40].split(',').next().unwrap();
    assert_eq!(kept.last().map(|p| p.id.as_str()), Some(last_id));

    let error = puzzleforge::chess::record::read_puzzles(&bad).unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("stray.csv line 22: unclosed_quote"),
        "{message}"
    );
}

/// A number no setting can mean (NaN, an infinity, a negative wait, price
/// or share) is refused as the config is read, by `run` before any stage
/// (the release was written and only the eval stage refused `timeout_s =
/// -1`) and by a standalone command's `--config` (which said "invalid
/// type: null, expected f64" for `nan`, naming no file or key): exit 2
/// naming the file, the dotted key, the value and its line.
#[test]
fn nan_infinite_and_negative_numbers_are_refused_as_the_config_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let text = std::fs::read_to_string(&config).unwrap();
    let cases: [(&str, &[&str]); 6] = [
        (
            "[eval.client]\ntimeout_s = -1\n",
            &["eval.client.timeout_s = -1", "must be above 0"],
        ),
        (
            "[eval.client]\ntimeout_s = nan\n",
            &["eval.client.timeout_s = NaN", "must be a finite number"],
        ),
        (
            "[eval.client]\nmax_failed_share = 1.5\n",
            &[
                "eval.client.max_failed_share = 1.5",
                "must lie within 0..=1",
            ],
        ),
        (
            "[eval.prices.some-model]\nprompt_per_million = -2.5\n",
            &[
                "eval.prices.some-model.prompt_per_million = -2.5",
                "must lie within 0..=",
            ],
        ),
        (
            "[engine]\nhandshake_secs = inf\n",
            &["engine.handshake_secs = inf", "finite"],
        ),
        (
            "[generate]\nmax_cpu_hours = 0\n",
            &["generate.max_cpu_hours = 0", "must be above 0"],
        ),
    ];
    for (section, needles) in cases {
        std::fs::write(&config, format!("{text}\n{section}")).unwrap();
        let line = text.lines().count() + 3;
        let mut all = vec!["pipeline.toml"];
        all.extend_from_slice(needles);
        let stderr = refused(dir.path(), &["run"], &all);
        assert!(stderr.contains(&format!("(line {line})")), "{stderr}");
        assert!(!dir.path().join("out").exists(), "{needles:?}: a stage ran");
    }

    // Standalone commands read their section through the same check.
    let puzzles = data("lichess_db_puzzle_subset_1499.csv");
    let puzzles = puzzles.to_str().unwrap();
    std::fs::write(&config, "[eval.client]\ntimeout_s = nan\n").unwrap();
    let needles = [
        "pipeline.toml",
        "eval.client.timeout_s = NaN (line 2)",
        "finite",
    ];
    refused(
        dir.path(),
        &[
            "eval",
            puzzles,
            "--model",
            "random",
            "--config",
            "pipeline.toml",
            "-o",
            "e",
        ],
        &needles,
    );
    assert!(!dir.path().join("e").exists());
    refused(
        dir.path(),
        &["release", puzzles, "--config", "pipeline.toml", "-o", "s"],
        &needles,
    );
    assert!(!dir.path().join("s").exists());
}

/// The path-valued flags that only read (inputs, engines, configs, models)
/// and `merge --output` (a release `merge` writes itself, under its lock,
/// checking a finished one instead of writing it): every other path-valued
/// flag must be one of `puzzleforge::cli::OUTPUT_FLAGS`.
const READ_ONLY_PATH_FLAGS: &[(&str, &str)] = &[
    ("run", "config"),
    ("run", "engine"),
    ("run", "aim"),
    ("merge", "shards"),
    ("merge", "output"),
    ("merge", "config"),
    ("merge", "engine"),
    ("reproduce", "release"),
    ("reproduce", "engine"),
    ("reproduce", "config_dir"),
    ("ingest puzzles", "input"),
    ("ingest games", "input"),
    ("check", "input"),
    ("check", "engine"),
    ("selfplay", "engine"),
    ("mine", "input"),
    ("mine", "engine"),
    ("verify", "input"),
    ("verify", "second_engine"),
    ("verify", "config"),
    ("verify", "engine"),
    ("recheck", "release"),
    ("recheck", "second_engine"),
    ("recheck", "config"),
    ("recheck", "engine"),
    ("rate", "input"),
    ("tag", "puzzles"),
    ("tag", "engine"),
    ("bench tag", "input"),
    ("rate", "calibrate"),
    ("rate", "model"),
    ("rate", "maia"),
    ("rate", "config"),
    ("rate", "evaluate"),
    ("index", "inputs"),
    ("audit", "release"),
    ("audit", "against"),
    ("release", "pool"),
    ("release", "config"),
    ("release", "exclude"),
    ("release", "exclude_releases_under"),
    ("release", "verify"),
    ("release", "generate"),
    ("release", "games"),
    ("export", "release"),
    ("eval", "set"),
    ("eval", "prompt"),
    ("eval", "config"),
    ("eval", "maia_models"),
    ("eval", "engine"),
    ("compare", "run_a"),
    ("compare", "run_b"),
    ("rollout", "prompt"),
    ("rollout", "config"),
    ("rollout", "engine"),
    ("bench pool", "puzzles"),
    ("bench pool", "engine"),
    ("bench ingest", "sample"),
    ("bench ingest", "script"),
    ("bench pgn", "game"),
    ("bench human-games", "games"),
    ("bench mine", "pgn"),
    ("bench mine", "engine"),
    ("bench generate", "config"),
    ("bench generate", "engine"),
    ("bench maia", "models"),
    ("bench maia", "sample"),
    ("bench maia", "script"),
    ("bench maia", "lc0_venv"),
];

/// Every path-valued argument of every command of `command` (by its
/// words and clap id), read off the clap definition the binary parses.
fn path_flags(command: &clap::Command, words: &str, out: &mut Vec<(String, clap::Arg)>) {
    for arg in command.get_arguments() {
        if arg.get_value_parser().type_id() == std::any::TypeId::of::<PathBuf>() {
            out.push((words.to_string(), arg.clone()));
        }
    }
    for sub in command.get_subcommands() {
        let words = format!("{words} {}", sub.get_name());
        path_flags(sub, words.trim(), out);
    }
}

/// The other arguments a command needs to parse (its inputs, and any
/// output it requires pointed at a fresh folder), by clap id.
fn required_besides(words: &str) -> Vec<(&'static str, Vec<&'static str>)> {
    let pool = "pool.csv";
    match words {
        "ingest puzzles" => vec![("input", vec![pool]), ("output", vec!["-o", "fresh/p.csv"])],
        "ingest games" => vec![
            ("input", vec!["g.pgn"]),
            ("output", vec!["-o", "fresh/c.csv"]),
        ],
        "selfplay" => vec![("output", vec!["-o", "fresh/g.pgn"])],
        "mine" => vec![
            ("input", vec!["g.pgn"]),
            ("output", vec!["-o", "fresh/m.csv"]),
        ],
        "verify" => vec![("input", vec![pool])],
        "rate" => vec![("input", vec![pool]), ("output", vec!["-o", "fresh/r.csv"])],
        "tag" => vec![
            ("puzzles", vec![pool]),
            ("output", vec!["-o", "fresh/t.csv"]),
        ],
        "release" => vec![("pool", vec![pool]), ("output", vec!["-o", "fresh/drawn"])],
        "export" => vec![
            ("release", vec!["fresh/release"]),
            ("format", vec!["--format", "lichess"]),
            ("output", vec!["-o", "fresh/export"]),
        ],
        "eval" => vec![
            ("set", vec![pool]),
            ("model", vec!["--model", "random"]),
            ("output", vec!["-o", "fresh/eval"]),
        ],
        "compare" => vec![("run_a", vec!["a"]), ("run_b", vec!["b"])],
        "index" => vec![
            ("inputs", vec![pool]),
            ("output", vec!["-o", "fresh/i.idx"]),
        ],
        "audit" => vec![("release", vec![pool])],
        "reproduce" => vec![("release", vec!["fresh/release"])],
        "rollout" => vec![
            ("model", vec!["--model", "random"]),
            ("output", vec!["-o", "fresh/rollout"]),
        ],
        _ => Vec::new(),
    }
}

/// Every path-valued output flag of every command, read off the clap
/// definition, pointed into a finished release, into a run's stage folder
/// or through a symbolic link into the release: exit 2 naming the flag and
/// the folder, before any work, and not one byte of the release changes.
/// A path-valued flag that is neither an output nor known to read only
/// fails the test, so a new flag cannot skip the gate.
#[test]
fn every_output_flag_of_every_command_is_refused_in_a_finished_release() {
    use puzzleforge::stages::release::folder::Target;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    std::os::unix::fs::symlink("out/r1/release", dir.path().join("link")).unwrap();
    let before = folder_bytes(&dir.path().join("out"));

    let mut flags = Vec::new();
    path_flags(&puzzleforge::cli::command(), "", &mut flags);
    let outputs = puzzleforge::cli::OUTPUT_FLAGS;
    let unclassified: Vec<String> = flags
        .iter()
        .filter(|(words, arg)| {
            let id = arg.get_id().as_str();
            !outputs.iter().any(|f| f.command == *words && f.id == id)
                && !READ_ONLY_PATH_FLAGS.contains(&(words.as_str(), id))
        })
        .map(|(words, arg)| format!("{words} {}", arg.get_id()))
        .collect();
    assert!(
        unclassified.is_empty(),
        "path-valued flags neither in cli::OUTPUT_FLAGS nor read only: {unclassified:?}"
    );
    for flag in outputs {
        let arg = flags
            .iter()
            .find(|(words, arg)| *words == flag.command && arg.get_id() == flag.id)
            .map(|(_, arg)| arg)
            .unwrap_or_else(|| panic!("{} {}: not a path flag of the CLI", flag.command, flag.id));
        let long = format!("--{}", arg.get_long().expect("output flags are named"));
        let (inside, stage, linked) = match flag.target {
            Target::File => (
                "out/r1/release/train.csv",
                "out/r1/export/new.csv",
                "link/new.csv",
            ),
            Target::Folder => ("out/r1/release", "out/r1/export/new", "link/new"),
        };
        for (path, named) in [
            (inside, "out/r1/release"),
            (stage, "out/r1"),
            (linked, "out/r1/release"),
        ] {
            let mut args: Vec<&str> = flag.command.split(' ').collect();
            for (id, tokens) in required_besides(flag.command) {
                if id != flag.id {
                    args.extend(tokens);
                }
            }
            args.extend([long.as_str(), path]);
            let stderr = refused(dir.path(), &args, &[&long, named, "never changes"]);
            assert!(stderr.contains(path), "{args:?}: {stderr}");
        }
    }
    assert!(
        folder_bytes(&dir.path().join("out")) == before,
        "a refused command wrote"
    );
    assert!(
        !dir.path().join("fresh").exists(),
        "a refused command wrote"
    );
}

/// The output paths a command derives are gated as its flags are:
/// `verify` with no `-o` (its report beside the input, here inside a
/// release), `eval -o DIR` whose `DIR/cache` is a link into a release and
/// `rate -o FILE` whose `FILE.rejects.csv` is one.
#[test]
fn derived_output_paths_are_refused_in_a_finished_release() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    let before = folder_bytes(&dir.path().join("out"));
    refused(
        dir.path(),
        &["verify", "out/r1/release/train.csv"],
        &["--output", "out/r1/release", "never changes"],
    );
    std::fs::create_dir(dir.path().join("evals")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("out/r1/release"),
        dir.path().join("evals/cache"),
    )
    .unwrap();
    refused(
        dir.path(),
        &[
            "eval",
            "out/r1/release",
            "--model",
            "random",
            "--limit",
            "1",
            "-o",
            "evals",
        ],
        &["eval.cache_dir", "symbolic link"],
    );
    // `rate`'s rejects, beside its output by default, here a link to a
    // file of the release.
    std::os::unix::fs::symlink(
        dir.path().join("out/r1/release/train.csv"),
        dir.path().join("rated.csv.rejects.csv"),
    )
    .unwrap();
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    refused(
        dir.path(),
        &["rate", pool.to_str().unwrap(), "-o", "rated.csv"],
        &["--rejects", "out/r1/release", "never changes"],
    );
    assert!(!dir.path().join("rated.csv").exists());
    assert!(
        folder_bytes(&dir.path().join("out")) == before,
        "a refused command wrote"
    );
}

/// A file in a release folder that its manifest does not list is damage:
/// `export` and `recheck` (and `verify`, its alias) exit 2 naming it.
#[test]
fn a_file_the_manifest_does_not_list_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    // The release as written reads clean.
    summary(&run(
        dir.path(),
        &[
            "export",
            "--json",
            "out/r1/release",
            "--format",
            "lichess",
            "-o",
            "clean",
        ],
    ));
    std::fs::write(dir.path().join("out/r1/release/extra.csv"), "PuzzleId\n").unwrap();
    for args in [
        vec![
            "export",
            "out/r1/release",
            "--format",
            "lichess",
            "-o",
            "exported",
        ],
        vec!["verify", "out/r1/release"],
        vec!["recheck", "out/r1/release"],
    ] {
        refused(dir.path(), &args, &["extra.csv", "does not list"]);
    }
    assert!(!dir.path().join("exported").exists());
}

/// A generation run named after a finished release that was not generated
/// is refused (exit 2, "never changes") before any game: no generation
/// store is created and the release's files stay as they were.
#[test]
fn a_generation_run_into_a_finished_release_is_refused_before_any_game() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    summary(&run(dir.path(), &["run", "--json"]));
    let before = folder_bytes(&dir.path().join("out/r1/release"));
    crate::common::generation_config(dir.path(), "gen.toml", "out", 1, "");
    refused(
        dir.path(),
        &["run", "--config", "gen.toml", "--release", "r1"],
        &["out/r1/release", "never changes", "--release NEW"],
    );
    assert!(
        !dir.path().join("out/.generate").exists(),
        "a refused run generated"
    );
    assert!(folder_bytes(&dir.path().join("out/r1/release")) == before);
}

/// Issue 67, defect 6: one id rule for every reader: an empty PuzzleId is
/// `missing_id` for `tag`, `rate` and `ingest puzzles` alike (not a
/// puzzle, nor a `duplicate_id`), and a reject keeps the row's id when it
/// could be read (a wrong column count, bytes that are not UTF-8, a row
/// too long, a JSON Lines row with a bad FEN).
#[test]
fn one_id_rule_for_every_reader_and_rejects_keep_a_readable_id() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let mut lines: Vec<Vec<u8>> = text
        .lines()
        .take(4)
        .map(|l| l.as_bytes().to_vec())
        .collect();
    let rest = text.lines().nth(1).unwrap().split_once(',').unwrap().1;
    lines.push(format!(",{rest}").into_bytes());
    lines.push(format!(" ,{rest}").into_bytes());
    lines.push(format!("wcc1,{rest},extra").into_bytes());
    let mut utf = format!("utf1,{rest}").into_bytes();
    utf.push(0xFF);
    lines.push(utf);
    lines.push(format!("long1,{rest} {}", "x".repeat(2 << 20)).into_bytes());
    std::fs::write(root.join("ids.csv"), lines.join(&b'\n')).unwrap();
    // A clean JSON Lines row, as `ingest puzzles` writes one.
    std::fs::write(root.join("one.csv"), lines[..2].join(&b'\n')).unwrap();
    summary(&run(
        root,
        &["ingest", "puzzles", "--json", "one.csv", "-o", "one.jsonl"],
    ));
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(root.join("one.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let mut bad_fen = first.clone();
    bad_fen["PuzzleId"] = "fen1".into();
    bad_fen["FEN"] = "not a fen".into();
    let mut no_id = first.clone();
    no_id["PuzzleId"] = "".into();
    let jsonl: String = [first, bad_fen, no_id]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect();
    std::fs::write(root.join("ids.jsonl"), jsonl).unwrap();

    let expected_csv = vec![
        ("5", "", "missing_id"),
        ("6", "", "missing_id"),
        ("7", "wcc1", "wrong_column_count"),
        ("8", "utf1", "invalid_utf8"),
        ("9", "long1", "row_too_long"),
    ];
    let expected_jsonl = vec![("2", "fen1", "bad_fen"), ("3", "", "missing_id")];
    for (input, expected) in [("ids.csv", &expected_csv), ("ids.jsonl", &expected_jsonl)] {
        for command in [
            vec!["tag", input, "-o", "out.csv", "--rejects", "rej.csv"],
            vec!["rate", input, "-o", "out.csv", "--rejects", "rej.csv"],
            vec![
                "ingest",
                "puzzles",
                input,
                "-o",
                "out.csv",
                "--rejects",
                "rej.csv",
            ],
        ] {
            let output = run(root, &command);
            assert!(
                output.status.success(),
                "{command:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let mut reader = csv::Reader::from_path(root.join("rej.csv")).unwrap();
            let rows: Vec<(String, String, String)> = reader
                .records()
                .map(|r| {
                    let r = r.unwrap();
                    (r[0].to_string(), r[1].to_string(), r[2].to_string())
                })
                .collect();
            let want: Vec<(String, String, String)> = expected
                .iter()
                .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
                .collect();
            assert_eq!(rows, want, "{command:?}");
            std::fs::remove_file(root.join("out.csv")).unwrap();
        }
    }
}

/// A path a command reads, by command, as extra arguments (when the
/// command's required ones hold none) and the path itself: what each
/// output flag is pointed at by another spelling.
fn read_path(words: &str) -> (Vec<&'static str>, &'static str) {
    match words {
        "ingest games" | "mine" => (vec![], "g.pgn"),
        "export" | "reproduce" => (vec![], "fresh/release"),
        "compare" => (vec![], "a"),
        "selfplay" | "rollout" => (vec!["--engine", "eng"], "eng"),
        "bench generate" => (vec!["--config", "c.toml"], "c.toml"),
        "bench pgn" => (vec!["--game", "g.pgn"], "g.pgn"),
        _ => (vec![], "pool.csv"),
    }
}

/// Issue 67: every path-valued output flag of every command (read off the
/// clap definition through `cli::OUTPUT_FLAGS`), pointed at a path the
/// command reads, spelt another way (`./`), is refused before any work:
/// exit 2 naming the flag and "the same file", and the input's bytes
/// unchanged. The rule is one function (`cli::guard_distinct`), so a new
/// output flag is covered by being an output.
#[test]
fn every_output_flag_of_every_command_is_refused_on_a_path_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    std::fs::copy(&pool, root.join("pool.csv")).unwrap();
    std::fs::copy(data("master_games_sample_145.pgn"), root.join("g.pgn")).unwrap();
    std::fs::write(root.join("eng"), "#!/bin/sh\n").unwrap();
    std::fs::write(root.join("c.toml"), "[pipeline]\n").unwrap();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("fresh/release")).unwrap();
    let before = folder_bytes(root);
    let mut flags = Vec::new();
    path_flags(&puzzleforge::cli::command(), "", &mut flags);
    for flag in puzzleforge::cli::OUTPUT_FLAGS {
        let arg = flags
            .iter()
            .find(|(words, arg)| *words == flag.command && arg.get_id() == flag.id)
            .map(|(_, arg)| arg)
            .unwrap_or_else(|| panic!("{} {}: not a path flag of the CLI", flag.command, flag.id));
        let long = format!("--{}", arg.get_long().expect("output flags are named"));
        let (extra, victim) = read_path(flag.command);
        let spelt = format!("./{victim}");
        let mut args: Vec<&str> = flag.command.split(' ').collect();
        for (id, tokens) in required_besides(flag.command) {
            if id != flag.id {
                args.extend(tokens);
            }
        }
        args.extend(extra);
        args.extend([long.as_str(), spelt.as_str()]);
        refused(root, &args, &[&long, "are the same file", victim]);
    }
    assert!(folder_bytes(root) == before, "a refused command wrote");
}

/// Issue 67, defect 1: `--rejects` naming the input (by its name, a hard
/// link, a symbolic link or `./`), `--rejects` the same as `-o`, and a
/// derived path (the default rejects beside `-o`) landing on the input are
/// refused before any work (exit 2), for `tag`, `rate` and `ingest
/// puzzles`; the input keeps every byte and no output is written.
#[test]
fn no_command_writes_over_its_input_or_one_output_over_another() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let text = std::fs::read_to_string(data("lichess_db_puzzle_subset_1499.csv")).unwrap();
    let slice: Vec<&str> = text.lines().take(30).collect();
    std::fs::write(root.join("v.csv"), slice.join("\n") + "\n").unwrap();
    std::fs::hard_link(root.join("v.csv"), root.join("hard.csv")).unwrap();
    std::os::unix::fs::symlink("v.csv", root.join("soft.csv")).unwrap();
    // A file named as `-o out.csv`'s default rejects.
    std::fs::copy(root.join("v.csv"), root.join("out.csv.rejects.csv")).unwrap();
    let before = folder_bytes(root);
    let cases: Vec<Vec<&str>> = vec![
        vec!["tag", "v.csv", "-o", "out.csv", "--rejects", "v.csv"],
        vec!["tag", "v.csv", "-o", "out.csv", "--rejects", "hard.csv"],
        vec!["tag", "soft.csv", "-o", "out.csv", "--rejects", "./v.csv"],
        vec!["tag", "v.csv", "-o", "s.csv", "--rejects", "./s.csv"],
        vec!["tag", "out.csv.rejects.csv", "-o", "out.csv"],
        vec!["rate", "v.csv", "-o", "out.csv", "--rejects", "v.csv"],
        vec!["rate", "hard.csv", "-o", "v.csv"],
        vec![
            "ingest",
            "puzzles",
            "v.csv",
            "-o",
            "o.csv",
            "--rejects",
            "v.csv",
        ],
        vec!["ingest", "puzzles", "out.csv.rejects.csv", "-o", "out.csv"],
        vec![
            "ingest",
            "puzzles",
            "v.csv",
            "-o",
            "o.csv",
            "--rejects",
            "./o.csv",
        ],
    ];
    for args in &cases {
        refused(root, args, &["are the same file"]);
    }
    assert!(folder_bytes(root) == before, "a refused command wrote");
    for name in ["out.csv", "s.csv", "o.csv"] {
        assert!(!root.join(name).exists(), "{name} was written");
    }
    // Apart, the same commands run.
    summary(&run(
        root,
        &[
            "tag",
            "--json",
            "v.csv",
            "-o",
            "t.csv",
            "--rejects",
            "t.rej",
        ],
    ));
}

/// Issue 67, defect 2: a release named `releases.sha256` (the output
/// folder's registry) is refused before any work, with or without the
/// registry there, by `run` and by `release -o`; an output folder already
/// holding a folder of that name (from a version that took the name) is
/// explained before any stage, with the command that repairs it, and after
/// that command the next release runs.
#[test]
fn a_release_cannot_take_the_registry_s_name_and_a_folder_there_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_config(root, "");
    let needles = ["releases.sha256", "registry"];
    refused(root, &["run", "--release", "releases.sha256"], &needles);
    assert!(!root.join("out").exists(), "a refused run wrote");
    summary(&run(root, &["run", "--json"]));
    let before = folder_bytes(&root.join("out"));
    refused(root, &["run", "--release", "releases.sha256"], &needles);
    let pool = data("lichess_db_puzzle_subset_1499.csv");
    refused(
        root,
        &[
            "release",
            pool.to_str().unwrap(),
            "-o",
            "out/releases.sha256",
        ],
        &needles,
    );
    assert!(
        folder_bytes(&root.join("out")) == before,
        "a refused run wrote"
    );

    // The state an earlier version left: a release folder at the
    // registry's name, no registry.
    std::fs::remove_file(root.join("out/releases.sha256")).unwrap();
    std::fs::rename(root.join("out/r1"), root.join("out/releases.sha256")).unwrap();
    let stderr = refused(root, &["run", "--release", "r2"], &["is a folder", "mv "]);
    assert!(
        !root.join("out/r2").exists(),
        "a stage ran before the error"
    );
    let repair = stderr
        .split('`')
        .find(|part| part.starts_with("mv "))
        .unwrap_or_else(|| panic!("no `mv` command in {stderr}"));
    let words: Vec<&str> = repair.split(' ').collect();
    assert_eq!(words.len(), 3, "{repair}");
    std::fs::rename(root.join(words[1]), root.join(words[2])).unwrap();
    let done = summary(&run(root, &["run", "--json", "--release", "r2"]));
    assert_eq!(done["release"], "r2");
    assert!(root.join("out/releases.sha256").is_file());
}

/// Issue 67, defects 3 and 4: a truncated `.zst`, one with bytes after its
/// last frame, a folder and a FIFO where a file is expected are bad input
/// (exit 2), named with what they are, for `tag`, `mine`, `ingest
/// puzzles` and `[generate] exclude`; none hangs on the FIFO.
#[test]
fn damaged_compressed_files_folders_and_fifos_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let games = std::fs::read(data("master_games_sample_145.pgn")).unwrap();
    let packed = zstd::encode_all(&games[..], 3).unwrap();
    std::fs::write(root.join("trunc.pgn.zst"), &packed[..packed.len() / 2]).unwrap();
    let mut garbage = packed.clone();
    garbage.extend_from_slice(b"not a frame\n");
    std::fs::write(root.join("garbage.pgn.zst"), garbage).unwrap();
    std::fs::create_dir(root.join("folder")).unwrap();
    let fifo = root.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (name, what) in [
        ("trunc.pgn.zst", "incomplete frame"),
        ("folder", "is a directory"),
        ("fifo", "is a FIFO"),
    ] {
        for command in [
            vec!["tag", name, "-o", "t.csv"],
            vec!["mine", name, "-o", "m.csv", "--nodes", "100"],
            vec!["ingest", "puzzles", name, "-o", "i.csv"],
        ] {
            refused(root, &command, &[name, what]);
        }
    }
    // Exclusion files are checked before any stage, named by their key.
    for (name, what) in [("folder", "is a directory"), ("fifo", "is a FIFO")] {
        crate::common::generation_config(
            root,
            "x.toml",
            "X",
            1,
            &format!("exclude = [\"{name}\"]\n"),
        );
        refused(
            root,
            &["run", "--config", "x.toml"],
            &["generate.exclude", name, what],
        );
        assert!(!root.join("X").exists(), "a refused run wrote");
    }
}

/// Issue 65: every path the config names is checked before the first
/// stage. A human start file (`[selfplay] human`, no `[generate]`, or a
/// generation profile's) that does not exist, `mine`'s human games, or a
/// `[rate] maia` or players' Maia folder without the nets is refused by
/// `run` and `merge` with exit 2, naming the key, the path and what the
/// file is (a puzzle file or a PGN); neither a stage folder nor the
/// release folder is written. Before, the two ingest stages wrote their
/// folders and `selfplay` found the file missing.
#[test]
fn every_path_of_the_config_is_checked_before_the_first_stage() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let human = "[selfplay]\ngames = 2\nhuman = { plies = [20, 40] }\n";
    for (sources, extra, needles) in [
        (
            "human_games = \"absent.csv\"",
            human.to_string(),
            vec!["sources.human_games", "absent.csv", "the puzzle file"],
        ),
        (
            "human_games = \"absent.pgn.zst\"",
            human.to_string(),
            vec![
                "sources.human_games",
                "absent.pgn.zst",
                "PGN of human games",
            ],
        ),
        (
            "human_games = \"sample.pgn\"",
            "[selfplay]\ngames = 2\nhuman = { games = \"own.pgn\", plies = [20, 40] }\n".into(),
            vec!["selfplay.human.games", "own.pgn", "PGN of human games"],
        ),
        (
            "human_games = \"absent.pgn\"",
            "[human_games]\nmine_games = 3\n".into(),
            vec!["sources.human_games", "absent.pgn", "PGN of human games"],
        ),
        (
            "",
            "[rate]\nmaia = \"no-nets\"\n".into(),
            vec!["rate.maia", "no-nets", "maia-1100.pb.gz"],
        ),
        (
            "",
            "[generate]\nenabled = true\n\n[generate.profiles.p.selfplay]\n\
             human = { games = \"gone.csv\" }\n"
                .into(),
            vec![
                "generate.profiles.p.selfplay.human.games",
                "gone.csv",
                "the puzzle file",
            ],
        ),
        (
            "",
            "[generate]\nenabled = true\n\n[generate.selfplay]\n\
             maia = { white = [1100, 1100], black = [1100, 1100], models_dir = \"no-nets\" }\n"
                .into(),
            vec![
                "generate.selfplay.maia.models_dir",
                "no-nets",
                "maia-1100.pb.gz",
            ],
        ),
    ] {
        std::fs::write(root.join("sample.pgn"), "").unwrap();
        let config = format!(
            r#"
[pipeline]
seed = 7
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "ingest_games", "selfplay", "mine", "rate", "verify", "release"]

[sources]
puzzles = ["{puzzles}"]
games = ["{games}"]
{sources}

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

{extra}"#,
            puzzles = data("lichess_db_puzzle_subset_1499.csv").display(),
            games = data("lichess_game_export_ZlCTzfMG_eval_clk.pgn").display(),
        );
        std::fs::write(root.join("p.toml"), config).unwrap();
        let merge = ["merge", "shard-0", "-o", "out/r1", "--config", "p.toml"];
        for args in [&["run", "--config", "p.toml"][..], &merge[..]] {
            let stderr = refused(root, args, &needles);
            assert!(
                !stderr.contains("stage "),
                "{args:?}: a stage ran: {stderr}"
            );
            for folder in ["out/r1/ingest_puzzles", "out/r1"] {
                assert!(
                    !root.join(folder).exists(),
                    "{args:?}: {folder} was written"
                );
            }
        }
    }
}

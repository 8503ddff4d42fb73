//! Stored work is reused only by the same algorithms: each stage states
//! the version of what it computes (`ALGORITHM` beside its code), its
//! `stage.json` and generation's store key record it, and a stage or batch
//! recorded under another version is redone, saying so. A golden test per
//! stage holds its output's sha256 on a fixed input, and fails when that
//! changes without the version changing.

use serde_json::Value;
use sha2::Digest;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::{data, summary};

/// The test-only switch on the mining threshold (a debug build reads it):
/// it stands for a build whose mining rule differs.
const SWITCH: &str = "PUZZLEFORGE_TEST_MIN_GAP_CP";

fn puzzleforge(dir: &Path, args: &[&str], min_gap: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_puzzleforge"));
    command.current_dir(dir).args(args).env_remove(SWITCH);
    if let Some(gap) = min_gap {
        command.env(SWITCH, gap);
    }
    command.output().expect("run puzzleforge")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The inputs every config here names relative to its folder, so that
/// what the records hold does not depend on where the test runs.
fn copy_inputs(dir: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The rating model and the Maia nets it reads, as the committed
    // config names them.
    std::os::unix::fs::symlink(repo.join("models"), dir.join("models")).unwrap();
    std::fs::copy(
        data("lichess_db_puzzle_subset_1499.csv"),
        dir.join("puzzles.csv"),
    )
    .unwrap();
    std::fs::copy(
        data("lichess_game_export_ZlCTzfMG_eval_clk.pgn"),
        dir.join("games.pgn"),
    )
    .unwrap();
}

/// The self-play chain on a few weak games, small budgets (real
/// Stockfish): `stages` of selfplay, mine, rate, verify (and a release);
/// `[generate]` on with `generate`.
fn chain_config(dir: &Path, name: &str, stages: &str, generate: Option<&str>) {
    let generate = match generate {
        Some(extra) => {
            format!("[generate]\nenabled = true\nmax_per_game = 100\nbatch_games = 3\n{extra}\n")
        }
        None => String::new(),
    };
    let config = format!(
        r#"
[pipeline]
seed = 5
output_dir = "out"
release = "a"
stages = {stages}

[engine]
path = "/usr/games/stockfish"
workers = 1

[selfplay]
games = 6
max_plies = 80
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]

[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3

[rate]
model = "models/rate_model.json"

[verify]
factor = 2

[release]
bin_width = 3000
train_per_cell = 2
test_per_cell = 1
min_puzzles = 0

[[release.bands]]
ratings = [0, 3000]
lengths = [1, 1]
mate = "no_mate"

{generate}
"#
    );
    std::fs::write(dir.join(name), config).unwrap();
}

fn skipped(run: &Value, stage: &str) -> bool {
    run["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == stage)
        .unwrap_or_else(|| panic!("no {stage} in {run:#}"))["skipped"]
        .as_bool()
        .unwrap()
}

fn store_batches(store: &Path) -> usize {
    std::fs::read_dir(store)
        .map(|entries| {
            entries
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("batch-"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn stores(output: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(output.join(".generate"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// A build whose mining threshold differs redoes mine (and verify, which
/// judges by the same rule) and plays generation's games again, saying
/// which and why; the same algorithms reuse both; `--keep-stored-work`
/// keeps the other's, and the release records it.
#[test]
fn a_build_with_another_mining_threshold_redoes_mine_and_the_stored_batches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_inputs(root);

    // The plain stages.
    chain_config(root, "plain.toml", r#"["selfplay", "mine"]"#, None);
    let run = |gap: Option<&str>, extra: &[&str]| {
        let mut args = vec!["run", "--config", "plain.toml", "--json"];
        args.extend(extra);
        let output = puzzleforge(root, &args, gap);
        (summary(&output), stderr(&output))
    };
    let (first, _) = run(None, &[]);
    assert!(!skipped(&first, "mine"));
    let (same, said) = run(None, &[]);
    assert!(
        skipped(&same, "selfplay") && skipped(&same, "mine"),
        "{same:#}"
    );
    assert!(!said.contains("redone"), "{said}");
    let (other, said) = run(Some("250"), &[]);
    assert!(skipped(&other, "selfplay"), "{other:#}");
    assert!(!skipped(&other, "mine"), "{other:#}");
    let line = "mine: redone, recorded algorithm mine-1, this build mine-1+min-gap-250";
    assert!(said.contains(line), "{said}");
    assert_eq!(other["stages"][1]["why"], line);
    let stage: Value =
        serde_json::from_slice(&std::fs::read(root.join("out/a/mine/stage.json")).unwrap())
            .unwrap();
    assert_eq!(stage["fingerprint"]["algorithm"], "mine-1+min-gap-250");
    let (again, said) = run(Some("250"), &[]);
    assert!(skipped(&again, "mine"), "{again:#}");
    assert!(!said.contains("redone"), "{said}");
    // Back on this build's rule, the other's mine is kept when asked.
    let (kept, said) = run(None, &["--keep-stored-work"]);
    assert!(skipped(&kept, "mine"), "{kept:#}");
    assert!(
        said.contains("mine: kept (--keep-stored-work), recorded algorithm mine-1+min-gap-250, this build mine-1"),
        "{said}"
    );
    let (back, said) = run(None, &[]);
    assert!(!skipped(&back, "mine"), "{back:#}");
    assert!(
        said.contains("mine: redone, recorded algorithm mine-1+min-gap-250, this build mine-1"),
        "{said}"
    );

    // Generation's store: the games are played again into a store of
    // their own, and said why; the same algorithms reuse it.
    chain_config(
        root,
        "gen.toml",
        r#"["selfplay", "mine", "rate", "verify", "release"]"#,
        Some("max_games = 40"),
    );
    // Without --json, so that progress notes are plain lines.
    let generate = |release: &str, gap: Option<&str>, extra: &[&str]| {
        let mut args = vec!["run", "--config", "gen.toml", "--release", release];
        args.extend(extra);
        let output = puzzleforge(root, &args, gap);
        assert!(output.status.success(), "{}", stderr(&output));
        ((), stderr(&output))
    };
    let out = root.join("out");
    generate("g1", None, &[]);
    let ours = stores(&out);
    assert_eq!(ours.len(), 1);
    let played = store_batches(&out.join(".generate").join(&ours[0]));
    let (_, said) = generate("g2", Some("250"), &[]);
    let theirs: Vec<String> = stores(&out).into_iter().filter(|s| *s != ours[0]).collect();
    assert_eq!(theirs.len(), 1, "a store of its own");
    assert!(store_batches(&out.join(".generate").join(&theirs[0])) > 0);
    assert_eq!(store_batches(&out.join(".generate").join(&ours[0])), played);
    let why = format!(
        "generation: the {played} batch{} stored under .generate/{} were played by other \
         algorithms (mine: mine-1, verify: verify-1 there, mine: mine-1+min-gap-250, verify: \
         verify-1+min-gap-250 here); their games are played again into .generate/{}",
        if played == 1 { "" } else { "es" },
        ours[0],
        theirs[0]
    );
    assert!(said.contains(&why), "{why}\n{said}");
    // The same algorithms: both stores reused, nothing said, nothing played.
    let (_, said) = generate("g3", Some("250"), &[]);
    assert!(!said.contains("other algorithms"), "{said}");
    assert_eq!(stores(&out).len(), 2);
    let (_, said) = generate("g4", None, &[]);
    assert!(!said.contains("other algorithms"), "{said}");
    // Kept by request: the release records the store it kept.
    let (_, said) = generate("g5", Some("300"), &["--keep-stored-work"]);
    assert!(
        said.contains("reused, as --keep-stored-work asks"),
        "{said}"
    );
    assert_eq!(stores(&out).len(), 2, "no store of its own");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("g5/release/manifest.json")).unwrap())
            .unwrap();
    let kept = &manifest["run"]["kept_work"][0];
    assert!(
        kept["what"]
            .as_str()
            .unwrap()
            .starts_with("generation store "),
        "{manifest:#}"
    );
    assert!(
        kept["this_build"]
            .as_str()
            .unwrap()
            .contains("mine: mine-1+min-gap-300"),
        "{kept}"
    );
    let card = std::fs::read_to_string(out.join("g5/release/README.md")).unwrap();
    assert!(card.contains("--keep-stored-work"), "{card}");
}

/// Each stage's algorithm version beside its output's sha256 on the fixed
/// inputs below (this crate's test data, Debian's Stockfish 15.1 at small
/// budgets). A stage whose output changed must have its version bumped.
const GOLDEN: &[(&str, &str, &str)] = &[
    (
        "ingest_puzzles",
        "ingest_puzzles-1",
        "630de1305d04a4c8011e3c0d4c735d7f7eb7cae38ec716108bcf629c28e56b31",
    ),
    (
        "ingest_games",
        "ingest_games-1",
        "03374e496b77a6dc6d6ff21894ec48933f8e972fecb48968b615bed77aba8005",
    ),
    (
        "selfplay",
        "selfplay-1",
        "ff091b724ac1dc58fe80662f7b47e04cf2069ffe7e2ea21c341d921ecc85118a",
    ),
    (
        "mine",
        "mine-1",
        "8be59928e0d2c17619f1293c22a30240707cd263a1922fca841b85b39aa233ec",
    ),
    (
        "rate",
        "rate-1",
        "cfea15361da7dc70cd20b67f528977335cd2288fcb9c59a154d3f4aa7e044188",
    ),
    (
        "verify",
        "verify-1",
        "603920cf9cacc42655c1cac4aba49a29245c9d4d6144fb1d09fd748c4d252dbd",
    ),
    (
        "release",
        "release-2",
        "d2c4107a320fa150d5ce1528017e43d1fa178705b789781ccedd2af69215e3b6",
    ),
    (
        "export",
        "export-1",
        "ccfe7bee27bf0ec1deec2894d9691812772cb82b6a5b6bbfbd3972388281566f",
    ),
    (
        "eval",
        "eval-1",
        "759aa9dc292787ea8cdc488dd66820b8443a145f0e7ea3aa88d01239450e465f",
    ),
    (
        "generate",
        "generate-1",
        "2e3c2be7a81392db50182960f2307e81b05a3b5de3bf2665beaced1bb87356c1",
    ),
];

/// The sha256 over a folder's files (by path), each with the build
/// identity set aside, and every sha256 of a file of `named` (a record
/// naming a file that holds the build: the release's manifest naming its
/// card, the eval naming the manifest) read as that file's name; timing
/// (`runtime.json`, a stored batch's `batch.json`) and the runner's
/// `stage.json` left out.
fn outputs_sha256(dir: &Path, build: &str, named: &[&Path]) -> String {
    let skip = ["stage.json", "runtime.json", "batch.json"];
    let mut placeholders = vec![(build.to_string(), "<build>".to_string())];
    for folder in named {
        for name in crate::common::files_under(folder, &skip) {
            let sha = format!(
                "{:x}",
                sha2::Sha256::digest(std::fs::read(folder.join(&name)).unwrap())
            );
            placeholders.push((sha, format!("<sha256 of {}>", name.display())));
        }
    }
    let mut hasher = sha2::Sha256::new();
    for name in crate::common::files_under(dir, &skip) {
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        let bytes = match String::from_utf8(bytes.clone()) {
            Ok(mut text) => {
                for (from, to) in &placeholders {
                    text = text.replace(from.as_str(), to);
                }
                text.into_bytes()
            }
            Err(_) => bytes,
        };
        hasher.update(name.to_string_lossy().as_bytes());
        hasher.update(sha2::Sha256::digest(&bytes));
    }
    format!("{:x}", hasher.finalize())
}

#[test]
fn each_stage_output_on_a_fixed_input_is_its_golden_or_its_version_was_bumped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_inputs(root);
    let plain = r#"
[pipeline]
seed = 7
output_dir = "out"
release = "p"
stages = ["ingest_puzzles", "ingest_games", "release", "export", "eval"]

[engine]
path = "/usr/games/stockfish"
workers = 1

[sources]
puzzles = ["puzzles.csv"]
games = ["games.pgn"]

[release]
train_per_cell = 1
test_per_cell = 1

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[export]
formats = ["dspy", "lichess"]
split = "test"

[eval]
model = "engine:stockfish?nodes=1"

[eval.regret]
enabled = false
"#;
    std::fs::write(root.join("plain.toml"), plain).unwrap();
    summary(&puzzleforge(
        root,
        &["run", "--config", "plain.toml", "--json"],
        None,
    ));
    chain_config(
        root,
        "chain.toml",
        r#"["selfplay", "mine", "rate", "verify"]"#,
        None,
    );
    summary(&puzzleforge(
        root,
        &["run", "--config", "chain.toml", "--json"],
        None,
    ));
    chain_config(
        root,
        "gen.toml",
        r#"["selfplay", "mine", "rate", "verify", "release"]"#,
        Some("max_games = 40"),
    );
    summary(&puzzleforge(
        root,
        &["run", "--config", "gen.toml", "--json", "--release", "g"],
        None,
    ));
    let version = String::from_utf8(puzzleforge(root, &["--version"], None).stdout).unwrap();
    let build = version
        .trim()
        .rsplit_once("(build ")
        .and_then(|(_, b)| b.strip_suffix(')'))
        .unwrap()
        .to_string();
    let mut failures = Vec::new();
    for (stage, version, golden) in GOLDEN {
        let (folder, record) = match *stage {
            "ingest_puzzles" | "ingest_games" | "release" | "export" | "eval" => {
                (root.join("out/p").join(stage), "stage.json")
            }
            // The store's batches; its settings.json records the versions.
            "generate" => {
                let store = stores(&root.join("out")).remove(0);
                (root.join("out/.generate").join(store), "settings.json")
            }
            other => (root.join("out/a").join(other), "stage.json"),
        };
        let record: Value =
            serde_json::from_slice(&std::fs::read(folder.join(record)).unwrap()).unwrap();
        let now_version = match *stage {
            "generate" => record["algorithms"]["generate"].as_str(),
            _ => record["fingerprint"]["algorithm"].as_str(),
        }
        .unwrap()
        .to_string();
        let release = root.join("out/p/release");
        let sha = outputs_sha256(&folder, &build, &[&release]);
        check(stage, version, golden, &now_version, &sha, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A golden's verdict: the sha256 agrees, or the version was bumped (then
/// the row to commit is named), or the output changed under the same
/// version: bump it.
fn check(
    stage: &str,
    version: &str,
    golden: &str,
    now_version: &str,
    sha: &str,
    failures: &mut Vec<String>,
) {
    let row = format!("    (\"{stage}\", \"{now_version}\", \"{sha}\"),");
    if now_version != version {
        failures.push(format!(
            "{stage}: its algorithm is now {now_version} (the golden is of {version}): commit the \
             new golden row in tests/algorithms.rs:\n{row}"
        ));
    } else if sha != golden {
        failures.push(format!(
            "{stage}: its output on the fixed input changed (sha256 {sha}, golden {golden}) but \
             its algorithm is still {version}: bump its ALGORITHM (stored outputs of the old one \
             would otherwise be reused as if this build had made them), then commit the row:\n{row}"
        ));
    }
}

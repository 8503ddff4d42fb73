//! Every command `run` tells a person to run next runs as written: the
//! `next:` lines of a run that leaves cells unfilled, of `run --plan` and
//! of `run --aim`, followed one after the other (each hint's own output
//! gives the next ones), in one output folder as a person would. A hint
//! that names a finished release, a flag that does not exist or a config
//! key a run refuses fails here. And `run --aim` says when the pool of
//! candidate puzzles is what leaves the aimed tier's cells empty.

use std::path::Path;
use std::process::Output;

use crate::common::{data, eval_run};

const STOCKFISH: &str = "/usr/games/stockfish";

/// A pipeline of the committed config's shape, small: the bundled Lichess
/// sample, two weak self-play games mined, rated and verified, a release
/// of 32 cells the sample cannot all fill, and `[generate]` off, with a
/// budget of a few short games.
fn write_config(dir: &Path) {
    assert!(Path::new(STOCKFISH).exists(), "{STOCKFISH} is needed");
    let config = format!(
        r#"
[pipeline]
seed = 5
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "selfplay", "mine", "rate", "verify", "release"]

[engine]
path = "{STOCKFISH}"
workers = 2
# A loaded machine may start an engine slowly: a handshake that waits
# is no part of what this test checks.
handshake_secs = 300

[sources]
puzzles = ["{puzzles}"]

[selfplay]
games = 2
max_plies = 60
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]

[mine]
nodes = 5000
shallow_depth = 4
max_solver_moves = 2

[rate]
model = "{model}"

[verify]
factor = 2

[release]
train_per_cell = 1
test_per_cell = 1
min_puzzles = 0

[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]

[generate]
enabled = false
batch_games = 2
max_games = 2
max_per_game = 100
"#,
        puzzles = data("lichess_db_puzzle_subset_1499.csv").display(),
        model = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/rate_model.json")
            .display(),
    );
    std::fs::write(dir.join("pipeline.toml"), config).unwrap();
}

/// Runs a command line as a person types it in `dir`: the leading
/// `puzzleforge` is the built binary, the rest goes to the shell as it is.
pub(crate) fn run_line(dir: &Path, line: &str) -> Output {
    let rest = line
        .strip_prefix("puzzleforge ")
        .unwrap_or_else(|| panic!("not a puzzleforge command: {line}"));
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("\"$PUZZLEFORGE\" {rest}"))
        .env("PUZZLEFORGE", env!("CARGO_BIN_EXE_puzzleforge"))
        .current_dir(dir)
        .output()
        .expect("run sh")
}

/// The commands of `next:` lines (and of a plan's advice) in `stderr`,
/// each with the words before it on its line (what to do first).
pub(crate) fn hints(stderr: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for line in stderr.lines() {
        let mut before = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 && part.starts_with("puzzleforge ") {
                found.push((before.clone(), part.to_string()));
            }
            before.push_str(part);
        }
    }
    found
}

/// The release a command names with `--release`, if any.
pub(crate) fn release_named(command: &str) -> Option<&str> {
    let mut words = command.split_whitespace();
    words.find(|w| *w == "--release")?;
    words.next()
}

/// Whether `root/<output_dir>/<release>` holds a finished release.
pub(crate) fn is_finished(output_dir: &Path, release: &str) -> bool {
    output_dir
        .join(release)
        .join("release/manifest.json")
        .exists()
}

/// Does to `config` what the words before a hint ask (turn generation on,
/// raise its budget), editing the `[generate]` table's lines in place.
pub(crate) fn do_what_it_says(config: &Path, before: &str) {
    let text = std::fs::read_to_string(config).unwrap();
    let mut table = String::new();
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.starts_with('[') {
            table = line.to_string();
        }
        let mut line = line.to_string();
        if table == "[generate]" {
            if before.contains("set [generate] enabled = true") && line.starts_with("enabled = ") {
                line = "enabled = true".to_string();
            }
            if let Some(games) = line
                .strip_prefix("max_games = ")
                .filter(|_| before.contains("raise [generate] max_games"))
            {
                line = format!("max_games = {}", games.parse::<u64>().unwrap() * 2);
            }
        }
        lines.push(line);
    }
    std::fs::write(config, lines.join("\n") + "\n").unwrap();
    if before.contains("set [generate] enabled = true") {
        assert!(generation_on(config), "{}", config.display());
    }
}

/// Whether `config` has `[generate] enabled = true`.
pub(crate) fn generation_on(config: &Path) -> bool {
    let text = std::fs::read_to_string(config).unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    value["generate"]["enabled"].as_bool() == Some(true)
}

/// Follows the hints of `first`'s stderr in the order a person would:
/// each hint, then the hints its own output gives, before the next one,
/// up to `depth` steps deep. Each names no finished release and exits 0.
/// Gives every command run.
pub(crate) fn follow_hints(
    root: &Path,
    output_dir: &Path,
    first: &str,
    depth: usize,
) -> Vec<String> {
    let mut ran: Vec<String> = Vec::new();
    let mut pending: Vec<(usize, String, String)> = hints(first)
        .into_iter()
        .rev()
        .map(|(before, command)| (1, before, command))
        .collect();
    while let Some((step, before, command)) = pending.pop() {
        // Every hint is checked, even one seen before: what was fresh
        // then may be finished now.
        if step > depth {
            continue;
        }
        if let Some(release) = release_named(&command) {
            assert!(
                !is_finished(output_dir, release),
                "the hint names the finished release {release}: {before}`{command}`"
            );
        }
        do_what_it_says(&root.join("pipeline.toml"), &before);
        let started = std::time::Instant::now();
        let output = run_line(root, &command);
        eprintln!("{command}: {:.1} s", started.elapsed().as_secs_f64());
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "`{command}` (after: {before}) exited {:?}: {stderr}",
            output.status.code()
        );
        ran.push(command);
        pending.extend(
            hints(&stderr)
                .into_iter()
                .rev()
                .map(|(before, command)| (step + 1, before, command)),
        );
    }
    ran
}

#[test]
fn the_hints_of_a_run_a_plan_and_an_aimed_run_run_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_config(root);
    let out = root.join("out");

    // (a) A run that leaves cells unfilled: its next command, and what
    // that prints in turn (the generated release's budget, its plan).
    let first = run_line(root, "puzzleforge run");
    let stderr = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(first.status.success(), "{stderr}");
    let ran = follow_hints(root, &out, &stderr, 3);
    assert!(
        ran.iter().any(|c| c.contains("--plan")) && ran.iter().any(|c| !c.contains("--plan")),
        "a plan and a run among the hints: {ran:?}\n{stderr}"
    );

    // (b) `run --plan` of another release: its advice's commands.
    let plan = run_line(root, "puzzleforge run --plan --release p1");
    let stderr = String::from_utf8_lossy(&plan.stderr).into_owned();
    assert!(plan.status.success(), "{stderr}");
    let ran = follow_hints(root, &out, &stderr, 2);
    assert!(
        ran.iter().any(|c| c.contains("--plan-games")),
        "the plan's advice names its command: {ran:?}\n{stderr}"
    );

    // (c) `run --aim`, from generation off again: the pool line, then its
    // next commands keep the aim.
    write_config(root);
    eval_run(root);
    let aimed = run_line(
        root,
        "puzzleforge run --release a30 --aim runs/depth1 --solve-rate 0.3",
    );
    let stderr = String::from_utf8_lossy(&aimed.stderr).into_owned();
    assert!(aimed.status.success(), "{stderr}");
    let ran = follow_hints(root, &out, &stderr, 2);
    assert!(
        !ran.is_empty()
            && ran
                .iter()
                .all(|c| c.contains("--aim runs/depth1 --solve-rate 0.3")),
        "{ran:?}\n{stderr}"
    );
}

/// The check of the hints fails where a hint would: a finished release,
/// a flag that does not exist.
#[test]
fn a_hint_naming_a_finished_release_or_no_flag_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_config(root);
    let out = root.join("out");
    std::fs::create_dir_all(out.join("done/release")).unwrap();
    std::fs::write(out.join("done/release/manifest.json"), "{}").unwrap();
    let finished = std::panic::catch_unwind(|| {
        follow_hints(
            root,
            &out,
            "next: `puzzleforge run --plan --release done`",
            1,
        )
    });
    assert!(finished.is_err(), "a finished release passed");
    let no_flag = std::panic::catch_unwind(|| {
        follow_hints(root, &out, "next: `puzzleforge run --no-such-flag`", 1)
    });
    assert!(no_flag.is_err(), "a flag that does not exist passed");
}

/// `run --aim` on the bundled Lichess sample: the aimed band holds too few
/// of its puzzles for the tier's cells, and the run says so in one line.
#[test]
fn an_aimed_run_says_when_the_pool_is_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    eval_run(root);
    std::fs::write(
        root.join("pipeline.toml"),
        format!(
            "[pipeline]\noutput_dir = \"out\"\nstages = [\"ingest_puzzles\", \"release\"]\n\
             [sources]\npuzzles = [\"{}\"]\n\
             [release]\ntrain_per_cell = 5\ntest_per_cell = 5\n\
             [[release.bands]]\nratings = [400, 2000]\nlengths = [1, 2]\n",
            data("lichess_db_puzzle_subset_1499.csv").display()
        ),
    )
    .unwrap();
    let output = run_line(
        root,
        "puzzleforge run --release a30 --aim runs/depth1 --solve-rate 0.3",
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("out/a30/release/manifest.json")).unwrap())
            .unwrap();
    let cells = manifest["cells"].as_array().unwrap();
    let field = |name: &str| -> u64 { cells.iter().map(|c| c[name].as_u64().unwrap()).sum() };
    let (available, wanted) = (
        field("available"),
        field("wanted_train") + field("wanted_test"),
    );
    assert!(available < wanted, "{manifest:#}");
    let line = format!(
        "the pool is the limit: {available} candidate puzzles in the aimed band, cells need {wanted}; add puzzle sources or turn on generation"
    );
    assert_eq!(
        stderr.lines().filter(|l| *l == line).count(),
        1,
        "{line}\n{stderr}"
    );
    // A run that is not aimed says nothing of the kind.
    let plain = run_line(root, "puzzleforge run --release plain");
    let stderr = String::from_utf8_lossy(&plain.stderr).into_owned();
    assert!(plain.status.success(), "{stderr}");
    assert!(!stderr.contains("the pool is the limit"), "{stderr}");
}

/// The committed `pipeline.toml` in a folder of its own, reading the
/// repository's engines, models and bundled data where it names them.
fn committed_config_copy(root: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(repo.join("pipeline.toml"), root.join("pipeline.toml")).unwrap();
    // `data/`: the human games engines/install.sh fetched.
    for folder in ["engines", "models", "tests", "data"] {
        std::os::unix::fs::symlink(repo.join(folder), root.join(folder)).unwrap();
    }
}

/// The `puzzleforge` lines of README.md's shell blocks, as written (a
/// trailing `# comment` off).
fn readme_commands() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let mut commands = Vec::new();
    let mut in_shell = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_shell = line == "```sh";
            continue;
        }
        if in_shell && line.starts_with("puzzleforge ") {
            let command = line.split(" # ").next().unwrap_or(line).trim_end();
            commands.push(command.to_string());
        }
    }
    commands
}

/// An OpenAI-compatible endpoint on a local port that answers every
/// request with one move: what README's `openai:MODEL@BASE_URL` stands
/// for.
fn fake_model_server() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end().to_ascii_lowercase();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let reply = serde_json::json!({
                "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": "{\"move\": \"e2e4\"}"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7}
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    format!("http://{address}/v1")
}

/// README's commands, in order, on the committed config, as written but
/// for their placeholders (a puzzle of the release for `ID`, a local
/// endpoint for `MODEL@BASE_URL`), and the `next:` hints of each `run` of
/// them: the default run, a fresh release, the hard tier, an aimed tier,
/// the evals, the comparison and the re-checks. A hint that would play a
/// whole generated release (hours) runs as its plan (`--plan` appended);
/// every other line runs for real. Long (the committed config's runs and
/// plans: about 15 minutes on 2 cores, more than the whole suite may take),
/// so `cargo test --test tests -- --ignored readme` runs it.
#[test]
#[ignore = "long: the committed config's runs and plans (cargo test --test tests -- --ignored readme)"]
fn readme_commands_and_their_hints_run_as_written_on_the_committed_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    committed_config_copy(root);
    let out = root.join("output");
    let commands = readme_commands();
    assert!(
        commands.len() >= 8 && commands[0] == "puzzleforge run",
        "{commands:?}"
    );
    let base_url = fake_model_server();
    let mut puzzle = None;
    for written in &commands {
        // What a placeholder stands for: a puzzle of the default release,
        // the local endpoint.
        let mut command = written
            .replace("[--puzzle ID]", "--puzzle ID")
            .replace("MODEL@BASE_URL", &format!("test-model@{base_url}"));
        if command.contains(" ID") {
            let id: &String = puzzle.get_or_insert_with(|| {
                let test = std::fs::read_to_string(out.join("default/release/test.csv")).unwrap();
                let row = test.lines().nth(1).expect("a test puzzle");
                row.split(',').next().unwrap().to_string()
            });
            command = command.replace(" ID", &format!(" {id}"));
        }
        if let Some(release) = release_named(&command) {
            assert!(
                !is_finished(&out, release),
                "{written} names a finished release"
            );
        }
        let started = std::time::Instant::now();
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "\"$PUZZLEFORGE\" {}",
                command.strip_prefix("puzzleforge ").unwrap()
            ))
            .env("PUZZLEFORGE", env!("CARGO_BIN_EXE_puzzleforge"))
            .env("OPENAI_API_KEY", "test-key")
            .current_dir(root)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "{written} (as {command}) exited {:?}: {stderr}",
            output.status.code()
        );
        eprintln!("{command}: {:.0} s", started.elapsed().as_secs_f64());
        if command.starts_with("puzzleforge run") {
            follow_committed_hints(root, &out, &stderr);
        }
    }
}

/// The hints of a `run` of the committed config, each run as written but
/// that a whole generated release runs as its plan; the config is the
/// committed one again afterwards.
fn follow_committed_hints(root: &Path, out: &Path, stderr: &str) {
    let config = root.join("pipeline.toml");
    let committed = std::fs::read_to_string(&config).unwrap();
    for (before, command) in hints(stderr) {
        if let Some(release) = release_named(&command) {
            assert!(
                !is_finished(out, release),
                "the hint names the finished release {release}: {before}`{command}`"
            );
        }
        do_what_it_says(&config, &before);
        let line = if generation_on(&config) && !command.contains("--plan") {
            format!("{command} --plan")
        } else {
            command.clone()
        };
        let started = std::time::Instant::now();
        let output = run_line(root, &line);
        assert!(
            output.status.success(),
            "`{command}` (after: {before}) exited {:?}: {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("  hint {line}: {:.0} s", started.elapsed().as_secs_f64());
    }
    std::fs::write(&config, committed).unwrap();
}

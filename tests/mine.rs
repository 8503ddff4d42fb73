//! Mining: the criterion on known Lichess puzzles, byte-identical output,
//! and legal, well-formed lines. Needs Stockfish: fails without it.

use puzzleforge::chess::record::{Puzzle, read_puzzles, write_puzzles};
use puzzleforge::engine::criterion::{self, Criterion, Rule, Turn};
use puzzleforge::engine::process::{Limit, SearchRequest};
use puzzleforge::stages::mine::{MineConfig, run_mine_with};
use puzzleforge::stages::selfplay::{Mode, SelfplayConfig, run_selfplay_with};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use std::collections::HashSet;
use std::path::Path;

use crate::common;
use crate::common::engine_pool as pool;

fn lichess_sample() -> Vec<Puzzle> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lichess_db_puzzle_subset_1499.csv");
    read_puzzles(&path).unwrap()
}

fn position(fen: &Fen) -> Chess {
    fen.clone().into_position(CastlingMode::Standard).unwrap()
}

fn play(position: &mut Chess, uci: &UciMove) {
    let m = uci.to_move(position).unwrap_or_else(|_| {
        panic!(
            "{uci} is illegal in {}",
            Fen::from_position(position, EnPassantMode::Legal)
        )
    });
    position.play_unchecked(m);
}

/// On Lichess one-move puzzles the solution is the unique best move under
/// Lichess's rule.
#[test]
fn criterion_finds_the_solution_of_lichess_one_move_puzzles() {
    let puzzles: Vec<Puzzle> = lichess_sample()
        .into_iter()
        .filter(|p| p.moves.len() == 2)
        .take(12)
        .collect();
    assert_eq!(puzzles.len(), 12);
    let pool = pool(2);
    let verdicts = pool
        .map(&puzzles, |session, _, puzzle| {
            let mut after = position(&puzzle.fen);
            play(&mut after, &puzzle.moves[0]);
            let request = SearchRequest {
                fen: puzzle.fen.clone(),
                moves: vec![puzzle.moves[0]],
                limit: Limit::Depth(10),
                multipv: 2,
            };
            let (judged, _) =
                criterion::judge(session, &request, &after, Rule::Lichess, Turn::First)?;
            Ok(judged.decision.unique.then(|| {
                (
                    judged.best_move.expect("a unique verdict has a best move"),
                    judged.best_score,
                    judged.second_score,
                )
            }))
        })
        .unwrap();
    let mut agree = 0;
    for (puzzle, verdict) in puzzles.iter().zip(&verdicts) {
        // Lichess accepts any mate in one as the last move of a puzzle.
        let mates = |uci: &UciMove| {
            let mut after = position(&puzzle.fen);
            play(&mut after, &puzzle.moves[0]);
            play(&mut after, uci);
            after.is_checkmate()
        };
        let solution = puzzle.moves[1];
        match verdict {
            Some((best, _, _)) if *best == solution => agree += 1,
            Some((best, _, _)) if mates(best) && mates(&solution) => agree += 1,
            Some((best, _, _)) => panic!(
                "{}: unique best {best}, solution {}",
                puzzle.id, puzzle.moves[1]
            ),
            None => eprintln!("{}: not unique at depth 10", puzzle.id),
        }
    }
    assert!(agree >= 11, "only {agree} of 12 one-move puzzles pass");
}

/// Lichess puzzle positions as `ingest games` candidates: FEN before the
/// blunder, Moves = the blunder only.
fn write_candidates(dir: &Path, n: usize) -> std::path::PathBuf {
    let candidates: Vec<Puzzle> = lichess_sample()
        .into_iter()
        .take(n)
        .map(|mut p| {
            p.moves.truncate(1);
            p.rating = None;
            p.themes.clear();
            p
        })
        .collect();
    let path = dir.join("candidates.csv");
    write_puzzles(&path, &candidates).unwrap();
    path
}

fn small_mine_config(criterion: Criterion) -> MineConfig {
    MineConfig {
        criterion,
        depth: 8,
        shallow_depth: 4,
        ..MineConfig::default()
    }
}

/// Every puzzle replays legally from its FEN, starts with the game move,
/// alternates, ends on a solver move, and no position appears twice.
fn check_puzzles(puzzles: &[Puzzle]) {
    let mut positions = HashSet::new();
    let mut ids = HashSet::new();
    for puzzle in puzzles {
        assert!(ids.insert(puzzle.id.clone()), "duplicate id {}", puzzle.id);
        assert!(
            puzzle.moves.len() >= 2 && puzzle.moves.len() % 2 == 0,
            "{puzzle:?}"
        );
        assert!(puzzle.moves.len() <= 10, "{puzzle:?}");
        let mut pos = position(&puzzle.fen);
        let solver = !pos.turn();
        for (i, uci) in puzzle.moves.iter().enumerate() {
            if i == 1 {
                let hash: Zobrist64 = pos.zobrist_hash(EnPassantMode::Legal);
                assert!(positions.insert(hash), "position twice: {}", puzzle.id);
            }
            // The opponent moves at even indices, the solver at odd ones.
            assert_eq!(
                pos.turn() == solver,
                i % 2 == 1,
                "{}: move {i} by the wrong side",
                puzzle.id
            );
            play(&mut pos, uci);
        }
        assert!(puzzle.rating.is_none());
        for column in ["Source", "GameId", "Ply", "BestScore", "Criterion", "Nodes"] {
            assert!(
                !puzzle.get(column).unwrap_or_default().is_empty(),
                "{}: no {column}",
                puzzle.id
            );
        }
        let mate = puzzle.has_theme("mate");
        assert_eq!(
            mate,
            pos.is_checkmate(),
            "{}: mate theme vs position",
            puzzle.id
        );
    }
}

#[test]
fn mining_candidates_is_deterministic_and_lines_are_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_candidates(dir.path(), 24);
    let config = small_mine_config(Criterion::Lichess);
    let mut outputs = Vec::new();
    for (name, workers) in [("a.csv", 1), ("b.csv", 1), ("c.csv", 2)] {
        let output = dir.path().join(name);
        let summary = run_mine_with(
            &config.clone().checked().unwrap(),
            &pool(workers),
            &input,
            &output,
        )
        .unwrap();
        assert_eq!(summary.json["games"], 24);
        outputs.push(std::fs::read(&output).unwrap());
    }
    assert_eq!(outputs[0], outputs[1], "mine twice gave different bytes");
    assert_eq!(outputs[0], outputs[2], "1 and 2 workers differ");
    let puzzles = read_puzzles(&dir.path().join("a.csv")).unwrap();
    assert!(
        puzzles.len() >= 5,
        "only {} puzzles from 24 Lichess positions",
        puzzles.len()
    );
    check_puzzles(&puzzles);
    assert!(
        puzzles.iter().any(|p| p.moves.len() > 2),
        "no line was extended"
    );
    assert!(
        puzzles
            .iter()
            .all(|p| p.get("Source") == Some("lichess-game"))
    );
}

#[test]
fn mining_selfplay_games_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let games = dir.path().join("games.pgn");
    let selfplay = SelfplayConfig {
        games: 4,
        seed: 7,
        mode: Mode::Chaos,
        chaos_white_elo: [1350, 1500],
        chaos_black_elo: [1350, 1400],
        max_plies: 60,
        ..SelfplayConfig::default()
    };
    run_selfplay_with(&selfplay, &pool(2), &games).unwrap();
    let config = MineConfig {
        max_per_game: 3,
        ..small_mine_config(Criterion::Epoch)
    };
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let summary = run_mine_with(&config.clone().checked().unwrap(), &pool(1), &games, &a).unwrap();
    run_mine_with(&config.clone().checked().unwrap(), &pool(2), &games, &b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(summary.json["games"], 4);
    assert!(summary.json["positions_analysed"].as_u64().unwrap() > 0);
    // Four short low-Elo games may give no puzzle at all: an empty file.
    let puzzles = if std::fs::metadata(&a).unwrap().len() == 0 {
        Vec::new()
    } else {
        read_puzzles(&a).unwrap()
    };
    eprintln!(
        "{} puzzles from 4 self-play games: {}",
        puzzles.len(),
        summary.human
    );
    check_puzzles(&puzzles);
    for puzzle in &puzzles {
        assert_eq!(puzzle.get("Source"), Some("selfplay"));
        assert_eq!(puzzle.get("Seed"), Some("7"));
    }
}

#[test]
fn verify_rechecks_mined_puzzles() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_candidates(dir.path(), 12);
    let mined = dir.path().join("mined.csv");
    run_mine_with(
        &small_mine_config(Criterion::Lichess).checked().unwrap(),
        &pool(2),
        &input,
        &mined,
    )
    .unwrap();
    let count = read_puzzles(&mined).unwrap().len();
    let config = puzzleforge::stages::verify::VerifyConfig {
        factor: 2,
        nodes: None,
        nodes_override: false,
        criterion: None,
        ..Default::default()
    };
    let report = dir.path().join("mined.verify.jsonl");
    let files = puzzleforge::stages::verify::VerifyFiles {
        input: &mined,
        report: &report,
        puzzles_out: None,
    };
    let (summary, counts) =
        puzzleforge::stages::verify::run_verify_with(&config, &pool(2), None, &files).unwrap();
    assert_eq!(counts.puzzles, count as u64);
    assert_eq!(counts.checked, count as u64);
    assert_eq!(summary.json["puzzles"], count);
    assert_eq!(summary.json["checked"], count);
    let lines = std::fs::read_to_string(&report).unwrap();
    assert_eq!(lines.lines().count(), count);
    // Twice the nodes rarely overturns a depth-8 solution.
    assert!(
        summary.json["best_holds"].as_u64().unwrap() * 10 >= count as u64 * 7,
        "{}",
        summary.human
    );
}

/// `bench mine` on a real Lichess game: the exhaustive search analyses every
/// position fully, the funnel fewer, and the recall and node ratio are
/// computed from the two runs' own candidates and nodes.
#[test]
fn bench_mine_sets_the_funnel_beside_the_exhaustive_search() {
    let out = common::summary(&common::puzzleforge_here(&[
        "bench",
        "mine",
        "--pgn",
        "tests/data/lichess_game_export_ZlCTzfMG_eval_clk.pgn",
        "--depth",
        "8",
        "--shallow-depth",
        "4",
        "--workers",
        "1",
        "--json",
    ]));
    let (exhaustive, funnel) = (&out["exhaustive"], &out["funnel"]);
    let number = |v: &serde_json::Value| v.as_u64().unwrap();
    let positions = number(&exhaustive["positions"]);
    assert!(positions > 20, "{out:#}");
    assert_eq!(number(&funnel["positions"]), positions, "{out:#}");
    assert_eq!(number(&exhaustive["full_searches"]), positions, "{out:#}");
    assert!(number(&funnel["full_searches"]) < positions, "{out:#}");
    let nodes_ratio = out["nodes_ratio"].as_f64().unwrap();
    let expected = number(&exhaustive["nodes"]) as f64 / number(&funnel["nodes"]) as f64;
    assert!(
        nodes_ratio > 1.0 && (nodes_ratio - expected).abs() < 1e-9,
        "{out:#}"
    );
    let recall = out["recall"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&recall), "{out:#}");
    for run in [exhaustive, funnel] {
        assert!(run["cpu_seconds"].as_f64().unwrap() > 0.0, "{out:#}");
    }
}

/// A standalone `mine` killed mid-run keeps the games it finished
/// (`OUTPUT.checkpoint.jsonl`) and the same command run again mines only
/// the rest: its output is byte for byte the output of one uninterrupted
/// run, a line the kill cut short is mined again, and the checkpoint goes
/// once the output is written (issue 57: a `mine` killed after 300 s lost
/// all its work).
#[test]
fn a_killed_mine_resumes_where_it_stopped_and_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/master_games_sample_145.pgn");
    let text = std::fs::read_to_string(&source).unwrap();
    let games: Vec<&str> = text.split("\n[Event ").take(24).collect();
    let pgn = dir.path().join("games.pgn");
    std::fs::write(&pgn, games.join("\n[Event ") + "\n").unwrap();
    let args = |output: &Path| -> Vec<String> {
        [
            "mine",
            pgn.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--nodes",
            "5000",
            "--shallow-depth",
            "6",
            "--workers",
            "1",
        ]
        .map(String::from)
        .to_vec()
    };
    let whole = dir.path().join("whole.csv");
    let once = common::puzzleforge(
        dir.path(),
        &args(&whole).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        once.status.success(),
        "{}",
        String::from_utf8_lossy(&once.stderr)
    );
    let checkpoint = |output: &Path| {
        let mut name = output.as_os_str().to_owned();
        name.push(".checkpoint.jsonl");
        std::path::PathBuf::from(name)
    };
    assert!(
        !checkpoint(&whole).exists(),
        "the checkpoint outlives the output"
    );

    let resumed = dir.path().join("resumed.csv");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(args(&resumed))
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let kept = kill_once_recorded(child, &checkpoint(&resumed));
    assert!(!resumed.exists());
    assert!((1..24).contains(&kept), "{kept} games recorded");
    // A line cut short by the kill.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(checkpoint(&resumed))
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"unit\": 23, \"result\": {\"fou").unwrap();
    drop(file);

    let again = common::puzzleforge(
        dir.path(),
        &args(&resumed)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_resumed(&again, kept, (&resumed, &whole), &checkpoint(&resumed));
}

/// Kills `child` (a mining run) once its checkpoint `checkpoint` holds a
/// finished game, and gives the games it holds.
fn kill_once_recorded(mut child: std::process::Child, checkpoint: &Path) -> usize {
    let recorded = || {
        std::fs::read_to_string(checkpoint)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    // The header, then the first chunk's games.
    while recorded() < 2 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "mining ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    recorded() - 1
}

/// Checks the run `again` that resumed a killed one: it succeeded, said it
/// resumed the `kept` of 24 games its checkpoint held, wrote the bytes of
/// one uninterrupted run (`outputs`: the resumed output, the uninterrupted
/// one) and removed its checkpoint `checkpoint`.
fn assert_resumed(
    again: &std::process::Output,
    kept: usize,
    (resumed, whole): (&Path, &Path),
    checkpoint: &Path,
) {
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("resuming: {kept} of 24 games already mined")),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(resumed).unwrap(),
        std::fs::read(whole).unwrap()
    );
    assert!(!checkpoint.exists());
}

/// The pipeline's `mine` stage checkpoints as a standalone `mine` does: a
/// `run` killed mid-stage leaves the finished games in
/// `<release>/.mine.checkpoint/` (which the next run does not remove with
/// the scratch folder), the same `run` again mines only the rest and
/// commits the bytes of one uninterrupted run, and the checkpoint goes
/// with the commit (issue 65: the stage lost all its work to a kill).
#[test]
fn a_killed_run_resumes_its_mine_stage_and_commits_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[pipeline]
seed = 7
output_dir = "out"
release = "k"
stages = ["mine"]

[engine]
path = "/usr/games/stockfish"
workers = 1

[sources]
human_games = "{}"

[human_games]
mine_games = 24

[mine]
nodes = 5000
shallow_depth = 6
"#,
        common::data("master_games_sample_145.pgn").display()
    );
    // Two folders, one config: the same seeds, the same games drawn.
    let (whole, resumed) = (dir.path().join("whole"), dir.path().join("resumed"));
    for folder in [&whole, &resumed] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join("p.toml"), &config).unwrap();
    }
    let run = ["run", "--config", "p.toml"];
    let once = common::puzzleforge(&whole, &run);
    assert!(
        once.status.success(),
        "{}",
        String::from_utf8_lossy(&once.stderr)
    );
    let mined = |folder: &Path| folder.join("out/k/mine/human_games.puzzles.csv");
    let checkpoints = |folder: &Path| folder.join("out/k/.mine.checkpoint");
    assert!(
        !checkpoints(&whole).exists(),
        "the checkpoint outlives the commit"
    );

    let child = std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(run)
        .current_dir(&resumed)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = checkpoints(&resumed).join("human_games.puzzles.csv.checkpoint.jsonl");
    let kept = kill_once_recorded(child, &checkpoint);
    assert!(!mined(&resumed).exists());
    assert!((1..24).contains(&kept), "{kept} games recorded");

    let again = common::puzzleforge(&resumed, &run);
    assert_resumed(
        &again,
        kept,
        (&mined(&resumed), &mined(&whole)),
        &checkpoints(&resumed),
    );
}

/// A PGN of one game of `plies` knight moves (1. Nf3 Nf6 2. Ng1 Ng8 ...),
/// never a capture or a pawn move: the hostile game of issue 67.
pub(crate) fn knight_shuffle(path: &Path, plies: usize) {
    let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
    let mut text = String::from("[Event \"shuffle\"]\n[Result \"*\"]\n\n");
    for ply in 0..plies {
        if ply % 2 == 0 {
            text.push_str(&format!("{}. ", ply / 2 + 1));
        }
        text.push_str(cycle[ply % 4]);
        text.push(' ');
    }
    text.push_str("*\n");
    std::fs::write(path, text).unwrap();
}

/// Issue 67: `mine` is linear in a game's length. Each search is sent as
/// the position after the game's last capture or pawn move and the moves
/// since, at most 100 plies of them: a 1,200-ply game of knight moves
/// (real Stockfish behind a wrapper that logs what it is sent) never gets
/// a `position` command longer than that plus a puzzle's line, where it
/// got the whole game before.
#[test]
fn the_engine_is_sent_a_bounded_history_however_long_the_game() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let log = root.join("sent.log");
    let engine = root.join("logging-engine");
    std::fs::write(
        &engine,
        format!(
            "#!/bin/sh\ntee -a '{}' | exec /usr/games/stockfish\n",
            log.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&engine).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&engine, permissions).unwrap();
    let shuffle = root.join("shuffle.pgn");
    knight_shuffle(&shuffle, 1200);
    let output = common::puzzleforge(
        root,
        &[
            "mine",
            shuffle.to_str().unwrap(),
            "-o",
            "m.csv",
            "--nodes",
            "200",
            "--shallow-depth",
            "2",
            "--workers",
            "1",
            "--engine",
            engine.to_str().unwrap(),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sent = std::fs::read_to_string(&log).unwrap();
    let positions: Vec<&str> = sent
        .lines()
        .filter(|l| l.starts_with("position "))
        .collect();
    // Every position after move 10 (the default `min_fullmove`) is searched.
    assert!(positions.len() > 1000, "{} searches", positions.len());
    let longest = positions
        .iter()
        .map(|l| {
            l.split(" moves ")
                .nth(1)
                .map_or(0, |m| m.split(' ').count())
        })
        .max()
        .unwrap();
    assert!(
        (100..=130).contains(&longest),
        "the longest history sent is {longest} moves"
    );
}

/// Issue 67: what the history cut keeps is all the engine needs. At
/// positions of a real game, a search sent as the position after the last
/// capture or pawn move and the moves since gives the lines, scores and
/// node counts of the same search sent from the game's start (hash cleared
/// before each, real Stockfish).
#[test]
fn a_search_from_the_last_capture_or_pawn_move_equals_one_from_the_start() {
    use puzzleforge::chess::pgn::{GameItem, PgnGames};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/master_games_sample_145.pgn");
    let game = PgnGames::new(std::fs::File::open(path).unwrap())
        .find_map(|item| match item.unwrap() {
            GameItem::Game(game) if game.moves.len() > 80 => Some(game),
            _ => None,
        })
        .unwrap();
    let moves: Vec<UciMove> = game
        .moves
        .iter()
        .map(|m| m.mv.to_uci(CastlingMode::Standard))
        .collect();
    let mut positions = vec![Chess::default()];
    for uci in &moves {
        let mut next = positions.last().unwrap().clone();
        play(&mut next, uci);
        positions.push(next);
    }
    let mut requests = Vec::new();
    for at in (20..moves.len()).step_by(9) {
        let back = positions[at].halfmoves() as usize;
        let cut = at - back.min(100).min(at);
        assert!(cut > 0, "ply {at}: no capture or pawn move yet");
        let whole = SearchRequest {
            fen: Fen::from_position(&positions[0], EnPassantMode::Legal),
            moves: moves[..at].to_vec(),
            limit: Limit::Nodes(20_000),
            multipv: 2,
        };
        let short = SearchRequest {
            fen: Fen::from_position(&positions[cut], EnPassantMode::PseudoLegal),
            moves: moves[cut..at].to_vec(),
            ..whole.clone()
        };
        requests.push((at, whole, short));
    }
    assert!(requests.len() >= 5);
    let pool = pool(1);
    let results = pool
        .map(&requests, |session, _, (at, whole, short)| {
            session.set_option("Clear Hash", "true")?;
            let a = session.search(whole)?;
            session.set_option("Clear Hash", "true")?;
            let b = session.search(short)?;
            Ok((*at, a, b))
        })
        .unwrap();
    for (at, a, b) in results {
        assert_eq!(a.lines, b.lines, "ply {at}");
        assert_eq!(a.nodes, b.nodes, "ply {at}");
    }
}

/// The swing pass (`[mine] swing_depth`) only screens: on real master
/// games it runs one MultiPV 1 search per position, gives the MultiPV 2
/// shallow pass to fewer positions, and every puzzle it keeps is one the
/// exhaustive search (the full search on every position) keeps, with the
/// same line: the full search starts from a cleared hash, so its verdict
/// depends on the position alone.
#[test]
fn the_swing_pass_searches_fewer_positions_and_keeps_only_puzzles_of_the_exhaustive_search() {
    let dir = tempfile::tempdir().unwrap();
    let games = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/master_games_sample_145.pgn"),
    )
    .unwrap();
    let first: Vec<&str> = games.split("\n[Event ").take(6).collect();
    let input = dir.path().join("games.pgn");
    std::fs::write(&input, first.join("\n[Event ")).unwrap();
    let base = MineConfig {
        nodes: Some(30_000),
        shallow_depth: 6,
        max_per_game: 100,
        mates: true,
        ..MineConfig::default()
    };
    let mut runs = Vec::new();
    for (name, swing_depth, exhaustive) in [
        ("plain.csv", 0, false),
        ("swing.csv", 6, false),
        ("exhaustive.csv", 0, true),
    ] {
        let config = MineConfig {
            swing_depth,
            exhaustive,
            ..base.clone()
        };
        let output = dir.path().join(name);
        let summary = run_mine_with(
            &config.clone().checked().unwrap(),
            &pool(2),
            &input,
            &output,
        )
        .unwrap();
        let puzzles: HashSet<(String, String)> = read_puzzles(&output)
            .unwrap()
            .into_iter()
            .map(|p| (p.fen.to_string(), p.moves_text()))
            .collect();
        runs.push((summary.json, puzzles));
    }
    let searches = |run: usize, step: &str| runs[run].0["searches_by_step"][step].as_u64().unwrap();
    assert_eq!(searches(0, "swing"), 0, "{}", runs[0].0);
    assert!(searches(1, "swing") >= runs[1].0["positions_analysed"].as_u64().unwrap());
    assert!(
        searches(1, "shallow") * 2 < searches(0, "shallow"),
        "{} against {}",
        runs[1].0,
        runs[0].0
    );
    let (swing, exhaustive) = (&runs[1].1, &runs[2].1);
    assert!(!swing.is_empty(), "{}", runs[1].0);
    assert!(
        swing.is_subset(exhaustive),
        "{swing:?} against {exhaustive:?}"
    );
}

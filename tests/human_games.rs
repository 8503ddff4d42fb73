//! Human games as a source (`[sources] human_games`): games grown from a
//! human game's prefix name their source and keep only new positions;
//! human-game puzzles are mined from drawn games and say they are public;
//! a missing file names the script that fetches it. Real Stockfish, the
//! committed sample of master games, tiny budgets.

use puzzleforge::chess::human_games::position_keys;
use puzzleforge::chess::pgn::{GameItem, GameRecord, PgnGames};
use serde_json::Value;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use std::path::{Path, PathBuf};

use crate::common::{data, generation_config, puzzleforge, summary};

const SAMPLE: &str = "master_games_sample_145.pgn";

fn games_of(path: &Path) -> Vec<GameRecord> {
    let file = std::fs::File::open(path).unwrap();
    PgnGames::new(file)
        .map(|item| match item.unwrap() {
            GameItem::Game(game) => *game,
            other => panic!("{}: {other:?}", path.display()),
        })
        .collect()
}

fn ucis(game: &GameRecord) -> Vec<UciMove> {
    game.moves
        .iter()
        .map(|m| m.mv.to_uci(CastlingMode::Standard))
        .collect()
}

/// The position key of a puzzle row (FEN, then the opponent's move).
fn puzzle_key(row: &csv::StringRecord, headers: &csv::StringRecord) -> u64 {
    let column = |name: &str| &row[headers.iter().position(|h| h == name).unwrap()];
    let fen: Fen = column("FEN").parse().unwrap();
    let mut position: Chess = fen.into_position(CastlingMode::Standard).unwrap();
    let first: UciMove = column("Moves").split(' ').next().unwrap().parse().unwrap();
    let m = first.to_move(&position).unwrap();
    position.play_unchecked(m);
    let key: Zobrist64 = position.zobrist_hash(EnPassantMode::Legal);
    key.0
}

fn rows(path: &Path) -> (csv::StringRecord, Vec<csv::StringRecord>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let rows = reader.records().map(Result::unwrap).collect();
    (headers, rows)
}

fn store_batches(output: &Path) -> Vec<PathBuf> {
    let store = std::fs::read_dir(output.join(".generate"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let mut batches: Vec<PathBuf> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("batch-")
        })
        .collect();
    batches.sort();
    batches
}

/// A human start's game replays its source game's first `SourcePly` moves
/// (the source named by number in the file, its moves and tags as the file
/// has them), mining searches none of the source game's positions (they
/// could only give public puzzles), and no puzzle kept from the game sits
/// at a position of the source game.
#[test]
fn games_grown_from_human_games_name_their_source_and_keep_only_new_positions() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let generate = format!(
        "batch_games = 4\nmax_games = 8\n\n[generate.selfplay]\n\
         human = {{ plies = [30, 50] }}\nmax_plies = 120\n\n\
         [generate.mine]\nmissed_only = false\n\n\
         [sources]\nhuman_games = \"{}\"\n",
        data(SAMPLE).display()
    );
    generation_config(root, "h.toml", "H", 2, &generate);
    let run = summary(&puzzleforge(root, &["run", "--config", "h.toml", "--json"]));
    assert_eq!(run["generate"]["stop"], "quotas_met", "{run:#}");

    let sample = games_of(&data(SAMPLE));
    let mut kept = 0;
    for batch in store_batches(&root.join("H")) {
        let games = games_of(&batch.join("games.pgn"));
        assert!(!games.is_empty());
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(batch.join("batch.json")).unwrap())
                .unwrap();
        let mut source_keys = std::collections::HashMap::new();
        for (game, funnel) in games.iter().zip(record["per_game"].as_array().unwrap()) {
            let tag = |name: &str| game.tags.get(name).unwrap().to_string();
            assert_eq!(tag("Mode"), "human");
            let number: usize = tag("SourceGame").parse().unwrap();
            let ply: usize = tag("SourcePly").parse().unwrap();
            let source = &sample[number - 1];
            assert_eq!(source.number as usize, number);
            assert_eq!(tag("SourceWhite"), source.tags.get("White").unwrap());
            let source_moves = ucis(source);
            let written: Vec<UciMove> = tag("SourceMoves")
                .split(' ')
                .map(|m| m.parse().unwrap())
                .collect();
            assert_eq!(written, source_moves, "game {number}");
            assert!(
                (30..=50).contains(&ply) && ply < source_moves.len(),
                "{ply}"
            );
            assert_eq!(ucis(game)[..ply], source_moves[..ply]);
            // Positions analysed: only those after the prefix (a position
            // after k moves, k >= 1, with a move played from it).
            let on_game =
                funnel["positions"].as_u64().unwrap() - funnel["branches"].as_u64().unwrap_or(0);
            assert!(
                on_game as usize <= game.moves.len() - ply,
                "game {}: {on_game} positions analysed, {} after the prefix",
                funnel["game"],
                game.moves.len() - ply
            );
            let id = format!("selfplay-{}-{}", tag("Seed"), tag("Round"));
            source_keys.insert(id, position_keys(&source_moves));
        }
        let (headers, mined) = rows(&batch.join("mined.csv"));
        let game_id = headers.iter().position(|h| h == "GameId").unwrap();
        for row in &mined {
            let keys = &source_keys[&row[game_id]];
            assert!(
                keys.binary_search(&puzzle_key(row, &headers)).is_err(),
                "{row:?} is a position of its source game"
            );
        }
        kept += mined.len();
    }
    assert!(kept > 0, "the grown games gave no puzzle");
}

/// `[human_games] mine_games` mines games drawn from the file: each
/// puzzle's row says `human-game` and names file, game and ply, and its
/// position is that game's at that ply. The same seed draws the same games.
#[test]
fn human_game_puzzles_are_mined_from_drawn_games_and_say_where_they_stand() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = format!(
        r#"
[pipeline]
seed = 7
output_dir = "out"
release = "h"
stages = ["mine"]

[engine]
path = "/usr/games/stockfish"
workers = 2

[sources]
human_games = "{}"

[human_games]
mine_games = 6

[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3
max_per_game = 100
"#,
        data(SAMPLE).display()
    );
    std::fs::write(root.join("p.toml"), config).unwrap();
    summary(&puzzleforge(root, &["run", "--config", "p.toml", "--json"]));
    let mined = root.join("out/h/mine/human_games.puzzles.csv");
    let (headers, puzzles) = rows(&mined);
    assert!(!puzzles.is_empty(), "six master games gave no puzzle");
    let column = |row: &csv::StringRecord, name: &str| {
        row[headers.iter().position(|h| h == name).unwrap()].to_string()
    };
    let sample = games_of(&data(SAMPLE));
    for row in &puzzles {
        assert_eq!(column(row, "Source"), "human-game");
        let url = column(row, "GameUrl");
        let (file, place) = url.split_once('#').unwrap();
        assert_eq!(file, SAMPLE);
        let fields: Vec<usize> = place
            .split('&')
            .map(|kv| kv.split_once('=').unwrap().1.parse().unwrap())
            .collect();
        let (number, ply) = (fields[0], fields[1]);
        assert_eq!(column(row, "Ply"), ply.to_string());
        assert!(column(row, "GameId").ends_with(&format!("-{number}")));
        // FEN is the position before the game's move at ply `ply`.
        let game = &sample[number - 1];
        let mut position = Chess::default();
        for played in &game.moves[..ply - 1] {
            position.play_unchecked(played.mv);
        }
        assert_eq!(
            column(row, "FEN"),
            Fen::from_position(&position, EnPassantMode::Legal).to_string()
        );
    }
    // Another folder, the same seed: the same rows.
    std::fs::create_dir(root.join("again")).unwrap();
    std::fs::copy(root.join("p.toml"), root.join("again/p.toml")).unwrap();
    summary(&puzzleforge(
        &root.join("again"),
        &["run", "--config", "p.toml", "--json"],
    ));
    assert_eq!(
        std::fs::read(&mined).unwrap(),
        std::fs::read(root.join("again/out/h/mine/human_games.puzzles.csv")).unwrap()
    );
}

/// A profile that starts from human games whose file is missing stops
/// before any game with exit 2, naming the file and the script.
#[test]
fn missing_human_games_name_the_script_that_fetches_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let generate = "[generate.selfplay]\nhuman = { plies = [20, 40] }\n\n\
                    [sources]\nhuman_games = \"absent/games.pgn.zst\"\n";
    generation_config(root, "m.toml", "M", 1, generate);
    let output = puzzleforge(root, &["run", "--config", "m.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("absent/games.pgn.zst"), "{stderr}");
    assert!(stderr.contains("engines/human-games.sh"), "{stderr}");
    assert!(
        !root.join("M/gen/selfplay/stage.json").exists(),
        "a stage ran before the missing file was named"
    );
}

/// Games grown from Lichess puzzles (`[sources] human_games` a puzzle
/// file): each starts at its source puzzle's FEN (a `FEN` tag), replays
/// the first `SourcePly` moves of the puzzle's line, names the puzzle by
/// its row and id, and no puzzle kept from it sits at a position of the
/// puzzle's line, which is public.
#[test]
fn games_grown_from_lichess_puzzles_start_at_their_fen_and_keep_only_new_positions() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let puzzles = data("lichess_db_puzzle_subset_1499.csv");
    let generate = format!(
        "batch_games = 4\nmax_games = 8\n\n[generate.selfplay]\n\
         human = {{ plies = [1, 1] }}\nmax_plies = 60\n\n\
         [generate.mine]\nmissed_only = false\n\n\
         [sources]\nhuman_games = \"{}\"\n",
        puzzles.display()
    );
    generation_config(root, "p.toml", "P", 2, &generate);
    let run = summary(&puzzleforge(root, &["run", "--config", "p.toml", "--json"]));
    assert_eq!(run["generate"]["stop"], "quotas_met", "{run:#}");

    let (headers, rows_of_file) = rows(&puzzles);
    let column = |row: &csv::StringRecord, name: &str| {
        row[headers.iter().position(|h| h == name).unwrap()].to_string()
    };
    let mut kept = 0;
    for batch in store_batches(&root.join("P")) {
        let games = games_of(&batch.join("games.pgn"));
        assert!(!games.is_empty());
        let mut source_keys = std::collections::HashMap::new();
        for game in &games {
            let tag = |name: &str| game.tags.get(name).unwrap().to_string();
            let number: usize = tag("SourceGame").parse().unwrap();
            let source = &rows_of_file[number - 1];
            assert_eq!(tag("SourcePuzzleId"), column(source, "PuzzleId"));
            assert_eq!(tag("FEN"), column(source, "FEN"));
            assert_eq!(tag("SourceFEN"), column(source, "FEN"));
            assert_eq!(tag("SourceMoves"), column(source, "Moves"));
            assert_eq!(tag("SourcePly"), "1");
            let line: Vec<UciMove> = column(source, "Moves")
                .split(' ')
                .map(|m| m.parse().unwrap())
                .collect();
            assert_eq!(ucis(game)[..1], line[..1]);
            let start: Fen = column(source, "FEN").parse().unwrap();
            let start: Chess = start.into_position(CastlingMode::Standard).unwrap();
            let id = format!("selfplay-{}-{}", tag("Seed"), tag("Round"));
            source_keys.insert(
                id,
                puzzleforge::chess::human_games::position_keys_from(start, &line),
            );
        }
        let (mined_headers, mined) = rows(&batch.join("mined.csv"));
        let game_id = mined_headers.iter().position(|h| h == "GameId").unwrap();
        for row in &mined {
            let keys = &source_keys[&row[game_id]];
            assert!(
                keys.binary_search(&puzzle_key(row, &mined_headers))
                    .is_err(),
                "{row:?} is at a position of its source puzzle's line"
            );
            kept += 1;
        }
    }
    assert!(kept > 0, "no puzzle was kept from the grown games");
}

/// Issue 67, defects 3 and 4: a human games file that is a truncated
/// `.zst`, one with bytes after its last frame, a folder or a FIFO is bad
/// input (exit 2) for `run` and `run --plan`, named with its key and what
/// it is, never called missing; a missing puzzle file is called one, not
/// a PGN. Nothing is played.
#[test]
fn a_damaged_or_misplaced_human_games_file_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let games = std::fs::read(data(SAMPLE)).unwrap();
    let packed = zstd::encode_all(&games[..], 3).unwrap();
    std::fs::write(root.join("trunc.pgn.zst"), &packed[..packed.len() / 2]).unwrap();
    let mut garbage = packed.clone();
    garbage.extend_from_slice(b"not a frame\n");
    std::fs::write(root.join("garbage.pgn.zst"), garbage).unwrap();
    std::fs::create_dir(root.join("folder")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(root.join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    let key = "sources.human_games";
    for (name, needles) in [
        ("trunc.pgn.zst", vec![key, "incomplete frame"]),
        ("garbage.pgn.zst", vec![key, "Unknown frame descriptor"]),
        ("folder", vec![key, "is a directory"]),
        ("fifo", vec![key, "is a FIFO"]),
        ("absent.csv", vec![key, "the puzzle file", "is missing"]),
    ] {
        let generate = format!(
            "[generate.selfplay]\nhuman = {{ plies = [20, 40] }}\n\n\
             [sources]\nhuman_games = \"{name}\"\n"
        );
        generation_config(root, "m.toml", "M", 1, &generate);
        for plan in [false, true] {
            let mut args = vec!["run", "--config", "m.toml"];
            if plan {
                args.push("--plan");
            }
            let output = puzzleforge(root, &args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?} {name}: {stderr}");
            for needle in needles.iter().chain([&name]) {
                assert!(stderr.contains(needle), "{name}: no {needle:?} in {stderr}");
            }
            assert!(!stderr.contains("are missing"), "{name}: {stderr}");
            assert!(!stderr.contains("PGN of human games"), "{name}: {stderr}");
            assert!(
                !root.join("M/.generate").exists(),
                "{name}: a game was played"
            );
        }
    }
}

/// Issue 67, defect 5: a human start that can give no position to mine
/// (a 1-ply prefix and no play after it; a prefix that leaves `max_plies`
/// no room for a new position and a move) is refused (exit 2, naming the
/// key) before any game is played.
#[test]
fn a_human_start_that_can_give_no_position_is_refused_before_any_game() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (human, needle) in [
        ("{ plies = [1, 1], continue_plies = 0 }", "continue_plies"),
        ("{ plies = [20, 40], continue_plies = 1 }", "continue_plies"),
        ("{ plies = [79, 79] }", "max_plies"),
    ] {
        let generate = format!(
            "[generate.selfplay]\nhuman = {human}\n\n[sources]\nhuman_games = \"{}\"\n",
            data(SAMPLE).display()
        );
        generation_config(root, "n.toml", "N", 1, &generate);
        let output = puzzleforge(root, &["run", "--config", "n.toml"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{human}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{human}: no {needle:?} in {stderr}"
        );
        assert!(
            !root.join("N/.generate").exists(),
            "{human}: a game was played"
        );
    }
}

/// `leave_line`: a game grown from a public puzzle's position leaves the
/// puzzle's line at once (its first new move is not the puzzle's next
/// move), and its puzzles' `GameUrl` names the puzzle it started from.
#[test]
fn a_game_that_leaves_its_source_puzzles_line_plays_another_move_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let generate = format!(
        "batch_games = 4\nmax_games = 8\n\n[generate.selfplay]\n\
         human = {{ plies = [1, 1], leave_line = true }}\nmax_plies = 60\n\n\
         [generate.mine]\nmissed_only = false\n\n\
         [sources]\nhuman_games = \"{}\"\n",
        data("lichess_puzzles_2000_2800_20000.csv.zst").display()
    );
    generation_config(root, "l.toml", "L", 2, &generate);
    summary(&puzzleforge(root, &["run", "--config", "l.toml", "--json"]));
    let mut games_seen = 0;
    let mut starts = 0;
    for batch in store_batches(&root.join("L")) {
        for game in games_of(&batch.join("games.pgn")) {
            let tag = |name: &str| game.tags.get(name).unwrap().to_string();
            let source: Vec<UciMove> = tag("SourceMoves")
                .split(' ')
                .map(|m| m.parse().unwrap())
                .collect();
            assert_eq!(tag("SourcePly"), "1");
            let played = ucis(&game);
            assert_eq!(
                played[0], source[0],
                "the puzzle's setting move is replayed"
            );
            if played.len() > 1 {
                assert_ne!(
                    played[1], source[1],
                    "the new play's first move is the puzzle's"
                );
            }
            games_seen += 1;
        }
        let (headers, mined) = rows(&batch.join("mined.csv"));
        let url = headers.iter().position(|h| h == "GameUrl").unwrap();
        for row in &mined {
            assert!(row[url].starts_with("start:puzzle:"), "{row:?}");
            starts += 1;
        }
    }
    assert!(games_seen >= 4, "{games_seen} games");
    assert!(starts > 0, "no puzzle to say where its game started");
}

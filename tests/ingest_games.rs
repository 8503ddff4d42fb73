//! `puzzleforge ingest games` on the real Lichess game export and PGNs
//! derived from it by editing tags, cutting and corrupting text.

use proptest::prelude::*;
use puzzleforge::chess::pgn::{GameItem, PgnGames};
use puzzleforge::chess::record::{Puzzle, read_puzzles};
use puzzleforge::stages::ingest_games::{IngestGamesConfig, TimeClass, run_games_with};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const GAME_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/lichess_game_export_ZlCTzfMG_eval_clk.pgn"
);

fn real_game() -> String {
    std::fs::read_to_string(GAME_FILE).unwrap()
}

/// The game with tag `name` set to `value` (replaced, or added after Event).
fn with_tag(pgn: &str, name: &str, value: &str) -> String {
    let prefix = format!("[{name} \"");
    let line = format!("[{name} \"{value}\"]");
    let mut found = false;
    let mut lines: Vec<String> = pgn
        .lines()
        .map(|l| {
            if l.starts_with(&prefix) {
                found = true;
                line.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    if !found {
        lines.insert(1, line);
    }
    lines.join("\n") + "\n"
}

fn with_site(pgn: &str, id: &str) -> String {
    with_tag(pgn, "Site", &format!("https://lichess.org/{id}"))
}

/// The game without comments and variations: what an unanalysed game
/// looks like in a dump.
fn without_annotations(pgn: &str) -> String {
    let (tags, movetext) = pgn.split_once("\n\n").unwrap();
    let mut out = String::new();
    let (mut braces, mut parens) = (0, 0);
    for c in movetext.chars() {
        match c {
            '{' => braces += 1,
            '}' => braces -= 1,
            '(' if braces == 0 => parens += 1,
            ')' if braces == 0 => parens -= 1,
            _ if braces == 0 && parens == 0 => out.push(c),
            _ => {}
        }
    }
    let movetext = out.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{tags}\n\n{movetext}\n")
}

fn run(config: &IngestGamesConfig, pgn: &str, output_name: &str) -> (Value, Vec<Puzzle>) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("games.pgn");
    std::fs::write(&input, pgn).unwrap();
    let output = dir.path().join(output_name);
    let summary = run_games_with(config, &input, &output).unwrap();
    (summary.json, read_puzzles(&output).unwrap())
}

fn count(summary: &Value, group: &str, reason: &str) -> u64 {
    summary[group][reason].as_u64().unwrap_or(0)
}

/// Mainline SAN moves and their `[%eval]` texts, read with plain string
/// handling (independent of the crate's PGN reader).
fn mainline(pgn: &str) -> Vec<(String, String)> {
    let (_, movetext) = pgn.split_once("\n\n").unwrap();
    let mut moves: Vec<(String, String)> = Vec::new();
    let (mut parens, mut chars) = (0, movetext.chars().peekable());
    let mut word = String::new();
    while let Some(c) = chars.next() {
        if matches!(c, '{' | '(' | ')') || c.is_whitespace() {
            // A move token ends at whitespace or at a bracket.
            let token = std::mem::take(&mut word);
            let is_move = !token.is_empty()
                && !token.chars().next().unwrap().is_ascii_digit()
                && token != "*";
            if parens == 0 && is_move {
                moves.push((token, String::new()));
            }
        }
        match c {
            '{' => {
                let comment: String = chars.by_ref().take_while(|&c| c != '}').collect();
                if parens == 0
                    && let Some(start) = comment.find("[%eval ")
                {
                    let rest = &comment[start + 7..];
                    let eval = &rest[..rest.find(']').unwrap()];
                    moves.last_mut().unwrap().1 = eval.to_string();
                }
            }
            '(' => parens += 1,
            ')' => parens -= 1,
            c if c.is_whitespace() => {}
            c => word.push(c),
        }
    }
    moves
}

fn white_win_chance(eval: &str) -> f64 {
    if let Some(mate) = eval.strip_prefix('#') {
        return if mate.starts_with('-') { -1.0 } else { 1.0 };
    }
    let cp: f64 = eval.parse::<f64>().unwrap() * 100.0;
    2.0 / (1.0 + (-0.00368208 * cp).exp()) - 1.0
}

fn white_cp_at_least(eval: &str, cp: f64) -> bool {
    match eval.strip_prefix('#') {
        Some(mate) => !mate.starts_with('-'),
        None => eval.parse::<f64>().unwrap() * 100.0 >= cp,
    }
}

#[test]
fn the_real_games_blunders_are_candidates() {
    let pgn = real_game();
    let moves = mainline(&pgn);
    assert_eq!(moves.len(), 117);

    // The plies where the evaluation swings: the side to move afterwards
    // stands at +2 or mates, and its winning chances rose by more than 0.6.
    let mut expected = BTreeSet::new();
    for ply in 2..=moves.len() {
        let (before, after) = (&moves[ply - 2].1, &moves[ply - 1].1);
        let black_to_move = ply % 2 == 1;
        let sign = if black_to_move { -1.0 } else { 1.0 };
        let gain = sign * (white_win_chance(after) - white_win_chance(before));
        let negated = |e: &str| match e.strip_prefix('#') {
            Some(m) => format!("#{}", -m.parse::<i32>().unwrap()),
            None => format!("{}", -e.parse::<f64>().unwrap()),
        };
        let side_eval = if black_to_move {
            negated(after)
        } else {
            after.clone()
        };
        if gain > 0.6 && white_cp_at_least(&side_eval, 200.0) {
            expected.insert(ply as u32);
        }
    }
    // Lichess's own judgement names both as blunders after which mate is
    // unavoidable.
    assert_eq!(expected, BTreeSet::from([37, 77]));
    assert_eq!(moves[36].0, "Bxf6??");
    assert_eq!(moves[76].0, "Kg4??");
    assert!(pgn.contains("19. Bxf6?? { (-1.38 → Mate in 6) Checkmate is now unavoidable."));
    assert!(pgn.contains("39. Kg4?? { (0.00 → Mate in 3) Checkmate is now unavoidable."));

    let (summary, puzzles) = run(&IngestGamesConfig::default(), &pgn, "candidates.csv");
    assert_eq!(summary["games_read"], 1);
    assert_eq!(summary["games_kept"], 1);
    assert_eq!(summary["candidates"], 2);
    let plies: BTreeSet<u32> = puzzles
        .iter()
        .map(|p| p.get("Ply").unwrap().parse().unwrap())
        .collect();
    assert_eq!(plies, expected);

    let first = &puzzles[0];
    assert_eq!(first.id, "ZlCTzfMG_37");
    assert_eq!(
        first.fen.to_string(),
        "3r1rk1/ppb2ppp/2p2n2/4p1B1/2q5/2P2b2/PPB2PPP/RQ2R1K1 w - - 0 19"
    );
    assert_eq!(first.moves_text(), "g5f6");
    assert_eq!(first.game_url, "https://lichess.org/ZlCTzfMG#37");
    assert_eq!(
        first.game_id_and_ply(),
        Some(("ZlCTzfMG".to_string(), Some(37)))
    );
    for (column, value) in [
        ("Source", "lichess-game"),
        ("GameId", "ZlCTzfMG"),
        ("WhiteElo", "2370"),
        ("BlackElo", "2441"),
        ("Date", "2021-06-28"),
        ("EvalBefore", "-138"),
        ("EvalAfter", "#-6"),
        ("TimeControl", "300+0"),
        ("Kind", "mate"),
        (
            "FenAfter",
            "3r1rk1/ppb2ppp/2p2B2/4p3/2q5/2P2b2/PPB2PPP/RQ2R1K1 b - - 0 19",
        ),
    ] {
        assert_eq!(first.get(column), Some(value), "{column}");
    }
    let second = &puzzles[1];
    assert_eq!(second.moves_text(), "h3g4");
    assert_eq!(second.game_url, "https://lichess.org/ZlCTzfMG#77");
    assert_eq!(second.get("EvalBefore"), Some("0"));
    assert_eq!(second.get("EvalAfter"), Some("#-3"));

    // Quiet moves and mere mistakes are not candidates: 1. e4, and
    // 12. Ne3? which leaves Black only +1.25.
    assert!(!plies.contains(&1));
    assert!(!plies.contains(&23));
    assert!(!plies.contains(&20));
}

#[test]
fn black_blunders_get_black_urls_and_jsonl_zst_output_works() {
    // The real game's tags over a short game in which Black blunders into
    // mate in one: 1. e4 f6 2. d4 g5?? 3. Qh5#.
    let tags = real_game().split_once("\n\n").unwrap().0.to_string();
    let tags = with_site(&tags, "fool0001");
    let pgn = format!(
        "{}\n1. e4 {{ [%eval 0.2] }} 1... f6 {{ [%eval 0.9] }} 2. d4 {{ [%eval 0.8] }} 2... g5?? {{ [%eval #1] }} 3. Qh5# 1-0\n",
        tags.trim_end()
    );
    let (summary, puzzles) = run(&IngestGamesConfig::default(), &pgn, "candidates.jsonl.zst");
    assert_eq!(summary["candidates"], 1, "{summary}");
    let puzzle = &puzzles[0];
    assert_eq!(puzzle.game_url, "https://lichess.org/fool0001/black#4");
    assert_eq!(puzzle.moves_text(), "g7g5");
    assert_eq!(
        puzzle.fen.to_string(),
        "rnbqkbnr/ppppp1pp/5p2/8/3PP3/8/PPP2PPP/RNBQKBNR b KQkq - 0 2"
    );
    assert_eq!(puzzle.get("EvalAfter"), Some("#1"));
    assert_eq!(puzzle.get("EvalBefore"), Some("80"));
    assert_eq!(puzzle.get("Kind"), Some("mate"));
}

fn filter_games() -> String {
    let game = real_game();
    [
        with_site(&game, "keep0001"),
        with_tag(&with_site(&game, "bot00001"), "WhiteTitle", "BOT"),
        with_tag(&with_site(&game, "casual01"), "Event", "Casual Blitz game"),
        with_tag(&with_site(&game, "bullet01"), "TimeControl", "60+0"),
        with_tag(&with_site(&game, "lowelo01"), "WhiteElo", "1800"),
        with_tag(&with_site(&game, "highelo1"), "BlackElo", "2600"),
        with_tag(&with_site(&game, "olddate1"), "UTCDate", "2020.12.31"),
        with_tag(&with_site(&game, "variant1"), "Variant", "Crazyhouse"),
        without_annotations(&with_site(&game, "noeval01")),
    ]
    .join("\n")
}

#[test]
fn filters_count_each_reason() {
    let config = IngestGamesConfig {
        time_classes: vec![TimeClass::Blitz, TimeClass::Rapid],
        min_elo: Some(2000),
        max_elo: Some(2500),
        date_from: Some("2021-01-01".into()),
        date_to: Some("2021-12-31".into()),
        ..IngestGamesConfig::default()
    };
    let (summary, puzzles) = run(&config, &filter_games(), "out.csv");
    assert_eq!(summary["games_read"], 9);
    assert_eq!(summary["games_kept"], 1);
    for (reason, n) in [
        ("bot", 1),
        ("unrated", 1),
        ("time_control", 1),
        ("elo", 2),
        ("date", 1),
        ("variant", 1),
        ("no_eval", 1),
    ] {
        assert_eq!(count(&summary, "filtered", reason), n, "{reason}");
    }
    assert_eq!(summary["invalid"], serde_json::json!({}));
    assert_eq!(puzzles.len(), 2);
    assert!(puzzles.iter().all(|p| p.get("GameId") == Some("keep0001")));
}

#[test]
fn all_positions_passes_unanalysed_games_through() {
    let config = IngestGamesConfig {
        all_positions: true,
        ..IngestGamesConfig::default()
    };
    let (summary, puzzles) = run(&config, &filter_games(), "out.csv");
    // Default filters drop the BOT, casual and Crazyhouse games only.
    assert_eq!(summary["games_kept"], 6);
    assert_eq!(count(&summary, "filtered", "no_eval"), 0);
    let unanalysed: Vec<&Puzzle> = puzzles
        .iter()
        .filter(|p| p.get("GameId") == Some("noeval01"))
        .collect();
    assert_eq!(unanalysed.len(), 117);
    assert_eq!(puzzles.len(), 5 * 2 + 117);
    let first = unanalysed[0];
    assert_eq!(first.id, "noeval01_1");
    assert_eq!(first.moves_text(), "e2e4");
    assert_eq!(
        first.fen.to_string(),
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    );
    assert_eq!(first.get("EvalBefore"), Some(""));
    assert_eq!(first.get("Kind"), Some(""));
}

#[test]
fn command_line_flags_set_the_filters() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("games.pgn");
    std::fs::write(&input, filter_games()).unwrap();
    let output = dir.path().join("out.csv");
    let result = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["--json", "ingest", "games"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .args(["--time-control", "blitz,rapid", "--min-elo", "2000"])
        .args([
            "--max-elo",
            "2500",
            "--from",
            "2021-01-01",
            "--include-bots",
        ])
        .output()
        .unwrap();
    assert!(result.status.success(), "{result:?}");
    let summary: Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(summary["games_kept"], 2);
    assert_eq!(count(&summary, "filtered", "bot"), 0);
    assert_eq!(count(&summary, "filtered", "elo"), 2);
    assert_eq!(count(&summary, "filtered", "date"), 1);
    assert_eq!(read_puzzles(&output).unwrap().len(), 4);

    let bad_date = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["ingest", "games"])
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("never.csv"))
        .args(["--from", "2021-02-30x"])
        .output()
        .unwrap();
    assert_eq!(bad_date.status.code(), Some(2));
    assert!(!dir.path().join("never.csv").exists());
}

#[test]
fn garbage_games_are_skipped_by_reason_and_good_games_kept() {
    let game = real_game();
    let truncated_game = {
        let cut = game.find("13. Bc2").unwrap();
        format!("{}\n", &with_site(&game, "cutoff01")[..cut])
    };
    let unquoted_tag =
        with_site(&game, "unquote1").replace("[WhiteElo \"2370\"]", "[WhiteElo 2370]");
    let cut_in_comment = {
        let text = with_site(&game, "eofcut01");
        let cut = text.find("2. Bc4").unwrap();
        text[..cut + 14].to_string()
    };
    let pgn = [
        with_site(&game, "good0001"),
        with_site(&game, "illegal1").replace("2. Bc4 ", "2. Bc5 "),
        with_tag(&with_site(&game, "badelo01"), "WhiteElo", "abc"),
        truncated_game,
        with_site(&game, "badeval1").replace("[%eval 0.2]", "[%eval zz]"),
        unquoted_tag,
        with_site(&game, "good0002"),
        cut_in_comment,
    ]
    .join("\n");
    let (summary, puzzles) = run(&IngestGamesConfig::default(), &pgn, "out.csv");
    assert_eq!(summary["games_read"], 8, "{summary}");
    assert_eq!(summary["games_kept"], 2);
    for (reason, n) in [
        ("illegal_san", 1),
        ("bad_tag", 2),
        ("truncated", 2),
        ("bad_eval", 1),
    ] {
        assert_eq!(count(&summary, "invalid", reason), n, "{reason}: {summary}");
    }
    let games: BTreeSet<&str> = puzzles.iter().filter_map(|p| p.get("GameId")).collect();
    assert_eq!(games, BTreeSet::from(["good0001", "good0002"]));
    assert_eq!(puzzles.len(), 4);
    let examples = summary["invalid_examples"].to_string();
    assert!(examples.contains("illegal1"), "{examples}");
    assert!(examples.contains("Bc5"), "{examples}");
}

fn zstd_dump(dir: &Path, games: usize) -> std::path::PathBuf {
    let game = real_game();
    let text: String = (0..games)
        .map(|i| with_site(&game, &format!("z{i:07}")) + "\n")
        .collect();
    let path = dir.join("lichess_db_standard_rated_2021-06.pgn.zst");
    std::fs::write(&path, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    path
}

#[test]
fn a_whole_zstd_dump_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = zstd_dump(dir.path(), 50);
    let output = dir.path().join("out.csv.zst");
    let summary = run_games_with(&IngestGamesConfig::default(), &input, &output).unwrap();
    assert_eq!(summary.json["games_kept"], 50);
    assert_eq!(read_puzzles(&output).unwrap().len(), 100);
}

#[test]
fn a_truncated_zstd_dump_fails_with_exit_2_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = zstd_dump(dir.path(), 400);
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&input, &bytes[..bytes.len() * 6 / 10]).unwrap();
    let output = dir.path().join("out.csv");
    let result = Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["ingest", "games"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    assert_eq!(result.status.code(), Some(2), "{result:?}");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("lichess_db_standard_rated_2021-06.pgn.zst"),
        "{stderr}"
    );
    assert!(stderr.contains("games were read"), "{stderr}");
    assert!(!output.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

/// Reads every game of `bytes`: each item's game number, in order, and
/// whether it was read as a game, with its Site (else its reason).
fn read_everything(bytes: &[u8]) -> Vec<(u64, Result<Option<String>, &'static str>)> {
    PgnGames::new(bytes)
        .map(|item| match item.unwrap() {
            GameItem::Game(game) => {
                let _ = game.plies().count();
                (game.number, Ok(game.tags.get("Site").map(str::to_string)))
            }
            GameItem::Filtered { number, reason } => (number, Err(reason)),
            GameItem::Invalid(invalid) => {
                assert!(!invalid.detail.is_empty(), "{invalid}");
                (invalid.number, Err(invalid.reason))
            }
        })
        .collect()
}

/// The items are games 1, 2, 3, ... in order: none skipped or counted twice.
fn numbered_in_order(items: &[(u64, Result<Option<String>, &'static str>)]) -> bool {
    items
        .iter()
        .enumerate()
        .all(|(i, (number, _))| *number == i as u64 + 1)
}

proptest! {
    #[test]
    fn arbitrary_bytes_are_read_as_numbered_games(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let items = read_everything(&bytes);
        prop_assert!(numbered_in_order(&items), "{:?}", items);
    }

    #[test]
    fn pgn_shaped_noise_is_read_as_numbered_games(
        tokens in proptest::collection::vec(
            prop_oneof![
                Just("[Event \"Rated\"]\n".to_string()),
                Just("[FEN \"8/8/8/8/8/8/8/K6k w - - 0 1\"]\n".to_string()),
                Just("\n\n".to_string()),
                Just("1. e4 ".to_string()),
                Just("e5 ".to_string()),
                Just("{ [%eval #-3] [%clk 0:00:01] } ".to_string()),
                Just("{ [%eval ".to_string()),
                Just("( ".to_string()),
                Just(") ".to_string()),
                Just("1-0".to_string()),
                Just("O-O ".to_string()),
                Just("$5 ?? ".to_string()),
                "[ -~]{0,12}",
            ],
            0..40,
        )
    ) {
        let items = read_everything(tokens.concat().as_bytes());
        prop_assert!(numbered_in_order(&items), "{:?}", items);
    }

    /// Real games, some broken in one known way (an illegal move, a bad
    /// eval comment, a move after the result): every good game is read
    /// with its Site, and every broken one is turned down as invalid under
    /// its own number, with the reason its break gives.
    #[test]
    fn every_good_game_is_read_and_every_broken_one_rejected_by_number(
        kinds in proptest::collection::vec(0usize..4, 1..8)
    ) {
        let game = real_game();
        let breaks: [(&str, &str, &str); 3] = [
            ("2. Bc4 ", "2. Bh6 ", "illegal_san"),
            ("[%eval 0.24]", "[%eval zz]", "bad_eval"),
            ("time. } 1-0", "time. } 1-0 e4", "moves_after_result"),
        ];
        let mut text = String::new();
        let mut expected = Vec::new();
        for (i, &kind) in kinds.iter().enumerate() {
            let site = format!("game{i:04}");
            let mut pgn = with_site(&game, &site);
            match kind.checked_sub(1) {
                None => expected.push((i as u64 + 1, Ok(Some(format!("https://lichess.org/{site}"))))),
                Some(broken) => {
                    let (from, to, reason) = breaks[broken];
                    prop_assert!(pgn.contains(from), "{}", from);
                    pgn = pgn.replacen(from, to, 1);
                    expected.push((i as u64 + 1, Err(reason)));
                }
            }
            text.push_str(&pgn);
        }
        prop_assert_eq!(read_everything(text.as_bytes()), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn mutated_real_pgn_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..24),
        cut in any::<prop::sample::Index>(),
        doubled in any::<bool>(),
    ) {
        let mut bytes = real_game().into_bytes();
        if doubled {
            bytes.extend(with_site(&real_game(), "second01").into_bytes());
        }
        for (index, byte) in &edits {
            let at = index.index(bytes.len());
            bytes[at] = *byte;
        }
        let keep = cut.index(bytes.len() + 1);
        if edits.len() % 3 == 0 {
            bytes.truncate(keep);
        }
        let items = read_everything(&bytes);
        prop_assert!(numbered_in_order(&items), "{:?}", items);
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("mutated.pgn");
        std::fs::write(&input, &bytes).unwrap();
        let output = dir.path().join("out.csv");
        // Edits that leave no well-formed tag pair leave no PGN game: that
        // is bad input (exit 2) and nothing is written.
        let summary = match run_games_with(&IngestGamesConfig::default(), &input, &output) {
            Ok(summary) => summary,
            Err(error) => {
                prop_assert_eq!(puzzleforge::core::error::exit_code(&error), 2, "{:#}", error);
                prop_assert!(format!("{error:#}").contains("no PGN game found"), "{:#}", error);
                prop_assert!(!output.exists());
                return Ok(());
            }
        };
        let candidates = summary.json["candidates"].as_u64().unwrap();
        prop_assert_eq!(read_puzzles(&output).unwrap().len() as u64, candidates);
    }
}

#[test]
fn the_pgn_benchmark_runs_on_a_small_file() {
    let dir = tempfile::tempdir().unwrap();
    let args = puzzleforge::tools::bench::pgn::BenchPgnArgs {
        mib: 1,
        rounds: 1,
        game: GAME_FILE.into(),
        dir: Some(dir.path().to_path_buf()),
    };
    let summary = puzzleforge::tools::bench::pgn::run_bench_pgn(&args).unwrap();
    let files = summary.json["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for file in files {
        let games = file["games"].as_u64().unwrap();
        assert!(games > 100, "{file}");
        assert_eq!(file["plies"].as_u64().unwrap(), games * 117);
        assert!(file["read_mib_per_s"].as_f64().unwrap() > 0.0);
    }
    // Candidates come only from the analysed copies: two per game.
    assert_eq!(
        files[0]["candidates"].as_u64(),
        Some(files[0]["games"].as_u64().unwrap() * 2)
    );
    assert_eq!(files[1]["candidates"].as_u64(), Some(0));
}

/// Binary data is no PGN: the command exits 2 naming the file instead of
/// reporting its bytes as filtered games.
#[test]
fn a_file_with_no_pgn_game_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("noise.pgn");
    // Bytes from a fixed xorshift sequence: the same noise on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..3000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect();
    std::fs::write(&input, noise).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args(["ingest", "games"])
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("out.csv"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no PGN game found"), "{stderr}");
    assert!(stderr.contains("noise.pgn"), "{stderr}");
    assert!(!dir.path().join("out.csv").exists());
}

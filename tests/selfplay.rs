//! Self-play: byte-identical games, and a weakened player whose choices
//! follow Stockfish's own strength limit. Needs /usr/games/stockfish (or
//! stockfish on PATH): the tests fail without it.

use puzzleforge::engine::process::{Limit, SearchRequest};
use puzzleforge::engine::weaken;
use puzzleforge::engine::weaken::internal_score;
use puzzleforge::stages::selfplay::{Mode, SelfplayConfig, run_selfplay_with};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Position};
use std::path::Path;

use crate::common::engine_pool as pool;

/// Small and cheap: low Elo (search depth 1 to 3), short games.
fn small_config(mode: Mode) -> SelfplayConfig {
    SelfplayConfig {
        games: 3,
        seed: 42,
        mode,
        chaos_white_elo: [1350, 1600],
        chaos_black_elo: [1350, 1500],
        white_elo: 1600,
        black_elo: 1350,
        opening_depth: 4,
        max_plies: 40,
        ..SelfplayConfig::default()
    }
}

fn play(config: &SelfplayConfig, workers: usize, dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(name);
    run_selfplay_with(config, &pool(workers), &path).unwrap();
    std::fs::read(&path).unwrap()
}

#[test]
fn games_repeat_byte_for_byte_with_any_number_of_workers() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [Mode::Chaos, Mode::Standard] {
        let config = small_config(mode);
        let first = play(&config, 1, dir.path(), "a.pgn");
        let again = play(&config, 1, dir.path(), "b.pgn");
        let parallel = play(&config, 2, dir.path(), "c.pgn");
        assert_eq!(first, again, "{mode:?}: same command, different bytes");
        assert_eq!(first, parallel, "{mode:?}: 1 and 2 workers differ");
        let text = String::from_utf8(first).unwrap();
        assert_eq!(text.matches("[Event ").count(), 3);
        for tag in [
            "[Round \"1\"]",
            "[Round \"3\"]",
            "[Seed \"42\"]",
            "[Reproducible \"true\"]",
        ] {
            assert!(text.contains(tag), "{mode:?}: no {tag} in\n{text}");
        }
        assert!(text.contains(&format!("[Mode \"{}\"]", mode.name())));
        if mode == Mode::Standard {
            // Odd games open 1. e4, even ones 1. d4.
            let openings: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("1. "))
                .map(|l| &l[..5])
                .collect();
            assert_eq!(openings, ["1. e4", "1. d4", "1. e4"], "{text}");
        }
        // Another seed gives other games.
        let other = SelfplayConfig {
            seed: 43,
            ..config.clone()
        };
        assert_ne!(play(&other, 1, dir.path(), "d.pgn"), text.as_bytes());
        // Our own miner's PGN reader replays every game legally.
        let loaded = puzzleforge::stages::mine::load_input(&dir.path().join("a.pgn")).unwrap();
        assert_eq!(loaded.units.len(), 3);
        assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
        assert!(
            loaded
                .units
                .iter()
                .all(|u| u.moves.len() <= 40 && !u.moves.is_empty())
        );
    }
}

#[test]
fn elo_outside_the_engine_range_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .args([
            "selfplay",
            "--games",
            "1",
            "--mode",
            "standard",
            "--white-elo",
            "1200",
            "-o",
        ])
        .arg(dir.path().join("x.pgn"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("1350"));
    let config = SelfplayConfig {
        chaos_white_elo: [1500, 2900],
        ..SelfplayConfig::default()
    };
    assert!(config.validate().is_err());
}

/// Game positions: the FENs of the first `n` Lichess sample puzzles (the
/// position before the opponent's move) with at least four legal moves.
fn sample_positions(n: usize) -> Vec<Fen> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lichess_db_puzzle_subset_1499.csv");
    let puzzles = puzzleforge::chess::record::read_puzzles(&path).unwrap();
    puzzles
        .iter()
        .map(|p| p.fen.clone())
        .filter(|fen| {
            let position: Chess = fen.clone().into_position(CastlingMode::Standard).unwrap();
            position.legal_moves().len() >= 4
        })
        .take(n)
        .collect()
}

/// Rank (0..=3, 4 = none) of a move among the MultiPV 4 lines.
fn rank(lines: &[String], uci: &str) -> usize {
    lines.iter().position(|m| m == uci).unwrap_or(4)
}

/// Compares our seeded skill rule with Stockfish's own `UCI_Elo` limit on
/// 30 game positions from the Lichess sample at the same depth: how often each plays the rank-k
/// line of the shared MultiPV 4 search. A chi-square over the rank counts
/// (df <= 4, bound 18.5 = p 0.001) and a top-move agreement bound of
/// 0.12 (about 3 standard errors): tolerant, but a player that ignored the
/// weakening (always the top move) or picked uniformly would fail.
#[test]
fn weakened_choices_follow_the_engines_own_limit() {
    let positions = sample_positions(30);
    assert_eq!(positions.len(), 30);
    let pool = pool(2);
    const DRAWS: usize = 20;
    for elo in [1350, 1700] {
        let level = weaken::skill_level(elo).unwrap();
        let depth = weaken::pick_depth(level);
        let per_position = pool
            .map(&positions, |session, index, fen| {
                let request = SearchRequest {
                    fen: fen.clone(),
                    moves: Vec::new(),
                    limit: Limit::Depth(depth),
                    multipv: weaken::SKILL_MULTIPV,
                };
                let result = session.search(&request)?;
                let lines: Vec<String> = result
                    .lines
                    .iter()
                    .filter_map(|l| l.pv.first().map(ToString::to_string))
                    .collect();
                let scores: Vec<i64> = result
                    .lines
                    .iter()
                    .map(|l| internal_score(l.score))
                    .collect();
                let mut rng = ChaCha8Rng::seed_from_u64(index as u64);
                let ours: Vec<usize> = (0..DRAWS)
                    .map(|_| weaken::pick_best(&scores, level, &mut rng).unwrap_or(4))
                    .collect();
                session.set_option("UCI_LimitStrength", "true")?;
                session.set_option("UCI_Elo", &elo.to_string())?;
                let mut theirs = Vec::new();
                for _ in 0..DRAWS {
                    // A clean hash, as for our search (the unit began with ucinewgame).
                    session.set_option("Clear Hash", "true")?;
                    let limited = SearchRequest {
                        multipv: 1,
                        ..request.clone()
                    };
                    let best = session
                        .search(&limited)?
                        .best_move
                        .map(|uci| uci.to_string());
                    theirs.push(best.map_or(4, |best| rank(&lines, &best)));
                }
                Ok((ours, theirs))
            })
            .unwrap();
        let mut ours = [0f64; 5];
        let mut theirs = [0f64; 5];
        for (a, b) in &per_position {
            a.iter().for_each(|&r| ours[r] += 1.0);
            b.iter().for_each(|&r| theirs[r] += 1.0);
        }
        let total = (positions.len() * DRAWS) as f64;
        let top_gap = (ours[0] - theirs[0]).abs() / total;
        let mut chi_square = 0.0;
        for k in 0..5 {
            let pooled = ours[k] + theirs[k];
            if pooled > 0.0 {
                let expected = pooled / 2.0;
                chi_square += (ours[k] - expected).powi(2) / expected
                    + (theirs[k] - expected).powi(2) / expected;
            }
        }
        eprintln!("Elo {elo} depth {depth}: ours {ours:?} engine {theirs:?} chi2 {chi_square:.2}");
        assert!(
            top_gap <= 0.12,
            "Elo {elo}: top-move rates differ by {top_gap:.3}"
        );
        assert!(chi_square <= 18.5, "Elo {elo}: chi-square {chi_square:.2}");
        assert!(
            theirs[4] <= total * 0.05,
            "Elo {elo}: the engine's picks are not among our lines"
        );
        // Failing-capable: the weakening really changes the choice.
        assert!(
            ours[0] < total * 0.95,
            "Elo {elo}: the weakened player always plays the top move"
        );
    }
}

/// Maia players: the same bytes with any number of workers, each side's
/// net named in the tags, every move legal, a rating that is not one of the
/// nine nets refused.
#[test]
fn maia_players_repeat_byte_for_byte_and_name_their_nets() {
    use puzzleforge::stages::selfplay::MaiaPlayers;
    let dir = tempfile::tempdir().unwrap();
    let config = SelfplayConfig {
        maia: Some(MaiaPlayers {
            white: [1100, 1100],
            black: [1900, 1900],
            models_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/maia"),
        }),
        max_plies: 60,
        ..small_config(Mode::Chaos)
    };
    let first = play(&config, 1, dir.path(), "a.pgn");
    let parallel = play(&config, 2, dir.path(), "b.pgn");
    assert_eq!(first, parallel, "1 and 2 workers differ");
    let text = String::from_utf8(first).unwrap();
    assert_eq!(text.matches("[White \"Maia-1 1100\"]").count(), 3, "{text}");
    assert_eq!(text.matches("[Black \"Maia-1 1900\"]").count(), 3, "{text}");
    assert_eq!(text.matches("[Weakening \"maia-sample\"]").count(), 3);
    // Not the engine's games of the same seed.
    let engine = play(&small_config(Mode::Chaos), 1, dir.path(), "c.pgn");
    assert_ne!(engine, text.as_bytes());
    let loaded = puzzleforge::stages::mine::load_input(&dir.path().join("a.pgn")).unwrap();
    assert_eq!(loaded.units.len(), 3);
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    let bad = SelfplayConfig {
        maia: Some(MaiaPlayers {
            white: [1100, 1150],
            ..MaiaPlayers::default()
        }),
        ..SelfplayConfig::default()
    };
    let error = format!("{:#}", bad.validate().unwrap_err());
    assert!(error.contains("1150"), "{error}");
}

//! The output's rows (see **Output** in the module comment of [`super`]):
//! the selection (each game's cap, then no position twice), the puzzle
//! records built from what was found, and the dedup that merges the
//! outputs of mining slices. Apart because merging shards uses the dedup
//! without mining anything.

use shakmaty::EnPassantMode;
use shakmaty::fen::Fen;
use std::collections::HashSet;

use super::config::MineConfig;
use super::input::{MineUnit, Source};
use super::results::{Found, MineRun};
use crate::chess::columns::Column;
use crate::chess::derive::solver_moves_from_solver_move;
use crate::chess::line::{PuzzleLine, position_key, ucis_text};
use crate::chess::record::Puzzle;
use crate::chess::tagger::{board_themes, retag};

/// Builds the output: input order, each game's earliest `max_per_game`
/// puzzles, then no position twice (the first occurrence wins). The cap
/// comes before the deduplication so that the rule composes across slices
/// of the input (see the module comment).
pub(crate) fn select_puzzles(
    units: &[MineUnit],
    run: &MineRun,
    config: &MineConfig,
) -> Vec<Puzzle> {
    let mut capped = Vec::new();
    for (unit, result) in units.iter().zip(&run.results) {
        capped.extend(
            result
                .found
                .iter()
                .filter(|found| {
                    solver_moves_from_solver_move(found.line.len()) >= config.min_solver_moves
                })
                .filter_map(|found| Some((found.zobrist, build_puzzle(unit, found)?)))
                .take(config.max_per_game),
        );
    }
    let mut seen = HashSet::new();
    capped
        .into_iter()
        .filter(|(zobrist, _)| !config.dedup_positions || seen.insert(*zobrist))
        .map(|(_, puzzle)| puzzle)
        .collect()
}

/// The Zobrist hash of a mined puzzle's position (after the opponent's
/// move), the key `select_puzzles` deduplicates by; `None` when the FEN or
/// the first move does not replay.
pub(crate) fn puzzle_zobrist(puzzle: &Puzzle) -> Option<u64> {
    let mut line = PuzzleLine::from_read_fen(&puzzle.fen).ok()?;
    line.play_move(*puzzle.moves.first()?).ok()?;
    Some(position_key(line.last_position()))
}

/// Drops every puzzle whose position an earlier one has (first occurrence
/// wins): merging the outputs of mining slices, concatenated in slice order,
/// into the output of mining the whole input. Returns, per puzzle, whether
/// it was kept. A puzzle whose position does not replay is kept (mine never
/// writes one).
pub(crate) fn dedup_puzzles(puzzles: &[Puzzle]) -> Vec<bool> {
    let mut seen = HashSet::new();
    puzzles
        .iter()
        .map(|puzzle| puzzle_zobrist(puzzle).is_none_or(|z| seen.insert(z)))
        .collect()
}

fn build_puzzle(unit: &MineUnit, found: &Found) -> Option<Puzzle> {
    // The game (or its branch) up to the puzzle's position, then the
    // puzzle's line.
    let game_moves = found.branch.as_deref().unwrap_or(&unit.moves);
    let mut line = PuzzleLine::from_read_fen(&unit.start_fen).ok()?;
    for uci in game_moves.get(..found.after)? {
        line.play_move(*uci).ok()?;
    }
    for uci in &found.line {
        line.play_move(*uci).ok()?;
    }
    let fen = Fen::from_position(line.position_after(found.after - 1)?, EnPassantMode::Legal);
    let leading = *game_moves.get(found.after.checked_sub(1)?)?;
    let mut moves = vec![leading];
    moves.extend(found.line.iter().cloned());
    let ply = unit.first_ply + found.after as u32 - 1;
    let id = match &unit.keep_id {
        Some(id) => id.clone(),
        None => {
            let digest = crate::core::fileio::sha256_bytes(
                format!("{fen} {}", ucis_text(&moves)).as_bytes(),
            );
            format!("pf{}", &digest[..10])
        }
    };
    let game_url = match unit.source {
        Source::LichessGame if !unit.game_url.is_empty() && !unit.game_url.contains('#') => {
            format!("{}#{ply}", unit.game_url)
        }
        Source::HumanGame => format!("{}&ply={ply}", unit.game_url),
        _ => unit.game_url.clone(),
    };
    let mut puzzle = Puzzle {
        id,
        fen,
        moves,
        game_url,
        ..Puzzle::default()
    };
    puzzle.set(Column::Source, unit.source.name());
    puzzle.set(Column::GameId, unit.game_id.clone());
    puzzle.set(Column::Ply, ply.to_string());
    puzzle.set(Column::Seed, unit.seed.clone());
    puzzle.set(Column::WhiteElo, unit.white_elo.clone());
    puzzle.set(Column::BlackElo, unit.black_elo.clone());
    puzzle.set(Column::BestScore, found.best_score.to_cp().to_string());
    puzzle.set(
        Column::SecondScore,
        found
            .second_score
            .map(|s| s.to_cp().to_string())
            .unwrap_or_default(),
    );
    puzzle.set(Column::Criterion, found.criterion.name());
    puzzle.set(Column::Nodes, found.nodes.to_string());
    // Lichess's themes: the board's, and the score theme from `BestScore`,
    // the mining search's score at the puzzle's position, when the line
    // does not mate (Lichess scores the position of the last solver move;
    // mining has the first at hand, and a found line keeps its advantage).
    let board = board_themes(&puzzle.line().ok()?);
    puzzle.themes = retag(&puzzle, &board);
    Some(puzzle)
}

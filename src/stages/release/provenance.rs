//! Where a release's generated puzzles came from: the self-play games that
//! gave a released puzzle travel with the release as `games.pgn`, and each
//! such puzzle's `GameUrl` points into it.
//!
//! The link is `games.pgn#game=<GameId>&ply=<Ply>`: the game is the one
//! whose `[Seed]` and `[Round]` tags make its `GameId`
//! (`selfplay-<Seed>-<Round>`), and `Ply` counts as Lichess's game links
//! do: the puzzle's first move (the opponent's, `Moves`' first) is ply
//! `Ply` of the game, so `FEN` is the position after `Ply - 1` plies and
//! the solver's position the one after `Ply`.

use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::chess::columns::Column;
use crate::chess::record::Puzzle;

/// The release file holding the games.
pub(crate) const GAMES_FILE: &str = "games.pgn";

/// The `GameUrl` of a generated puzzle from game `game` at ply `ply`.
pub(crate) fn game_link(game: &str, ply: &str) -> String {
    format!("{GAMES_FILE}#game={game}&ply={ply}")
}

/// The games of `pgns` that gave a self-play puzzle of `train` or `test`,
/// in file order, as one PGN text; each such puzzle without a `GameUrl`
/// gets its link. `None` when no released puzzle came from those games.
pub(crate) fn released_games(
    pgns: &[PathBuf],
    train: &mut [Puzzle],
    test: &mut [Puzzle],
) -> Result<Option<String>> {
    let is_selfplay = |p: &Puzzle| p.get(Column::Source) == Some("selfplay");
    let wanted: BTreeSet<String> = train
        .iter()
        .chain(test.iter())
        .filter(|p| is_selfplay(p))
        .filter_map(|p| p.get(Column::GameId).map(str::to_string))
        .filter(|id| !id.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(None);
    }
    let mut text = String::new();
    let mut found = BTreeSet::new();
    for path in pgns {
        let all = std::fs::read_to_string(path)
            .with_context(|| format!("reading the games {}", path.display()))?;
        for game in crate::stages::selfplay::split_games(&all) {
            let id = format!("selfplay-{}-{}", tag(game, "Seed"), tag(game, "Round"));
            if wanted.contains(&id) && found.insert(id) {
                text.push_str(game);
                if !game.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    for puzzle in train.iter_mut().chain(test.iter_mut()) {
        let game = puzzle.get(Column::GameId).unwrap_or_default().to_string();
        if is_selfplay(puzzle) && puzzle.game_url.trim().is_empty() && found.contains(&game) {
            let ply = puzzle.get(Column::Ply).unwrap_or_default().to_string();
            puzzle.game_url = game_link(&game, &ply);
        }
    }
    Ok(Some(text))
}

/// A PGN tag's value in one game's text (empty when absent).
fn tag<'a>(game: &'a str, name: &str) -> &'a str {
    let prefix = format!("[{name} \"");
    game.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.strip_suffix("\"]"))
        .unwrap_or_default()
}

//! The human games a pipeline's `mine` stage mines (`[human_games]`): the
//! section with its bounds, the file and the seed that draw the games, and
//! the drawn games as units (a shard's slice of them). Apart from
//! [`super::input`], which reads the files a standalone `mine` is given,
//! because these units are drawn, not read.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use super::input::{Loaded, MineUnit, Source};
use crate::chess::human_games::{HumanPool, PoolLimits};
use crate::core::bounds::{Bound, Bounded};
use crate::core::shard::Shard;

/// `[human_games]`: human-game puzzles, mined by the `mine` stage from
/// games of `[sources] human_games` with `[mine]`'s rules. Their positions
/// are public (game databases hold them): the card, the manifest and each
/// row (`Source` = `human-game`) say so, and they never count as
/// generated.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HumanGamesSection {
    /// Games drawn with the run seed from the file and mined; 0 (the
    /// default) leaves human-game puzzles out.
    pub mine_games: u64,
    /// A drawn game has at least this many plies.
    pub min_plies: usize,
    /// The games are drawn from the first this many games of the file
    /// that start from the standard position and are long enough: memory
    /// stays bounded on a dump of a hundred million games.
    pub pool_games: u64,
}

impl Default for HumanGamesSection {
    fn default() -> Self {
        Self {
            mine_games: 0,
            min_plies: 20,
            pool_games: 200_000,
        }
    }
}

impl Bounded for HumanGamesSection {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("mine_games", 0.0, 1e7, "games mined; 0 leaves them out"),
        Bound::within("min_plies", 1.0, 2000.0, "plies of a game"),
        Bound::within("pool_games", 1.0, 1e9, "games of the pool"),
    ];
}

/// The human games `mine` draws its human-game puzzles from: the file, and
/// the draw the stage's config records.
pub(crate) struct HumanGamesInput {
    /// `[sources] human_games`: an input of the stage (fingerprinted by its
    /// content), not a setting.
    pub(crate) path: PathBuf,
    pub(crate) draw: HumanGamesDraw,
}

/// `[human_games]` and the seed that draws the games: what the stage's
/// recorded config holds of the human games.
#[derive(Serialize)]
pub(crate) struct HumanGamesDraw {
    #[serde(flatten)]
    pub(crate) section: HumanGamesSection,
    pub(crate) seed: u64,
}

impl HumanGamesInput {
    /// The drawn games as units, or `shard`'s slice of them.
    pub(crate) fn units(&self, shard: Option<&Shard>) -> Result<Loaded> {
        let limits = PoolLimits {
            min_plies: self.draw.section.min_plies,
            max_games: self.draw.section.pool_games,
        };
        let pool = HumanPool::shared(&self.path, limits)?;
        let loaded = Loaded {
            units: human_game_units(&pool, self.draw.section.mine_games, self.draw.seed),
            skipped: Vec::new(),
        };
        Ok(match shard {
            Some(shard) => loaded.slice(shard),
            None => loaded,
        })
    }
}

/// `count` games of `pool` drawn with `seed` (every game at most once),
/// in file order, as units to mine: the human-game puzzles of a run
/// (`[human_games] mine_games`). Their ids name the file by the first 8
/// hex digits of its sha256 and the game by its number in the file, and
/// their `GameUrl` names file, game and ply (`<file>#game=N&ply=P`).
fn human_game_units(pool: &HumanPool, count: u64, seed: u64) -> Vec<MineUnit> {
    use crate::core::seed::{Domain, Key};
    let games = &pool.games.games;
    let mut rng = crate::core::seed::rng(seed, Domain::HumanGamesSample, Key::Run);
    let amount = (count as usize).min(games.len());
    let mut picked = rand::seq::index::sample(&mut rng, games.len(), amount).into_vec();
    picked.sort_unstable();
    let file = pool
        .games
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    picked
        .into_iter()
        .map(|index| {
            let game = &games[index];
            let tag = |name: &str| game.tag(name).unwrap_or_default().to_string();
            MineUnit {
                source: Source::HumanGame,
                game_id: format!("human-{}-{}", &pool.sha256[..8], game.number),
                game_url: format!("{file}#game={}", game.number),
                seed: String::new(),
                white_elo: tag("WhiteElo"),
                black_elo: tag("BlackElo"),
                first_ply: 1,
                keep_id: None,
                // A puzzle file's "game" starts at the puzzle's FEN.
                start_fen: game.fen.as_deref().cloned().unwrap_or_default(),
                moves: game.moves.to_vec(),
                targets: Vec::new(),
                public_positions: Vec::new(),
                source_idea: None,
            }
        })
        .collect()
}

//! One game from its seed: the opening, the weakened-engine or Maia moves,
//! the ending rules and the game's PGN text, and the splitting of a PGN file
//! back into its games. Apart from the run so a game depends only on the
//! config and its number.

use anyhow::Result;
use rand::Rng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position};

use super::config::{HumanStart, MaiaPlayers, Mode, SelfplayConfig};
use crate::chess::human_games::{HumanPool, SourceGame};
use crate::chess::line::position_key;
use crate::core::seed::{self, Domain, Key};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, SearchRequest, thread_cpu_seconds};
use crate::engine::weaken::{self, weakened_move};
use crate::maia::History;
use crate::maia::MaiaNets;
use anyhow::Context;

/// The loaded nets of [`MaiaPlayers`], one [`MaiaNets`] per rating.
pub(crate) struct MaiaBench {
    players: MaiaPlayers,
    nets: Vec<(u32, MaiaNets)>,
}

impl MaiaBench {
    pub(crate) fn load(players: &MaiaPlayers) -> Result<MaiaBench> {
        let nets = players
            .ratings()
            .into_iter()
            .map(|rating| {
                let nets = MaiaNets::load_ratings(&players.models_dir, &[rating])
                    .with_context(|| format!("selfplay.maia: the net of rating {rating}"))?;
                Ok((rating, nets))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MaiaBench {
            players: players.clone(),
            nets,
        })
    }

    fn net(&self, rating: u32) -> Option<&MaiaNets> {
        self.nets.iter().find(|(r, _)| *r == rating).map(|(_, n)| n)
    }
}

/// One finished game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    /// 1-based game number (PGN Round).
    pub index: u64,
    pub white_elo: i32,
    pub black_elo: i32,
    pub sans: Vec<String>,
    pub ucis: Vec<UciMove>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*` (ply cap reached).
    pub result: String,
    /// Why it ended: checkmate, stalemate, ...
    pub ending: String,
    /// The human game whose prefix it starts with (`[selfplay.human]`).
    pub source: Option<SourceGame>,
}

impl Game {
    /// The FEN the game starts from when it is not the standard start (a
    /// game grown from a puzzle).
    fn start_fen(&self) -> Option<&Fen> {
        self.source.as_ref()?.game.fen.as_deref()
    }

    /// The game as PGN text, ending with a blank line.
    pub(crate) fn to_pgn(&self, config: &SelfplayConfig, engine_name: &str) -> String {
        let mut text = self.tags(config, engine_name);
        text.push('\n');
        text.push_str(&self.movetext());
        text.push_str("\n\n");
        text
    }

    /// The game's tag pairs, one line each.
    fn tags(&self, config: &SelfplayConfig, engine_name: &str) -> String {
        let weakening = if config.maia.is_some() {
            "maia-sample"
        } else if config.engine_limit {
            "engine-limit"
        } else {
            "puzzleforge-skill"
        };
        let player = |rating: i32| match config.maia {
            Some(_) => format!("Maia-1 {rating}"),
            None => format!("{engine_name} Elo {rating}"),
        };
        let mut text = String::new();
        let mut tag = |name: &str, value: &str| {
            text.push_str(&format!("[{name} \"{value}\"]\n"));
        };
        tag("Event", &config.event);
        tag("Site", &config.site);
        tag("Date", &config.date);
        tag("Round", &self.index.to_string());
        tag("White", &player(self.white_elo));
        tag("Black", &player(self.black_elo));
        tag("Result", &self.result);
        tag("WhiteElo", &self.white_elo.to_string());
        tag("BlackElo", &self.black_elo.to_string());
        tag("PlyCount", &self.sans.len().to_string());
        if let Some(fen) = self.start_fen() {
            tag("SetUp", "1");
            tag("FEN", &fen.to_string());
        }
        tag(
            "Termination",
            if self.result == "*" {
                "unterminated"
            } else {
                "normal"
            },
        );
        tag("Ending", &self.ending);
        tag(
            "Mode",
            if self.source.is_some() {
                "human"
            } else {
                config.mode.name()
            },
        );
        tag("Seed", &config.seed.to_string());
        tag("Weakening", weakening);
        tag(
            "Reproducible",
            if config.engine_limit { "false" } else { "true" },
        );
        if let Some(source) = &self.source {
            for (name, value) in source_tags(source) {
                tag(&name, &escape_tag_value(&value));
            }
        }
        text
    }

    /// The moves and the result, numbered and wrapped at 79 columns, with
    /// no newline at the end.
    fn movetext(&self) -> String {
        // Move numbers count from the start's: a FEN with Black to move
        // opens with "N...".
        let (first_move, black_first) = match self.start_fen() {
            Some(fen) => {
                let setup = fen.as_setup();
                (setup.fullmoves.get(), setup.turn == Color::Black)
            }
            None => (1, false),
        };
        let mut tokens = Vec::new();
        for (i, san) in self.sans.iter().enumerate() {
            let ply = i + usize::from(black_first);
            if i == 0 && black_first {
                tokens.push(format!("{first_move}..."));
            } else if ply % 2 == 0 {
                tokens.push(format!("{}.", first_move as usize + ply / 2));
            }
            tokens.push(san.clone());
        }
        tokens.push(self.result.clone());
        let mut text = String::new();
        let mut line = String::new();
        for token in tokens {
            if !line.is_empty() && line.len() + 1 + token.len() > 79 {
                text.push_str(&line);
                text.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&token);
        }
        text.push_str(&line);
        text
    }
}

/// A game in progress: position, moves so far and repetition history.
struct Board {
    /// Where the game starts: the standard position, or a puzzle's FEN
    /// (`[selfplay.human]` from a puzzle file).
    start_fen: Fen,
    position: Chess,
    ucis: Vec<UciMove>,
    sans: Vec<String>,
    hashes: Vec<u64>,
}

impl Board {
    fn new() -> Self {
        Self::starting_at(Chess::default())
    }

    fn starting_at(position: Chess) -> Self {
        let hash = position_key(&position);
        Self {
            start_fen: Fen::from_position(&position, EnPassantMode::Legal),
            position,
            ucis: Vec::new(),
            sans: Vec::new(),
            hashes: vec![hash],
        }
    }

    fn play(&mut self, m: Move) {
        self.ucis.push(m.to_uci(CastlingMode::Standard));
        let san = SanPlus::from_move_and_play_unchecked(&mut self.position, m);
        self.sans.push(san.to_string());
        self.hashes.push(position_key(&self.position));
    }

    /// The result and reason when the game is over.
    fn ending(&self) -> Option<(&'static str, &'static str)> {
        let pos = &self.position;
        if pos.is_checkmate() {
            return Some((
                if pos.turn() == Color::White {
                    "0-1"
                } else {
                    "1-0"
                },
                "checkmate",
            ));
        }
        if pos.is_stalemate() {
            return Some(("1/2-1/2", "stalemate"));
        }
        if pos.is_insufficient_material() {
            return Some(("1/2-1/2", "insufficient material"));
        }
        let current = self.hashes.last().copied().unwrap_or_default();
        if self.hashes.iter().filter(|&&h| h == current).count() >= 3 {
            return Some(("1/2-1/2", "threefold repetition"));
        }
        if pos.halfmoves() >= 100 {
            return Some(("1/2-1/2", "fifty-move rule"));
        }
        None
    }

    fn request(&self, limit: Limit, multipv: u32) -> SearchRequest {
        SearchRequest {
            fen: self.start_fen.clone(),
            moves: self.ucis.clone(),
            limit,
            multipv,
        }
    }

    /// Parses an engine move, which must be legal here.
    fn engine_move(&self, uci: &str) -> Result<Move, EngineError> {
        uci.parse::<UciMove>()
            .map_err(|_| EngineError::Garbage(format!("move {uci:?} is not UCI")))
            .and_then(|m| self.legal_move(m))
    }

    /// An engine move read as UCI, which must be legal here.
    fn legal_move(&self, uci: UciMove) -> Result<Move, EngineError> {
        uci.to_move(&self.position).map_err(|_| {
            EngineError::Garbage(format!(
                "move {:?} is not legal in {}",
                uci.to_string(),
                Fen::from_position(&self.position, EnPassantMode::Legal)
            ))
        })
    }
}

/// Plays game `index` (1-based) on one engine: after the opening the nets
/// of `maia` (loaded from `config.maia`) when given, else the weakened
/// engine.
pub(super) fn play_game(
    session: &mut Session,
    config: &SelfplayConfig,
    maia: Option<&MaiaBench>,
    human: Option<&HumanPool>,
    index: u64,
) -> Result<Game, EngineError> {
    let mut rng = seed::rng(config.seed, Domain::SelfplayGame, Key::Index(index));
    let mut board = Board::new();
    let mut cap = config.max_plies as usize;
    let source = match (human, &config.human) {
        (Some(pool), Some(start)) => Some(play_human_prefix(&mut board, pool, start, &mut rng)?),
        _ => None,
    };
    if let (Some(source), Some(start)) = (&source, &config.human)
        && let Some(more) = start.continue_plies
    {
        cap = cap.min(source.ply + more as usize);
    }
    if source.is_none() {
        play_opening(session, config, &mut board, &mut rng, cap, index)?;
    }
    if let Some(bench) = maia {
        let start = thread_cpu_seconds();
        let game = play_maia_game(board, bench, &mut rng, cap, index);
        session.charge_cpu_seconds(thread_cpu_seconds() - start);
        return game.map(|game| Game { source, ..game });
    }
    play_engine_game(session, config, board, &mut rng, cap, index, source)
}

/// The opening of a game without a human start, up to `cap` plies: random
/// legal moves (`chaos`), or a first move by the game's parity then moves
/// drawn among the engine's lines within `opening_window_cp` of its best.
fn play_opening(
    session: &mut Session,
    config: &SelfplayConfig,
    board: &mut Board,
    rng: &mut rand_chacha::ChaCha8Rng,
    cap: usize,
    index: u64,
) -> Result<(), EngineError> {
    match config.mode {
        Mode::Chaos => {
            for _ in 0..config.chaos_plies {
                if board.ending().is_some() || board.sans.len() >= cap {
                    break;
                }
                let legal = board.position.legal_moves();
                let choice = legal[rng.random_range(0..legal.len())];
                board.play(choice);
            }
        }
        Mode::Standard => {
            for ply in 0..config.opening_plies {
                if board.ending().is_some() || board.sans.len() >= cap {
                    break;
                }
                let choice = if ply == 0 {
                    board.engine_move(if index % 2 == 1 { "e2e4" } else { "d2d4" })?
                } else {
                    opening_move(session, config, board, rng)?
                };
                board.play(choice);
            }
        }
    }
    Ok(())
}

/// One move of a standard opening after the first: drawn among the
/// engine's lines within `opening_window_cp` of its best, or among the
/// legal moves when none is.
fn opening_move(
    session: &mut Session,
    config: &SelfplayConfig,
    board: &Board,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Result<Move, EngineError> {
    let request = board.request(Limit::Depth(config.opening_depth), config.opening_multipv);
    let result = session.search(&request)?;
    let best = result.lines.first().map(|line| line.score.to_cp());
    let mut candidates = Vec::new();
    for line in &result.lines {
        if let (Some(best), Some(first)) = (best, line.pv.first())
            && line.score.to_cp() >= best - config.opening_window_cp
        {
            candidates.push(board.legal_move(*first)?);
        }
    }
    Ok(if candidates.is_empty() {
        let legal = board.position.legal_moves();
        legal[rng.random_range(0..legal.len())]
    } else {
        candidates[rng.random_range(0..candidates.len())]
    })
}

/// The rest of a game on the weakened engine, from `board` up to `cap`
/// plies: each side at its Elo (drawn for `chaos`), by `UCI_Elo` under
/// `engine_limit`, else by the skill level's weakened move.
fn play_engine_game(
    session: &mut Session,
    config: &SelfplayConfig,
    mut board: Board,
    rng: &mut rand_chacha::ChaCha8Rng,
    cap: usize,
    index: u64,
    source: Option<SourceGame>,
) -> Result<Game, EngineError> {
    let (white_elo, black_elo) = match config.mode {
        Mode::Chaos => (
            rng.random_range(config.chaos_white_elo[0]..=config.chaos_white_elo[1]),
            rng.random_range(config.chaos_black_elo[0]..=config.chaos_black_elo[1]),
        ),
        Mode::Standard => (config.white_elo, config.black_elo),
    };
    let level_of =
        |elo: i32| weaken::skill_level(elo).map_err(|e| EngineError::Fatal(format!("{e:#}")));
    let (white_level, black_level) = (level_of(white_elo)?, level_of(black_elo)?);
    let mut limited_elo = None;
    // `leave_line`: the first move of the new play is not the source's.
    let mut avoid = source
        .as_ref()
        .filter(|_| config.human.as_ref().is_some_and(|h| h.leave_line))
        .and_then(|s| s.game.moves.get(s.ply).copied());
    while board.ending().is_none() && board.sans.len() < cap {
        let white = board.position.turn() == Color::White;
        let (elo, level) = if white {
            (white_elo, white_level)
        } else {
            (black_elo, black_level)
        };
        let uci = if config.engine_limit {
            if limited_elo != Some(elo) {
                session.set_option("UCI_LimitStrength", "true")?;
                session.set_option("UCI_Elo", &elo.to_string())?;
                limited_elo = Some(elo);
            }
            let request = board.request(Limit::Depth(weaken::pick_depth(level)), 1);
            session.search(&request)?.best_move
        } else {
            weakened_move(
                session,
                (&board.start_fen, &board.ucis),
                level,
                rng,
                avoid.take(),
            )?
        };
        let Some(uci) = uci else { break };
        let m = board.legal_move(uci)?;
        board.play(m);
    }
    let (result, ending) = board.ending().unwrap_or(("*", "ply limit"));
    Ok(Game {
        index,
        white_elo,
        black_elo,
        sans: board.sans,
        ucis: board.ucis,
        result: result.to_string(),
        ending: ending.to_string(),
        source,
    })
}

/// Plays a prefix of a human game on `board`: the game drawn uniformly
/// from the pool, its length uniformly from `start.plies` (capped so that
/// the source game goes on after it), both with the game's generator.
fn play_human_prefix(
    board: &mut Board,
    pool: &HumanPool,
    start: &HumanStart,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Result<SourceGame, EngineError> {
    let game = &pool.games.games[rng.random_range(0..pool.games.games.len())];
    // The pool holds games longer than the shortest prefix (a puzzle's
    // line may be shorter: its prefix is capped by it).
    let longest = (start.plies[1] as usize).min(game.moves.len().saturating_sub(1));
    let shortest = (start.plies[0] as usize).min(longest);
    let ply = rng.random_range(shortest..=longest);
    let start_position = game
        .start()
        .map_err(|e| EngineError::Fatal(format!("{}: {e:#}", pool.games.path.display())))?;
    *board = Board::starting_at(start_position);
    for uci in &game.moves[..ply] {
        let m = board.legal_move(*uci).map_err(|e| {
            EngineError::Fatal(format!(
                "{} game {}: {e}",
                pool.games.path.display(),
                game.number
            ))
        })?;
        board.play(m);
    }
    Ok(SourceGame {
        file_sha256: pool.sha256.clone(),
        game: game.clone(),
        ply,
    })
}

/// The PGN tags naming a grown game's source: the file by its sha256, the
/// game by its number in the file and its own tags, the prefix's length,
/// and the source game's moves (UCI), from which mining knows its
/// positions (`SourceMoves`).
pub(crate) fn source_tags(source: &SourceGame) -> Vec<(String, String)> {
    let mut tags = vec![
        ("SourceFile".to_string(), source.file_sha256.clone()),
        ("SourceGame".to_string(), source.game.number.to_string()),
        ("SourcePly".to_string(), source.ply.to_string()),
    ];
    for (name, value) in source.game.tags() {
        tags.push((format!("Source{name}"), value.to_string()));
    }
    if let Some(fen) = &source.game.fen {
        tags.push(("SourceFEN".to_string(), fen.to_string()));
    }
    let moves: Vec<String> = source.game.moves.iter().map(|m| m.to_string()).collect();
    tags.push(("SourceMoves".to_string(), moves.join(" ")));
    tags
}

/// A PGN tag value with its quotes and backslashes escaped.
fn escape_tag_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The rest of game `index` after its opening, each side's move drawn from
/// its Maia net's probabilities (temperature 1) with the game's generator.
fn play_maia_game(
    mut board: Board,
    bench: &MaiaBench,
    rng: &mut rand_chacha::ChaCha8Rng,
    cap: usize,
    index: u64,
) -> Result<Game, EngineError> {
    let mut draw_rating = |range: [u32; 2]| rng.random_range(range[0] / 100..=range[1] / 100) * 100;
    let players = &bench.players;
    let (white_rating, black_rating) = (draw_rating(players.white), draw_rating(players.black));
    let net_of = |rating: u32| {
        bench
            .net(rating)
            .ok_or_else(|| EngineError::Fatal(format!("no Maia net of rating {rating} loaded")))
    };
    let (white_net, black_net) = (net_of(white_rating)?, net_of(black_rating)?);
    // The board played these moves: each is legal where it was played.
    let mut history = History::from_read_line(&board.start_fen, &board.ucis)
        .map_err(|e| EngineError::Fatal(format!("replaying the game's opening: {e:#}")))?;
    while board.ending().is_none() && board.sans.len() < cap {
        let net = if board.position.turn() == Color::White {
            white_net
        } else {
            black_net
        };
        let probabilities = net.evaluate_one(&history);
        // A net's probabilities are finite and sum to 1 over the legal
        // moves; a position without one has ended above.
        let weights = WeightedIndex::new(probabilities.at_net(0))
            .map_err(|e| EngineError::Fatal(format!("Maia probabilities: {e}")))?;
        let m = probabilities.moves()[weights.sample(rng)];
        history.push(m);
        board.play(m);
    }
    let (result, ending) = board.ending().unwrap_or(("*", "ply limit"));
    Ok(Game {
        index,
        white_elo: white_rating as i32,
        black_elo: black_rating as i32,
        sans: board.sans,
        ucis: board.ucis,
        result: result.to_string(),
        ending: ending.to_string(),
        source: None,
    })
}

/// The games of a PGN file written by `selfplay`, each with its text (a
/// game starts at an `[Event "` line: `selfplay` writes every game so).
pub(crate) fn split_games(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text
        .match_indices("[Event \"")
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || text.as_bytes()[at - 1] == b'\n')
        .collect();
    starts.push(text.len());
    starts.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

//! `puzzleforge rollout`: short games from start positions against
//! Stockfish. The model plays up to `max_moves` moves, each an independent
//! call with the FEN, side and legal moves; every accepted move gets an
//! engine regret; an illegal or unparseable answer (or no answer) ends
//! that game.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, EnPassantMode, Position};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::client::{ChatClient, Endpoint, default_cache_dir};
use super::config::{EvalConfig, EvalEngine};
use super::engine_ops::{self, game_over_after, limit_of, regret_of, search};
use super::metrics::{INVALID_PENALTY_CP, Verdict};
use super::parse::{Parsed, parse_reply};
use super::players::{ModelSpec, ask_model, random_move, request_seed};
use super::prompt::{PromptSpec, Template};
use super::task::{PositionView, fen_of, legal_uci_move, position_from_fen, side_name};
use crate::core::bounds::{Bound, Bounded};
use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::{flags_over, load_section};
use crate::core::stats::{mean, median};
use crate::core::summary::Summary;
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit};
use crate::engine::settings::EngineArgs;

/// A start position and the side the model plays.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StartPosition {
    pub name: String,
    pub fen: String,
    /// "white", "black", or "to-move" (the side to move in the FEN).
    #[serde(default = "to_move")]
    pub model_plays: String,
}

fn to_move() -> String {
    "to-move".into()
}

/// The `[rollout]` section of the pipeline config.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct RolloutConfig {
    pub starts: Vec<StartPosition>,
    /// Model moves per game.
    pub max_moves: u32,
    /// Strength of the opponent.
    pub opponent_nodes: Option<u64>,
    pub opponent_depth: Option<u32>,
}

impl Bounded for RolloutConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("max_moves", 1.0, 1000.0, "moves of a rollout"),
        Bound::within("opponent_nodes", 1.0, 10000000000.0, "nodes"),
        Bound::within("opponent_depth", 1.0, 60.0, "plies"),
    ];
}

const OPENINGS: [(&str, &str); 8] = [
    ("ruy-lopez", "e4 e5 Nf3 Nc6 Bb5"),
    ("italian", "e4 e5 Nf3 Nc6 Bc4"),
    ("sicilian-najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    ("french", "e4 e6 d4 d5"),
    ("caro-kann", "e4 c6 d4 d5"),
    ("queens-gambit-declined", "d4 d5 c4 e6"),
    ("kings-indian", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("english", "c4 e5"),
];

fn opening_fen(moves: &str) -> Option<String> {
    let mut position = Chess::default();
    for san in moves.split_whitespace() {
        let m = san.parse::<SanPlus>().ok()?.san.to_move(&position).ok()?;
        position.play_unchecked(m);
    }
    Some(fen_of(&position))
}

impl Default for RolloutConfig {
    fn default() -> Self {
        let initial = fen_of(&Chess::default());
        let mut starts = vec![
            StartPosition {
                name: "initial-as-white".into(),
                fen: initial.clone(),
                model_plays: "white".into(),
            },
            StartPosition {
                name: "initial-as-black".into(),
                fen: initial,
                model_plays: "black".into(),
            },
        ];
        starts.extend(OPENINGS.iter().filter_map(|(name, moves)| {
            Some(StartPosition {
                name: name.to_string(),
                fen: opening_fen(moves)?,
                model_plays: to_move(),
            })
        }));
        Self {
            starts,
            max_moves: 10,
            opponent_nodes: Some(100_000),
            opponent_depth: None,
        }
    }
}

/// `puzzleforge rollout`'s flags (their help: `cli::rollout`).
#[derive(Debug, Clone)]
pub struct RolloutArgs {
    pub model: String,
    pub template: String,
    pub prompt: Option<PathBuf>,
    pub output: PathBuf,
    pub config: Option<PathBuf>,
    /// The flags laid over `[eval]` by [`crate::core::settings::flags_over`].
    pub overrides: RolloutOverrides,
    /// With `engine_workers`, laid over `[eval.engine]`.
    pub engine: Option<PathBuf>,
    pub engine_workers: Option<usize>,
}

/// `rollout`'s flags (their help: `cli::rollout`) over the `[eval]` key of
/// the same name.
#[derive(Default, Debug, Clone, Serialize)]
pub struct RolloutOverrides {
    pub seed: Option<u64>,
}

/// One model move (or failed attempt).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct RolloutMove {
    pub start: String,
    pub ply: usize,
    pub fen: Fen,
    pub reply: Option<String>,
    pub played: Option<UciMove>,
    pub verdict: Verdict,
    pub regret_cp: Option<f64>,
}

/// How one game went.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct RolloutGame {
    pub start: String,
    pub model_color: String,
    pub model_moves: usize,
    /// max_moves, illegal, unparseable, no_answer, checkmated,
    /// gave_checkmate, draw.
    pub end: String,
    pub moves_san: Vec<String>,
}

enum Asker<'a> {
    Model {
        client: &'a ChatClient,
        template: &'a Template,
        prompt: &'a PromptSpec,
    },
    Random,
}

fn fault(e: anyhow::Error) -> EngineError {
    EngineError::Fatal(format!("{e:#}"))
}

/// What every game of a rollout shares: who answers, the engine's limits
/// and the run seed the answers' draws derive from.
struct Rules<'a> {
    asker: &'a Asker<'a>,
    opponent: Limit,
    regret: Limit,
    max_moves: usize,
    seed: u64,
}

/// A game in progress: the position and the SAN moves that led to it.
struct Board {
    position: Chess,
    history: Vec<String>,
}

impl Board {
    /// Plays `uci`, which `who` chose, after checking it is legal.
    fn play(&mut self, uci: &UciMove, who: &str) -> Result<(), EngineError> {
        let m = legal_uci_move(&self.position, uci, who).map_err(fault)?;
        self.history
            .push(SanPlus::from_move(self.position.clone(), m).to_string());
        self.position.play_unchecked(m);
        Ok(())
    }
}

/// Plays rollout game `index` from `start`: the engine moves first when the
/// model plays the other side, then model and engine alternate until the
/// model has made `max_moves` attempts or the game ends.
fn play_game(
    session: &mut Session,
    start: &StartPosition,
    index: usize,
    asker: &Asker,
    config: &RolloutConfig,
    eval: &EvalConfig,
    seed: u64,
) -> Result<(RolloutGame, Vec<RolloutMove>), EngineError> {
    let position = position_from_fen(&start.fen, &start.name).map_err(fault)?;
    let model_color = match start.model_plays.as_str() {
        "white" => shakmaty::Color::White,
        "black" => shakmaty::Color::Black,
        _ => position.turn(),
    };
    let rules = Rules {
        asker,
        opponent: limit_of(config.opponent_nodes, config.opponent_depth, 100_000),
        regret: limit_of(eval.regret.nodes, eval.regret.depth, 200_000),
        max_moves: config.max_moves as usize,
        seed,
    };
    let mut board = Board {
        position,
        history: Vec::new(),
    };
    if board.position.turn() != model_color && !board.position.is_game_over() {
        engine_move(session, &mut board, rules.opponent)?;
    }
    let mut moves = Vec::new();
    let mut end = "max_moves";
    while moves.len() < rules.max_moves {
        if board.position.is_game_over() {
            end = if board.position.is_checkmate() {
                "checkmated"
            } else {
                "draw"
            };
            break;
        }
        let (attempt, ended) = model_turn(session, start, &rules, &mut board, index, moves.len())?;
        moves.push(attempt);
        if let Some(ended) = ended {
            end = ended;
            break;
        }
        engine_move(session, &mut board, rules.opponent)?;
        if board.position.is_checkmate() {
            end = "checkmated";
            break;
        }
    }
    let game = RolloutGame {
        start: start.name.clone(),
        model_color: side_name(model_color).into(),
        model_moves: moves.iter().filter(|m| m.played.is_some()).count(),
        end: end.into(),
        moves_san: board.history,
    };
    Ok((game, moves))
}

/// The engine's reply: its best move within `limit`, if it has one.
fn engine_move(session: &mut Session, board: &mut Board, limit: Limit) -> Result<(), EngineError> {
    let fen = Fen::from_position(&board.position, EnPassantMode::Legal);
    let result = search(session, fen, Vec::new(), limit)?;
    match result.best_move {
        Some(best) => board.play(&best, "engine move"),
        None => Ok(()),
    }
}

/// The model's move `ply` of game `game`: asks for a move, judges it and
/// plays it when legal. Returns the record of the attempt and, when the
/// game ends with it, how.
fn model_turn(
    session: &mut Session,
    start: &StartPosition,
    rules: &Rules,
    board: &mut Board,
    game: usize,
    ply: usize,
) -> Result<(RolloutMove, Option<&'static str>), EngineError> {
    let turn = Key::Pair(game as u64, ply as u64);
    let view = PositionView::new(&board.position, &board.history);
    let fen = Fen::from_position(&board.position, EnPassantMode::Legal);
    let reply = ask(rules, &view, &board.position, turn)?;
    let attempt = |played: Option<UciMove>, verdict: Verdict, regret_cp: Option<f64>| RolloutMove {
        start: start.name.clone(),
        ply,
        fen: fen.clone(),
        reply: reply.clone(),
        played,
        verdict,
        regret_cp,
    };
    let Some(text) = reply.as_deref() else {
        return Ok((attempt(None, Verdict::NoAnswer, None), Some("no_answer")));
    };
    let uci = match parse_reply(text, &board.position) {
        Parsed::Legal { uci, .. } => uci,
        other => {
            let verdict = if matches!(other, Parsed::Illegal { .. }) {
                Verdict::Illegal
            } else {
                Verdict::Unparseable
            };
            let invalid = attempt(None, verdict, Some(INVALID_PENALTY_CP));
            return Ok((invalid, Some(verdict.as_str())));
        }
    };
    let (best_move, regret) = regret_of_move(session, &fen, uci, rules.regret)?;
    board.play(&uci, "model move")?;
    let verdict = if best_move == Some(uci) {
        Verdict::Correct
    } else {
        Verdict::Wrong
    };
    let end = if board.position.is_checkmate() {
        Some("gave_checkmate")
    } else if board.position.is_game_over() {
        Some("draw")
    } else {
        None
    };
    Ok((attempt(Some(uci), verdict, regret), end))
}

/// The asker's reply to one position; `turn` keys the draws behind it (the
/// random move, the request's seed, the retry jitter).
fn ask(
    rules: &Rules,
    view: &PositionView,
    position: &Chess,
    turn: Key,
) -> Result<Option<String>, EngineError> {
    let run_seed = rules.seed;
    match rules.asker {
        Asker::Model {
            client,
            template,
            prompt,
        } => Ok(ask_model(
            client,
            template,
            prompt,
            view,
            request_seed(run_seed, Domain::RolloutRequestSeed, turn),
            seed::value(run_seed, Domain::RolloutRetryJitter, turn),
        )
        .map_err(fault)?
        .reply),
        Asker::Random => {
            let mut rng = seed::rng(run_seed, Domain::RolloutRandomMove, turn);
            Ok(random_move(position, &mut rng))
        }
    }
}

/// The engine's best move where the model played `uci`, and the regret of
/// `uci` (`None` when the search returned no line).
fn regret_of_move(
    session: &mut Session,
    fen: &Fen,
    uci: UciMove,
    limit: Limit,
) -> Result<(Option<UciMove>, Option<f64>), EngineError> {
    let best = search(session, fen.clone(), Vec::new(), limit)?;
    let over = game_over_after(fen, &uci);
    let after = match over {
        Some(_) => None,
        None => search(session, fen.clone(), vec![uci], limit)?
            .lines
            .first()
            .map(|l| l.score),
    };
    let regret = best
        .lines
        .first()
        .map(|l| regret_of(l.score, after, over == Some(true)));
    Ok((best.best_move, regret))
}

/// `puzzleforge rollout`.
pub fn run_rollout(args: &RolloutArgs) -> Result<Summary> {
    let started = Instant::now();
    let eval: EvalConfig = load_section(args.config.as_deref(), "eval")?;
    let eval = flags_over(&eval, &args.overrides)?;
    let config: RolloutConfig = load_section(args.config.as_deref(), "rollout")?;
    for start in &config.starts {
        position_from_fen(&start.fen, &format!("rollout start {}", start.name))?;
    }
    let model = ModelSpec::parse(&args.model)?;
    let prompt = match &args.prompt {
        Some(path) => PromptSpec::load(path)?,
        None => PromptSpec::default(),
    };
    let template = Template::from_name(&args.template)?;
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating run folder {}", args.output.display()))?;
    let client = rollout_client(&model, &eval, &args.output)?;
    let asker = match &client {
        Some(client) => Asker::Model {
            client,
            template: &template,
            prompt: &prompt,
        },
        None => Asker::Random,
    };
    let engine = EvalEngine::Flags(EngineArgs {
        engine: args.engine.clone(),
        workers: args.engine_workers,
        deadline: None,
        handshake_deadline: None,
    });
    let pool = engine_ops::start_pool(&eval, &engine)?;
    let results = pool.map(&config.starts, |session, i, start| {
        play_game(session, start, i, &asker, &config, &eval, eval.seed)
    })?;
    let games: Vec<&RolloutGame> = results.iter().map(|(g, _)| g).collect();
    let moves: Vec<&RolloutMove> = results.iter().flat_map(|(_, m)| m).collect();
    let totals = RolloutTotals::of(&games, &moves);
    // The model's base URL is recorded with its credentials redacted.
    let mut recorded = eval.clone();
    if let ModelSpec::OpenAi { .. } = model {
        recorded.model = recorded.model.as_ref().map(|_| model.label());
    }
    let report = json!({
        "model": model.label(),
        "template": template.name(),
        "engine": pool.engine_id(),
        "games": games.len(),
        "accepted_moves": totals.regrets.len(),
        "mean_regret": mean(&totals.regrets),
        "median_regret": median(&totals.regrets),
        "illegal_attempt_rate": totals.illegal_attempt_rate(),
        "checkmate_loss_rate": totals.checkmate_loss_rate(),
        "games_detail": games,
        "config": { "rollout": config, "eval": recorded },
    });
    let runtime = json!({
        "wall_seconds": started.elapsed().as_secs_f64(),
        "http_requests": client.as_ref().map_or(0, |c| c.http_requests()),
    });
    let dir = &args.output;
    write_rollout_files(dir, &report, &moves, &runtime)?;
    Ok(rollout_summary(&model, dir, &totals))
}

/// The chat client of a model player; `None` for the random player.
fn rollout_client(
    model: &ModelSpec,
    eval: &EvalConfig,
    output: &Path,
) -> Result<Option<ChatClient>> {
    match model {
        ModelSpec::OpenAi { model, base_url } => Ok(Some(ChatClient::new(
            Endpoint {
                model: model.clone(),
                base_url: base_url.clone(),
            },
            eval.client.clone(),
            Some(
                eval.cache_dir
                    .clone()
                    .unwrap_or_else(|| default_cache_dir(output)),
            ),
        )?)),
        ModelSpec::Random => Ok(None),
        ModelSpec::Engine { .. } => {
            Err(bad_input("rollout plays a model or random, not the engine"))
        }
        ModelSpec::Maia { .. } => Err(bad_input("rollout plays a model or random, not a Maia net")),
    }
}

/// What the games add up to.
struct RolloutTotals {
    games: usize,
    /// Regret of every accepted (played) move.
    regrets: Vec<f64>,
    /// Moves the model answered at all.
    attempts: usize,
    /// Answers that were illegal or unparseable.
    illegal: usize,
    /// Games the model lost by checkmate.
    mated: usize,
}

impl RolloutTotals {
    fn of(games: &[&RolloutGame], moves: &[&RolloutMove]) -> Self {
        Self {
            games: games.len(),
            regrets: moves
                .iter()
                .filter(|m| m.played.is_some())
                .filter_map(|m| m.regret_cp)
                .collect(),
            attempts: moves
                .iter()
                .filter(|m| m.verdict != Verdict::NoAnswer)
                .count(),
            illegal: moves
                .iter()
                .filter(|m| matches!(m.verdict, Verdict::Illegal | Verdict::Unparseable))
                .count(),
            mated: games.iter().filter(|g| g.end == "checkmated").count(),
        }
    }

    fn illegal_attempt_rate(&self) -> f64 {
        share(self.illegal, self.attempts)
    }

    fn checkmate_loss_rate(&self) -> f64 {
        share(self.mated, self.games)
    }
}

fn share(count: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        count as f64 / of as f64
    }
}

/// Writes `rollout.json`, `moves.jsonl` and `runtime.json` into `dir`.
fn write_rollout_files(
    dir: &Path,
    report: &Value,
    moves: &[&RolloutMove],
    runtime: &Value,
) -> Result<()> {
    write_atomic(
        &dir.join("rollout.json"),
        (serde_json::to_string_pretty(report)? + "\n").as_bytes(),
    )?;
    let mut lines = String::new();
    for m in moves {
        lines.push_str(&serde_json::to_string(m)?);
        lines.push('\n');
    }
    write_atomic(&dir.join("moves.jsonl"), lines.as_bytes())?;
    write_atomic(
        &dir.join("runtime.json"),
        (serde_json::to_string_pretty(runtime)? + "\n").as_bytes(),
    )
}

/// The command's human line and JSON summary.
fn rollout_summary(model: &ModelSpec, dir: &Path, totals: &RolloutTotals) -> Summary {
    let regrets = &totals.regrets;
    let human = format!(
        "rollout {}: {} games, {} accepted moves, mean regret {} cp, median {} cp, illegal attempts {:.1}%, checkmate losses {:.1}%",
        model.label(),
        totals.games,
        regrets.len(),
        mean(regrets).map_or("-".into(), |v| format!("{v:.0}")),
        median(regrets).map_or("-".into(), |v| format!("{v:.0}")),
        100.0 * totals.illegal_attempt_rate(),
        100.0 * totals.checkmate_loss_rate()
    );
    let summary = json!({
        "games": totals.games,
        "accepted_moves": regrets.len(),
        "mean_regret": mean(regrets),
        "median_regret": median(regrets),
        "illegal_attempt_rate": totals.illegal_attempt_rate(),
        "checkmate_loss_rate": totals.checkmate_loss_rate(),
        "run_dir": dir.display().to_string(),
    });
    Summary::new(human, summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_starts_are_ten_legal_positions() {
        let config = RolloutConfig::default();
        assert_eq!(config.starts.len(), 10);
        assert_eq!(
            config.starts[2].fen,
            "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"
        );
    }
}

//! `puzzleforge rollout`: short games from start positions against
//! Stockfish. The model plays up to `max_moves` moves, each an independent
//! call with the FEN, side and legal moves; every accepted move gets an
//! engine regret; an illegal or unparseable answer (or no answer) ends
//! that game.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position};
use std::path::PathBuf;
use std::time::Instant;

use super::client::{ChatClient, Endpoint, default_cache_dir};
use super::config::EvalConfig;
use super::engine_ops::{self, game_over_after, limit_of, regret_of};
use super::metrics::{INVALID_PENALTY_CP, Verdict, mean, median};
use super::parse::{Parsed, parse_reply};
use super::players::{ModelSpec, ask_model, random_move, request_seed};
use super::prompt::{PromptSpec, Template};
use super::task::{PositionView, fen_of, legal_uci_move, position_from_fen, side_name};
use crate::core::error::bad_input;
use crate::core::fileio::write_atomic;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::load_section;
use crate::core::summary::Summary;
use crate::engine::process::{EngineError, SearchRequest};
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

#[derive(clap::Args, Debug)]
pub struct RolloutArgs {
    /// openai:MODEL@BASE_URL or random.
    #[arg(long)]
    pub model: String,
    /// paper-json, epoch, or a template file.
    #[arg(long, default_value = "paper-json")]
    pub template: String,
    /// JSON file with an instruction and few-shot demos.
    #[arg(long)]
    pub prompt: Option<PathBuf>,
    /// Run folder.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Pipeline config (TOML) with [eval] and [rollout] sections.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Ask again for calls that failed in an earlier run.
    #[arg(long)]
    pub retry_failed: bool,
    /// Engine executable or definition file.
    #[arg(long, value_name = "PATH")]
    pub engine: Option<PathBuf>,
    /// Engine processes (games played in parallel).
    #[arg(long, value_name = "N")]
    pub engine_workers: Option<usize>,
}

/// One model move (or failed attempt).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RolloutMove {
    pub start: String,
    pub ply: usize,
    pub fen: String,
    pub reply: Option<String>,
    pub played: Option<String>,
    pub verdict: Verdict,
    pub regret_cp: Option<f64>,
}

/// How one game went.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RolloutGame {
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

#[allow(clippy::too_many_arguments)]
fn play_game(
    session: &mut crate::engine::pool::Session,
    start: &StartPosition,
    index: usize,
    asker: &Asker,
    config: &RolloutConfig,
    eval: &EvalConfig,
    seed: u64,
) -> Result<(RolloutGame, Vec<RolloutMove>), EngineError> {
    let mut position = position_from_fen(&start.fen, &start.name).map_err(fault)?;
    let model_color = match start.model_plays.as_str() {
        "white" => shakmaty::Color::White,
        "black" => shakmaty::Color::Black,
        _ => position.turn(),
    };
    let opponent = limit_of(config.opponent_nodes, config.opponent_depth, 100_000);
    let regret_limit = limit_of(eval.regret.nodes, eval.regret.depth, 200_000);
    let mut history: Vec<String> = Vec::new();
    let mut moves = Vec::new();
    let mut end = "max_moves".to_string();
    let search =
        |session: &mut crate::engine::pool::Session, fen: String, m: Vec<String>, limit| {
            session.search(&SearchRequest {
                fen,
                moves: m,
                limit,
                multipv: 1,
            })
        };
    let engine_move = |session: &mut crate::engine::pool::Session,
                       position: &mut Chess,
                       history: &mut Vec<String>|
     -> Result<bool, EngineError> {
        let result = search(session, fen_of(position), Vec::new(), opponent)?;
        let Some(best) = result.best_move else {
            return Ok(false);
        };
        let m = legal_uci_move(position, &best, "engine move").map_err(fault)?;
        history.push(SanPlus::from_move(position.clone(), m).to_string());
        position.play_unchecked(m);
        Ok(true)
    };
    if position.turn() != model_color && !position.is_game_over() {
        engine_move(session, &mut position, &mut history)?;
    }
    while moves.len() < config.max_moves as usize {
        if position.is_game_over() {
            end = if position.is_checkmate() {
                "checkmated".into()
            } else {
                "draw".into()
            };
            break;
        }
        let view = PositionView::new(&position, &history);
        let fen = view.fen.clone();
        let turn = Key::Pair(index as u64, moves.len() as u64);
        let reply = match asker {
            Asker::Model {
                client,
                template,
                prompt,
            } => {
                ask_model(
                    client,
                    template,
                    prompt,
                    &view,
                    request_seed(seed, Domain::RolloutRequestSeed, turn),
                    seed::value(seed, Domain::RolloutRetryJitter, turn),
                )
                .map_err(fault)?
                .reply
            }
            Asker::Random => random_move(
                &position,
                &mut seed::rng(seed, Domain::RolloutRandomMove, turn),
            ),
        };
        let ply = moves.len();
        let Some(text) = reply.clone() else {
            moves.push(RolloutMove {
                start: start.name.clone(),
                ply,
                fen,
                reply,
                played: None,
                verdict: Verdict::NoAnswer,
                regret_cp: None,
            });
            end = "no_answer".into();
            break;
        };
        let uci = match parse_reply(&text, &position) {
            Parsed::Legal { uci, .. } => uci,
            other => {
                let verdict = if matches!(other, Parsed::Illegal { .. }) {
                    Verdict::Illegal
                } else {
                    Verdict::Unparseable
                };
                moves.push(RolloutMove {
                    start: start.name.clone(),
                    ply,
                    fen,
                    reply,
                    played: None,
                    verdict,
                    regret_cp: Some(INVALID_PENALTY_CP),
                });
                end = verdict.as_str().into();
                break;
            }
        };
        let best = search(session, fen.clone(), Vec::new(), regret_limit)?;
        let over = game_over_after(&fen, &uci);
        let after = match over {
            Some(_) => None,
            None => search(session, fen.clone(), vec![uci.clone()], regret_limit)?
                .lines
                .first()
                .map(|l| l.score),
        };
        let regret = best
            .lines
            .first()
            .map(|l| regret_of(l.score, after, over == Some(true)));
        let m = legal_uci_move(&position, &uci, "model move").map_err(fault)?;
        history.push(SanPlus::from_move(position.clone(), m).to_string());
        position.play_unchecked(m);
        let verdict = if best.best_move.as_deref() == Some(uci.as_str()) {
            Verdict::Correct
        } else {
            Verdict::Wrong
        };
        moves.push(RolloutMove {
            start: start.name.clone(),
            ply,
            fen,
            reply,
            played: Some(uci),
            verdict,
            regret_cp: regret,
        });
        if position.is_checkmate() {
            end = "gave_checkmate".into();
            break;
        }
        if position.is_game_over() {
            end = "draw".into();
            break;
        }
        engine_move(session, &mut position, &mut history)?;
        if position.is_checkmate() {
            end = "checkmated".into();
            break;
        }
    }
    let game = RolloutGame {
        start: start.name.clone(),
        model_color: side_name(model_color).into(),
        model_moves: moves.iter().filter(|m| m.played.is_some()).count(),
        end,
        moves_san: history,
    };
    Ok((game, moves))
}

/// `puzzleforge rollout`.
pub fn run_rollout(args: &RolloutArgs) -> Result<Summary> {
    let started = Instant::now();
    let mut eval: EvalConfig = load_section(args.config.as_deref(), "eval")?;
    let config: RolloutConfig = load_section(args.config.as_deref(), "rollout")?;
    if let Some(s) = args.seed {
        eval.seed = s;
    }
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
    let client = match &model {
        ModelSpec::OpenAi { model, base_url } => Some(ChatClient::new(
            Endpoint {
                model: model.clone(),
                base_url: base_url.clone(),
            },
            eval.client.clone(),
            Some(
                eval.cache_dir
                    .clone()
                    .unwrap_or_else(|| default_cache_dir(&args.output)),
            ),
            args.retry_failed,
        )?),
        ModelSpec::Random => None,
        ModelSpec::Engine { .. } => {
            return Err(bad_input("rollout plays a model or random, not the engine"));
        }
    };
    let asker = match &client {
        Some(client) => Asker::Model {
            client,
            template: &template,
            prompt: &prompt,
        },
        None => Asker::Random,
    };
    let engine_args = EngineArgs {
        engine: args.engine.clone(),
        workers: args.engine_workers,
        deadline: None,
    };
    let pool = engine_ops::start_pool(&eval, &engine_args)?;
    let results = pool.map(&config.starts, |session, i, start| {
        play_game(session, start, i, &asker, &config, &eval, eval.seed)
    })?;
    let games: Vec<&RolloutGame> = results.iter().map(|(g, _)| g).collect();
    let moves: Vec<&RolloutMove> = results.iter().flat_map(|(_, m)| m).collect();
    let regrets: Vec<f64> = moves
        .iter()
        .filter(|m| m.played.is_some())
        .filter_map(|m| m.regret_cp)
        .collect();
    let attempts = moves
        .iter()
        .filter(|m| m.verdict != Verdict::NoAnswer)
        .count();
    let illegal = moves
        .iter()
        .filter(|m| matches!(m.verdict, Verdict::Illegal | Verdict::Unparseable))
        .count();
    let mated = games.iter().filter(|g| g.end == "checkmated").count();
    let rate = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let report = json!({
        "model": model.label(),
        "template": template.name(),
        "engine": pool.engine_id(),
        "games": games.len(),
        "accepted_moves": regrets.len(),
        "mean_regret": mean(&regrets),
        "median_regret": median(&regrets),
        "illegal_attempt_rate": rate(illegal, attempts),
        "checkmate_loss_rate": rate(mated, games.len()),
        "games_detail": games,
        "config": { "rollout": config, "eval": eval },
    });
    let dir = &args.output;
    write_atomic(
        &dir.join("rollout.json"),
        (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
    )?;
    let mut lines = String::new();
    for m in &moves {
        lines.push_str(&serde_json::to_string(m)?);
        lines.push('\n');
    }
    write_atomic(&dir.join("moves.jsonl"), lines.as_bytes())?;
    let runtime = json!({
        "wall_seconds": started.elapsed().as_secs_f64(),
        "http_requests": client.as_ref().map_or(0, |c| c.http_requests()),
    });
    write_atomic(
        &dir.join("runtime.json"),
        (serde_json::to_string_pretty(&runtime)? + "\n").as_bytes(),
    )?;
    let human = format!(
        "rollout {}: {} games, {} accepted moves, mean regret {} cp, median {} cp, illegal attempts {:.1}%, checkmate losses {:.1}%",
        model.label(),
        games.len(),
        regrets.len(),
        mean(&regrets).map_or("-".into(), |v| format!("{v:.0}")),
        median(&regrets).map_or("-".into(), |v| format!("{v:.0}")),
        100.0 * rate(illegal, attempts),
        100.0 * rate(mated, games.len())
    );
    let summary = json!({
        "games": games.len(),
        "accepted_moves": regrets.len(),
        "mean_regret": mean(&regrets),
        "median_regret": median(&regrets),
        "illegal_attempt_rate": rate(illegal, attempts),
        "checkmate_loss_rate": rate(mated, games.len()),
        "run_dir": dir.display().to_string(),
    });
    Ok(Summary::new(human, summary))
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

//! The players an eval can ask: an OpenAI-compatible model, a uniform
//! random mover, a Stockfish baseline (`engine_ops`) and a Maia-1 human
//! player of a given rating (`human`).

use anyhow::Result;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use shakmaty::{CastlingMode, Chess, Position};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::client::{ChatClient, ChatOutcome, Endpoint, parse_openai_spec};
use super::prompt::{PromptSpec, Template};
use super::task::PositionView;
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::maia::MAIA_RATINGS;

/// Which player an eval asks, from `--model`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ModelSpec {
    /// `openai:MODEL@BASE_URL`
    OpenAi { model: String, base_url: String },
    /// `engine:stockfish?elo=1500&nodes=N&depth=D`
    Engine {
        elo: Option<u32>,
        nodes: Option<u64>,
        depth: Option<u32>,
    },
    /// `random`
    Random,
    /// `maia:1500` (or `maia:1500?sample=1`): the Maia-1 net of that
    /// Lichess rating. By default it plays the net's most likely move (what
    /// a typical player of the rating plays; deterministic); with
    /// `sample=1` a move drawn from the net's probabilities at temperature
    /// 1, seeded by the run (`Domain::EvalMaiaMove`).
    Maia { rating: u32, sample: bool },
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<Self> {
        if spec == "random" {
            return Ok(ModelSpec::Random);
        }
        if spec.starts_with("openai:") {
            let Endpoint { model, base_url } = parse_openai_spec(spec)?;
            return Ok(ModelSpec::OpenAi { model, base_url });
        }
        if let Some(rest) = spec.strip_prefix("maia:") {
            return parse_maia(spec, rest);
        }
        if let Some(rest) = spec.strip_prefix("engine:") {
            let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
            if name != "stockfish" {
                return Err(bad_input(format!(
                    "model {spec:?}: only engine:stockfish is supported"
                )));
            }
            let params: BTreeMap<&str, &str> = query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, "")))
                .collect();
            let number = |key: &str| -> Result<Option<u64>> {
                params
                    .get(key)
                    .map(|v| {
                        v.parse::<u64>().map_err(|_| {
                            bad_input(format!("model {spec:?}: {key}={v:?} is not a number"))
                        })
                    })
                    .transpose()
            };
            for key in params.keys() {
                if !["elo", "nodes", "depth"].contains(key) {
                    return Err(bad_input(format!(
                        "model {spec:?}: unknown parameter {key:?} (elo, nodes, depth)"
                    )));
                }
            }
            return Ok(ModelSpec::Engine {
                elo: number("elo")?.map(|v| v as u32),
                nodes: number("nodes")?,
                depth: number("depth")?.map(|v| v as u32),
            });
        }
        Err(bad_input(format!(
            "model {spec:?}: expected openai:MODEL@BASE_URL, engine:stockfish?..., maia:RATING, or random"
        )))
    }

    /// A name for reports (no URL secrets: base URLs carry no key).
    pub fn label(&self) -> String {
        match self {
            // Credentials in the URL never reach a report or a log.
            ModelSpec::OpenAi { model, base_url } => {
                format!("openai:{model}@{}", super::client::redact_url(base_url))
            }
            ModelSpec::Engine { elo, nodes, depth } => {
                let mut parts = Vec::new();
                if let Some(e) = elo {
                    parts.push(format!("elo={e}"));
                }
                if let Some(n) = nodes {
                    parts.push(format!("nodes={n}"));
                }
                if let Some(d) = depth {
                    parts.push(format!("depth={d}"));
                }
                format!("engine:stockfish?{}", parts.join("&"))
            }
            ModelSpec::Random => "random".into(),
            ModelSpec::Maia { rating, sample } => match sample {
                true => format!("maia:{rating}?sample=1"),
                false => format!("maia:{rating}"),
            },
        }
    }
}

/// `maia:RATING[?sample=0|1]`, `rest` being what follows `maia:`.
fn parse_maia(spec: &str, rest: &str) -> Result<ModelSpec> {
    let (rating, query) = rest.split_once('?').unwrap_or((rest, ""));
    let valid = || {
        MAIA_RATINGS
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rating = rating
        .parse::<u32>()
        .ok()
        .filter(|r| MAIA_RATINGS.contains(r))
        .ok_or_else(|| {
            bad_input(format!(
                "model {spec:?}: no Maia net of rating {rating:?}; the nine are {}",
                valid()
            ))
        })?;
    let mut sample = false;
    for param in query.split('&').filter(|p| !p.is_empty()) {
        match param.split_once('=').unwrap_or((param, "")) {
            ("sample", "1") => sample = true,
            ("sample", "0") => sample = false,
            ("sample", value) => {
                return Err(bad_input(format!(
                    "model {spec:?}: sample={value:?}: expected 0 (the net's most likely move) or 1 (a seeded draw at temperature 1)"
                )));
            }
            (key, _) => {
                return Err(bad_input(format!(
                    "model {spec:?}: unknown parameter {key:?} (sample)"
                )));
            }
        }
    }
    Ok(ModelSpec::Maia { rating, sample })
}

/// A player's reply to one position.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// The raw reply; `None` when no answer came back.
    pub reply: Option<String>,
    /// The API call behind it (models only).
    pub call: Option<ChatOutcome>,
    /// The request's cache key (sha256 of endpoint and full request).
    pub request_key: Option<String>,
}

/// A uniformly random legal move, drawn from `rng`: the caller hands the
/// item's own generator (`seed::rng`), so the move does not depend on
/// thread timing.
pub(crate) fn random_move(position: &Chess, rng: &mut ChaCha8Rng) -> Option<String> {
    let moves = position.legal_moves();
    if moves.is_empty() {
        return None;
    }
    let chosen = &moves[rng.random_range(0..moves.len())];
    Some(chosen.to_uci(CastlingMode::Standard).to_string())
}

/// The `seed` a model request carries, drawn from (run seed, `domain`,
/// `key`). Below 2^31: servers read it as a 32-bit (llama.cpp) or signed
/// 64-bit (vLLM) integer, and reject or truncate larger numbers.
pub(crate) fn request_seed(run_seed: u64, domain: Domain, key: Key<'_>) -> u64 {
    u64::from(seed::rng(run_seed, domain, key).next_u32() >> 1)
}

/// Asks a chat model about one position.
pub(crate) fn ask_model(
    client: &ChatClient,
    template: &Template,
    prompt: &PromptSpec,
    view: &PositionView,
    seed: u64,
    jitter_seed: u64,
) -> Result<Answer> {
    let messages = template.messages(prompt, view)?;
    let (outcome, key) = client.complete(&messages, seed, jitter_seed)?;
    Ok(Answer {
        reply: outcome.content.clone(),
        call: Some(outcome),
        request_key: Some(key),
    })
}

/// Runs `work` on every item with `workers` threads; results in input
/// order. `on_done` sees each result as it finishes (for progress).
pub(crate) fn run_parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    work: impl Fn(usize, &T) -> Result<R> + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Result<Vec<R>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers.max(1))
        .build()?;
    pool.install(|| {
        items
            .par_iter()
            .enumerate()
            .map(|(i, item)| {
                let result = work(i, item)?;
                on_done(&result);
                Ok(result)
            })
            .collect()
    })
}

/// Counts answers and right answers for the progress message.
#[derive(Default)]
pub(crate) struct Tally {
    done: AtomicU64,
    correct: AtomicU64,
}

impl Tally {
    pub fn add(&self, correct: bool) -> String {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let right = self
            .correct
            .fetch_add(u64::from(correct), Ordering::Relaxed)
            + u64::from(correct);
        format!(
            "position accuracy {:.1}%",
            100.0 * right as f64 / done as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs() {
        assert_eq!(ModelSpec::parse("random").unwrap(), ModelSpec::Random);
        assert_eq!(
            ModelSpec::parse("engine:stockfish?elo=1500&nodes=2000").unwrap(),
            ModelSpec::Engine {
                elo: Some(1500),
                nodes: Some(2000),
                depth: None
            }
        );
        assert!(ModelSpec::parse("engine:stockfish?foo=1").is_err());
        assert!(ModelSpec::parse("gpt-4").is_err());
        assert!(matches!(
            ModelSpec::parse("openai:x@http://127.0.0.1:8080/v1").unwrap(),
            ModelSpec::OpenAi { .. }
        ));
        for (spec, rating, sample) in [
            ("maia:1100", 1100, false),
            ("maia:1900?sample=1", 1900, true),
            ("maia:1500?sample=0", 1500, false),
        ] {
            let parsed = ModelSpec::parse(spec).unwrap();
            assert_eq!(parsed, ModelSpec::Maia { rating, sample });
            assert_eq!(ModelSpec::parse(&parsed.label()).unwrap(), parsed);
        }
        for bad in [
            "maia:1550",
            "maia:2000",
            "maia:",
            "maia:x",
            "maia:1500?sample=2",
            "maia:1500?t=1",
        ] {
            let error = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(error.contains(bad), "{error}");
        }
        let error = ModelSpec::parse("maia:1000").unwrap_err().to_string();
        assert!(
            error.contains("1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900"),
            "{error}"
        );
    }

    #[test]
    fn random_moves_are_reproducible() {
        let p = Chess::default();
        let draw = |i| {
            random_move(
                &p,
                &mut seed::rng(7, Domain::EvalRandomMove, Key::Pair(0, i)),
            )
        };
        let a: Vec<_> = (0..10).map(draw).collect();
        let b: Vec<_> = (0..10).map(draw).collect();
        assert_eq!(a, b);
        assert!(a.iter().collect::<std::collections::BTreeSet<_>>().len() > 1);
    }

    #[test]
    fn request_seeds_of_neighbouring_runs_differ() {
        // With `seed + repeat`, run 7's second repeat sent run 8's first seed.
        let seed = |run, repeat| request_seed(run, Domain::EvalRequestSeed, Key::Index(repeat));
        assert_ne!(seed(7, 1), seed(8, 0));
        assert_eq!(seed(7, 1), seed(7, 1));
        for run in [0, 7, u64::MAX] {
            for repeat in 0..16 {
                assert!(seed(run, repeat) < 1 << 31);
            }
        }
    }
}

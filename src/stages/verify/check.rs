//! One puzzle's checks and their verdict: the deeper search by the same
//! engine against the puzzle's criterion, the second engine's agreement and
//! gap on every solver move, and the margins from the criterion's
//! thresholds. Apart from the run so a verdict depends only on the puzzle,
//! the config and the engines' answers.

use anyhow::Result;
use shakmaty::Position;

use super::config::{SecondEngineConfig, VerifyConfig};
use crate::chess::columns::Column;
use crate::chess::record::Puzzle;
use crate::engine::criterion::{self, Criterion, Margin, Rule, Scores, Turn};
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, SearchRequest};
use crate::engine::uci::Score;
use shakmaty::uci::UciMove;

/// The second engine's look at one solver move.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct SecondMove {
    /// Index of the move in the puzzle's Moves.
    pub ply: usize,
    pub expected_move: String,
    pub best_move: Option<UciMove>,
    /// Best minus second score, in the second engine's cp; `None` with one
    /// legal move, and on a mate puzzle (asked with one line).
    pub gap_cp: Option<i32>,
    pub holds: bool,
}

/// The verdict on one puzzle.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Verdict {
    #[serde(rename = "PuzzleId")]
    pub id: String,
    pub line: u64,
    /// Why the puzzle could not be checked, if so.
    pub error: Option<String>,
    pub nodes: u64,
    pub expected_move: String,
    pub best_move: Option<UciMove>,
    pub best_score: Option<i32>,
    pub second_score: Option<i32>,
    pub criterion: String,
    pub best_holds: bool,
    pub criterion_holds: bool,
    /// Epoch: the smallest room to a threshold over the mining and the
    /// deeper search, in cp.
    pub margin_cp: Option<i32>,
    /// Lichess: the smallest win-chance gap minus 0.7 over those searches.
    pub margin_win_chance: Option<f64>,
    /// The margin is at least the configured minimum (always, at 0).
    pub margin_holds: bool,
    /// The second engine's verdict; `None` without a second engine.
    pub second_holds: Option<bool>,
    /// The second engine's look at each solver move, up to the first that
    /// fails.
    pub second_moves: Vec<SecondMove>,
}

impl Verdict {
    /// The deeper same-engine check passed.
    pub fn deeper_holds(&self) -> bool {
        self.error.is_none() && self.best_holds && self.criterion_holds
    }

    /// Every check passed.
    pub fn verified(&self) -> bool {
        self.deeper_holds() && self.margin_holds && self.second_holds != Some(false)
    }

    /// Writes the verdict columns into `puzzle`.
    pub fn mark(&self, puzzle: &mut Puzzle) {
        // Booleans as the CSV spells them (`Mate`'s True/False); empty
        // where the check did not run (no second engine).
        let pass = |holds: bool| if holds { "True" } else { "False" };
        puzzle.set(Column::VerifyDeeper, pass(self.deeper_holds()));
        let second = self.second_holds.map_or("", pass);
        puzzle.set(Column::VerifySecond, second);
        let margin = match (self.margin_cp, self.margin_win_chance) {
            (Some(cp), _) => cp.to_string(),
            (None, Some(chance)) => format!("{chance:.3}"),
            (None, None) => String::new(),
        };
        puzzle.set(Column::Margin, margin);
        puzzle.set(Column::Verified, pass(self.verified()));
    }
}

/// One puzzle to check: its row number and the puzzle.
pub(super) struct Item<'a> {
    pub(super) line: u64,
    pub(super) puzzle: &'a Puzzle,
}

/// The criterion to check a puzzle against: the config's, else its
/// column's, else Epoch's.
pub(super) fn criterion_of(puzzle: &Puzzle, config: &VerifyConfig) -> Criterion {
    config
        .criterion
        .or_else(|| puzzle.get(Column::Criterion).and_then(Criterion::from_name))
        .unwrap_or_default()
}

/// The deeper search's nodes: K times the puzzle's (or the configured) base.
fn deeper_nodes(puzzle: &Puzzle, config: &VerifyConfig) -> Result<u64, String> {
    let column_nodes = puzzle
        .get(Column::Nodes)
        .and_then(|n| n.trim().parse::<u64>().ok());
    let base = if config.nodes_override {
        config.nodes
    } else {
        column_nodes.or(config.nodes)
    }
    .ok_or("no Nodes column value and no --nodes")?;
    Ok(base.saturating_mul(config.factor).max(1))
}

/// A cp value as written by `mine` ([`Score::to_cp`]) back as a score.
fn score_of_cp(cp: i32) -> Score {
    const MATE_FLOOR: i32 = 9000;
    if cp >= MATE_FLOOR {
        Score::Mate(10000 - cp)
    } else if cp <= -MATE_FLOOR {
        Score::Mate(-cp - 10000)
    } else {
        Score::Cp(cp)
    }
}

/// The scores of the mining search, from the `BestScore`/`SecondScore`
/// columns, when the puzzle has both.
fn mining_scores(puzzle: &Puzzle) -> Option<Scores> {
    let read = |column| {
        puzzle
            .get(column)
            .and_then(|text: &str| text.trim().parse::<i32>().ok())
    };
    Some(Scores::new(
        score_of_cp(read(Column::BestScore)?),
        Some(score_of_cp(read(Column::SecondScore)?)),
    ))
}

/// Fills the margins over the searches made (mining, deeper) and whether
/// they clear the configured minimum: the least room to the rule's
/// thresholds ([`criterion::margin`]) over those searches.
fn judge_margins(
    verdict: &mut Verdict,
    rule: Rule,
    deeper: Option<Scores>,
    puzzle: &Puzzle,
    config: &VerifyConfig,
) {
    let margins: Vec<Margin> = mining_scores(puzzle)
        .into_iter()
        .chain(deeper)
        .filter_map(|scores| criterion::margin(rule, &scores))
        .collect();
    let cp = margins.iter().filter_map(|m| match m {
        Margin::Cp(cp) => Some(*cp),
        Margin::WinChance(_) => None,
    });
    let chance = margins.iter().filter_map(|m| match m {
        Margin::WinChance(w) => Some(*w),
        Margin::Cp(_) => None,
    });
    verdict.margin_cp = cp.min();
    verdict.margin_win_chance = chance
        .reduce(f64::min)
        .map(|m| (m * 1000.0).round() / 1000.0);
    verdict.margin_holds = match rule {
        Rule::Epoch | Rule::Gap { .. } => {
            config.min_margin_cp <= 0
                || verdict.margin_cp.is_some_and(|m| m >= config.min_margin_cp)
        }
        Rule::Lichess | Rule::Mate => {
            config.min_margin_win_chance <= 0.0
                || verdict
                    .margin_win_chance
                    .is_some_and(|m| m >= config.min_margin_win_chance)
        }
    };
}

/// The deeper same-engine check of one puzzle: its first solver move at K
/// times its nodes, judged by the one verdict.
pub(super) fn check(
    session: &mut Session,
    item: &Item,
    config: &VerifyConfig,
) -> Result<Verdict, EngineError> {
    let puzzle = item.puzzle;
    let which = criterion_of(puzzle, config);
    let mut verdict = Verdict {
        id: puzzle.id.clone(),
        line: item.line,
        error: None,
        nodes: 0,
        expected_move: puzzle
            .moves
            .get(1)
            .map(ToString::to_string)
            .unwrap_or_default(),
        best_move: None,
        best_score: None,
        second_score: None,
        criterion: which.name().to_string(),
        best_holds: false,
        criterion_holds: false,
        margin_cp: None,
        margin_win_chance: None,
        margin_holds: false,
        second_holds: None,
        second_moves: Vec::new(),
    };
    let setup = puzzle
        .line()
        .map_err(|e| e.to_string())
        .and_then(|line| Ok((line, deeper_nodes(puzzle, config)?)));
    let (line, nodes) = match setup {
        Ok(setup) => setup,
        Err(error) => {
            verdict.error = Some(error);
            return Ok(verdict);
        }
    };
    let request = SearchRequest {
        fen: puzzle.fen.clone(),
        moves: puzzle.moves[..1].to_vec(),
        limit: Limit::Nodes(nodes),
        multipv: 2,
    };
    let position = line.first_solver_position();
    let rule = Rule::from(which);
    let (judged, result) = criterion::judge(session, &request, position, rule, Turn::First)?;
    verdict.nodes = result.nodes + judged.extra_nodes;
    verdict.best_move = judged.best_move;
    verdict.best_score = judged.best_score.map(Score::to_cp);
    verdict.second_score = judged.second_score.map(Score::to_cp);
    verdict.best_holds = judged
        .best_move
        .and_then(|uci| uci.to_move(position).ok())
        .is_some_and(|best| line.accepts(1, best));
    verdict.criterion_holds = judged.decision.unique;
    let deeper = judged
        .best_score
        .map(|best| Scores::new(best, judged.second_score));
    judge_margins(&mut verdict, rule, deeper, puzzle, config);
    Ok(verdict)
}

/// The second engine on each solver move of `puzzle`, in order, stopping at
/// the first that fails: its best move must be an accepted answer and lead
/// its second by the gap ([`Rule::Gap`], the one verdict, which passes a
/// forced later move and never a forced first one). On a move that mates
/// at once, any mating move is accepted and no gap is asked: the puzzle
/// accepts every mate there. Empty when the line cannot be replayed.
///
/// A mate puzzle (`mate`: held to the mate rule) is asked with one line
/// instead: the second engine's best move must be an accepted answer at
/// every solver move (it confirms the key); that the key mates and no
/// second move mates as fast is the deeper search's verdict. Ethereal 12
/// under MultiPV 2 loses mates it finds with one line, reports its two
/// lines out of score order, and ignores UCI `searchmoves`, so no second
/// line it gives a mate can be trusted; and at depth 12 it misses some
/// quiet mates that it still plays the key of (docs/mining.md).
pub(super) fn second_opinion(
    session: &mut Session,
    puzzle: &Puzzle,
    config: &SecondEngineConfig,
    mate: bool,
) -> Result<Vec<SecondMove>, EngineError> {
    let Ok(line) = puzzle.line() else {
        return Ok(Vec::new());
    };
    let (fen, played) = (&puzzle.fen, &puzzle.moves);
    let rule = Rule::Gap {
        min_cp: config.min_gap_cp,
    };
    let mut moves = Vec::new();
    for (ply, position, _) in line.solver_turns() {
        let turn = if ply == 1 { Turn::First } else { Turn::Later };
        let request = SearchRequest {
            fen: fen.clone(),
            moves: played[..ply].to_vec(),
            limit: Limit::Depth(config.depth),
            multipv: 2,
        };
        let forced = position.legal_moves().len() == 1;
        let (best_move, gap_cp, unique) = if forced {
            // Nothing to search: the one verdict on a lone move.
            let decision = criterion::decide(rule, turn, &Scores::new(Score::Cp(0), None));
            (None, None, decision.unique)
        } else if mate {
            let one_line = SearchRequest {
                multipv: 1,
                ..request
            };
            let searched = session.search(&one_line)?;
            let best = searched.lines.first();
            (best.and_then(|line| line.pv.first().cloned()), None, true)
        } else {
            let (judged, _) = criterion::judge(session, &request, position, rule, turn)?;
            let gap = judged
                .best_score
                .zip(judged.second_score)
                .map(|(best, second)| best.to_cp() - second.to_cp());
            let mates_at_once = judged.best_score == Some(Score::Mate(1));
            (
                judged.best_move,
                gap,
                judged.decision.unique || mates_at_once,
            )
        };
        let agrees = forced
            || best_move
                .and_then(|uci| uci.to_move(position).ok())
                .is_some_and(|best| line.accepts(ply, best));
        let seen = SecondMove {
            ply,
            expected_move: puzzle.moves[ply].to_string(),
            best_move,
            gap_cp,
            holds: agrees && unique,
        };
        let holds = seen.holds;
        moves.push(seen);
        if !holds {
            break;
        }
    }
    Ok(moves)
}

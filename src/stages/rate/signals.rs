//! The engine's and the board's signals of one puzzle, per solver move:
//! the seeded weakened-engine ladder, the engine probe and the wide scan,
//! and board facts read from the position alone. The rating features
//! ([`super::features`]) are computed from them.

use rand_chacha::ChaCha8Rng;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Color, Move, Position, Role};

use super::config::SignalConfig;
use crate::chess::record::Puzzle;
use crate::engine::pool::Session;
use crate::engine::process::{EngineError, Limit, PvLine, SearchRequest};
use crate::engine::uci::Score;
use crate::engine::weaken;

/// What one puzzle's unit of engine work computes.
#[derive(Clone, Debug, Default)]
pub(crate) struct EngineSignals {
    /// The share of the ladder's attempts that solved the whole puzzle.
    pub solve_rate: f64,
    /// The same over the weaker half of the strengths.
    pub low_solve_rate: f64,
    /// Per solver turn, the share of all the ladder's picks that were
    /// correct at that turn, whatever happened before.
    pub turn_rates: Vec<f64>,
    /// Per solver turn: the probe and the wide scan.
    pub engine: Vec<EngineFacts>,
    /// Per solver turn: facts of the position and the solution.
    pub board: Vec<BoardFacts>,
    /// Solve rate of the plain ladder (skill levels 0-14), when measured.
    pub baseline_solve_rate: Option<f64>,
}

// ---------------------------------------------------------------------------
// The weakened player.

/// The weakened player's move from a MultiPV search
/// ([`weaken::SKILL_MULTIPV`] lines to depth [`weaken::pick_depth`]):
/// Stockfish 15.1's `Skill::pick_best` with our seeded RNG.
fn weakened_pick(lines: &[PvLine], level: f64, rng: &mut ChaCha8Rng) -> Option<UciMove> {
    let scores: Vec<i64> = lines
        .iter()
        .map(|line| match line.score {
            Score::Cp(cp) => weaken::internal_from_cp(cp),
            Score::Mate(moves) => weaken::internal_from_mate(moves),
        })
        .collect();
    let chosen = weaken::pick_best(&scores, level, rng)?;
    lines[chosen].pv.first().copied()
}

// ---------------------------------------------------------------------------
// Signals.

/// Board facts of one solver move, from the position alone.
#[derive(Clone, Debug, Default)]
pub(crate) struct BoardFacts {
    pub legal_moves: f64,
    pub checks_available: f64,
    pub captures_available: f64,
    pub is_capture: f64,
    pub is_check: f64,
    pub is_quiet: f64,
    pub is_promotion: f64,
    pub moved_value: f64,
    pub captured_value: f64,
    /// The moved piece lands where the opponent attacks it and is worth
    /// more than what it took: it can be taken back at a loss.
    pub is_sacrifice: f64,
    /// The solution takes on the square the opponent just moved to.
    pub is_recapture: f64,
    /// The opponent's move before it was a capture.
    pub after_capture: f64,
    /// Rank of the solution among legal moves ordered captures (most
    /// valuable victim, least valuable attacker) first, then checks.
    pub naive_rank: f64,
    pub distance: f64,
    pub backward: f64,
    /// The solver starts in check (after a checking opponent move).
    pub in_check: f64,
    /// Captures other than the solution that win material at once: of an
    /// undefended piece or of a piece worth more than the capturer. Decoys.
    pub other_good_captures: f64,
    /// Moves that mate at once.
    pub mates_available: f64,
    pub is_knight: f64,
    pub is_king: f64,
}

fn role_value(role: Role) -> f64 {
    match role {
        Role::Pawn => 1.0,
        Role::Knight | Role::Bishop => 3.0,
        Role::Rook => 5.0,
        Role::Queen => 9.0,
        Role::King => 0.0,
    }
}

fn gives_check(position: &Chess, chess_move: Move) -> bool {
    let mut after = position.clone();
    after.play_unchecked(chess_move);
    after.is_check()
}

/// A move's place in a naive human ordering: captures by victim value then
/// cheapest attacker, then checks, then the rest.
fn naive_key(position: &Chess, chess_move: Move) -> (i32, i32) {
    if let Some(victim) = chess_move.capture() {
        (
            0,
            -(role_value(victim) * 10.0) as i32 + role_value(chess_move.role()) as i32,
        )
    } else if gives_check(position, chess_move) {
        (1, 0)
    } else {
        (2, 0)
    }
}

fn board_facts(position: &Chess, solution: Move, previous: Option<Move>) -> BoardFacts {
    let legal = position.legal_moves();
    let checks = legal.iter().filter(|m| gives_check(position, **m)).count();
    let mates = legal
        .iter()
        .filter(|m| {
            let mut after = position.clone();
            after.play_unchecked(**m);
            after.is_checkmate()
        })
        .count();
    let other_good_captures = legal
        .iter()
        .filter(|m| **m != solution)
        .filter(|m| match m.capture() {
            Some(victim) => {
                let defended = !position
                    .board()
                    .attacks_to(m.to(), !position.turn(), position.board().occupied())
                    .is_empty();
                !defended || role_value(victim) > role_value(m.role())
            }
            None => false,
        })
        .count();
    let captures = legal.iter().filter(|m| m.is_capture()).count();
    let is_check = gives_check(position, solution);
    let is_capture = solution.is_capture();
    let solution_key = naive_key(position, solution);
    let naive_rank = 1 + legal
        .iter()
        .filter(|m| naive_key(position, **m) < solution_key)
        .count();
    let mover = position.turn();
    let mut after = position.clone();
    after.play_unchecked(solution);
    let attacked = !after
        .board()
        .attacks_to(solution.to(), !mover, after.board().occupied())
        .is_empty();
    let moved_value = role_value(solution.promotion().unwrap_or(solution.role()));
    let captured_value = solution.capture().map(role_value).unwrap_or(0.0);
    let from = solution.from().unwrap_or(solution.to());
    let forward = i32::from(solution.to().rank()) - i32::from(from.rank());
    let forward = if mover == Color::White {
        forward
    } else {
        -forward
    };
    BoardFacts {
        legal_moves: legal.len() as f64,
        checks_available: checks as f64,
        captures_available: captures as f64,
        is_capture: f64::from(u8::from(is_capture)),
        is_check: f64::from(u8::from(is_check)),
        is_quiet: f64::from(u8::from(!is_capture && !is_check)),
        is_promotion: f64::from(u8::from(solution.promotion().is_some())),
        moved_value,
        captured_value,
        is_sacrifice: f64::from(u8::from(attacked && moved_value > captured_value)),
        is_recapture: f64::from(u8::from(
            is_capture && previous.is_some_and(|p| p.is_capture() && p.to() == solution.to()),
        )),
        after_capture: f64::from(u8::from(previous.is_some_and(|p| p.is_capture()))),
        naive_rank: naive_rank as f64,
        distance: f64::from(from.distance(solution.to())),
        backward: f64::from(u8::from(forward < 0)),
        in_check: f64::from(u8::from(position.is_check())),
        other_good_captures: other_good_captures as f64,
        mates_available: mates as f64,
        is_knight: f64::from(u8::from(solution.role() == Role::Knight)),
        is_king: f64::from(u8::from(solution.role() == Role::King)),
    }
}

/// Engine facts of one solver move.
#[derive(Clone, Debug, Default)]
pub(crate) struct EngineFacts {
    /// First depth of the probe from which the best move is the solution
    /// (or one more than the last depth when it never settles on it).
    pub found_depth: f64,
    /// Score gap between the best and second move (cp, capped).
    pub gap: f64,
    /// At the wide scan: the solution's rank, how many moves score within
    /// 50 cp of the best, and how far below the best the solution scores.
    pub wide_rank: f64,
    pub wide_close: f64,
    pub wide_deficit: f64,
    /// The probe's score of the best move (cp, capped; mates at the cap).
    pub best_score: f64,
    /// Moves to mate when the probe sees one for the solver, else 0: how
    /// much line is still to come after this move.
    pub mate_in: f64,
    /// Plies of the probe's principal variation.
    pub pv_plies: f64,
    /// The wide scan's score of every legal move (UCI, cp capped), best
    /// first: how much a tempting wrong move loses.
    pub wide_scores: Vec<(String, f64)>,
}

fn clear_hash(session: &mut Session) -> std::result::Result<(), EngineError> {
    session.set_option("Clear Hash", "true")
}

/// A solver move is correct when it is the solution, or when it mates on
/// the puzzle's last move (Lichess accepts any mate there).
fn is_correct(position: &Chess, candidate: UciMove, solution: UciMove, last: bool) -> bool {
    if candidate == solution {
        return true;
    }
    if !last {
        return false;
    }
    candidate.to_move(position).is_ok_and(|m| {
        let mut after = position.clone();
        after.play_unchecked(m);
        after.is_checkmate()
    })
}

fn capped_cp(score: Score) -> f64 {
    f64::from(score.to_cp().clamp(-2000, 2000))
}

/// The engine's and the board's signals of one puzzle.
pub(crate) fn engine_signals(
    session: &mut Session,
    puzzle: &Puzzle,
    signals: &SignalConfig,
    rng: &mut ChaCha8Rng,
    mut baseline_rng: Option<ChaCha8Rng>,
) -> std::result::Result<EngineSignals, EngineError> {
    // The line was checked when the file was read (a line that does not
    // read has no solver turn, so nothing is searched).
    let line = puzzle.line().unwrap_or_default();
    // Elos were checked when the configuration was read.
    let levels: Vec<f64> = signals
        .ladder_elos
        .iter()
        .map(|&elo| weaken::skill_level(elo).unwrap_or(0.0))
        .collect();
    let mut ladder = Ladder::new(levels, signals.ladder_attempts.max(1) as usize);
    let mut baseline = baseline_rng
        .is_some()
        .then(|| Ladder::new((0..=14).map(f64::from).collect(), 5));
    let turns = line.solver_moves();
    let mut engine_facts = Vec::new();
    let mut board = Vec::new();
    for (turn, (ply, position, solution_move)) in line.solver_turns().enumerate() {
        let turn = SolverTurn {
            fen: &puzzle.fen,
            moves: &puzzle.moves,
            ply,
            position,
            last: turn + 1 == turns,
        };
        board.push(board_facts(
            position,
            solution_move,
            Some(line.moves()[ply - 1]),
        ));
        engine_facts.push(probe_and_scan(session, &turn, signals)?);
        clear_hash(session)?;
        ladder.attempt(session, &turn, rng)?;
        if let (Some(baseline), Some(baseline_rng)) = (baseline.as_mut(), baseline_rng.as_mut()) {
            clear_hash(session)?;
            baseline.attempt(session, &turn, baseline_rng)?;
        }
    }
    Ok(EngineSignals {
        solve_rate: ladder.solve_rate(),
        low_solve_rate: ladder.low_solve_rate(),
        turn_rates: ladder.turn_rates,
        engine: engine_facts,
        board,
        baseline_solve_rate: baseline.map(|b| b.solve_rate()),
    })
}

/// One solver move of a puzzle, as the signals see it.
struct SolverTurn<'a> {
    /// The puzzle's FEN and moves, read once.
    fen: &'a Fen,
    moves: &'a [UciMove],
    /// Index of the solver's move in the puzzle's moves.
    ply: usize,
    /// The position the solver faces.
    position: &'a Chess,
    /// The puzzle's last move (any mate is correct there).
    last: bool,
}

impl SolverTurn<'_> {
    /// A search of the position, given as the puzzle's FEN and moves.
    fn request(&self, limit: Limit, multipv: u32) -> SearchRequest {
        SearchRequest {
            fen: self.fen.clone(),
            moves: self.moves[..self.ply].to_vec(),
            limit,
            multipv,
        }
    }

    /// Whether `candidate` solves this turn.
    fn is_correct(&self, candidate: UciMove) -> bool {
        is_correct(self.position, candidate, self.moves[self.ply], self.last)
    }
}

/// The engine probe and the wide scan at one solver turn, each from an
/// empty hash table: what an earlier search left there would make a
/// shallow search look deeper.
fn probe_and_scan(
    session: &mut Session,
    turn: &SolverTurn,
    signals: &SignalConfig,
) -> std::result::Result<EngineFacts, EngineError> {
    clear_hash(session)?;
    let probe = session.search(&turn.request(Limit::Nodes(signals.probe_nodes), 2))?;
    let last_depth = probe.best_by_depth.last().map(|(d, _, _)| *d).unwrap_or(0);
    let mut found_depth = f64::from(last_depth + 1);
    for (depth, best, _) in probe.best_by_depth.iter().rev() {
        if turn.is_correct(*best) {
            found_depth = f64::from(*depth);
        } else {
            break;
        }
    }
    let gap = match (probe.lines.first(), probe.lines.get(1)) {
        (Some(a), Some(b)) => (capped_cp(a.score) - capped_cp(b.score)).clamp(0.0, 1000.0),
        _ => 1000.0,
    };
    clear_hash(session)?;
    let legal = turn.position.legal_moves().len() as u32;
    let wide = session.search(&turn.request(Limit::Depth(signals.wide_depth), legal.max(1)))?;
    let best_score = wide
        .lines
        .first()
        .map(|l| capped_cp(l.score))
        .unwrap_or(0.0);
    let solution_line = wide
        .lines
        .iter()
        .position(|l| l.pv.first().is_some_and(|m| turn.is_correct(*m)));
    let (wide_rank, wide_deficit) = match solution_line {
        Some(i) => (
            (i + 1) as f64,
            (best_score - capped_cp(wide.lines[i].score)).max(0.0),
        ),
        None => (f64::from(legal), 1000.0),
    };
    let wide_close = wide
        .lines
        .iter()
        .filter(|l| best_score - capped_cp(l.score) <= 50.0)
        .count() as f64;
    Ok(EngineFacts {
        found_depth,
        gap,
        wide_rank,
        wide_close,
        wide_deficit,
        best_score: probe
            .lines
            .first()
            .map(|l| capped_cp(l.score))
            .unwrap_or(0.0),
        mate_in: match probe.lines.first().map(|l| l.score) {
            Some(Score::Mate(moves)) if moves > 0 => f64::from(moves),
            _ => 0.0,
        },
        pv_plies: probe
            .lines
            .first()
            .map(|l| l.pv.len() as f64)
            .unwrap_or(0.0),
        wide_scores: wide
            .lines
            .iter()
            .filter_map(|l| Some((l.pv.first()?.to_string(), capped_cp(l.score))))
            .collect(),
    })
}

/// The weakened player's attempts at a puzzle: per strength, per attempt,
/// whether it has found every solver move so far.
struct Ladder {
    /// Skill levels, weakest first.
    levels: Vec<f64>,
    /// `solved[level][attempt]`.
    solved: Vec<Vec<bool>>,
    /// Per solver turn, the share of all picks (every strength, every
    /// attempt) that were correct at that turn, whatever happened before:
    /// which move of a line is the hard one.
    turn_rates: Vec<f64>,
}

impl Ladder {
    fn new(levels: Vec<f64>, attempts: usize) -> Self {
        let solved = vec![vec![true; attempts]; levels.len()];
        Self {
            levels,
            solved,
            turn_rates: Vec::new(),
        }
    }

    /// One solver turn: a search per strength, then each attempt's pick
    /// from it.
    fn attempt(
        &mut self,
        session: &mut Session,
        turn: &SolverTurn,
        rng: &mut ChaCha8Rng,
    ) -> std::result::Result<(), EngineError> {
        let (mut picks, mut correct) = (0usize, 0usize);
        for (level_index, &level) in self.levels.iter().enumerate() {
            let result = session.search(&turn.request(
                Limit::Depth(weaken::pick_depth(level)),
                weaken::SKILL_MULTIPV,
            ))?;
            for attempt in self.solved[level_index].iter_mut() {
                let pick = weakened_pick(&result.lines, level, rng);
                let hit = pick.is_some_and(|m| turn.is_correct(m));
                *attempt &= hit;
                picks += 1;
                correct += usize::from(hit);
            }
        }
        self.turn_rates.push(correct as f64 / picks.max(1) as f64);
        Ok(())
    }

    /// The share of attempts that solved the puzzle, over all strengths.
    fn solve_rate(&self) -> f64 {
        solve_rate(&self.solved)
    }

    /// The same over the weaker half of the strengths.
    fn low_solve_rate(&self) -> f64 {
        solve_rate(&self.solved[..self.levels.len().div_ceil(2)])
    }
}

fn solve_rate(rows: &[Vec<bool>]) -> f64 {
    let total: usize = rows.iter().map(Vec::len).sum();
    let hits: usize = rows.iter().flatten().filter(|s| **s).count();
    hits as f64 / total.max(1) as f64
}

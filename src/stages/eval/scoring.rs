//! How one answer is scored: its verdict (correct, wrong, illegal,
//! unparseable, no answer) and the record a report counts it by. Its own
//! module so that the run (`mod.rs`) and the human ladder (`ladder.rs`)
//! score alike without importing each other.

use shakmaty::EnPassantMode;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;

use super::metrics::{PositionRecord, Verdict};
use super::parse::{Parsed, parse_reply};
use super::players::Answer;
use super::prompt::Template;
use super::task::{Job, PositionTask, is_correct};
use crate::chess::record::Puzzle;

/// Judges an answer: its verdict, the answer's text as written and the
/// legal move it was read as.
pub fn classify(
    task: &PositionTask,
    answer: &Answer,
) -> (Verdict, Option<String>, Option<UciMove>) {
    let Some(reply) = &answer.reply else {
        return (Verdict::NoAnswer, None, None);
    };
    match parse_reply(reply, &task.position) {
        Parsed::Legal { uci, text, .. } => {
            let verdict = if is_correct(task, &uci) {
                Verdict::Correct
            } else {
                Verdict::Wrong
            };
            (verdict, Some(text), Some(uci))
        }
        Parsed::Illegal { text, .. } => (Verdict::Illegal, Some(text), None),
        Parsed::Unparseable => (Verdict::Unparseable, None, None),
    }
}

/// The record of one answer, as the report counts it.
pub(crate) fn record_of(
    puzzles: &[Puzzle],
    task: &PositionTask,
    template: &Template,
    job: &Job,
    answer: &Answer,
) -> PositionRecord {
    let puzzle = &puzzles[task.puzzle_index];
    let (verdict, text, played) = classify(task, answer);
    PositionRecord {
        puzzle_id: puzzle.id.clone(),
        puzzle_index: task.puzzle_index,
        template: template.name().to_string(),
        repeat: job.repeat,
        move_index: task.move_index,
        solver_moves: puzzle.solver_moves(),
        rating: puzzle.rating,
        themes: puzzle.themes.clone(),
        fen: Fen::from_position(&task.position, EnPassantMode::Legal),
        expected: task.expected,
        answer: text,
        played,
        verdict,
        regret_cp: None,
        score_loss: None,
        prompt_tokens: answer.call.as_ref().and_then(|c| c.prompt_tokens),
        completion_tokens: answer.call.as_ref().and_then(|c| c.completion_tokens),
    }
}

//! Prompt templates: the chat messages a model is sent for one position.
//!
//! - `paper-json` reproduces the request DSPy's `JSONAdapter` builds for the
//!   APO paper's signature (`position_fen`, `side_to_move`,
//!   `legal_moves_uci` -> `move`): a system message describing the fields,
//!   their structure and the objective, one user/assistant pair per
//!   demonstration, then the user message with the three input sections.
//! - `epoch` reproduces Epoch AI's chess-puzzle prompt: one user message,
//!   the instruction paragraph and the FEN.
//! - Any other name is a template file whose text becomes the user message
//!   after its placeholders are filled in.
//!
//! `--prompt FILE` (JSON) replaces the instruction and adds few-shot
//! demonstrations, so a prompt optimized elsewhere is evaluated unchanged:
//! `{"instruction": "...", "demos": [{"fen": "...", "move": "e2e4"}],
//!   "field_descriptions": {"position_fen": "..."}}`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::task::{PositionView, position_from_fen};

/// The template name of a baseline player's answers (it reads no prompt).
pub(crate) const BASELINE_TEMPLATE: &str = "none";
use crate::core::error::bad_input;

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// The APO paper's signature instruction.
pub(crate) const PAPER_INSTRUCTION: &str =
    "Solve the chess puzzle by finding the single best move.";

/// Epoch's instruction paragraph, verbatim.
pub(crate) const EPOCH_INSTRUCTION: &str = "Below is a FEN string representing the state of a chess game. Please analyze the position and determine the best next move for the player whose turn it is. You may think as much as you would like, but please conclude your response with the move expressed as a four-character string stating the starting and ending square of the piece to be moved, using the format \"MOVE: b1c3\" (without quotes).";

/// Field descriptions of the paper's signature (overridable from the
/// prompt file, since DSPy prints them into the system message).
const PAPER_FIELDS: [(&str, &str); 4] = [
    ("position_fen", "The chess position in FEN notation"),
    ("side_to_move", "Which side is to move: 'white' or 'black'"),
    (
        "legal_moves_uci",
        "The legal moves in this position, in UCI notation, separated by spaces",
    ),
    ("move", "The best move in UCI notation (e.g. e2e4)"),
];

/// A few-shot demonstration: a position and its answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Demo {
    #[serde(alias = "position_fen")]
    pub fen: String,
    #[serde(alias = "answer")]
    pub r#move: String,
}

/// Instruction and demonstrations from `--prompt FILE`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct PromptSpec {
    pub instruction: Option<String>,
    pub demos: Vec<Demo>,
    pub field_descriptions: BTreeMap<String, String>,
}

impl PromptSpec {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading prompt file {}", path.display()))?;
        let spec: PromptSpec = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("prompt file {}: {e}", path.display())))?;
        for (i, demo) in spec.demos.iter().enumerate() {
            position_from_fen(&demo.fen, &format!("{} demo {}", path.display(), i + 1))?;
        }
        Ok(spec)
    }
}

/// A prompt template.
#[derive(Clone, Debug)]
pub(crate) enum Template {
    PaperJson,
    Epoch,
    /// A template file: its name (for reports) and its text.
    File {
        name: String,
        text: String,
    },
}

impl Template {
    /// `paper-json`, `epoch`, or a path to a template file.
    pub(crate) fn from_name(name: &str) -> Result<Self> {
        match name {
            "paper-json" => Ok(Template::PaperJson),
            "epoch" => Ok(Template::Epoch),
            path => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    bad_input(format!(
                        "template {path:?} is neither paper-json, epoch nor a readable file: {e}"
                    ))
                })?;
                let stem = Path::new(path)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.to_string());
                Ok(Template::File { name: stem, text })
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Template::PaperJson => "paper-json",
            Template::Epoch => "epoch",
            Template::File { name, .. } => name,
        }
    }

    /// The text that identifies the template in a run's config.
    pub fn fingerprint(&self) -> String {
        match self {
            Template::File { text, .. } => crate::core::fileio::sha256_bytes(text.as_bytes()),
            other => other.name().to_string(),
        }
    }

    /// The messages for one position.
    pub fn messages(&self, spec: &PromptSpec, view: &PositionView) -> Result<Vec<Message>> {
        let demos = spec
            .demos
            .iter()
            .map(|d| {
                let position = position_from_fen(&d.fen, "prompt demo")?;
                Ok((PositionView::new(&position, &[]), d.r#move.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(match self {
            Template::PaperJson => paper_json(spec, &demos, view),
            Template::Epoch => {
                let instruction = spec.instruction.as_deref().unwrap_or(EPOCH_INSTRUCTION);
                let mut messages = Vec::new();
                for (demo, answer) in &demos {
                    messages.push(Message::new("user", epoch_user(instruction, demo)));
                    messages.push(Message::new("assistant", format!("MOVE: {answer}")));
                }
                messages.push(Message::new("user", epoch_user(instruction, view)));
                messages
            }
            Template::File { text, .. } => {
                let instruction = spec.instruction.as_deref().unwrap_or("");
                let mut messages = Vec::new();
                for (demo, answer) in &demos {
                    messages.push(Message::new("user", fill(text, instruction, demo)));
                    messages.push(Message::new("assistant", answer.clone()));
                }
                messages.push(Message::new("user", fill(text, instruction, view)));
                messages
            }
        })
    }
}

/// Epoch's solution prompt with `{prompt}` = the FEN.
fn epoch_user(instruction: &str, view: &PositionView) -> String {
    format!("{instruction}\n\n{}\n\n", view.fen)
}

fn fill(text: &str, instruction: &str, view: &PositionView) -> String {
    text.replace("{instruction}", instruction)
        .replace("{fen}", &view.fen)
        .replace("{side}", view.side)
        .replace("{legal_moves_uci}", &view.legal_uci.join(" "))
        .replace("{legal_moves_san}", &view.legal_san.join(" "))
        .replace("{history}", &view.history)
}

fn paper_inputs(view: &PositionView) -> [(&'static str, String); 3] {
    [
        ("position_fen", view.fen.clone()),
        ("side_to_move", view.side.to_string()),
        ("legal_moves_uci", view.legal_uci.join(" ")),
    ]
}

/// DSPy JSONAdapter: system = field description + "\n" + field structure +
/// "\n" + task description; demos as user/assistant pairs (the assistant
/// turn is the output object, `json.dumps(indent=2)`); the last user turn
/// ends with the output requirement.
fn paper_json(
    spec: &PromptSpec,
    demos: &[(PositionView, String)],
    view: &PositionView,
) -> Vec<Message> {
    let describe = |name: &str, default: &str| {
        spec.field_descriptions
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let numbered = |fields: &[(&str, &str)]| {
        fields
            .iter()
            .enumerate()
            .map(|(i, (name, desc))| format!("{}. `{name}` (str): {}", i + 1, describe(name, desc)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let field_description = format!(
        "Your input fields are:\n{}\nYour output fields are:\n{}",
        numbered(&PAPER_FIELDS[..3]),
        numbered(&PAPER_FIELDS[3..])
    );
    let input_structure = PAPER_FIELDS[..3]
        .iter()
        .map(|(name, _)| format!("[[ ## {name} ## ]]\n{{{name}}}"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let field_structure = [
        "All interactions will be structured in the following way, with the appropriate values filled in.",
        "Inputs will have the following structure:",
        &input_structure,
        "Outputs will be a JSON object with the following fields.",
        "{\n  \"move\": \"{move}\"\n}",
    ]
    .join("\n\n");
    let instruction = spec.instruction.as_deref().unwrap_or(PAPER_INSTRUCTION);
    let objective: String = instruction
        .lines()
        .map(|line| format!("\n        {line}"))
        .collect();
    let task_description = format!("In adhering to this structure, your objective is: {objective}");
    let system = format!("{field_description}\n{field_structure}\n{task_description}");

    let user = |view: &PositionView, main: bool| {
        let mut parts: Vec<String> = paper_inputs(view)
            .iter()
            .map(|(name, value)| format!("[[ ## {name} ## ]]\n{value}"))
            .collect();
        if main {
            parts.push(
                "Respond with a JSON object in the following order of fields: `move`.".into(),
            );
        }
        parts.join("\n\n").trim().to_string()
    };
    let mut messages = vec![Message::new("system", system)];
    for (demo, answer) in demos {
        messages.push(Message::new("user", user(demo, false)));
        let object = serde_json::json!({ "move": answer });
        let pretty = serde_json::to_string_pretty(&object).unwrap_or_default();
        messages.push(Message::new("assistant", pretty));
    }
    messages.push(Message::new("user", user(view, true)));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::eval::task::position_from_fen;

    fn view() -> PositionView {
        let p = position_from_fen("7k/8/6K1/8/8/8/8/R7 w - - 0 1", "test").unwrap();
        PositionView::new(&p, &[])
    }

    #[test]
    fn paper_json_matches_dspy_layout() {
        let messages = Template::PaperJson
            .messages(&PromptSpec::default(), &view())
            .unwrap();
        assert_eq!(messages.len(), 2);
        let system = &messages[0].content;
        assert!(system.starts_with("Your input fields are:\n1. `position_fen` (str): "));
        assert!(system.contains("Your output fields are:\n1. `move` (str): "));
        assert!(system.contains(
            "Inputs will have the following structure:\n\n[[ ## position_fen ## ]]\n{position_fen}\n\n[[ ## side_to_move ## ]]"
        ));
        assert!(system.contains(
            "Outputs will be a JSON object with the following fields.\n\n{\n  \"move\": \"{move}\"\n}\nIn adhering"
        ));
        assert!(system.ends_with(
            "In adhering to this structure, your objective is: \n        Solve the chess puzzle by finding the single best move."
        ));
        let user = &messages[1].content;
        assert!(user.starts_with("[[ ## position_fen ## ]]\n7k/8/6K1/8/8/8/8/R7 w - - 0 1\n\n[[ ## side_to_move ## ]]\nwhite\n\n[[ ## legal_moves_uci ## ]]\na1a2 "));
        assert!(
            user.ends_with("Respond with a JSON object in the following order of fields: `move`.")
        );
    }

    #[test]
    fn epoch_prompt_and_demos() {
        let spec = PromptSpec {
            demos: vec![Demo {
                fen: "7k/8/6K1/8/8/8/8/R7 w - - 0 1".into(),
                r#move: "a1a8".into(),
            }],
            ..Default::default()
        };
        let messages = Template::Epoch.messages(&spec, &view()).unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1].content, "MOVE: a1a8");
        assert!(messages[2].content.starts_with("Below is a FEN string"));
        assert!(
            messages[2]
                .content
                .ends_with("\"MOVE: b1c3\" (without quotes).\n\n7k/8/6K1/8/8/8/8/R7 w - - 0 1\n\n")
        );
    }
}

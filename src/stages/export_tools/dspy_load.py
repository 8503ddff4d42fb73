"""DSPy examples from a puzzleforge export (written by `puzzleforge export --format dspy`).

    import dspy
    from dspy_load import BestMove, load_examples, move_is_accepted
    dspy.configure(lm=dspy.LM("openai/gpt-4o-mini"))
    examples = load_examples("test")
    dspy.Evaluate(devset=examples, metric=move_is_accepted)(dspy.Predict(BestMove))

`dspy_fields.json` beside this file names the inputs and the label.
"""

import json
from pathlib import Path

import dspy

HERE = Path(__file__).resolve().parent
# The splits this export holds, as `<split>.jsonl` beside this file.
SPLITS = __SPLITS__
FIELDS = json.loads((HERE / "dspy_fields.json").read_text())


class BestMove(dspy.Signature):
    """Find the best move in the chess position. Answer with the move in UCI notation only."""

    position_fen: str = dspy.InputField()
    side_to_move: str = dspy.InputField()
    legal_moves_uci: str = dspy.InputField()
    move: str = dspy.OutputField()


def load_examples(split: str = __DEFAULT_SPLIT__) -> list:
    """The split's examples, with the inputs `dspy_fields.json` names."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    with open(HERE / f"{split}.jsonl", encoding="utf-8") as lines:
        return [
            dspy.Example(**json.loads(line)).with_inputs(*FIELDS["inputs"])
            for line in lines
            if line.strip()
        ]


def move_is_accepted(example, prediction, trace=None) -> bool:
    """True when the predicted move is any accepted move of the position."""
    return prediction.move.strip().lower() in example.accepted_moves

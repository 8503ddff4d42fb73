"""Inspect task for a puzzleforge export (written by `puzzleforge export --format inspect`).

Run it unchanged from this folder:

    inspect eval task.py --model openai/gpt-4o-mini
    inspect eval task.py -T split=train --model mockllm/model

Each sample is one position of a puzzle; the target lists every accepted
move (the line's move and every move that checkmates), and the scorer
accepts any of them.
"""

import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate, system_message

HERE = Path(__file__).resolve().parent
# The splits this export holds, as `<split>.jsonl` beside this file.
SPLITS = __SPLITS__
SYSTEM_PROMPT = __SYSTEM_PROMPT__
UCI_MOVE = re.compile(r"\b([a-h][1-8][a-h][1-8][qrbn]?)\b")


@scorer(metrics=[accuracy(), stderr()])
def uci_move():
    """Correct when the last UCI move in the answer is any of the targets."""

    async def score(state: TaskState, target: Target) -> Score:
        moves = UCI_MOVE.findall(state.output.completion.lower())
        answer = moves[-1] if moves else ""
        correct = answer in target.target
        return Score(value=CORRECT if correct else INCORRECT, answer=answer)

    return score


@task
def puzzleforge(split: str = __DEFAULT_SPLIT__) -> Task:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    return Task(
        dataset=json_dataset(str(HERE / f"{split}.jsonl")),
        solver=[system_message(SYSTEM_PROMPT), generate()],
        scorer=uci_move(),
    )

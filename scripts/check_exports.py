"""The per-tool checks of scripts/check_exports.sh, run inside its virtual environment.

    python check_exports.py TOOL RELEASE_DIR EXPORTS_DIR WORK_DIR

TOOL is inspect, dspy, openai-evals, datasets or python-chess. Each check runs the export (or
the release) through the real tool with a model that answers from the targets, and exits
non-zero with the reason when the tool does not load, run or score it as expected.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

SPLITS = ("train", "test")


def read_jsonl(path: Path) -> list:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


def first_target(target) -> str:
    return target if isinstance(target, str) else target[0]


def check_inspect(release: Path, exports: Path, work: Path) -> str:
    folder = exports / "inspect"
    logs = work / "inspect-logs"
    # The task file as a user runs it: the CLI, Inspect's mock model.
    cli = subprocess.run(
        [
            "inspect", "eval", "task.py", "--model", "mockllm/model",
            "--log-dir", str(logs), "--display", "none",
        ],
        cwd=folder, capture_output=True, text=True,
    )
    if cli.returncode != 0:
        raise AssertionError(f"inspect eval task.py failed:\n{cli.stdout}\n{cli.stderr}")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    task_module = load_module(folder / "task.py", "puzzleforge_inspect_task")
    report = []
    for split in SPLITS:
        samples = read_jsonl(folder / f"{split}.jsonl")
        # Scripted answers in dataset order (one sample at a time): the
        # last listed target, in a sentence, so the scorer must find it and
        # accept any listed target.
        answers = [
            ModelOutput.from_content(
                "mockllm/model",
                f"The best move here is {s['target'] if isinstance(s['target'], str) else s['target'][-1]}.",
            )
            for s in samples
        ]
        model = get_model("mockllm/model", custom_outputs=answers)
        [log] = inspect_eval(
            task_module.puzzleforge(split=split), model=model, max_samples=1,
            log_dir=str(logs), display="none",
        )
        if log.status != "success":
            raise AssertionError(f"{split}: status {log.status}: {log.error}")
        metrics = log.results.scores[0].metrics
        accuracy = metrics["accuracy"].value
        if log.results.completed_samples != len(samples) or accuracy != 1.0:
            raise AssertionError(
                f"{split}: {log.results.completed_samples}/{len(samples)} samples, accuracy {accuracy}"
            )
        mates = [s for s in samples if s["metadata"]["mate"] is True]
        if not all(isinstance(s["metadata"]["themes"], list) for s in samples):
            raise AssertionError(f"{split}: themes metadata is not a list")
        report.append(f"{split} {len(samples)} samples accuracy {accuracy} ({len(mates)} mate)")
    return "task.py runs under `inspect eval`; scripted answers score: " + "; ".join(report)


def check_dspy(release: Path, exports: Path, work: Path) -> str:
    import dspy
    from dspy.utils import DummyLM

    folder = exports / "dspy"
    loader = load_module(folder / "dspy_load.py", "dspy_load")
    report = []
    for split in SPLITS:
        examples = loader.load_examples(split)
        inputs = set(examples[0].inputs().keys())
        if inputs != {"position_fen", "side_to_move", "legal_moves_uci"}:
            raise AssertionError(f"{split}: inputs {sorted(inputs)}")
        if "move" not in examples[0].labels().keys():
            raise AssertionError(f"{split}: no move label")
        lm = DummyLM([{"move": example.move} for example in examples])
        dspy.configure(lm=lm)
        predict = dspy.Predict(loader.BestMove)
        correct = sum(
            bool(loader.move_is_accepted(example, predict(**example.inputs())))
            for example in examples
        )
        if correct != len(examples):
            raise AssertionError(f"{split}: {correct}/{len(examples)} accepted")
        report.append(f"{split} {correct}/{len(examples)}")
    return "dspy_load.py loads the examples with their inputs; DummyLM answers accepted: " + "; ".join(report)


COMPLETION_FN = '''
import json
from evals.api import CompletionFn, CompletionResult


class Answer(CompletionResult):
    def __init__(self, text):
        self.text = text

    def get_completions(self):
        return [self.text]


class AnswerFromTarget(CompletionFn):
    """Answers each sample with its first ideal, found by the user message."""

    def __init__(self, samples, **kwargs):
        self.ideal = {}
        for path in samples:
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    sample = json.loads(line)
                    ideal = sample["ideal"]
                    self.ideal[sample["input"][-1]["content"]] = ideal if isinstance(ideal, str) else ideal[0]

    def __call__(self, prompt, **kwargs):
        return Answer(self.ideal[prompt[-1]["content"]])
'''


def check_openai_evals(release: Path, exports: Path, work: Path) -> str:
    folder = exports / "openai-evals"
    functions = work / "evals-fns"
    (functions / "completion_fns").mkdir(parents=True, exist_ok=True)
    (functions / "answer_from_target.py").write_text(COMPLETION_FN)
    samples = [str(folder / f"{split}.jsonl") for split in SPLITS]
    (functions / "completion_fns" / "answer.yaml").write_text(
        "puzzleforge-answer:\n  class: answer_from_target:AnswerFromTarget\n"
        f"  args:\n    samples: {json.dumps(samples)}\n"
    )
    env = dict(os.environ, PYTHONPATH=str(functions))
    report = []
    for name in ["puzzleforge", "puzzleforge.train.v0", "puzzleforge.test.v0"]:
        record = work / f"evals-{name}.jsonl"
        run = subprocess.run(
            [
                "oaieval", "puzzleforge-answer", name,
                "--registry_path", "registry", "--registry_path", str(functions),
                "--record_path", str(record), "--no-cache",
            ],
            cwd=folder, capture_output=True, text=True, env=env,
        )
        if run.returncode != 0:
            raise AssertionError(f"oaieval {name} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        final = [e["final_report"] for e in read_jsonl(record) if "final_report" in e]
        if not final or final[0].get("accuracy") != 1.0:
            raise AssertionError(f"{name}: final report {final}")
        matches = sum(1 for e in read_jsonl(record) if e.get("type") == "match")
        report.append(f"{name} {matches} samples accuracy {final[0]['accuracy']}")
    for split in SPLITS:
        for sample in read_jsonl(folder / f"{split}.jsonl"):
            if not isinstance(sample["metadata"]["mate"], bool):
                raise AssertionError(f"{split}: mate metadata is not a bool")
    return "registry/evals/puzzleforge.yaml runs under oaieval (basic Match): " + "; ".join(report)


def card_features(release: Path) -> list:
    import yaml

    text = (release / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    return front["dataset_info"]["features"]


def expected_type(feature: dict) -> str:
    if "list" in feature:
        return f"List({feature['list']})"
    return feature["dtype"]


def actual_type(feature) -> str:
    from datasets import List, Value

    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, List):
        return f"List({feature.feature.dtype})"
    return repr(feature)


# The verdict columns `verify` writes: booleans, null where a check did not run.
VERDICTS = ("VerifyDeeper", "VerifySecond", "Verified")

# How a CSV reader with nullable types reads each declared feature.
PANDAS_TYPES = {"string": "string", "int64": "Int64", "float64": "Float64", "bool": "boolean"}


def check_datasets(release: Path, exports: Path, work: Path) -> str:
    import datasets
    import pandas

    declared = card_features(release)
    want = {f["name"]: expected_type(f) for f in declared}
    # verify's verdicts are booleans (null where a check did not run), as Mate is.
    for verdict in VERDICTS:
        if want.get(verdict, "bool") != "bool":
            raise AssertionError(f"the card declares {verdict} as {want[verdict]}, not bool")
    loaded = datasets.load_dataset(str(release), cache_dir=str(work / "hf-cache"))
    for split in SPLITS:
        got = {name: actual_type(f) for name, f in loaded[release].features.items()}
        if got != want:
            diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
            raise AssertionError(f"{split}: declared vs loaded {diff}")
    # The CSV files: the same columns, and every cell reads as its declared
    # type with nullable types; the values equal the JSON Lines ones.
    csv_types = {
        f["name"]: PANDAS_TYPES["string"] if "list" in f else PANDAS_TYPES[f["dtype"]] for f in declared
    }
    for split in SPLITS:
        frame = pandas.read_csv(
            release / f"{split}.csv", dtype=csv_types, keep_default_na=False,
            na_values={n: [""] for n, t in csv_types.items() if t != "string"},
            true_values=["True"], false_values=["False"],
        )
        if list(frame.columns) != list(want):
            raise AssertionError(f"{split}.csv columns differ from the card's features")
        rows = loaded[release].to_list()
        for index, row in enumerate(rows):
            for name, value in row.items():
                cell = frame[name].iloc[index]
                if isinstance(value, list):
                    value = " ".join(value)
                if value is None:
                    value = "" if csv_types[name] == "string" else None
                if (None if pandas.isna(cell) else cell) != value:
                    raise AssertionError(f"{split} row {index} {name}: csv {cell!r}, jsonl {value!r}")
    return (
        f"load_dataset(RELEASE_DIR) gives the card's {len(want)} declared types "
        f"(train {loaded['train'].num_rows}, test {loaded['test'].num_rows} rows; "
        f"Mate {loaded['test'].features['Mate'].dtype}, Seed {loaded['test'].features['Seed'].dtype}, "
        f"Verified {loaded['test'].features['Verified'].dtype}, "
        f"Themes {actual_type(loaded['test'].features['Themes'])}); "
        "the CSV files read with the same types (pandas nullable) and the same values"
    )


def check_python_chess(release: Path, exports: Path, work: Path) -> str:
    import chess

    puzzles = 0
    for split in SPLITS:
        for row in read_jsonl(release / f"{split}.jsonl"):
            board = chess.Board(row["FEN"])
            for uci in row["Moves"].split():
                move = chess.Move.from_uci(uci)
                if move not in board.legal_moves:
                    raise AssertionError(f"{row['PuzzleId']}: {uci} is illegal in {board.fen()}")
                board.push(move)
            if row["Mate"] is not board.is_checkmate():
                raise AssertionError(f"{row['PuzzleId']}: Mate {row['Mate']}, board mate {board.is_checkmate()}")
            puzzles += 1
    positions = 0
    for split in SPLITS:
        for sample in read_jsonl(exports / "inspect" / f"{split}.jsonl"):
            board = chess.Board(sample["metadata"]["fen"])
            targets = [sample["target"]] if isinstance(sample["target"], str) else sample["target"]
            legal = sorted(m.uci() for m in board.legal_moves)
            if not all(chess.Move.from_uci(t) in board.legal_moves for t in targets):
                raise AssertionError(f"{sample['id']}: a target is illegal")
            if f"Legal moves (UCI): {' '.join(legal)}" not in sample["input"]:
                raise AssertionError(f"{sample['id']}: the listed legal moves differ")
            positions += 1
    return f"{puzzles} release lines replay legally with the Mate flag; {positions} export positions' targets and legal moves agree"


CHECKS = {
    "inspect": check_inspect,
    "dspy": check_dspy,
    "openai-evals": check_openai_evals,
    "datasets": check_datasets,
    "python-chess": check_python_chess,
}


def main() -> int:
    tool, release, exports, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    try:
        print(CHECKS[tool](release.resolve(), exports.resolve(), work.resolve()))
    except Exception as error:  # the check's whole point is to report any failure
        print(f"{type(error).__name__}: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

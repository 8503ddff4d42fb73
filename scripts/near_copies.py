#!/usr/bin/env python3
"""Measures near copies of their source in a generation store, by the
measure issue 69 states, written apart from puzzleforge's own rule (with
python-chess, `pip install chess`) so that it checks the rule rather than
repeating it.

Usage: scripts/near_copies.py STORE [--batches N] [--json]

For every verified line of 3-5 solver moves in the first N batches of STORE
(`<output_dir>/.generate/<key>/`) whose game grew from a public puzzle or
game (its `SourceMoves` tag), it compares the line's solver positions with
the source's solver positions (a puzzle's: after its setting move, every
second ply; a game's: every position), same side to move: a line is a
near copy when some pair is within 4 changed squares and the two share a
solver move (anywhere in their lines), or within 8 and share two. Prints
the counts beside hard_lines.py's yields (per engine CPU-hour) for the
same batches, and the near copies' ids.
"""
import csv
import json
import re
import sys
from pathlib import Path

import chess


def placement(board):
    return {sq: (p.piece_type, p.color) for sq, p in board.piece_map().items()}


def changed(a, b):
    return sum(1 for sq in set(a) | set(b) if a.get(sq) != b.get(sq))


def steps(fen, moves, first, every):
    """(placement, side to move) of the positions at plies first, first +
    every, ...; and the moves played there."""
    board = chess.Board(fen)
    out, played = [], set()
    for k, uci in enumerate(moves):
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            break
        if move not in board.legal_moves:
            break
        if k >= first and (k - first) % every == 0:
            out.append((placement(board), board.turn))
            played.add(uci)
        board.push(move)
    return out, played


def games(pgn):
    """GameId -> (source FEN, source moves, is a puzzle)."""
    found = {}
    for game in re.split(r"\n(?=\[Event )", pgn.read_text()):
        tag = lambda name: (re.search(rf'^\[{name} "([^"]*)"\]', game, re.M) or [None, ""])[1]
        moves = tag("SourceMoves").split()
        if not moves:
            continue
        fen = tag("SourceFEN") or chess.STARTING_FEN
        found[f"selfplay-{tag('Seed')}-{tag('Round')}"] = (fen, moves, bool(tag("SourceFEN")))
    return found


def near(line, source):
    (ls, lm), (ss, sm) = line, source
    shared = len(lm & sm)
    if shared == 0:
        return None
    best = None
    for a, ta in ls:
        for b, tb in ss:
            if ta != tb:
                continue
            d = changed(a, b)
            if (d <= 4 and shared >= 1) or (d <= 8 and shared >= 2):
                best = d if best is None else min(best, d)
    return best


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    limit = None
    if "--batches" in sys.argv:
        limit = int(sys.argv[sys.argv.index("--batches") + 1])
        args.remove(str(limit))
    store = Path(args[0])
    batches = sorted(store.glob("batch-*"))[:limit]
    cpu, lines = 0.0, []
    for batch in batches:
        cpu += json.loads((batch / "batch.json").read_text())["engine_cpu_seconds"]
        sources = games(batch / "games.pgn")
        with open(batch / "verified.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row.get("Verified") not in ("True", ""):
                    continue
                moves = row["Moves"].split()
                solver = len(moves) // 2
                mate = "mate" in row["Themes"].split()
                source = sources.get(row["GameId"])
                d = None
                if source and 3 <= solver <= 5:
                    fen, smoves, is_puzzle = source
                    line = steps(row["FEN"], moves, 1, 2)
                    src = steps(fen, smoves, 1, 2) if is_puzzle else steps(fen, smoves, 0, 1)
                    d = near(line, src)
                key = source[1][0] if source else row["GameId"]
                lines.append((row["PuzzleId"], solver, mate, d, (source[0], key) if source else row["GameId"]))
    hours = cpu / 3600
    long = [l for l in lines if 3 <= l[1] <= 5]
    nonmate = [l for l in long if not l[2]]
    near_nm = [l for l in nonmate if l[3] is not None]
    per = lambda n: round(n / hours, 1) if hours else None
    report = {
        "store": str(store),
        "batches": len(batches),
        "engine_cpu_hours": round(hours, 3),
        "lines_3_5": len(long),
        "non_mate_3_5": len(nonmate),
        "non_mate_3_5_per_cpu_hour": per(len(nonmate)),
        "non_mate_4_5": sum(1 for l in nonmate if l[1] >= 4),
        "non_mate_4_5_per_cpu_hour": per(sum(1 for l in nonmate if l[1] >= 4)),
        "non_mate_share_3_5": round(len(nonmate) / len(long), 3) if long else None,
        "distinct_sources_share_3_5": round(len({l[4] for l in long}) / len(long), 3) if long else None,
        "near_copies_of_source_non_mate_3_5": len(near_nm),
        "near_share_non_mate_3_5": round(len(near_nm) / len(nonmate), 3) if nonmate else None,
        "near_copies_of_source_3_5": sum(1 for l in long if l[3] is not None),
        "near_ids": [l[0] for l in near_nm],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

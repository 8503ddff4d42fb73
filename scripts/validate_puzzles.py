#!/usr/bin/env python3
"""The python-chess peer of `puzzleforge ingest puzzles`' validation.

Reads a Lichess puzzle CSV (plain), and for every row parses the FEN and
plays every move of `Moves` legally, as puzzleforge does. Prints one JSON
object: rows read, rows valid, seconds, rows per second. The bench
(`puzzleforge bench ingest`) runs it side by side with the Rust ingest.

Needs python-chess: `pip install chess`.
"""

import csv
import json
import sys
import time

try:
    import chess
except ImportError:
    sys.stderr.write("python-chess is missing: install it with `pip install chess`\n")
    sys.exit(3)


def valid(fen: str, moves: str) -> bool:
    try:
        board = chess.Board(fen)
    except ValueError:
        return False
    if not board.is_valid():
        return False
    line = moves.split()
    if len(line) < 2 or len(line) % 2:
        return False
    for uci in line:
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return False
        if not board.is_legal(move):
            return False
        board.push(move)
    return True


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: validate_puzzles.py PUZZLES.csv\n")
        return 2
    started = time.perf_counter()
    cpu_started = time.process_time()
    rows = good = 0
    with open(sys.argv[1], newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            rows += 1
            if valid(row["FEN"], row["Moves"]):
                good += 1
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    print(json.dumps({
        "rows": rows,
        "valid": good,
        "seconds": seconds,
        "rows_per_sec": rows / seconds if seconds > 0 else 0.0,
        "cpu_seconds": cpu_seconds,
        "rows_per_cpu_sec": rows / cpu_seconds if cpu_seconds > 0 else 0.0,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Counts the long lines of a generation store: every verified line of every
batch under STORE (`<output_dir>/.generate/<key>/`), whatever its rating.

Usage: scripts/hard_lines.py STORE [STORE ...]

Prints, per store: engine CPU-hours (the batches' batch.json), verified
lines of 3-5 and 4-5 solver moves, mate and non-mate, per CPU-hour, the
non-mate share of the 3-5 move lines, and how many distinct games (for games
grown from human games: distinct source games) gave them.
"""
import csv
import json
import re
import sys
from pathlib import Path


def game_sources(pgn: Path) -> dict:
    """selfplay-<seed>-<round> -> the source game's number (or the game id)."""
    sources = {}
    for game in re.split(r"\n(?=\[Event )", pgn.read_text()):
        tag = lambda name: (re.search(rf'^\[{name} "([^"]*)"\]', game, re.M) or [None, ""])[1]
        gid = f"selfplay-{tag('Seed')}-{tag('Round')}"
        sources[gid] = tag("SourceGame") or gid
    return sources


def count(store: Path) -> dict:
    cpu = 0.0
    games = 0
    lines = []
    for batch in sorted(store.glob("batch-*")):
        record = json.loads((batch / "batch.json").read_text())
        cpu += record["engine_cpu_seconds"]
        games += record["games"]
        sources = game_sources(batch / "games.pgn")
        with open(batch / "verified.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row.get("Verified") not in ("True", ""):
                    continue
                solver = len(row["Moves"].split()) // 2
                mate = "mate" in row["Themes"].split()
                lines.append((solver, mate, sources.get(row["GameId"], row["GameId"])))
    hours = cpu / 3600
    long = [l for l in lines if 3 <= l[0] <= 5]
    nonmate = [l for l in long if not l[1]]
    nonmate45 = [l for l in nonmate if l[0] >= 4]
    per = lambda n: round(n / hours, 1) if hours else None
    return {
        "store": str(store),
        "games": games,
        "engine_cpu_hours": round(hours, 3),
        "verified_lines": len(lines),
        "lines_3_5": len(long),
        "non_mate_3_5": len(nonmate),
        "non_mate_3_5_per_cpu_hour": per(len(nonmate)),
        "non_mate_4_5": len(nonmate45),
        "non_mate_4_5_per_cpu_hour": per(len(nonmate45)),
        "non_mate_share_3_5": round(len(nonmate) / len(long), 3) if long else None,
        "distinct_source_games_3_5": len({l[2] for l in long}),
        "distinct_share_3_5": round(len({l[2] for l in long}) / len(long), 3) if long else None,
        "by_length": {n: sum(1 for l in lines if l[0] == n) for n in range(1, 6)},
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(json.dumps(count(Path(arg))))

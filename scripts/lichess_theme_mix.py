#!/usr/bin/env python3
"""Lichess's theme mix per cell, the reference a release card compares with.

Reads a Lichess puzzle dump (CSV, or .zst through `zstd -dc`) and counts, per
cell (100-point rating bin (low, high] as a release's cells, solver length 1-5 with 5 for five or more, mate or
not), the rows and the rows carrying each theme, as Lichess tagged them.
Untagged rows (neither `mate` nor a score theme) are left out. Writes JSON:

  {"source": ..., "rows": N, "cells": {"1500-1600/2/0": {"rows": n, "themes": {"fork": k, ...}}}}

Usage: scripts/lichess_theme_mix.py DUMP.csv[.zst] > models/lichess_theme_mix.json
"""
import csv
import io
import json
import subprocess
import sys

SCORE = {"crushing", "advantage", "equality"}


def rows(path):
    if path.endswith(".zst"):
        proc = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE)
        yield from csv.DictReader(io.TextIOWrapper(proc.stdout, encoding="utf-8"))
        proc.wait()
    else:
        with open(path, encoding="utf-8", newline="") as f:
            yield from csv.DictReader(f)


def main():
    path = sys.argv[1]
    cells = {}
    total = 0
    for row in rows(path):
        themes = row["Themes"].split()
        if "mate" not in themes and not SCORE.intersection(themes):
            continue
        try:
            rating = int(row["Rating"])
        except ValueError:
            continue
        length = min(len(row["Moves"].split()) // 2, 5)
        # Bins are (low, low + 100], as the release's cells are.
        low = ((rating - 1) // 100) * 100
        key = f"{low}-{low + 100}/{length}/{int('mate' in themes)}"
        cell = cells.setdefault(key, {"rows": 0, "themes": {}})
        cell["rows"] += 1
        for theme in themes:
            cell["themes"][theme] = cell["themes"].get(theme, 0) + 1
        total += 1
    json.dump(
        {"source": path.rsplit("/", 1)[-1], "rows": total, "cells": dict(sorted(cells.items()))},
        sys.stdout,
        sort_keys=False,
        separators=(",", ":"),
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A puzzle file's theme mix beside Lichess's, for a rating band and lengths.

Usage: scripts/theme_mix.py PUZZLES.csv [--ratings 2000 2800] [--lengths 3 5]
                            [--mix models/lichess_theme_mix.json] [--verified-only]

Keeps the rows whose Rating lies in (low, high] and whose solver length lies
in the lengths (and, with --verified-only, whose Verified column is True or
absent), then prints JSON: the rows kept, and per theme the share of those
rows with it, Lichess's share over the whole band (its natural mix) and
Lichess's share in the same cells (rating bin, length, mate; weighted by the
file's rows per cell), from the reference mix that release cards use.
"""
import argparse
import csv
import json


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzles")
    parser.add_argument("--ratings", nargs=2, type=int, default=[2000, 2800])
    parser.add_argument("--lengths", nargs=2, type=int, default=[3, 5])
    parser.add_argument("--mix", default="models/lichess_theme_mix.json")
    parser.add_argument("--verified-only", action="store_true")
    args = parser.parse_args()
    low, high = args.ratings
    shortest, longest = args.lengths
    reference = json.load(open(args.mix))["cells"]

    def cell_of(rating, length, mate):
        bin_low = ((rating - 1) // 100) * 100
        return f"{bin_low}-{bin_low + 100}/{min(length, 5)}/{int(mate)}"

    rows = []
    with open(args.puzzles, newline="") as f:
        for row in csv.DictReader(f):
            if args.verified_only and row.get("Verified", "True") not in ("True", ""):
                continue
            if not row.get("Rating"):
                continue
            rating = int(row["Rating"])
            length = len(row["Moves"].split()) // 2
            if low < rating <= high and shortest <= length <= longest:
                rows.append((rating, length, row["Themes"].split()))
    ours, same_cells = {}, {}
    for rating, length, themes in rows:
        for theme in themes:
            ours[theme] = ours.get(theme, 0) + 1
        cell = reference.get(cell_of(rating, length, "mate" in themes))
        if cell:
            for theme, count in cell["themes"].items():
                same_cells[theme] = same_cells.get(theme, 0) + count / cell["rows"]
    band_rows, band = 0, {}
    for key, cell in reference.items():
        bins, length, _ = key.split("/")
        bin_low = int(bins.split("-")[0])
        if low <= bin_low < high and shortest <= int(length) <= longest:
            band_rows += cell["rows"]
            for theme, count in cell["themes"].items():
                band[theme] = band.get(theme, 0) + count
    n = len(rows)
    themes = sorted(set(ours) | set(band), key=lambda t: -max(ours.get(t, 0) / max(n, 1), band.get(t, 0) / max(band_rows, 1)))
    print(json.dumps({
        "puzzles": args.puzzles,
        "rows": n,
        "lichess_band_rows": band_rows,
        "themes": {
            t: {
                "ours": round(ours.get(t, 0) / n, 4) if n else None,
                "lichess_band": round(band.get(t, 0) / band_rows, 4) if band_rows else None,
                "lichess_same_cells": round(same_cells.get(t, 0) / n, 4) if n else None,
            }
            for t in themes
        },
    }, indent=1))


if __name__ == "__main__":
    main()

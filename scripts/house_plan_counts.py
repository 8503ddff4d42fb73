#!/usr/bin/env python3
"""House counts of issue 56 ("the house as one clear plan"), outside test
modules, each site listed:

- clap derives outside the cli room (`src/cli.rs`, `src/cli/`): a
  `#[derive(...)]` naming clap's `Parser`, `Args`, `Subcommand` or
  `ValueEnum`... only `Parser`, `Args` and `Subcommand` count (a
  `ValueEnum` is a value type a setting shares, not a flag set);
- `serde(skip` attributes (a struct serving as flag set and config
  section skips its flag-only fields);
- `ctx.generated` uses (adapters branching on generation's route);
- files holding the release-folder rules: files that define one of the
  functions that decide what a release folder is or find one;
- files over 800 lines and functions over 120 lines.

    python3 scripts/house_plan_counts.py [src] [--quiet]
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from house_counts import FN_START, body_outside_tests, long_functions  # noqa: E402

CLAP_DERIVE = re.compile(r"#\[derive\([^)]*\b(clap::)?(Parser|Args|Subcommand)\b")
RELEASE_RULES = re.compile(
    r"fn\s+(is_release_dir|holds_release|find_releases|check_release_files|looks_like_release|"
    r"register_release|check_registered|is_run_folder|run_release_is_finished|guard_output|"
    r"split_files)\b"
)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quiet = "--quiet" in sys.argv
    root = pathlib.Path(args[0] if args else "src")
    counts = {name: [] for name in (
        "clap derives outside the cli room", "serde(skip", "ctx.generated",
        "files holding the release-folder rules", "files over 800 lines",
        "functions over 120 lines")}
    for path in sorted(root.rglob("*.rs")):
        rel = path.relative_to(root).as_posix()
        lines = path.read_text().splitlines()
        body = body_outside_tests(lines)
        in_cli = rel == "cli.rs" or rel.startswith("cli/")
        rules = set()
        for i, line in enumerate(body):
            if not in_cli and CLAP_DERIVE.search(line):
                counts["clap derives outside the cli room"].append(f"{rel}:{i + 1}")
            if "serde(skip" in line:
                counts["serde(skip"].append(f"{rel}:{i + 1}")
            if "ctx.generated" in line:
                counts["ctx.generated"].append(f"{rel}:{i + 1}")
            m = RELEASE_RULES.search(line)
            if m:
                rules.add(m.group(1))
        if rules:
            counts["files holding the release-folder rules"].append(
                f"{rel} ({', '.join(sorted(rules))})")
        if len(lines) > 800:
            counts["files over 800 lines"].append(f"{rel} ({len(lines)})")
        for n, at, name in long_functions(body):
            if n > 120:
                counts["functions over 120 lines"].append(f"{rel}:{at} {name} ({n})")
    for name, sites in counts.items():
        print(f"{name} {len(sites)}")
        if not quiet:
            for site in sites:
                print(f"  {site}")


if __name__ == "__main__":
    main()

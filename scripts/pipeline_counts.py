#!/usr/bin/env python3
"""Counts of issue 65 ("one chain, one session, one table of stages"), each
site listed. Test modules (`#[cfg(test)]` + `mod`) are skipped, as
`house_counts.py` skips them, except for the long-files count.

    python3 scripts/pipeline_counts.py [src] [--quiet] [--json]

`--quiet` prints the totals only; `--json` prints the totals as one JSON
object (and nothing else).

- routes wiring the chain: files outside the chain's own module (a file
  whose path contains `/chain`: today `pipeline/chain.rs`, later perhaps
  `generate/chain.rs` or `generate/chain/`) that call a step's work: a
  `chain::play(`, `chain::mine(`, `chain::rate(` or `chain::verify(` (by
  any path ending in `chain::`, by a `use ..chain as x` alias, or bare
  after a `use ..chain::{play, ..}`), or a stage runner directly
  (`run_selfplay_range`, `mine_loaded_per_unit`, `run_rate_with`,
  `run_verify_with`; a runner's calls inside its own stage's folder,
  `stages/<step>/`, are that stage's own command and do not count). Each
  file counts once and is listed with the steps it calls.
- places that open a session: `RunContext {` struct literals outside the
  file that defines `struct RunContext` (today `pipeline/stage.rs`; the
  `struct RunContext {` itself is no literal), each listed with
  the function it is in (the nearest `fn` above it).
- lists of stage properties: hand lists of stages by a property, each
  counted once: a `matches!(..)` whose argument joins `StageName::`
  alternatives with `|`; a `match` with an arm `StageName::.. => true` (or
  `false`), counted once per match; a `match` whose arms map
  `StageName::` values to rows of bools (`=> (true, false, ..)` or
  `=> Props { sharded: true, .. }`: a table of properties), counted once
  per match; an array literal of two or more
  `StageName::` values other than the `ALL` const; and the overrides of a
  method named `uses_engine`, `is_sharded` or `is_step` that return a bare
  `true`/`false` (a stage trait's property set impl by impl), counted once
  per method name (a trait's default among them is listed with them). A
  function of those names that holds one of the forms above counts
  through that form. In the file that defines `enum StageName`, `Self::`
  alternatives count as `StageName::` ones. Match arms that join
  `StageName::` alternatives but do not return a bool (a dispatch, say
  merge's per-stage rule) are listed apart and not counted. The issue's
  target is one table on `StageName`.
- doc lines copied between flag structs: `///` lines of a file outside
  the cli room (`cli.rs`, `cli/`) that, trimmed, equal a `///` line of a
  cli file, empty `///` lines left out; counted per line of the non-cli
  copies (a line copied twice counts twice), listed per file.
- lines in src/pipeline/: all lines of every `.rs` under `pipeline/`
  (tests included, as `wc -l` counts), with the number of files.
- files over 800 lines: all lines, tests included, as `wc -l` counts.
- functions over 80 lines: `house_counts.py`'s `long_functions`.

All of it is read with regular expressions and brace/paren counting on the
code with `//` comments cut off: a heuristic that reads the code the way
this project writes it.
"""
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from house_counts import FN_START, body_outside_tests, long_functions, strip_comment  # noqa: E402

STEPS = ("play", "mine", "rate", "verify")
# A stage runner and the folder of its own stage (where its calls are the
# stage's own command, not a route through the chain).
RUNNERS = {
    "run_selfplay_range": ("play", "stages/selfplay/"),
    "mine_loaded_per_unit": ("mine", "stages/mine/"),
    "run_rate_with": ("rate", "stages/rate/"),
    "run_verify_with": ("verify", "stages/verify/"),
}
LONG_FILE = 800
LONG_FN = 80
PROPERTY_FNS = ("uses_engine", "is_sharded", "is_step")
# An arm's row of a table of properties: `=> (true, false, ..)` or
# `=> Props { sharded: true, .. }`.
ROW = re.compile(r"\s*(?:\(\s*(?:true|false)\b|\w+\s*\{\s*\w+\s*:\s*(?:true|false)\b)")

CHAIN_CALL = re.compile(r"\bchain::(play|mine|rate|verify)\s*\(")
RUNNER_CALL = re.compile(r"(?<![\w.])(?<!fn )(" + "|".join(RUNNERS) + r")\s*\(")
CHAIN_ALIAS = re.compile(r"\buse\s+[\w:]*\bchain\s+as\s+(\w+)\s*;")
CHAIN_NAMES = re.compile(r"\buse\s+[\w:]*\bchain::(\{[^}]*\}|\w+)\s*;")


def is_cli(rel):
    return rel == "cli.rs" or rel.startswith("cli/")


def is_chain(rel):
    return "/chain" in "/" + rel


def code_of(body):
    """The body with `//` comments cut off, as one text, and the offset at
    which each line starts (to turn an offset back into a line number)."""
    lines = [strip_comment(line) for line in body]
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return "\n".join(lines), starts


def line_of(starts, offset):
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def balanced(text, at, open_ch, close_ch):
    """The end (exclusive) of the bracketed group whose opener is at `at`."""
    depth = 0
    for i in range(at, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def enclosing_fn(body, line_no):
    for j in range(line_no - 1, -1, -1):
        m = FN_START.match(body[j])
        if m:
            return m.group(6)
    return "?"


def enclosing_impl(body, line_no):
    """The type of the `impl .. for X` above, or `trait X default`."""
    for j in range(line_no - 1, -1, -1):
        m = re.match(r"\s*impl\b.*?\bfor\s+(\w+)", body[j])
        if m:
            return m.group(1)
        m = re.match(r"\s*(pub(\([^)]*\))?\s+)?trait\s+(\w+)", body[j])
        if m:
            return f"(trait {m.group(3)} default)"
    return "?"


def short(names):
    return ", ".join(n.split("::")[-1] for n in names)


def chain_calls(rel, code, starts):
    """The step calls of one file: {step: [line, ..]}."""
    calls = {}
    patterns = [CHAIN_CALL]
    for m in CHAIN_ALIAS.finditer(code):
        patterns.append(re.compile(r"\b" + re.escape(m.group(1)) + r"::(play|mine|rate|verify)\s*\("))
    imported = set()
    for m in CHAIN_NAMES.finditer(code):
        for item in re.findall(r"\w+(?:\s+as\s+\w+)?", m.group(1)):
            parts = item.split()
            if parts[0] in STEPS:
                imported.add((parts[-1], parts[0]))
    for pattern in patterns:
        for m in pattern.finditer(code):
            calls.setdefault(m.group(1), []).append(line_of(starts, m.start()))
    for local, step in imported:
        for m in re.finditer(r"(?<![\w.:])(?<!fn )" + re.escape(local) + r"\s*\(", code):
            calls.setdefault(step, []).append(line_of(starts, m.start()))
    for m in RUNNER_CALL.finditer(code):
        step, home = RUNNERS[m.group(1)]
        if not rel.startswith(home):
            calls.setdefault(f"{step} ({m.group(1)})", []).append(line_of(starts, m.start()))
    return calls


def stage_lists(rel, body, code, starts):
    """The hand lists of stages of one file, and the `|`-joined match arms
    that return no bool: (lists, aside), each a list of (line, label)."""
    name = r"(?:StageName|Self)" if re.search(r"\benum\s+StageName\b", code) else r"StageName"
    variant = name + r"::\w+"
    joined = re.compile(variant + r"(?:\s*\|\s*" + variant + r")+")
    lists, aside = [], []

    def label(line_no, kind, members):
        return (line_no, f"{kind} [{short(members)}] in fn {enclosing_fn(body, line_no)}")

    for m in re.finditer(r"\bmatches!\s*\(", code):
        group = code[m.end() - 1 : balanced(code, m.end() - 1, "(", ")")]
        found = joined.search(group)
        if found:
            members = re.findall(variant, found.group(0))
            lists.append(label(line_of(starts, m.start()), "matches!", members))

    # `match` blocks, to find the innermost one around an arm.
    blocks = []
    for m in re.finditer(r"\bmatch\b", code):
        brace = code.find("{", m.end())
        if brace >= 0:
            blocks.append((m.start(), balanced(code, brace, "{", "}")))
    arm = re.compile(r"(?<![\w:])" + variant + r"(?:\s*\|\s*" + variant + r")*\s*=>\s*(?:(true|false)\b)?")
    bool_matches, row_matches = {}, {}
    for m in arm.finditer(code):
        inner = [b for b in blocks if b[0] < m.start() < b[1]]
        if not inner:
            continue
        block = max(inner)
        members = re.findall(variant, m.group(0))
        if m.group(1):
            bool_matches.setdefault(block, []).extend(members)
        elif ROW.match(code, m.end()):
            row_matches.setdefault(block, []).extend(members)
        elif len(members) > 1:
            aside.append(label(line_of(starts, m.start()), "match arm", members))
    for (start, _), members in sorted(bool_matches.items()):
        lists.append(label(line_of(starts, start), "match => bool", members))
    for (start, _), members in sorted(row_matches.items()):
        lists.append(label(line_of(starts, start), "match => row of bools (a table)", members))

    array = re.compile(r"\[\s*" + variant + r"(?:\s*,\s*" + variant + r")+\s*,?\s*\]")
    for m in array.finditer(code):
        if re.search(r"\bconst\s+ALL\b[^=]*=\s*$", code[max(0, m.start() - 80) : m.start()]):
            continue
        members = re.findall(variant, m.group(0))
        lists.append(label(line_of(starts, m.start()), "array", members))
    return lists, aside


def bare_property_overrides(body):
    """`fn uses_engine(&self) -> bool { true }` and the like: (name, line,
    impl, value) for each override whose body is a bare bool."""
    found = []
    for i, line in enumerate(body):
        m = FN_START.match(line)
        if not m or m.group(6) not in PROPERTY_FNS:
            continue
        window = " ".join(strip_comment(l) for l in body[i : i + 4])
        value = re.search(r"->\s*bool\s*\{\s*(true|false)\s*\}", window)
        if value:
            found.append((m.group(6), i + 1, enclosing_impl(body, i + 1), value.group(1)))
    return found


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quiet = "--quiet" in sys.argv
    as_json = "--json" in sys.argv
    root = pathlib.Path(args[0] if args else "src")

    routes, sessions, lists, aside, long_files, long_fns = [], [], [], [], [], []
    overrides = {}
    cli_docs, docs_of = set(), {}
    pipeline_lines = pipeline_files = 0
    for path in sorted(root.rglob("*.rs")):
        rel = path.relative_to(root).as_posix()
        where = f"{root.resolve().name}/{rel}"
        lines = path.read_text().splitlines()
        body = body_outside_tests(lines)
        code, starts = code_of(body)

        if rel.startswith("pipeline/"):
            pipeline_lines += len(lines)
            pipeline_files += 1
        if len(lines) > LONG_FILE:
            long_files.append(f"{where} ({len(lines)})")
        for n, at, name in long_functions(body):
            long_fns.append((n, f"{where}:{at}", name))

        if not is_chain(rel):
            calls = chain_calls(rel, code, starts)
            if calls:
                order = sorted(calls, key=lambda s: (STEPS.index(s.split()[0]), s))
                routes.append(
                    f"{where} " + " ".join(f"{s}:{','.join(map(str, sorted(calls[s])))}" for s in order)
                )

        if not re.search(r"\bstruct\s+RunContext\b", code):
            # `-> RunContext {` is a return type before a body, no literal.
            for m in re.finditer(r"(?<!->)(?<!-> )\bRunContext\s*\{", code):
                line_no = line_of(starts, m.start())
                sessions.append(f"{where}:{line_no} in fn {enclosing_fn(body, line_no)}")

        found, apart = stage_lists(rel, body, code, starts)
        lists += [f"{where}:{n} {text}" for n, text in found]
        aside += [f"{where}:{n} {text}" for n, text in apart]
        for name, line_no, impl, value in bare_property_overrides(body):
            overrides.setdefault(name, []).append(f"{where}:{line_no} {impl} {value}")

        docs = [l.strip() for l in body if l.strip().startswith("///") and l.strip() != "///"]
        if is_cli(rel):
            cli_docs.update(docs)
        else:
            docs_of[where] = docs

    for name, sites in sorted(overrides.items()):
        lists.append(f"fn {name} returning a bare bool, impl by impl: " + "; ".join(sites))
    copied = []
    for where, docs in docs_of.items():
        n = sum(1 for d in docs if d in cli_docs)
        if n:
            copied.append((n, where))

    totals = {
        "routes wiring the chain": len(routes),
        "places that open a session": len(sessions),
        "lists of stage properties": len(lists),
        "doc lines copied between flag structs": sum(n for n, _ in copied),
        "lines in src/pipeline/": pipeline_lines,
        "files in src/pipeline/": pipeline_files,
        f"files over {LONG_FILE} lines": len(long_files),
        f"functions over {LONG_FN} lines": sum(1 for n, _, _ in long_fns if n > LONG_FN),
    }
    if as_json:
        print(json.dumps(totals))
        return

    def show(name, sites, extra=""):
        print(f"{name} {totals[name]}{extra}")
        if not quiet:
            for site in sites:
                print(f"  {site}")

    show("routes wiring the chain", routes)
    show("places that open a session", sessions)
    show("lists of stage properties", lists, f" (and {len(aside)} match arms joining stages, left aside)")
    if not quiet:
        for site in aside:
            print(f"  ({site})")
    show("doc lines copied between flag structs", [f"{n:4} {w}" for n, w in sorted(copied, reverse=True)])
    show("lines in src/pipeline/", [], f" in {pipeline_files} files")
    show(f"files over {LONG_FILE} lines", long_files)
    show(
        f"functions over {LONG_FN} lines",
        [f"{n:4} {loc} {name}" for n, loc, name in sorted(long_fns, reverse=True) if n > LONG_FN],
    )


if __name__ == "__main__":
    main()

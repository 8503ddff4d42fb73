#!/usr/bin/env python3
"""House counts of issue 47, outside test modules: `json!(` calls, JSON-map
`.insert(` calls and functions over 80 lines, each site listed.

    python3 scripts/house_counts.py [src] [--quiet]

A JSON-map insert is an `.insert(` whose receiver is a serde_json map (a
`serde_json::Map`, a `Map<String, Value>`, what `as_object_mut()` returned,
a `json!({..})` object); inserts into HashMap, BTreeMap, HashSet, toml
tables and the like are not counted. The receiver's type is found from the
nearest declaration of its name above the call (a `let`, a parameter, a
pattern binding or a struct field), so the count is a heuristic that reads
the code the way this project writes it. Inserts in `chess/record.rs` (the
dynamic CSV/JSON columns of a record, which the issue leaves aside) are
listed apart and not counted.
"""
import pathlib
import re
import sys

EXEMPT_INSERT_FILES = {"chess/record.rs"}
LONG = 80

JSON_TYPE = re.compile(
    r"serde_json::Map|Map<String,\s*(serde_json::)?Value>|as_object_mut\b|json!\(\s*\{|Value::Object"
)
NOT_JSON = re.compile(r"\b(HashMap|BTreeMap|HashSet|BTreeSet|IndexMap|toml::)")
FN_START = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def body_outside_tests(lines):
    """The lines before the first `#[cfg(test)]` + `mod` (the test module)."""
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
            if lines[i + 1].lstrip().startswith(("mod ", "pub mod ", "pub(crate) mod ")):
                return lines[:i]
    return lines


def strip_comment(line):
    """The line without a `//` comment (good enough: no `//` in the strings
    this counts)."""
    at = line.find("//")
    return line if at < 0 else line[:at]


def receiver(body, i):
    """The receiver expression of the `.insert(` on line `i`: the text before
    it, joined with the lines above while the call is a chain."""
    code = strip_comment(body[i])
    before = code[: code.index(".insert(")]
    j = i
    while not before.strip() and j > 0:
        j -= 1
        before = strip_comment(body[j]).rstrip() + before.strip()
    # The trailing path expression: identifiers, `.`, `()`, `?`, `[..]`.
    m = re.search(r"([\w.()?\[\]&*]+)\s*$", before)
    return m.group(1) if m else before.strip()


def declaration_is_json(body, i, name):
    """Whether the nearest declaration of `name` above line `i` (or a struct
    field of that name anywhere in the file) types it as a JSON map."""
    decl = re.compile(
        r"(\blet\s+(mut\s+)?{0}\b|\b{0}\s*:|Some\((mut\s+)?{0}\)|\|\s*(mut\s+)?{0}\b)".format(re.escape(name))
    )
    for j in range(i, -1, -1):
        text = strip_comment(body[j])
        if j == i:
            text = text[: text.index(".insert(")]
        if decl.search(text):
            # A declaration may run on to the next lines (`let x =\n expr;`).
            window = text
            k = j
            while not window.rstrip().endswith((";", "{", ",", ")")) and k + 1 < len(body) and k - j < 4:
                k += 1
                window += strip_comment(body[k])
            if NOT_JSON.search(window):
                return False
            if JSON_TYPE.search(window):
                return True
            if re.search(r"\bMap::new\(\)|\bMap<", window):
                return imports_json_map(body)
            # `let x = make(..)`: a closure or function of this file that
            # makes a JSON map.
            call = re.search(r"=\s*(\w+)\(", window)
            return bool(call) and maker_is_json(body, call.group(1))
    return False


def maker_is_json(body, name):
    """Whether the closure `let name = |..|` or the `fn name(..)` of this
    file returns a JSON map (its first lines, up to 8, name one)."""
    start = re.compile(r"\blet\s+{0}\s*=\s*\||\bfn\s+{0}\b".format(re.escape(name)))
    for j, line in enumerate(body):
        if start.search(line):
            window = "".join(strip_comment(l) for l in body[j : j + 8])
            return bool(JSON_TYPE.search(window)) and not NOT_JSON.search(window)
    return False


def imports_json_map(body):
    text = "\n".join(body)
    return bool(re.search(r"use serde_json::(\{[^}]*\bMap\b|Map\b)", text))


def json_map_inserts(path, body):
    sites = []
    for i, line in enumerate(body):
        code = strip_comment(line)
        if ".insert(" not in code:
            continue
        expr = receiver(body, i)
        if "as_object_mut()" in expr:
            sites.append((i + 1, expr))
            continue
        name = re.findall(r"\w+", expr)
        if name and declaration_is_json(body, i, name[-1]):
            sites.append((i + 1, expr))
    return sites


def long_functions(body):
    found = []
    i = 0
    while i < len(body):
        m = FN_START.match(body[i])
        if not m:
            i += 1
            continue
        depth = 0
        started = False
        j = i
        while j < len(body):
            # A brace in a char literal (`b'{'`) opens nothing.
            for ch in re.sub(r"b?'[{}]'", "", strip_comment(body[j])):
                if ch == "{":
                    depth += 1
                    started = True
                elif ch == "}":
                    depth -= 1
            if started and depth == 0:
                break
            if not started and body[j].rstrip().endswith(";"):
                break
            j += 1
        n = j - i + 1
        if started and n > LONG:
            found.append((n, i + 1, m.group(6)))
        i = j + 1 if started else i + 1
    return found


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quiet = "--quiet" in sys.argv
    root = pathlib.Path(args[0] if args else "src")
    json_sites, insert_sites, exempt_sites, long_fns = [], [], [], []
    for path in sorted(root.rglob("*.rs")):
        body = body_outside_tests(path.read_text().splitlines())
        rel = path.relative_to(root).as_posix()
        for i, line in enumerate(body):
            for _ in range(strip_comment(line).count("json!(")):
                json_sites.append(f"{path}:{i + 1}")
        for line_no, expr in json_map_inserts(path, body):
            site = (f"{path}:{line_no}", expr)
            (exempt_sites if rel in EXEMPT_INSERT_FILES else insert_sites).append(site)
        for n, line_no, name in long_functions(body):
            long_fns.append((n, f"{path}:{line_no}", name))

    print("json!(", len(json_sites))
    if not quiet:
        for site in json_sites:
            print(f"  {site}")
    print("JSON-map .insert(", len(insert_sites), f"(and {len(exempt_sites)} in record.rs, left aside)")
    if not quiet:
        for site, expr in insert_sites:
            print(f"  {site} {expr}")
        for site, expr in exempt_sites:
            print(f"  ({site} {expr})")
    print(f"functions over {LONG} lines", len(long_fns))
    if not quiet:
        for n, loc, name in sorted(long_fns, reverse=True):
            print(f"  {n:4} {loc} {name}")


if __name__ == "__main__":
    main()

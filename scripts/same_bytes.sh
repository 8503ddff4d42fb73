#!/usr/bin/env bash
# Shows that a change (a structure-only refactor) changes no output byte: runs four pipeline
# scenarios with a puzzleforge binary and writes one sha256 list per scenario, to compare with the
# lists of another binary (the commit before the change):
#
#   scripts/same_bytes.sh BINARY OUT_DIR            (from the repository's root)
#   scripts/same_bytes.sh --compare DIR_A DIR_B     (exit 1 naming each file that differs)
#
#   e.g. scripts/same_bytes.sh /work/baseline-bin/puzzleforge-bce07a8 /tmp/before
#        scripts/same_bytes.sh target/release/puzzleforge /tmp/after
#        scripts/same_bytes.sh --compare /tmp/before /tmp/after
#
# OUT_DIR must be missing or empty. Each scenario runs in a fresh scratch folder
# OUT_DIR/<scenario>/, laid out as the repository's root: copies of engines/, models/,
# tests/data/ and the scenario's config (so the config's relative paths, and its
# `output_dir = "output"`, resolve inside the scratch folder; nothing is written under the
# repository's own output/). The commands run from that folder, so every path the runs record is
# relative and the same for any OUT_DIR. Its log is OUT_DIR/<scenario>/run.log, its output folder
# OUT_DIR/<scenario>/output/ (kept: the release folders the lists describe).
#
#   default        puzzleforge run --config pipeline.toml --release same-bytes
#                  (the committed pipeline.toml, every stage; about 3.5 CPU-minutes)
#   all-generated  puzzleforge run --config all_generated.toml   (scripts/same_bytes/): 40
#                  self-play games, no puzzle or game source: selfplay, mine, rate, verify (with
#                  the second engine), release, export, small node budgets
#   generate       puzzleforge run --config generate.toml   (scripts/same_bytes/): `[generate]`,
#                  batches into the store until the target is filled, two streams (one a band
#                  profile with Maia-1 players), small node budgets
#   slurm          the cluster recipe (docs/cluster.md) without Slurm: `run --shard 0/2` and
#                  `run --shard 1/2` of the committed pipeline.toml (--release same-bytes), then
#                  `merge output/same-bytes.shard-0-of-2 output/same-bytes.shard-1-of-2
#                  -o output/same-bytes`
#
# SAME_BYTES_SCENARIOS="default slurm" runs only those (default: all four, in that order), and
# --compare compares only those (default: every .sha256 of either folder; a scenario one folder
# lacks is a difference).
#
# OUT_DIR/<scenario>.sha256 holds one `sha256  path` line per file, paths relative to the
# scenario's output folder, sorted (LC_ALL=C): every file of the release folder (`same-bytes/`,
# `all-generated/`, `generate/`; for slurm the merged release only, not the shard folders), the
# output folder's `releases.sha256`, and for `generate` the batch store `.generate/` (its games,
# puzzles and `batch.json` records, which the release's stage.json names by sha256). The eval's
# cache `.eval-cache/` is not listed (a cache, not output). OUT_DIR/timings.txt holds each
# scenario's wall and CPU seconds (CPU: this shell's children, engines included).
#
# The sha256 is of the file's bytes after these normalizations, and of its plain bytes when none
# applies (no file is left out):
#
# 1. The build identity (`git:COMMIT[+dirty]` or `sha256:HASH`, read from `BINARY --version`) is
#    replaced by `BUILD` wherever it occurs: the `build` key of every stage.json fingerprint, the
#    release manifest's `tool.build` and the dataset card's (README.md) "build `...`" line. Two
#    commits' binaries always differ there; a refactor is judged on everything else.
# 2. Timings are dropped from the files that record them, and only from those: every stage.json
#    (the run's log: stage `seconds`, ingest throughput, mining's engine CPU, generation's
#    CPU-hours), the eval's runtime.json (its wall seconds and call latencies; its counts stay) and
#    the store's batch.json (the batch's engine CPU seconds). The JSON keys dropped, at any depth:
#    seconds, wall_seconds, latency_ms_mean, latency_ms_median, mib_per_s, pgn_mib_per_s,
#    rows_per_sec, engine_cpu_seconds, engine_cpu_seconds_per_puzzle, engine_cpu_seconds_by_step,
#    engine_cpu_hours; those three kinds of file are then hashed as sorted-key JSON (the files on
#    disk are left as written). These are the fields that differ between two runs of one binary
#    (found by running it twice; a new timing field shows up there first: add its key here, never
#    leave a file out). src/reproduce/compare.rs sets aside the same and more: runtime.json whole
#    (TIMING_FILES), and a stage.json's seconds, counts and stored batches' records; here a
#    stage.json's counts and runtime.json's are compared but for these keys.
# 3. A file's sha256 recorded in another file (a stage.json's outputs and inputs, releases.sha256)
#    is replaced by `normalized:SHA` of that file's normalized bytes when step 1 or 2 changed it
#    (repeated until nothing changes), so a manifest.json differing only in its build, or a
#    runtime.json only in its timings, agrees wherever it is named, as reproduce does.
# 4. The scratch folder's absolute path, should a file hold it, is replaced by `<scratch>`.
set -euo pipefail
export LC_ALL=C

ALL_SCENARIOS="default all-generated generate slurm"

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

compare() {
    local a=$1 b=$2
    [[ -d $a && -d $b ]] || { echo "--compare: $a and $b must be folders" >&2; exit 2; }
    python3 - "$a" "$b" "${SAME_BYTES_SCENARIOS:-}" <<'PY'
import pathlib, sys

a, b = (pathlib.Path(p) for p in sys.argv[1:3])
names = sorted({p.name for p in a.glob("*.sha256")} | {p.name for p in b.glob("*.sha256")})
if sys.argv[3].split():
    names = [f"{s}.sha256" for s in sys.argv[3].split()]
if not names:
    sys.exit(f"--compare: no .sha256 file in {a} or {b}")

def read(path):
    lines = {}
    for line in path.read_text().splitlines():
        sha, _, name = line.partition("  ")
        lines[name] = sha
    return lines

differ = []
for name in names:
    scenario = name[: -len(".sha256")]
    pa, pb = a / name, b / name
    if not pa.exists() or not pb.exists():
        differ.append(f"{scenario}: the whole scenario (only in {pa if pa.exists() else pb})")
        continue
    la, lb = read(pa), read(pb)
    for path in sorted(set(la) | set(lb)):
        if path not in lb:
            differ.append(f"{scenario}: {path} (only in {a})")
        elif path not in la:
            differ.append(f"{scenario}: {path} (only in {b})")
        elif la[path] != lb[path]:
            differ.append(f"{scenario}: {path} (differs)")
    print(f"{scenario}: {len(la)} files in {a}, {len(lb)} in {b}", file=sys.stderr)
if differ:
    print(f"{len(differ)} difference(s) between {a} and {b}:")
    for line in differ:
        print(f"  {line}")
    sys.exit(1)
print(f"identical: {', '.join(n[: -len('.sha256')] for n in names)}")
PY
}

# normalize_and_hash OUTPUT_FOLDER LIST_FILE SCRATCH LISTED...: writes the normalized sha256 of
# every file under the LISTED paths (relative to OUTPUT_FOLDER) into LIST_FILE; the sha256
# substitutions (3.) are worked out over every file under OUTPUT_FOLDER but .eval-cache/.
normalize_and_hash() {
    python3 - "$BUILD" "$@" <<'PY'
import hashlib, json, os, pathlib, sys

build, output, list_file, scratch, *listed = sys.argv[1:]
output = pathlib.Path(output)
TIMING_RECORDS = {"stage.json", "runtime.json", "batch.json"}
TIMING_KEYS = {
    "seconds", "wall_seconds", "latency_ms_mean", "latency_ms_median", "mib_per_s",
    "pgn_mib_per_s", "rows_per_sec", "engine_cpu_seconds", "engine_cpu_seconds_per_puzzle",
    "engine_cpu_seconds_by_step", "engine_cpu_hours",
}
scratch_paths = sorted({scratch, os.path.realpath(scratch)}, key=len, reverse=True)

def files_under(root):
    if root.is_file():
        return [root]
    return [p for p in root.rglob("*") if p.is_file()]

every = sorted(
    p.relative_to(output).as_posix()
    for p in files_under(output)
    if p.relative_to(output).parts[0] != ".eval-cache"
)
raw = {f: (output / f).read_bytes() for f in every}
sha = lambda data: hashlib.sha256(data).hexdigest()

def drop_timings(value):
    if isinstance(value, dict):
        return {k: drop_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [drop_timings(v) for v in value]
    return value

def normalize(name, data, substitutions):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    text = text.replace(build, "BUILD")
    for path in scratch_paths:
        text = text.replace(path, "<scratch>")
    for old, new in substitutions.items():
        text = text.replace(old, new)
    if name.rsplit("/", 1)[-1] in TIMING_RECORDS:
        record = drop_timings(json.loads(text))
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return text.encode("utf-8")

substitutions = {}
for _ in range(20):
    normalized = {f: normalize(f, raw[f], substitutions) for f in every}
    found = {
        sha(raw[f]): "normalized:" + sha(normalized[f])
        for f in every
        if normalized[f] != raw[f]
    }
    if found == substitutions:
        break
    substitutions = found
else:
    sys.exit("the sha256 substitutions did not settle")

wanted = []
for root in listed:
    path = output / root
    if not path.exists():
        sys.exit(f"{path}: missing (the scenario did not write it)")
    wanted += [p.relative_to(output).as_posix() for p in files_under(path)]
with open(list_file, "w") as out:
    for f in sorted(set(wanted)):
        out.write(f"{sha(normalized[f])}  {f}\n")
PY
}

# The scratch folder of a scenario, laid out as the repository's root.
scratch() {
    local dir=$1
    mkdir -p "$dir/tests"
    cp -r "$ROOT/engines" "$ROOT/models" "$dir/"
    cp -r "$ROOT/tests/data" "$dir/tests/"
}

scenario_default() {
    cp "$ROOT/pipeline.toml" .
    "$BINARY" run --config pipeline.toml --release same-bytes
}

scenario_all-generated() {
    cp "$ROOT/scripts/same_bytes/all_generated.toml" .
    "$BINARY" run --config all_generated.toml
}

scenario_generate() {
    cp "$ROOT/scripts/same_bytes/generate.toml" .
    "$BINARY" run --config generate.toml
}

scenario_slurm() {
    cp "$ROOT/pipeline.toml" .
    "$BINARY" run --config pipeline.toml --release same-bytes --shard 0/2
    "$BINARY" run --config pipeline.toml --release same-bytes --shard 1/2
    "$BINARY" merge output/same-bytes.shard-0-of-2 output/same-bytes.shard-1-of-2 \
        -o output/same-bytes --config pipeline.toml
}

LOG=""
on_exit() {
    local status=$?
    # To fd 3, the script's own stderr: a scenario that fails exits inside the
    # redirection that catches `time`'s report.
    if [[ $status -ne 0 && -n $LOG && -f $LOG ]]; then
        echo "same_bytes: failed (exit $status); the end of $LOG:" >&3
        tail -n 20 "$LOG" >&3
    fi
}

main() {
    if [[ ${1:-} == --compare ]]; then
        [[ $# -eq 3 ]] || usage
        compare "$2" "$3"
        return
    fi
    [[ $# -eq 2 ]] || usage
    [[ -f pipeline.toml && -d scripts/same_bytes ]] \
        || { echo "same_bytes: run it from the repository's root" >&2; exit 2; }
    ROOT=$(pwd)
    BINARY=$(realpath "$1")
    [[ -x $BINARY ]] || { echo "same_bytes: $1 is not an executable" >&2; exit 2; }
    BUILD=$("$BINARY" --version | sed -n 's/.*(build \(.*\))$/\1/p')
    [[ -n $BUILD ]] || { echo "same_bytes: no build identity in \`$1 --version\`" >&2; exit 2; }
    if [[ -e $2 && -n $(ls -A "$2") ]]; then
        echo "same_bytes: $2 is not empty (each run writes into a fresh folder)" >&2
        exit 2
    fi
    mkdir -p "$2"
    local out
    out=$(realpath "$2")
    exec 3>&2
    trap on_exit EXIT
    echo "binary $BINARY (build $BUILD)" >"$out/timings.txt"
    echo "scenario wall_s user_s sys_s" >>"$out/timings.txt"
    local name
    for name in ${SAME_BYTES_SCENARIOS:-$ALL_SCENARIOS}; do
        [[ " $ALL_SCENARIOS " == *" $name "* ]] \
            || { echo "same_bytes: unknown scenario $name ($ALL_SCENARIOS)" >&2; exit 2; }
        local dir=$out/$name
        scratch "$dir"
        LOG=$dir/run.log
        echo "same_bytes: $name (log: $LOG)" >&2
        cd "$dir"
        TIMEFORMAT="%R %U %S"
        { time "scenario_$name" >"$LOG" 2>&1; } 2>"$dir/time.txt"
        local took listed
        took=$(<"$dir/time.txt")
        rm "$dir/time.txt"
        cd "$ROOT"
        case $name in
            default | slurm) listed=(same-bytes releases.sha256) ;;
            all-generated) listed=(all-generated releases.sha256) ;;
            generate) listed=(generate releases.sha256 .generate) ;;
        esac
        echo "$name $took" >>"$out/timings.txt"
        normalize_and_hash "$dir/output" "$out/$name.sha256" "$dir" "${listed[@]}"
        echo "same_bytes: $name: $(wc -l <"$out/$name.sha256") files, $took (wall user sys s)" >&2
    done
    LOG=""
    echo "same_bytes: wrote $out/*.sha256 ($out/timings.txt)" >&2
}

main "$@"

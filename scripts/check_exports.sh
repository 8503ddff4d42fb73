#!/usr/bin/env bash
# Runs every export of a release through the tool it is for, as a user would, and the Lichess
# export back through `puzzleforge ingest puzzles`:
#
#   scripts/check_exports.sh [RELEASE_DIR]     (default: output/default/release)
#
# Makes (once) a virtual environment under target/exports-venv (git-ignored; EXPORTS_VENV moves
# it) with inspect-ai, dspy, datasets, chess and OpenAI evals from PyPI, exports the release in
# every format with the puzzleforge binary (PUZZLEFORGE, default target/release/puzzleforge, built
# when missing), and checks each tool with a model that answers from the targets: Inspect's
# mockllm/model, DSPy's DummyLM, an evals completion function; it loads the release with
# `datasets` (the card's declared types) and pandas (the CSV files, same types and values) and
# replays every line with python-chess. Prints one PASS or FAIL line per
# tool and exits 1 on any FAIL. Only the first run needs PyPI; every check runs offline.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RELEASE=$(realpath "${1:-$ROOT/output/default/release}")
VENV=${EXPORTS_VENV:-$ROOT/target/exports-venv}
BIN=${PUZZLEFORGE:-$ROOT/target/release/puzzleforge}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-exports.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if [ ! -f "$RELEASE/manifest.json" ]; then
    echo "FAIL setup: $RELEASE is not a release folder (run \`puzzleforge run\` first)"
    exit 1
fi
if [ ! -x "$BIN" ]; then
    (cd "$ROOT" && cargo build --release --locked --quiet) || { echo "FAIL setup: cargo build"; exit 1; }
fi

# The tools. evals' own dependency list pulls in tensorflow and more it never imports for the
# basic evals, so it comes without them, plus what `oaieval` and the match eval import.
PYTHON=$VENV/bin/python
if ! "$PYTHON" -c 'import inspect_ai, dspy, datasets, chess, evals, blobfile, lz4, backoff' 2>/dev/null; then
    python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install --quiet inspect-ai dspy datasets chess blobfile lz4 backoff &&
        "$VENV/bin/pip" install --quiet --no-deps evals ||
        { echo "FAIL setup: installing the tools into $VENV"; exit 1; }
fi
export PATH="$VENV/bin:$PATH"
# Nothing below reaches a network: no hub, no API. evals builds an OpenAI client when it is
# imported, which wants a key; it never sends a request here.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HOME="$WORK/hf"
export OPENAI_API_KEY=${OPENAI_API_KEY:-not-used-offline}
export INSPECT_LOG_DIR="$WORK/inspect-logs" INSPECT_DISPLAY=none DSPY_CACHEDIR="$WORK/dspy-cache"
# Inspect's mock model counts tokens with tiktoken, whose encoding files would be downloaded;
# litellm ships them under the names tiktoken caches them by.
TIKTOKEN_CACHE_DIR=$("$PYTHON" -c 'import litellm, os; print(os.path.join(os.path.dirname(litellm.__file__), "litellm_core_utils", "tokenizers"))' 2>/dev/null)
export TIKTOKEN_CACHE_DIR

failed=0
report() { # TOOL STATUS DETAIL
    echo "$2 $1: $3"
    [ "$2" = PASS ] || failed=1
}

for format in inspect dspy openai-evals lichess; do
    if ! out=$("$BIN" export "$RELEASE" --format "$format" -o "$WORK/exports/$format" 2>&1); then
        report "export $format" FAIL "$out"
    fi
done

for tool in inspect dspy openai-evals datasets python-chess; do
    if detail=$("$PYTHON" "$ROOT/scripts/check_exports.py" "$tool" "$RELEASE" "$WORK/exports" "$WORK" 2>"$WORK/$tool.stderr"); then
        report "$tool" PASS "$detail"
    else
        report "$tool" FAIL "$detail $(tail -n 20 "$WORK/$tool.stderr")"
    fi
done

# The Lichess export back through puzzleforge's own ingest: every row accepted.
ingest_detail=""
ingest_status=PASS
for split in train test; do
    csv="$WORK/exports/lichess/$split.csv"
    rows=$(($(wc -l <"$csv") - 1))
    if ! json=$("$BIN" ingest puzzles "$csv" -o "$WORK/reingested-$split.csv" --json 2>"$WORK/ingest.stderr"); then
        ingest_status=FAIL
        ingest_detail+="$split: $(tail -n 5 "$WORK/ingest.stderr"); "
        continue
    fi
    counts=$("$PYTHON" -c 'import json, sys; s = json.loads(sys.argv[1]); print(s["rows_read"], s["rejected"], s["written"])' "$json")
    read -r read_rows rejected written <<<"$counts"
    [ "$rejected" = 0 ] && [ "$written" = "$rows" ] || ingest_status=FAIL
    ingest_detail+="$split $read_rows rows, $rejected rejected, $written written; "
done
report "puzzleforge ingest (lichess export)" "$ingest_status" "$ingest_detail"

exit "$failed"

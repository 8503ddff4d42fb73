#!/usr/bin/env bash
# Installs the UCI engine puzzleforge analyses with: Debian's Stockfish.
# Idempotent: does nothing but report when the engine is already there.
# Prints the engine's path and its `id name`.
set -euo pipefail

engine=/usr/games/stockfish

if [ ! -x "$engine" ]; then
    if command -v stockfish >/dev/null 2>&1; then
        engine=$(command -v stockfish)
    else
        echo "puzzleforge: installing Debian's stockfish package" >&2
        sudo=""
        if [ "$(id -u)" -ne 0 ]; then
            sudo="sudo"
        fi
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get update -qq >&2
        $sudo apt-get install -y -qq stockfish >&2
    fi
fi

if [ ! -x "$engine" ]; then
    echo "puzzleforge: stockfish was not installed at $engine" >&2
    exit 1
fi

# Ask the engine for its name; `uci` prints `id name ...` before `uciok`.
name=$(printf 'uci\nquit\n' | "$engine" | sed -n 's/^id name //p' | head -n 1)
if [ -z "$name" ]; then
    echo "puzzleforge: $engine did not answer the UCI handshake" >&2
    exit 1
fi
echo "engine: $engine"
echo "id name: $name"

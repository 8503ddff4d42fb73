#!/usr/bin/env bash
# Installs the UCI engines puzzleforge analyses with: Debian's Stockfish,
# and Debian's Ethereal (ethereal-chess), the independent second engine of
# `[verify.second_engine]`; then fetches the human games the committed
# `[sources] human_games` names (engines/human-games.sh).
# Idempotent: does nothing but report when all is already there.
# Prints each engine's path and its `id name`, and the games' file.
set -euo pipefail

# Installs Debian package $2 unless $1 (or the package's name on PATH) is
# there; prints the engine's path.
ensure() {
    local engine=$1 package=$2
    if [ ! -x "$engine" ]; then
        if command -v "$package" >/dev/null 2>&1; then
            engine=$(command -v "$package")
        else
            echo "puzzleforge: installing Debian's $package package" >&2
            local sudo=""
            if [ "$(id -u)" -ne 0 ]; then
                sudo="sudo"
            fi
            export DEBIAN_FRONTEND=noninteractive
            $sudo apt-get update -qq >&2
            $sudo apt-get install -y -qq "$package" >&2
        fi
    fi
    if [ ! -x "$engine" ]; then
        echo "puzzleforge: $package was not installed at $engine" >&2
        exit 1
    fi
    echo "$engine"
}

# Asks the engine for its name; `uci` prints `id name ...` before `uciok`.
report() {
    local engine=$1 name
    name=$(printf 'uci\nquit\n' | "$engine" | sed -n 's/^id name //p' | head -n 1)
    if [ -z "$name" ]; then
        echo "puzzleforge: $engine did not answer the UCI handshake" >&2
        exit 1
    fi
    echo "engine: $engine"
    echo "id name: $name"
}

# Assignments, so that a failed install stops the script (set -e).
stockfish=$(ensure /usr/games/stockfish stockfish)
ethereal=$(ensure /usr/games/ethereal-chess ethereal-chess)
report "$stockfish"
report "$ethereal"
"$(dirname "${BASH_SOURCE[0]}")/human-games.sh"

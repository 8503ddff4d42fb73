#!/usr/bin/env bash
# Fetches the human master games puzzleforge mines: the game collection of
# Debian's source package gnuchess-book (gnuchess-book_1.02.orig.tar.gz, one
# file, book_1.02.pgn, Latin-1), got with the Debian client
# (`apt-get source --download-only`), re-encoded to UTF-8 and compressed with
# zstd.
#
# Usage: engines/human-games.sh [OUT]
#   OUT defaults to data/human-games/master_games.pgn.zst under the
#   repository root (this script's folder's parent).
#
# Enables a deb-src entry for the Debian main archive only when there is none
# (a new file, /etc/apt/sources.list.d/puzzleforge-deb-src.sources; no
# existing file is edited). Checks the sha256 of the orig tarball and of the
# UTF-8 PGN (the zstd bytes differ across zstd versions, so the decompressed
# text is what is checked). Idempotent: does nothing but report when OUT
# already decompresses to the expected text.
# Prints the path, the number of games and the sha256 of the UTF-8 PGN.
set -euo pipefail

# gnuchess-book_1.02.orig.tar.gz as Debian's archive serves it (the same in
# the package's .dsc, Checksums-Sha256).
ORIG_SHA256=d673ffa6986a3beca27cc23ef126ea0a73f1098762e3ccd00f791c096f2bfb48
# book_1.02.pgn re-encoded from Latin-1 to UTF-8 (iconv), uncompressed.
PGN_SHA256=2f24915f8482bdea45c12b7c15fcb3b3b17fda18657954af9e7d8e38bb0259de
PGN_NAME=book_1.02.pgn
SOURCE_PACKAGE=gnuchess-book
DEB_SRC_FILE=/etc/apt/sources.list.d/puzzleforge-deb-src.sources

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/data/human-games/master_games.pgn.zst}

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# Installs Debian package $2 unless command $1 is on PATH.
ensure() {
    local command=$1 package=$2
    if ! command -v "$command" >/dev/null 2>&1; then
        echo "puzzleforge: installing Debian's $package package" >&2
        $sudo apt-get update -qq >&2
        $sudo apt-get install -y -qq "$package" >&2
    fi
    if ! command -v "$command" >/dev/null 2>&1; then
        echo "puzzleforge: $package was installed but $command is not on PATH" >&2
        exit 1
    fi
}

# Prints the path, the number of games and the sha256 of the UTF-8 PGN.
report() {
    local path=$1 sha=$2 games
    games=$(zstd -dc -- "$path" | grep -c '^\[Event ' || true)
    echo "human games: $path"
    echo "games: $games"
    echo "sha256 (UTF-8 PGN): $sha"
}

ensure zstd zstd
ensure iconv libc-bin
ensure sha256sum coreutils

if [ -f "$out" ]; then
    have=$(zstd -dc -- "$out" 2>/dev/null | sha256sum | cut -d' ' -f1) || have=""
    if [ "$have" = "$PGN_SHA256" ]; then
        echo "puzzleforge: human games already at $out" >&2
        report "$out" "$have"
        exit 0
    fi
    echo "puzzleforge: $out is not the expected file (sha256 of its text: ${have:-unreadable}); fetching it again" >&2
fi

# --- A deb-src entry for the Debian main archive -----------------------------

# Whether some enabled apt source already has deb-src for the Debian archive
# (one-line .list entries or deb822 .sources stanzas).
has_deb_src() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        if grep -Eq '^[[:space:]]*deb-src[[:space:]]+(\[[^]]*\][[:space:]]+)?[a-z+]+://[^[:space:]]*/debian/?[[:space:]]' "$f"; then
            return 0
        fi
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        if awk 'BEGIN { RS = ""; found = 0 }
            {
                types = ""; uris = ""; enabled = "yes"
                n = split($0, lines, "\n")
                for (i = 1; i <= n; i++) {
                    if (lines[i] ~ /^[[:space:]]*#/) continue
                    if (lines[i] ~ /^Types:/) types = lines[i]
                    if (lines[i] ~ /^URIs:/) uris = lines[i]
                    if (lines[i] ~ /^Enabled:[[:space:]]*no/) enabled = "no"
                }
                if (enabled == "yes" && types ~ /[[:space:]]deb-src([[:space:]]|$)/ \
                    && uris ~ /\/debian\/?([[:space:]]|$)/) found = 1
            }
            END { exit !found }' "$f"; then
            return 0
        fi
    done
    return 1
}

# Prints a deb-src stanza with the URIs, Suites, Components and Signed-By of
# the existing deb stanza for the Debian main archive of this release.
deb_src_stanza() {
    local codename=$1 f stanza=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        stanza=$(awk -v codename="$codename" 'BEGIN { RS = "" }
            {
                types = ""; uris = ""; suites = ""; components = ""; signed = ""; enabled = "yes"
                n = split($0, lines, "\n")
                for (i = 1; i <= n; i++) {
                    line = lines[i]
                    if (line ~ /^[[:space:]]*#/) continue
                    if (line ~ /^Types:/) types = line
                    else if (line ~ /^URIs:/) uris = line
                    else if (line ~ /^Suites:/) suites = line
                    else if (line ~ /^Components:/) components = line
                    else if (line ~ /^Signed-By:/) signed = line
                    else if (line ~ /^Enabled:[[:space:]]*no/) enabled = "no"
                }
                if (enabled == "yes" && types ~ /[[:space:]]deb([[:space:]]|$)/ \
                    && uris ~ /\/debian\/?([[:space:]]|$)/ \
                    && (" " suites " ") ~ ("[[:space:]]" codename "[[:space:]]") \
                    && components ~ /[[:space:]]main([[:space:]]|$)/) {
                    print "Types: deb-src"
                    print uris
                    print suites
                    print components
                    if (signed != "") print signed
                    exit
                }
            }' "$f")
        if [ -n "$stanza" ]; then
            echo "$stanza"
            return 0
        fi
    done
    # No deb822 entry for the Debian archive: the archive's defaults.
    echo "Types: deb-src"
    echo "URIs: http://deb.debian.org/debian"
    echo "Suites: $codename"
    echo "Components: main"
    if [ -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
        echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    fi
}

updated=0
if ! has_deb_src; then
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    if [ -z "$codename" ]; then
        echo "puzzleforge: /etc/os-release has no VERSION_CODENAME; add a deb-src entry for Debian's main archive by hand" >&2
        exit 1
    fi
    echo "puzzleforge: enabling Debian's source packages ($codename) in $DEB_SRC_FILE" >&2
    {
        echo "# Added by puzzleforge's engines/human-games.sh (apt-get source gnuchess-book)."
        deb_src_stanza "$codename"
    } | $sudo tee "$DEB_SRC_FILE" >/dev/null
    $sudo apt-get update -qq >&2
    updated=1
fi
if [ "$updated" -eq 0 ] && ! apt-cache showsrc "$SOURCE_PACKAGE" >/dev/null 2>&1; then
    $sudo apt-get update -qq >&2
fi

# --- Download, check, re-encode, compress ------------------------------------

work=$(mktemp -d)
partial=""
cleanup() {
    rm -rf -- "$work"
    if [ -n "$partial" ]; then
        rm -f -- "$partial"
    fi
}
trap cleanup EXIT

# apt downloads as the unprivileged _apt user when it can write the folder.
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$work"
fi

echo "puzzleforge: downloading Debian's $SOURCE_PACKAGE source package" >&2
# Only the orig tarball is needed: when another file of the source package
# (the .debian.tar.xz) cannot be fetched, apt-get source fails after it has
# fetched the others, and the tarball's sha256 below decides.
if ! (cd "$work" && apt-get source --download-only -qq "$SOURCE_PACKAGE" >&2); then
    echo "puzzleforge: apt-get source $SOURCE_PACKAGE did not fetch every file; going on with the orig tarball if it came" >&2
fi

shopt -s nullglob
origs=("$work/${SOURCE_PACKAGE}"_*.orig.tar.gz)
shopt -u nullglob
if [ "${#origs[@]}" -ne 1 ]; then
    echo "puzzleforge: expected one ${SOURCE_PACKAGE}_*.orig.tar.gz from apt-get source, found ${#origs[@]} (is a deb-src entry for Debian's main archive enabled?)" >&2
    exit 1
fi
orig=${origs[0]}
orig_sha=$(sha256sum -- "$orig" | cut -d' ' -f1)
if [ "$orig_sha" != "$ORIG_SHA256" ]; then
    echo "puzzleforge: $(basename "$orig") has sha256 $orig_sha, expected $ORIG_SHA256" >&2
    exit 1
fi

member=$(tar -tzf "$orig" | grep -E "(^|/)${PGN_NAME//./\\.}\$" | head -n 1 || true)
if [ -z "$member" ]; then
    echo "puzzleforge: $(basename "$orig") holds no $PGN_NAME" >&2
    exit 1
fi
pgn=$work/master_games.pgn
tar -xzOf "$orig" -- "$member" | iconv -f LATIN1 -t UTF-8 >"$pgn"
pgn_sha=$(sha256sum -- "$pgn" | cut -d' ' -f1)
if [ "$pgn_sha" != "$PGN_SHA256" ]; then
    echo "puzzleforge: the UTF-8 text of $PGN_NAME has sha256 $pgn_sha, expected $PGN_SHA256" >&2
    exit 1
fi

dir=$(dirname -- "$out")
mkdir -p -- "$dir"
partial=$(mktemp "$dir/.$(basename -- "$out").XXXXXX")
echo "puzzleforge: compressing with zstd into $out" >&2
zstd -q -f -c -- "$pgn" >"$partial"
check=$(zstd -dc -- "$partial" | sha256sum | cut -d' ' -f1)
if [ "$check" != "$PGN_SHA256" ]; then
    echo "puzzleforge: the compressed file decompresses to sha256 $check, expected $PGN_SHA256" >&2
    exit 1
fi
chmod 0644 "$partial"
mv -f -- "$partial" "$out"
partial=""
report "$out" "$pgn_sha"

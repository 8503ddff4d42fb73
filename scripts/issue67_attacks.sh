#!/bin/bash
# Issue 67's attack list against one puzzleforge binary: one row per attack,
# "ok" when it behaves as the issue asks, "BROKEN" otherwise, then the count
# of broken rows. Needs Stockfish at /usr/games/stockfish and zstd.
#   scripts/issue67_attacks.sh            # target/release/puzzleforge
#   P=path/to/puzzleforge scripts/issue67_attacks.sh
W=$(cd "$(dirname "$0")/.." && pwd)
P=${P:-$W/target/release/puzzleforge}
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT; cd "$D"
broken=0
row() { # name expected_rc actual_rc extra_ok
  if [ "$2" = "$3" ] && [ "${4:-1}" = 1 ]; then echo "ok      $1 (exit $3)"; else echo "BROKEN  $1 (exit $3, wanted $2)"; broken=$((broken+1)); fi; }
has() { grep -q -- "$1" err && echo 1 || echo 0; }
head -30 $W/tests/data/lichess_db_puzzle_subset_1499.csv > v.csv; cp v.csv v.orig
same() { cmp -s v.csv v.orig && echo 1 || echo 0; }
$P tag v.csv -o out.csv --rejects v.csv 2>err; row "1 tag --rejects = input" 2 $? $(same)
$P rate v.csv -o out.csv --rejects v.csv 2>err; row "1 rate --rejects = input" 2 $? $(same)
$P ingest puzzles v.csv -o o.csv --rejects v.csv 2>err; row "1 ingest puzzles --rejects = input" 2 $? $(same)
$P tag v.csv -o s.csv --rejects ./s.csv 2>err; row "1 tag --rejects = -o (./)" 2 $? $(has "same file")
ln v.csv hard.csv; $P tag hard.csv -o out.csv --rejects v.csv 2>err; row "1 tag --rejects = input by hard link" 2 $? $(same)
# 2: release names
cat > p.toml <<T
[pipeline]
seed = 7
output_dir = "out"
release = "r1"
stages = ["ingest_puzzles", "ingest_games", "release", "export"]
[sources]
puzzles = ["$W/tests/data/lichess_db_puzzle_subset_1499.csv"]
games = ["$W/tests/data/lichess_game_export_ZlCTzfMG_eval_clk.pgn"]
[release]
train_per_cell = 1
test_per_cell = 1
[[release.bands]]
ratings = [400, 2000]
lengths = [1, 2]
[export]
formats = ["lichess"]
split = "test"
T
$P run --config p.toml --release releases.sha256 >/dev/null 2>err; row "2 run --release releases.sha256, no registry" 2 $? $([ ! -e out ] && echo 1 || echo 0)
$P run --config p.toml >/dev/null 2>&1
$P run --config p.toml --release releases.sha256 >/dev/null 2>err; row "2 run --release releases.sha256, registry there" 2 $? $([ -f out/releases.sha256 ] && echo 1 || echo 0)
for n in "" . .. ../x /abs .generate .releases.lock; do $P run --config p.toml --release "$n" >/dev/null 2>err; row "2 run --release '$n'" 2 $?; done
$P run --config p.toml --release r2 >/dev/null 2>&1; row "2 a later release in the folder" 0 $?
rm out/releases.sha256; mv out/r1 out/releases.sha256
$P run --config p.toml --release r3 >/dev/null 2>err; row "2 folder at the registry's name: explained before any stage" 2 $? $([ ! -e out/r3 ] && grep -q '`mv ' err && echo 1 || echo 0)
mv out/releases.sha256 out/releases-renamed; $P run --config p.toml --release r3 >/dev/null 2>err; row "2 after the mv it names, the next release runs" 0 $?
# 3, 4: human games
zstd -q -f $W/tests/data/master_games_sample_145.pgn -o g.pgn.zst; head -c 20000 g.pgn.zst > trunc.pgn.zst; (cat g.pgn.zst; echo junk) > garb.pgn.zst; mkdir dir; mkfifo fifo
sed -e "s|^human_games = .*|human_games = \"HG\"|; s|\"tests/|\"$W/tests/|g; s|\"models/|\"$W/models/|g; s|\"engines/|\"$W/engines/|g" $W/pipeline.toml > base.toml
sed -i "s|^output_dir = .*|output_dir = \"G\"|; s|^enabled = false|enabled = true|" base.toml
for hg in trunc.pgn.zst garb.pgn.zst dir fifo; do
  sed "s|\"HG\"|\"$D/$hg\"|" base.toml > h.toml
  timeout 120 $P run --config h.toml --tier hard >/dev/null 2>err; rc=$?; row "3/4 run --tier hard, human_games $hg" 2 $rc $(grep -q "human_games" err && ! grep -q "are missing" err && echo 1 || echo 0)
  timeout 120 $P run --config h.toml --tier hard --plan >/dev/null 2>err; rc=$?; row "3/4 run --plan --tier hard, human_games $hg" 2 $rc $(grep -q "human_games" err && ! grep -q "are missing" err && echo 1 || echo 0)
done
sed "s|\"HG\"|\"$D/absent.csv\"|" base.toml > h.toml
timeout 60 $P run --config h.toml --tier hard >/dev/null 2>err; row "4 missing puzzle file called one" 2 $? $(grep -q "puzzle file" err && ! grep -q "PGN of human games" err && echo 1 || echo 0)
timeout 60 $P mine dir -o m.csv >/dev/null 2>err; row "3 mine <dir>" 2 $?
timeout 60 $P tag dir -o t.csv >/dev/null 2>err; row "3 tag <dir>" 2 $?
timeout 60 $P tag trunc.pgn.zst -o t.csv >/dev/null 2>err; row "3 tag truncated .zst" 2 $?
timeout 60 $P mine trunc.pgn.zst -o t.csv >/dev/null 2>err; row "3 mine truncated .zst" 2 $?
cat > gen.toml <<T
[pipeline]
seed = 5
output_dir = "X"
release = "gen"
stages = ["selfplay", "mine", "rate", "verify", "release"]
[engine]
path = "/usr/games/stockfish"
workers = 1
[selfplay]
max_plies = 80
chaos_white_elo = [1350, 1400]
chaos_black_elo = [1350, 1400]
[mine]
nodes = 20000
shallow_depth = 5
max_solver_moves = 3
[rate]
model = "$W/models/rate_model.json"
[verify]
factor = 2
[release]
bin_width = 3000
train_per_cell = 2
test_per_cell = 1
min_puzzles = 0
[[release.bands]]
ratings = [0, 3000]
lengths = [1, 1]
mate = "no_mate"
[generate]
enabled = true
max_per_game = 100
batch_games = 2
max_games = 2
T
sed "s|^max_games = 2|max_games = 2\nexclude = [\"$D/dir\"]|" gen.toml > e.toml
$P run --config e.toml >/dev/null 2>err; row "3 generate.exclude = [<dir>]" 2 $? $(has "generate.exclude")
# 5
printf '\n[generate.selfplay]\nhuman = { plies = [1, 1], continue_plies = 0 }\n[sources]\nhuman_games = "%s"\n' $W/tests/data/master_games_sample_145.pgn | cat gen.toml - > n.toml
$P run --config n.toml >/dev/null 2>err; row "5 human plies [1,1], continue_plies 0: before any game" 2 $? $([ ! -e X/.generate ] && echo 1 || echo 0)
$P run --config gen.toml >/dev/null 2>&1; before=$(ls X/.generate/*/ | wc -l)
sed "s|^max_games = 2|max_games = 6|" gen.toml > big.toml
$P run --config big.toml >/dev/null 2>err; row "5 finished release, larger max_games: before any batch" 2 $? $([ "$(ls X/.generate/*/ | wc -l)" = "$before" ] && echo 1 || echo 0)
# 6
L=$(sed -n 2p v.csv); { head -4 v.csv; echo ",${L#*,}"; echo ",${L#*,}"; echo "wcc1,${L#*,},x"; } > ids.csv
for c in tag rate; do $P $c ids.csv -o i.csv --rejects i.rej >/dev/null 2>&1; row "6 $c: empty ids are missing_id, rejects keep ids" 0 $? $( [ "$(grep -c ',missing_id,' i.rej)" = 2 ] && grep -q '^7,wcc1,' i.rej && echo 1 || echo 0); done
$P ingest puzzles ids.csv -o i.csv --rejects i.rej >/dev/null 2>&1; row "6 ingest puzzles: the same" 0 $? $( [ "$(grep -c ',missing_id,' i.rej)" = 2 ] && grep -q '^7,wcc1,' i.rej && echo 1 || echo 0)
echo "broken rows: $broken"
[ "$broken" = 0 ]

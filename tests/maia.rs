//! The Maia-1 nets in Rust against lc0 itself, on the real committed weight
//! files: `tests/data/maia_reference.jsonl` holds lc0 0.32.1's probability of
//! every legal move under each of the nine nets for 200+ positions
//! (`scripts/maia_reference.py`), and puzzleforge must give the same within
//! 1e-3, from the same 112 input planes bit for bit (a digest of lc0's per
//! position). Also: lc0's move indices, the published sanity figures after 1.e4,
//! results that do not depend on batching or threads, and clear errors.

use puzzleforge::core::error::exit_code;
use puzzleforge::maia::{
    History, MAIA_RATINGS, MaiaNets, MoveProbabilities, move_policy_index, net_files,
};
use serde_json::Value;
use shakmaty::CastlingMode;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The nine nets, loaded once for all tests of this file.
fn nets() -> &'static MaiaNets {
    static NETS: OnceLock<MaiaNets> = OnceLock::new();
    NETS.get_or_init(|| MaiaNets::load(&repo("models/maia")).expect("the committed Maia nets"))
}

struct Reference {
    fen: String,
    moves: Vec<String>,
    tags: Vec<String>,
    /// sha256 of lc0's input planes (see the script's header).
    planes: String,
    /// uci -> (lc0 policy index, probability per net).
    legal: BTreeMap<String, (u16, Vec<f64>)>,
}

fn reference() -> Vec<Reference> {
    let text = std::fs::read_to_string(repo("tests/data/maia_reference.jsonl"))
        .expect("tests/data/maia_reference.jsonl");
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            let strings = |key: &str| -> Vec<String> {
                v[key]
                    .as_array()
                    .expect(key)
                    .iter()
                    .map(|s| s.as_str().expect("a string").to_string())
                    .collect()
            };
            let legal = v["legal"]
                .as_array()
                .expect("legal")
                .iter()
                .map(|m| {
                    let probabilities = m[2]
                        .as_array()
                        .expect("probabilities")
                        .iter()
                        .map(|p| p.as_f64().expect("a number") / 1e6)
                        .collect();
                    let index = m[1].as_u64().expect("an index") as u16;
                    (
                        m[0].as_str().expect("a move").to_string(),
                        (index, probabilities),
                    )
                })
                .collect();
            Reference {
                fen: v["fen"].as_str().expect("fen").to_string(),
                moves: strings("moves"),
                tags: strings("tags"),
                planes: v["planes"].as_str().expect("planes").to_string(),
                legal,
            }
        })
        .collect()
}

fn history(r: &Reference) -> History {
    History::from_fen_and_moves(&r.fen, r.moves.iter().map(String::as_str)).expect("a legal line")
}

fn uci_of(result: &MoveProbabilities, i: usize) -> String {
    result.moves()[i].to_uci(CastlingMode::Standard).to_string()
}

#[test]
fn probabilities_match_lc0_on_every_move_of_every_reference_position() {
    let references = reference();
    let histories: Vec<History> = references.iter().map(history).collect();
    let nets = nets();
    assert_eq!(nets.ratings(), MAIA_RATINGS);
    let results = nets.evaluate(&histories);
    let mut largest = 0.0f64;
    let mut worst = String::new();
    let mut tags: BTreeMap<&str, usize> = BTreeMap::new();
    for ((r, h), result) in references.iter().zip(&histories).zip(&results) {
        for tag in &r.tags {
            *tags.entry(tag).or_default() += 1;
        }
        let ours: BTreeMap<String, usize> = (0..result.moves().len())
            .map(|i| (uci_of(result, i), i))
            .collect();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            r.legal.keys().collect::<Vec<_>>(),
            "legal moves of {} after {:?}",
            r.fen,
            r.moves
        );
        for (uci, (index, lc0)) in &r.legal {
            let i = ours[uci];
            assert_eq!(
                move_policy_index(h.position(), &result.moves()[i]),
                Some(*index),
                "lc0's policy index of {uci} in {} after {:?}",
                r.fen,
                r.moves
            );
            for (net, (p, expected)) in result.of_move(i).zip(lc0).enumerate() {
                let diff = (f64::from(p) - expected).abs();
                if diff > largest {
                    largest = diff;
                    worst = format!(
                        "{uci} at {} in {} after {:?}: ours {p}, lc0 {expected}",
                        MAIA_RATINGS[net], r.fen, r.moves
                    );
                }
            }
        }
    }
    eprintln!(
        "{} positions {tags:?}: largest |p - lc0| = {largest:.2e} ({worst})",
        references.len()
    );
    assert!(references.len() >= 200, "{} positions", references.len());
    for tag in [
        "white",
        "black",
        "castling",
        "en_passant",
        "promotion",
        "history8",
    ] {
        assert!(
            tags.get(tag).copied().unwrap_or(0) >= 5,
            "too few {tag}: {tags:?}"
        );
    }
    // The reference is rounded to 1e-6.
    assert!(largest < 1e-3, "largest difference {largest}: {worst}");
}

/// The digest the reference script writes: masks in decimal joined by ",",
/// then ";" and the half-move clock as an integer.
fn planes_digest(history: &History) -> String {
    use sha2::Digest;
    let planes = history.planes();
    let masks: Vec<String> = planes.masks.iter().map(u64::to_string).collect();
    let text = format!("{};{}", masks.join(","), planes.rule50 as i64);
    format!("{:x}", sha2::Sha256::digest(text.as_bytes()))
}

#[test]
fn input_planes_are_lc0s_bit_for_bit() {
    let references = reference();
    let mut repeated = 0;
    for r in &references {
        let h = history(r);
        assert_eq!(
            planes_digest(&h),
            r.planes,
            "input planes of {} after {:?}",
            r.fen,
            r.moves
        );
        let masks = h.planes().masks;
        repeated += (0..8).filter(|slot| masks[slot * 13 + 12] != 0).count();
    }
    // The repeated positions the script makes light up lc0's repetition planes.
    assert!(repeated >= 4, "{repeated} repetition planes set");
}

#[test]
fn replies_to_e4_match_the_published_figures() {
    let after_e4 = History::from_fen_and_moves(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        ["e2e4"],
    )
    .expect("1.e4");
    let result = &nets().evaluate(&[after_e4])[0];
    let p = |uci: &str, rating: u32| {
        let i = result.index_of_uci(uci).expect("a legal reply");
        let net = MAIA_RATINGS
            .iter()
            .position(|&r| r == rating)
            .expect("a rating");
        f64::from(result.at_net(net)[i])
    };
    let close = |got: f64, want: f64| (got - want).abs() < 0.01;
    assert!(close(p("e7e5", 1100), 0.59), "1100 e5 {}", p("e7e5", 1100));
    assert!(close(p("c7c5", 1100), 0.11), "1100 c5 {}", p("c7c5", 1100));
    assert!(close(p("c7c5", 1900), 0.30), "1900 c5 {}", p("c7c5", 1900));
    assert!(close(p("e7e5", 1900), 0.26), "1900 e5 {}", p("e7e5", 1900));
    for net in 0..result.nets() {
        let total: f32 = result.at_net(net).iter().sum();
        assert!((total - 1.0).abs() < 1e-5, "net {net} sums to {total}");
    }
}

#[test]
fn results_are_the_same_bits_whatever_the_batching_and_threads() {
    let references = reference();
    let histories: Vec<History> = references.iter().take(24).map(history).collect();
    let nets = nets();
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
    };
    let together = pool(1).install(|| nets.evaluate(&histories));
    let one_by_one: Vec<MoveProbabilities> = pool(2).install(|| {
        histories
            .iter()
            .flat_map(|h| nets.evaluate(std::slice::from_ref(h)))
            .collect()
    });
    let mut reversed: Vec<History> = histories.clone();
    reversed.reverse();
    let mut backwards = pool(2).install(|| nets.evaluate(&reversed));
    backwards.reverse();
    let bits = |results: &[MoveProbabilities]| -> Vec<Vec<u32>> {
        results
            .iter()
            .map(|r| {
                (0..r.nets())
                    .flat_map(|n| r.at_net(n).iter().chain(r.pooled_at(n)))
                    .map(|v| v.to_bits())
                    .collect()
            })
            .collect()
    };
    assert_eq!(bits(&together), bits(&one_by_one));
    assert_eq!(bits(&together), bits(&backwards));
}

#[test]
fn a_subset_of_ratings_gives_the_same_probabilities() {
    let position = History::from_fen_and_moves(
        "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24",
        ["f2g3", "e6e7"],
    )
    .expect("a puzzle line");
    let one = MaiaNets::load_ratings(&repo("models/maia"), &[1500]).expect("maia-1500");
    assert_eq!(one.ratings(), vec![1500]);
    let alone = &one.evaluate(std::slice::from_ref(&position))[0];
    let all = &nets().evaluate(&[position])[0];
    assert_eq!(alone.at_net(0), all.at_net(4));
    assert_eq!(alone.pooled_at(0), all.pooled_at(4));
}

/// The pooled tower (the rating features' board summary): one mean per
/// filter of a ReLU output, so 64 values, none negative; positions that
/// differ read differently, and the nets read one position differently.
#[test]
fn the_pooled_tower_has_one_mean_per_filter_and_tells_positions_apart() {
    let histories: Vec<History> = reference().iter().take(2).map(history).collect();
    let results = nets().evaluate(&histories);
    for result in &results {
        for net in 0..result.nets() {
            let pooled = result.pooled_at(net);
            assert_eq!(pooled.len(), 64);
            assert!(pooled.iter().all(|v| *v >= 0.0 && v.is_finite()));
            assert!(pooled.iter().any(|v| *v > 0.0));
        }
    }
    assert_ne!(results[0].pooled_at(8), results[1].pooled_at(8));
    assert_ne!(results[0].pooled_at(0), results[0].pooled_at(8));
}

/// The one fingerprint of the nets (what store keys and manifests record):
/// each file's sha256 as `models/maia/SOURCE.md` lists it, in the order of
/// the ratings asked for; a missing file or a rating with no net is a
/// bad-input error naming the folder, the rating, the file and the reason.
#[test]
fn net_files_fingerprint_the_committed_nets_and_name_what_is_missing() {
    let source = std::fs::read_to_string(repo("models/maia/SOURCE.md")).expect("SOURCE.md");
    let listed = |file: &str| -> String {
        let row = source
            .lines()
            .find(|line| line.starts_with(&format!("| `{file}`")))
            .unwrap_or_else(|| panic!("{file} listed in SOURCE.md"));
        row.rsplit('`').nth(1).expect("a sha256 column").to_string()
    };
    let files = net_files(&repo("models/maia"), &[1900, 1100, 1500]).expect("the committed nets");
    assert_eq!(
        files.iter().map(|f| f.rating).collect::<Vec<_>>(),
        vec![1900, 1100, 1500]
    );
    for file in &files {
        assert_eq!(file.file, format!("maia-{}.pb.gz", file.rating));
        assert_eq!(file.sha256, listed(&file.file), "{}", file.file);
    }

    let dir = tempfile::tempdir().expect("a temp dir");
    let missing = net_files(dir.path(), &[1100, 1200]).expect_err("no files");
    let message = format!("{missing:#}");
    for named in [
        "rating 1100",
        "maia-1100.pb.gz",
        &dir.path().display().to_string(),
        "No such file",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }
    assert_eq!(exit_code(&missing), 2);

    let no_net = net_files(&repo("models/maia"), &[1550]).expect_err("no such rating");
    let message = format!("{no_net:#}");
    assert!(
        message.contains("rating 1550") && message.contains("1100, 1200, ..., 1900"),
        "{message}"
    );
    assert_eq!(exit_code(&no_net), 2);
}

#[test]
fn bad_weight_files_are_clear_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let missing = MaiaNets::load(dir.path()).err().expect("no files");
    assert!(
        format!("{missing:#}").contains("maia-1100.pb.gz"),
        "{missing:#}"
    );
    assert_eq!(exit_code(&missing), 2);

    let path = dir.path().join("maia-1100.pb.gz");
    std::fs::write(&path, b"not gzip at all").expect("write");
    let not_gzip = MaiaNets::load_ratings(dir.path(), &[1100])
        .err()
        .expect("not gzip");
    let message = format!("{not_gzip:#}");
    assert!(
        message.contains(&path.display().to_string()) && message.contains("gzip"),
        "{message}"
    );
    assert_eq!(exit_code(&not_gzip), 2);

    // A real file cut short: gzip fails on the truncated stream.
    let real = std::fs::read(repo("models/maia/maia-1100.pb.gz")).expect("the real file");
    std::fs::write(&path, &real[..real.len() / 2]).expect("write");
    let truncated = MaiaNets::load_ratings(dir.path(), &[1100])
        .err()
        .expect("truncated");
    assert!(
        format!("{truncated:#}").contains("maia-1100.pb.gz"),
        "{truncated:#}"
    );

    // Valid gzip around something that is not an lc0 net.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, b"\x0d\x01\x02\x03\x04hello").expect("gzip");
    std::fs::write(&path, gz.finish().expect("gzip")).expect("write");
    let not_lc0 = MaiaNets::load_ratings(dir.path(), &[1100])
        .err()
        .expect("not lc0");
    let message = format!("{not_lc0:#}");
    assert!(
        message.contains("maia-1100.pb.gz") && message.contains("lc0"),
        "{message}"
    );
    assert_eq!(exit_code(&not_lc0), 2);
}

#[test]
fn bad_lines_are_clear_errors() {
    let fen = "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24";
    let illegal = History::from_fen_and_moves(fen, ["f2g3", "e6e8q"]).expect_err("illegal");
    let message = format!("{illegal:#}");
    assert!(message.contains("move 2 (e6e8q)"), "{message}");
    assert_eq!(exit_code(&illegal), 2);
    let bad_fen = History::from_fen("not a fen").expect_err("bad fen");
    assert!(format!("{bad_fen:#}").contains("not a fen"));
    assert_eq!(exit_code(&bad_fen), 2);
}

#[test]
fn a_position_without_legal_moves_has_no_probabilities() {
    // The puzzle's last move mates.
    let mated = History::from_fen_and_moves(
        "2kr1b1r/p1p2pp1/2pqb3/7p/3N2n1/2NPB3/PPP2PPP/R2Q1RK1 w - - 2 13",
        ["d4e6", "d6h2"],
    )
    .expect("the puzzle 000rZ");
    let result = &nets().evaluate(&[mated])[0];
    assert!(result.moves().is_empty());
    assert_eq!(result.nets(), 9);
    assert!(result.at_net(8).is_empty());
}

//! Every command's flags over its config section through the one shared
//! rule (`core::settings::flags_over`): each flag names a key of the
//! section, a flag left out leaves its key as configured, and a flag given
//! replaces it.

use clap::{Args, Parser};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use puzzleforge::cli::eval::EvalFlags;
use puzzleforge::cli::groups::EngineFlags;
use puzzleforge::cli::ingest::GamesFlags;
use puzzleforge::cli::ingest::PuzzlesFlags;
use puzzleforge::cli::mine::MineFlags;
use puzzleforge::cli::rate::RateFlags;
use puzzleforge::cli::recheck::RecheckFlags;
use puzzleforge::cli::release::ReleaseFlags;
use puzzleforge::cli::rollout::RolloutFlags;
use puzzleforge::cli::selfplay::SelfplayFlags;
use puzzleforge::cli::verify::VerifyFlags;
use puzzleforge::core::settings::flags_over;
use puzzleforge::engine::settings::EngineConfig;
use puzzleforge::stages::eval::config::EvalConfig;
use puzzleforge::stages::export::Split;
use puzzleforge::stages::ingest_games::{IngestGamesConfig, TimeClass};
use puzzleforge::stages::ingest_puzzles::IngestPuzzlesConfig;
use puzzleforge::stages::mine::MineConfig;
use puzzleforge::stages::rate::RateConfig;
use puzzleforge::stages::release::cells::ReleaseConfig;
use puzzleforge::stages::selfplay::SelfplayConfig;
use puzzleforge::stages::verify::VerifyConfig;

#[derive(Parser)]
struct Command<T: Args> {
    #[command(flatten)]
    args: T,
}

fn parse<T: Args>(argv: &[&str]) -> T {
    let mut all = vec!["puzzleforge"];
    all.extend_from_slice(argv);
    Command::<T>::try_parse_from(all)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .args
}

/// Every switch of `value` turned over.
fn flip_switches(value: &mut Value) {
    match value {
        Value::Bool(on) => *on = !*on,
        Value::Array(items) => items.iter_mut().for_each(flip_switches),
        Value::Object(map) => map.values_mut().for_each(flip_switches),
        _ => {}
    }
}

/// A section unlike the defaults in every switch: flags left out must keep
/// each of them, whichever way it is set.
fn unusual<S: Serialize + DeserializeOwned + Default>() -> S {
    let mut value = serde_json::to_value(S::default()).unwrap();
    flip_switches(&mut value);
    serde_json::from_value(value).unwrap()
}

fn keeps_every_key<S, F>(flags: &F)
where
    S: Serialize + DeserializeOwned + Default + puzzleforge::core::bounds::Bounded,
    F: Serialize,
{
    let section: S = unusual();
    let merged = flags_over(&section, flags).unwrap();
    assert_eq!(
        serde_json::to_value(merged).unwrap(),
        serde_json::to_value(section).unwrap(),
        "{}",
        std::any::type_name::<F>()
    );
}

#[test]
fn flags_left_out_keep_every_key_of_each_section() {
    keeps_every_key::<IngestPuzzlesConfig, _>(
        &parse::<PuzzlesFlags>(&["in.csv", "-o", "o"])
            .args()
            .overrides,
    );
    keeps_every_key::<IngestGamesConfig, _>(
        &parse::<GamesFlags>(&["in.pgn", "-o", "o"]).args().overrides,
    );
    keeps_every_key::<SelfplayConfig, _>(
        &parse::<SelfplayFlags>(&["-o", "o.pgn"]).args().overrides,
    );
    keeps_every_key::<MineConfig, _>(&parse::<MineFlags>(&["in.pgn", "-o", "o"]).args().overrides);
    keeps_every_key::<VerifyConfig, _>(&parse::<VerifyFlags>(&["in.csv"]).args().overrides);
    keeps_every_key::<VerifyConfig, _>(&parse::<RecheckFlags>(&["release"]).args().overrides);
    keeps_every_key::<RateConfig, _>(&parse::<RateFlags>(&["in.csv", "-o", "o"]).args().overrides);
    keeps_every_key::<ReleaseConfig, _>(
        &parse::<ReleaseFlags>(&["pool.csv", "-o", "o"])
            .args()
            .overrides,
    );
    keeps_every_key::<EvalConfig, _>(&parse::<EvalFlags>(&["set", "-o", "o"]).args().overrides);
    keeps_every_key::<EvalConfig, _>(
        &parse::<RolloutFlags>(&["--model", "random", "-o", "o"])
            .args()
            .overrides,
    );
    keeps_every_key::<EngineConfig, _>(&parse::<EngineFlags>(&[]).args());
}

#[test]
fn a_flag_given_replaces_its_key_whatever_its_name() {
    let games = parse::<GamesFlags>(&[
        "in.pgn",
        "-o",
        "o",
        "--include-casual",
        "--include-bots",
        "--time-control",
        "blitz,rapid",
        "--from",
        "2026-01-01",
        "--min-elo",
        "1500",
    ])
    .args();
    let config = flags_over(&IngestGamesConfig::default(), &games.overrides).unwrap();
    assert!(!config.rated_only && !config.exclude_bots);
    assert_eq!(config.time_classes, [TimeClass::Blitz, TimeClass::Rapid]);
    assert_eq!(config.date_from.as_deref(), Some("2026-01-01"));
    assert_eq!(config.min_elo, Some(1500));
    assert_eq!(config.max_elo, None);

    let eval = parse::<EvalFlags>(&["set", "-o", "o", "--workers", "7", "--no-regret"]).args();
    let config = flags_over(&EvalConfig::default(), &eval.overrides).unwrap();
    assert_eq!(config.client.workers, 7);
    assert!(!config.regret.enabled);

    let engine = parse::<EngineFlags>(&["--engine", "sf", "--deadline", "5"]).args();
    let config = flags_over(&EngineConfig::default(), &engine).unwrap();
    assert_eq!(config.path.as_deref(), Some(std::path::Path::new("sf")));
    assert_eq!(config.deadline_secs, 5.0);

    let mine = parse::<MineFlags>(&["in.pgn", "-o", "o", "--exhaustive", "--nodes", "9"]).args();
    let config = flags_over(&MineConfig::default(), &mine.overrides).unwrap();
    assert!(config.exhaustive);
    assert_eq!(config.nodes, Some(9));
}

#[test]
fn second_engine_flags_set_the_nested_table_from_its_defaults_or_the_config() {
    use puzzleforge::stages::verify::SecondEngineConfig;
    let verify =
        parse::<VerifyFlags>(&["in.csv", "--second-engine", "e", "--second-depth", "7"]).args();
    let config = flags_over(&VerifyConfig::default(), &verify.overrides).unwrap();
    let second = config.second_engine.unwrap();
    assert_eq!(second.path, std::path::Path::new("e"));
    assert_eq!(second.depth, 7);
    assert_eq!(second.min_gap_cp, SecondEngineConfig::default().min_gap_cp);

    let configured = VerifyConfig {
        second_engine: Some(SecondEngineConfig {
            depth: 3,
            min_gap_cp: 50,
            ..SecondEngineConfig::default()
        }),
        ..VerifyConfig::default()
    };
    let verify =
        parse::<VerifyFlags>(&["in.csv", "--second-engine", "e", "--second-min-gap-cp", "9"])
            .args();
    let second = flags_over(&configured, &verify.overrides)
        .unwrap()
        .second_engine
        .unwrap();
    assert_eq!((second.depth, second.min_gap_cp), (3, 9));
    let left_out = flags_over(
        &configured,
        &parse::<VerifyFlags>(&["in.csv"]).args().overrides,
    )
    .unwrap();
    assert_eq!(left_out, configured);
}

#[test]
fn a_number_flag_must_be_finite() {
    for bad in ["nan", "inf"] {
        let parsed = Command::<EngineFlags>::try_parse_from(["puzzleforge", "--deadline", bad]);
        assert!(parsed.is_err(), "{bad}");
    }
}

/// `eval --split` takes the release split `export --split` names, typed:
/// train or test (eval asks one split), nothing else; `--retry-failed`,
/// which did nothing (failed calls are never cached), is gone.
#[test]
fn eval_takes_one_typed_split_and_no_retry_flag() {
    let args = parse::<EvalFlags>(&["set", "-o", "out"]).args();
    assert_eq!(args.split, Split::Test, "the test split by default");
    let args = parse::<EvalFlags>(&["set", "-o", "out", "--split", "train"]).args();
    assert_eq!(args.split, Split::Train);
    for refused in [
        &["set", "-o", "out", "--split", "both"][..],
        &["set", "-o", "out", "--split", "tset"],
        &["set", "-o", "out", "--retry-failed"],
    ] {
        let mut argv = vec!["puzzleforge"];
        argv.extend_from_slice(refused);
        assert!(
            Command::<EvalFlags>::try_parse_from(argv).is_err(),
            "{refused:?}"
        );
    }
    let rollout = ["puzzleforge", "--model", "random", "-o", "out"];
    assert!(Command::<RolloutFlags>::try_parse_from(rollout).is_ok());
    let parsed =
        Command::<RolloutFlags>::try_parse_from([&rollout[..], &["--retry-failed"]].concat());
    assert!(parsed.is_err(), "rollout has no --retry-failed either");
}

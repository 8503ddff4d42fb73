//! The UCI parser against real Stockfish 15.1 output (tests/data/uci/, captured
//! from /usr/games/stockfish) and a few hand-written lines for fields
//! Stockfish prints only in long searches.

use puzzleforge::engine::uci::{
    Bound, EngineLine, Info, Score, is_uci_move, parse_line, parse_option,
};

fn capture(name: &str) -> Vec<EngineLine> {
    let path = format!("{}/tests/data/uci/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            parse_line(line).unwrap_or_else(|e| panic!("{name} line {}: {e}", index + 1))
        })
        .collect()
}

/// A line's moves as text.
fn pv(info: &Info) -> Vec<String> {
    info.pv.iter().map(ToString::to_string).collect()
}

fn infos(lines: &[EngineLine]) -> Vec<&Info> {
    lines
        .iter()
        .filter_map(|line| match line {
            EngineLine::Info(info) => Some(info),
            _ => None,
        })
        .collect()
}

fn bestmove(lines: &[EngineLine]) -> (Option<String>, Option<String>) {
    lines
        .iter()
        .find_map(|line| match line {
            EngineLine::BestMove { best, ponder } => {
                Some((best.map(|m| m.to_string()), ponder.map(|m| m.to_string())))
            }
            _ => None,
        })
        .expect("a bestmove line")
}

#[test]
fn every_captured_line_parses_without_unknown_info_tokens() {
    for name in [
        "handshake.txt",
        "multipv2.txt",
        "multipv3_wdl.txt",
        "mate.txt",
        "mated_score.txt",
        "bestmove_none.txt",
        "bounds_wdl.txt",
    ] {
        let lines = capture(name);
        assert!(!lines.is_empty(), "{name}");
        for info in infos(&lines) {
            assert!(
                info.skipped.is_empty(),
                "{name}: skipped {:?}",
                info.skipped
            );
        }
    }
}

#[test]
fn handshake_has_id_options_and_uciok() {
    let lines = capture("handshake.txt");
    assert!(
        matches!(&lines[0], EngineLine::Unknown(banner) if banner.starts_with("Stockfish 15.1"))
    );
    assert!(lines.contains(&EngineLine::Id {
        key: "name".into(),
        value: "Stockfish 15.1".into()
    }));
    assert!(lines.contains(&EngineLine::Id {
        key: "author".into(),
        value: "the Stockfish developers (see AUTHORS file)".into()
    }));
    assert!(lines.contains(&EngineLine::Blank));
    assert_eq!(lines.last(), Some(&EngineLine::UciOk));
    let options: Vec<_> = lines
        .iter()
        .filter_map(|line| match line {
            EngineLine::Option(text) => Some(parse_option(text).expect("option parses")),
            _ => None,
        })
        .collect();
    assert_eq!(options.len(), 21);
    let hash = options.iter().find(|o| o.name == "Hash").expect("Hash");
    assert_eq!(
        (hash.kind.as_str(), hash.default.as_deref()),
        ("spin", Some("16"))
    );
    let log = options
        .iter()
        .find(|o| o.name == "Debug Log File")
        .expect("log file");
    assert_eq!(log.default.as_deref(), Some(""));
    let clear = options
        .iter()
        .find(|o| o.name == "Clear Hash")
        .expect("button");
    assert_eq!(
        (clear.kind.as_str(), clear.default.as_deref()),
        ("button", None)
    );
    let wdl = options
        .iter()
        .find(|o| o.name == "UCI_ShowWDL")
        .expect("wdl");
    assert_eq!(wdl.default.as_deref(), Some("false"));
}

#[test]
fn multipv2_lines() {
    let lines = capture("multipv2.txt");
    assert!(lines.contains(&EngineLine::ReadyOk));
    let infos = infos(&lines);
    // "info string NNUE evaluation using nn-ad9b42354671.nnue enabled"
    assert_eq!(
        infos[0].string.as_deref(),
        Some("NNUE evaluation using nn-ad9b42354671.nnue enabled")
    );
    let first = infos[1];
    assert_eq!(first.depth, Some(1));
    assert_eq!(first.multipv, Some(1));
    assert!(infos.iter().any(|info| info.multipv == Some(2)));
    assert!(infos.iter().all(|info| info.multipv.unwrap_or(1) <= 2));
    let last = infos.last().expect("info");
    assert_eq!(last.multipv, Some(2));
    assert!(last.nodes.is_some_and(|n| n >= 100_000));
    assert!(last.nps.is_some() && last.time_ms.is_some() && last.hashfull.is_some());
    assert_eq!(last.tbhits, Some(0));
    assert!(pv(last).iter().all(|mv| is_uci_move(mv)));
    assert!(bestmove(&lines).0.is_some());
}

#[test]
fn multipv3_with_wdl() {
    let lines = capture("multipv3_wdl.txt");
    let infos = infos(&lines);
    // info depth 1 seldepth 1 multipv 1 score cp 23 wdl 28 969 3 nodes 89 ... pv d2d4
    let first = infos
        .iter()
        .find(|info| info.depth == Some(1))
        .expect("depth 1");
    assert_eq!(first.score, Some(Score::Cp(23)));
    assert_eq!(first.wdl, Some([28, 969, 3]));
    assert_eq!(first.nodes, Some(89));
    assert_eq!(pv(first), ["d2d4"]);
    for rank in 1..=3 {
        assert!(infos.iter().any(|info| info.multipv == Some(rank)));
    }
    assert!(
        infos
            .iter()
            .filter(|info| info.score.is_some())
            .all(|info| info.wdl.is_some())
    );
    let deepest = infos.iter().filter_map(|info| info.depth).max();
    assert_eq!(deepest, Some(14));
}

#[test]
fn mate_scores() {
    let lines = capture("mate.txt");
    let infos = infos(&lines);
    // final: info depth 16 ... multipv 1 score mate 3 ... pv e6e1 d1e1 e7e1 g1f2 h3f1
    let mate = infos
        .iter()
        .rev()
        .find(|info| info.multipv == Some(1))
        .expect("multipv 1");
    assert_eq!(mate.score, Some(Score::Mate(3)));
    assert_eq!(pv(mate), ["e6e1", "d1e1", "e7e1", "g1f2", "h3f1"]);
    assert_eq!(Score::Mate(3).to_cp(), 9997);
    // The second line ends as an upper bound: the node limit stopped it.
    let second = infos.last().expect("last info");
    assert_eq!(second.multipv, Some(2));
    assert_eq!(
        (second.score, second.bound),
        (Some(Score::Cp(0)), Bound::Upper)
    );
    assert_eq!(bestmove(&lines), (Some("e6e1".into()), Some("d1e1".into())));

    let lines = capture("mated_score.txt");
    let all = self::infos(&lines);
    let last = all.last().expect("an info line");
    assert_eq!(last.score, Some(Score::Mate(-2)));
    assert_eq!(last.depth, Some(245));
    assert_eq!(Score::Mate(-2).to_cp(), -9998);
    assert_eq!(bestmove(&lines), (Some("d1e1".into()), Some("e7e1".into())));
}

#[test]
fn bestmove_none_from_a_mated_position() {
    let lines = capture("bestmove_none.txt");
    let infos = infos(&lines);
    // info depth 0 score mate 0
    let last = infos.last().expect("info");
    assert_eq!((last.depth, last.score), (Some(0), Some(Score::Mate(0))));
    assert!(last.pv.is_empty());
    assert_eq!(Score::Mate(0).to_cp(), -10000);
    assert_eq!(bestmove(&lines), (None, None));
}

#[test]
fn bounds_with_wdl() {
    let lines = capture("bounds_wdl.txt");
    let bounded: Vec<_> = infos(&lines)
        .into_iter()
        .filter(|info| info.bound != Bound::Exact)
        .collect();
    // info depth 20 ... score cp -21 wdl 1 986 13 lowerbound nodes 200047 ... pv d2d4
    let lower = bounded
        .iter()
        .find(|info| info.bound == Bound::Lower)
        .expect("lowerbound");
    assert_eq!(lower.score, Some(Score::Cp(-21)));
    assert_eq!(lower.wdl, Some([1, 986, 13]));
    assert_eq!(lower.nodes, Some(200047));
    assert_eq!(pv(lower), ["d2d4"]);
    // info depth 19 ... score cp 280 wdl 1000 0 0 upperbound ... pv b3e6 g5e7
    let upper = bounded
        .iter()
        .find(|info| info.bound == Bound::Upper)
        .expect("upperbound");
    assert_eq!((upper.depth, upper.score), (Some(19), Some(Score::Cp(280))));
    assert_eq!(upper.wdl, Some([1000, 0, 0]));
    assert_eq!(pv(upper), ["b3e6", "g5e7"]);
}

#[test]
fn unknown_info_tokens_are_skipped_one_by_one() {
    let line = "info depth 12 foo 7 multipv 2 score cp -15 upperbound nodes 4000 pv e2e4 e7e5";
    let EngineLine::Info(info) = parse_line(line).expect("parses") else {
        panic!("not info")
    };
    assert_eq!(info.skipped, ["foo", "7"]);
    assert_eq!(info.multipv, Some(2));
    assert_eq!(
        (info.score, info.bound),
        (Some(Score::Cp(-15)), Bound::Upper)
    );
    assert_eq!(info.nodes, Some(4000));
    assert_eq!(pv(&info), ["e2e4", "e7e5"]);
}

#[test]
fn long_search_fields_and_strings() {
    // Stockfish prints currmove lines only after three seconds of search.
    let EngineLine::Info(info) =
        parse_line("info depth 30 currmove e7e8q currmovenumber 3").expect("parses")
    else {
        panic!("not info")
    };
    assert_eq!(info.currmove.as_deref(), Some("e7e8q"));
    assert_eq!(info.currmovenumber, Some(3));
    let EngineLine::Info(info) =
        parse_line("info string depth 3 is not a field here").expect("parses")
    else {
        panic!("not info")
    };
    assert_eq!(info.depth, None);
    assert_eq!(info.string.as_deref(), Some("depth 3 is not a field here"));
    let EngineLine::Info(info) =
        parse_line("info depth 5 refutation d1h5 g6h5 currline 1 e2e4 e7e5 nodes 9")
            .expect("parses")
    else {
        panic!("not info")
    };
    assert_eq!((info.depth, info.nodes), (Some(5), Some(9)));
    assert!(info.skipped.is_empty());
}

#[test]
fn blank_and_odd_lines() {
    assert_eq!(parse_line(""), Ok(EngineLine::Blank));
    assert_eq!(parse_line("   \r"), Ok(EngineLine::Blank));
    assert_eq!(parse_line("readyok\r"), Ok(EngineLine::ReadyOk));
    assert_eq!(
        parse_line("bestmove 0000"),
        Ok(EngineLine::BestMove {
            best: None,
            ponder: None
        })
    );
    assert!(matches!(
        parse_line("No such option: Hashh"),
        Ok(EngineLine::Unknown(_))
    ));
}

/// A line Stockfish 15.1 printed during a node-limited MultiPV 2 search of
/// a self-play position: the second move failed low before it had a line.
#[test]
fn an_empty_pv_is_a_line_without_moves() {
    let line = "info depth 12 seldepth 14 multipv 2 score cp 16 upperbound time 2701 nodes 157502 nps 58000 tbhits 0 hashfull 18 pv ";
    let Ok(EngineLine::Info(info)) = parse_line(line) else {
        panic!("{line:?} should parse");
    };
    assert_eq!(info.multipv, Some(2));
    assert_eq!(info.score, Some(Score::Cp(16)));
    assert_eq!(info.bound, Bound::Upper);
    assert!(info.pv.is_empty());
    assert!(parse_line("info pv").is_ok());
}

#[test]
fn broken_lines_are_errors() {
    for line in [
        "info depth x",
        "info depth",
        "info score cp",
        "info score centipawns 5",
        "info wdl 1 2",
        "info pv e2e9",
        "info depth 3 pv garbage",
        "info depth 3 pv e2e4 garbage",
        "info depth 3 pv e2e4 e7e5 z9z9",
        "info depth ?? score cp garbage from the fault engine",
        "bestmove",
        "bestmove e2e9",
        "bestmove e2e4 ponderx e7e5",
        "bestmove e2e4 ponder",
    ] {
        assert!(parse_line(line).is_err(), "{line:?} should be an error");
    }
}

/// A pv reads as UCI moves that print back as the engine wrote them
/// (castling as the king's move, `e1g1`); a token in it that is not a
/// move is an error that quotes the line, never dropped.
#[test]
fn a_pv_is_moves_and_a_bad_token_names_the_line() {
    let line = "info depth 9 multipv 1 score cp 30 pv e1g1 e8c8 e7e8q";
    let Ok(EngineLine::Info(info)) = parse_line(line) else {
        panic!("{line:?} should parse");
    };
    assert_eq!(pv(&info), ["e1g1", "e8c8", "e7e8q"]);
    let bad = "info depth 9 score cp 30 pv e2e4 e7e5x";
    let error = parse_line(bad).expect_err("a bad pv token");
    assert_eq!(error.line, bad);
    assert!(error.to_string().contains("\"e7e5x\""), "{error}");
}

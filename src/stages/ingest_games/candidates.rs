//! A game's candidates: the filter on its tags, what a record needs of them,
//! and the moves whose server evaluations show a blunder, each written as a
//! puzzle record.
//!
//! Records follow the shared convention: `FEN` is the position before the
//! blunder, `Moves` holds the blunder alone (UCI), `GameUrl` points at the
//! blunder as Lichess puzzle URLs do (`https://lichess.org/ID#PLY`, with
//! `/black` when Black blundered). Extra columns: [`columns::INGEST_GAMES`].
//! `EvalBefore`/`EvalAfter` are from White's point of view, as in the PGN.
//!
//! [`columns::INGEST_GAMES`]: crate::chess::columns::INGEST_GAMES

use anyhow::Result;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Color, EnPassantMode, Position};

use super::config::{IngestGamesConfig, TimeClass};
use crate::chess::columns::Column;
use crate::chess::derive::parse_game_url;
use crate::chess::pgn::{GameRecord, Rejection, Tags};
use crate::chess::record::Puzzle;
use crate::chess::wincalc::Eval;
use crate::core::error::bad_input;

/// The `Source` value of every record this stage writes.
pub(crate) const SOURCE: &str = "lichess-game";

/// A calendar day, comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Day {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

impl Day {
    /// Reads `YYYY-MM-DD` or PGN's `YYYY.MM.DD`.
    pub fn parse(text: &str) -> Option<Day> {
        let text = text.trim();
        let separator = if text.contains('.') { '.' } else { '-' };
        let mut fields = text.split(separator);
        let year: u16 = fields.next()?.parse().ok()?;
        let month: u8 = fields.next()?.parse().ok()?;
        let day: u8 = fields.next()?.parse().ok()?;
        if fields.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        Some(Day { year, month, day })
    }
}

impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// The configuration checked and parsed once.
pub(super) struct GameFilter {
    rated_only: bool,
    time_classes: Vec<TimeClass>,
    min_elo: Option<u32>,
    max_elo: Option<u32>,
    date_from: Option<Day>,
    date_to: Option<Day>,
    exclude_bots: bool,
}

impl GameFilter {
    pub(super) fn new(config: &IngestGamesConfig) -> Result<Self> {
        let day = |value: &Option<String>, name: &str| -> Result<Option<Day>> {
            match value {
                None => Ok(None),
                Some(text) => Day::parse(text).map(Some).ok_or_else(|| {
                    bad_input(format!("{name} {text:?} is not a date (YYYY-MM-DD)"))
                }),
            }
        };
        let date_from = day(&config.date_from, "date_from")?;
        let date_to = day(&config.date_to, "date_to")?;
        if let (Some(from), Some(to)) = (date_from, date_to)
            && from > to
        {
            return Err(bad_input(format!("date_from {from} is after date_to {to}")));
        }
        if let (Some(min), Some(max)) = (config.min_elo, config.max_elo)
            && min > max
        {
            return Err(bad_input(format!("min_elo {min} is above max_elo {max}")));
        }
        if config.time_classes.is_empty() {
            return Err(bad_input("time_classes is empty: no game could be kept"));
        }
        Ok(Self {
            rated_only: config.rated_only,
            time_classes: config.time_classes.clone(),
            min_elo: config.min_elo,
            max_elo: config.max_elo,
            date_from,
            date_to,
            exclude_bots: config.exclude_bots,
        })
    }

    pub(super) fn check(&self, tags: &Tags) -> Result<(), Rejection> {
        if !tags
            .get("Variant")
            .is_none_or(|v| v.trim().eq_ignore_ascii_case("standard"))
        {
            return Err(Rejection::Filtered("variant"));
        }
        if self.rated_only && !tags.get("Event").is_some_and(|e| e.contains("Rated")) {
            return Err(Rejection::Filtered("unrated"));
        }
        if self.exclude_bots
            && ["WhiteTitle", "BlackTitle"]
                .iter()
                .any(|t| tags.get(t).is_some_and(|v| v.trim() == "BOT"))
        {
            return Err(Rejection::Filtered("bot"));
        }
        let meta = GameMeta::from_tags(tags)?;
        if !self.time_classes.contains(&meta.time_class) {
            return Err(Rejection::Filtered("time_control"));
        }
        let elos = [meta.white_elo, meta.black_elo];
        if self
            .min_elo
            .is_some_and(|min| elos.iter().any(|&e| e < min))
            || self
                .max_elo
                .is_some_and(|max| elos.iter().any(|&e| e > max))
        {
            return Err(Rejection::Filtered("elo"));
        }
        if self.date_from.is_some_and(|from| meta.date < from)
            || self.date_to.is_some_and(|to| meta.date > to)
        {
            return Err(Rejection::Filtered("date"));
        }
        Ok(())
    }
}

/// What a candidate record needs from a game's tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GameMeta {
    pub game_id: String,
    pub white_elo: u32,
    pub black_elo: u32,
    pub date: Day,
    pub time_control: String,
    pub time_class: TimeClass,
}

impl GameMeta {
    /// Reads the tags every Lichess dump game has; a missing or malformed
    /// one rejects the game as `bad_tag`.
    pub(crate) fn from_tags(tags: &Tags) -> Result<GameMeta, Rejection> {
        let bad = |detail: String| Rejection::Invalid("bad_tag", detail);
        let site = tags
            .get("Site")
            .ok_or_else(|| bad("no Site tag".to_string()))?;
        let (game_id, _) = parse_game_url(site.trim())
            .ok_or_else(|| bad(format!("Site {site:?} is not a Lichess game URL")))?;
        let elo = |name: &str| -> Result<u32, Rejection> {
            let text = tags
                .get(name)
                .ok_or_else(|| bad(format!("no {name} tag")))?;
            text.trim()
                .parse()
                .map_err(|_| bad(format!("{name} {text:?} is not a rating")))
        };
        let white_elo = elo("WhiteElo")?;
        let black_elo = elo("BlackElo")?;
        let date_text = tags
            .get("UTCDate")
            .or_else(|| tags.get("Date"))
            .ok_or_else(|| bad("no UTCDate tag".to_string()))?;
        let date = Day::parse(date_text)
            .ok_or_else(|| bad(format!("UTCDate {date_text:?} is not a date")))?;
        let time_control = tags
            .get("TimeControl")
            .ok_or_else(|| bad("no TimeControl tag".to_string()))?
            .trim()
            .to_string();
        let time_class = TimeClass::of_time_control(&time_control)
            .ok_or_else(|| bad(format!("TimeControl {time_control:?} is malformed")))?;
        Ok(GameMeta {
            game_id,
            white_elo,
            black_elo,
            date,
            time_control,
            time_class,
        })
    }
}

/// The candidate thresholds, from the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    pub min_advantage_cp: i32,
    pub mate_soon: u32,
    pub min_win_chance_gain: f64,
}

impl From<&IngestGamesConfig> for Thresholds {
    fn from(config: &IngestGamesConfig) -> Self {
        Self {
            min_advantage_cp: config.min_advantage_cp,
            mate_soon: config.mate_soon,
            min_win_chance_gain: config.min_win_chance_gain,
        }
    }
}

/// How a position after a move qualifies as a candidate, if it does:
/// `Some("mate")` or `Some("advantage")`. `before` and `after` are the
/// evaluations around the move, from White's point of view; `to_move` is
/// the side to move after it (the one who may punish).
pub(crate) fn candidate_kind(
    before: Eval,
    after: Eval,
    to_move: Color,
    thresholds: &Thresholds,
) -> Option<&'static str> {
    let before = before.for_side(to_move);
    let after = after.for_side(to_move);
    let winning = match after {
        Eval::Cp(cp) => cp >= thresholds.min_advantage_cp,
        Eval::Mate(moves) => moves > 0,
    };
    if !winning || after.win_chance() <= before.win_chance() + thresholds.min_win_chance_gain {
        return None;
    }
    match after {
        Eval::Mate(moves) if u32::try_from(moves).is_ok_and(|m| m < thresholds.mate_soon) => {
            Some("mate")
        }
        _ => Some("advantage"),
    }
}

/// The candidate records of one game. With `all_positions`, every move
/// whose resulting position is not over becomes a candidate, evaluated or
/// not; otherwise only the moves that pass [`candidate_kind`].
pub(crate) fn game_candidates(
    game: &GameRecord,
    meta: &GameMeta,
    thresholds: &Thresholds,
    all_positions: bool,
) -> Vec<Puzzle> {
    // Judge every ply from the evaluations alone first: most analysed games
    // hold no candidate, and those need no replay.
    let first_mover = game.initial.turn();
    let mut kinds: Vec<Option<&'static str>> = Vec::with_capacity(game.moves.len());
    let mut eval_before: Option<Eval> = None;
    for (index, played) in game.moves.iter().enumerate() {
        let mover = if index % 2 == 0 {
            first_mover
        } else {
            first_mover.other()
        };
        kinds.push(match (eval_before, played.eval) {
            (Some(before), Some(after)) => candidate_kind(before, after, mover.other(), thresholds),
            _ => None,
        });
        eval_before = played.eval;
    }
    let mut found = Vec::new();
    let last_ply = if all_positions {
        game.moves.len()
    } else {
        match kinds.iter().rposition(Option::is_some) {
            Some(index) => index + 1,
            None => return found,
        }
    };
    for ply in game.plies().take(last_ply) {
        let index = ply.ply as usize - 1;
        let kind = kinds[index];
        if kind.is_none() && !all_positions {
            continue;
        }
        let previous_eval = index.checked_sub(1).and_then(|i| game.moves[i].eval);
        let eval_after = ply.played.eval;
        let after = ply.after();
        if after.legal_moves().is_empty() {
            continue;
        }
        let eval_text = |eval: Option<Eval>| eval.map(|e| e.to_string()).unwrap_or_default();
        let color_path = if ply.mover() == Color::Black {
            "/black"
        } else {
            ""
        };
        let mut puzzle = Puzzle {
            id: format!("{}_{}", meta.game_id, ply.ply),
            fen: Fen::from_position(&ply.before, EnPassantMode::Legal),
            moves: vec![ply.played.mv.to_uci(CastlingMode::Standard)],
            game_url: format!(
                "https://lichess.org/{}{color_path}#{}",
                meta.game_id, ply.ply
            ),
            ..Puzzle::default()
        };
        puzzle.set(Column::Source, SOURCE);
        puzzle.set(Column::GameId, meta.game_id.clone());
        puzzle.set(Column::Ply, ply.ply.to_string());
        puzzle.set(Column::WhiteElo, meta.white_elo.to_string());
        puzzle.set(Column::BlackElo, meta.black_elo.to_string());
        puzzle.set(Column::Date, meta.date.to_string());
        puzzle.set(
            Column::FenAfter,
            Fen::from_position(&after, EnPassantMode::Legal).to_string(),
        );
        puzzle.set(Column::EvalBefore, eval_text(previous_eval));
        puzzle.set(Column::EvalAfter, eval_text(eval_after));
        puzzle.set(Column::TimeControl, meta.time_control.clone());
        puzzle.set(Column::Kind, kind.unwrap_or(""));
        found.push(puzzle);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_kinds() {
        let t = Thresholds::from(&IngestGamesConfig::default());
        // White blunders from -1.38 into a mate in 6 for Black.
        assert_eq!(
            candidate_kind(Eval::Cp(-138), Eval::Mate(-6), Color::Black, &t),
            Some("mate")
        );
        // A mistake that leaves Black only +1.25 is no candidate.
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Cp(-125), Color::Black, &t),
            None
        );
        // Already winning before: the gain is too small.
        assert_eq!(
            candidate_kind(Eval::Cp(-306), Eval::Cp(-575), Color::Black, &t),
            None
        );
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Cp(600), Color::White, &t),
            Some("advantage")
        );
        assert_eq!(
            candidate_kind(Eval::Cp(0), Eval::Mate(20), Color::White, &t),
            Some("advantage")
        );
    }

    #[test]
    fn config_rejects_unknown_fields_and_bad_dates() {
        let parsed: Result<IngestGamesConfig, _> = toml::from_str("min_elo = 1500\nbogus = 1");
        assert!(parsed.is_err());
        let config: IngestGamesConfig =
            toml::from_str("time_classes = [\"blitz\", \"ultraBullet\"]").unwrap();
        assert_eq!(
            config.time_classes,
            vec![TimeClass::Blitz, TimeClass::UltraBullet]
        );
        let bad = IngestGamesConfig {
            date_from: Some("2021-13-01".into()),
            ..IngestGamesConfig::default()
        };
        assert!(GameFilter::new(&bad).is_err());
    }
}

//! The `[ingest.games]` settings and the stage's arguments: the time-control
//! classes, the Elo and date filters and the thresholds, each checked
//! against its bounds. Apart so a config can be read and checked without
//! reading a game.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use crate::core::bounds::{Bound, Bounded};
use crate::core::settings::{switch_off, switch_on};

/// Lichess's time-control classes, by estimated game duration.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum TimeClass {
    #[value(name = "ultraBullet")]
    UltraBullet,
    #[value(name = "bullet")]
    Bullet,
    #[value(name = "blitz")]
    Blitz,
    #[value(name = "rapid")]
    Rapid,
    #[value(name = "classical")]
    Classical,
    #[value(name = "correspondence")]
    Correspondence,
}

impl TimeClass {
    pub(crate) const ALL: [TimeClass; 6] = [
        TimeClass::UltraBullet,
        TimeClass::Bullet,
        TimeClass::Blitz,
        TimeClass::Rapid,
        TimeClass::Classical,
        TimeClass::Correspondence,
    ];

    /// The class of a PGN `TimeControl` value (`300+3`, `-`), from the
    /// estimated duration base + 40 x increment as Lichess computes it.
    pub(crate) fn of_time_control(text: &str) -> Option<TimeClass> {
        let text = text.trim();
        if text == "-" {
            return Some(TimeClass::Correspondence);
        }
        let (base, increment) = text.split_once('+')?;
        let base: u64 = base.parse().ok()?;
        let increment: u64 = increment.parse().ok()?;
        let estimate = base.checked_add(increment.checked_mul(40)?)?;
        Some(match estimate {
            0..30 => TimeClass::UltraBullet,
            30..180 => TimeClass::Bullet,
            180..480 => TimeClass::Blitz,
            480..1500 => TimeClass::Rapid,
            _ => TimeClass::Classical,
        })
    }
}

/// The `[ingest_games]` section of the pipeline configuration; flags of
/// `puzzleforge ingest games` override it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IngestGamesConfig {
    /// Keep only rated games (`Event` contains "Rated").
    pub rated_only: bool,
    /// Time-control classes to keep.
    pub time_classes: Vec<TimeClass>,
    /// Both players rated at least this much.
    pub min_elo: Option<u32>,
    /// Both players rated at most this much.
    pub max_elo: Option<u32>,
    /// First `UTCDate` kept, `YYYY-MM-DD`.
    pub date_from: Option<String>,
    /// Last `UTCDate` kept, `YYYY-MM-DD`.
    pub date_to: Option<String>,
    /// Drop games with a BOT account on either side.
    pub exclude_bots: bool,
    /// Games without `[%eval]`: write every position as a candidate instead
    /// of skipping the game.
    pub all_positions: bool,
    /// The side to move must stand at least this well after the blunder
    /// (centipawns), unless it mates.
    pub min_advantage_cp: i32,
    /// Mates in fewer moves than this are marked `Kind=mate`, others
    /// `advantage` (lichess-puzzler's `mate_soon`).
    pub mate_soon: u32,
    /// The blunder must raise the opponent's winning chances (-1..1 scale)
    /// by more than this.
    pub min_win_chance_gain: f64,
}

impl Bounded for IngestGamesConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("min_elo", 0.0, 4000.0, "a player rating"),
        Bound::within("max_elo", 0.0, 4000.0, "a player rating"),
        Bound::within(
            "min_advantage_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within("mate_soon", 1.0, 100.0, "moves to mate"),
        Bound::within(
            "min_win_chance_gain",
            0.0,
            2.0,
            "winning chances run from -1 to 1",
        ),
    ];
}

impl Default for IngestGamesConfig {
    fn default() -> Self {
        Self {
            rated_only: true,
            time_classes: TimeClass::ALL.to_vec(),
            min_elo: None,
            max_elo: None,
            date_from: None,
            date_to: None,
            exclude_bots: true,
            all_positions: false,
            min_advantage_cp: 200,
            mate_soon: 15,
            min_win_chance_gain: 0.6,
        }
    }
}

/// `puzzleforge ingest games`'s flags (their help: `cli::ingest`).
#[derive(Debug, Clone)]
pub struct GamesArgs {
    pub input: PathBuf,
    pub output: PathBuf,
    /// The flags laid over `[ingest.games]` by
    /// [`crate::core::settings::flags_over`].
    pub overrides: GamesOverrides,
}

/// `ingest games`' filter flags (their help: `cli::ingest`), each over the
/// `[ingest.games]` key its serde name gives.
#[derive(Default, Debug, Clone, Serialize)]
pub struct GamesOverrides {
    #[serde(rename = "rated_only", serialize_with = "switch_off")]
    pub include_casual: bool,
    #[serde(rename = "time_classes")]
    pub time_control: Vec<TimeClass>,
    pub min_elo: Option<u32>,
    pub max_elo: Option<u32>,
    #[serde(rename = "date_from")]
    pub from: Option<String>,
    #[serde(rename = "date_to")]
    pub to: Option<String>,
    #[serde(rename = "exclude_bots", serialize_with = "switch_off")]
    pub include_bots: bool,
    #[serde(serialize_with = "switch_on")]
    pub all_positions: bool,
    pub min_advantage_cp: Option<i32>,
    pub mate_soon: Option<u32>,
    pub min_win_chance_gain: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_classes_follow_lichess_estimates() {
        let class = |tc: &str| TimeClass::of_time_control(tc);
        assert_eq!(class("15+0"), Some(TimeClass::UltraBullet));
        assert_eq!(class("0+1"), Some(TimeClass::Bullet));
        assert_eq!(class("60+0"), Some(TimeClass::Bullet));
        assert_eq!(class("180+0"), Some(TimeClass::Blitz));
        assert_eq!(class("300+3"), Some(TimeClass::Blitz));
        assert_eq!(class("600+0"), Some(TimeClass::Rapid));
        assert_eq!(class("900+10"), Some(TimeClass::Rapid));
        assert_eq!(class("1800+0"), Some(TimeClass::Classical));
        assert_eq!(class("-"), Some(TimeClass::Correspondence));
        assert_eq!(class("300"), None);
        assert_eq!(class("a+b"), None);
    }
}

//! The human ladder: the nine Maia-1 nets (Lichess ratings 1100-1900) play
//! the run's positions, each its most likely move, and the report sets the
//! evaluated player beside them: their accuracies by rating bin, a
//! human-equivalent rating (where the player's puzzle accuracy falls among
//! the nine) and a picture.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::human::Policies;
use super::metrics::{self, Breakdowns, CellMetrics};
use super::players::Answer;
use super::prompt::BASELINE_TEMPLATE;
use super::prompt::Template;
use super::puzzle_rating::{self, Attempt, PuzzleRating};
use super::task::{Job, PositionTask};
use crate::chess::record::Puzzle;
use crate::core::stats::{isotonic, pct};
use crate::maia::NetFile;
use shakmaty::uci::UciMove;

/// How the ladder's nets choose, and what the rating means, for the report.
pub(crate) const HUMAN_EQUIVALENT_NOTE: &str = "Each Maia net plays its most likely move (a \
typical player of its rating; deterministic). The human-equivalent rating is where the player's \
overall puzzle accuracy falls on the ladder: the nine nets' overall puzzle accuracies, made \
non-decreasing in rating where a lower net scores above a higher one (isotonic regression: \
neighbours pooled to their mean), joined by straight lines between neighbouring ratings and read \
backwards. Below maia:1100's accuracy it reads \"below 1100\", above maia:1900's \"above 1900\"; \
where the fitted ladder is flat at the player's accuracy, the middle of the flat stretch. The \
interval reads the player's accuracy ± one standard error the same way. It places the player \
among the nets on these puzzles: it is not a Lichess rating.";

/// One net's results on the run's positions.
#[derive(Clone, Debug)]
pub(crate) struct LadderPlayer {
    pub rating: u32,
    pub overall: CellMetrics,
    pub by_rating_bin: BTreeMap<String, CellMetrics>,
    /// The puzzle rating of its most likely moves' results.
    pub puzzle_rating: Option<PuzzleRating>,
    /// Its expected puzzle accuracy: the mean over the puzzles of the
    /// product of the probabilities it puts on each solver position's
    /// right moves (temperature 1), a typical player of its rating rather
    /// than its single most likely move.
    pub expected_solve_rate: f64,
    /// The puzzle rating of those expected solves.
    pub expected_rating: Option<PuzzleRating>,
}

/// The nine nets on the run's positions.
#[derive(Clone, Debug)]
pub(crate) struct Ladder {
    pub models_dir: String,
    pub nets: Vec<NetFile>,
    pub players: Vec<LadderPlayer>,
}

impl LadderPlayer {
    pub fn name(&self) -> String {
        format!("maia:{}", self.rating)
    }
}

/// Every net's most likely move on every task, judged as the player's
/// answers are, and its figures overall and by rating bin.
pub(crate) fn ladder(
    policies: &Policies,
    models_dir: &Path,
    puzzles: &[Puzzle],
    tasks: &[PositionTask],
    rating_bin_width: i32,
) -> Ladder {
    let template = Template::File {
        name: BASELINE_TEMPLATE.into(),
        text: String::new(),
    };
    let players = policies
        .nets
        .iter()
        .enumerate()
        .map(|(net, file)| {
            let records: Vec<_> = tasks
                .iter()
                .enumerate()
                .map(|(i, task)| {
                    let answer = Answer {
                        reply: policies.positions[i].top_move(net).map(str::to_string),
                        ..Default::default()
                    };
                    let job = Job {
                        template: 0,
                        repeat: 0,
                        task: i,
                    };
                    super::scoring::record_of(puzzles, task, &template, &job, &answer)
                })
                .collect();
            let all: Vec<_> = records.iter().collect();
            let chances = solve_chances(policies, net, puzzles, tasks);
            let expected: Vec<Attempt> = chances
                .iter()
                .filter_map(|(index, chance)| {
                    let puzzle = &puzzles[*index];
                    Some(Attempt {
                        rating: f64::from(puzzle.rating?),
                        deviation: puzzle_rating::deviation_of(puzzle),
                        score: *chance,
                    })
                })
                .collect();
            LadderPlayer {
                rating: file.rating,
                puzzle_rating: puzzle_rating::report(&records, puzzles).map(|r| r.overall),
                expected_solve_rate: chances.iter().map(|(_, c)| c).sum::<f64>()
                    / chances.len().max(1) as f64,
                expected_rating: PuzzleRating::fit(&expected),
                overall: metrics::cell_metrics(&all),
                by_rating_bin: metrics::group(&records, "rating_bin", rating_bin_width)
                    .into_iter()
                    .map(|(cell, rs)| (cell, metrics::cell_metrics(&rs)))
                    .collect(),
            }
        })
        .collect();
    Ladder {
        models_dir: models_dir.display().to_string(),
        nets: policies.nets.clone(),
        players,
    }
}

/// Net `net`'s chance of solving each puzzle of the run: the product over
/// the puzzle's solver positions of the probability its policy puts on the
/// moves judged right there (the line's move and every mating move). By
/// puzzle index, in index order.
fn solve_chances(
    policies: &Policies,
    net: usize,
    puzzles: &[Puzzle],
    tasks: &[PositionTask],
) -> Vec<(usize, f64)> {
    let mut chances: BTreeMap<usize, f64> = BTreeMap::new();
    for (task, policy) in tasks.iter().zip(&policies.positions) {
        if task.puzzle_index >= puzzles.len() {
            continue;
        }
        let right: f64 = policy
            .moves
            .iter()
            .zip(&policy.probabilities[net])
            .filter(|(uci, _)| {
                uci.parse::<UciMove>()
                    .is_ok_and(|uci| super::task::is_correct(task, &uci))
            })
            .map(|(_, p)| f64::from(*p))
            .sum();
        *chances.entry(task.puzzle_index).or_insert(1.0) *= right.clamp(0.0, 1.0);
    }
    chances.into_iter().collect()
}

/// Where an accuracy falls on the fitted ladder.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Placement {
    Below,
    Above,
    /// The ratings where the fitted ladder equals the accuracy: one point
    /// where it rises, a stretch where it is flat.
    Within {
        low: f64,
        high: f64,
    },
}

impl Placement {
    /// The rating read: the middle of the stretch.
    pub fn rating(&self) -> Option<f64> {
        match self {
            Placement::Within { low, high } => Some((low + high) / 2.0),
            _ => None,
        }
    }

    /// `1534`, `below 1100`, `above 1900`; on a ladder that does not
    /// separate the ratings (`separates` false), `among 1100-1900 (flat
    /// ladder)` instead of a number that would mean nothing.
    pub fn label(&self, ratings: &[f64], separates: bool) -> String {
        let (lowest, highest) = (ratings[0], ratings[ratings.len() - 1]);
        match self {
            Placement::Below => format!("below {lowest}"),
            Placement::Above => format!("above {highest}"),
            Placement::Within { .. } if !separates => {
                format!("among {lowest}-{highest} (flat ladder)")
            }
            Placement::Within { .. } => format!("{:.0}", self.rating().unwrap_or_default()),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Placement::Below => "below",
            Placement::Above => "above",
            Placement::Within { .. } => "within",
        }
    }
}

/// Where `accuracy` falls on the non-decreasing curve through
/// (`ratings[i]`, `fitted[i]`), straight between neighbours.
pub(crate) fn placement(ratings: &[f64], fitted: &[f64], accuracy: f64) -> Placement {
    let n = fitted.len();
    if accuracy < fitted[0] {
        return Placement::Below;
    }
    if accuracy > fitted[n - 1] {
        return Placement::Above;
    }
    let between = |i: usize| {
        // fitted[i] <= accuracy <= fitted[i + 1], fitted[i] < fitted[i + 1].
        ratings[i]
            + (accuracy - fitted[i]) / (fitted[i + 1] - fitted[i]) * (ratings[i + 1] - ratings[i])
    };
    // The first rating where the curve reaches the accuracy, and the last
    // where it has not passed it.
    let first = fitted.iter().position(|&f| f >= accuracy).unwrap_or(n - 1);
    let low = if first == 0 {
        ratings[0]
    } else {
        between(first - 1)
    };
    let last = fitted.iter().rposition(|&f| f <= accuracy).unwrap_or(0);
    let high = if last == n - 1 {
        ratings[n - 1]
    } else {
        between(last)
    };
    Placement::Within { low, high }
}

/// The player's place on the ladder, as report.json gives it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HumanEquivalent {
    /// The player's overall puzzle accuracy, and its standard error.
    pub puzzle_accuracy: f64,
    pub puzzle_accuracy_se: f64,
    /// `within`, `below` (maia:1100's accuracy) or `above` (maia:1900's).
    pub placement: &'static str,
    /// The rating read (rounded to 1); null below or above the ladder, or
    /// on a ladder that does not separate the ratings.
    pub rating: Option<f64>,
    /// `1534`, `below 1100`, `above 1900`, or `among 1100-1900 (flat
    /// ladder)`.
    pub label: String,
    /// The ratings where the fitted ladder equals the accuracy (two equal
    /// numbers unless it is flat there; all of them on a ladder that does
    /// not separate the ratings); null below or above.
    pub span: Option<[f64; 2]>,
    /// The accuracy ± one standard error read the same way.
    pub interval_1se: [String; 2],
    /// The ladder the rating is read on: each net's overall puzzle
    /// accuracy after the isotonic fit, lowest rating first.
    pub fitted_ladder: Vec<f64>,
    /// How much the fitted ladder rises from the lowest net to the highest.
    pub ladder_rise: f64,
    /// The rise it needs to separate the ratings: two standard errors of
    /// the difference of two accuracies on these puzzles, `2 sqrt(2 p (1 -
    /// p) / n)` at the nets' mean accuracy `p`.
    pub ladder_rise_needed: f64,
    /// Whether it rises that much. When not, no rating is read: the player
    /// is below or above the ladder only outside the nine nets' own
    /// accuracies, else among them.
    pub ladder_separates: bool,
    pub method: &'static str,
}

/// How the nets' expected solve rates climb: the rise from the lowest net
/// to the highest against the two standard errors of a difference that
/// separating them needs.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ExpectedLadder {
    pub expected_solve_rates: Vec<f64>,
    pub rise: f64,
    pub rise_needed: f64,
    pub separates: bool,
}

pub(crate) fn expected_ladder(ladder: &Ladder) -> ExpectedLadder {
    let rates: Vec<f64> = ladder
        .players
        .iter()
        .map(|p| p.expected_solve_rate)
        .collect();
    let fitted = isotonic(&rates);
    let rise = fitted[fitted.len() - 1] - fitted[0];
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let puzzles = ladder.players[0].overall.puzzles.max(1) as f64;
    let needed = 2.0 * (2.0 * mean * (1.0 - mean) / puzzles).sqrt();
    ExpectedLadder {
        expected_solve_rates: rates,
        rise,
        rise_needed: needed,
        separates: rise > 0.0 && rise >= needed,
    }
}

/// Where a player with `overall` figures falls on `ladder`.
pub(crate) fn human_equivalent(ladder: &Ladder, overall: &CellMetrics) -> HumanEquivalent {
    let ratings: Vec<f64> = ladder.players.iter().map(|p| f64::from(p.rating)).collect();
    let accuracies: Vec<f64> = ladder
        .players
        .iter()
        .map(|p| p.overall.puzzle_accuracy)
        .collect();
    let fitted = isotonic(&accuracies);
    let rise = fitted[fitted.len() - 1] - fitted[0];
    let mean = accuracies.iter().sum::<f64>() / accuracies.len() as f64;
    let puzzles = ladder.players[0].overall.puzzles.max(1) as f64;
    let needed = 2.0 * (2.0 * mean * (1.0 - mean) / puzzles).sqrt();
    let separates = rise > 0.0 && rise >= needed;
    let accuracy = overall.puzzle_accuracy;
    let se = overall.puzzle_accuracy_se;
    // A flat ladder has no slope to read a rating on: the player is below
    // or above it only outside the nine nets' own accuracies.
    let lowest = accuracies.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = accuracies.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let read = |accuracy: f64| match separates {
        true => placement(&ratings, &fitted, accuracy),
        false if accuracy < lowest => Placement::Below,
        false if accuracy > highest => Placement::Above,
        false => Placement::Within {
            low: ratings[0],
            high: ratings[ratings.len() - 1],
        },
    };
    let place = read(accuracy);
    let round = |v: f64| v.round();
    HumanEquivalent {
        puzzle_accuracy: accuracy,
        puzzle_accuracy_se: se,
        placement: place.name(),
        rating: place.rating().filter(|_| separates).map(round),
        label: place.label(&ratings, separates),
        span: match place {
            Placement::Within { low, high } => Some([round(low), round(high)]),
            _ => None,
        },
        interval_1se: [
            read(accuracy - se).label(&ratings, separates),
            read(accuracy + se).label(&ratings, separates),
        ],
        fitted_ladder: fitted,
        ladder_rise: rise,
        ladder_rise_needed: needed,
        ladder_separates: separates,
        method: "isotonic fit of the nets' overall puzzle accuracy on rating, read backwards \
                 with straight lines between neighbouring nets",
    }
}

/// A player's figures in the ladder's tables.
#[derive(Serialize)]
struct Figures {
    puzzles: usize,
    puzzle_accuracy: f64,
    puzzle_accuracy_se: f64,
    positions: usize,
    position_accuracy: f64,
}

impl Figures {
    fn of(m: &CellMetrics) -> Figures {
        Figures {
            puzzles: m.puzzles,
            puzzle_accuracy: m.puzzle_accuracy,
            puzzle_accuracy_se: m.puzzle_accuracy_se,
            positions: m.positions,
            position_accuracy: m.position_accuracy,
        }
    }
}

/// A player in `human_ladder`: its figures overall and per rating bin
/// (in rating order).
#[derive(Serialize)]
struct PlayerFigures {
    #[serde(flatten)]
    overall: Figures,
    player: String,
    #[serde(serialize_with = "crate::core::summary::serialize_pairs")]
    by_rating_bin: Vec<(String, Figures)>,
}

impl PlayerFigures {
    fn of(name: &str, overall: &CellMetrics, bins: &BTreeMap<String, CellMetrics>) -> Self {
        PlayerFigures {
            overall: Figures::of(overall),
            player: name.to_string(),
            by_rating_bin: metrics::ordered_cells("rating_bin", bins)
                .into_iter()
                .map(|(cell, m)| (cell.clone(), Figures::of(m)))
                .collect(),
        }
    }
}

/// One net of `human_ladder.players`: its figures, with its rating and
/// the puzzle ratings of its moves and of its expected solves.
#[derive(Serialize)]
struct NetFigures {
    #[serde(flatten)]
    figures: PlayerFigures,
    rating: u32,
    puzzle_rating: Option<PuzzleRating>,
    expected_solve_rate: f64,
    expected_puzzle_rating: Option<PuzzleRating>,
}

/// `report.json`'s `human_ladder`: the nets, each net's figures, the
/// player's beside them and its human-equivalent rating.
#[derive(Serialize)]
pub(crate) struct LadderReport<'a> {
    models_dir: &'a str,
    nets: &'a [NetFile],
    move_choice: &'static str,
    players: Vec<NetFigures>,
    model: PlayerFigures,
    human_equivalent_rating: HumanEquivalent,
    expected_ladder: ExpectedLadder,
}

impl<'a> LadderReport<'a> {
    /// The report of `ladder` beside the player `model` with breakdowns `b`.
    pub(crate) fn of(ladder: &'a Ladder, model: &str, b: &Breakdowns) -> Self {
        let empty = BTreeMap::new();
        let model_bins = b.by.get("rating_bin").unwrap_or(&empty);
        LadderReport {
            models_dir: &ladder.models_dir,
            nets: &ladder.nets,
            move_choice: "each net's most likely move",
            players: ladder
                .players
                .iter()
                .map(|p| NetFigures {
                    figures: PlayerFigures::of(&p.name(), &p.overall, &p.by_rating_bin),
                    rating: p.rating,
                    puzzle_rating: p.puzzle_rating.clone(),
                    expected_solve_rate: p.expected_solve_rate,
                    expected_puzzle_rating: p.expected_rating.clone(),
                })
                .collect(),
            model: PlayerFigures::of(model, &b.overall, model_bins),
            human_equivalent_rating: human_equivalent(ladder, &b.overall),
            expected_ladder: expected_ladder(ladder),
        }
    }
}

/// The human-equivalent rating with its ± 1 se interval, in one reading:
/// `1534 (± 1 se: 1480 to 1590)`, or on a flat ladder `among 1100-1900
/// (flat ladder; ± 1 se: below 1100 to among 1100-1900)`, the ladder's
/// note said once rather than inside each end.
pub(crate) fn label_with_interval(e: &HumanEquivalent) -> String {
    const FLAT: &str = " (flat ladder)";
    let [low, high] = &e.interval_1se;
    let (low, high) = (low.trim_end_matches(FLAT), high.trim_end_matches(FLAT));
    match e.label.strip_suffix(FLAT) {
        Some(_) if low == high && e.label.starts_with(low) => e.label.clone(),
        Some(label) => format!("{label} (flat ladder; ± 1 se: {low} to {high})"),
        None if low == high && low == e.label => e.label.clone(),
        None => format!("{} (± 1 se: {low} to {high})", e.label),
    }
}

/// `report.md`'s ladder section: the rating, how it is read, the picture
/// and the accuracies side by side.
pub(crate) fn ladder_markdown(
    md: &mut String,
    ladder: &Ladder,
    model: &str,
    b: &Breakdowns,
    picture: Option<&str>,
) {
    let equivalent = human_equivalent(ladder, &b.overall);
    let _ = writeln!(md, "## Human ladder (Maia-1)\n");
    let _ = writeln!(
        md,
        "The nine Maia-1 nets (`{}`) on the same {} positions. **Human-equivalent rating: {}** \
         (puzzle accuracy {} ± {}; ± 1 se: {} to {}).\n",
        ladder.models_dir,
        ladder.players[0].overall.positions,
        equivalent.label,
        pct(equivalent.puzzle_accuracy),
        pct(equivalent.puzzle_accuracy_se),
        equivalent.interval_1se[0],
        equivalent.interval_1se[1],
    );
    if !equivalent.ladder_separates {
        let _ = writeln!(
            md,
            "> On these puzzles the ladder is flat: fitted, it rises {:.1} points from maia:{} to \
             maia:{}, less than the {:.1} that two standard errors need, so it tells the nets' \
             ratings apart no better than chance: no rating is read, and the player is below or \
             above the ladder only outside the nine nets' own accuracies. The Maia-1 nets are \
             trained separately, and their most likely moves need not solve more puzzles as the \
             rating rises.\n",
            100.0 * equivalent.ladder_rise,
            ladder.players[0].rating,
            ladder.players[ladder.players.len() - 1].rating,
            100.0 * equivalent.ladder_rise_needed,
        );
    }
    let _ = writeln!(md, "{HUMAN_EQUIVALENT_NOTE}\n");
    let expected = expected_ladder(ladder);
    let _ = writeln!(
        md,
        "Each net's puzzle rating (Lichess scale, 95% interval), from its most likely moves and \
         from its expected solves (the product of the probabilities it puts on the right moves, \
         temperature 1: a typical player of its rating). The expected solve rate rises {:.1} \
         points from maia:{} to maia:{} ({:.1} needed to tell the nets apart){}\n",
        100.0 * expected.rise,
        ladder.players[0].rating,
        ladder.players[ladder.players.len() - 1].rating,
        100.0 * expected.rise_needed,
        if expected.separates {
            "."
        } else {
            ": still flat on these puzzles, so read the player's own puzzle rating, not its place \
             among the nets."
        }
    );
    let _ = writeln!(
        md,
        "| net | puzzle accuracy (most likely move) | its puzzle rating | expected solve rate | \
         its puzzle rating |\n|---|---|---|---|---|"
    );
    let label =
        |r: &Option<PuzzleRating>| r.as_ref().map_or_else(|| "-".into(), PuzzleRating::label);
    for p in &ladder.players {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            p.name(),
            pct(p.overall.puzzle_accuracy),
            label(&p.puzzle_rating),
            pct(p.expected_solve_rate),
            label(&p.expected_rating)
        );
    }
    md.push('\n');
    if let Some(file) = picture {
        let _ = writeln!(md, "![Human ladder]({file})\n");
    }
    ladder_bin_tables(md, ladder, model, b);
}

/// The ladder's puzzle and position accuracy by rating bin: one column
/// per net, then the player's.
fn ladder_bin_tables(md: &mut String, ladder: &Ladder, model: &str, b: &Breakdowns) {
    let empty = BTreeMap::new();
    let model_bins = b.by.get("rating_bin").unwrap_or(&empty);
    for (title, value) in [
        (
            "Puzzle accuracy",
            (|m: &CellMetrics| m.puzzle_accuracy) as fn(&CellMetrics) -> f64,
        ),
        ("Position accuracy", |m: &CellMetrics| m.position_accuracy),
    ] {
        let _ = writeln!(md, "### {title} by rating bin\n");
        let mut header = "| rating bin | puzzles |".to_string();
        let mut rule = "|---|---|".to_string();
        for p in &ladder.players {
            let _ = write!(header, " {} |", p.name());
            rule.push_str("---|");
        }
        let _ = write!(header, " {} |", model.replace('|', "\\|"));
        rule.push_str("---|");
        let _ = writeln!(md, "{header}\n{rule}");
        let row = |md: &mut String,
                   cell: &str,
                   puzzles: usize,
                   get: &dyn Fn(&LadderPlayer) -> Option<f64>,
                   own: Option<f64>| {
            let _ = write!(md, "| {cell} | {puzzles} |");
            for p in &ladder.players {
                let _ = write!(md, " {} |", get(p).map_or("-".into(), pct));
            }
            let _ = writeln!(md, " {} |", own.map_or("-".into(), pct));
        };
        let first = &ladder.players[0];
        row(
            md,
            "all",
            first.overall.puzzles,
            &|p| Some(value(&p.overall)),
            Some(value(&b.overall)),
        );
        for (cell, m) in metrics::ordered_cells("rating_bin", &first.by_rating_bin) {
            row(
                md,
                cell,
                m.puzzles,
                &|p| p.by_rating_bin.get(cell).map(value),
                model_bins.get(cell).map(value),
            );
        }
        md.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATINGS: [f64; 9] = [
        1100.0, 1200.0, 1300.0, 1400.0, 1500.0, 1600.0, 1700.0, 1800.0, 1900.0,
    ];

    #[test]
    fn placement_reads_the_ladder_backwards() {
        let fitted = [0.30, 0.32, 0.34, 0.36, 0.40, 0.40, 0.44, 0.46, 0.50];
        assert_eq!(placement(&RATINGS, &fitted, 0.29), Placement::Below);
        assert_eq!(placement(&RATINGS, &fitted, 0.51), Placement::Above);
        // Halfway between 1100 and 1200.
        assert_eq!(placement(&RATINGS, &fitted, 0.31).rating(), Some(1150.0));
        // On a net: that net's rating.
        assert_eq!(placement(&RATINGS, &fitted, 0.36).rating(), Some(1400.0));
        // A flat stretch: its middle, and the stretch.
        let flat = placement(&RATINGS, &fitted, 0.40);
        assert_eq!(
            flat,
            Placement::Within {
                low: 1500.0,
                high: 1600.0
            }
        );
        assert_eq!(flat.rating(), Some(1550.0));
        assert_eq!(placement(&RATINGS, &fitted, 0.50).rating(), Some(1900.0));
        assert_eq!(placement(&RATINGS, &fitted, 0.30).rating(), Some(1100.0));
        let label =
            |accuracy, separates| placement(&RATINGS, &fitted, accuracy).label(&RATINGS, separates);
        assert_eq!(label(0.29, true), "below 1100");
        assert_eq!(label(0.9, true), "above 1900");
        assert_eq!(label(0.31, true), "1150");
        assert_eq!(label(0.31, false), "among 1100-1900 (flat ladder)");
        assert_eq!(label(0.9, false), "above 1900");
        // A ladder flat everywhere: the player at its level is in the middle.
        let level = [0.0; 9];
        assert_eq!(placement(&RATINGS, &level, 0.0).rating(), Some(1500.0));
        assert_eq!(placement(&RATINGS, &level, 0.1), Placement::Above);
    }

    fn cell(puzzles: usize, accuracy: f64) -> CellMetrics {
        CellMetrics {
            puzzles,
            puzzle_accuracy: accuracy,
            puzzle_accuracy_se: (accuracy * (1.0 - accuracy) / puzzles as f64).sqrt(),
            positions: puzzles,
            position_accuracy: accuracy,
            illegal_rate: 0.0,
            unparseable_rate: 0.0,
            no_answer_rate: 0.0,
            regret_positions: 0,
            mean_score_loss: None,
            mean_regret: None,
            median_regret: None,
        }
    }

    fn ladder_of(puzzles: usize, accuracies: [f64; 9]) -> Ladder {
        Ladder {
            models_dir: "models/maia".into(),
            nets: Vec::new(),
            players: RATINGS
                .iter()
                .zip(accuracies)
                .map(|(&rating, accuracy)| LadderPlayer {
                    rating: rating as u32,
                    overall: cell(puzzles, accuracy),
                    by_rating_bin: BTreeMap::new(),
                    puzzle_rating: None,
                    expected_solve_rate: accuracy,
                    expected_rating: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_ladder_that_does_not_rise_beyond_chance_gives_no_number() {
        let rising = [0.30, 0.32, 0.34, 0.36, 0.38, 0.40, 0.42, 0.44, 0.46];
        // 16 points of rise on 1,000 puzzles: needs 2 sqrt(2 * 0.38 * 0.62 / 1000) = 4.3.
        let e = human_equivalent(&ladder_of(1000, rising), &cell(1000, 0.37));
        assert!(e.ladder_separates, "{e:?}");
        assert_eq!(e.label, "1450");
        assert_eq!(e.rating, Some(1450.0));
        // The same rise on 20 puzzles is within chance (needs 30.7).
        let e = human_equivalent(&ladder_of(20, rising), &cell(20, 0.37));
        assert!(!e.ladder_separates, "{e:?}");
        assert_eq!(e.label, "among 1100-1900 (flat ladder)");
        assert_eq!(e.rating, None);
        assert_eq!(e.span, Some([1100.0, 1900.0]));
        // Falling accuracies pool to one level: no rise at all. Outside the
        // nets' own accuracies the player is still below or above them;
        // inside, among them, even above the pooled level.
        let falling = [0.68, 0.68, 0.69, 0.67, 0.67, 0.68, 0.67, 0.66, 0.65];
        let flat = ladder_of(1500, falling);
        let e = human_equivalent(&flat, &cell(1500, 0.9));
        assert_eq!(e.ladder_rise, 0.0);
        assert!(!e.ladder_separates);
        assert_eq!(e.label, "above 1900");
        assert_eq!(
            human_equivalent(&flat, &cell(1500, 0.01)).label,
            "below 1100"
        );
        let e = human_equivalent(&flat, &cell(1500, 0.685));
        assert_eq!(e.label, "among 1100-1900 (flat ladder)");
        assert_eq!(e.placement, "within");
    }
}

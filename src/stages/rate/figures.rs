//! The held-out figures of a rating model: from rows scored by a model
//! they never taught (a calibration's held-out folds, or a rated file the
//! model has never seen, `rate --evaluate`), how close the estimates come
//! to the Lichess ratings, per group of rows, per band of the estimate,
//! and out to both ends of the scale.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::fit::{LENGTH_GROUPS, group_of, spearman};
use super::model::{BAND_WIDTH, pick};

/// Rows scored by a model: estimate, written deviation and Lichess rating,
/// with what the groups are drawn by.
pub(crate) struct Scored {
    pub estimate: Vec<f64>,
    pub deviation: Vec<f64>,
    pub rating: Vec<f64>,
    /// Solver moves.
    pub length: Vec<usize>,
    pub mate: Vec<bool>,
    /// A single-move proxy of a longer puzzle, not a puzzle.
    pub proxy: Vec<bool>,
}

/// Held-out figures of one group of rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeldOut {
    pub group: String,
    pub rows: usize,
    /// Spearman of the estimates with the Lichess rating.
    pub spearman: Option<f64>,
    /// Root mean square of the misses.
    pub rmse: f64,
    /// Mean of (estimate - rating).
    pub bias: f64,
    /// Share of the rows whose rating lies within one written deviation of
    /// the estimate.
    pub within_deviation: f64,
    /// Spearman of solver length alone with the rating.
    pub length_spearman: Option<f64>,
}

/// The rows whose estimate falls in one band, read as a release reads
/// them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BandFigures {
    /// Lower edge of the band of the estimate.
    pub band: i32,
    pub rows: usize,
    pub mean_estimate: f64,
    pub mean_rating: f64,
    /// Mean rating minus mean estimate.
    pub miss: f64,
    /// Standard deviation of the ratings in the band.
    pub rating_std: f64,
    /// Share of the band's rows within one written deviation.
    pub within_deviation: f64,
}

/// Band figures (400-point bands of the estimate) of one group of rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BandTable {
    pub group: String,
    pub bands: Vec<BandFigures>,
}

/// Held-out figures of one group of whole puzzles whose true rating lies
/// in 400-2800 (the range releases draw from).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InRangeFigures {
    pub group: String,
    pub rows: usize,
    pub spearman: Option<f64>,
    pub rmse: f64,
}

/// The estimates at one end of the scale.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EndFigures {
    /// "above 2400", "above 2600" or "at or below 700".
    pub end: String,
    pub rows: usize,
    /// Share of the group's estimates at this end.
    pub share: f64,
    /// Share of the group's true ratings at this end.
    pub true_share: f64,
    /// Mean true rating minus mean estimate of these rows.
    pub miss: f64,
}

/// How far the estimates reach and how well they hold there, for one
/// group of whole puzzles.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupReach {
    pub group: String,
    pub rows: usize,
    pub lowest_estimate: f64,
    pub highest_estimate: f64,
    /// By 200-point band of the estimate.
    pub bands: Vec<BandFigures>,
    pub ends: Vec<EndFigures>,
}

/// The figures the model is held to: in-range ranking by solver length,
/// and calibration by 200-point band out to both ends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReachFigures {
    /// Per length group (1, 2, 3-5, 6+ solver moves) and all.
    pub in_range: Vec<InRangeFigures>,
    /// Every whole puzzle, and the generated puzzles' shape (single-move
    /// non-mates).
    pub groups: Vec<GroupReach>,
}

/// Every figure of one set of scored rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figures {
    pub held_out: Vec<HeldOut>,
    pub bands: Vec<BandTable>,
    pub reach: ReachFigures,
}

fn fmt_option(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

impl Figures {
    pub(crate) fn of(scored: &Scored) -> Self {
        Self {
            held_out: held_out_figures(scored),
            bands: band_tables(scored),
            reach: reach_figures(scored),
        }
    }

    /// The figures as lines for a terminal.
    pub fn human(&self) -> String {
        let mut out =
            String::from("  group          rows  spearman  rmse  bias  in-dev | length\n");
        for h in &self.held_out {
            out.push_str(&format!(
                "  {:<13} {:>6}  {:>8}  {:>4.0}  {:>+4.0}  {:>5.1}% | {:>6}\n",
                h.group,
                h.rows,
                fmt_option(h.spearman),
                h.rmse,
                h.bias,
                100.0 * h.within_deviation,
                fmt_option(h.length_spearman)
            ));
        }
        out.push_str("  true rating 400-2800: group  rows  spearman  rmse\n");
        for f in &self.reach.in_range {
            out.push_str(&format!(
                "    {:<12} {:>6}  {:>8}  {:>4.0}\n",
                f.group,
                f.rows,
                fmt_option(f.spearman),
                f.rmse
            ));
        }
        for g in &self.reach.groups {
            out.push_str(&format!(
                "  reach ({}, {} rows): estimates {:.0}-{:.0}; by 200-point band of the \
                 estimate: band rows miss in-dev\n",
                g.group, g.rows, g.lowest_estimate, g.highest_estimate
            ));
            for b in &g.bands {
                out.push_str(&format!(
                    "    {:>4}-{:<4} {:>6}  {:>+4.0}  {:>5.1}%\n",
                    b.band,
                    b.band + REACH_BAND as i32,
                    b.rows,
                    b.miss,
                    100.0 * b.within_deviation
                ));
            }
            for e in &g.ends {
                out.push_str(&format!(
                    "    estimates {}: {} rows, {:.1}% (true ratings there: {:.1}%), mean miss {:+.0}\n",
                    e.end,
                    e.rows,
                    100.0 * e.share,
                    100.0 * e.true_share,
                    e.miss
                ));
            }
        }
        for table in &self.bands {
            out.push_str(&format!(
                "  by 400-point band of the estimate ({}): band  rows  estimate  rating  miss  std\n",
                table.group
            ));
            for b in &table.bands {
                out.push_str(&format!(
                    "    {:>4}-{:<4} {:>6}  {:>8.0}  {:>6.0}  {:>+4.0}  {:>3.0}\n",
                    b.band,
                    b.band + BAND_WIDTH as i32,
                    b.rows,
                    b.mean_estimate,
                    b.mean_rating,
                    b.miss,
                    b.rating_std,
                ));
            }
        }
        out
    }
}

/// A group of rows the figures are given for.
struct ReportGroup {
    name: String,
    members: Vec<usize>,
}

/// The report's groups in order: every puzzle, each length group, mates
/// and the rest, the single-move non-mate puzzles (most generated puzzles'
/// shape), and the single-move proxies.
fn report_groups(scored: &Scored) -> Vec<ReportGroup> {
    let (length, mate, proxy) = (&scored.length, &scored.mate, &scored.proxy);
    let select = |name: &str, keep: &dyn Fn(usize) -> bool| ReportGroup {
        name: name.to_string(),
        members: (0..length.len()).filter(|&i| keep(i)).collect(),
    };
    let mut groups = vec![select("all", &|i| !proxy[i])];
    for (g, (name, _, _)) in LENGTH_GROUPS.iter().enumerate() {
        groups.push(select(name, &|i| !proxy[i] && group_of(length[i]) == g));
    }
    groups.push(select("mates", &|i| !proxy[i] && mate[i]));
    groups.push(select("non-mates", &|i| !proxy[i] && !mate[i]));
    groups.push(select("1 non-mate", &|i| {
        !proxy[i] && length[i] == 1 && !mate[i]
    }));
    groups.push(select("1 proxy", &|i| proxy[i]));
    groups.retain(|g| !g.members.is_empty());
    groups
}

pub(crate) fn rmse(predicted: &[f64], truth: &[f64]) -> f64 {
    (predicted
        .iter()
        .zip(truth)
        .map(|(p, t)| (p - t).powi(2))
        .sum::<f64>()
        / truth.len().max(1) as f64)
        .sqrt()
}

/// The mean of `values`, 0 for none.
fn mean(values: &[f64]) -> f64 {
    crate::core::stats::mean(values).unwrap_or(0.0)
}

fn within(estimate: &[f64], deviation: &[f64], truth: &[f64]) -> f64 {
    let hits = estimate
        .iter()
        .zip(deviation)
        .zip(truth)
        .filter(|((e, d), t)| (*e - *t).abs() <= **d)
        .count();
    hits as f64 / truth.len().max(1) as f64
}

/// Held-out figures per group, with the length-only baseline beside them.
fn held_out_figures(scored: &Scored) -> Vec<HeldOut> {
    let length_values: Vec<f64> = scored.length.iter().map(|&l| l as f64).collect();
    report_groups(scored)
        .into_iter()
        .map(|group| {
            let members = &group.members;
            let truth = pick(&scored.rating, members);
            let e = pick(&scored.estimate, members);
            let d = pick(&scored.deviation, members);
            HeldOut {
                group: group.name,
                rows: members.len(),
                spearman: spearman(&e, &truth),
                rmse: rmse(&e, &truth),
                bias: mean(&e) - mean(&truth),
                within_deviation: within(&e, &d, &truth),
                length_spearman: spearman(&pick(&length_values, members), &truth),
            }
        })
        .collect()
}

/// The figures of `members` by band of `width` of the estimate.
fn band_figures(scored: &Scored, members: &[usize], width: f64) -> Vec<BandFigures> {
    let mut by_band: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for &i in members {
        let band = ((scored.estimate[i] / width).floor() * width) as i32;
        by_band.entry(band).or_default().push(i);
    }
    by_band
        .into_iter()
        .map(|(band, rows)| {
            let e = pick(&scored.estimate, &rows);
            let d = pick(&scored.deviation, &rows);
            let t = pick(&scored.rating, &rows);
            let mean_rating = mean(&t);
            BandFigures {
                band,
                rows: rows.len(),
                mean_estimate: mean(&e),
                mean_rating,
                miss: mean_rating - mean(&e),
                rating_std: (t.iter().map(|r| (r - mean_rating).powi(2)).sum::<f64>()
                    / t.len().max(1) as f64)
                    .sqrt(),
                within_deviation: within(&e, &d, &t),
            }
        })
        .collect()
}

/// Band tables of every puzzle and of the proxies.
fn band_tables(scored: &Scored) -> Vec<BandTable> {
    report_groups(scored)
        .into_iter()
        .filter(|g| g.name == "all" || g.name == "1 proxy")
        .map(|g| BandTable {
            bands: band_figures(scored, &g.members, BAND_WIDTH),
            group: g.name,
        })
        .collect()
}

/// Width of the bands of the reach figures.
pub(crate) const REACH_BAND: f64 = 200.0;
/// The rating range releases draw from, where ranking is measured.
const RELEASE_RANGE: (f64, f64) = (400.0, 2800.0);

/// The figures the model is held to ([`ReachFigures`]).
fn reach_figures(scored: &Scored) -> ReachFigures {
    let (rating, length) = (&scored.rating, &scored.length);
    let whole: Vec<usize> = (0..rating.len()).filter(|&i| !scored.proxy[i]).collect();
    let in_range = |i: &usize| (RELEASE_RANGE.0..=RELEASE_RANGE.1).contains(&rating[*i]);
    let length_groups: [(&str, usize, usize); 5] = [
        ("all", 1, usize::MAX),
        ("1", 1, 1),
        ("2", 2, 2),
        ("3-5", 3, 5),
        ("6+", 6, usize::MAX),
    ];
    let in_range = length_groups
        .iter()
        .map(|(name, lo, hi)| {
            let members: Vec<usize> = whole
                .iter()
                .copied()
                .filter(|i| in_range(i) && (*lo..=*hi).contains(&length[*i]))
                .collect();
            let (e, t) = (pick(&scored.estimate, &members), pick(rating, &members));
            InRangeFigures {
                group: name.to_string(),
                rows: members.len(),
                spearman: spearman(&e, &t),
                rmse: rmse(&e, &t),
            }
        })
        .collect();
    let generated_shape: Vec<usize> = whole
        .iter()
        .copied()
        .filter(|&i| length[i] == 1 && !scored.mate[i])
        .collect();
    let groups = [("all", whole), ("1 non-mate", generated_shape)]
        .into_iter()
        .filter(|(_, members)| !members.is_empty())
        .map(|(name, members)| group_reach(name, &members, scored))
        .collect();
    ReachFigures { in_range, groups }
}

fn group_reach(name: &str, members: &[usize], scored: &Scored) -> GroupReach {
    let (estimate, rating) = (&scored.estimate, &scored.rating);
    let ends = [
        ("above 2600", (|r: f64| r > 2600.0) as fn(f64) -> bool),
        ("above 2400", |r: f64| r > 2400.0),
        ("at or below 700", |r: f64| r <= 700.0),
    ]
    .into_iter()
    .map(|(end, at)| {
        let rows: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| at(estimate[i]))
            .collect();
        let true_rows = members.iter().filter(|&&i| at(rating[i])).count();
        EndFigures {
            end: end.to_string(),
            rows: rows.len(),
            share: rows.len() as f64 / members.len().max(1) as f64,
            true_share: true_rows as f64 / members.len().max(1) as f64,
            miss: mean(&pick(rating, &rows)) - mean(&pick(estimate, &rows)),
        }
    })
    .collect();
    let values = pick(estimate, members);
    GroupReach {
        group: name.to_string(),
        rows: members.len(),
        lowest_estimate: values.iter().copied().fold(f64::INFINITY, f64::min),
        highest_estimate: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        bands: band_figures(scored, members, REACH_BAND),
        ends,
    }
}

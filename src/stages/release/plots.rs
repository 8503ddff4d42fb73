//! The release report's pictures, drawn with plotters' SVG backend. SVG
//! text is left to the viewer's fonts, so no font files are needed here.

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

use crate::chess::derive::rating_bin_edges;
use crate::chess::record::Puzzle;
use crate::core::fileio::write_atomic;
use crate::stages::release::draw::CellOutcome;

/// (title, file name under `report/`) of every picture.
pub const REPORT_PICTURES: [(&str, &str); 4] = [
    ("Rating histogram per split", "rating_histogram.svg"),
    ("Puzzles per cell", "cell_heatmap.svg"),
    ("Solver moves per split", "lengths.svg"),
    ("Most common themes", "themes.svg"),
];

const TRAIN_COLOR: RGBColor = RGBColor(31, 119, 180);
const TEST_COLOR: RGBColor = RGBColor(255, 127, 14);

fn plot_error<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing the report: {e}")
}

/// Draws every picture into `dir` and returns their paths relative to the
/// release folder (`report/NAME.svg`).
pub(crate) fn write_report(
    dir: &Path,
    train: &[Puzzle],
    test: &[Puzzle],
    cells: &[CellOutcome],
) -> Result<Vec<String>> {
    let pictures = [
        rating_histogram(train, test)?,
        cell_heatmap(cells)?,
        lengths(train, test)?,
        themes(train, test)?,
    ];
    let mut names = Vec::new();
    for ((_, file), svg) in REPORT_PICTURES.iter().zip(pictures) {
        write_atomic(&dir.join(file), svg.as_bytes())?;
        names.push(format!("report/{file}"));
    }
    Ok(names)
}

fn rating_histogram(train: &[Puzzle], test: &[Puzzle]) -> Result<String> {
    const WIDTH: i32 = 100;
    let count = |puzzles: &[Puzzle]| -> BTreeMap<i32, u32> {
        let mut bins = BTreeMap::new();
        for rating in puzzles.iter().filter_map(|p| p.rating) {
            *bins.entry(rating_bin_edges(rating, WIDTH).0).or_insert(0) += 1;
        }
        bins
    };
    let splits = [
        ("train", count(train), TRAIN_COLOR),
        ("test", count(test), TEST_COLOR),
    ];
    let lo = splits
        .iter()
        .filter_map(|(_, b, _)| b.keys().next().copied())
        .min()
        .unwrap_or(0);
    let hi = splits
        .iter()
        .filter_map(|(_, b, _)| b.keys().next_back().copied())
        .max()
        .unwrap_or(0)
        + WIDTH;
    let top = splits
        .iter()
        .flat_map(|(_, b, _)| b.values().copied())
        .max()
        .unwrap_or(0)
        + 1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let areas = root.split_evenly((2, 1));
        for (area, (name, bins, color)) in areas.iter().zip(&splits) {
            let mut chart = ChartBuilder::on(area)
                .caption(format!("Rating, {name}"), ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(lo..hi, 0u32..top)
                .map_err(plot_error)?;
            chart
                .configure_mesh()
                .x_desc("Rating")
                .y_desc("Puzzles")
                .draw()
                .map_err(plot_error)?;
            chart
                .draw_series(
                    bins.iter().map(|(&bin, &n)| {
                        Rectangle::new([(bin, 0), (bin + WIDTH, n)], color.filled())
                    }),
                )
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

fn cell_heatmap(cells: &[CellOutcome]) -> Result<String> {
    let mut bins: Vec<(i32, i32)> = cells
        .iter()
        .map(|c| (c.cell.bin_lo, c.cell.bin_hi))
        .collect();
    bins.sort();
    bins.dedup();
    let mut rows: Vec<(usize, bool)> = cells.iter().map(|c| (c.cell.length, c.cell.mate)).collect();
    rows.sort();
    rows.dedup();
    let columns = bins.len().max(1) as i32;
    let height = rows.len().max(1) as i32;
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (1000, 120 + 40 * height as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let bin_label = |x: &i32| {
            bins.get(*x as usize)
                .map(|(lo, hi)| format!("({lo},{hi}]"))
                .unwrap_or_default()
        };
        let row_label = |y: &i32| {
            rows.get(*y as usize)
                .map(|(len, mate)| format!("{len} {}", if *mate { "mate" } else { "no mate" }))
                .unwrap_or_default()
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Puzzles drawn / wanted per cell (dark: filled)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(0..columns, 0..height)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(columns as usize)
            .y_labels(height as usize)
            .x_label_formatter(&bin_label)
            .y_label_formatter(&row_label)
            .x_desc("Rating bin")
            .y_desc("Solver moves, mate")
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(cells.iter().filter_map(|c| {
                let x = bins.binary_search(&(c.cell.bin_lo, c.cell.bin_hi)).ok()? as i32;
                let y = rows.binary_search(&(c.cell.length, c.cell.mate)).ok()? as i32;
                let wanted = (c.wanted.train + c.wanted.test).max(1) as f64;
                let share = ((c.train + c.test) as f64 / wanted).min(1.0);
                let shade = (235.0 - 200.0 * share) as u8;
                let color = if c.filled() {
                    RGBColor(shade, shade, 255)
                } else {
                    RGBColor(255, shade, shade)
                };
                Some(Rectangle::new([(x, y), (x + 1, y + 1)], color.filled()))
            }))
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Side-by-side bars for train and test over integer categories.
fn paired_bars(
    title: &str,
    labels: &[String],
    train: &[u32],
    test: &[u32],
    size: (u32, u32),
) -> Result<String> {
    let n = labels.len().max(1) as i32;
    let top = train.iter().chain(test).copied().max().unwrap_or(0) + 1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let label = |x: &i32| {
            if *x % 2 != 0 {
                return String::new();
            }
            labels.get((*x / 2) as usize).cloned().unwrap_or_default()
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(80)
            .y_label_area_size(50)
            .build_cartesian_2d(0..2 * n, 0u32..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(2 * n as usize + 1)
            .x_label_formatter(&label)
            .y_desc("Puzzles")
            .draw()
            .map_err(plot_error)?;
        for (offset, values, color, name) in [
            (0, train, TRAIN_COLOR, "train"),
            (1, test, TEST_COLOR, "test"),
        ] {
            chart
                .draw_series(values.iter().enumerate().map(|(i, &v)| {
                    let x = 2 * i as i32 + offset;
                    Rectangle::new([(x, 0), (x + 1, v)], color.filled())
                }))
                .map_err(plot_error)?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

fn lengths(train: &[Puzzle], test: &[Puzzle]) -> Result<String> {
    let longest = train
        .iter()
        .chain(test)
        .map(Puzzle::solver_moves)
        .max()
        .unwrap_or(0);
    let count = |puzzles: &[Puzzle]| -> Vec<u32> {
        let mut counts = vec![0u32; longest];
        for p in puzzles {
            if let Some(slot) = p
                .solver_moves()
                .checked_sub(1)
                .and_then(|i| counts.get_mut(i))
            {
                *slot += 1;
            }
        }
        counts
    };
    let labels: Vec<String> = (1..=longest).map(|n| n.to_string()).collect();
    paired_bars(
        "Solver moves per puzzle",
        &labels,
        &count(train),
        &count(test),
        (700, 450),
    )
}

fn themes(train: &[Puzzle], test: &[Puzzle]) -> Result<String> {
    let mut totals: BTreeMap<&str, u32> = BTreeMap::new();
    for p in train.iter().chain(test) {
        for theme in &p.themes {
            *totals.entry(theme.as_str()).or_insert(0) += 1;
        }
    }
    let mut ranked: Vec<(&str, u32)> = totals.into_iter().collect();
    // Most common first; ties by name so the picture is deterministic.
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(15);
    let count = |puzzles: &[Puzzle]| -> Vec<u32> {
        ranked
            .iter()
            .map(|(theme, _)| puzzles.iter().filter(|p| p.has_theme(theme)).count() as u32)
            .collect()
    };
    let labels: Vec<String> = ranked.iter().map(|(t, _)| t.to_string()).collect();
    paired_bars(
        "Most common themes",
        &labels,
        &count(train),
        &count(test),
        (1200, 500),
    )
}

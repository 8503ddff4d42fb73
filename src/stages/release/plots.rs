//! The release report's pictures, drawn with plotters' SVG backend. SVG
//! text is left to the viewer's fonts, so no font files are needed here.

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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

/// The cells as a grid: one column per rating bin, one row per (solver
/// moves, mate), each target cell coloured by how full it is (blue:
/// filled, red: short, darker the fuller) and labelled with its count,
/// drawn / wanted (train + test together). Drawn on the pixel grid rather
/// than through a chart's axes, so that every label sits at the middle of
/// its column or row: bin labels stand vertically under their columns,
/// legible however many bins there are.
fn cell_heatmap(cells: &[CellOutcome]) -> Result<String> {
    let grid = HeatmapGrid::of(cells);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, grid.size()).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        draw_heatmap_titles(&root, &grid)?;
        draw_heatmap_cells(&root, &grid, cells)?;
        draw_heatmap_labels(&root, &grid)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// The SVG drawing area the heatmap is drawn on.
type SvgArea<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Where the heatmap's parts sit, in pixels: its columns (rating bins,
/// lowest first), its rows ((solver moves, mate), shortest first) and the
/// margins around the grid.
struct HeatmapGrid {
    bins: Vec<(i32, i32)>,
    rows: Vec<(usize, bool)>,
    cell_w: i32,
    cell_h: i32,
    left: i32,
    top: i32,
    bottom: i32,
    right: i32,
}

impl HeatmapGrid {
    fn of(cells: &[CellOutcome]) -> HeatmapGrid {
        let mut bins: Vec<(i32, i32)> = cells
            .iter()
            .map(|c| (c.cell.bin_lo, c.cell.bin_hi))
            .collect();
        bins.sort();
        bins.dedup();
        let mut rows: Vec<(usize, bool)> =
            cells.iter().map(|c| (c.cell.length, c.cell.mate)).collect();
        rows.sort();
        rows.dedup();
        // Wide enough for the longest count at the cell font (about 7 px a
        // character).
        let widest = cells
            .iter()
            .map(|c| heatmap_count(c).len())
            .max()
            .unwrap_or(3) as i32;
        HeatmapGrid {
            bins,
            rows,
            cell_w: (7 * widest + 12).max(42),
            cell_h: 28,
            left: 130,
            top: 56,
            bottom: 104,
            right: 20,
        }
    }

    fn grid_w(&self) -> i32 {
        self.cell_w * self.bins.len().max(1) as i32
    }

    fn grid_h(&self) -> i32 {
        self.cell_h * self.rows.len().max(1) as i32
    }

    /// The picture's size: the grid and its margins.
    fn size(&self) -> (u32, u32) {
        (
            (self.left + self.grid_w() + self.right) as u32,
            (self.top + self.grid_h() + self.bottom) as u32,
        )
    }
}

/// A cell's label: drawn / wanted, train and test together.
fn heatmap_count(c: &CellOutcome) -> String {
    format!("{}/{}", c.train + c.test, c.wanted.train + c.wanted.test)
}

/// Text of `size` pixels centred on its position.
fn centred_text(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Center))
}

/// The picture's title and the two axes' titles.
fn draw_heatmap_titles(root: &SvgArea<'_>, grid: &HeatmapGrid) -> Result<()> {
    let (width, _) = grid.size();
    root.draw(&Text::new(
        "Puzzles per cell: drawn / wanted, train + test (blue: filled, red: short)",
        (width as i32 / 2, 18),
        centred_text(18),
    ))
    .map_err(plot_error)?;
    root.draw(&Text::new(
        "Rating bin",
        (
            grid.left + grid.grid_w() / 2,
            grid.top + grid.grid_h() + grid.bottom - 12,
        ),
        centred_text(15),
    ))
    .map_err(plot_error)?;
    root.draw(&Text::new(
        "Solver moves, mate",
        (grid.left / 2 + 4, 42),
        centred_text(15),
    ))
    .map_err(plot_error)?;
    Ok(())
}

/// The grid's frame, then each target cell coloured by how full it is and
/// labelled with its count.
fn draw_heatmap_cells(root: &SvgArea<'_>, grid: &HeatmapGrid, cells: &[CellOutcome]) -> Result<()> {
    let (left, top, cell_w, cell_h) = (grid.left, grid.top, grid.cell_w, grid.cell_h);
    // The frame, so that empty places (no quota) read as cells.
    for y in 0..grid.rows.len() as i32 {
        for x in 0..grid.bins.len() as i32 {
            let (x0, y0) = (left + x * cell_w, top + y * cell_h);
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + cell_w, y0 + cell_h)],
                RGBColor(225, 225, 225).stroke_width(1),
            ))
            .map_err(plot_error)?;
        }
    }
    for c in cells {
        let (Ok(x), Ok(y)) = (
            grid.bins.binary_search(&(c.cell.bin_lo, c.cell.bin_hi)),
            grid.rows.binary_search(&(c.cell.length, c.cell.mate)),
        ) else {
            continue;
        };
        let (x0, y0) = (left + x as i32 * cell_w, top + y as i32 * cell_h);
        let wanted = (c.wanted.train + c.wanted.test).max(1) as f64;
        let share = ((c.train + c.test) as f64 / wanted).min(1.0);
        let shade = (235.0 - 185.0 * share) as u8;
        let color = if c.filled() {
            RGBColor(shade, shade, 255)
        } else {
            RGBColor(255, shade, shade)
        };
        root.draw(&Rectangle::new(
            [(x0 + 1, y0 + 1), (x0 + cell_w - 1, y0 + cell_h - 1)],
            color.filled(),
        ))
        .map_err(plot_error)?;
        let ink = if shade < 120 { WHITE } else { BLACK };
        root.draw(&Text::new(
            heatmap_count(c),
            (x0 + cell_w / 2, y0 + cell_h / 2),
            centred_text(14).color(&ink),
        ))
        .map_err(plot_error)?;
    }
    Ok(())
}

/// Each row's label at its left, each column's bin under it.
fn draw_heatmap_labels(root: &SvgArea<'_>, grid: &HeatmapGrid) -> Result<()> {
    let (left, top, cell_w, cell_h) = (grid.left, grid.top, grid.cell_w, grid.cell_h);
    let right_aligned =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (y, (length, mate)) in grid.rows.iter().enumerate() {
        let label = format!("{length}, {}", if *mate { "mate" } else { "no mate" });
        root.draw(&Text::new(
            label,
            (left - 8, top + y as i32 * cell_h + cell_h / 2),
            right_aligned.clone(),
        ))
        .map_err(plot_error)?;
    }
    // Read from the bottom up, ending just under their column.
    let vertical = right_aligned.transform(FontTransform::Rotate270);
    for (x, (lo, hi)) in grid.bins.iter().enumerate() {
        root.draw(&Text::new(
            format!("({lo}, {hi}]"),
            (
                left + x as i32 * cell_w + cell_w / 2,
                top + grid.grid_h() + 6,
            ),
            vertical.clone(),
        ))
        .map_err(plot_error)?;
    }
    Ok(())
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

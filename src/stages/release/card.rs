//! The release folder: `train`/`test` as CSV and JSON Lines, a
//! `manifest.json`, a Hugging Face dataset card (`README.md`) and a report
//! of SVG pictures under `report/`.
//!
//! Every file is written atomically and holds no timestamp, so the same
//! inputs and seed give the same bytes.

use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use crate::chess::columns::{self, Column, ColumnType};
use crate::chess::derive::{fill_lichess_defaults, mate_cell};
use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of};
use crate::core::fileio::{sha256_file, write_atomic};
use crate::stages::release::cells::{Aim, Cell, first_of};
use crate::stages::release::draw::CellOutcome;
use crate::stages::release::funnel::GenerationFunnel;
use crate::stages::release::manifest::{EngineName, ReleaseManifest};
use crate::stages::release::plots;

/// Sets the release's columns ([`columns::RELEASE`]: NumMoves, RatingBin,
/// Mate, Source, RatingSource and GameId), moves them in front of the
/// puzzle's other extra columns, and fills the Lichess columns a puzzle
/// not from Lichess lacks ([`crate::chess::derive::lichess_defaults`]).
///
/// Each value is the puzzle's own rule in [`crate::chess::derive`], the one
/// the ingest and the draw read: the release writes them again so that
/// every release row has them, also a pool row that never had them (a
/// mined puzzle has no `NumMoves`), and in the spelling this version
/// writes (`True`/`False`). `RatingBin` is the one value a release derives
/// anew: its bins are of the release's `bin_width` (`cell`, from
/// [`Cell::of`]), not the ingest's 100 points.
pub(crate) fn add_derived_columns(puzzle: &mut Puzzle, cell: &Cell) {
    fill_lichess_defaults(puzzle);
    let value = |column: Column| match column {
        Column::NumMoves => puzzle.solver_moves().to_string(),
        Column::RatingBin => cell.bin_label(),
        Column::Mate => mate_cell(cell.mate).to_string(),
        Column::Source => puzzle.source(),
        Column::RatingSource => puzzle.rating_source(),
        Column::GameId => puzzle.game_id().unwrap_or_default(),
        _ => String::new(),
    };
    let derived: Vec<(String, String)> = columns::RELEASE
        .iter()
        .map(|column| (column.name().to_string(), value(*column)))
        .collect();
    let is_derived = |name: &str| columns::RELEASE.iter().any(|c| c.name() == name);
    // Verdicts as this version spells them (`True`/`False`, empty where a
    // check did not run), also from a pool written with `pass`/`fail`.
    let spelled = |(name, value): (String, String)| {
        let canonical = (ColumnType::of(&name) == ColumnType::Check)
            .then(|| ColumnType::Check.json_value(&value).ok())
            .flatten()
            .map(|typed| ColumnType::cell_of(&typed));
        let value = canonical.unwrap_or(value);
        (name, value)
    };
    let others = puzzle
        .extra
        .drain(..)
        .filter(|(name, _)| !is_derived(name))
        .map(spelled);
    puzzle.extra = derived.into_iter().chain(others).collect();
}

/// Writes the release folder and returns `{file name: sha256}` of every
/// output but the manifest (which records them).
pub(crate) fn write_release(
    dir: &Path,
    train: &[Puzzle],
    test: &[Puzzle],
    cells: &[CellOutcome],
    mut manifest: ReleaseManifest,
    games: Option<&str>,
) -> Result<BTreeMap<String, String>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("creating release folder {}: {e}", dir.display()))?;
    let columns = release_columns(train, test);
    let mut names: Vec<String> = Vec::new();
    for (split, puzzles) in [("train", train), ("test", test)] {
        for ext in ["csv", "jsonl"] {
            let name = format!("{split}.{ext}");
            write_split(&dir.join(&name), puzzles, &columns)?;
            names.push(name);
        }
    }
    names.extend(plots::write_report(
        &dir.join("report"),
        train,
        test,
        cells,
    )?);
    if let Some(games) = games {
        let name = crate::stages::release::provenance::GAMES_FILE;
        write_atomic(&dir.join(name), games.as_bytes())?;
        names.push(name.to_string());
    }
    let card = dataset_card(train, test, cells, &manifest, &columns, games.is_some());
    write_atomic(&dir.join("README.md"), card.as_bytes())?;
    names.push("README.md".to_string());
    let mut outputs = BTreeMap::new();
    for name in names {
        outputs.insert(name.clone(), sha256_file(&dir.join(&name))?);
    }
    manifest.outputs = Some(outputs.clone());
    manifest.write(dir)?;
    Ok(outputs)
}

/// The columns of a release after the Lichess ten: every release's own
/// ([`columns::release_columns`]), then the pool's other columns in
/// first-seen order over both splits (as text). CSV and JSON Lines, train
/// and test, all have exactly these, so one schema loads them all.
pub(crate) fn release_columns(train: &[Puzzle], test: &[Puzzle]) -> Vec<String> {
    let mut names: Vec<String> = columns::release_columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    for column in extra_columns_of(train)
        .into_iter()
        .chain(extra_columns_of(test))
    {
        if !names.contains(&column) {
            names.push(column);
        }
    }
    names
}

/// Writes one split with the release's columns (an empty split still gets
/// the CSV header).
fn write_split(path: &Path, puzzles: &[Puzzle], columns: &[String]) -> Result<()> {
    let mut writer = PuzzleWriter::create_typed(path, columns)?;
    for puzzle in puzzles {
        writer.write(puzzle)?;
    }
    writer.finish()?;
    Ok(())
}

/// The card's `configs` and `dataset_info` (Hugging Face YAML): the
/// default config is the JSON Lines files, with the feature of every
/// column (`columns` after the Lichess ten), so `datasets.load_dataset`
/// reads the declared types instead of guessing them from the cells.
///
/// `datasets` picks one file reader for all of a folder's configs (from
/// the first config's files), and its CSV reader cannot read an empty cell
/// into an integer feature, so the CSV files, Lichess's text, are not a
/// config: they hold the same columns and cells, and a CSV reader with
/// nullable types (pandas' `Int64`, `boolean`) reads them as declared.
fn card_schema(columns: &[String]) -> String {
    let all = columns::LICHESS
        .iter()
        .map(|c| (c.name(), c.kind()))
        .chain(columns.iter().map(|n| (n.as_str(), ColumnType::of(n))));
    let mut yaml = String::from("configs:\n- config_name: default\n  data_files:\n");
    for split in ["train", "test"] {
        yaml.push_str(&format!("  - split: {split}\n    path: {split}.jsonl\n"));
    }
    yaml.push_str("dataset_info:\n  config_name: default\n  features:\n");
    for (name, kind) in all {
        yaml.push_str(&format!("  - name: {name}\n    {}\n", kind.feature()));
    }
    yaml
}

/// The card's `## Format` section: the columns, and the files that hold
/// them.
const FORMAT_SECTION: &str = concat!(
    "## Format\n\n",
    "Rows follow the Lichess puzzle convention: `FEN` is the position before the opponent's \
         move; `Moves` is UCI, the opponent's move first, then solver and opponent alternating. \
         After the ten Lichess columns come `NumMoves` (solver moves), `RatingBin` (the `(lo, hi]` \
         rating bin), `Mate`, `Source` (`lichess`, `selfplay`, `lichess-game`), `RatingSource` \
         (`lichess`, or `estimated` by puzzleforge's rating model) and `GameId` (the source game; \
         no game has puzzles in both splits), then the other columns puzzleforge writes and any \
         other columns of the pool. A puzzle that never was on Lichess has `Popularity` 0 and \
         `NbPlays` 0 (no one has voted on or played it there). The verdicts of puzzleforge's \
         `verify` are booleans: `VerifyDeeper` (the same engine at more nodes agrees), \
         `VerifySecond` (a second engine agrees on every solver move) and `Verified` (every \
         check that ran passed), `null` where a check did not run (a Lichess puzzle; no second \
         engine).\n\n\
         Every file has the same columns. `train.jsonl` and `test.jsonl` (the dataset's files) \
         hold typed values: integers, booleans, `null` where a value is empty, `Themes` and \
         `OpeningTags` as lists of strings; the front matter declares their features, and \
         `datasets.load_dataset(\"<this folder>\")` loads them with those types. `train.csv` \
         and `test.csv` hold the same rows as Lichess writes them: `True`/`False`, empty \
         cells, space-separated themes; read them with nullable types (pandas `Int64`, \
         `boolean`) for the same schema.\n\n"
);

/// The card's YAML front matter: license, tags, size category for `total`
/// puzzles, and the schema of `columns`.
fn front_matter(total: usize, columns: &[String]) -> String {
    let size = match total {
        0..1000 => "n<1K",
        1000..10000 => "1K<n<10K",
        10000..100000 => "10K<n<100K",
        _ => "100K<n<1M",
    };
    let mut card = String::new();
    card.push_str("---\n");
    card.push_str("license: cc0-1.0\n");
    card.push_str("language:\n- en\n");
    card.push_str("pretty_name: puzzleforge chess puzzle release\n");
    card.push_str("task_categories:\n- text-generation\n- question-answering\n");
    card.push_str("tags:\n- chess\n- puzzles\n- benchmark\n- reasoning\n");
    card.push_str(&format!("size_categories:\n- {size}\n"));
    card.push_str(&card_schema(columns));
    card.push_str("---\n\n");
    card
}

fn dataset_card(
    train: &[Puzzle],
    test: &[Puzzle],
    cells: &[CellOutcome],
    manifest: &ReleaseManifest,
    columns: &[String],
    has_games: bool,
) -> String {
    let unfilled = cells.iter().filter(|c| !c.filled()).count();
    let mut card = front_matter(train.len() + test.len(), columns);
    card.push_str("# puzzleforge chess puzzle release\n\n");
    card.push_str(&format!(
        "{} train and {} test chess puzzles, stratified by rating bin, solver length and mate, \
         written by puzzleforge {} (build `{}`).\n\n",
        train.len(),
        test.len(),
        manifest.tool.version,
        manifest.tool.build
    ));
    if let Some(tier) = &manifest.tier {
        card.push_str(&format!("Tier: `{tier}`.\n\n"));
    }
    if let Some(aim) = &manifest.aim {
        card.push_str(&aim_paragraph(aim));
    }
    card.push_str(&source_mix(train, test));
    card.push_str(&super::theme_mix::theme_mix_section(train, test));
    if let Some(generate) = &manifest.generate {
        card.push_str(&generated_paragraph(train, test, &generate.figures));
    }
    card.push_str(FORMAT_SECTION);
    card.push_str("## How it was drawn\n\n");
    card.push_str(&format!(
        "Seed {}. Each cell is drawn with its own ChaCha8 RNG seeded from the seed and the cell \
         key; whole source games go to one side. Puzzles whose position appears in earlier \
         releases were removed ({} this time). {} of {} cells could not be filled; \
         `manifest.json` lists them with the counts wanted and found, the configuration, and the \
         sha256 of every input and output.\n\n",
        manifest.seed,
        manifest.exclusions.removed,
        unfilled,
        cells.len()
    ));
    card.push_str(&unfilled_list(cells));
    card.push_str(&provenance_section(manifest, has_games));
    card.push_str(&recheck_section(train, test, manifest));
    card.push_str(&reproduce_section(manifest));
    card.push_str("## Report\n\n");
    for (title, file) in plots::REPORT_PICTURES {
        card.push_str(&format!("![{title}](report/{file})\n\n"));
    }
    card.push_str("## License\n\n");
    card.push_str(
        "Lichess puzzles are released under CC0 1.0 by lichess.org; puzzles mined by puzzleforge \
         are released under the same terms.\n",
    );
    card
}

/// Where the puzzles come from, per split: Lichess's puzzle database,
/// puzzleforge's self-play, or Lichess games mined by puzzleforge (and any
/// other `Source` a pool held), so a reader knows how much of the release
/// a model may have seen in public puzzle sets.
fn source_mix(train: &[Puzzle], test: &[Puzzle]) -> String {
    // Always listed, even at 0.
    const KNOWN: [(&str, &str); 3] = [
        ("lichess", "Lichess puzzle database"),
        ("selfplay", "generated (puzzleforge self-play)"),
        ("lichess-game", "mined from Lichess games"),
    ];
    // Listed where the release holds some.
    const HUMAN_GAME: (&str, &str) = (
        "human-game",
        "mined from human games (public positions, `[sources] human_games`)",
    );
    let source = |p: &Puzzle| p.get(Column::Source).unwrap_or("").to_string();
    let mut sources: Vec<String> = KNOWN.iter().map(|(s, _)| s.to_string()).collect();
    for puzzle in train.iter().chain(test) {
        let name = source(puzzle);
        if !sources.contains(&name) {
            sources.push(name);
        }
    }
    let count = |split: &[Puzzle], name: &str| split.iter().filter(|p| source(p) == name).count();
    let mut text = String::from("## Source mix\n\n| source | train | test |\n|---|---:|---:|\n");
    for name in &sources {
        let (in_train, in_test) = (count(train, name), count(test, name));
        let known = KNOWN.iter().find(|(s, _)| s == name).map(|(_, what)| *what);
        let described = known.or((name == HUMAN_GAME.0).then_some(HUMAN_GAME.1));
        if in_train + in_test == 0 && known.is_none() {
            continue;
        }
        let what = match (described, name.as_str()) {
            (Some(what), _) => format!("{what} (`{name}`)"),
            (None, "") => "no `Source`".to_string(),
            (None, other) => format!("`{other}`"),
        };
        text.push_str(&format!("| {what} | {in_train} | {in_test} |\n"));
    }
    text.push_str(&format!(
        "| all | {} | {} |\n\nThe `Source` column of `train.csv` and `test.csv` gives each \
         puzzle's origin: `lichess` (the Lichess puzzle database), `selfplay` (puzzleforge's \
         self-play), `lichess-game` (mined from Lichess games) or `pgn` (mined from another PGN \
         file); any other value is the one its pool gave.\n\n",
        train.len(),
        test.len()
    ));
    text
}

/// The cells the release could not fill, in the one cell notation (the
/// first 20, then how many more).
fn unfilled_list(cells: &[CellOutcome]) -> String {
    let labels: Vec<String> = cells
        .iter()
        .filter(|c| !c.filled())
        .map(|c| {
            format!(
                "{}: {} of {} drawn",
                c.cell.label(),
                c.train + c.test,
                c.wanted.train + c.wanted.test
            )
        })
        .collect();
    if labels.is_empty() {
        return String::new();
    }
    let mut text = String::from("Unfilled cells (rating bin, solver moves):\n\n");
    for named in first_of(&labels, 20) {
        text.push_str(&format!("- {named}\n"));
    }
    text.push('\n');
    text
}

/// What the card says of a release generated to order (`[generate]`): that
/// every puzzle is fresh when all are generated, and the funnel.
fn generated_paragraph(train: &[Puzzle], test: &[Puzzle], figures: &Value) -> String {
    let generated = train
        .iter()
        .chain(test)
        .filter(|p| p.get(Column::Source) == Some("selfplay"))
        .count();
    let total = train.len() + test.len();
    let figures = GenerateFigures::of(figures);
    let funnel = &figures.funnel;
    let mut text = String::from("## Generated to order\n\n");
    let started = |kind: &str| {
        train
            .iter()
            .chain(test)
            .filter(|p| p.get(Column::Source) == Some("selfplay"))
            .filter(|p| crate::chess::novelty::start_kind(&p.game_url) == kind)
            .count()
    };
    let (from_puzzles, from_games) = (started("public-puzzle"), started("human-game"));
    if generated == total && from_puzzles + from_games == 0 {
        text.push_str(&format!(
            "All {total} puzzles were generated by puzzleforge's self-play and mining, in games \
             from random openings: none comes from a public puzzle source. "
        ));
    } else if generated == total {
        text.push_str(&format!(
            "All {total} puzzles were generated by puzzleforge's self-play and mining. Their games \
             started from a random opening ({}), a human game's prefix ({from_games}) or a public \
             puzzle's position ({from_puzzles}); each puzzle's `GameUrl` names its start \
             (`start:puzzle:FILE:ID`, `start:game:FILE:GAME:PLIES`). None is the same position as \
             its start's line or a near copy of it (docs/novelty.md). ",
            generated - from_puzzles - from_games
        ));
    } else {
        text.push_str(&format!(
            "{generated} of {total} puzzles were generated by puzzleforge's self-play and mining; \
             their games started from a random opening ({}), a human game's prefix \
             ({from_games}) or a public puzzle's position ({from_puzzles}), as each one's \
             `GameUrl` says. ",
            generated - from_puzzles - from_games
        ));
    }
    text.push_str(&format!(
        "Games {}-{} were played ({}); {} positions analysed, {} candidates, {} puzzles mined, \
         {} dropped because their position is in an excluded puzzle file or an earlier release, \
         {} dropped as repeated positions, {} kept, {} verified. `manifest.json` (`generate`) \
         has the funnel and the counts per cell.\n\n",
        figures.first_game,
        figures.last_game,
        figures.stop.clone().unwrap_or_default().replace('_', " "),
        funnel.positions,
        funnel.candidates,
        funnel.mined,
        funnel.excluded,
        funnel.repeated_position,
        funnel.kept,
        funnel.verified,
    ));
    text.push_str(&novelty_line(generated, &figures));
    text
}

/// The card's novelty line: what the novelty rule dropped on the way, and
/// the public indexes the kept puzzles were checked against.
fn novelty_line(generated: usize, figures: &GenerateFigures) -> String {
    let funnel = &figures.funnel;
    let against = figures
        .novelty_against
        .iter()
        .map(|index| {
            format!(
                "{} ({} puzzles, sha256 {})",
                index.file_name(),
                index.ideas,
                index.sha256
            )
        })
        .collect::<Vec<_>>();
    let public = if against.is_empty() {
        "no public index was named in `[generate] exclude`".to_string()
    } else {
        format!(
            "near copies of public puzzles: 0 of the {generated} generated, against {}",
            against.join(", ")
        )
    };
    format!(
        "Novelty (docs/novelty.md): {public}. Mining dropped {} near copies of their games' \
         sources, generation {} near copies of excluded puzzles and {} of puzzles kept before \
         them (one idea once). `puzzleforge audit` re-checks a release against any index.\n\n",
        funnel.near_source, funnel.near_excluded, funnel.near_kept
    )
}

/// What the card reads of the generation funnel (`generate.figures`, as
/// the pipeline's generation writes it); a figure missing reads as null
/// or 0.
#[derive(Deserialize, Default)]
#[serde(default)]
struct GenerateFigures {
    first_game: Value,
    last_game: Value,
    stop: Option<String>,
    funnel: GenerationFunnel,
    novelty_against: Vec<crate::chess::novelty::index::IndexFile>,
}

impl GenerateFigures {
    fn of(figures: &Value) -> GenerateFigures {
        serde_json::from_value(figures.clone()).unwrap_or_default()
    }
}

/// What made the release, when `run` recorded it: the engines and the
/// input files with their sha256.
/// An aimed tier's paragraph: the model, its run and rating, the solve rate
/// asked for and how the window was read from the model's curve.
fn aim_paragraph(aim: &Aim) -> String {
    let rating = aim
        .puzzle_rating
        .as_ref()
        .map(|r| format!(", puzzle rating {r}"))
        .unwrap_or_default();
    format!(
        "Aimed at `{model}` (eval run `{run}`{rating}) to be solved {rate:.0}% of the time. \
         Its solve curve, fitted on {attempts} rated puzzle attempts ({solved} solved), is 50% at \
         {midpoint:.0} and its odds fall e-fold every {spread:.0} points; it gives {rate:.0}% at \
         {at:.0} (95%: {low:.0}-{high:.0}), and the tier holds the rating bins of that interval.\n\n",
        model = aim.model,
        run = aim.run,
        rate = 100.0 * aim.solve_rate,
        attempts = aim.attempts,
        solved = aim.solved,
        midpoint = aim.curve_midpoint,
        spread = aim.curve_spread,
        at = aim.rating,
        low = aim.low,
        high = aim.high,
    )
}

fn provenance_section(manifest: &ReleaseManifest, has_games: bool) -> String {
    let Some(sources) = &manifest.sources else {
        return String::new();
    };
    let mut text = String::from("## Provenance\n\n");
    let engines = [
        ("Engine", Some(&manifest.engine)),
        ("Second engine", manifest.second_engine.as_ref()),
    ];
    for (label, identity) in engines {
        if let Some(engine) = identity.and_then(EngineName::of) {
            text.push_str(&format!(
                "- {label}: {} (binary sha256 `{}`)\n",
                engine.id.as_deref().unwrap_or("?"),
                engine.sha256.as_deref().unwrap_or("?")
            ));
        }
    }
    for source in sources {
        text.push_str(&format!(
            "- `{}`: `{}` (sha256 `{}`)\n",
            source.key, source.path, source.sha256
        ));
    }
    text.push_str(
        "\n`manifest.json` records them (`sources`, `engine`, `second_engine`) with the \
         settings the puzzles were made with (`settings`; a generated release's profiles in \
         `generate.figures.settings`).",
    );
    if has_games {
        text.push_str(
            " `games.pgn` holds the self-play games the released generated puzzles came from; \
             such a puzzle's `GameUrl` is `games.pgn#game=<GameId>&ply=<Ply>` (its first move, \
             the opponent's, is ply `Ply` of that game).",
        );
    }
    text.push_str("\n\n");
    text
}

/// The puzzle the card's re-check example uses: the first generated
/// puzzle of the test split, else of train, else the first puzzle.
fn example_puzzle<'a>(
    train: &'a [Puzzle],
    test: &'a [Puzzle],
) -> Option<(&'a Puzzle, &'static str)> {
    let generated = |p: &&Puzzle| p.get(Column::Source) == Some("selfplay");
    test.iter()
        .find(generated)
        .map(|p| (p, "test"))
        .or_else(|| train.iter().find(generated).map(|p| (p, "train")))
        .or_else(|| test.first().map(|p| (p, "test")))
        .or_else(|| train.first().map(|p| (p, "train")))
}

/// "Reproduce the release": the command that runs the recorded run again
/// and compares every file byte for byte; only a release `run` wrote
/// records what it needs.
fn reproduce_section(manifest: &ReleaseManifest) -> String {
    let Some(run) = &manifest.run else {
        return String::new();
    };
    let mut text = String::from(
        "## Reproduce the release

",
    );
    text.push_str(
        "From this folder, with the inputs and the engine `manifest.json` names (each checked by \
         its sha256 before anything runs):\n\n```sh\npuzzleforge reproduce .\n```\n\n\
         It runs the recorded config again into a scratch folder and compares every file of the \
         release byte for byte, naming each that differs (exit 1) and the timing fields it skips; \
         it refuses (exit 2) a missing or changed input or another engine binary, naming it.\n\n",
    );
    if !run.kept_work.is_empty() {
        let kept: Vec<String> = run
            .kept_work
            .iter()
            .map(|k| format!("{} ({}; this build {})", k.what, k.recorded, k.this_build))
            .collect();
        text.push_str(&format!(
            "The run kept stored work made by other algorithm versions (`run --keep-stored-work`): \
             {}. A reproduction by this build's algorithms can differ there.\n\n",
            kept.join(", ")
        ));
    }
    text
}

/// "Re-check one puzzle": the commands that search one of the release's
/// puzzles again with the settings the release records.
fn recheck_section(train: &[Puzzle], test: &[Puzzle], manifest: &ReleaseManifest) -> String {
    let Some((puzzle, split)) = example_puzzle(train, test) else {
        return String::new();
    };
    let nodes = puzzle
        .get(Column::Nodes)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_string)
        .or_else(|| manifest.mine_nodes().map(|n| n.to_string()))
        .unwrap_or_else(|| "300000".to_string());
    let id = &puzzle.id;
    let mut text = String::from("## Re-check one puzzle\n\n");
    text.push_str(&format!(
        "Puzzle `{id}` ({split} split{}) searched again by today's engines, from this folder, \
         with the settings `manifest.json` records:\n\n",
        match puzzle.game_url.as_str() {
            "" => String::new(),
            url => format!(", from `{url}`"),
        }
    ));
    text.push_str(&format!(
        "```sh\npuzzleforge recheck . --puzzle {id}\npuzzleforge check {split}.csv --puzzle {id} --nodes {nodes}\n```\n\n"
    ));
    text.push_str(
        "`recheck` prints one JSON line per puzzle: what the release recorded (`BestScore`, \
         `SecondScore`, `VerifyDeeper`, `VerifySecond`, `Verified`), what the engines say now, \
         and `agrees`; it exits 2 when one disagrees. `check` shows the engine's two best moves \
         and scores in the solver's position (after the first move of `Moves`). \
         `docs/recheck.md` in puzzleforge's repository explains both.\n\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The card's funnel sentence names each figure `generate` records,
    /// and reads a missing one as 0.
    #[test]
    fn the_generated_paragraph_reads_the_funnel() {
        let figures = json!({
            "stop": "target_met",
            "first_game": 1,
            "last_game": 40,
            "funnel": {"positions": 900, "candidates": 80, "mined": 30, "excluded": 2,
                "repeated_position": 3, "kept": 25, "verified": 20},
        });
        let text = generated_paragraph(&[], &[], &figures);
        assert!(
            text.contains(
                "Games 1-40 were played (target met); 900 positions analysed, 80 candidates, \
                 30 puzzles mined, 2 dropped"
            ),
            "{text}"
        );
        assert!(text.contains("3 dropped as repeated positions, 25 kept, 20 verified"));
        let text = generated_paragraph(&[], &[], &json!({"funnel": {"kept": 5}}));
        assert!(
            text.contains("Games null-null were played (); 0 positions"),
            "{text}"
        );
        assert!(text.contains("5 kept, 0 verified"), "{text}");
    }

    /// A release whose games started at public puzzles' positions says so,
    /// and never that none comes from a public puzzle source.
    #[test]
    fn the_generated_paragraph_says_where_the_games_started() {
        let generated = |url: &str| {
            let mut puzzle = Puzzle {
                game_url: url.to_string(),
                ..Puzzle::default()
            };
            puzzle.set(Column::Source, "selfplay");
            puzzle
        };
        let figures = json!({"funnel": {"near_source": 4, "near_excluded": 2, "near_kept": 1},
            "novelty_against": [{"file": "data/lichess.idx", "sha256": "ab12", "ideas": 9}]});
        let train = [
            generated("start:puzzle:0123456789abcdef:XyZ12"),
            generated(""),
        ];
        let text = generated_paragraph(&train, &[generated("start:game:0123:7:20")], &figures);
        assert!(
            !text.contains("none comes from a public puzzle source"),
            "{text}"
        );
        assert!(
            text.contains(
                "started from a random opening (1), a human game's prefix (1) or a public \
                 puzzle's position (1)"
            ),
            "{text}"
        );
        assert!(
            text.contains("near copies of public puzzles: 0 of the 3 generated, against lichess.idx (9 puzzles, sha256 ab12)"),
            "{text}"
        );
        assert!(text.contains("Mining dropped 4 near copies"), "{text}");
    }
}

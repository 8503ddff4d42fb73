//! Settings files and flags: one section of a TOML file read into its typed
//! struct, and the one rule by which a command's flags override it.
//!
//! A stage's section is the same whether `run` hands it over from
//! `pipeline.toml` or a standalone command reads it with `--config`
//! ([`load_section`]). A flag given on the command line replaces the key of
//! the same name; a flag left out leaves the key as the file (or the
//! default) has it ([`flags_over`]).

use anyhow::{Context, Result, anyhow};
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_aux::serde_introspection::serde_introspect;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;

/// Reads the `[section]` table of a TOML file (other tables ignored); the
/// type's default when there is no file or no such table.
pub(crate) fn load_section<T: DeserializeOwned + Default>(
    path: Option<&Path>,
    section: &str,
) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    match read_table(path)?.remove(section) {
        None => Ok(T::default()),
        Some(value) => section_of(value, path, section),
    }
}

/// [`load_section`] for a section that was renamed: the table under its
/// former name is read as it, so a file written before the rename keeps
/// working (both tables at once is an error, as two `[section]` would be).
pub(crate) fn load_renamed_section<T: DeserializeOwned + Default>(
    path: Option<&Path>,
    section: &str,
    former: &str,
) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let mut table = read_table(path)?;
    let renamed = adopt_former_name(&mut table, section, former)
        .map_err(|why| bad_input(format!("config {}: {why}", path.display())))?;
    match table.remove(section) {
        None => Ok(T::default()),
        Some(value) => section_of(value, path, if renamed { former } else { section }),
    }
}

/// Moves a config's `[former]` table to `[section]`, the name it was
/// renamed to, so that it is read and checked as that section; says
/// whether it did. Both tables at once is an error (the why, in words).
pub(crate) fn adopt_former_name(
    table: &mut toml::Table,
    section: &str,
    former: &str,
) -> std::result::Result<bool, String> {
    match (table.contains_key(section), table.remove(former)) {
        (_, None) => Ok(false),
        (false, Some(value)) => {
            table.insert(section.to_string(), value);
            Ok(true)
        }
        (true, Some(_)) => Err(format!(
            "[{section}] and [{former}] (its former name) are the same section; keep [{section}]"
        )),
    }
}

/// [`load_section`] for a command whose `--config` file may also hold the
/// section's keys alone, without the `[section]` header (the form `rate
/// --config` has always read): a file without a `[section]` table is read
/// whole as the section.
pub(crate) fn load_section_or_bare<T: DeserializeOwned + Default>(
    path: Option<&Path>,
    section: &str,
) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let mut table = read_table(path)?;
    match table.remove(section) {
        Some(value) => section_of(value, path, section),
        None => toml::Value::Table(table).try_into().map_err(|e| {
            bad_input(format!(
                "config {}: no [{section}] table, and not the [{section}] keys alone: {e}",
                path.display()
            ))
        }),
    }
}

/// Resolves a path from the config relative to the config file's folder.
pub(crate) fn relative_to(config_path: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    match config_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

fn read_table(path: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read config {}: {e}", path.display())))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| bad_input(format!("config {}: {e}", path.display())))?;
    check_numbers(&table, &text, path)?;
    Ok(table)
}

/// Checks every number of a config file is finite, before any section is
/// read from it or any stage runs: TOML's `nan` and `inf` mean no setting,
/// and through JSON, where flags are laid over a section, a NaN would read
/// as a missing value. The error names the file, the dotted key, its value
/// and, where the key is written, its line. `run` and every standalone
/// command's `--config` read their file through this one check; the bounds
/// of the keys are checked on the section ([`crate::core::bounds`]).
pub(crate) fn check_numbers(table: &toml::Table, text: &str, path: &Path) -> Result<()> {
    check_table(table, "", text, path)
}

fn check_table(table: &toml::Table, section: &str, text: &str, path: &Path) -> Result<()> {
    for (key, value) in table {
        check_value(value, section, key, text, path)?;
    }
    Ok(())
}

fn check_value(
    value: &toml::Value,
    section: &str,
    key: &str,
    text: &str,
    path: &Path,
) -> Result<()> {
    let dotted = crate::core::bounds::dotted(section, key);
    let (number, shown) = match value {
        toml::Value::Table(inner) => return check_table(inner, &dotted, text, path),
        toml::Value::Array(items) => {
            // An array of tables (`[[release.bands]]`) names its keys under
            // the array's name, as its header does.
            for item in items {
                match item {
                    toml::Value::Table(inner) => check_table(inner, &dotted, text, path)?,
                    _ => check_value(item, section, key, text, path)?,
                }
            }
            return Ok(());
        }
        toml::Value::Float(number) => (*number, number.to_string()),
        toml::Value::Integer(number) => (*number as f64, number.to_string()),
        _ => return Ok(()),
    };
    if number.is_finite() {
        return Ok(());
    }
    Err(value_error(
        path,
        text,
        section,
        key,
        &shown,
        "must be a finite number",
    ))
}

/// A config value refused as the file is read: the file, the dotted key,
/// the value and, where the key is written, its line, then why.
pub(crate) fn value_error(
    path: &Path,
    text: &str,
    section: &str,
    key: &str,
    shown: &str,
    why: &str,
) -> anyhow::Error {
    let line = line_of(text, section, key)
        .map(|n| format!(" (line {n})"))
        .unwrap_or_default();
    bad_input(format!(
        "{}: {} = {shown}{line}: {why}",
        path.display(),
        crate::core::bounds::dotted(section, key)
    ))
}

/// The line (from 1) where `key` is set in the table `[section]` of a
/// config's text, when it is written there.
pub(crate) fn line_of(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut table = String::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            table = header.trim_matches(['[', ']', ' ']).to_string();
            continue;
        }
        if table == section
            && line
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return Some(index + 1);
        }
    }
    None
}

fn section_of<T: DeserializeOwned>(value: toml::Value, path: &Path, section: &str) -> Result<T> {
    value
        .try_into()
        .map_err(|e| bad_input(format!("config {} [{section}]: {e}", path.display())))
}

/// Lays the flags of a command line over a config section: each flag that
/// was given replaces the section's key of the same name.
///
/// `flags` serializes each flag under its key's name: serde's `rename` where
/// the flag's name differs (`--from` sets `date_from`), a dotted name for a
/// key of a sub-table (`client.workers`), `skip` for a flag that is not a
/// setting (input and output files). A given flag of an optional sub-table
/// that is not set (`second_engine.depth` without a second engine) sets
/// the table, its other keys at their defaults. A flag that was not given serializes
/// as null or an empty list and leaves its key alone; a switch serializes
/// through [`switch_on`] or [`switch_off`], so that leaving it off never
/// overrides the key.
///
/// A flag whose name is no key of the section is a mistake in the program,
/// not in the input: it fails every call, given or not, so the first test
/// that runs the command finds it.
pub fn flags_over<S, F>(section: &S, flags: &F) -> Result<S>
where
    S: Serialize + DeserializeOwned + crate::core::bounds::Bounded,
    F: Serialize,
{
    let mut merged = serde_json::to_value(section).context("serializing a config section")?;
    let Value::Object(flags) = serde_json::to_value(flags).context("serializing flags")? else {
        return Err(anyhow!("command-line flags must serialize to a map"));
    };
    if open_optional_tables(&mut merged, &flags) {
        // Each opened table is `{}`: read back through the section, it
        // holds its type's defaults under every key, for the flags to set.
        let opened: S = serde_json::from_value(merged)
            .map_err(|e| bad_input(format!("command-line flags: {e}")))?;
        merged = serde_json::to_value(opened).context("serializing a config section")?;
    }
    for (name, value) in flags {
        let no_key = || anyhow!("the flag for {name:?} names no key of its config section");
        let (table_path, leaf) = name.rsplit_once('.').unwrap_or(("", &name));
        let mut table = &mut merged;
        for key in table_path.split('.').filter(|key| !key.is_empty()) {
            table = table
                .as_object_mut()
                .and_then(|t| t.get_mut(key))
                .ok_or_else(no_key)?;
        }
        if table.is_null() {
            // An optional table left unset, and no flag of it given.
            continue;
        }
        let table = table.as_object_mut().ok_or_else(no_key)?;
        // A key the section writes out only when set away from its default
        // (so that fingerprints of the default read as before) is missing
        // from `merged`: it is still a field of the section.
        let is_field = table_path.is_empty() && serde_introspect::<S>().contains(&leaf);
        match table.get_mut(leaf) {
            Some(key) if is_given(&value) => *key = value,
            Some(_) => {}
            None if is_field => {
                if is_given(&value) {
                    table.insert(leaf.to_string(), value);
                }
            }
            None => return Err(no_key()),
        }
    }
    let merged: S = serde_json::from_value(merged)
        .map_err(|e| bad_input(format!("command-line flags: {e}")))?;
    // The file's keys and the flags together, within their bounds.
    crate::core::bounds::check_section(&merged)?;
    Ok(merged)
}

/// Sets each optional table that a given flag of a dotted name reaches
/// (`second_engine.path` while `second_engine` is unset) to `{}`; whether
/// any was.
fn open_optional_tables(merged: &mut Value, flags: &serde_json::Map<String, Value>) -> bool {
    let mut opened = false;
    for name in flags.keys().filter(|name| is_given(&flags[name.as_str()])) {
        let Some((table_path, _)) = name.rsplit_once('.') else {
            continue;
        };
        let mut table = &mut *merged;
        for key in table_path.split('.') {
            let Some(entry) = table.as_object_mut().and_then(|t| t.get_mut(key)) else {
                break;
            };
            if entry.is_null() {
                *entry = Value::Object(serde_json::Map::new());
                opened = true;
            }
            table = entry;
        }
    }
    opened
}

/// Parses a number flag that must be finite (the clap value parser of the
/// float flags): JSON, through which [`flags_over`] lays flags over a
/// section, has no NaN or infinity, so such a value would pass as a flag
/// left out.
pub(crate) fn finite_number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(number) if number.is_finite() => Ok(number),
        _ => Err(format!("{text:?} is not a finite number")),
    }
}

fn is_given(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// Serializes a switch that turns its key on (`--exhaustive`): given, the
/// key becomes `true`; left off, the key stays as configured.
pub(crate) fn switch_on<S: Serializer>(given: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    match given {
        true => serializer.serialize_bool(true),
        false => serializer.serialize_none(),
    }
}

/// Serializes a switch that turns its key off (`--include-bots` for
/// `exclude_bots`): given, the key becomes `false`; left off, the key stays
/// as configured.
pub(crate) fn switch_off<S: Serializer>(given: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    match given {
        true => serializer.serialize_bool(false),
        false => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
    struct Client {
        workers: usize,
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
    struct Section {
        depth: u32,
        nodes: Option<u64>,
        themes: Vec<String>,
        exhaustive: bool,
        exclude_bots: bool,
        client: Client,
    }

    impl crate::core::bounds::Bounded for Section {
        const BOUNDS: &'static [crate::core::bounds::Bound] = &[];
    }

    fn section() -> Section {
        Section {
            depth: 18,
            nodes: Some(5),
            themes: vec!["fork".into()],
            exhaustive: true,
            exclude_bots: true,
            client: Client { workers: 4 },
        }
    }

    #[derive(Serialize, Default)]
    struct Flags {
        depth: Option<u32>,
        nodes: Option<u64>,
        themes: Vec<String>,
        #[serde(serialize_with = "switch_on")]
        exhaustive: bool,
        #[serde(rename = "exclude_bots", serialize_with = "switch_off")]
        include_bots: bool,
        #[serde(rename = "client.workers")]
        workers: Option<usize>,
        #[serde(skip)]
        #[allow(dead_code)]
        output: String,
    }

    #[test]
    fn flags_left_out_keep_every_key() {
        assert_eq!(
            flags_over(&section(), &Flags::default()).unwrap(),
            section()
        );
    }

    #[test]
    fn each_given_flag_replaces_its_key() {
        let flags = Flags {
            depth: Some(12),
            themes: vec!["pin".into()],
            include_bots: true,
            workers: Some(2),
            ..Flags::default()
        };
        let merged = flags_over(&section(), &flags).unwrap();
        assert_eq!(
            merged,
            Section {
                depth: 12,
                nodes: Some(5),
                themes: vec!["pin".into()],
                exhaustive: true,
                exclude_bots: false,
                client: Client { workers: 2 },
            }
        );
    }

    #[test]
    fn a_flag_without_a_key_is_an_error_even_when_left_out() {
        #[derive(Serialize)]
        struct Stray {
            dept: Option<u32>,
        }
        let error = flags_over(&section(), &Stray { dept: None }).unwrap_err();
        assert!(format!("{error}").contains("dept"), "{error}");
        assert_eq!(crate::core::error::exit_code(&error), 1);
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Spare {
        path: String,
        depth: u32,
    }

    impl Default for Spare {
        fn default() -> Self {
            Self {
                path: "spare".into(),
                depth: 12,
            }
        }
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
    #[serde(deny_unknown_fields, default)]
    struct WithSpare {
        factor: u32,
        spare: Option<Spare>,
    }

    impl crate::core::bounds::Bounded for WithSpare {
        const BOUNDS: &'static [crate::core::bounds::Bound] = &[];
    }

    #[derive(Serialize, Default)]
    struct SpareFlags {
        #[serde(rename = "spare.path")]
        spare: Option<String>,
        #[serde(rename = "spare.depth")]
        spare_depth: Option<u32>,
    }

    #[test]
    fn a_flag_of_an_optional_table_sets_it_from_its_defaults() {
        let unset = WithSpare::default();
        assert_eq!(flags_over(&unset, &SpareFlags::default()).unwrap(), unset);
        let flags = SpareFlags {
            spare: Some("other".into()),
            ..SpareFlags::default()
        };
        let merged = flags_over(&unset, &flags).unwrap();
        let spare = Spare {
            path: "other".into(),
            depth: 12,
        };
        assert_eq!(merged.spare, Some(spare));
        let set = WithSpare {
            factor: 3,
            spare: Some(Spare {
                path: "mine".into(),
                depth: 5,
            }),
        };
        let flags = SpareFlags {
            spare_depth: Some(8),
            ..SpareFlags::default()
        };
        let merged = flags_over(&set, &flags).unwrap();
        let spare = Spare {
            path: "mine".into(),
            depth: 8,
        };
        assert_eq!(
            merged,
            WithSpare {
                factor: 3,
                spare: Some(spare)
            }
        );
    }

    #[test]
    fn a_section_is_read_from_its_table_or_from_a_bare_file() {
        let dir = tempfile::tempdir().unwrap();
        let piped = dir.path().join("pipeline.toml");
        std::fs::write(&piped, "[other]\nx = 1\n[client]\nworkers = 3\n").unwrap();
        let client: Client = load_section(Some(&piped), "client").unwrap();
        assert_eq!(client.workers, 3);
        let bare = dir.path().join("client.toml");
        std::fs::write(&bare, "workers = 5\n").unwrap();
        let client: Client = load_section_or_bare(Some(&bare), "client").unwrap();
        assert_eq!(client.workers, 5);
        let client: Client = load_section_or_bare(Some(&piped), "client").unwrap();
        assert_eq!(client.workers, 3);
        let missing = dir.path().join("missing.toml");
        let error = load_section::<Section>(Some(&missing), "client").unwrap_err();
        assert_eq!(crate::core::error::exit_code(&error), 2);
    }
}

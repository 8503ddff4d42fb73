//! Settings files: one section of a TOML file read into its typed struct.
//! A stage's section is the same whether `run` hands it over from
//! `pipeline.toml` or a standalone command reads it with `--config`.

use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::Path;

use crate::core::error::bad_input;

/// Reads the `[section]` table of a TOML file (other tables ignored); the
/// type's default when there is no file or no such table.
pub fn load_section<T: for<'de> Deserialize<'de> + Default>(
    path: Option<&Path>,
    section: &str,
) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| bad_input(format!("config {}: {e}", path.display())))?;
    match table.get(section) {
        None => Ok(T::default()),
        Some(value) => value
            .clone()
            .try_into()
            .map_err(|e| bad_input(format!("config {} [{section}]: {e}", path.display()))),
    }
}

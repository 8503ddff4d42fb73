//! The nets' weight files as a run records them: each file's name and
//! sha256, so a store key or a manifest names the nets by their bytes, not
//! by the folder they were read from.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

use super::nets::{MAIA_RATINGS, weight_file_name};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;

/// One net's weight file: its rating, file name and sha256.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NetFile {
    pub rating: u32,
    pub file: String,
    pub sha256: String,
}

/// The file and sha256 of the net of each of `ratings` in `dir`, in the
/// order given. The one place the nets are fingerprinted: a missing or
/// unreadable file, or a rating with no Maia-1 net, is a bad-input error
/// naming the folder, the rating, the file and the reason.
pub fn net_files(dir: &Path, ratings: &[u32]) -> Result<Vec<NetFile>> {
    ratings
        .iter()
        .map(|&rating| {
            let file = weight_file_name(rating);
            if !MAIA_RATINGS.contains(&rating) {
                return Err(bad_input(format!(
                    "Maia net of rating {rating}: no such Maia-1 net (the nine are 1100, \
                     1200, ..., 1900, files maia-1100.pb.gz .. maia-1900.pb.gz in {})",
                    dir.display()
                )));
            }
            let path = dir.join(&file);
            let sha256 = sha256_file(&path).map_err(|e| {
                bad_input(format!(
                    "Maia net of rating {rating}: {} cannot be read ({}); the Maia-1 nets are \
                     the files maia-1100.pb.gz .. maia-1900.pb.gz in the folder {}",
                    path.display(),
                    e.root_cause(),
                    dir.display()
                ))
            })?;
            Ok(NetFile {
                rating,
                file,
                sha256,
            })
        })
        .collect()
}

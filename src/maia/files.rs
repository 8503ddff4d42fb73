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

/// The sha256 of each Maia-1 net as published (`models/maia/SOURCE.md`),
/// by rating: the pins every command that plays or rates with a net
/// checks its file against (the committed rating model records the same
/// nine, and `rate` checks the nets against those).
pub const MAIA_SHA256: [(u32, &str); 9] = [
    (
        1100,
        "e1cf1cd0c96b8a4fa6a275f4b9fd54ed1ffebf9fe44641b9fceded310e9619c4",
    ),
    (
        1200,
        "ead4ba953f233ae732999ebc1e2b675378148527ebcfad2f0acbc5e4c224d98e",
    ),
    (
        1300,
        "36195f87bf4761834baa0bf87472b18509a7261a9d7d6f1a8443261369a733f2",
    ),
    (
        1400,
        "d5353ea6766356dad2d28920c6692f37a5f30963767f1a3105d33b4d0af011e8",
    ),
    (
        1500,
        "35ab6f20421d59e1df3b17c5a5016947af4c6761368ef84044a9a9c7619a9a00",
    ),
    (
        1600,
        "d2c9e5948581acf4b9fc0b1e720c5dc0fe64ce80cfc4a239d3f8a42e1176c876",
    ),
    (
        1700,
        "d277eacd792d340a30abb464dc65127254e65cac57abca17facc469889b96478",
    ),
    (
        1800,
        "0031ad7c4256b1fd09fbebd28418d644d68b26cd2a45df4967ccf5c7ec9c4965",
    ),
    (
        1900,
        "e2f565f42d7cd9f122557e6dc4eb84e5bbaedceda1d404dc485d3611c7c97a12",
    ),
];

/// Checks each of `nets` (found in `dir`) is the published Maia-1 net of
/// its rating: a swapped or damaged file is a bad-input error naming it,
/// its sha256 and the pinned one.
pub fn check_pinned(dir: &Path, nets: &[NetFile]) -> Result<()> {
    for net in nets {
        let pinned = MAIA_SHA256
            .iter()
            .find(|(rating, _)| *rating == net.rating)
            .map(|(_, sha256)| *sha256);
        if pinned != Some(net.sha256.as_str()) {
            return Err(bad_input(format!(
                "{}: its sha256 {} is not the Maia-1 {} net's {} (models/maia/SOURCE.md): \
                 the nets were swapped or damaged; restore the published file",
                dir.join(&net.file).display(),
                net.sha256,
                net.rating,
                pinned.unwrap_or("(none)")
            )));
        }
    }
    Ok(())
}

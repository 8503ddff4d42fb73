//! The earlier releases a run's release must not repeat: found under the
//! output folder (each checked against its manifest), or as a written
//! release's manifest records them.

use anyhow::Result;
use std::path::{Component, Path, PathBuf};

use crate::pipeline::stage::RunContext;
use crate::stages::StageName;
use crate::stages::release::folder::{ReleaseFolder, holding_folder};
use crate::stages::release::manifest::ReleaseManifest;

/// The earlier releases whose puzzles this release must not repeat,
/// outside its draw (which excludes those found under the output folder's
/// lock, [`finished_releases`]): for a release already written, the ones
/// its manifest records (it never learns of releases written after it);
/// for a new one, every release under the output folder (other release
/// names). Each is first checked against its manifest.
pub(crate) fn earlier_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
    let own = ctx.stage_dir(StageName::Release);
    let releases = match recorded_exclusions(&own)? {
        Some(recorded) => recorded,
        None => releases_found(ctx, &own)?,
    };
    for release in &releases {
        ReleaseFolder::at(release).check()?;
    }
    Ok(releases)
}

/// Every release under the output folder but this run's.
pub(crate) fn releases_found(ctx: &RunContext, own: &Path) -> Result<Vec<PathBuf>> {
    let root = holding_folder(&ctx.release_dir);
    let mut releases = ReleaseFolder::find_under(root, own)?;
    let this_run = ctx.release_dir.canonicalize().ok();
    releases.retain(|r| {
        r.canonicalize()
            .ok()
            .zip(this_run.as_ref())
            .is_none_or(|(r, this)| !r.starts_with(this))
    });
    Ok(releases)
}

/// Every finished release under the output folder but this run's, each
/// checked against its manifest: what a release drawn now excludes. Read
/// while the output folder's lock is held, so no release is half written.
pub(crate) fn finished_releases(ctx: &RunContext) -> Result<Vec<PathBuf>> {
    let own = ctx.stage_dir(StageName::Release);
    let releases = releases_found(ctx, &own)?;
    for release in &releases {
        ReleaseFolder::at(release).check()?;
    }
    Ok(releases)
}

/// The release folders a written release excluded, as its manifest records
/// them (its `exclusions.files`, relative to the release folder); `None`
/// when `release` holds no finished release.
fn recorded_exclusions(release: &Path) -> Result<Option<Vec<PathBuf>>> {
    let Some(manifest) = ReleaseManifest::load(release)? else {
        return Ok(None);
    };
    let mut folders: Vec<PathBuf> = Vec::new();
    for file in &manifest.exclusions.files {
        if let Some(folder) = lexically_normal(&release.join(&file.path)).parent()
            && !folders.iter().any(|f| f == folder)
        {
            folders.push(folder.to_path_buf());
        }
    }
    Ok(Some(folders))
}

/// `path` with `.` and `name/..` removed, so that a release named from
/// another's manifest (`out/b/release/../../a/release`) has the name it has
/// when found (`out/a/release`), and so the same fingerprint.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(normal.components().next_back(), Some(Component::Normal(_))) =>
            {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

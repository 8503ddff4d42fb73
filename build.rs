//! Records the build identity the binary names in `--version` and in every
//! record it writes (`PUZZLEFORGE_BUILD`, read by `src/core/build.rs`):
//!
//! - `git:COMMIT` when built from a clean git checkout of this crate,
//! - `git:COMMIT+dirty` when the files compiled into the binary differ from
//!   the commit (only those count: a changed test or doc does not),
//! - `sha256:HASH` outside git (`cargo install` from a tarball, a vendored
//!   copy): the sha256 of those files, path and bytes.
//!
//! Cargo reruns this script only when a file it watches changes: the
//! compiled files, and in git the checked-out ref and the index, so a
//! commit, a checkout or a `git add` renames the build without rebuilding
//! anything else.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files compiled into the binary, relative to the crate's folder:
/// its sources, manifest, lock file, this script and the data files the
/// sources include.
const COMPILED: [&str; 5] = [
    "src",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "models/lichess_theme_mix.json",
];

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    for path in COMPILED {
        println!("cargo:rerun-if-changed={path}");
    }
    let identity = match git_identity(&root) {
        Some(identity) => identity,
        None => format!("sha256:{}", sources_sha256(&root)),
    };
    println!("cargo:rustc-env=PUZZLEFORGE_BUILD={identity}");
}

/// `git:COMMIT[+dirty]` when `root` is the top of a git work tree (not a
/// folder inside another project's repository); `None` otherwise or
/// without git.
fn git_identity(root: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        // `--no-optional-locks`: `status` would otherwise refresh the
        // index, a file this script watches, and rerun itself forever.
        let output = Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .current_dir(root)
            .output()
            .ok()?;
        output.status.success().then(|| {
            String::from_utf8_lossy(&output.stdout)
                .trim_end()
                .to_string()
        })
    };
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(root).ok()? {
        return None;
    }
    let commit = git(&["rev-parse", "HEAD"])?;
    // What decides the commit and the dirty flag: the ref checked out (or
    // HEAD itself when detached), the packed refs, and the index.
    for name in ["HEAD", "index", "packed-refs"] {
        watch_git_path(&git, name);
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch_git_path(&git, &branch);
    }
    let mut status = vec!["status", "--porcelain", "--"];
    status.extend(COMPILED);
    let dirty = !git(&status)?.is_empty();
    Some(format!("git:{commit}{}", if dirty { "+dirty" } else { "" }))
}

/// Watches the git file `name` (`git rev-parse --git-path`: a linked work
/// tree's HEAD and index are its own, its refs the main repository's).
fn watch_git_path(git: &impl Fn(&[&str]) -> Option<String>, name: &str) {
    if let Some(path) = git(&["rev-parse", "--git-path", name]) {
        let path = PathBuf::from(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// The sha256 over every compiled file: its path relative to `root`, a NUL,
/// its length and its bytes, in path order.
fn sources_sha256(root: &Path) -> String {
    let mut files = Vec::new();
    for path in COMPILED {
        collect(&root.join(path), &mut files);
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap_or(&file);
        let bytes = std::fs::read(&file).unwrap_or_default();
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            collect(&entry.path(), files);
        }
    } else if path.is_file() {
        files.push(path.to_path_buf());
    }
}

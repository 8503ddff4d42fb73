//! The build identity: which source this binary was built from, as
//! `build.rs` found it (`git:COMMIT`, `git:COMMIT+dirty`, or
//! `sha256:HASH` of the compiled files outside git). Every record the
//! pipeline writes names it beside the crate version. It never decides
//! whether stored work is reused (each stage's algorithm version does), so
//! a new commit that changes no algorithm redoes nothing.

/// The build identity of this binary.
pub const BUILD: &str = env!("PUZZLEFORGE_BUILD");

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `--version` prints after the program's name.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (build ",
    env!("PUZZLEFORGE_BUILD"),
    ")"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity is one of the three forms `build.rs` writes; whether
    /// the tree is clean depends on where the tests run, so either is fine.
    #[test]
    fn the_build_identity_names_a_commit_or_a_source_hash() {
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
        let ok = match BUILD.split_once(':') {
            Some(("git", rest)) => hex(rest.strip_suffix("+dirty").unwrap_or(rest), 40),
            Some(("sha256", rest)) => hex(rest, 64),
            _ => false,
        };
        assert!(ok, "{BUILD}");
        assert!(LONG_VERSION.starts_with(VERSION), "{LONG_VERSION}");
    }
}

//! Helpers shared by the tests that drive the `puzzleforge` binary.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary in `dir` with `args`.
pub fn puzzleforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_puzzleforge"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run puzzleforge")
}

/// The `--json` summary of a run that must have succeeded: exactly one
/// JSON object on stdout.
pub fn summary(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "puzzleforge failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "exactly one JSON object on stdout: {stdout}"
    );
    serde_json::from_str(lines[0]).unwrap()
}

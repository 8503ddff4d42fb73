//! `puzzleforge reproduce`'s flags, laid into `crate::reproduce`'s
//! arguments.

use std::path::PathBuf;

use crate::reproduce::ReproduceArgs;

/// `puzzleforge reproduce`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReproduceFlags {
    /// A release folder `run` wrote (`output/<release>`), or its release
    /// stage folder (the one holding `manifest.json`).
    #[arg(value_name = "RELEASE")]
    pub release: PathBuf,
    /// The folder to repeat the run in (its output folder; new or empty),
    /// kept afterwards. By default a temporary folder, removed when every
    /// file is identical.
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// The engine binary, when the release's run was given `run --engine`
    /// (checked against the sha256 its manifest records).
    #[arg(long, value_name = "PATH")]
    pub engine: Option<PathBuf>,
    /// The folder the recorded config's paths are relative to, when it
    /// cannot be worked out from where the release sits under the config's
    /// `pipeline.output_dir`.
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
}

impl ReproduceFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> ReproduceArgs {
        let Self {
            release,
            scratch,
            engine,
            config_dir,
        } = self.clone();
        ReproduceArgs {
            release,
            scratch,
            engine,
            config_dir,
        }
    }
}

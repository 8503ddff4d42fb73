//! The puzzleforge command line: parses it and runs one command
//! ([`puzzleforge::cli`] holds the commands and their flags).

use puzzleforge::core::error::{EXIT_SHORTFALL, exit_code};

fn main() {
    let (json, result) = puzzleforge::cli::parse_and_run();
    match result {
        Ok(summary) => {
            if !summary.human.is_empty() {
                eprintln!("{}", summary.human.trim_end());
            }
            if json {
                println!("{}", summary.json);
            }
            if let Some(shortfall) = summary.shortfall {
                eprintln!("puzzleforge: error: {shortfall}");
                std::process::exit(summary.exit_code.unwrap_or(EXIT_SHORTFALL));
            }
        }
        Err(error) => {
            eprintln!("puzzleforge: error: {error:#}");
            std::process::exit(exit_code(&error));
        }
    }
}

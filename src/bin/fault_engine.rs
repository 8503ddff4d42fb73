//! puzzleforge-fault-engine: a FAKE engine for tests only. It wraps a real
//! Stockfish and injects one fault on demand, because a real engine does not
//! die, hang or print garbage when a test needs it to.
//!
//! It is configured through UCI options that it keeps to itself (they never
//! reach Stockfish), so a pool configures it like any engine:
//!
//! * `FaultMode`: `exit` (exit at once), `hang` (stop answering, keep
//!   reading), `garbage` (print one unparseable line, then carry on).
//! * `FaultAfter`: fault on the k-th command received (Fault* options are
//!   not counted).
//! * `FaultStateDir` + `FaultTimes`: at most this many faults in total over
//!   all processes sharing the directory (claimed with marker files), so a
//!   restarted process behaves; without them every process faults.
//!
//! The wrapped engine is `PUZZLEFORGE_FAULT_TARGET` or /usr/games/stockfish.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
struct FaultPlan {
    mode: Option<String>,
    after: Option<u64>,
    state_dir: Option<PathBuf>,
    times: Option<u32>,
}

impl FaultPlan {
    /// Reads one `setoption name Fault<Name> value <v>` (given without its
    /// `setoption name Fault` prefix); unknown names are ignored.
    fn set(&mut self, rest: &str) {
        let (name, value) = rest.split_once(" value ").unwrap_or((rest, ""));
        let value = value.trim();
        match name.trim() {
            "Mode" => self.mode = Some(value.to_string()),
            "After" => self.after = value.parse().ok(),
            "StateDir" => self.state_dir = Some(PathBuf::from(value)),
            "Times" => self.times = value.parse().ok(),
            _ => {}
        }
    }

    /// Claims one fault from the shared budget (marker files), if any is left.
    fn claim(&self) -> bool {
        let Some(dir) = &self.state_dir else {
            return true;
        };
        (0..self.times.unwrap_or(1)).any(|index| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dir.join(format!("fault-{index}")))
                .is_ok()
        })
    }
}

fn main() {
    let target = std::env::var_os("PUZZLEFORGE_FAULT_TARGET")
        .map_or_else(|| PathBuf::from("/usr/games/stockfish"), PathBuf::from);
    let mut engine = match Command::new(&target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(engine) => engine,
        Err(error) => {
            eprintln!(
                "puzzleforge-fault-engine: cannot start {}: {error}",
                target.display()
            );
            std::process::exit(1);
        }
    };
    let (Some(mut engine_in), Some(engine_out)) = (engine.stdin.take(), engine.stdout.take())
    else {
        std::process::exit(1);
    };
    let hung = Arc::new(AtomicBool::new(false));
    forward_replies(engine_out, Arc::clone(&hung));
    relay_commands(&mut engine_in, &hung);
    drop(engine_in);
    let _ = engine.wait();
}

/// Copies the engine's lines to our stdout on a thread of their own, until
/// the engine ends or the fault hangs us (then they are swallowed).
fn forward_replies(engine_out: std::process::ChildStdout, hung: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        for line in BufReader::new(engine_out).lines() {
            let Ok(line) = line else { return };
            if hung.load(Ordering::SeqCst) {
                continue;
            }
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "{line}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return;
            }
        }
    });
}

/// Passes our stdin's commands to the engine, reading the `Fault*` options
/// as the plan and injecting the fault when it is due; until `quit` or the
/// end of either stream.
fn relay_commands(engine_in: &mut std::process::ChildStdin, hung: &AtomicBool) {
    let mut plan = FaultPlan::default();
    let mut commands = 0u64;
    let mut faulted = false;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Some(rest) = line.strip_prefix("setoption name Fault") {
            plan.set(rest);
            continue;
        }
        if hung.load(Ordering::SeqCst) {
            continue;
        }
        commands += 1;
        let due = plan.after.is_some_and(|after| commands >= after);
        if due && !faulted && plan.mode.is_some() && plan.claim() {
            faulted = true;
            if inject(plan.mode.as_deref(), hung) {
                continue;
            }
        }
        if writeln!(engine_in, "{line}")
            .and_then(|()| engine_in.flush())
            .is_err()
        {
            break;
        }
        if line.trim() == "quit" {
            break;
        }
    }
}

/// Does the fault `mode`; whether the command that triggered it is
/// swallowed (a hang), rather than passed on.
fn inject(mode: Option<&str>, hung: &AtomicBool) -> bool {
    match mode {
        Some("exit") => std::process::exit(3),
        Some("hang") => {
            hung.store(true, Ordering::SeqCst);
            true
        }
        Some("garbage") => {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(
                stdout,
                "info depth ?? score cp garbage from the fault engine"
            );
            let _ = stdout.flush();
            false
        }
        _ => false,
    }
}

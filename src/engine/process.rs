//! One supervised UCI engine process (Stockfish).
//!
//! Every wait on the engine has a deadline: a reader thread forwards stdout
//! lines over a channel and the engine side waits with `recv_timeout`. A dead
//! process, a missed deadline or output that breaks the protocol is a *fault*
//! ([`EngineError::is_fault`]); the pool kills the process, restarts it and
//! redoes the unit. Not being able to start the engine at all, the engine
//! rejecting a configured option, or a program that never answers `uciok`
//! within the handshake deadline (it is not a UCI engine), is *fatal*.

use crate::engine::uci::{self, EngineLine, Score};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Hash size (MB) used when the engine definition does not set one.
pub(crate) const DEFAULT_HASH_MB: u32 = 16;

/// How to start an engine: the executable and the UCI options to set.
/// `Threads` is always 1 (single-threaded searches are reproducible) and
/// `MultiPV` is set per request, so neither may appear in `options`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    pub path: PathBuf,
    pub options: Vec<(String, String)>,
}

/// The on-disk engine definition (engines/stockfish.toml).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineDefinition {
    path: PathBuf,
    #[serde(default)]
    options: BTreeMap<String, toml::Value>,
}

impl EngineSpec {
    /// A spec with the default options (Hash = 16).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            options: vec![("Hash".to_string(), DEFAULT_HASH_MB.to_string())],
        }
    }

    /// Sets (or replaces) one UCI option.
    pub fn with_option(mut self, name: &str, value: impl ToString) -> Self {
        let value = value.to_string();
        match self.options.iter_mut().find(|(key, _)| key == name) {
            Some(entry) => entry.1 = value,
            None => self.options.push((name.to_string(), value)),
        }
        self
    }

    /// Reads an engine definition: `path = "..."` and an `[options]` table of
    /// UCI options (`Hash = 16`). A relative `path` is relative to the file.
    pub fn from_file(file: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read engine definition {}", file.display()))?;
        let definition: EngineDefinition = toml::from_str(&text).map_err(|error| {
            crate::core::error::bad_input(format!(
                "bad engine definition {}: {}",
                file.display(),
                error.message()
            ))
        })?;
        let path = if definition.path.is_relative() && definition.path.components().count() > 1 {
            file.parent()
                .unwrap_or(Path::new("."))
                .join(&definition.path)
        } else {
            definition.path
        };
        let mut spec = EngineSpec::new(path);
        for (name, value) in definition.options {
            let value = match value {
                toml::Value::String(text) => text,
                toml::Value::Integer(number) => number.to_string(),
                toml::Value::Boolean(flag) => flag.to_string(),
                toml::Value::Float(number) => number.to_string(),
                other => crate::bail_input!(
                    "bad engine definition {}: option {name} has unsupported value {other}",
                    file.display()
                ),
            };
            spec = spec.with_option(&name, value);
        }
        spec.validate().map_err(|error| {
            crate::core::error::bad_input(format!("{}: {error}", file.display()))
        })?;
        Ok(spec)
    }

    /// Rejects options puzzleforge manages itself.
    pub fn validate(&self) -> Result<(), String> {
        for (name, value) in &self.options {
            if name.eq_ignore_ascii_case("Threads") && value != "1" {
                return Err(format!(
                    "option Threads = {value} is not allowed: engines run single-threaded so searches are reproducible"
                ));
            }
            if name.eq_ignore_ascii_case("MultiPV") {
                return Err("option MultiPV is set per search and may not be configured".into());
            }
        }
        Ok(())
    }
}

/// How far a search goes. Never time: searches must be reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    Nodes(u64),
    Depth(u32),
}

/// One search: the position (FEN plus moves played from it), the limit and
/// the number of principal variations. Typed, so the text sent to the
/// engine was checked where it entered the program; both print back as
/// they were read (see [`crate::chess::line::read_fen`]), castling as the
/// king's move (`e1g1`), as Stockfish reads it in standard chess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub fen: Fen,
    pub moves: Vec<UciMove>,
    pub limit: Limit,
    pub multipv: u32,
}

/// The final report for one principal variation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PvLine {
    pub multipv: u32,
    pub score: Score,
    pub bound: uci::Bound,
    pub depth: u32,
    pub pv: Vec<UciMove>,
    pub wdl: Option<[u32; 3]>,
}

/// What one search produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchResult {
    /// The last info (with score and pv) per multipv rank, sorted 1, 2, ...
    /// When the node limit stops an iteration, Stockfish's last line for a
    /// rank may be a bound; `PvLine::bound` says so.
    pub lines: Vec<PvLine>,
    /// `None` for `bestmove (none)` (mated or stalemated position).
    pub best_move: Option<UciMove>,
    /// Nodes searched (from the last info line that reports them).
    pub nodes: u64,
    /// Multipv-1 first move and score at each completed depth, ascending.
    pub best_by_depth: Vec<(u32, UciMove, Score)>,
}

/// Why talking to an engine failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The process exited, closed its output or refused input.
    #[error("engine died: {0}")]
    Died(String),
    /// No answer within the deadline.
    #[error("engine did not answer {waiting_for} within {seconds:.1} s")]
    Timeout { waiting_for: String, seconds: f64 },
    /// Output that breaks the UCI protocol.
    #[error("engine sent garbage: {0}")]
    Garbage(String),
    /// The engine cannot be used at all (cannot start, rejects an option).
    #[error("{0}")]
    Fatal(String),
    /// The program did not complete `uci` -> `uciok`: it is not a UCI
    /// engine, and restarting it will not make it one.
    #[error(
        "{path} is not a UCI engine: no uciok within the {seconds:.1} s handshake deadline ({reason})"
    )]
    NotAnEngine {
        path: String,
        seconds: f64,
        reason: String,
    },
}

impl EngineError {
    /// Faults are worth a restart and a retry; fatal errors are not.
    pub(crate) fn is_fault(&self) -> bool {
        !matches!(
            self,
            EngineError::Fatal(_) | EngineError::NotAnEngine { .. }
        )
    }
}

enum ReaderEvent {
    Line(String),
    NotUtf8(String),
    ReadFailed(String),
}

/// A running engine process after a successful `uci` handshake.
pub struct Engine {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<ReaderEvent>,
    reader: Option<JoinHandle<()>>,
    id_name: String,
    /// Defaults declared in the handshake, to restore changed options.
    defaults: BTreeMap<String, String>,
    deadline: Duration,
    /// Bound on each handshake wait (`uciok`, the first `readyok`).
    handshake_deadline: Duration,
    multipv: u32,
}

impl Engine {
    /// Starts the process, performs the handshake, sets Threads = 1 and the
    /// spec's options and waits for `readyok`. `deadline` bounds every wait.
    pub fn start(spec: &EngineSpec, deadline: Duration) -> Result<Engine, EngineError> {
        Self::start_with_handshake(spec, deadline, deadline)
    }

    /// Like [`Engine::start`], but the handshake (`uciok`, then `readyok`
    /// after the options) waits at most `handshake_deadline` (capped by
    /// `deadline`): a program that is not an engine is found in seconds.
    pub fn start_with_handshake(
        spec: &EngineSpec,
        handshake_deadline: Duration,
        deadline: Duration,
    ) -> Result<Engine, EngineError> {
        spec.validate().map_err(EngineError::Fatal)?;
        let mut child = Command::new(&spec.path)
            // Its own process group, so that ending the engine ends every
            // process a wrapper script started too ([`Engine::kill_group`]).
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                EngineError::Fatal(format!(
                    "cannot start engine {}: {error}",
                    spec.path.display()
                ))
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (sender, receiver) = mpsc::channel();
        let reader = stdout.map(|stdout| {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut buffer = Vec::new();
                loop {
                    buffer.clear();
                    let event = match reader.read_until(b'\n', &mut buffer) {
                        Ok(0) => return,
                        Ok(_) => {
                            while buffer
                                .last()
                                .is_some_and(|byte| *byte == b'\n' || *byte == b'\r')
                            {
                                buffer.pop();
                            }
                            match String::from_utf8(buffer.clone()) {
                                Ok(line) => ReaderEvent::Line(line),
                                Err(_) => ReaderEvent::NotUtf8(
                                    String::from_utf8_lossy(&buffer).into_owned(),
                                ),
                            }
                        }
                        Err(error) => ReaderEvent::ReadFailed(error.to_string()),
                    };
                    let failed = matches!(event, ReaderEvent::ReadFailed(_));
                    if sender.send(event).is_err() || failed {
                        return;
                    }
                }
            })
        });
        let mut engine = Engine {
            child,
            stdin,
            lines: receiver,
            reader,
            id_name: String::new(),
            defaults: BTreeMap::new(),
            deadline,
            handshake_deadline: handshake_deadline.min(deadline),
            multipv: 1,
        };
        engine.handshake(spec)?;
        Ok(engine)
    }

    fn handshake(&mut self, spec: &EngineSpec) -> Result<(), EngineError> {
        let not_an_engine = |error: EngineError, seconds: f64| EngineError::NotAnEngine {
            path: spec.path.display().to_string(),
            seconds,
            reason: error.to_string(),
        };
        let seconds = self.handshake_deadline.as_secs_f64();
        self.send("uci")
            .map_err(|error| not_an_engine(error, seconds))?;
        let until = Instant::now() + self.handshake_deadline;
        loop {
            // Before `uciok` anything goes: Stockfish prints a banner first.
            let line = match self.next_line(until, "uciok") {
                Ok(line) => line,
                Err(EngineError::Garbage(_)) => continue,
                Err(error) => return Err(not_an_engine(error, seconds)),
            };
            match line {
                EngineLine::UciOk => break,
                EngineLine::Id { key, value } if key == "name" => self.id_name = value,
                EngineLine::Option(text) => {
                    if let Ok(option) = uci::parse_option(&text)
                        && let Some(default) = option.default
                    {
                        self.defaults
                            .insert(option.name.to_ascii_lowercase(), default);
                    }
                }
                _ => {}
            }
        }
        if self.id_name.is_empty() {
            self.id_name = spec.path.file_name().map_or_else(
                || "engine".to_string(),
                |name| name.to_string_lossy().into_owned(),
            );
        }
        self.set_option("Threads", "1")?;
        for (name, value) in &spec.options {
            self.set_option(name, value)?;
        }
        self.is_ready_within(self.handshake_deadline)
    }

    /// The engine's `id name` (e.g. "Stockfish 15.1").
    pub(crate) fn id_name(&self) -> &str {
        &self.id_name
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The default value the engine declared for an option, if any.
    pub(crate) fn option_default(&self, name: &str) -> Option<&str> {
        self.defaults
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Sends `setoption`; the engine confirms nothing, so the next
    /// [`Engine::is_ready`] is where a rejection shows.
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        if name.eq_ignore_ascii_case("MultiPV") {
            self.multipv = value.parse().unwrap_or(0);
        }
        self.send(&format!("setoption name {name} value {value}"))
    }

    /// `isready` / `readyok`. An engine message that it does not know an
    /// option is fatal (a configuration error no restart will fix).
    pub(crate) fn is_ready(&mut self) -> Result<(), EngineError> {
        self.is_ready_within(self.deadline)
    }

    fn is_ready_within(&mut self, wait: Duration) -> Result<(), EngineError> {
        self.send("isready")?;
        let until = Instant::now() + wait;
        loop {
            match self.next_line(until, "readyok")? {
                EngineLine::ReadyOk => return Ok(()),
                EngineLine::Blank => {}
                EngineLine::Info(info) if info.string.is_some() => {}
                EngineLine::Unknown(line) if line.starts_with("No such option") => {
                    return Err(EngineError::Fatal(format!(
                        "engine rejected an option: {line}"
                    )));
                }
                other => {
                    return Err(EngineError::Garbage(format!(
                        "unexpected {other:?} while waiting for readyok"
                    )));
                }
            }
        }
    }

    /// `ucinewgame` then `isready`: clears hash and history so a search does
    /// not depend on what the process searched before.
    pub fn new_game(&mut self) -> Result<(), EngineError> {
        self.send("ucinewgame")?;
        self.is_ready()
    }

    /// Runs one search to its `bestmove`.
    pub fn search(&mut self, request: &SearchRequest) -> Result<SearchResult, EngineError> {
        let multipv = request.multipv.max(1);
        if multipv != self.multipv {
            self.set_option("MultiPV", &multipv.to_string())?;
        }
        let mut position = format!("position fen {}", request.fen);
        for (index, mv) in request.moves.iter().enumerate() {
            position.push_str(if index == 0 { " moves " } else { " " });
            mv.append_to_string(&mut position);
        }
        self.send(&position)?;
        self.send(&match request.limit {
            Limit::Nodes(nodes) => format!("go nodes {nodes}"),
            Limit::Depth(depth) => format!("go depth {depth}"),
        })?;
        let until = Instant::now() + self.deadline;
        let mut by_rank: BTreeMap<u32, PvLine> = BTreeMap::new();
        let mut by_depth: BTreeMap<u32, (UciMove, Score)> = BTreeMap::new();
        let mut nodes = 0;
        loop {
            match self.next_line(until, "bestmove")? {
                EngineLine::BestMove { best, .. } => {
                    return Ok(SearchResult {
                        lines: by_rank.into_values().collect(),
                        best_move: best,
                        nodes,
                        best_by_depth: by_depth
                            .into_iter()
                            .map(|(depth, (mv, score))| (depth, mv, score))
                            .collect(),
                    });
                }
                EngineLine::Info(info) => {
                    if let Some(count) = info.nodes {
                        nodes = count;
                    }
                    let (Some(score), Some(first)) = (info.score, info.pv.first()) else {
                        continue;
                    };
                    let rank = info.multipv.unwrap_or(1);
                    let depth = info.depth.unwrap_or(0);
                    if rank == 1 {
                        by_depth.insert(depth, (*first, score));
                    }
                    by_rank.insert(
                        rank,
                        PvLine {
                            multipv: rank,
                            score,
                            bound: info.bound,
                            depth,
                            pv: info.pv,
                            wdl: info.wdl,
                        },
                    );
                }
                EngineLine::Blank => {}
                other => {
                    return Err(EngineError::Garbage(format!(
                        "unexpected {other:?} during a search"
                    )));
                }
            }
        }
    }

    /// CPU seconds (user + system) the engine process has used so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        process_cpu_seconds(self.child.id())
    }

    fn send(&mut self, command: &str) -> Result<(), EngineError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| EngineError::Died("engine input is closed".into()))?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|error| EngineError::Died(format!("cannot send {command:?}: {error}")))
    }

    fn next_line(&mut self, until: Instant, waiting_for: &str) -> Result<EngineLine, EngineError> {
        let remaining = until.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(remaining) {
            Ok(ReaderEvent::Line(line)) => uci::parse_line(&line).map_err(|error| {
                // The engine's name once the handshake has given it.
                EngineError::Garbage(if self.id_name.is_empty() {
                    error.to_string()
                } else {
                    format!("{}: {error}", self.id_name)
                })
            }),
            Ok(ReaderEvent::NotUtf8(line)) => {
                Err(EngineError::Garbage(format!("line is not UTF-8: {line:?}")))
            }
            Ok(ReaderEvent::ReadFailed(error)) => Err(EngineError::Died(format!(
                "cannot read engine output: {error}"
            ))),
            Err(RecvTimeoutError::Timeout) => Err(EngineError::Timeout {
                waiting_for: waiting_for.to_string(),
                seconds: match waiting_for {
                    "uciok" => self.handshake_deadline.as_secs_f64(),
                    _ => self.deadline.as_secs_f64(),
                },
            }),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map_or_else(|| "output closed".to_string(), |status| status.to_string());
                Err(EngineError::Died(format!(
                    "while waiting for {waiting_for}: {status}"
                )))
            }
        }
    }

    /// Ends the process at once (after a fault).
    pub(crate) fn kill(mut self) {
        self.stdin = None;
        self.kill_group();
        let _ = self.child.kill();
        self.reap();
    }

    /// Kills the engine's process group: the engine and whatever it
    /// started. A wrapper script's child (`sleep 1000 &`, a program run
    /// without `exec`) keeps the engine's output pipe open, so the reader
    /// thread would never end and `reap` would wait for it, and the child
    /// would outlive the run. The group's id is the engine's pid, which
    /// Linux keeps reserved while any process of the group lives (and,
    /// once the group is empty, hands out again only after the whole pid
    /// range), so this reaches no other process even after the engine
    /// itself was reaped.
    fn kill_group(&mut self) {
        let Ok(group) = libc::pid_t::try_from(self.child.id()) else {
            return;
        };
        // SAFETY: killpg only sends a signal; an empty group is ESRCH,
        // which leaves nothing to do.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }

    fn reap(&mut self) {
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.reader.is_none() {
            return;
        }
        // Ask politely, then insist: an idle Stockfish quits at once.
        let _ = self.send("quit");
        self.stdin = None;
        let give_up = Instant::now() + Duration::from_millis(500);
        while Instant::now() < give_up {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        self.kill_group();
        let _ = self.child.kill();
        self.reap();
    }
}

/// Clock ticks per second for /proc times.
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions; it only reads a constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// User + system CPU seconds of a live process, from /proc/<pid>/stat.
pub(crate) fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after it are plain.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) are at 11 and 12 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / clock_ticks_per_second())
}

/// CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
pub(crate) fn thread_cpu_seconds() -> f64 {
    // SAFETY: clock_gettime writes into the zeroed struct we own.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0.0;
    }
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}

/// CPU seconds of `who` (getrusage), 0 when it cannot be read.
fn rusage_cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return 0.0;
    }
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The largest resident set this process has had, in MiB (getrusage;
/// Linux counts it in kilobytes); `None` when it cannot be read.
pub(crate) fn own_max_resident_mib() -> Option<f64> {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    Some(usage.ru_maxrss as f64 / 1024.0)
}

/// CPU seconds of this process, every thread (getrusage).
pub(crate) fn own_cpu_seconds() -> f64 {
    rusage_cpu_seconds(libc::RUSAGE_SELF)
}

/// CPU seconds of this process plus its reaped children (getrusage).
pub(crate) fn process_tree_cpu_seconds() -> f64 {
    own_cpu_seconds() + rusage_cpu_seconds(libc::RUSAGE_CHILDREN)
}

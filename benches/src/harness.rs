//! The pieces the side-by-side and scale harnesses share: driver processes speaking the line
//! protocol (with an optional time budget per request, their stderr in a log file), the
//! machine's description, the Java driver's command line, the chart fonts and a progress bar on
//! stderr.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use curator_test::{CURATOR_CLASSPATH, JvmOptions};

/// One measured request: how long the driver took for all operations, and one number per
/// operation (a latency in nanoseconds for most scenarios; see each scenario for the rest).
#[derive(Debug, Clone)]
pub struct Sample {
    /// The whole request, measured by the driver.
    pub elapsed_ns: u64,
    /// One value per operation.
    pub latencies_ns: Vec<u64>,
}

/// Why a request gave no sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The driver does not implement the scenario.
    Unsupported,
    /// The driver answered `err <message>`.
    Error(String),
    /// No answer within the time budget; the driver process was killed.
    Timeout(Duration),
    /// The driver process ended (or closed its output) without answering.
    Exited(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unsupported => write!(f, "unsupported"),
            Failure::Error(message) => write!(f, "{message}"),
            Failure::Timeout(budget) => write!(f, "timeout after {} s", budget.as_secs()),
            Failure::Exited(status) => write!(f, "driver exited ({status})"),
        }
    }
}

/// The directory of the drivers' stderr logs: `target/bench/logs` in the workspace.
pub fn driver_log_dir() -> PathBuf {
    workspace_root().join("target/bench/logs")
}

/// The log file of the drivers named `name`: `curator-java.log` for "Curator (Java)".
pub fn driver_log_path(name: &str) -> PathBuf {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    driver_log_dir().join(format!("{slug}.log"))
}

/// Opens the log of the drivers named `name` for one more driver: emptied by the first driver
/// of that name this process starts, appended to by the next ones.
fn open_driver_log(name: &str) -> Result<(PathBuf, File), String> {
    static STARTED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let path = driver_log_path(name);
    let dir = driver_log_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let first = STARTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(path.clone());
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .append(!first)
        .truncate(first)
        .open(&path)
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    Ok((path, file))
}

/// A long-lived driver process: `run <scenario> <ops> <path>` lines in, `ok <elapsed-ns>
/// <values>` or `err <message>` lines out. Its output is read on a thread of its own, so a
/// request can be given a time budget. Its stderr (a JVM's or Python's tracebacks, say) goes to
/// a log file under `target/bench/logs` ([`log_path`](Self::log_path)), never to the terminal;
/// errors about the driver name that file.
#[derive(Debug)]
pub struct Driver {
    /// The name reports use ("curator-rs", "Curator (Java)", ...).
    pub name: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    log: PathBuf,
}

impl Driver {
    /// Starts `command` and waits for its `ready` line. Its stderr is appended to
    /// [`driver_log_path`]`(name)`; the first driver of a name in a process empties the file.
    ///
    /// ```no_run
    /// let mut command = std::process::Command::new("target/release/bench-driver");
    /// command.args(["framework", "127.0.0.1:2181"]);
    /// let driver = curator_benches::harness::Driver::start("curator-rs", command)?;
    /// println!("its stderr: {}", driver.log_path().display());
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// When the process cannot be started or does not say `ready` (the message names the log).
    pub fn start(name: &'static str, mut command: Command) -> Result<Driver, String> {
        let (log, log_file) = open_driver_log(name)?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .map_err(|e| format!("starting the {name} driver: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut driver = Driver {
            name,
            child,
            stdin,
            lines,
            log,
        };
        match driver.lines.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line.trim() == "ready" => Ok(driver),
            Ok(line) => Err(format!(
                "the {name} driver did not start: {line:?} (its stderr: {})",
                driver.log.display()
            )),
            Err(_) => {
                let status = driver.exit_status();
                Err(format!(
                    "the {name} driver did not start ({status}; its stderr: {})",
                    driver.log.display()
                ))
            }
        }
    }

    /// The file the process's stderr goes to.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// "the Kazoo (Python) driver failed crash_join: driver exited (...) (its stderr:
    /// target/bench/logs/kazoo-python.log)": a failure of `scenario`, for a report or an error.
    pub fn failed(&self, scenario: &str, failure: &Failure) -> String {
        format!(
            "the {} driver failed {scenario}: {failure} (its stderr: {})",
            self.name,
            self.log.display()
        )
    }

    /// Runs one request and waits for its answer; `None` when the driver does not implement the
    /// scenario.
    ///
    /// # Errors
    /// When the driver fails the request or dies (the message names its log).
    pub fn run(
        &mut self,
        scenario: &str,
        ops: usize,
        path: &str,
    ) -> Result<Option<Sample>, String> {
        match self.run_within(scenario, ops, path, None) {
            Ok(sample) => Ok(Some(sample)),
            Err(Failure::Unsupported) => Ok(None),
            Err(failure) => Err(self.failed(scenario, &failure)),
        }
    }

    /// Runs one request within `budget` (no limit for `None`). On a timeout the process is
    /// killed: the caller starts a new driver for its next request.
    ///
    /// # Errors
    /// The [`Failure`].
    pub fn run_within(
        &mut self,
        scenario: &str,
        ops: usize,
        path: &str,
        budget: Option<Duration>,
    ) -> Result<Sample, Failure> {
        self.send(scenario, ops, path)?;
        self.reply(budget)
    }

    /// Sends one request without waiting for its answer ([`reply`](Self::reply) waits).
    ///
    /// # Errors
    /// [`Failure::Exited`] when the process is gone.
    pub fn send(&mut self, scenario: &str, ops: usize, path: &str) -> Result<(), Failure> {
        let sent =
            writeln!(self.stdin, "run {scenario} {ops} {path}").and_then(|()| self.stdin.flush());
        sent.map_err(|e| Failure::Exited(format!("{e}; {}", self.exit_status())))
    }

    /// Waits within `budget` (no limit for `None`) for the answer to the request
    /// [`send`](Self::send) sent. On a timeout the process is killed.
    ///
    /// # Errors
    /// The [`Failure`].
    pub fn reply(&mut self, budget: Option<Duration>) -> Result<Sample, Failure> {
        let line = match budget {
            None => self
                .lines
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
            Some(budget) => self.lines.recv_timeout(budget),
        };
        let line = match line {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(Failure::Timeout(budget.unwrap_or_default()));
            }
            Err(RecvTimeoutError::Disconnected) => return Err(Failure::Exited(self.exit_status())),
        };
        let mut words = line.trim().splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("ok"), Some(elapsed), latencies) => Ok(Sample {
                elapsed_ns: elapsed
                    .parse()
                    .map_err(|_| Failure::Error(format!("bad reply {line:?}")))?,
                latencies_ns: latencies
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|x| x.parse().ok())
                    .collect(),
            }),
            (Some("err"), Some("unsupported"), None) => Err(Failure::Unsupported),
            // A driver that predates a scenario (the Java and Python drivers know no
            // curator-rs-only rows such as queue_4x4_exactly_once) does not implement it.
            (Some("err"), _, _) if line.contains("unknown scenario") => Err(Failure::Unsupported),
            (Some("err"), _, _) => Err(Failure::Error(
                line.trim().trim_start_matches("err ").to_owned(),
            )),
            _ => Err(Failure::Error(format!("bad reply {:?}", line.trim()))),
        }
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.to_string();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        "still running".to_owned()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ sits in the workspace")
        .to_owned()
}

/// Compiles `benches/drivers/CuratorDriver.java` (into `target/bench/java`) and returns the
/// command that runs it against `connect` with the heap limit `max_heap` (`"512m"`) and the
/// JVM settings `jvm`.
///
/// # Errors
/// When `javac` is missing or fails, or a jar `jvm` names is missing.
pub fn java_driver_command(
    root: &Path,
    jvm: &JvmOptions,
    max_heap: &str,
    connect: &str,
) -> Result<Command, String> {
    let out = root.join("target/bench/java");
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let classpath = CURATOR_CLASSPATH.join(":");
    let source = root.join("benches/drivers/CuratorDriver.java");
    // Compiled once per change of the source (fresh processes start often: memory, crashes).
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let compiled = modified(&out.join("CuratorDriver.class"));
    if compiled.is_none() || compiled < modified(&source) {
        let status = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&out)
            .args(["-cp", &classpath])
            .arg(&source)
            .status()
            .map_err(|e| format!("javac: {e} (run `scripts/setup.sh bench`)"))?;
        if !status.success() {
            return Err("javac failed on CuratorDriver.java".into());
        }
    }
    let mut classpath = vec![classpath];
    for entry in jvm.classpath() {
        if !entry.exists() {
            return Err(format!(
                "{} is missing (run `scripts/setup.sh bench`)",
                entry.display()
            ));
        }
        classpath.push(entry.display().to_string());
    }
    classpath.push(out.display().to_string());
    let mut command = Command::new("java");
    command
        .args(["-Xms256m", &format!("-Xmx{max_heap}")])
        .args(jvm.args())
        .arg("-cp")
        .arg(classpath.join(":"))
        .arg("CuratorDriver")
        .arg(connect);
    Ok(command)
}

/// "2 cores (AMD EPYC), 23 GiB": the machine, for reports.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| format!("{} GiB", kb / 1024 / 1024))
        .unwrap_or_default();
    format!("{cores} cores ({cpu}), {memory}")
}

/// Today's date as `YYYY-MM-DD` (from `date`), or empty.
pub fn today() -> String {
    Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The fonts of the charts, the first of these the machine has. plotters (`ttf` feature, through
/// font-kit and fontconfig) rasterizes each glyph on a canvas that starts at the glyph's origin,
/// so whatever a glyph draws left of it is cut off: "sans-serif" is DejaVu Sans on Debian, whose
/// 'J' hooks left and came out as a comma ("Curator (,ava)"). Liberation Sans (Debian's
/// `fonts-liberation`) draws 'J' whole; its 'j' still hooks left, so chart text avoids a
/// lowercase 'j'. DejaVu Sans (`fonts-dejavu-core`) and "sans-serif" are the fallbacks.
pub const CHART_FONTS: &[&str] = &["Liberation Sans", "DejaVu Sans", "sans-serif"];

/// The `p` quantile (0..=1) of `sorted`, in microseconds (NaN when empty).
///
/// ```
/// assert_eq!(curator_benches::harness::percentile(&[1000, 2000, 3000], 0.5), 2.0);
/// ```
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank] as f64 / 1000.0
}

/// A one-line progress bar on stderr: `[#####-----] 12/40 election: Kazoo N=100 (2m13s)`,
/// redrawn in place on a terminal, one line per step otherwise (logs stay readable).
#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    terminal: bool,
}

impl Progress {
    /// A bar for `total` steps.
    pub fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total: total.max(1),
            done: 0,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Shows that the next step, `what`, is under way.
    pub fn step(&mut self, what: &str) {
        let width = 30;
        let filled = width * self.done / self.total;
        let elapsed = self.started.elapsed().as_secs();
        let line = format!(
            "[{}{}] {}/{} {what} ({}m{:02}s)",
            "#".repeat(filled),
            "-".repeat(width - filled),
            self.done,
            self.total,
            elapsed / 60,
            elapsed % 60
        );
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Counts a step as done.
    pub fn finish_step(&mut self) {
        self.done = (self.done + 1).min(self.total);
    }

    /// Ends the bar (a newline on a terminal).
    pub fn finish(&mut self) {
        self.done = self.total;
        if self.terminal {
            self.step("done");
            eprintln!();
        }
    }
}

/// The server to measure against: `ZK_CONNECT` when it is set (then `start` is never run and
/// there is no server of ours), else the one `start` starts. Keep the server for as long as
/// its connect string is used.
///
/// ```no_run
/// # async fn demo() -> Result<(), String> {
/// let (_server, connect) =
///     curator_benches::harness::server_or_env(curator_test::TestingServer::start()).await?;
/// println!("measuring against {connect}");
/// # Ok(()) }
/// ```
///
/// # Errors
/// Why the server did not start.
pub async fn server_or_env(
    start: impl std::future::Future<Output = curator_test::Result<curator_test::TestingServer>>,
) -> Result<(Option<curator_test::TestingServer>, String), String> {
    if let Ok(connect) = std::env::var("ZK_CONNECT") {
        return Ok((None, connect));
    }
    let server = start.await.map_err(|e| e.to_string())?;
    let connect = server.connect_string();
    Ok((Some(server), connect))
}

/// The version line the server at `connect` reports (`srvr`), or `unknown`.
pub async fn server_version(connect: &str) -> String {
    curator_test::four_letter_word(connect, "srvr", Duration::from_secs(10))
        .await
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .map(|l| l.trim_start_matches("Zookeeper version: ").to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

//! The command line, as clap reads it.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::duration::parse_duration;

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    other failure (missing node, bad version, server error, ...)
  2    bad arguments
  3    no connection to ZooKeeper (within --connection-timeout), or it failed
  4    --timeout passed before the lock, barrier or leadership was had
  5    the lock was lost while CMD ran (CMD was stopped)
  126  CMD could not be executed; 127 CMD was not found
  128+N  interrupted by signal N before CMD ran (130 SIGINT, 143 SIGTERM)
  141  stdout or stderr closed by its reader (CMD, if any, was stopped)
  lock, leader and barrier otherwise exit with CMD's own code (128+N when CMD died of signal N).

Durations: 500ms, 10s, 2m, 1h. --connect defaults to $ZK_CONNECT, then 127.0.0.1:2181.";

/// `curator`: ZooKeeper recipes (locks, leader election, counters, barriers) for shell scripts
/// and operators, on Apache Curator's znode layout.
#[derive(Debug, Parser)]
#[command(name = "curator", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) common: Common,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags every subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// ZooKeeper connect string (host:port,host:port)
    #[arg(long, global = true, env = "ZK_CONNECT", value_name = "HOSTS")]
    pub(crate) connect: Option<String>,
    /// Session timeout asked of the server
    #[arg(long, global = true, default_value = "30s", value_parser = parse_duration, value_name = "D")]
    pub(crate) session_timeout: Duration,
    /// How long to wait for a connection before giving up (exit code 3)
    #[arg(long, global = true, default_value = "10s", value_parser = parse_duration, value_name = "D")]
    pub(crate) connection_timeout: Duration,
    /// Prefix every path with this namespace (like a chroot)
    #[arg(long, global = true, value_name = "NS")]
    pub(crate) namespace: Option<String>,
    /// Machine-readable output: JSON lines on stdout (results) and stderr (status events)
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

impl Common {
    /// The connect string: `--connect`, `$ZK_CONNECT`, or the local default.
    pub(crate) fn connect_string(&self) -> String {
        self.connect
            .clone()
            .unwrap_or_else(|| "127.0.0.1:2181".to_owned())
    }
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// A short show of the framework against a real server (started here unless --connect)
    Demo,
    /// Start a local ZooKeeper server (or ensemble) and print its connect string until interrupted
    Server {
        /// Start an ensemble of N members instead of one server
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=9))]
        cluster: Option<u16>,
    },
    /// Run CMD while holding the distributed lock at PATH (Curator's InterProcessMutex)
    Lock {
        /// The lock's path
        path: String,
        /// Give up (exit code 4) when the lock is not had within D
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run CMD only while this process leads the election at PATH (Curator's LeaderLatch)
    Leader {
        /// The election's path
        path: String,
        /// This participant's id (default: host name and process id)
        #[arg(long)]
        id: Option<String>,
        /// Give up (exit code 4) when not leader within D the first time
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Enter the double barrier at PATH with N members, run CMD (or wait for Enter), then leave
    Barrier {
        /// The barrier's path
        path: String,
        /// How many members the barrier waits for
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        members: u32,
        /// Give up (exit code 4) when the barrier does not open (or close) within D
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        /// After SIGTERM, how long CMD gets before SIGKILL
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
        grace: Duration,
        /// The command to run inside the barrier (without one: wait for Enter or end of input)
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// A shared counter (Curator's DistributedAtomicLong: 8 bytes, big-endian)
    Counter {
        /// The counter's path
        path: String,
        #[command(subcommand)]
        op: CounterOp,
    },
    /// List the children of PATH
    Ls {
        /// The node
        path: String,
    },
    /// Print the data of PATH
    Get {
        /// The node
        path: String,
        /// Also print the node's version and sizes
        #[arg(long)]
        stat: bool,
    },
    /// Set the data of PATH (`-` reads it from standard input)
    Set {
        /// The node
        path: String,
        /// The new data
        data: String,
        /// Only if the node is at this version
        #[arg(long)]
        version: Option<i32>,
    },
    /// Create PATH (with DATA, or empty) and print the created path
    Create {
        /// The node
        path: String,
        /// Its data (`-` reads it from standard input)
        data: Option<String>,
        /// Create missing parents too
        #[arg(short, long)]
        parents: bool,
        /// Make it sequential (the server appends a counter to the name)
        #[arg(long)]
        sequential: bool,
    },
    /// Delete PATH
    Rm {
        /// The node
        path: String,
        /// Delete its children too
        #[arg(short, long)]
        recursive: bool,
        /// Only if the node is at this version
        #[arg(long)]
        version: Option<i32>,
    },
    /// Print PATH and everything below it
    Tree {
        /// The root of the tree
        path: String,
    },
    /// Print PATH's data and children, then every change, until interrupted
    Watch {
        /// The node (it need not exist yet)
        path: String,
        /// Stop after N changes
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
    /// Internal: the helper process of `lock`, `leader` and `barrier` (see the sentinel module)
    #[command(name = "__sentinel", hide = true)]
    Sentinel {
        /// The wrapper's process id
        #[arg(long)]
        wrapper: i32,
        /// After SIGTERM, how long CMD gets before SIGKILL
        #[arg(long, value_parser = parse_duration)]
        grace: Duration,
    },
}

impl Command {
    /// The ZooKeeper path the command works on (`None` for `demo` and `server`).
    pub(crate) fn path(&self) -> Option<&str> {
        match self {
            Command::Demo | Command::Server { .. } | Command::Sentinel { .. } => None,
            Command::Lock { path, .. }
            | Command::Leader { path, .. }
            | Command::Barrier { path, .. }
            | Command::Counter { path, .. }
            | Command::Ls { path }
            | Command::Get { path, .. }
            | Command::Set { path, .. }
            | Command::Create { path, .. }
            | Command::Rm { path, .. }
            | Command::Tree { path }
            | Command::Watch { path, .. } => Some(path),
        }
    }
}

/// How `lock` and `leader` run their command.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// After SIGTERM, how long CMD gets before SIGKILL
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
    pub(crate) grace: Duration,
    /// The command to run, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// What `curator counter` does.
#[derive(Debug, Subcommand)]
#[command(args_conflicts_with_subcommands = false)]
pub(crate) enum CounterOp {
    /// Print the value (0 when the node does not exist)
    Get,
    /// Set the value
    Set {
        /// The new value
        #[arg(allow_negative_numbers = true)]
        value: i64,
    },
    /// Add N (default 1) and print the new value
    Incr {
        /// How much to add
        #[arg(allow_negative_numbers = true, default_value_t = 1)]
        by: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn lock_takes_a_command_after_the_separator() {
        let cli = Cli::try_parse_from([
            "curator",
            "lock",
            "/l",
            "--timeout",
            "2s",
            "--",
            "echo",
            "-n",
            "hi",
        ])
        .unwrap();
        let Command::Lock { path, timeout, run } = cli.command else {
            panic!("not a lock command");
        };
        assert_eq!(path, "/l");
        assert_eq!(timeout, Some(Duration::from_secs(2)));
        assert_eq!(run.command, ["echo", "-n", "hi"]);
        assert!(Cli::try_parse_from(["curator", "lock", "/l"]).is_err());
    }

    #[test]
    fn common_flags_go_anywhere() {
        let cli =
            Cli::try_parse_from(["curator", "ls", "/", "--json", "--connect", "h:1"]).unwrap();
        assert!(cli.common.json);
        assert_eq!(cli.common.connect.as_deref(), Some("h:1"));
    }
}

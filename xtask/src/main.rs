//! The quick start for a machine with Rust and nothing else of this project's tools, through
//! the cargo aliases in `.cargo/config.toml`:
//!
//! ```text
//! cargo demo       # scripts/setup.sh demo, then `curator demo`           (as `just demo`)
//! cargo test-all   # scripts/setup.sh test, then scripts/test.sh          (as `just test`)
//! ```
//!
//! Each step runs from the workspace root; the first that fails ends the task with its exit
//! code.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

/// The quick start without `just` (run through `cargo demo` and `cargo test-all`).
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo")]
struct Args {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Installs ZooKeeper when missing (`scripts/setup.sh demo`), then runs `curator demo`:
    /// workers elect a leader, share a lock, a counter and a barrier against a real server.
    Demo {
        /// Passed on to `curator demo` (`cargo demo -- --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Installs what the tests need when missing (`scripts/setup.sh test`), then runs every
    /// test of the workspace (`scripts/test.sh`).
    TestAll,
}

/// The workspace's root directory.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the workspace")
        .to_owned()
}

/// The steps of `task`: each a program and its arguments.
fn steps(task: Task) -> Vec<(OsString, Vec<OsString>)> {
    // The cargo that runs this task (cargo sets CARGO for `cargo run`).
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    match task {
        Task::Demo { args } => {
            let mut demo: Vec<OsString> = ["run", "--quiet", "-p", "curator-cli", "--", "demo"]
                .map(OsString::from)
                .to_vec();
            demo.extend(args);
            vec![
                ("scripts/setup.sh".into(), vec!["demo".into()]),
                (cargo, demo),
            ]
        }
        Task::TestAll => vec![
            ("scripts/setup.sh".into(), vec!["test".into()]),
            ("scripts/test.sh".into(), Vec::new()),
        ],
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = workspace_root();
    for (program, args) in steps(args.task) {
        let status = Command::new(&program)
            .args(&args)
            .current_dir(&root)
            .status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => {
                let code = status
                    .code()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(1);
                return ExitCode::from(code.max(1));
            }
            Err(error) => {
                eprintln!("xtask: running {}: {error}", Path::new(&program).display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::{Args, Task, steps};

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once(&"xtask").chain(args))
    }

    #[test]
    fn the_demo_installs_only_what_it_needs_and_passes_its_arguments_on() {
        Args::command().debug_assert();
        let args = parse(&["demo", "--connect", "127.0.0.1:2181"]).expect("valid");
        let steps = steps(args.task);
        assert_eq!(steps[0].0, "scripts/setup.sh");
        assert_eq!(steps[0].1, ["demo"]);
        let demo: Vec<_> = steps[1].1.iter().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            demo,
            [
                "run",
                "--quiet",
                "-p",
                "curator-cli",
                "--",
                "demo",
                "--connect",
                "127.0.0.1:2181"
            ]
        );
    }

    #[test]
    fn the_tests_install_what_they_need_first() {
        let steps = steps(Task::TestAll);
        assert_eq!(steps[0].0, "scripts/setup.sh");
        assert_eq!(steps[0].1, ["test"]);
        assert_eq!(steps[1].0, "scripts/test.sh");
    }

    #[test]
    fn unknown_tasks_are_refused() {
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        assert_eq!(parse(&["tset"]).unwrap_err().exit_code(), 2);
        assert_eq!(parse(&[]).unwrap_err().exit_code(), 2);
    }
}

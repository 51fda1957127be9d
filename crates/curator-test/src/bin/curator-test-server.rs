//! Starts a real ZooKeeper server (or ensemble) for a test run or by hand, prints its connect
//! string, and keeps it until interrupted or until standard input closes.
//!
//! ```text
//! curator-test-server [--cluster N] [--connect-file PATH] [--until-stdin-closes]
//! ```

use std::io::{BufRead, Write};

use curator_test::{TestingCluster, TestingServer};

const USAGE: &str =
    "usage: curator-test-server [--cluster N] [--connect-file PATH] [--until-stdin-closes]";

struct Options {
    cluster: Option<usize>,
    connect_file: Option<String>,
    until_stdin_closes: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        cluster: None,
        connect_file: None,
        until_stdin_closes: false,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--cluster" => {
                let n = args.next().ok_or("--cluster needs a member count")?;
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("--cluster: `{n}` is not a count"))?;
                if n == 0 {
                    return Err("--cluster needs at least one member".into());
                }
                options.cluster = Some(n);
            }
            "--connect-file" => {
                options.connect_file = Some(args.next().ok_or("--connect-file needs a path")?);
            }
            "--until-stdin-closes" => options.until_stdin_closes = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    // Keep whichever handle was started alive until the end of `main`.
    let (connect, _server, _cluster) = match options.cluster {
        None => match TestingServer::start_dedicated().await {
            Ok(server) => (server.connect_string(), Some(server), None),
            Err(error) => fail(&error),
        },
        Some(n) => match TestingCluster::start(n).await {
            Ok(cluster) => (cluster.connect_string(), None, Some(cluster)),
            Err(error) => fail(&error),
        },
    };
    if let Some(path) = &options.connect_file {
        // Written whole, then renamed, so a reader never sees half a line.
        let partial = format!("{path}.partial");
        if let Err(error) = std::fs::write(&partial, format!("{connect}\n"))
            .and_then(|()| std::fs::rename(&partial, path))
        {
            eprintln!("writing {path}: {error}");
            std::process::exit(1);
        }
    }
    println!("{connect}");
    let _ = std::io::stdout().flush();

    if options.until_stdin_closes {
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let mut stdin = std::io::stdin().lock();
            while stdin.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                line.clear();
            }
        });
        tokio::select! {
            _ = stdin_closed => {}
            () = interrupted() => {}
        }
    } else {
        interrupted().await;
    }
    if let Some(path) = &options.connect_file {
        let _ = std::fs::remove_file(path);
    }
}

fn fail(error: &curator_test::Error) -> ! {
    eprintln!("curator-test-server: {error}");
    std::process::exit(1);
}

async fn interrupted() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

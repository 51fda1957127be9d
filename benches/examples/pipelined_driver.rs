//! One driver of the pipelined `get_data` scenario, alone, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/pipelined_driver ours|bare [BATCHES]`
//! against `ZK_CONNECT`. Prints nothing but errors.

use std::time::Duration;

use clap::Parser;
use curator_framework::CuratorFramework;
use curator_session::{Session, SessionConfig};
use futures::future::join_all;

/// Batches of 1,000 pipelined `get_data` of `/` against the server at ZK_CONNECT, through this
/// framework or its bare session layer (curator-session).
#[derive(Debug, Parser)]
#[command(name = "pipelined_driver")]
struct Args {
    /// Which client sends the requests.
    #[arg(value_enum, default_value = "ours")]
    driver: Which,
    /// How many batches of 1,000 requests.
    #[arg(default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    batches: u32,
    /// The server.
    #[arg(long, env = "ZK_CONNECT")]
    connect: String,
}

/// The client under measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Which {
    /// This framework's `CuratorFramework`.
    Ours,
    /// curator-session's `Session` alone.
    Bare,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let path = "/";
    if args.driver == Which::Ours {
        let client = CuratorFramework::builder()
            .connect_string(&args.connect)
            .build()?;
        client.start().await?;
        client
            .block_until_connected(Duration::from_secs(30))
            .await?;
        for _ in 0..args.batches {
            let futures: Vec<_> = (0..1000)
                .map(|_| client.get_data().for_path(path).into_future())
                .collect();
            for result in join_all(futures).await {
                result?;
            }
        }
        client.close().await?;
    } else {
        let client = Session::connect(SessionConfig::new(&args.connect)?).await?;
        for _ in 0..args.batches {
            let futures: Vec<_> = (0..1000).map(|_| client.get_data(path)).collect();
            for result in join_all(futures).await {
                result?;
            }
        }
        client.close().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::{Args, Which};

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(
            ["pipelined_driver", "--connect", "127.0.0.1:2181"]
                .iter()
                .chain(args),
        )
    }

    #[test]
    fn arguments_are_checked() {
        Args::command().debug_assert();
        let args = parse(&["bare", "7"]).expect("valid");
        assert_eq!((args.driver, args.batches), (Which::Bare, 7));
        let args = parse(&[]).expect("defaults");
        assert_eq!((args.driver, args.batches), (Which::Ours, 5));
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        for bad in [
            &["theirs"][..],
            &["ours", "abc"],
            &["ours", "0"],
            &["--bogus"],
        ] {
            let error = parse(bad).expect_err("refused");
            assert_eq!(error.exit_code(), 2, "{bad:?}: {error}");
        }
    }
}

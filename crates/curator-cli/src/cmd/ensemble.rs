//! `curator ensemble [add SPEC... | remove ID...]`: the ensemble's members and their live state,
//! and dynamic reconfiguration.

use std::time::Duration;

use clap::{Args, Subcommand};
use curator_framework::ensemble::{EnsembleConfig, EnsembleMember, MemberRole};
use curator_framework::{CuratorFramework, Error};
use futures::future::join_all;
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{Session, Settings, Takes, not_for};
use crate::duration::parse_duration;
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::report::Reporter;
use crate::srvr::{self, Probe};

const ENSEMBLE_HELP: &str = "\
Without a subcommand: the configuration's version (hexadecimal, as ZooKeeper writes it) and one
row per member: id, role, quorum:election address, client address, and what the member says of
itself to `srvr` (mode, zxid, connections, average latency), asked of every member at once over
plain TCP on its client address; a member that does not answer shows as unreachable, and the
command still succeeds.

`add` and `remove` need servers with reconfigEnabled=true and a session that may write
/zookeeper/config: the super user or an identity its ACL lets write (--auth-user with
--auth-password-file). Start a new member before adding it.

Examples:
  curator ensemble --json
  curator ensemble add 'server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181' \\
      --auth-user super --auth-password-file /etc/zookeeper/super.password
  curator ensemble remove 4 --from-version 100000003 --auth-user super --auth-password-file F";

/// Show the ensemble's members and how each is doing; `add` or `remove` members (dynamic
/// reconfiguration)
#[derive(Debug, Args)]
#[command(after_help = ENSEMBLE_HELP)]
pub(crate) struct Ensemble {
    #[command(subcommand)]
    op: Option<EnsembleOp>,
    /// How long each member gets to answer `srvr` before it shows as unreachable (without
    /// a subcommand) [default: 2s]
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    probe_timeout: Option<Duration>,
    #[command(flatten)]
    session: Session,
}

/// What `curator ensemble` changes.
#[derive(Debug, Subcommand)]
#[command(args_conflicts_with_subcommands = false)]
enum EnsembleOp {
    /// Add members (or change them: the same id with other addresses or role), then print the
    /// new configuration
    Add {
        /// A member, as ZooKeeper writes it:
        /// server.ID=HOST:QUORUM_PORT:ELECTION_PORT[:participant|observer][;[HOST:]CLIENT_PORT]
        #[arg(required = true, value_name = "SPEC", value_parser = parse_member)]
        specs: Vec<String>,
        #[command(flatten)]
        change: Change,
    },
    /// Remove members by id, then print the new configuration
    Remove {
        /// A member's id (the N of server.N)
        #[arg(required = true, value_name = "ID")]
        ids: Vec<u64>,
        #[command(flatten)]
        change: Change,
    },
}

impl EnsembleOp {
    fn change(&self) -> &Change {
        match self {
            EnsembleOp::Add { change, .. } | EnsembleOp::Remove { change, .. } => change,
        }
    }

    /// The name of the subcommand, for messages.
    fn name(&self) -> &'static str {
        match self {
            EnsembleOp::Add { .. } => "add",
            EnsembleOp::Remove { .. } => "remove",
        }
    }
}

/// The flags of `ensemble add` and `ensemble remove`.
#[derive(Debug, Args)]
struct Change {
    /// Change the ensemble only if its configuration is still version V (hexadecimal, as
    /// `curator ensemble` prints it; `0x` optional); otherwise nothing changes (exit code 1)
    #[arg(long, value_name = "V", value_parser = parse_config_version)]
    from_version: Option<i64>,
    #[command(flatten)]
    session: Session,
}

/// Where ZooKeeper keeps the ensemble's configuration.
const CONFIG_NODE: &str = "/zookeeper/config";

/// How long each member gets to answer `srvr` without `--probe-timeout`.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl Run for Ensemble {
    fn takes(&self) -> Takes<'_> {
        let mut sessions = vec![&self.session];
        sessions.extend(self.op.as_ref().map(|op| &op.change().session));
        Takes::Session(sessions)
    }

    fn check(&self) -> CliResult<()> {
        match (&self.op, self.probe_timeout) {
            (Some(op), Some(_)) => Err(not_for(
                "--probe-timeout",
                &format!("ensemble {}", op.name()),
            )),
            _ => Ok(()),
        }
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let client = ctx.client().await?;
        let (report, settings) = (ctx.report, &ctx.settings);
        let Ensemble { op, probe_timeout, .. } = self;
        let config = match op {
            None => {
                let config = read_config(client).await?;
                let timeout = probe_timeout.unwrap_or(DEFAULT_PROBE_TIMEOUT);
                // Every member at once, each within its own timeout: the slowest member costs one
                // timeout, not one per member.
                let probes = join_all(config.members.iter().map(|member| async move {
                    match member.client_address() {
                        Some(address) => srvr::probe(&address, timeout).await,
                        None => Probe::NoClientAddress,
                    }
                }))
                .await;
                print(report, &config, Some(&probes))?;
                return Ok(codes::OK);
            }
            Some(EnsembleOp::Add { specs, change }) => {
                let mut reconfig = client.reconfig().joining(specs);
                if let Some(version) = change.from_version {
                    reconfig = reconfig.from_config(version);
                }
                reconfig
                    .await
                    .map_err(|error| refused(error, change.from_version, settings))
            }
            Some(EnsembleOp::Remove { ids, change }) => {
                // ZooKeeper takes the removal of an id it does not know as a change that changes
                // nothing (a new version, the same members): a mistyped id would pass for done.
                let current = read_config(client).await?;
                let strangers: Vec<String> = ids
                    .iter()
                    .filter(|id| current.member(**id).is_none())
                    .map(|id| format!("server.{id}"))
                    .collect();
                if !strangers.is_empty() {
                    let members: Vec<String> =
                        current.members.iter().map(|m| m.id.to_string()).collect();
                    return Err(CliError::new(
                        codes::OTHER,
                        format!(
                            "cannot reconfigure the ensemble: {} {} not a member (configuration \
                             version {} has {}); nothing was changed",
                            strangers.join(", "),
                            if strangers.len() == 1 { "is" } else { "are" },
                            version_text(current.version),
                            if members.is_empty() {
                                "none".to_owned()
                            } else {
                                members.join(", ")
                            },
                        ),
                    ));
                }
                let mut reconfig = client.reconfig().leaving(ids);
                if let Some(version) = change.from_version {
                    reconfig = reconfig.from_config(version);
                }
                reconfig
                    .await
                    .map_err(|error| refused(error, change.from_version, settings))
            }
        };
        let config = match config {
            Ok(config) => config,
            Err(error) => {
                // A stale version says which version is current, when that can be read.
                return Err(match error {
                    Refused::StaleVersion(from) => {
                        let now = read_config(client)
                            .await
                            .map(|config| format!(" (it is now {})", version_text(config.version)))
                            .unwrap_or_default();
                        CliError::new(
                            codes::OTHER,
                            format!(
                                "cannot reconfigure the ensemble: its configuration is no longer \
                                 version {}{now}; nothing was changed",
                                version_text(from)
                            ),
                        )
                    }
                    Refused::Other(error) => error,
                });
            }
        };
        print(report, &config, None)?;
        Ok(codes::OK)
    }
}


/// Reads `/zookeeper/config`, after a `sync`: the server this client is connected to may lag
/// the leader, and a configuration changed a moment ago (by `curator ensemble add`, say) must
/// show.
async fn read_config(client: &CuratorFramework) -> CliResult<EnsembleConfig> {
    let read = async {
        client
            .without_namespace()
            .sync()
            .for_path(CONFIG_NODE)
            .await?;
        client.ensemble_config().await
    };
    read.await.map_err(|error| match error {
        Error::NoNode => CliError::new(
            codes::OTHER,
            "reading the ensemble configuration: no /zookeeper/config (servers before ZooKeeper \
             3.5 have none)",
        ),
        // Text the framework cannot read is the server's doing, not the user's arguments.
        Error::InvalidArgument(reason) => CliError::new(
            codes::OTHER,
            format!("reading the ensemble configuration: cannot read /zookeeper/config: {reason}"),
        ),
        error => CliError::zk("reading the ensemble configuration", error),
    })
}

/// Why a reconfiguration did not happen.
enum Refused {
    /// `--from-version` no longer holds (the current version is looked up for the message).
    StaleVersion(i64),
    Other(CliError),
}

/// A one-line message (and exit code) for each way a reconfiguration is refused; the ensemble is
/// unchanged in every case.
fn refused(error: Error, from_version: Option<i64>, settings: &Settings) -> Refused {
    let cannot = |why: &str| {
        Refused::Other(CliError::new(
            codes::OTHER,
            format!("cannot reconfigure the ensemble: {why}"),
        ))
    };
    match error {
        Error::ReconfigDisabled => cannot(
            "dynamic reconfiguration is disabled on the servers (they need reconfigEnabled=true)",
        ),
        Error::ReconfigInProgress => {
            cannot("another reconfiguration is in progress; try again once it is done")
        }
        Error::NewConfigNoQuorum => cannot(
            "no quorum of the new configuration is connected to the leader (start a new member \
             before adding it, and keep a majority of the new configuration running); nothing \
             was changed",
        ),
        Error::BadVersion => match from_version {
            Some(from) => Refused::StaleVersion(from),
            None => cannot("the configuration changed meanwhile; nothing was changed"),
        },
        Error::NoAuth => match &settings.security.digest {
            None => cannot(
                "not authorized: reconfiguration needs the super user or an identity that the \
                 ACL of /zookeeper/config lets write (--auth-user and --auth-password-file)",
            ),
            Some(digest) => cannot(&format!(
                "not authorized: digest:{} may not write /zookeeper/config (reconfiguration \
                 needs the super user or an ACL on /zookeeper/config that grants write; is the \
                 password right?)",
                digest.user
            )),
        },
        Error::BadArguments => cannot(
            "the servers refused the change as invalid (a member whose addresses they cannot \
             use, or a configuration left without participants)",
        ),
        // Input the framework refuses before sending (the arguments were checked already).
        Error::InvalidArgument(reason) => Refused::Other(CliError::usage(reason)),
        error => Refused::Other(CliError::zk("reconfiguring the ensemble", error)),
    }
}

/// The version as ZooKeeper writes it in `/zookeeper/config`: hexadecimal, no `0x`.
fn version_text(version: i64) -> String {
    format!("{version:x}")
}

fn role_text(role: MemberRole) -> &'static str {
    match role {
        MemberRole::Participant => "participant",
        MemberRole::Observer => "observer",
    }
}

/// `host:quorum:election`, as in `server.N=`.
fn peer_address(member: &EnsembleMember) -> String {
    let host = if member.host.contains(':') && !member.host.starts_with('[') {
        format!("[{}]", member.host)
    } else {
        member.host.clone()
    };
    format!("{host}:{}:{}", member.quorum_port, member.election_port)
}

/// Prints the configuration, with each member's probe when there are some.
fn print(report: Reporter, config: &EnsembleConfig, probes: Option<&[Probe]>) -> CliResult<()> {
    if report.json {
        let members: Vec<Value> = config
            .members
            .iter()
            .enumerate()
            .map(|(index, member)| {
                let mut value = json!({
                    "id": member.id,
                    "role": role_text(member.role),
                    "host": member.host,
                    "quorum_port": member.quorum_port,
                    "election_port": member.election_port,
                    "client_address": member.client_address(),
                    "spec": member.to_string(),
                });
                if let Some(probe) = probes.and_then(|probes| probes.get(index)) {
                    value["state"] = probe.to_json();
                }
                value
            })
            .collect();
        output::out(json!({ "version": version_text(config.version), "members": members }))?;
        return Ok(());
    }
    let mut lines = vec![match config.members.len() {
        0 => format!(
            "configuration version {}: no members (a standalone server has no ensemble \
             configuration)",
            version_text(config.version)
        ),
        1 => format!(
            "configuration version {} (1 member)",
            version_text(config.version)
        ),
        n => format!(
            "configuration version {} ({n} members)",
            version_text(config.version)
        ),
    }];
    if !config.members.is_empty() {
        lines.extend(table(&rows(config, probes)));
    }
    output::out(lines.join("\n"))?;
    Ok(())
}

/// The table's header and one row per member; a member that is not serving has its state and
/// the reason in place of the serving columns.
fn rows(config: &EnsembleConfig, probes: Option<&[Probe]>) -> Vec<Vec<String>> {
    let mut header = ["ID", "ROLE", "QUORUM:ELECTION", "CLIENT"]
        .map(String::from)
        .to_vec();
    if probes.is_some() {
        header.extend(
            ["STATE", "ZXID", "CONNECTIONS", "LATENCY AVG"]
                .iter()
                .map(|title| (*title).to_owned()),
        );
    }
    let mut rows = vec![header];
    for (index, member) in config.members.iter().enumerate() {
        let mut row = vec![
            member.id.to_string(),
            role_text(member.role).to_owned(),
            peer_address(member),
            member.client_address().unwrap_or_else(|| "-".to_owned()),
        ];
        if let Some(probe) = probes.and_then(|probes| probes.get(index)) {
            let dash = || "-".to_owned();
            match probe {
                Probe::Serving(srvr) => row.extend([
                    srvr.mode.clone(),
                    srvr.zxid.clone().unwrap_or_else(dash),
                    srvr.connections.map_or_else(dash, |n| n.to_string()),
                    srvr.latency_avg_ms
                        .map_or_else(dash, |ms| format!("{ms}ms")),
                ]),
                Probe::NotServing(reason) => row.extend(["not serving".to_owned(), reason.clone()]),
                Probe::Unknown(reason) => row.extend(["unknown".to_owned(), reason.clone()]),
                Probe::Unreachable(reason) => {
                    row.extend(["unreachable".to_owned(), reason.clone()]);
                }
                Probe::NoClientAddress => row.extend([dash(), "no client port".to_owned()]),
            }
        }
        rows.push(row);
    }
    rows
}

/// Columns two spaces apart; a row's last cell is not padded, and does not widen its column
/// (so a reason may run across the columns it replaces).
fn table(rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (column, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            if widths.len() <= column {
                widths.resize(column + 1, 0);
            }
            widths[column] = widths[column].max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (column, cell) in row.iter().enumerate() {
                if column + 1 < row.len() {
                    let width = widths.get(column).copied().unwrap_or_default();
                    line.push_str(&format!("{cell:<width$}  "));
                } else {
                    line.push_str(cell);
                }
            }
            line
        })
        .collect()
}

/// Checks a member spec (`server.N=...`) before anything is sent; returns it trimmed.
///
/// # Errors
/// What is wrong with it.
fn parse_member(input: &str) -> Result<String, String> {
    match input.parse::<curator_framework::ensemble::EnsembleMember>() {
        Ok(_) => Ok(input.trim().to_owned()),
        // "ensemble member ...: why", without the variant's "invalid argument:" in front.
        Err(curator_framework::Error::InvalidArgument(reason)) => Err(reason),
        Err(other) => Err(other.to_string()),
    }
}

/// Reads a configuration version: hexadecimal, as ZooKeeper writes it (`version=100000003`),
/// with or without `0x`.
///
/// # Errors
/// When it is not a hexadecimal number that fits in an `i64`.
fn parse_config_version(input: &str) -> Result<i64, String> {
    let text = input.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{input}` is not a configuration version (hexadecimal, as `curator ensemble` prints \
             it: 100000003 or 0x100000003)"
        ));
    }
    i64::from_str_radix(digits, 16)
        .map_err(|_| format!("`{input}` is too large for a configuration version"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srvr::Srvr;

    #[test]
    fn the_table_lines_up_and_reasons_run_across() {
        let config = EnsembleConfig::parse(
            "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
             server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2182\n\
             server.3=[::1]:2890:3890:participant\n\
             version=10000000a",
        )
        .unwrap();
        let probes = [
            Probe::Serving(Srvr {
                mode: "leader".into(),
                zxid: Some("0x10000000a".into()),
                connections: Some(12),
                latency_avg_ms: Some(0.5),
                version: None,
            }),
            Probe::Unreachable("connection refused".into()),
            Probe::NoClientAddress,
        ];
        assert_eq!(
            table(&rows(&config, Some(&probes))),
            [
                "ID  ROLE         QUORUM:ELECTION      CLIENT          STATE        ZXID         CONNECTIONS  LATENCY AVG",
                "1   participant  127.0.0.1:2888:3888  127.0.0.1:2181  leader       0x10000000a  12           0.5ms",
                "2   observer     10.0.0.2:2888:3888   10.0.0.2:2182   unreachable  connection refused",
                "3   participant  [::1]:2890:3890      -               -            no client port",
            ]
        );
        assert_eq!(
            table(&rows(&config, None))[0],
            "ID  ROLE         QUORUM:ELECTION      CLIENT"
        );
        assert_eq!(version_text(config.version), "10000000a");
    }

    #[test]
    fn ensemble_takes_specs_ids_and_hex_versions() {
        use clap::Parser;

        use crate::args::{Cli, settings};
        use crate::cmd::Command;

        let cli = Cli::try_parse_from([
            "curator",
            "ensemble",
            "--json",
            "add",
            "server.4=10.0.0.4:2888:3888;2181",
            "server.5=10.0.0.5:2888:3888:observer;10.0.0.5:2181",
            "--from-version",
            "0x10000000A",
            "--connect",
            "h:1",
        ])
        .unwrap();
        assert!(cli.json());
        let (command, resolved) = cli.resolve().unwrap();
        assert_eq!(resolved.connect.as_deref(), Some("h:1"));
        let Command::Ensemble(Ensemble {
            op: Some(EnsembleOp::Add { specs, change }),
            ..
        }) = command
        else {
            panic!("not ensemble add");
        };
        assert_eq!(specs.len(), 2);
        assert_eq!(change.from_version, Some(0x1_0000_000a));
        for bad in [
            &["curator", "ensemble", "add", "4=h:1:2"][..],
            &["curator", "ensemble", "add", "server.4=h:1:2:leader"],
            &["curator", "ensemble", "add"],
            &["curator", "ensemble", "remove"],
            &["curator", "ensemble", "remove", "x"],
            &["curator", "ensemble", "remove", "-1"],
            &["curator", "ensemble", "remove", "1", "--from-version", "1g"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse_config_version("100000003"), Ok(0x1_0000_0003));
        assert_eq!(parse_config_version("0X0"), Ok(0));
        for bad in ["", "0x", "-1", "ffffffffffffffffff", "12 34"] {
            assert!(parse_config_version(bad).is_err(), "{bad:?} parsed");
        }
        let refused = settings(&[
            "curator",
            "ensemble",
            "--probe-timeout",
            "1s",
            "remove",
            "3",
        ])
        .unwrap_err();
        assert!(refused.message.unwrap().contains("ensemble remove"));
        let status = Cli::try_parse_from(["curator", "ensemble", "--probe-timeout", "500ms"])
            .unwrap()
            .command;
        assert!(matches!(
            status,
            Command::Ensemble(Ensemble {
                op: None,
                probe_timeout: Some(timeout),
                ..
            }) if timeout == Duration::from_millis(500)
        ));
    }
}

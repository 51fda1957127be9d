//! `curator inspect PATH [--json] [--watch]`: who holds what at PATH (see `curator-inspect`).

use std::pin::pin;

use clap::Args;
use curator_framework::{ConnectionState, Error};
use curator_inspect::{Layout, Report};
use futures::StreamExt;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, WriteError};
use crate::report::Reporter;

/// Show who holds what at PATH: the recipe recognized there (lock, semaphore, latch,
/// barrier, queue, counter, group, ...), its holders, waiters in order, leader, queue depth
/// and members, each with its identity, session and creation time
#[derive(Debug, Args)]
pub(crate) struct Inspect {
    /// The recipe's path
    path: String,
    /// Print the report again after every change under PATH, until interrupted
    #[arg(long)]
    watch: bool,
    #[command(flatten)]
    session: Session,
}

impl Run for Inspect {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let client = ctx.client_for(&self.path).await?;
        let (path, watch, report) = (self.path.as_str(), self.watch, ctx.report);
        let failed = |error| CliError::zk(&format!("inspecting {path}"), error);
        if !watch {
            let inspected = curator_inspect::inspect(client, path)
                .await
                .map_err(failed)?;
            // As `get` says of a missing node (a watch, though, waits for it to appear).
            if inspected.layout == Layout::Missing {
                return Err(failed(Error::NoNode));
            }
            print(report, &inspected)?;
            return Ok(codes::OK);
        }
        // Nobody reads any more (`curator inspect --watch P | head`): stop at once rather than at
        // the next change, which may never come.
        output::watch_pipes();
        // Heard while a report is being read, too: a read waits while the connection is away.
        let mut states = client.connection_state_stream();
        let mut states_open = true;
        let (first, mut changes) = {
            let mut watched = pin!(curator_inspect::watch(client, path));
            loop {
                tokio::select! {
                    watched = &mut watched => break watched.map_err(failed)?,
                    state = states.next(), if states_open => match state {
                        Some(state) => connection_status(report, state)?,
                        None => states_open = false,
                    },
                    _ = output::gone() => return Err(CliError::output_closed()),
                }
            }
        };
        print(report, &first)?;
        let mut last = first;
        loop {
            let next = {
                let mut next = pin!(changes.next());
                loop {
                    tokio::select! {
                        next = &mut next => break next,
                        state = states.next(), if states_open => match state {
                        Some(state) => connection_status(report, state)?,
                        None => states_open = false,
                    },
                        _ = output::gone() => return Err(CliError::output_closed()),
                    }
                }
            };
            // The client closed (an interrupt): done.
            let Some(next) = next else {
                return Ok(codes::OK);
            };
            let next = next.map_err(failed)?;
            // Several events may describe one change; print only what differs.
            if next != last {
                print(report, &next)?;
                last = next;
            }
        }
    }
}


/// The report as one JSON object per line, or as text.
fn print(report: Reporter, inspected: &Report) -> Result<(), WriteError> {
    let value = serde_json::to_value(inspected).unwrap_or_default();
    report.result(value, inspected.to_string().trim_end())
}

/// A connection change while watching, on stderr: `{"event":"connection","state":"Suspended"}`,
/// or a line for people (nothing for the first `Connected`, which the client reports just after
/// it started). The reports go on by themselves once connected: the watch is set again and
/// the path read anew.
fn connection_status(report: Reporter, state: ConnectionState) -> Result<(), WriteError> {
    let human = match state {
        ConnectionState::Connected => return Ok(()),
        ConnectionState::Suspended => {
            "connection to ZooKeeper suspended: the last report may no longer be true; \
             reporting again once it is back"
        }
        ConnectionState::Lost => {
            "session lost (expired, or away too long): the last report may no longer be true; \
             reporting again with a new session once connected"
        }
        ConnectionState::Reconnected => "reconnected to ZooKeeper",
        ConnectionState::ReadOnly => "connected to a read-only server",
        _ => "connection state changed",
    };
    report.status(
        "connection",
        json!({ "state": format!("{state:?}") }),
        human,
    )
}

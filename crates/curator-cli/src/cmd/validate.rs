//! `curator validate SEQUENCER`: whether a hold's sequencer is still current.

use clap::Args;
use curator_framework::recipe::Sequencer;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};

/// Check a hold's SEQUENCER (`zkseq1:<session>:<token>:<path>`, $CURATOR_SEQUENCER of `curator
/// lock`): exit 0 while the hold is there, exit code 6 when it is gone (released, expired,
/// taken over)
///
/// Valid means: a node at the path, created at the token (its czxid), owned by the session (its
/// ephemeralOwner). One `exists` on the server's path, whatever the connection's namespace.
#[derive(Debug, Args)]
pub(crate) struct Validate {
    /// The sequencer, as a holder exports it
    #[arg(value_parser = parse_sequencer)]
    sequencer: Sequencer,
    #[command(flatten)]
    session: Session,
}

impl Run for Validate {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    /// Checks the sequencer: exit code 0 when current, 6 ([`codes::REFUSED`]) when not.
    async fn run(self, ctx: &Ctx) -> CliResult {
        let Validate { sequencer, .. } = self;
        let client = ctx.client().await?;
        let valid = sequencer
            .check(client)
            .await
            .map_err(|error| CliError::zk(&format!("validating {sequencer}"), error))?;
        let fields = json!({
            "path": sequencer.path(),
            "session": format!("{:#x}", sequencer.session_id()),
            "fencing_token": sequencer.fencing_token(),
            "valid": valid,
        });
        if valid {
            ctx.report.result(fields, format!("valid {}", sequencer.path()))?;
            Ok(codes::OK)
        } else {
            ctx.report.result(
                fields,
                format!("stale {}: the hold is gone", sequencer.path()),
            )?;
            Ok(codes::REFUSED)
        }
    }
}

/// A sequencer's text form.
///
/// # Errors
/// When it is not one (the reason and the expected form).
fn parse_sequencer(input: &str) -> Result<Sequencer, String> {
    input.parse().map_err(|error: curator_framework::Error| error.to_string())
}

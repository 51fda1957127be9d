//! `curator whoami`: the identities the server gives this session.

use clap::Args;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};

/// Print the identities the server gives this client's session (ZooKeeper's whoAmI)
#[derive(Debug, Args)]
pub(crate) struct Whoami {
    #[command(flatten)]
    session: Session,
}

impl Run for Whoami {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let client = ctx.client().await?;
        let identities = client
            .who_am_i()
            .await
            .map_err(|error| CliError::zk("asking who this client is", error))?;
        let lines: Vec<String> = identities.iter().map(ToString::to_string).collect();
        let json: Vec<_> = identities
            .iter()
            .map(|identity| json!({ "scheme": identity.scheme, "id": identity.id }))
            .collect();
        ctx.report.result(json!(json), lines.join("\n"))?;
        Ok(codes::OK)
    }
}

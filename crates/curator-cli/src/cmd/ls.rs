//! `curator ls PATH`: the children of a node, sorted.

use clap::Args;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliResult, codes};
use crate::nodes::missing_namespace;

/// List the children of PATH
#[derive(Debug, Args)]
pub(crate) struct Ls {
    /// The node
    path: String,
    #[command(flatten)]
    session: Session,
}

impl Run for Ls {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Ls { path, .. } = self;
        let client = ctx.client_for(&path).await?;
        let report = ctx.report;
        let what = format!("listing {path}");
        let (mut children, _) = client
            .get_children()
            .for_path(&path)
            .await
            .map_err(|error| missing_namespace(client, &path, &what, error))?;
        children.sort();
        // No children, no lines (`--json` still prints `[]`).
        if report.json || !children.is_empty() {
            report.result(json!(children), children.join("\n"))?;
        }
        Ok(codes::OK)
    }
}

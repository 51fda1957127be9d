//! `curator create PATH [DATA] [-p] [--sequential]`: a new node.

use clap::Args;
use curator_framework::{CreateMode, Error, paths};
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::nodes::read_data;

/// Create PATH (with DATA, or empty) and print the created path
#[derive(Debug, Args)]
pub(crate) struct Create {
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
    #[command(flatten)]
    session: Session,
}

impl Run for Create {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Create {
            path,
            data,
            parents,
            sequential,
            ..
        } = self;
        let client = ctx.client_for(&path).await?;
        let data = match data {
            Some(data) => read_data(&data)?,
            None => Vec::new(),
        };
        let mode = if sequential {
            CreateMode::PersistentSequential
        } else {
            CreateMode::Persistent
        };
        let mut create = client.create().with_mode(mode);
        if parents {
            create = create.creating_parents_if_needed();
        }
        let created = create
            .for_path(&path, data)
            .await
            .map_err(|error| match error {
                Error::NoNode if !parents => CliError::new(
                    codes::OTHER,
                    format!(
                        "creating {path}: its parent {} does not exist (-p creates it too)",
                        paths::parent(&path).unwrap_or("/")
                    ),
                ),
                error => CliError::zk(&format!("creating {path}"), error),
            })?;
        ctx.report.result(json!({ "path": created }), &created)?;
        Ok(codes::OK)
    }
}

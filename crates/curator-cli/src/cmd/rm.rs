//! `curator rm PATH [-r] [--version V]`: delete a node.

use clap::Args;
use curator_framework::Error;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::nodes::bad_version;

/// Delete PATH
#[derive(Debug, Args)]
pub(crate) struct Rm {
    /// The node
    path: String,
    /// Delete its children too
    #[arg(short, long)]
    recursive: bool,
    /// Only if the node is at this version
    #[arg(long)]
    version: Option<i32>,
    #[command(flatten)]
    session: Session,
}

impl Run for Rm {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Rm {
            path,
            recursive,
            version,
            ..
        } = self;
        let client = ctx.client_for(&path).await?;
        let mut delete = client.delete();
        if recursive {
            delete = delete.deleting_children_if_needed();
        }
        if let Some(version) = version {
            delete = delete.with_version(version);
        }
        let what = format!("deleting {path}");
        match delete.for_path(&path).await {
            Ok(()) => {}
            // The only delete the server refuses this way: /zookeeper and below.
            Err(Error::BadArguments) => {
                return Err(CliError::new(
                    codes::OTHER,
                    format!(
                        "{what}: refused by the server: /zookeeper and the nodes under it belong to ZooKeeper itself"
                    ),
                ));
            }
            Err(Error::BadVersion) => {
                return Err(bad_version(client, &what, &path, version).await);
            }
            Err(Error::NotEmpty) => {
                return Err(CliError::new(
                    codes::OTHER,
                    format!("{what}: node has children (-r deletes them too)"),
                ));
            }
            Err(error) => return Err(CliError::zk(&what, error)),
        }
        if ctx.report.json {
            ctx.report.result(json!({ "deleted": path }), "")?;
        }
        Ok(codes::OK)
    }
}

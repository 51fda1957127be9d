//! `curator set PATH DATA [--version V]`: new data for a node.

use clap::Args;
use curator_framework::Error;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::nodes::{bad_version, read_data};

/// Set the data of PATH (`-` reads it from standard input)
#[derive(Debug, Args)]
pub(crate) struct Set {
    /// The node
    path: String,
    /// The new data
    data: String,
    /// Only if the node is at this version
    #[arg(long)]
    version: Option<i32>,
    #[command(flatten)]
    session: Session,
}

impl Run for Set {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Set {
            path,
            data,
            version,
            ..
        } = self;
        let client = ctx.client_for(&path).await?;
        let data = read_data(&data)?;
        let mut set = client.set_data();
        if let Some(version) = version {
            set = set.with_version(version);
        }
        let what = format!("setting {path}");
        let stat = match set.for_path(&path, data).await {
            Ok(stat) => stat,
            Err(Error::BadVersion) => {
                return Err(bad_version(client, &what, &path, version).await);
            }
            Err(error) => return Err(CliError::zk(&what, error)),
        };
        ctx.report.result(
            json!({ "path": path, "version": stat.version }),
            format!("{path} version {}", stat.version),
        )?;
        Ok(codes::OK)
    }
}

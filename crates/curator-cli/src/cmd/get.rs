//! `curator get PATH [--stat] [--encoding E]`: the data of a node.

use clap::Args;
use curator_framework::Stat;
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::encoding::Encoding;
use crate::exit::{CliResult, codes};
use crate::nodes::missing_namespace;
use crate::output;

/// Print the data of PATH
#[derive(Debug, Args)]
pub(crate) struct Get {
    /// The node
    path: String,
    /// Also print the node's version and sizes
    #[arg(long)]
    stat: bool,
    /// How to print the data: as text (invalid UTF-8 replaced by U+FFFD), or in base64 or
    /// hex
    #[arg(long, value_enum, default_value_t = Encoding::Utf8)]
    encoding: Encoding,
    #[command(flatten)]
    session: Session,
}

impl Run for Get {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Get {
            path,
            stat,
            encoding,
            ..
        } = self;
        let client = ctx.client_for(&path).await?;
        let report = ctx.report;
        let what = format!("reading {path}");
        let (data, node) = client
            .get_data()
            .for_path(&path)
            .await
            .map_err(|error| missing_namespace(client, &path, &what, error))?;
        let (text, lossy) = encoding.encode(&data);
        if report.json {
            let mut value = json!({ "path": path, "data": text, "encoding": encoding.name() });
            if lossy {
                value["lossy"] = json!(true);
            }
            if stat {
                value["stat"] = stat_json(&node);
            }
            report.result(value, "")?;
        } else {
            output::out(text)?;
            if stat {
                output::out(stat_text(&node))?;
            }
        }
        Ok(codes::OK)
    }
}

fn stat_json(stat: &Stat) -> Value {
    json!({
        "version": stat.version,
        "cversion": stat.cversion,
        "data_length": stat.data_length,
        "num_children": stat.num_children,
        // A session id, as hex text like every session id in `curator`'s JSON: as a number it
        // would pass 2^53 and lose digits in `jq` and browsers.
        "ephemeral_owner": format!("0x{:x}", stat.ephemeral_owner),
        "czxid": stat.czxid,
        "mzxid": stat.mzxid,
        "ctime": stat.ctime,
        "mtime": stat.mtime,
    })
}

fn stat_text(stat: &Stat) -> String {
    format!(
        "version={} cversion={} data_length={} num_children={} ephemeral_owner={:#x} czxid={:#x} mzxid={:#x}",
        stat.version,
        stat.cversion,
        stat.data_length,
        stat.num_children,
        stat.ephemeral_owner,
        stat.czxid,
        stat.mzxid
    )
}

//! `curator tree PATH`: a node and everything below it.

use clap::Args;
use curator_framework::{CuratorFramework, Error, paths};
use futures::future::{BoxFuture, FutureExt};
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::output;

/// Print PATH and everything below it
#[derive(Debug, Args)]
pub(crate) struct Tree {
    /// The root of the tree
    path: String,
    #[command(flatten)]
    session: Session,
}

impl Run for Tree {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Tree { path, .. } = self;
        let client = ctx.client_for(&path).await?;
        let tree = tree(client, path.clone())
            .await
            .map_err(|error| CliError::zk(&format!("reading the tree under {path}"), error))?;
        if ctx.report.json {
            ctx.report.result(tree, "")?;
        } else {
            let mut lines = Vec::new();
            print_tree(&tree, 0, &mut lines);
            output::out(lines.join("\n"))?;
        }
        Ok(codes::OK)
    }
}

/// `{"path", "children": [...]}`, depth first; nodes deleted meanwhile are left out, and a node
/// below `path` that this session may not list is `{"path", "no_read_permission": true}`
/// (its children unknown) rather than a failure of the whole tree.
fn tree(client: &CuratorFramework, path: String) -> BoxFuture<'_, Result<Value, Error>> {
    async move {
        let (mut names, _) = client.get_children().for_path(&path).await?;
        names.sort();
        let mut children = Vec::with_capacity(names.len());
        for name in names {
            let child = paths::join(&path, &name);
            match tree(client, child.clone()).await {
                Ok(node) => children.push(node),
                Err(Error::NoNode) => {}
                Err(Error::NoAuth) => {
                    children.push(json!({ "path": child, "no_read_permission": true }));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(json!({ "path": path, "children": children }))
    }
    .boxed()
}

fn print_tree(node: &Value, depth: usize, lines: &mut Vec<String>) {
    let path = node["path"].as_str().unwrap_or_default();
    let label = if depth == 0 {
        path
    } else {
        paths::node_name(path)
    };
    let mark = if node["no_read_permission"] == true {
        " (no read permission)"
    } else {
        ""
    };
    lines.push(format!("{}{label}{mark}", "  ".repeat(depth)));
    for child in node["children"].as_array().into_iter().flatten() {
        print_tree(child, depth + 1, lines);
    }
}

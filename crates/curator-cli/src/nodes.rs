//! What the node commands (`ls`, `get`, `set`, `create`, `rm`) share: DATA from an argument
//! or standard input, and errors that say what the server has.

use std::io::Read;

use curator_framework::{CuratorFramework, Error};

use crate::exit::{CliError, CliResult, codes};

/// A refused `--version`, with the version the node is at (read after the refusal: it may have
/// moved on again by the time the message is read, but it is what the server had).
pub(crate) async fn bad_version(
    client: &CuratorFramework,
    what: &str,
    path: &str,
    asked: Option<i32>,
) -> CliError {
    let asked = asked.map(|v| format!(", not {v}")).unwrap_or_default();
    let now = match client.check_exists().for_path(path).await {
        Ok(Some(stat)) => format!(": it is at version {}{asked}", stat.version),
        Ok(None) => ": it no longer exists".to_owned(),
        Err(_) => String::new(),
    };
    CliError::new(codes::OTHER, format!("{what}: bad version{now}"))
}

/// A read of the namespace's root that found nothing because the namespace does not exist yet
/// (reads do not create it) says so.
pub(crate) fn missing_namespace(
    client: &CuratorFramework,
    path: &str,
    what: &str,
    error: Error,
) -> CliError {
    match (client.namespace(), &error) {
        (Some(namespace), Error::NoNode) if path == "/" => CliError::new(
            codes::OTHER,
            format!(
                "{what}: no such node (the namespace /{namespace} does not exist yet: the first write under it makes it)"
            ),
        ),
        _ => CliError::zk(what, error),
    }
}

/// `-` means standard input; anything else is the data itself.
pub(crate) fn read_data(data: &str) -> CliResult<Vec<u8>> {
    if data != "-" {
        return Ok(data.as_bytes().to_vec());
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|error| CliError::new(codes::OTHER, format!("reading standard input: {error}")))?;
    Ok(bytes)
}

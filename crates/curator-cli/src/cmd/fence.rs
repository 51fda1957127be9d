//! `curator fence PATH TOKEN`: admit a fencing token through a gate, or be refused.

use curator_framework::CuratorFramework;
use curator_locks::{Admission, FencingGate};
use serde_json::json;

use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;

/// Admits `token` through the gate at `path`: exit code 0 when admitted (stored), 6
/// ([`codes::REFUSED`]) when the gate admitted a newer token, which is printed.
pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    token: i64,
) -> CliResult {
    let gate = FencingGate::new(client.clone(), path)
        .map_err(|error| CliError::zk(&format!("fence {path}"), error))?;
    let admission = gate
        .admit(token)
        .await
        .map_err(|error| CliError::zk(&format!("admitting {token} at {path}"), error))?;
    match admission {
        Admission::Admitted => {
            report.result(
                json!({ "path": path, "token": token, "admitted": true }),
                format!("admitted {token}"),
            )?;
            Ok(codes::OK)
        }
        Admission::Refused { highest } => {
            report.result(
                json!({ "path": path, "token": token, "admitted": false, "highest": highest }),
                format!("refused {token}: {highest} was admitted"),
            )?;
            Ok(codes::REFUSED)
        }
    }
}

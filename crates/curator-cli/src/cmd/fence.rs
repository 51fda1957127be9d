//! `curator fence PATH TOKEN`: admit a fencing token through a gate, or be refused.

use clap::Args;
use curator_locks::{Admission, FencingGate};
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};

/// Admit TOKEN through the fencing gate at PATH: exit 0 when it is not older than any token
/// admitted before (it is stored), exit code 6 when a newer one was (printed)
///
/// The gate's node holds the highest admitted token as decimal text. Tokens are
/// $CURATOR_FENCING_TOKEN of `curator lock`, or $CURATOR_LEASE_TOKEN of `curator lease`.
#[derive(Debug, Args)]
pub(crate) struct Fence {
    /// The gate's node (created on first use)
    path: String,
    /// The fencing token to admit (0 or more)
    #[arg(allow_negative_numbers = true, value_parser = parse_token)]
    token: i64,
    #[command(flatten)]
    session: Session,
}

impl Run for Fence {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    /// Admits the token through the gate: exit code 0 when admitted (stored), 6
    /// ([`codes::REFUSED`]) when the gate admitted a newer token, which is printed.
    async fn run(self, ctx: &Ctx) -> CliResult {
        let Fence { path, token, .. } = self;
        let client = ctx.client_for(&path).await?;
        let report = ctx.report;
        let gate = FencingGate::new(client.clone(), &path)
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
}

/// A fencing token: a zxid (`$CURATOR_FENCING_TOKEN`, `$CURATOR_LEASE_TOKEN`), so never
/// negative.
///
/// # Errors
/// When it is not a whole number, or is negative.
fn parse_token(input: &str) -> Result<i64, String> {
    match input.trim().parse::<i64>() {
        Ok(token) if token >= 0 => Ok(token),
        Ok(_) => Err(
            "a fencing token is not negative (tokens are zxids: $CURATOR_FENCING_TOKEN of `curator \
             lock`, $CURATOR_LEASE_TOKEN of `curator lease`)"
                .to_owned(),
        ),
        Err(error) => Err(format!("not a fencing token: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::args::Cli;
    use crate::cmd::Command;

    #[test]
    fn tokens_are_whole_numbers_not_below_zero() {
        let cli = Cli::try_parse_from(["curator", "fence", "/g", "12884901890"]).unwrap();
        let Command::Fence(fence) = cli.command else {
            panic!("not a fence command");
        };
        assert_eq!((fence.path.as_str(), fence.token), ("/g", 12_884_901_890));
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "x"]).is_err());
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "-1"]).is_err());
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "0"]).is_ok());
    }
}

//! `curator lease PATH --for D [--id NAME] -- CMD...`: CMD runs only if the time-boxed lease is
//! won, and never past the lease's interval.

use std::time::Duration;

use clap::Args;
use curator_framework::CuratorFramework;
use curator_locks::NonBlockingLease;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Ctx, Run};
use crate::args::{RunArgs, Session, Takes, parse_id};
use crate::child::Child;
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::supervise::{Ended, Held, prepare, output_closed, report_exit, supervise};

/// Run CMD only if the time-boxed lease at PATH is won: at most one run per interval,
/// cluster-wide (exit code 7, CMD not run, when someone else holds it)
///
/// The lease is timed by ZooKeeper's clock and is not bound to this session. CMD gets
/// $CURATOR_LEASE_TOKEN (a fencing token, see `curator fence`) and $CURATOR_LEASE_UNTIL (the
/// interval's end, milliseconds since the Unix epoch on the server's clock). CMD is stopped
/// (SIGTERM, then SIGKILL after --grace) so that it is gone by the end of the interval
/// (exit code 5 then).
#[derive(Debug, Args)]
pub(crate) struct Lease {
    /// The lease's path
    path: String,
    /// How long the lease is held (its interval), e.g. 70m
    #[arg(long = "for", value_parser = parse_duration, value_name = "D")]
    duration: Duration,
    /// This holder's id; the same id renews its own lease (default: host name and process id)
    #[arg(long, value_parser = parse_id)]
    id: Option<String>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    session: Session,
}

impl Run for Lease {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    /// Tries the lease at PATH for its interval as `--id`; runs CMD when won.
    ///
    /// The lease is not released when CMD ends: it is "at most one run per interval", so it
    /// stays taken until the interval ends. CMD gets SIGTERM `--grace` before the interval's
    /// end (at once when the interval is shorter than that) and SIGKILL at its end, as this
    /// process sees it (see [`curator_locks::LeaseGrant::deadline`]).
    async fn run(self, ctx: &Ctx) -> CliResult {
        let Lease {
            path,
            duration,
            id,
            run,
            ..
        } = self;
        let (client, mut signals) = prepare(ctx, &path).await?;
        let report = ctx.report;
        let id = id.unwrap_or_else(super::default_id);
        let lease = NonBlockingLease::new(client.clone(), &path, &id)
            .map_err(|error| CliError::zk(&format!("lease {path}"), error))?;
        let taking = format!("taking lease {path}");
        let grant = match signals
            .unless_interrupted(report, &taking, lease.try_acquire(duration))
            .await
        {
            Ok(taken) => taken.map_err(|error| CliError::zk(&taking, error))?,
            Err(code) => return Ok(code),
        };
        let Some(grant) = grant else {
            let holder = held_by(client, &path).await;
            return Err(CliError::new(
                codes::NOT_WON,
                format!("lease {path} is held by {holder}; not running the command"),
            ));
        };
        let deadline = grant.deadline();
        // SIGTERM this long before the end, SIGKILL at the end: CMD is gone when the interval
        // is.
        let term_at = deadline
            .checked_sub(run.grace)
            .unwrap_or(deadline)
            .max(Instant::now());
        if let Err(error) = report.status(
            "acquired",
            json!({
                "path": path,
                "holder": grant.holder(),
                "fencing_token": grant.fencing_token(),
                "until_ms": grant.until_ms(),
            }),
            format!(
                "won lease {path} for {} as {}",
                human(duration),
                grant.holder()
            ),
        ) {
            // Nobody would hear what CMD does: do not start it.
            return Err(error.into());
        }

        let env = [
            ("CURATOR_LEASE_TOKEN", grant.fencing_token().to_string()),
            ("CURATOR_LEASE_UNTIL", grant.until_ms().to_string()),
            ("CURATOR_LEASE_HOLDER", grant.holder().to_owned()),
        ];
        let mut child = Child::spawn(&run.command, &env, run.grace, report).await?;
        let mut interval = Interval {
            path: &path,
            term_at,
            deadline,
        };
        match supervise(&mut child, &mut interval, &mut signals, report, run.grace).await {
            Ended::Exited(code) => {
                let after = format!("; lease {path} stays taken until its interval ends");
                report_exit(report, &child, code, &after);
                Ok(code)
            }
            Ended::Interrupted(code) => {
                report_exit(report, &child, code, "");
                Ok(code)
            }
            Ended::Lost { code, .. } => Err(CliError::new(
                codes::LOST,
                format!("lease {path} ends; {} stopped (code {code})", child.name()),
            )),
            Ended::OutputGone { stream, code } => Err(output_closed(&child, stream, code, "")),
        }
    }
}

/// The lease's interval, as [`supervise`] watches over it: "lost" at `term_at`, when CMD
/// gets SIGTERM so that it is gone by `deadline`.
struct Interval<'a> {
    path: &'a str,
    term_at: Instant,
    deadline: Instant,
}

impl Held for Interval<'_> {
    async fn lost(&mut self) {
        tokio::time::sleep_until(self.term_at).await;
    }

    /// CMD goes on after a stop only while the interval runs.
    async fn recheck(&mut self) -> Result<(), String> {
        if Instant::now() < self.term_at {
            Ok(())
        } else {
            Err("the interval ends".to_owned())
        }
    }

    fn continued(&self) -> (Value, Option<String>) {
        let path = self.path;
        (
            json!({ "path": path }),
            Some(format!("lease {path} still runs")),
        )
    }

    /// No longer than what is left of the interval.
    fn grace(&self, grace: Duration) -> Duration {
        grace.min(self.deadline.saturating_duration_since(Instant::now()))
    }
}

/// Who holds the lease at `path` and until when, from its node: the data is
/// `lease-v1 <duration ms> <holder>` and the interval starts at the node's `mtime` (see
/// [`NonBlockingLease`]); "someone else" when the node cannot be read as that.
async fn held_by(client: &CuratorFramework, path: &str) -> String {
    let someone = "someone else".to_owned();
    let Ok((data, stat)) = client.get_data().for_path(path).await else {
        return someone;
    };
    let Ok(text) = std::str::from_utf8(&data) else {
        return someone;
    };
    let mut words = text.splitn(3, ' ');
    let (Some("lease-v1"), Some(duration), Some(holder)) =
        (words.next(), words.next(), words.next())
    else {
        return someone;
    };
    match duration.parse::<i64>() {
        Ok(ms) => format!(
            "{holder} until {} (the server's clock)",
            utc(stat.mtime.saturating_add(ms))
        ),
        Err(_) => holder.to_owned(),
    }
}

/// `ms` since the Unix epoch as UTC to the second: `2024-05-01T12:00:00Z`.
fn utc(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), in 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;
    use crate::cmd::Command;

    #[test]
    fn a_lease_takes_its_interval_an_id_and_a_command() {
        let cli = Cli::try_parse_from([
            "curator", "lease", "/l", "--for", "70m", "--id", "job", "--", "true",
        ])
        .unwrap();
        let Command::Lease(lease) = cli.command else {
            panic!("not a lease command");
        };
        assert_eq!(lease.path, "/l");
        assert_eq!(lease.duration, Duration::from_secs(70 * 60));
        assert_eq!(lease.id.as_deref(), Some("job"));
        assert_eq!(lease.run.command, ["true"]);
        assert!(Cli::try_parse_from(["curator", "lease", "/l", "--", "true"]).is_err());
    }

    #[test]
    fn times_print_as_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_999), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_714_564_800_000), "2024-05-01T12:00:00Z");
        assert_eq!(utc(4_107_542_399_000), "2100-02-28T23:59:59Z");
        assert_eq!(utc(-1000), "1969-12-31T23:59:59Z");
    }
}

//! The subcommands, one module each: `cmd/lock.rs` owns `curator lock`'s arguments (the
//! `#[derive(Args)]` struct [`lock::Lock`], whose doc comment is its help) and what it does (its
//! [`Run`] implementation). [`run`] runs the one given.
//!
//! A new command is a module with its struct and `Run`, and one line in the list below.

use curator_framework::CuratorFramework;
use tokio::sync::OnceCell;

use crate::args::{Settings, Takes};
use crate::connect::connect;
use crate::exit::{CliError, CliResult};
use crate::report::Reporter;

/// A subcommand: the shared flags it takes, and what it does.
pub(crate) trait Run {
    /// The shared flags it takes: see [`Takes`].
    fn takes(&self) -> Takes<'_>;

    /// Checks of its arguments that clap cannot make, made when the flags are resolved (before
    /// the environment is read or anything is tried).
    ///
    /// # Errors
    /// A usage error.
    fn check(&self) -> CliResult<()> {
        Ok(())
    }

    /// Does it; returns the exit code.
    ///
    /// # Errors
    /// What went wrong, with its exit code.
    async fn run(self, ctx: &Ctx) -> CliResult;
}

/// Declares the subcommands: each line `module::Type` is the module `cmd/module.rs` and the
/// variant `Type(module::Type)` of [`Command`] (clap names it after the variant: `Lock` is
/// `curator lock`), in the order `curator --help` lists them. A `#[cfg(...)]` in front applies
/// to the module and the variant; a `#[command(...)]`, to the variant.
macro_rules! commands {
    ($(
        $(#[cfg($cfg:meta)])?
        $(#[command($($command:tt)*)])?
        $module:ident::$name:ident,
    )*) => {
        $($(#[cfg($cfg)])? pub(crate) mod $module;)*

        /// What to do: the subcommand given, with its arguments.
        #[derive(Debug, clap::Subcommand)]
        #[allow(
            clippy::large_enum_variant,
            reason = "parsed once per process; boxing clap arguments buys nothing"
        )]
        pub(crate) enum Command {
            $(
                $(#[cfg($cfg)])?
                $(#[command($($command)*)])?
                $name($module::$name),
            )*
        }

        impl Command {
            /// The subcommand's name, for messages.
            pub(crate) fn name(&self) -> &'static str {
                match self {
                    $($(#[cfg($cfg)])? Command::$name(_) => stringify!($module),)*
                }
            }

            /// See [`Run::takes`].
            pub(crate) fn takes(&self) -> Takes<'_> {
                match self {
                    $($(#[cfg($cfg)])? Command::$name(command) => command.takes(),)*
                }
            }

            /// See [`Run::check`].
            pub(crate) fn check(&self) -> CliResult<()> {
                match self {
                    $($(#[cfg($cfg)])? Command::$name(command) => command.check(),)*
                }
            }

            /// See [`Run::run`].
            async fn run(self, ctx: &Ctx) -> CliResult {
                match self {
                    $($(#[cfg($cfg)])? Command::$name(command) => command.run(ctx).await,)*
                }
            }
        }
    };
}

commands! {
    #[cfg(feature = "server")]
    demo::Demo,
    #[cfg(feature = "server")]
    server::Server,
    lock::Lock,
    leader::Leader,
    lease::Lease,
    fence::Fence,
    validate::Validate,
    barrier::Barrier,
    counter::Counter,
    ls::Ls,
    get::Get,
    set::Set,
    create::Create,
    rm::Rm,
    tree::Tree,
    inspect::Inspect,
    ui::Ui,
    whoami::Whoami,
    watch::Watch,
    ensemble::Ensemble,
    #[command(name = "__sentinel", hide = true)]
    sentinel::Sentinel,
}

/// What a command gets besides its own arguments: the resolved settings, where to report, and
/// a client, connected when first asked for.
pub(crate) struct Ctx {
    pub(crate) settings: Settings,
    pub(crate) report: Reporter,
    client: OnceCell<CuratorFramework>,
}

impl Ctx {
    /// The client, connected: the first call connects (see [`connect`]), and [`run`] closes it
    /// once the command is done.
    ///
    /// # Errors
    /// Bad settings (exit code 2), or no connection (3).
    pub(crate) async fn client(&self) -> CliResult<&CuratorFramework> {
        self.client
            .get_or_try_init(|| async {
                connect(&self.settings, &self.settings.connect_string()).await
            })
            .await
    }

    /// [`client`](Self::client), once `path` is checked: a bad path is a usage error, reported
    /// before any connection is tried.
    ///
    /// # Errors
    /// A bad path (exit code 2), bad settings (2), or no connection (3).
    pub(crate) async fn client_for(&self, path: &str) -> CliResult<&CuratorFramework> {
        valid_path(path)?;
        self.client().await
    }
}

/// A usage error for a path ZooKeeper would refuse.
pub(crate) fn valid_path(path: &str) -> CliResult<()> {
    curator_framework::paths::validate(path).map_err(|error| CliError::usage(error.to_string()))
}

/// Runs `command` with `settings`; returns the exit code.
pub(crate) async fn run(command: Command, settings: Settings) -> CliResult {
    let ctx = Ctx {
        report: Reporter {
            json: settings.json,
        },
        settings,
        client: OnceCell::new(),
    };
    let result = command.run(&ctx).await;
    let Some(client) = ctx.client.get() else {
        return result;
    };
    let result = match result {
        Err(error) if error.not_authorized => Err(refused_whom(client, &ctx.settings, error).await),
        other => other,
    };
    // The command's outcome stands; a close cannot fail.
    let _ = client.close().await;
    result
}

/// A refusal by a node's ACL, with the identities the server gives this session (ZooKeeper's
/// whoAmI, asked within the connection timeout); as it was when the server cannot say.
async fn refused_whom(
    client: &CuratorFramework,
    settings: &Settings,
    mut error: CliError,
) -> CliError {
    let asked = tokio::time::timeout(settings.connection_timeout, client.who_am_i()).await;
    let Ok(Ok(identities)) = asked else {
        return error;
    };
    if identities.is_empty() {
        return error;
    }
    let who: Vec<String> = identities.iter().map(ToString::to_string).collect();
    let hint = if settings.security.digest.is_none() {
        "; --auth-user adds a digest identity"
    } else {
        ""
    };
    if let Some(message) = &mut error.message {
        message.push_str(&format!(" (this session is {}{hint})", who.join(", ")));
    }
    error
}

/// This process's default participant id: `<host>-<pid>` (`localhost` when the host name is
/// unknown), for `leader` and `lease`.
fn default_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}-{}", std::process::id())
}

//! The security flags made into settings: TLS, SASL (DIGEST-MD5 or Kerberos) and digest
//! identities, checked together before anything is tried.

use std::path::Path;

use curator_framework::security::{SaslConfig, TlsConfig};

use crate::exit::{CliError, CliResult};

use super::connection::{Connection, FLAGS};

/// How the client proves who it is, and to whom it talks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Security {
    pub(crate) tls: Option<TlsConfig>,
    /// Whether `tls` presents a client certificate.
    pub(crate) client_certificate: bool,
    pub(crate) sasl: Option<SaslConfig>,
    /// Whether `sasl` is a Kerberos login.
    pub(crate) kerberos: bool,
    /// The Kerberos variables the process must run with (see `main`).
    pub(crate) kerberos_environment: Vec<(&'static str, std::ffi::OsString)>,
    /// A digest identity added to the session (`--auth-user`).
    pub(crate) digest: Option<DigestAuth>,
}

impl Connection {
    /// The security settings, checked.
    ///
    /// # Errors
    /// A usage error for flags that need each other, an unreadable or empty password file, or
    /// Kerberos in a build without it.
    pub(crate) fn security(&self) -> CliResult<Security> {
        let tls = match (&self.tls_ca, &self.tls_cert, &self.tls_key) {
            (None, None, None) => None,
            (None, _, _) => {
                return Err(CliError::usage(
                    "--tls-cert and --tls-key need --tls-ca (the CA that signs the servers)",
                ));
            }
            (Some(ca), cert, key) => {
                let tls = TlsConfig::new().ca_file(ca);
                match (cert, key) {
                    (Some(cert), Some(key)) => Some(tls.identity_files(cert, key)),
                    (None, None) => Some(tls),
                    _ => {
                        return Err(CliError::usage("--tls-cert and --tls-key go together"));
                    }
                }
            }
        };
        // Any of the `--kerberos-*` flags.
        let kerberos_flag = FLAGS
            .iter()
            .find(|flag| flag.name.starts_with("--kerberos-") && flag.is_set(self))
            .map(|flag| flag.name);
        if let (Some(flag), false) = (kerberos_flag, self.kerberos) {
            return Err(CliError::usage(format!("{flag} needs --kerberos")));
        }
        let sasl = match (&self.sasl_user, &self.sasl_password_file, self.kerberos) {
            (None, None, false) => None,
            (Some(_), _, true) | (_, Some(_), true) => {
                return Err(CliError::usage(
                    "--kerberos and --sasl-user are two logins: choose one",
                ));
            }
            (Some(user), Some(file), false) => Some(
                SaslConfig::digest_md5_password_file(user.clone(), file).map_err(|error| {
                    CliError::usage(match error {
                        // "cannot read the password file ...": no need for the variant's
                        // "invalid argument:" in front.
                        curator_framework::Error::InvalidArgument(reason) => {
                            format!("--sasl-password-file: {reason}")
                        }
                        other => other.to_string(),
                    })
                })?,
            ),
            (_, _, false) => {
                return Err(CliError::usage(
                    "--sasl-user and --sasl-password-file go together",
                ));
            }
            (None, None, true) => Some(kerberos(
                self.kerberos_service.as_deref(),
                self.kerberos_principal.as_deref(),
            )?),
        };
        // Files MIT Kerberos would otherwise find missing only when the login fails, which
        // looks like a server that never answers.
        for (flag, value) in [
            ("--kerberos-keytab", &self.kerberos_keytab),
            ("--kerberos-config", &self.kerberos_config),
        ] {
            if let Some(file) = value.as_deref().and_then(local_file) {
                readable(flag, file)?;
            }
        }
        if self.kerberos_keytab.is_none() {
            // With a keytab, a missing cache is one to fill; without, the login needs it.
            if let Some(file) = self.kerberos_ccache.as_deref().and_then(local_file) {
                readable("--kerberos-ccache", file).map_err(|error| {
                    CliError::usage(format!(
                        "{} (`kinit -c {}` makes one)",
                        error.message.unwrap_or_default(),
                        file.display()
                    ))
                })?;
            }
        }
        let mut environment = Vec::new();
        for (variable, value) in [
            ("KRB5_CLIENT_KTNAME", &self.kerberos_keytab),
            ("KRB5CCNAME", &self.kerberos_ccache),
            ("KRB5_CONFIG", &self.kerberos_config),
        ] {
            if let Some(value) = value {
                environment.push((variable, value.as_os_str().to_owned()));
            }
        }
        if self.kerberos_keytab.is_some() && self.kerberos_ccache.is_none() {
            // MIT Kerberos takes the principal of the ticket cache first, and goes to the
            // keytab only when the cache holds none: with the caller's usual cache (or one of
            // the environment's) holding someone else's ticket, that someone else would log in.
            // A cache of this process's own, empty, makes the keytab's principal the one.
            environment.push(("KRB5CCNAME", PRIVATE_TICKET_CACHE.into()));
        }
        let digest = match (&self.auth_user, &self.auth_password_file) {
            (None, None) => None,
            (Some(user), Some(file)) => Some(DigestAuth::read(user, file)?),
            _ => {
                return Err(CliError::usage(
                    "--auth-user and --auth-password-file go together",
                ));
            }
        };
        Ok(Security {
            tls,
            client_certificate: self.tls_cert.is_some(),
            sasl,
            kerberos: self.kerberos,
            kerberos_environment: environment,
            digest,
        })
    }
}

/// A digest identity to add to every session (`addauth digest USER:PASSWORD`). `Debug` leaves
/// the password out.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DigestAuth {
    pub(crate) user: String,
    password: String,
}

impl DigestAuth {
    /// The user, and the first line of `file` for the password.
    ///
    /// # Errors
    /// A usage error for a user name ZooKeeper would cut short (it splits `user:password` at the
    /// first colon), an unreadable file, or an empty first line.
    fn read(user: &str, file: &Path) -> CliResult<Self> {
        if user.is_empty() || user.contains(':') {
            return Err(CliError::usage(
                "--auth-user: a digest user name is not empty and has no ':'",
            ));
        }
        let password = curator_framework::security::read_password_file(file).map_err(|error| {
            let why = match error {
                curator_framework::Error::InvalidArgument(why) => why,
                other => other.to_string(),
            };
            CliError::usage(format!("--auth-password-file: {why}"))
        })?;
        Ok(Self {
            user: user.to_owned(),
            password,
        })
    }

    /// The bytes of the `digest` scheme's authentication: `USER:PASSWORD`.
    pub(crate) fn auth_bytes(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password).into_bytes()
    }
}

impl std::fmt::Debug for DigestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestAuth")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The ticket cache of a `--kerberos-keytab` login without `--kerberos-ccache`: in this
/// process's memory, so empty at the start and gone at the end.
pub(crate) const PRIVATE_TICKET_CACHE: &str = "MEMORY:curator";

/// The file a Kerberos keytab, cache or configuration name stands for: the name itself, or what
/// follows `FILE:`; `None` for other kinds (`MEMORY:`, `KEYRING:`, `DIR:`, `KCM:`...), and for a
/// list of configuration files (`a.conf:b.conf`).
fn local_file(value: &Path) -> Option<&Path> {
    let text = value.to_str()?;
    match text.split_once(':') {
        None => Some(value),
        Some(("FILE", file)) => Some(Path::new(file)),
        Some(_) => None,
    }
}

/// A usage error unless `file` (given with `flag`) can be opened for reading.
fn readable(flag: &str, file: &Path) -> CliResult<()> {
    let opened = std::fs::File::open(file).and_then(|opened| {
        if opened.metadata()?.is_dir() {
            Err(std::io::Error::other("it is a directory"))
        } else {
            Ok(())
        }
    });
    opened.map_err(|error| {
        CliError::usage(format!("{flag}: cannot read {}: {error}", file.display()))
    })
}

/// A Kerberos login, in a build that has Kerberos.
#[cfg(feature = "kerberos")]
fn kerberos(service: Option<&str>, principal: Option<&str>) -> CliResult<SaslConfig> {
    let mut login = SaslConfig::kerberos();
    if let Some(service) = service {
        login = login.with_service(service);
    }
    if let Some(principal) = principal {
        login = login.with_principal(principal);
    }
    Ok(login)
}

/// No Kerberos in this build.
#[cfg(not(feature = "kerberos"))]
fn kerberos(_: Option<&str>, _: Option<&str>) -> CliResult<SaslConfig> {
    Err(CliError::usage(
        "this curator was built without Kerberos (build it with --features kerberos)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kerberos_names_of_files_are_checked_and_others_left_to_kerberos() {
        assert_eq!(
            local_file(Path::new("/k/a.keytab")),
            Some(Path::new("/k/a.keytab"))
        );
        assert_eq!(local_file(Path::new("FILE:/k/a")), Some(Path::new("/k/a")));
        for other in [
            "MEMORY:x",
            "KEYRING:persistent:0",
            "DIR:/d",
            "/a.conf:/b.conf",
        ] {
            assert_eq!(local_file(Path::new(other)), None, "{other}");
        }
        let missing = readable("--kerberos-keytab", Path::new("/no/such/keytab")).unwrap_err();
        assert_eq!(missing.code, crate::exit::codes::USAGE);
        assert!(
            missing
                .message
                .unwrap()
                .starts_with("--kerberos-keytab: cannot read /no/such/keytab: ")
        );
        let directory = readable("--kerberos-config", Path::new("/")).unwrap_err();
        assert!(directory.message.unwrap().contains("directory"));
    }

    #[cfg(feature = "kerberos")]
    #[test]
    fn a_keytab_login_gets_a_ticket_cache_of_its_own() {
        use crate::args::settings;
        // Any readable file passes for a keytab here.
        let keytab = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let environment = |args: &[&str]| {
            let mut all = vec![
                "curator",
                "whoami",
                "--kerberos",
                "--kerberos-keytab",
                keytab,
            ];
            all.extend_from_slice(args);
            settings(&all).unwrap().security.kerberos_environment
        };
        let cache = |environment: &[(&str, std::ffi::OsString)]| {
            environment
                .iter()
                .find(|(name, _)| *name == "KRB5CCNAME")
                .map(|(_, value)| value.clone())
        };
        let alone = environment(&[]);
        assert_eq!(cache(&alone), Some(PRIVATE_TICKET_CACHE.into()));
        assert!(alone.contains(&("KRB5_CLIENT_KTNAME", keytab.into())));
        // A cache asked for is the cache used (a missing one is made, from the keytab).
        let given = environment(&["--kerberos-ccache", "/no/such/cache"]);
        assert_eq!(cache(&given), Some("/no/such/cache".into()));
        // Without a keytab, the cache must hold the ticket already.
        let refused = settings(&[
            "curator",
            "whoami",
            "--kerberos",
            "--kerberos-ccache",
            "/no/cc",
        ])
        .unwrap_err();
        assert!(refused.message.unwrap().contains("kinit -c /no/cc"));
    }
}

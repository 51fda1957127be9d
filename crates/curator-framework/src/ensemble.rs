//! Where the ZooKeeper servers are: a fixed connect string, or one computed anew for every
//! session (a DNS name, a service registry, a file).

mod config;
mod connect;
mod provider;
mod tracker;

pub use config::{EnsembleConfig, EnsembleMember, MemberRole};
pub(crate) use connect::{chroot, servers, validate_connect_string};
pub use provider::{EnsembleProvider, FixedEnsembleProvider, FnEnsembleProvider};
pub(crate) use tracker::Tracker;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_of_a_connect_string() {
        assert_eq!(
            servers("tcp+tls://zk1:2281,zk2,tcp://10.0.0.3:2182/app"),
            [
                ("zk1".to_owned(), 2281),
                ("zk2".to_owned(), 2181),
                ("10.0.0.3".to_owned(), 2182)
            ]
        );
        assert!(validate_connect_string("tcp+tls://localhost:2281").is_ok());
        assert!(validate_connect_string("tcp+tls://").is_err());
        assert!(validate_connect_string("zk1:x").is_err());
    }

    #[test]
    fn configs_read_and_write_back() {
        let text = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
                    server.3=[::1]:2890:3890;2183\n\
                    server.2=zk2:2889:3889:observer\n\
                    version=1a";
        let config = EnsembleConfig::parse(text).unwrap();
        assert_eq!(config.version, 26);
        let ids: Vec<u64> = config.members.iter().map(|m| m.id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(config.member(2).unwrap().role, MemberRole::Observer);
        assert_eq!(config.member(2).unwrap().client_address(), None);
        assert_eq!(
            config.member(3).unwrap().client_address().as_deref(),
            Some("[::1]:2183")
        );
        assert_eq!(
            config.connect_string().as_deref(),
            Some("127.0.0.1:2181,[::1]:2183")
        );
        for member in &config.members {
            assert_eq!(
                &member.to_string().parse::<EnsembleMember>().unwrap(),
                member
            );
        }
        assert_eq!(
            EnsembleConfig::parse("").unwrap(),
            EnsembleConfig::default()
        );
        for bad in [
            "server.x=h:1:2",
            "server.1=h:1",
            "server.1=h:1:2:leader",
            "server.1=h:1:2;nope",
            "server.1=:1:2",
        ] {
            assert!(
                matches!(
                    bad.parse::<EnsembleMember>(),
                    Err(crate::error::Error::InvalidArgument(_))
                ),
                "{bad}"
            );
        }
        assert!(EnsembleConfig::parse("version=zz").is_err());
    }

    #[test]
    fn chroots() {
        assert_eq!(chroot("a:1,b:2/app"), Some("/app"));
        assert_eq!(chroot("a:1,b:2/app/x"), Some("/app/x"));
        assert_eq!(chroot("tcp+tls://a:1/app"), Some("/app"));
        assert_eq!(chroot("a:1,b:2"), None);
        assert_eq!(chroot("a:1/"), None);
    }
}

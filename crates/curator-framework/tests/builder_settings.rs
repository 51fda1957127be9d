//! Builder settings that only show against a real server: ensemble providers, ACL providers and
//! the retry helper.

mod support;

use std::sync::Arc;
use std::time::Duration;

use curator_framework::acl::{Acl, FixedAclProvider, Perms};
use curator_framework::ensemble::FnEnsembleProvider;
use curator_framework::{ConnectionState, CreateMode, Error};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use parking_lot::Mutex;

#[tokio::test]
async fn a_new_session_asks_the_ensemble_provider_again() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    // The servers' address changes (here: from the proxy to the server itself) while the client
    // is cut off; the next session goes to the new address.
    let address = Arc::new(Mutex::new(proxy.connect_string()));
    let asked = Arc::clone(&address);
    let client = support::builder("unused:1")
        .ensemble_provider(FnEnsembleProvider::new(move || asked.lock().clone()))
        .session_timeout(Timing::new().scale(Duration::from_secs(3)))
        .connection_timeout(Timing::new().scale(Duration::from_millis(800)))
        .build()
        .unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[ConnectionState::Connected]).await;
    let first = client.session_id();

    proxy.pause();
    *address.lock() = server.connect_string();
    support::expect_states(
        &mut states,
        &[
            ConnectionState::Suspended,
            ConnectionState::Lost,
            ConnectionState::Reconnected,
        ],
    )
    .await;
    assert_ne!(client.session_id(), first);
    let new_session = client.session_id().unwrap();
    assert!(
        proxy.sessions().iter().all(|s| s.id != new_session),
        "the new session does not go through the proxy"
    );
    client.check_exists().for_path("/").await.unwrap();
}

#[tokio::test]
async fn the_acl_provider_chooses_acls_of_nodes_and_parents() {
    let server = TestingServer::start().await.unwrap();
    let read_all = vec![Acl::world_anyone(
        Perms::READ | Perms::CREATE | Perms::DELETE,
    )];
    let client = support::started(
        support::builder(&server.connect_string())
            .acl_provider(FixedAclProvider::new(read_all.clone())),
    )
    .await;
    let root = unique_root("acl-provider");
    let node = client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/a/b"), b"")
        .await
        .unwrap();
    assert_eq!(client.get_acl().for_path(&node).await.unwrap().0, read_all);
    assert_eq!(
        client
            .get_acl()
            .for_path(&format!("{root}/a"))
            .await
            .unwrap()
            .0,
        read_all
    );
    // No WRITE: the provider's ACL is in force.
    assert_eq!(
        client.set_data().for_path(&node, b"x").await,
        Err(Error::NoAuth)
    );
    // An explicit ACL wins over the provider.
    let open = client
        .create()
        .with_acl(Acl::open_unsafe())
        .for_path(&format!("{root}/open"), b"")
        .await
        .unwrap();
    client.set_data().for_path(&open, b"x").await.unwrap();
}

#[tokio::test]
async fn call_with_retry_waits_for_a_connection_and_retries_the_steps_together() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = support::started(
        support::builder(&server.connect_string()).connection_timeout(Duration::from_millis(300)),
    )
    .await;
    let root = support::create_root(&client, "call-with-retry").await;
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let steps = {
        let (client, root, attempts) = (client.clone(), root.clone(), Arc::clone(&attempts));
        move |attempt: u32| {
            let first_call = {
                let mut attempts = attempts.lock();
                attempts.push(attempt);
                attempts.len() == 1
            };
            let (client, root) = (client.clone(), root.clone());
            async move {
                let path = client
                    .create()
                    .with_mode(CreateMode::PersistentSequential)
                    .for_path(&format!("{root}/step-"), b"")
                    .await?;
                client.get_data().for_path(&path).await?;
                // The first time, pretend the connection broke after the steps.
                if first_call {
                    Err(Error::ConnectionLoss)
                } else {
                    Ok(path)
                }
            }
        }
    };

    let mut states = client.connection_state_stream();
    server.stop().unwrap();
    support::expect_states(&mut states, &[ConnectionState::Suspended]).await;
    let work = tokio::spawn({
        let client = client.clone();
        async move { client.call_with_retry(steps).await }
    });
    // While there is no connection the steps do not run; the wait itself goes to the policy.
    curator_test::eventually("a retry while disconnected", || async {
        client.metrics().retries > 0
    })
    .await;
    assert!(attempts.lock().is_empty());
    server.restart().await.unwrap();
    let path = work.await.unwrap().unwrap();
    assert!(path.starts_with(&format!("{root}/step-")));
    // Two runs of the steps, numbered as attempts of one loop (the waits for a connection were
    // attempts too).
    let recorded = attempts.lock().clone();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1], recorded[0] + 1);
    assert_eq!(
        client.get_children().for_path(&root).await.unwrap().0.len(),
        2
    );
}

/// A custom connector makes every connection (here: a named host that only it can resolve, to
/// a real server), also after the link is cut; a connector and TLS settings together are refused.
#[tokio::test]
async fn a_custom_connector_makes_every_connection() {
    use curator_framework::transport::{BoxTransport, Connector, ServerAddress};

    #[derive(Debug)]
    struct Named {
        target: String,
        made: std::sync::atomic::AtomicUsize,
    }

    impl Connector for Named {
        fn connect<'a>(
            &'a self,
            server: &'a ServerAddress,
        ) -> futures::future::BoxFuture<'a, std::io::Result<BoxTransport>> {
            Box::pin(async move {
                assert_eq!((server.host.as_str(), server.port), ("zk.sim", 2181));
                self.made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let stream = tokio::net::TcpStream::connect(self.target.as_str()).await?;
                Ok(Box::new(stream) as BoxTransport)
            })
        }
    }

    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let connector = Arc::new(Named {
        target: proxy.connect_string(),
        made: std::sync::atomic::AtomicUsize::new(0),
    });
    let client = support::builder("zk.sim:2181")
        .connector(Arc::clone(&connector) as Arc<dyn Connector>)
        .build()
        .unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    let path = unique_root("custom-connector");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"x")
        .await
        .unwrap();
    proxy.drop_connections();
    support::expect_states(
        &mut states,
        &[
            ConnectionState::Connected,
            ConnectionState::Suspended,
            ConnectionState::Reconnected,
        ],
    )
    .await;
    assert_eq!(client.get_data().for_path(&path).await.unwrap().0, b"x");
    assert!(connector.made.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    client.close().await.unwrap();

    let both = support::builder("zk.sim:2181")
        .connector(connector as Arc<dyn Connector>)
        .tls(curator_framework::security::TlsConfig::new())
        .build()
        .unwrap_err();
    assert!(
        both.to_string().contains("TLS settings or a connector"),
        "{both}"
    );
}

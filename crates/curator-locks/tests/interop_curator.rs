//! A Rust `InterProcessMutex` and Apache Curator's (Java, Debian's 5.4 jars) on one path exclude
//! each other both ways and see each other as participants, in plaintext and over TLS.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::RetryUntilElapsed;
use curator_framework::security::TlsConfig;
use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases,
};
use curator_test::{
    ClientAuth, CuratorProgram, FaultProxy, JavaPeer, JvmOptions, TestCertificates, TestingServer,
    Timing, unique_root,
};
use curator_testkit as testkit;

/// Runs a blocking exchange with the Java peer without stalling the runtime.
async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn java_peer(connect: &str, path: &str, kind: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MutexPeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect, path, kind]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_mutexes_exclude_each_other_both_ways() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-mutex");
    let mut java =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "mutex"));
    let rust = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();

    // Java holds: Rust cannot acquire, and sees Java's node first in line.
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert!(
        rust.acquire_timeout(Duration::from_millis(500))
            .await
            .unwrap()
            .is_none()
    );
    let waiting = tokio::spawn({
        let rust = rust.clone();
        async move { rust.acquire().await }
    });
    curator_test::eventually("the waiter queues", || async {
        rust.participant_nodes().await.unwrap().len() == 2
    })
    .await;
    let participants = rust.participant_nodes().await.unwrap();
    let java_sees = ask(&mut java, "participants").await;
    let java_nodes: Vec<&str> = java_sees
        .trim_start_matches("participants ")
        .split(',')
        .collect();
    assert_eq!(
        java_nodes,
        participants.iter().map(String::as_str).collect::<Vec<_>>(),
        "both list the same order"
    );

    // Java releases: the waiting Rust handle gets the lock.
    assert_eq!(ask(&mut java, "release").await, "released");
    let guard = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // Rust holds: Java cannot acquire.
    assert_eq!(ask(&mut java, "acquire 500").await, "timeout");
    let java_sees = ask(&mut java, "participants").await;
    assert!(java_sees.contains(guard.node_path()), "{java_sees}");
    guard.release().await.unwrap();
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_read_write_locks_share_and_exclude() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-rw");
    let mut java_writer =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "write"));
    let mut java_reader =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "read"));
    let rust =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();

    // A Java reader and a Rust reader hold together; then no writer, Java or Rust, gets in.
    assert_eq!(ask(&mut java_reader, "acquire 10000").await, "acquired");
    let rust_read = rust
        .read_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("readers share");
    assert_eq!(ask(&mut java_writer, "acquire 300").await, "timeout");
    assert!(
        rust.write_lock()
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    let java_sees = ask(&mut java_reader, "participants").await;
    assert!(java_sees.contains(rust_read.node_path()), "{java_sees}");
    rust_read.release().await.unwrap();
    assert_eq!(ask(&mut java_reader, "release").await, "released");

    // A Java writer excludes a Rust reader; a Rust writer excludes a Java reader.
    assert_eq!(ask(&mut java_writer, "acquire 10000").await, "acquired");
    assert!(
        rust.read_lock()
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(ask(&mut java_writer, "release").await, "released");
    let rust_write = rust
        .write_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("free");
    assert_eq!(ask(&mut java_reader, "acquire 300").await, "timeout");
    let java_sees = ask(&mut java_writer, "participants").await;
    assert!(java_sees.contains(rust_write.node_path()), "{java_sees}");
    rust_write.release().await.unwrap();
    assert_eq!(ask(&mut java_reader, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java_reader, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_semaphores_share_the_same_leases() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-semaphore");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/SemaphorePeer.java");
    let mut java = tokio::task::block_in_place(|| {
        let program = CuratorProgram::compile(&source).unwrap();
        let mut peer = program
            .start(&[&server.connect_string(), &path, "2"])
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    let rust = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(2),
    )
    .build()
    .unwrap();

    // One lease each: the two leases are out, so neither side gets a third.
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    let rust_lease = rust
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("a second lease");
    assert_eq!(ask(&mut java, "acquire 300").await, "timeout");
    assert!(
        rust.acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    let java_sees = ask(&mut java, "participants").await;
    // Java lists bare names; Rust lists full paths, like the mutex's participant_nodes().
    let nodes: Vec<String> = rust.participant_nodes().await.unwrap();
    assert_eq!(nodes.len(), 2);
    for node in &nodes {
        let name = curator_framework::paths::node_name(node);
        assert!(java_sees.contains(name), "{java_sees} lacks {name}");
    }
    assert!(java_sees.contains(curator_framework::paths::node_name(rust_lease.node_path())));

    // A lease returned on one side is taken on the other.
    rust_lease.release().await.unwrap();
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
    let again = rust.acquire_timeout(Timing::new().wait()).await.unwrap();
    assert!(again.is_some());
}

/// A started client connected over TLS with `tls`, with `testkit::client`'s settings.
async fn tls_client(connect: &str, tls: TlsConfig) -> CuratorFramework {
    let timing = Timing::new();
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .tls(tls)
        .session_timeout(timing.scale(Duration::from_secs(15)))
        .connection_timeout(timing.connection_timeout())
        .retry_policy(RetryUntilElapsed::new(
            timing.wait(),
            Duration::from_millis(100),
        ))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.block_until_connected(timing.wait()).await.unwrap();
    client
}

/// Rust's side of a turn, while it holds the lock: `holder` is created exclusively (it exists only
/// while someone holds the lock, so finding it means two holders at once), `rust` goes into the
/// log, and with `wait` the holder stays until another participant is queued (on children
/// watches); then `holder` is removed.
async fn rust_turn(client: &CuratorFramework, path: &str, holder: &Path, log: &Path, wait: bool) {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(holder)
    {
        Ok(mut file) => std::io::Write::write_all(&mut file, b"rust").unwrap(),
        Err(error) if error.kind() == ErrorKind::AlreadyExists => panic!(
            "Rust holds the lock while {:?} does",
            std::fs::read_to_string(holder).unwrap_or_default()
        ),
        Err(error) => panic!("creating {}: {error}", holder.display()),
    }
    let mut entry = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    std::io::Write::write_all(&mut entry, b"rust\n").unwrap();
    if wait {
        let deadline = Timing::new().wait();
        loop {
            let (children, _, watcher) = client
                .get_children()
                .watched()
                .for_path(path)
                .await
                .unwrap();
            if children.len() >= 2 {
                break;
            }
            tokio::time::timeout(deadline, watcher)
                .await
                .expect("Java queues behind Rust");
        }
    }
    std::fs::remove_file(holder).unwrap();
}

/// A Java Curator process and this process share one `InterProcessMutex` on a TLS server, both
/// presenting client certificates: each side holds the lock while the other queues behind it, so
/// they hand it to each other 2 × `TURNS` times, and a holder file that only a holder creates
/// (exclusively) and removes shows that they never hold it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_take_turns_on_one_mutex_over_tls() {
    const TURNS: usize = 50;
    let timing = Timing::new();
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    let secure = server.secure_connect_string().unwrap();
    let files = certs.write_to_temp_dir().unwrap();
    let java_identity = certs
        .client("java")
        .unwrap()
        .write_pem(files.dir(), "java")
        .unwrap();
    let rust_identity = certs.client("rust").unwrap();
    let path = unique_root("interop-tls-mutex");

    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MutexPeer.java");
    let jvm = JvmOptions::zookeeper_tls(files.ca()).with_key_store(&java_identity.key_store);
    let mut java = tokio::task::block_in_place(|| {
        let mut peer = CuratorProgram::compile(&source)
            .unwrap()
            .start_with(&[&secure, &path, "mutex"], &jvm)
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    let client = tls_client(
        &secure,
        TlsConfig::new()
            .ca_pem(certs.ca().cert_pem())
            .identity_pem(rust_identity.cert_pem(), rust_identity.key_pem()),
    )
    .await;

    // Both are on the TLS port, each known by its certificate (and by its address, `ip:...`).
    let java_sees = ask(&mut java, "whoami").await;
    let java_sees: Vec<&str> = java_sees.trim_start_matches("whoami ").split(',').collect();
    assert!(java_sees.contains(&"x509:CN=java"), "{java_sees:?}");
    let rust_sees: Vec<String> = client
        .who_am_i()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        rust_sees.contains(&"x509:CN=rust".to_owned()),
        "{rust_sees:?}"
    );

    // Rust takes the first turn, so the order is known: Rust, Java, Rust, ..., Java. Every
    // holder but the very last waits for the other to queue behind it.
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let first = mutex
        .acquire_timeout(timing.wait())
        .await
        .unwrap()
        .expect("the lock is free");
    let work = tempfile::tempdir().unwrap();
    let (holder, log): (PathBuf, PathBuf) = (work.path().join("holder"), work.path().join("log"));
    let wait_ms = timing.wait().as_millis().to_string();
    tokio::task::block_in_place(|| {
        java.send(&format!(
            "take_turns {TURNS} {} {} {wait_ms} no",
            holder.display(),
            log.display()
        ))
    })
    .unwrap();
    let rust_turns = tokio::spawn({
        let (client, path, holder, log) =
            (client.clone(), path.clone(), holder.clone(), log.clone());
        async move {
            let mut guard = Some(first);
            for _ in 0..TURNS {
                let held = match guard.take() {
                    Some(first) => first,
                    None => mutex
                        .acquire_timeout(Timing::new().wait())
                        .await
                        .unwrap()
                        .expect("Java hands the lock back"),
                };
                rust_turn(&client, &path, &holder, &log, true).await;
                held.release().await.unwrap();
            }
        }
    });
    let java_done = tokio::task::block_in_place(|| java.read_line()).unwrap();
    assert_eq!(java_done, format!("took {TURNS}"));
    tokio::time::timeout(timing.wait(), rust_turns)
        .await
        .expect("Rust's turns end with Java's")
        .unwrap();

    // The log is the order the lock went round: strictly alternating, every turn taken.
    let order = std::fs::read_to_string(&log).unwrap();
    let expected: Vec<&str> = (0..2 * TURNS)
        .map(|i| if i % 2 == 0 { "rust" } else { "java" })
        .collect();
    assert_eq!(order.lines().collect::<Vec<_>>(), expected);
    assert!(!holder.exists(), "the last holder removed its file");
    assert!(testkit::children(&client, &path).await.is_empty());
}

/// A Java Curator waiter queuing behind a Rust holder makes the holder's `contended()` resolve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_waiter_contends_a_rust_hold() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-contended");
    let java = tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "mutex"));
    let client = testkit::client(&server.connect_string()).await;
    let rust = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let guard = rust.acquire().await.unwrap();
    let java_acquires = tokio::task::spawn_blocking(move || {
        let mut java = java;
        let answer = java.ask("acquire 30000").unwrap();
        (java, answer)
    });
    tokio::time::timeout(Timing::new().wait(), guard.contended())
        .await
        .expect("the Java waiter contends")
        .unwrap();
    guard.release().await.unwrap();
    let (mut java, answer) = tokio::time::timeout(Timing::new().wait(), java_acquires)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
    client.close().await.unwrap();
}

/// A hold's sequencer (exported by a holder in a namespace) checked by Rust and by a Java
/// program that knows only the text form: valid while held, stale once the lock was released
/// and taken by another holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequencer_is_refused_after_a_hand_over_in_rust_and_java() {
    let server = TestingServer::start().await.unwrap();
    let namespace = unique_root("interop-sequencer")
        .trim_start_matches('/')
        .replace('/', "-");
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/SequencerCheck.java"),
    )
    .unwrap();
    let mut java = tokio::task::block_in_place(|| {
        let mut peer = program.start(&[&server.connect_string()]).unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    let checker = testkit::client(&server.connect_string()).await;
    let holder_client = testkit::client(&server.connect_string())
        .await
        .using_namespace(&namespace)
        .unwrap();
    let other_client = testkit::client(&server.connect_string()).await;
    let first = InterProcessMutex::builder(holder_client.clone(), "/lock")
        .build()
        .unwrap();
    let guard = first.acquire().await.unwrap();
    let sequencer = guard.sequencer().expect("a hold on a session");
    assert!(sequencer.path().starts_with(&format!("/{namespace}/lock/")));
    assert_eq!(sequencer.fencing_token(), guard.fencing_token());
    let text = sequencer.to_string();
    let parsed: curator_framework::recipe::Sequencer = text.parse().unwrap();
    assert_eq!(parsed, sequencer);
    assert!(parsed.check(&checker).await.unwrap());
    assert_eq!(ask(&mut java, &text).await, "valid");

    // Handed over: released, and another client holds it now (a new node, a new token).
    guard.release().await.unwrap();
    let second = InterProcessMutex::builder(other_client.clone(), &format!("/{namespace}/lock"))
        .build()
        .unwrap();
    let other_guard = second.acquire().await.unwrap();
    assert!(!parsed.check(&checker).await.unwrap());
    assert_eq!(ask(&mut java, &text).await, "stale");
    let current = other_guard.sequencer().unwrap().to_string();
    assert_eq!(ask(&mut java, &current).await, "valid");
    other_guard.release().await.unwrap();
    for client in [checker, holder_client, other_client] {
        client.close().await.unwrap();
    }
}

/// Lock-delay with Java Curator on the same mutex: the record in the lock's directory does not
/// disturb Java; Java's holds leave no line, so a Rust contender with a lock-delay acquires at
/// once after Java releases; Java does not honour a failed Rust holder's delay (it acquires at
/// once), while Rust contenders with a lock-delay still do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_delay_is_kept_by_rust_contenders_and_ignored_by_java_ones() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let never = Duration::from_secs(3600);
    let path = unique_root("interop-lock-delay");
    let mut java =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "mutex"));
    let client = testkit::client(&server.connect_string()).await;
    let rust = InterProcessMutex::builder(client.clone(), &path)
        .lock_delay(never)
        .build()
        .unwrap();

    // A Rust holder with a lock-delay releases: the Java waiter acquires.
    let guard = rust.acquire().await.unwrap();
    assert_eq!(ask(&mut java, "acquire 300").await, "timeout");
    let releasing = tokio::spawn({
        let rust = rust.clone();
        async move {
            curator_test::eventually("Java queues", || async {
                rust.participant_nodes().await.unwrap().len() == 2
            })
            .await;
            guard.release().await.unwrap();
        }
    });
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    releasing.await.unwrap();

    // Java holds and releases: the Rust waiter acquires at once (Java left no line).
    let waiting = tokio::spawn({
        let rust = rust.clone();
        async move { rust.acquire().await }
    });
    curator_test::eventually("Rust queues", || async {
        rust.participant_nodes().await.unwrap().len() == 2
    })
    .await;
    assert_eq!(ask(&mut java, "release").await, "released");
    let guard = tokio::time::timeout(wait, waiting)
        .await
        .expect("Java's release hands over at once")
        .unwrap()
        .unwrap();
    guard.release().await.unwrap();

    // A Rust holder with a lock-delay fails: Java acquires at once; Rust contenders wait.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let doomed_client = testkit::client(&proxy.connect_string()).await;
    let doomed = InterProcessMutex::builder(doomed_client.clone(), &path)
        .lock_delay(never)
        .build()
        .unwrap();
    let lost = doomed.acquire().await.unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
    assert!(rust.try_acquire().await.unwrap().is_none());
    let (data, _) = client.get_data().for_path(&path).await.unwrap();
    let record = curator_locks::LockDelayRecord::parse(&data)
        .unwrap()
        .unwrap();
    assert!(
        matches!(record.entries(), [curator_locks::LockDelayEntry::Failed { node, .. }]
            if lost.node_path().ends_with(node.as_str())),
        "{record:?}"
    );
    drop(lost);
    proxy.resume();
    doomed_client.close().await.unwrap();
    client.close().await.unwrap();
}

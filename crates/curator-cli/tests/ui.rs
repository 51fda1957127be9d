//! `curator ui PATH`: the JSON tree and the metrics over plain HTTP, and the page itself in
//! headless Chromium (driven through chromedriver) following a lock, a leader and a queue,
//! turning stale when ZooKeeper goes away, and showing leases, gates, guesses and nodes it may
//! not read; and how many requests a page costs the server.
//!
//! The browser test uses `fantoccini`, a WebDriver client on tokio and hyper (the stack the
//! binary already uses), kept up to date with the W3C WebDriver protocol; it talks to Debian's
//! `chromedriver`, so the page is checked in a real browser engine rather than a DOM imitation.
//! `scripts/setup.sh` (`just setup`) installs `chromium` and `chromium-driver`.

mod support;

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use curator_election::LeaderLatch;
use curator_framework::acl::Acl;
use curator_framework::{CreateMode, CuratorFramework};
use curator_locks::{FencingGate, InterProcessMutex};
use curator_queues::SimpleDistributedQueue;
use curator_test::{TestingServer, Timing, eventually, four_letter_word, unique_root};
use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use support::{Running, curator, run, text};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn client(connect: &str, name: &str) -> CuratorFramework {
    curator_testkit::started(
        curator_testkit::builder(connect, Duration::from_secs(10)).identity(name),
    )
    .await
}

/// `curator ui PATH` started; returns it and the URL it printed first.
fn start_ui(connect: &str, path: &str) -> (Running, String) {
    let mut ui = Running::spawn(curator(connect, &["ui", path]));
    let url = ui.wait_stdout(|line| !line.is_empty());
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
        "first line is not the URL: {url}"
    );
    (ui, url)
}

/// A plain HTTP/1.1 GET: (status, headers in lower case, body).
async fn get(url: &str, path: &str) -> (u16, String, String) {
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_owned())
}

/// The node at `path` in a `/api/tree` snapshot.
fn find<'a>(node: &'a Value, path: &str) -> Option<&'a Value> {
    if node["path"] == path {
        return Some(node);
    }
    node["nodes"]
        .as_array()?
        .iter()
        .find_map(|child| find(child, path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_serves_the_tree_events_and_metrics_read_only_and_stops_on_a_signal() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui");
    let holder = client(&connect, "holder-a").await;
    let lock = format!("{root}/locks/orders");
    let guard = InterProcessMutex::builder(holder.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    holder
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/config/plain"), b"x")
        .await
        .unwrap();
    let (mut ui, url) = start_ui(&connect, &root);

    let (status, head, body) = get(&url, "/api/tree").await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    let snapshot: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(snapshot["root"], root.as_str());
    let tree = &snapshot["tree"];
    let mutex = find(tree, &lock).unwrap_or_else(|| panic!("no {lock} in {snapshot:#}"));
    assert_eq!(mutex["kind"], "mutex");
    let holders = mutex["recipe"]["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 1, "{mutex:#}");
    assert!(
        holders[0]["who"]
            .as_str()
            .unwrap()
            .starts_with("holder-a on "),
        "{mutex:#}"
    );
    assert_eq!(
        holders[0]["session"],
        format!("0x{:x}", holder.session_id().unwrap())
    );
    let plain = find(tree, &format!("{root}/config/plain")).unwrap();
    assert_eq!(
        (plain["kind"].as_str(), plain["data_len"].as_u64()),
        (Some("generic"), Some(1))
    );

    // The release shows in the next snapshot.
    guard.release().await.unwrap();
    eventually("the holder is gone from /api/tree", || async {
        let (_, _, body) = get(&url, "/api/tree").await;
        let snapshot: Value = serde_json::from_str(&body).unwrap();
        // Gone from the tree counts too: the lock's node is a container, which the server
        // removes once its last lock node is deleted.
        find(&snapshot["tree"], &lock).is_none_or(|node| {
            node["recipe"].is_null() || node["recipe"]["holders"].as_array().unwrap().is_empty()
        })
    })
    .await;

    let (status, head, metrics) = get(&url, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let families: Vec<(&str, &str)> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|rest| rest.split_once(' ').unwrap())
        .collect();
    assert!(
        families
            .iter()
            .any(|(name, kind)| *name == "curator_operation_duration_seconds"
                && *kind == "histogram"),
        "{metrics}"
    );
    for (name, kind) in &families {
        assert!(
            ["counter", "gauge", "histogram", "summary", "untyped"].contains(kind),
            "{name} {kind}"
        );
    }
    // Every sample line is `name[{labels}] value`, its family declared.
    for line in metrics
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        let name = series.split('{').next().unwrap();
        assert!(
            families.iter().any(|(family, _)| name.starts_with(family)),
            "{line}"
        );
    }

    // Read-only: nothing takes a write.
    let address = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(address).await.unwrap();
    let post = format!(
        "POST /api/tree HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(post.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");

    // Another site's name for 127.0.0.1 (DNS rebinding) is refused.
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"GET /api/tree HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 421"), "{response}");

    // The event stream: the snapshot at once, as a `tree` event.
    let mut events = TcpStream::connect(address).await.unwrap();
    // HTTP/1.0: the body comes as it is, not in chunks.
    let request = format!("GET /events HTTP/1.0\r\nHost: {address}\r\n\r\n");
    events.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 4096];
    let first = tokio::time::timeout(Timing::new().wait(), async {
        loop {
            let n = events.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the event stream ended early");
            seen.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some(start) = text.find("event: tree\ndata: ") {
                let rest = &text[start + "event: tree\ndata: ".len()..];
                if let Some((data, _)) = rest.split_once('\n') {
                    return data.to_owned();
                }
            }
        }
    })
    .await
    .expect("a tree event");
    let head = String::from_utf8_lossy(&seen).to_lowercase();
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let event: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(event["root"], root.as_str());

    // A signal ends the server, the open event stream included.
    ui.signal(Signal::SIGTERM);
    assert_eq!(ui.wait_exit().code(), Some(0));
    let mut rest = Vec::new();
    tokio::time::timeout(Timing::new().wait(), events.read_to_end(&mut rest))
        .await
        .expect("the event stream ends with the server")
        .unwrap();
}

#[test]
fn ui_refuses_an_address_other_than_loopback_without_allow_remote() {
    // Refused before any connection is tried (nothing listens at this connect string).
    let out = run(curator(
        "127.0.0.1:1",
        &["ui", "/", "--listen", "0.0.0.0:0"],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--allow-remote"),
        "{}",
        text(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// The page in Chromium.

/// A program on PATH (or in /usr/bin), or a failure that says how to get it.
fn program(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|path| path.is_file());
    found.unwrap_or_else(|| {
        panic!(
            "`{name}` is missing: the browser test of `curator ui` needs Debian's chromium and \
             chromium-driver; run `just setup` (scripts/setup.sh installs them)"
        )
    })
}

/// chromedriver on a free loopback port, killed on drop.
struct ChromeDriver {
    child: Child,
    url: String,
}

impl ChromeDriver {
    async fn start() -> Self {
        let driver = program("chromedriver");
        program("chromium");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let driver = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        eventually("chromedriver listens", || async {
            TcpStream::connect(("127.0.0.1", port)).await.is_ok()
        })
        .await;
        driver
    }

    async fn browser(&self) -> Client {
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": program("chromium"),
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--window-size=1100,900",
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session through chromedriver")
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The texts of the elements with `data-role="ROLE"` under the node `path` on the page; `None`
/// while the page has no such node.
async fn texts(browser: &Client, path: &str, role: &str) -> Option<Vec<String>> {
    let found = browser
        .execute(
            "const node = document.querySelector('[data-path=\"' + CSS.escape(arguments[0]) + '\"]');
             if (!node) return null;
             return [...node.querySelectorAll('[data-role=\"' + arguments[1] + '\"]')]
                 .map((e) => e.textContent);",
            vec![json!(path), json!(role)],
        )
        .await
        .expect("running a script in the page");
    serde_json::from_value(found).ok()
}

/// Polls the page until `condition` holds for `texts(path, role)`, within the test deadline;
/// fails with what the page showed last.
async fn until(
    browser: &Client,
    what: &str,
    path: &str,
    role: &str,
    condition: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + Timing::new().wait();
    let mut last = None;
    loop {
        let shown = texts(browser, path, role).await;
        if let Some(shown) = &shown {
            if condition(shown) {
                return shown.clone();
            }
        }
        last = shown.or(last);
        assert!(
            Instant::now() < deadline,
            "the page never showed {what}; {role} under {path} last: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn screenshot_path() -> PathBuf {
    // <target>/debug/curator → <target>/ui-test/dashboard.png
    let binary = Path::new(env!("CARGO_BIN_EXE_curator"));
    let target = binary.parent().and_then(Path::parent).unwrap();
    target.join("ui-test").join("dashboard.png")
}

async fn wait<F: Future<Output = bool>>(what: &str, condition: impl FnMut() -> F) {
    eventually(what, condition).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_chromium_follows_a_lock_a_leader_and_a_queue() {
    let driver = ChromeDriver::start().await;
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui-page");
    let (a, b) = (
        client(&connect, "worker-a").await,
        client(&connect, "worker-b").await,
    );
    a.create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/config/timeout"), b"30s")
        .await
        .unwrap();
    let (mut ui, url) = start_ui(&connect, &root);
    let browser = driver.browser().await;
    browser.goto(&url).await.unwrap();
    browser
        .wait()
        .at_most(Timing::new().wait())
        .for_element(Locator::Css(&format!(
            "[data-path=\"{root}/config/timeout\"]"
        )))
        .await
        .expect("the page shows the tree");

    // A lock: held by a, b waits; a releases, b holds; b releases.
    let lock = format!("{root}/locks/orders");
    let guard = InterProcessMutex::builder(a.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let holders = until(&browser, "a's hold", &lock, "holder", |h| h.len() == 1).await;
    assert!(holders[0].starts_with("worker-a on "), "{holders:?}");
    let kind = texts_of_kind(&browser, &lock).await;
    assert_eq!(kind.as_deref(), Some("mutex"));
    let waiting = InterProcessMutex::builder(b.clone(), &lock)
        .build()
        .unwrap();
    let (held_tx, held_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let b_task = tokio::spawn(async move {
        let guard = waiting.acquire().await.unwrap();
        let _ = held_tx.send(());
        let _ = release_rx.await;
        guard.release().await.unwrap();
    });
    let waiters = until(&browser, "b waiting", &lock, "waiter", |w| w.len() == 1).await;
    assert!(waiters[0].starts_with("worker-b on "), "{waiters:?}");
    guard.release().await.unwrap();
    held_rx.await.unwrap();
    until(&browser, "b's hold", &lock, "holder", |h| {
        h.len() == 1 && h[0].starts_with("worker-b on ")
    })
    .await;
    until(&browser, "no waiter", &lock, "waiter", <[String]>::is_empty).await;
    release_tx.send(()).unwrap();
    b_task.await.unwrap();
    // Free: no holder shown, or the lock's node gone (a container the server removes once
    // its last lock node is deleted).
    wait("the lock free", || async {
        texts(&browser, &lock, "holder")
            .await
            .is_none_or(|holders| holders.is_empty())
    })
    .await;

    // A leader: two latch participants; the leader closes, the other leads.
    let election = format!("{root}/election");
    let one = LeaderLatch::builder(a.clone(), &election, "reporter-1")
        .build()
        .unwrap();
    let two = LeaderLatch::builder(b.clone(), &election, "reporter-2")
        .build()
        .unwrap();
    one.start().await.unwrap();
    one.await_leadership().await.unwrap();
    two.start().await.unwrap();
    let leader = until(&browser, "a leader", &election, "leader", |l| l.len() == 1).await;
    assert!(leader[0].starts_with("reporter-1"), "{leader:?}");
    until(&browser, "the second in line", &election, "waiter", |w| {
        w.len() == 1 && w[0].starts_with("reporter-2")
    })
    .await;
    one.close().await.unwrap();
    until(&browser, "the next leader", &election, "leader", |l| {
        l.len() == 1 && l[0].starts_with("reporter-2")
    })
    .await;
    wait("the second participant leads", || async {
        two.has_leadership()
    })
    .await;

    // A queue fills.
    let jobs = format!("{root}/jobs");
    let queue = SimpleDistributedQueue::builder(a.clone(), &jobs)
        .build()
        .unwrap();
    for item in [b"one".as_slice(), b"two", b"three"] {
        queue.offer(item).await.unwrap();
    }
    until(&browser, "a depth of 3", &jobs, "depth", |d| d == ["3"]).await;
    // A plain node appears beside them.
    a.create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/config/owner"), b"worker-a on host-1")
        .await
        .unwrap();
    browser
        .wait()
        .at_most(Timing::new().wait())
        .for_element(Locator::Css(&format!(
            "[data-path=\"{root}/config/owner\"]"
        )))
        .await
        .expect("a new znode on the page");

    // For the screenshot: a lock held, with a waiter.
    let guard = InterProcessMutex::builder(a.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiting = InterProcessMutex::builder(b.clone(), &lock)
        .build()
        .unwrap();
    let b_task = tokio::spawn(async move {
        let guard = waiting.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    until(&browser, "a waiter", &lock, "waiter", |w| w.len() == 1).await;
    until(&browser, "a holder", &lock, "holder", |h| h.len() == 1).await;

    let shot = browser.screenshot().await.unwrap();
    let path = screenshot_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, shot).unwrap();
    eprintln!("screenshot: {}", path.display());

    b_task.abort();
    guard.release().await.unwrap();
    browser.close().await.unwrap();
    two.close().await.unwrap();
    ui.signal(Signal::SIGINT);
    assert_eq!(ui.wait_exit().code(), Some(0));
    drop(driver);
}

/// The `data-kind` of the recipe annotation of the node at `path`.
async fn texts_of_kind(browser: &Client, path: &str) -> Option<String> {
    let kind = browser
        .execute(
            "const node = document.querySelector('[data-path=\"' + CSS.escape(arguments[0]) + '\"] [data-kind]');
             return node ? node.dataset.kind : null;",
            vec![json!(path)],
        )
        .await
        .unwrap();
    kind.as_str().map(str::to_owned)
}

/// The page's tree goes on through a server restart: a node made after it shows up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_follows_the_tree_through_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui-restart");
    let writer = client(&connect, "writer").await;
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/before"), b"x")
        .await
        .unwrap();
    let (mut ui, url) = start_ui(&connect, &root);
    let shows = |path: String| {
        let url = url.clone();
        async move {
            let (_, _, body) = get(&url, "/api/tree").await;
            serde_json::from_str::<Value>(&body)
                .is_ok_and(|snapshot| find(&snapshot["tree"], &path).is_some())
        }
    };
    eventually("the first node shows", || shows(format!("{root}/before"))).await;

    server.restart().await.unwrap();
    writer
        .create()
        .for_path(&format!("{root}/after"), b"y")
        .await
        .unwrap();
    eventually("a node made after the restart shows", || {
        shows(format!("{root}/after"))
    })
    .await;
    ui.signal(Signal::SIGTERM);
    assert_eq!(ui.wait_exit().code(), Some(0));
    writer.close().await.unwrap();
}

/// The snapshot `/api/tree` serves now.
async fn snapshot(url: &str) -> Value {
    let (status, _, body) = get(url, "/api/tree").await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Runs `script` (its value returned) in the page.
async fn page_value(browser: &Client, script: &str) -> Value {
    browser
        .execute(script, vec![])
        .await
        .expect("running a script in the page")
}

/// When ZooKeeper goes away, `/api/tree` and the page say so at once, whatever a read of the
/// tree is doing (a writer keeps reads going), and the holder and leader last seen are shown as
/// possibly gone; once it is back, the page is live again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_turns_stale_at_once_when_zookeeper_goes_away() {
    let driver = ChromeDriver::start().await;
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui-stale");
    let holder = client(&connect, "holder-a").await;
    let lock = format!("{root}/locks/orders");
    let guard = InterProcessMutex::builder(holder.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let election = format!("{root}/election");
    let latch = LeaderLatch::builder(holder.clone(), &election, "reporter-1")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    latch.await_leadership().await.unwrap();
    let tick = format!("{root}/config/tick");
    holder
        .create()
        .creating_parents_if_needed()
        .for_path(&tick, b"0")
        .await
        .unwrap();
    let (mut ui, url) = start_ui(&connect, &root);
    let browser = driver.browser().await;
    browser.goto(&url).await.unwrap();
    until(&browser, "the holder", &lock, "holder", |h| h.len() == 1).await;
    until(&browser, "the leader", &election, "leader", |l| {
        l.len() == 1
    })
    .await;

    // A change every 20 ms: reads of the tree are under way when the server goes.
    let writer = {
        let holder = holder.clone();
        tokio::spawn(async move {
            for n in 0_u64.. {
                let _ = holder.set_data().for_path(&tick, n.to_string()).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop().unwrap();
    let stopped = Instant::now();
    // Well within this: the state is published as the client hears it (at once, for a killed
    // server), not after a read gives up.
    let bound = Timing::new().scale(Duration::from_secs(5));
    let stale = loop {
        let snapshot = snapshot(&url).await;
        if snapshot["stale"] == true {
            break snapshot;
        }
        assert!(
            stopped.elapsed() < bound,
            "/api/tree still says {} {:?} after the server stopped",
            snapshot["connection"],
            stopped.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        ["suspended", "lost"].contains(&stale["connection"].as_str().unwrap()),
        "{stale}"
    );
    // The page too: not live, a banner, and what it last read is still there, marked.
    loop {
        let shown = page_value(
            &browser,
            "return [document.body.dataset.stale, document.getElementById('status').dataset.state,
                     getComputedStyle(document.getElementById('stale')).display,
                     document.getElementById('stale').textContent];",
        )
        .await;
        if shown[0] == "true" && shown[1] == "stale" && shown[2] == "block" {
            let banner = shown[3].as_str().unwrap();
            assert!(
                banner.contains("ZooKeeper connection suspended")
                    || banner.contains("ZooKeeper session lost"),
                "{banner}"
            );
            assert!(banner.contains("may no longer be true"), "{banner}");
            break;
        }
        assert!(
            stopped.elapsed() < bound,
            "the page still looks live {:?} after the server stopped: {shown}",
            stopped.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let holders = texts(&browser, &lock, "holder").await.unwrap();
    assert_eq!(holders.len(), 1, "{holders:?}");
    let marked = page_value(
        &browser,
        "const who = document.querySelector('[data-role=\"holder\"] .who');
         return getComputedStyle(who, '::after').content;",
    )
    .await;
    assert!(marked.as_str().unwrap().contains("may be gone"), "{marked}");

    writer.abort();
    server.restart().await.unwrap();
    wait("the page is live again", || async {
        page_value(&browser, "return document.body.dataset.stale;").await == "false"
    })
    .await;
    assert_eq!(snapshot(&url).await["stale"], false);

    browser.close().await.unwrap();
    ui.signal(Signal::SIGTERM);
    assert_eq!(ui.wait_exit().code(), Some(0));
    let _ = latch.close().await;
    let _ = guard.release().await;
    holder.close().await.unwrap();
    drop(driver);
}

/// A node in a `/api/tree` snapshot, or a failure that shows the snapshot.
fn node<'a>(snapshot: &'a Value, path: &str) -> &'a Value {
    find(&snapshot["tree"], path).unwrap_or_else(|| panic!("no {path} in {snapshot:#}"))
}

/// Our own lease and gate nodes are recognized; a child named `leases` does not make its parent
/// a semaphore (which would hide the tree under it); text is no counter; a guess says so, with
/// the data beside it, and the tree goes on under it; a node this session may not read is
/// marked and the rest shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_leases_gates_guesses_and_what_it_may_not_read() {
    let driver = ChromeDriver::start().await;
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui-kinds");
    let daily = format!("{root}/leases/daily");
    let out = run(curator(
        &connect,
        &[
            "lease",
            &daily,
            "--for",
            "10m",
            "--id",
            "cron@host-1",
            "--",
            "true",
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let a = client(&connect, "maker").await;
    let enabled = format!("{root}/flags/enabled");
    a.create()
        .creating_parents_if_needed()
        .for_path(&enabled, b"true")
        .await
        .unwrap();
    let count = format!("{root}/count");
    a.create().for_path(&count, [0_u8, 0, 0, 7]).await.unwrap();
    // A guess from the children's stat (a group: ephemeral childless children): the children
    // are shown too.
    let worker = format!("{root}/workers/w1");
    a.create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&worker, b"up")
        .await
        .unwrap();
    let guard = InterProcessMutex::builder(a.clone(), &format!("{root}/locks/report"))
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let token = guard.fencing_token();
    let gate = format!("{root}/gates/db");
    assert!(
        FencingGate::new(a.clone(), &gate)
            .unwrap()
            .admit(token)
            .await
            .unwrap()
            .is_admitted()
    );
    guard.release().await.unwrap();
    let alice = curator_testkit::started(
        curator_testkit::builder(&connect, Duration::from_secs(10))
            .identity("alice")
            .authorization("digest", b"alice:secret".to_vec()),
    )
    .await;
    let secret = format!("{root}/secret");
    alice
        .create()
        .with_acl(Acl::creator_all())
        .for_path(&secret, b"hidden")
        .await
        .unwrap();
    alice
        .create()
        .for_path(&format!("{secret}/inner"), b"")
        .await
        .unwrap();

    let (mut ui, url) = start_ui(&connect, &root);
    let snapshot = snapshot(&url).await;
    assert_eq!(node(&snapshot, &root)["kind"], "generic", "{snapshot:#}");
    assert_eq!(
        node(&snapshot, &format!("{root}/leases"))["kind"],
        "generic"
    );
    let lease = node(&snapshot, &daily);
    assert_eq!(
        (lease["kind"].as_str(), lease["guess"].as_bool()),
        (Some("lease"), Some(false))
    );
    let recipe = &lease["recipe"];
    assert_eq!(recipe["made_by"], "cron@host-1", "{lease:#}");
    assert_eq!(recipe["holders"][0]["who"], "cron@host-1", "{lease:#}");
    assert!(recipe["until_ms"].as_i64().unwrap() > 0 && recipe["token"].as_i64().is_some());
    let flag = node(&snapshot, &enabled);
    assert_eq!(
        (flag["kind"].as_str(), flag["data"].as_str()),
        (Some("generic"), Some("\"true\""))
    );
    let counter = node(&snapshot, &count);
    assert_eq!(
        (
            counter["kind"].as_str(),
            counter["guess"].as_bool(),
            counter["label"].as_str(),
            counter["data"].as_str()
        ),
        (
            Some("shared_count"),
            Some(true),
            Some("shared count (a guess)"),
            Some("0x00000007 (4 bytes)")
        )
    );
    let group = node(&snapshot, &format!("{root}/workers"));
    assert_eq!(
        (group["kind"].as_str(), group["guess"].as_bool()),
        (Some("group_member"), Some(true))
    );
    assert_eq!(group["recipe"]["members"][0]["who"], "up");
    assert_eq!(node(&snapshot, &worker)["data"], "\"up\"");
    let fenced = node(&snapshot, &gate);
    assert_eq!(
        (
            fenced["kind"].as_str(),
            fenced["guess"].as_bool(),
            fenced["recipe"]["token"].as_i64()
        ),
        (Some("fencing_gate"), Some(true), Some(token))
    );
    let hidden = node(&snapshot, &secret);
    // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission too, so such servers give
    // not even the stat of a node this session may not read; older ones do.
    let stat_refused = server
        .server_version()
        .await
        .unwrap()
        .exists_checks_read_permission();
    assert_eq!(
        (
            hidden["no_read_permission"].as_bool(),
            hidden["stat_unknown"].as_bool(),
            hidden["children"].as_u64(),
            hidden["label"].as_str()
        ),
        (
            Some(true),
            Some(stat_refused),
            Some(if stat_refused { 0 } else { 1 }),
            Some("no read permission")
        )
    );
    assert!(hidden["nodes"].as_array().unwrap().is_empty());

    let browser = driver.browser().await;
    browser.goto(&url).await.unwrap();
    let kind = until(&browser, "the lease", &daily, "kind", |k| k.len() == 1).await;
    assert_eq!(kind, ["lease"]);
    let holder = until(&browser, "the lease's holder", &daily, "holder", |h| {
        h.len() == 1
    })
    .await;
    assert!(holder[0].starts_with("cron@host-1"), "{holder:?}");
    until(&browser, "the lease's end", &daily, "until", |u| {
        u.len() == 1
    })
    .await;
    let kind = until(&browser, "the guess", &count, "kind", |k| !k.is_empty()).await;
    assert_eq!(kind[0], "shared count (a guess)");
    let data = until(&browser, "the guess's data", &count, "data", |d| {
        !d.is_empty()
    })
    .await;
    assert_eq!(data[0], "0x00000007 (4 bytes)");
    until(&browser, "the group guess's member", &worker, "data", |d| {
        d == ["\"up\""]
    })
    .await;
    until(&browser, "the flag's text", &enabled, "data", |d| {
        d == ["\"true\""]
    })
    .await;
    until(&browser, "the gate's token", &gate, "token", |t| {
        t == [token.to_string()]
    })
    .await;
    until(&browser, "the unreadable node", &secret, "kind", |k| {
        k == ["no read permission"]
    })
    .await;

    browser.close().await.unwrap();
    ui.signal(Signal::SIGTERM);
    assert_eq!(ui.wait_exit().code(), Some(0));
    alice
        .delete()
        .deleting_children_if_needed()
        .for_path(&secret)
        .await
        .unwrap();
    drop(driver);
}

/// The server's count of packets received (`mntr`).
async fn packets_received(server: &TestingServer) -> u64 {
    let answer = four_letter_word(&server.connect_string(), "mntr", Timing::new().wait())
        .await
        .unwrap();
    answer
        .lines()
        .find_map(|line| line.strip_prefix("zk_packets_received"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no zk_packets_received in {answer}"))
}

/// One writer setting a node every 100 ms under 1,000 nodes: the page's server reads again only
/// the nodes that changed, at a bounded rate, not the whole tree per change (which cost the
/// server thousands of requests a second), and still shows every change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_reads_again_only_what_changed() {
    // Dedicated: the server's request count is the ui's and this test's alone.
    let server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-ui-cost");
    let writer = client(&connect, "writer").await;
    for dir in 0..10 {
        writer
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/d{dir}"), b"")
            .await
            .unwrap();
        let creates = (0..100).map(|n| {
            let path = format!("{root}/d{dir}/n{n:03}");
            let writer = writer.clone();
            async move { writer.create().for_path(&path, b"v").await.unwrap() }
        });
        futures::future::join_all(creates).await;
    }
    let (mut ui, url) = start_ui(&connect, &root);
    assert_eq!(snapshot(&url).await["nodes"], 1011);
    // The first snapshot was read before the URL was printed; later reads follow changes.
    let before = packets_received(&server).await;

    const WRITES: u64 = 40;
    let mut last = String::new();
    for n in 0..WRITES {
        let dir = n % 10;
        let node = (n * 37) % 100;
        last = format!("{root}/d{dir}/n{node:03}");
        let data = "x".repeat(usize::try_from(n).unwrap() + 2);
        writer.set_data().for_path(&last, data).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A node made and one deleted show too.
    writer
        .create()
        .for_path(&format!("{root}/d3/new"), b"")
        .await
        .unwrap();
    writer
        .delete()
        .for_path(&format!("{root}/d4/n000"))
        .await
        .unwrap();
    let expected = usize::try_from(WRITES + 1).unwrap();
    let (d3, d4) = (format!("{root}/d3/new"), format!("{root}/d4/n000"));
    eventually("the last changes show", || async {
        let snapshot = snapshot(&url).await;
        find(&snapshot["tree"], &last).is_some_and(|node| node["data_len"] == expected)
            && find(&snapshot["tree"], &d3).is_some()
            && find(&snapshot["tree"], &d4).is_none()
    })
    .await;
    let spent = packets_received(&server).await - before;
    // This test's own requests (the writes, pings), and the ui's: a few per change. Reading
    // the whole tree again costs over 5,000 requests each time.
    let bound = 20 * (WRITES + 2) + 100;
    assert!(
        spent < bound,
        "{spent} requests reached the server for {WRITES} changes (bound {bound})"
    );
    eprintln!("{spent} requests for {WRITES} changes");
    ui.signal(Signal::SIGTERM);
    assert_eq!(ui.wait_exit().code(), Some(0));
    writer.close().await.unwrap();
}

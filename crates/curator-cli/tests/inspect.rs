//! `curator inspect PATH [--json] [--watch]` on a mutex with a holder and a waiter.

mod support;

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_locks::InterProcessMutex;
use curator_test::{TestingServer, eventually, unique_root};
use serde_json::Value;
use support::{Reader, Running, curator, run, text};

async fn client(connect: &str, name: &str) -> CuratorFramework {
    curator_testkit::started(
        curator_testkit::builder(connect, Duration::from_secs(10)).identity(name),
    )
    .await
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
}

/// (name, session) of each holder or waiter of a JSON report.
fn names(report: &Value, list: &str) -> Vec<(String, i64)> {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["who"]["name"].as_str().unwrap().to_owned(),
                p["session_id"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_prints_the_holder_and_the_waiter_and_watch_prints_the_next_holder() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-inspect");
    let (holder, waiter) = (
        client(&connect, "holder-a").await,
        client(&connect, "waiter-b").await,
    );
    let guard = InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiting = InterProcessMutex::builder(waiter.clone(), &path)
        .build()
        .unwrap();
    let task = tokio::spawn(async move {
        let guard = waiting.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    eventually("the waiter queues", || async {
        holder
            .get_children()
            .for_path(&path)
            .await
            .is_ok_and(|(c, _)| c.len() == 2)
    })
    .await;
    let (a, b) = (holder.session_id().unwrap(), waiter.session_id().unwrap());

    let out = run(curator(&connect, &["inspect", &path]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mutex"), "{stdout}");
    assert!(
        stdout.contains("holders (1)") && stdout.contains("holder-a on"),
        "{stdout}"
    );
    assert!(
        stdout.contains("waiters (1)") && stdout.contains("waiter-b on"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("session 0x{a:x}")), "{stdout}");

    let out = run(curator(&connect, &["inspect", &path, "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = json(text(&out.stdout).trim());
    assert_eq!(report["layout"], "mutex");
    assert_eq!(names(&report, "holders"), vec![("holder-a".to_owned(), a)]);
    assert_eq!(names(&report, "waiters"), vec![("waiter-b".to_owned(), b)]);

    // --watch: the first report, then the next after the holder lets go; the reader goes after
    // two lines (`| head -2`): 141, without a panic.
    let mut watch = Running::spawn_reading(
        curator(&connect, &["inspect", &path, "--watch", "--json"]),
        Reader::CloseAfter(2),
        Reader::All,
    );
    let first = json(&watch.wait_stdout(|_| true));
    assert_eq!(names(&first, "holders"), vec![("holder-a".to_owned(), a)]);
    guard.release().await.unwrap();
    let second = json(
        &watch
            .wait_stdout(|line| names(&json(line), "holders") != vec![("holder-a".to_owned(), a)]),
    );
    assert_eq!(names(&second, "holders"), vec![("waiter-b".to_owned(), b)]);
    assert_eq!(names(&second, "waiters"), vec![]);
    // A change more, so curator writes into the closed pipe if it did not notice it closing.
    task.abort();
    let status = watch.wait_exit();
    let stderr = watch.drain_stderr();
    assert_eq!(status.code(), Some(141), "{stderr:#?}");
    assert!(stderr.is_empty(), "{stderr:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ends_quietly_when_stdout_is_closed() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-inspect-closed");
    for args in [
        &["inspect", &path][..],
        &["inspect", &path, "--json"],
        &["inspect", &path, "--watch"],
    ] {
        let mut running = Running::spawn_reading(
            curator(&server.connect_string(), args),
            Reader::CloseAfter(0),
            Reader::All,
        );
        let status = running.wait_exit();
        let stderr = running.drain_stderr();
        assert_eq!(status.code(), Some(141), "{args:?}: {stderr:#?}");
        assert!(stderr.is_empty(), "{args:?}: {stderr:#?}");
    }
}

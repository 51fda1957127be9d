//! `curator ensemble`: members and their live state, and `add`/`remove` (dynamic
//! reconfiguration) against real ensembles; `--auth-user` for the super user.

mod support;

use std::path::Path;
use std::process::Output;

use curator_test::{TestingCluster, eventually};
use serde_json::Value;
use support::{Reader, Running, curator, run, text};

/// Asserts that `output` is of a run that exited with `code`; returns it.
fn exited(output: &Output, code: i32) -> &Output {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    output
}

fn json(output: &Output) -> Value {
    exited(output, 0);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {}", text(&output.stdout)))
}

/// `curator ensemble --json`, read.
fn status(connect: &str) -> Value {
    json(&run(curator(connect, &["ensemble", "--json"])))
}

fn ids(config: &Value) -> Vec<u64> {
    config["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| member["id"].as_u64().unwrap())
        .collect()
}

/// The member with this id in `curator ensemble --json`'s answer.
fn member(config: &Value, id: u64) -> &Value {
    config["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|member| member["id"] == id)
        .unwrap_or_else(|| panic!("no member {id} in {config}"))
}

fn modes(config: &Value) -> Vec<String> {
    let mut modes: Vec<String> = config["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| member["state"]["mode"].as_str().unwrap_or("-").to_owned())
        .collect();
    modes.sort();
    modes
}

/// Polls `curator ensemble --json` until `wanted` holds of it; returns it.
async fn await_status(connect: &str, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    eventually(what, || {
        last = status(connect);
        let done = wanted(&last);
        async move { done }
    })
    .await;
    last
}

fn path(file: &Path) -> &str {
    file.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_lists_every_member_with_its_live_state_and_a_stopped_one_as_unreachable() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    let connect = cluster.connect_string();
    let leader = cluster.await_leader().await.unwrap();

    let config = status(&connect);
    assert_eq!(ids(&config), [1, 2, 3], "{config}");
    assert_eq!(
        modes(&config),
        ["follower", "follower", "leader"],
        "{config}"
    );
    // The version is ZooKeeper's own text (hexadecimal, no 0x): the framework reads the same.
    let client = curator_framework::CuratorFramework::builder()
        .connect_string(&connect)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let version = client.ensemble_config().await.unwrap().version;
    client.close().await.unwrap();
    assert_ne!(version, 0);
    assert_eq!(config["version"], format!("{version:x}"));
    for index in 0..3 {
        let member = member(&config, cluster.member_id(index));
        assert_eq!(member["role"], "participant");
        assert_eq!(member["spec"], cluster.member_spec(index));
        assert_eq!(
            member["client_address"],
            cluster.member_connect_string(index)
        );
        let state = &member["state"];
        assert_eq!(state["status"], "serving", "{member}");
        assert!(state["zxid"].as_str().unwrap().starts_with("0x"), "{state}");
        assert!(state["connections"].is_u64(), "{state}");
        assert!(state["latency_avg_ms"].is_number(), "{state}");
    }
    assert_eq!(
        member(&config, cluster.member_id(leader))["state"]["mode"],
        "leader"
    );

    // The same for people: a header with the version, then a table.
    let human = exited(&run(curator(&connect, &["ensemble"])), 0).clone();
    let human = text(&human.stdout);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[0],
        format!("configuration version {version:x} (3 members)")
    );
    assert!(lines[1].starts_with("ID  ROLE"), "{human}");
    assert_eq!(lines.len(), 5, "{human}");
    assert_eq!(lines.iter().filter(|l| l.contains(" leader ")).count(), 1);

    // A stopped follower (still a member) is unreachable; the command succeeds all the same.
    let follower = (0..3).find(|index| *index != leader).unwrap();
    let follower_id = cluster.member_id(follower);
    cluster.stop_member(follower).unwrap();
    let connect = cluster.connect_string();
    let config = await_status(&connect, "the stopped member unreachable", |config| {
        member(config, follower_id)["state"]["status"] == "unreachable"
    })
    .await;
    assert_eq!(
        member(&config, follower_id)["state"]["reason"],
        "connection refused"
    );
    assert_eq!(ids(&config), [1, 2, 3]);
    assert_eq!(modes(&config), ["-", "follower", "leader"], "{config}");
    let human = exited(&run(curator(&connect, &["ensemble"])), 0).clone();
    let row = text(&human.stdout)
        .lines()
        .find(|line| line.starts_with(&format!("{follower_id} ")))
        .unwrap()
        .to_owned();
    assert!(row.ends_with("unreachable  connection refused"), "{row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_add_and_remove_reconfigure_as_the_super_user_and_only_from_the_version_given() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    let connect = cluster.connect_string();
    let password = cluster.super_credentials().unwrap().password().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("super.password");
    std::fs::write(&password_file, format!("{password}\n")).unwrap();
    let wrong_file = dir.path().join("wrong.password");
    std::fs::write(&wrong_file, "not-the-password\n").unwrap();
    // Every run of this test: nothing it prints holds the password.
    let zk = |args: &[&str]| {
        let output = run(curator(&connect, args));
        for stream in [&output.stdout, &output.stderr] {
            assert!(
                !text(stream).contains(&password),
                "the password was printed"
            );
        }
        output
    };
    let as_super = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend([
            "--auth-user",
            "super",
            "--auth-password-file",
            path(&password_file),
        ]);
        zk(&all)
    };
    let before = status(&connect);
    let v0 = before["version"].as_str().unwrap().to_owned();

    // The digest identity is the session's (a general option: whoami shows it), from the
    // flags or from ZK_AUTH_USER and ZK_AUTH_PASSWORD_FILE.
    let me = text(&exited(&as_super(&["whoami"]), 0).stdout);
    assert!(me.lines().any(|id| id == "digest:super"), "{me}");
    let mut from_env = curator(&connect, &["whoami"]);
    from_env
        .env("ZK_AUTH_USER", "super")
        .env("ZK_AUTH_PASSWORD_FILE", path(&password_file));
    let me = text(&exited(&run(from_env), 0).stdout);
    assert!(me.lines().any(|id| id == "digest:super"), "{me}");

    // A bad spec is a usage error found before connecting (here nothing listens).
    let bad = exited(
        &run(curator(
            "127.0.0.1:1",
            &["ensemble", "add", "server.x=127.0.0.1:1:2;3"],
        )),
        2,
    )
    .clone();
    assert!(
        text(&bad.stderr).contains("the key must be server.<id> with a numeric id"),
        "{}",
        text(&bad.stderr)
    );
    let bad = text(&exited(&as_super(&["ensemble", "add", "server.5=127.0.0.1:1"]), 2).stderr);
    assert!(bad.contains("bad election port"), "{bad}");

    // Without the super user: refused, saying what it takes.
    let denied = text(&exited(&zk(&["ensemble", "remove", "3"]), 1).stderr);
    assert_eq!(
        denied.trim(),
        "curator: cannot reconfigure the ensemble: not authorized: reconfiguration needs the \
         super user or an identity that the ACL of /zookeeper/config lets write (--auth-user \
         and --auth-password-file)"
    );
    let wrong = zk(&[
        "ensemble",
        "remove",
        "3",
        "--auth-user",
        "super",
        "--auth-password-file",
        path(&wrong_file),
    ]);
    let wrong = text(&exited(&wrong, 1).stderr);
    assert!(
        wrong.contains("not authorized: digest:super may not write /zookeeper/config"),
        "{wrong}"
    );
    // An id that is not a member: ZooKeeper would make a new version of the same members.
    let stranger = text(&exited(&as_super(&["ensemble", "remove", "9"]), 1).stderr);
    assert_eq!(
        stranger.trim(),
        format!(
            "curator: cannot reconfigure the ensemble: server.9 is not a member (configuration \
             version {v0} has 1, 2, 3); nothing was changed"
        )
    );
    assert_eq!(
        status(&connect)["version"],
        v0.as_str(),
        "changed when refused"
    );

    // A new member, started first (it follows without a vote), then added.
    let new = cluster.start_new_member().await.unwrap();
    let new_id = cluster.member_id(new);
    let added = json(&as_super(&[
        "ensemble",
        "add",
        &cluster.member_spec(new),
        "--json",
    ]));
    assert_eq!(ids(&added), [1, 2, 3, new_id], "{added}");
    assert!(added["members"][3].get("state").is_none(), "{added}");
    let v1 = added["version"].as_str().unwrap().to_owned();
    assert_ne!(v1, v0);
    let connect = cluster.connect_string();
    let config = await_status(&connect, "four members, all serving", |config| {
        config["version"] == v1.as_str()
            && ids(config) == [1, 2, 3, new_id]
            && config["members"]
                .as_array()
                .unwrap()
                .iter()
                .all(|member| member["state"]["status"] == "serving")
    })
    .await;
    assert_eq!(
        modes(&config),
        ["follower", "follower", "follower", "leader"],
        "{config}"
    );

    // From a version that is no longer current: refused, naming both, nothing changed.
    let stale = as_super(&[
        "ensemble",
        "remove",
        &new_id.to_string(),
        "--from-version",
        &v0,
    ]);
    let stale = text(&exited(&stale, 1).stderr);
    assert_eq!(
        stale.trim(),
        format!(
            "curator: cannot reconfigure the ensemble: its configuration is no longer version \
             {v0} (it is now {v1}); nothing was changed"
        )
    );
    let unchanged = status(&connect);
    assert_eq!(
        (unchanged["version"].as_str(), ids(&unchanged)),
        (Some(v1.as_str()), vec![1, 2, 3, new_id])
    );

    // From the current version (with 0x, as a zxid is written): a follower leaves. The table
    // for people shows the new configuration.
    let leader = cluster.await_leader().await.unwrap();
    let leaving = (0..3).find(|index| *index != leader).unwrap();
    let leaving_id = cluster.member_id(leaving);
    let removed = as_super(&[
        "ensemble",
        "remove",
        &leaving_id.to_string(),
        "--from-version",
        &format!("0x{v1}"),
    ]);
    let removed = text(&exited(&removed, 0).stdout);
    let lines: Vec<&str> = removed.lines().collect();
    assert!(
        lines[0].starts_with("configuration version ") && lines[0].ends_with("(3 members)"),
        "{removed}"
    );
    assert_eq!(lines[1], lines[1].trim_end(), "{removed}");
    assert!(lines[1].ends_with("CLIENT"), "{removed}");
    assert!(
        !lines
            .iter()
            .any(|line| line.starts_with(&format!("{leaving_id} "))),
        "{removed}"
    );
    let mut remaining: Vec<u64> = (0..cluster.len())
        .filter(|index| *index != leaving)
        .map(|index| cluster.member_id(index))
        .collect();
    remaining.sort_unstable();
    let config = await_status(&connect, "the member gone", |config| {
        ids(config) == remaining
    })
    .await;
    assert_ne!(config["version"], v1.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_ensemble_is_listed_and_refuses_reconfiguration() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let connect = cluster.connect_string();
    let config = status(&connect);
    assert_eq!(ids(&config), [1, 2, 3], "{config}");
    assert_eq!(
        modes(&config),
        ["follower", "follower", "leader"],
        "{config}"
    );

    let refused = run(curator(&connect, &["ensemble", "remove", "1"]));
    assert_eq!(
        text(&exited(&refused, 1).stderr).trim(),
        "curator: cannot reconfigure the ensemble: dynamic reconfiguration is disabled on the \
         servers (they need reconfigEnabled=true)"
    );
    let refused = run(curator(&connect, &["ensemble", "remove", "1", "--json"]));
    let error: Value = serde_json::from_slice(&exited(&refused, 1).stderr).unwrap();
    assert_eq!(error["event"], "error");
    assert_eq!(error["code"], 1);

    // Nobody reads the table: no panic, no word, 141.
    for args in [&["ensemble"][..], &["ensemble", "--json"]] {
        let mut running =
            Running::spawn_reading(curator(&connect, args), Reader::CloseAfter(0), Reader::All);
        let exit = running.wait_exit();
        let stderr = running.drain_stderr();
        assert_eq!(exit.code(), Some(141), "{args:?}: {stderr:#?}");
        assert!(stderr.is_empty(), "{args:?}: {stderr:#?}");
    }
}

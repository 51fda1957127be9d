//! Rust and Apache Curator's ServiceDiscovery (Java, Debian's curator-x-discovery 5.4) on the
//! same registry: each finds what the other registered, with equal fields, and both write the
//! same bytes for the same instance.

use std::path::Path;

use curator_discovery::{JsonInstanceSerializer, ServiceDiscovery, ServiceInstance, UriSpec};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, unique_root};
use curator_testkit::client;
use serde_json::{Value, json};

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn java_peer(connect: &str, base: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/DiscoveryPeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect, base]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

/// The Java peer's JSON array, sorted by id (Curator lists children in the server's order).
fn by_id(answer: &str) -> Vec<Value> {
    let Ok(Value::Array(mut items)) = serde_json::from_str::<Value>(answer) else {
        panic!("not a JSON array: {answer}");
    };
    items.sort_by_key(|item| item["id"].to_string());
    items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_rust_find_each_others_instances() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("interop-discovery");
    let mut java = tokio::task::block_in_place(|| java_peer(&server.connect_string(), &base));
    let c = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(c.clone(), &base).build().unwrap();

    // Java registers; Rust reads every field.
    let spec = "{scheme}://{address}:{ssl-port}/x";
    assert_eq!(
        ask(
            &mut java,
            &format!(
                "register api j-map 10.0.0.7 8080 8443 map zone=eu,rack=r1 {spec} 1700000000123"
            )
        )
        .await,
        "ok"
    );
    assert_eq!(
        ask(
            &mut java,
            "register api j-text 10.0.0.8 81 - string hello - 5"
        )
        .await,
        "ok"
    );
    let found = discovery.query_for_instances("api").await.unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    let map = discovery
        .query_for_instance("api", "j-map")
        .await
        .unwrap()
        .unwrap();
    let expected: ServiceInstance = ServiceInstance::builder("api")
        .id("j-map")
        .address("10.0.0.7")
        .port(8080)
        .ssl_port(8443)
        .payload(json!({"zone": "eu", "rack": "r1"}))
        .registration_time_utc(1_700_000_000_123)
        .uri_spec(UriSpec::parse(spec).unwrap())
        .build()
        .unwrap();
    assert_eq!(map, expected);
    assert_eq!(map.build_uri().unwrap(), "https://10.0.0.7:8443/x");
    let text = found.iter().find(|i| i.id() == "j-text").unwrap();
    assert_eq!(text.payload(), Some(&json!("hello")));
    assert_eq!((text.port(), text.ssl_port()), (Some(81), None));
    assert_eq!(text.uri_spec(), None);
    assert_eq!(text.registration_time_utc(), 5);
    let typed = ServiceDiscovery::builder(c.clone(), &base)
        .payload_type::<String>()
        .build()
        .unwrap();
    assert_eq!(
        typed
            .query_for_instance("api", "j-text")
            .await
            .unwrap()
            .unwrap()
            .payload()
            .map(String::as_str),
        Some("hello")
    );

    // Rust registers (a map payload, a string payload, a disabled instance); Java reads them.
    let rust_map: ServiceInstance = ServiceInstance::builder("web")
        .id("r-map")
        .address("10.0.1.1")
        .port(80)
        .payload(json!({"zone": "us", "weight": "3"}))
        .registration_time_utc(1_700_000_000_999)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{port}").unwrap())
        .build()
        .unwrap();
    let rust_text = ServiceInstance::builder("web")
        .id("r-text")
        .ssl_port(443)
        .payload(json!("plain"))
        .registration_time_utc(7)
        .enabled(false)
        .build()
        .unwrap();
    discovery.register_service(&rust_map).await.unwrap();
    discovery.register_service(&rust_text).await.unwrap();
    let seen = by_id(&ask(&mut java, "query web").await);
    let expected = json!([
        {
            "name": "web", "id": "r-map", "address": "10.0.1.1", "port": 80, "sslPort": null,
            "payloadClass": "java.util.LinkedHashMap",
            "payload": {"zone": "us", "weight": "3"},
            "registrationTimeUTC": 1_700_000_000_999_i64, "serviceType": "DYNAMIC",
            "uri": "http://10.0.1.1:80", "enabled": true
        },
        {
            "name": "web", "id": "r-text", "address": null, "port": null, "sslPort": 443,
            "payloadClass": "java.lang.String", "payload": "plain",
            "registrationTimeUTC": 7, "serviceType": "DYNAMIC",
            "uri": null, "enabled": false
        }
    ]);
    assert_eq!(seen, expected.as_array().unwrap().clone());

    // Unregistered on the Rust side: gone for Java too.
    discovery.unregister_service(&rust_text).await.unwrap();
    assert_eq!(by_id(&ask(&mut java, "query web").await).len(), 1);
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_writes_the_bytes_curator_writes() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("interop-discovery-bytes");
    let mut java = tokio::task::block_in_place(|| java_peer(&server.connect_string(), &base));
    let cases: [(&str, ServiceInstance, JsonInstanceSerializer); 3] = [
        (
            "serialize name id address 10 20 string payload {a}/b/{c} 0",
            ServiceInstance::builder("name")
                .id("id")
                .address("address")
                .port(10)
                .ssl_port(20)
                .payload(json!("payload"))
                .registration_time_utc(0)
                .uri_spec(UriSpec::parse("{a}/b/{c}").unwrap())
                .build()
                .unwrap(),
            JsonInstanceSerializer::new(),
        ),
        (
            "serialize api j1 10.0.0.1 80 - map k=v,z=1 {scheme}://{address}:{port} 5",
            ServiceInstance::builder("api")
                .id("j1")
                .address("10.0.0.1")
                .port(80)
                .payload(json!({"k": "v", "z": "1"}))
                .registration_time_utc(5)
                .uri_spec(UriSpec::parse("{scheme}://{address}:{port}").unwrap())
                .build()
                .unwrap(),
            JsonInstanceSerializer::new().payload_class("java.util.LinkedHashMap"),
        ),
        (
            "serialize s i - - - string - - 1700000000000",
            ServiceInstance::builder("s")
                .id("i")
                .registration_time_utc(1_700_000_000_000)
                .build()
                .unwrap(),
            JsonInstanceSerializer::new(),
        ),
    ];
    for (command, instance, serializer) in cases {
        let java_json = ask(&mut java, command).await;
        assert_eq!(
            String::from_utf8(serializer.serialize(&instance).unwrap()).unwrap(),
            java_json,
            "{command}"
        );
        let back: ServiceInstance = serializer.deserialize(java_json.as_bytes()).unwrap();
        assert_eq!(back, instance);
    }
}

//! The instance JSON, byte for byte as Apache Curator 5.4 writes it, and the forms Curator
//! (and older Curators) leave in ZooKeeper.

use curator_discovery::{
    EnabledField, JsonInstanceSerializer, ServiceInstance, ServiceInstanceBuilder, ServiceType,
    UriSpec,
};
use curator_framework::Error;
use serde_json::json;

/// Captured from Curator's `JsonInstanceSerializer(Object.class)` (see the wire-layout notes).
const CURATOR: &str = r#"{"name":"name","id":"id","address":"address","port":10,"sslPort":20,"payload":"payload","registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"a","variable":true},{"value":"/b/","variable":false},{"value":"c","variable":true}]}}"#;

fn sample() -> ServiceInstance<String> {
    ServiceInstance::builder("name")
        .id("id")
        .address("address")
        .port(10)
        .ssl_port(20)
        .payload("payload".to_owned())
        .registration_time_utc(0)
        .uri_spec(UriSpec::parse("{a}/b/{c}").unwrap())
        .build()
        .unwrap()
}

#[test]
fn writes_exactly_what_curator_writes() {
    assert_eq!(
        String::from_utf8(sample().to_json().unwrap()).unwrap(),
        CURATOR
    );
    // Non-compatible mode (and disabled instances by default) end with `enabled`.
    let always = JsonInstanceSerializer::new().enabled_field(EnabledField::Always);
    let with_enabled = format!("{},\"enabled\":true}}", &CURATOR[..CURATOR.len() - 1]);
    assert_eq!(
        String::from_utf8(always.serialize(&sample()).unwrap()).unwrap(),
        with_enabled
    );
    let disabled = sample().to_builder().enabled(false).build().unwrap();
    let with_disabled = format!("{},\"enabled\":false}}", &CURATOR[..CURATOR.len() - 1]);
    assert_eq!(
        String::from_utf8(disabled.to_json().unwrap()).unwrap(),
        with_disabled
    );
    let never = JsonInstanceSerializer::new().enabled_field(EnabledField::Never);
    assert_eq!(
        String::from_utf8(never.serialize(&disabled).unwrap()).unwrap(),
        CURATOR
    );
    // Absent values are nulls.
    let bare: ServiceInstance<()> = ServiceInstanceBuilder::new("s")
        .id("i")
        .registration_time_utc(5)
        .service_type(ServiceType::DynamicSequential)
        .build()
        .unwrap();
    assert_eq!(
        String::from_utf8(bare.to_json().unwrap()).unwrap(),
        r#"{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC_SEQUENTIAL","uriSpec":null}"#
    );
}

#[test]
fn reads_curators_forms() {
    assert_eq!(
        ServiceInstance::<String>::from_json(CURATOR.as_bytes()).unwrap(),
        sample()
    );

    // `{}`: Curator's defaults.
    let empty: ServiceInstance = ServiceInstance::from_json(b"{}").unwrap();
    assert_eq!((empty.name(), empty.id()), ("", ""));
    assert_eq!(empty.service_type(), ServiceType::Dynamic);
    assert!(empty.is_enabled());
    assert_eq!(empty.payload(), None);
    assert_eq!(empty.registration_time_utc(), 0);

    // Nulls, unknown fields, `enabled`, other service types.
    let json = br#"{"name":"api","id":"1","address":null,"port":null,"sslPort":443,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"PERMANENT","uriSpec":null,"enabled":false,"somethingNew":{"x":[1]}}"#;
    let read: ServiceInstance = ServiceInstance::from_json(json).unwrap();
    assert_eq!(read.ssl_port(), Some(443));
    assert_eq!(read.port(), None);
    assert_eq!(read.service_type(), ServiceType::Permanent);
    assert!(!read.is_enabled());
    assert_eq!(read.registration_time_utc(), 1_700_000_000_000);

    // Jackson's type information on Java payloads is removed.
    let map = br#"{"name":"a","id":"b","payload":{"@class":"java.util.LinkedHashMap","1":"a"}}"#;
    let read: ServiceInstance = ServiceInstance::from_json(map).unwrap();
    assert_eq!(read.payload(), Some(&json!({"1": "a"})));
    let long = br#"{"name":"a","id":"b","payload":["java.lang.Long",7]}"#;
    assert_eq!(
        ServiceInstance::<i64>::from_json(long).unwrap().payload(),
        Some(&7)
    );
    let list = br#"{"name":"a","id":"b","payload":["java.util.Arrays$ArrayList",["x","y"]]}"#;
    assert_eq!(
        ServiceInstance::<Vec<String>>::from_json(list)
            .unwrap()
            .payload(),
        Some(&vec!["x".to_owned(), "y".to_owned()])
    );
    // A POJO payload read as a Rust struct (unknown fields, `@class` included, are ignored).
    #[derive(serde::Deserialize, Clone, PartialEq, Debug)]
    struct Pojo {
        val: String,
    }
    let pojo = br#"{"payload":{"@class":"com.example.Payload","val":"x","more":1}}"#;
    assert_eq!(
        ServiceInstance::<Pojo>::from_json(pojo).unwrap().payload(),
        Some(&Pojo { val: "x".into() })
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    for bytes in [
        &b"not json"[..],
        b"[]",
        br#"{"serviceType":"SOMETIMES"}"#,
        br#"{"port":"x"}"#,
    ] {
        assert!(
            matches!(
                ServiceInstance::<()>::from_json(bytes),
                Err(Error::Decode { .. })
            ),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert!(matches!(
        ServiceInstance::<u32>::from_json(br#"{"payload":"text"}"#),
        Err(Error::Decode { .. })
    ));
    for (name, id) in [
        ("", "i"),
        ("a/b", "i"),
        ("s", ".."),
        ("s", ""),
        ("s", "a\u{0}b"),
    ] {
        assert!(
            matches!(
                ServiceInstanceBuilder::<()>::new(name).id(id).build(),
                Err(Error::InvalidArgument(_))
            ),
            "{name:?}/{id:?}"
        );
    }
    assert!(matches!(
        UriSpec::parse("{a"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn object_payloads_can_carry_a_java_class() {
    let instance: ServiceInstance = ServiceInstance::builder("api")
        .id("j1")
        .address("10.0.0.1")
        .port(80)
        .payload(json!({"k": "v", "z": "1"}))
        .registration_time_utc(5)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{port}").unwrap())
        .build()
        .unwrap();
    let serializer = JsonInstanceSerializer::new().payload_class("java.util.LinkedHashMap");
    // What Curator writes for the same instance with a LinkedHashMap payload.
    let curator = r#"{"name":"api","id":"j1","address":"10.0.0.1","port":80,"sslPort":null,"payload":{"@class":"java.util.LinkedHashMap","k":"v","z":"1"},"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]}}"#;
    assert_eq!(
        String::from_utf8(serializer.serialize(&instance).unwrap()).unwrap(),
        curator
    );
    assert_eq!(instance.build_uri().unwrap(), "http://10.0.0.1:80");
    // Non-object payloads are written bare, class or not.
    let text = instance.to_builder().payload(json!("x")).build().unwrap();
    assert!(
        String::from_utf8(serializer.serialize(&text).unwrap())
            .unwrap()
            .contains(r#""payload":"x","#)
    );
}

/// The builder needs no type annotation: it starts with the default payload type, and a payload
/// sets the type (it used to be generic from the start, so `builder("api")...build()` alone did
/// not compile without naming the type).
#[test]
fn the_builder_needs_no_type_annotation() {
    let plain = ServiceInstance::builder("api").port(80).build().unwrap();
    assert_eq!(plain.payload(), None::<&serde_json::Value>);
    let typed = ServiceInstance::builder("api")
        .id("i")
        .payload(7_u32)
        .port(81)
        .build()
        .unwrap();
    assert_eq!(
        (typed.payload(), typed.port(), typed.id()),
        (Some(&7), Some(81), "i")
    );
}

//! Unit tests of schemas and schema sets.

use std::collections::HashMap;

use super::*;
use crate::types::CreateMode;

#[test]
fn exact_paths_win_over_regexes_and_regexes_go_in_order() {
    let set = SchemaSet::strict(vec![
        Schema::builder_regex("/a/.*")
            .name("first")
            .build()
            .unwrap(),
        Schema::builder_regex("/a/b.*")
            .name("second")
            .build()
            .unwrap(),
        Schema::builder("/a/b").name("exact").build().unwrap(),
    ])
    .unwrap();
    assert_eq!(set.schema_for("/a/b").unwrap().name(), "exact");
    assert_eq!(set.schema_for("/a/bc").unwrap().name(), "first");
    assert!(set.schema_for("/a").is_err());
}

#[test]
fn regexes_match_whole_paths() {
    let schema = Schema::builder_regex("/a|/a/b").build().unwrap();
    assert!(schema.matches("/a/b"));
    assert!(!schema.matches("/a/bc") && !schema.matches("/x/a"));
}

#[test]
fn modes_follow_the_allowances() {
    let set = SchemaSet::strict(vec![
        Schema::builder("/e")
            .name("e")
            .ephemeral(Allowance::Must)
            .sequential(Allowance::Cannot)
            .build()
            .unwrap(),
    ])
    .unwrap();
    let violation = |mode| match set.check_create("/e", mode, b"") {
        Err(Error::SchemaViolation {
            violation, schema, ..
        }) => {
            assert_eq!(schema.as_deref(), Some("e"));
            Some(violation)
        }
        _ => None,
    };
    assert_eq!(violation(CreateMode::Ephemeral), None);
    assert_eq!(
        violation(CreateMode::Persistent),
        Some(Violation::MustBeEphemeral)
    );
    assert_eq!(
        violation(CreateMode::EphemeralSequential),
        Some(Violation::CannotBeSequential)
    );
}

#[test]
fn json_fields_and_defaults() {
    let json = r#"[{"name": "n", "path": "/p", "ephemeral": "MUST", "metadata": {"one": 1}}]"#;
    let set = SchemaSet::from_json(json, &HashMap::new()).unwrap();
    let schema = set.named("n").unwrap();
    assert_eq!(schema.ephemeral(), Allowance::Must);
    assert!(
        !schema.can_be_deleted(),
        "the loader's default, as Curator's"
    );
    assert_eq!(schema.metadata()["one"], "1");
    for bad in [
        r#"{"name": "n"}"#,
        r#"[{"path": "/p"}]"#,
        r#"[{"name": "n", "path": "/p", "watched": "maybe"}]"#,
        r#"[{"name": "n", "path": "(", "isRegex": true}]"#,
        r#"[{"name": "n", "path": "/p", "schemaValidator": "nope"}]"#,
    ] {
        assert!(
            matches!(
                SchemaSet::from_json(bad, &HashMap::new()),
                Err(Error::InvalidArgument(_))
            ),
            "{bad}"
        );
    }
}

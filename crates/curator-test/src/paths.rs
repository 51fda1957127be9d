//! Unique root paths so tests sharing one server never see each other's nodes.

/// A unique absolute path under `/curator-test`, for one test's nodes.
///
/// The path is not created; tests create it (or its children, with parents) as they need.
///
/// ```
/// let a = curator_test::unique_root("locks");
/// let b = curator_test::unique_root("locks");
/// assert!(a.starts_with("/curator-test/locks-"));
/// assert_ne!(a, b);
/// ```
pub fn unique_root(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("/curator-test/{name}-{}", uuid::Uuid::new_v4().simple())
}

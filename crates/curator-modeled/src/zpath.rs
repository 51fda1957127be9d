//! Path templates: [`ZPath`] (a node path whose segments may be `{parameters}`), the values
//! that fill them ([`NodeName`], [`PathParams`]) and [`TypedZPath`], a template whose
//! parameter types are checked by the compiler.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use curator_framework::{Error, Result};

/// One segment of a [`ZPath`].
#[derive(Clone, PartialEq, Eq, Hash)]
enum Segment {
    /// A node name.
    Name(String),
    /// A parameter (`{name}`; the name may be empty: `{}`).
    Param(String),
}

/// A ZooKeeper path that may hold parameters: `/orgs/{org}/users/{id}`. A segment written
/// `{name}` is a parameter; [`resolve`](Self::resolve) fills parameters in order, and a path
/// without parameters left is *resolved* and can be read and written. Curator's `ZPath`.
///
/// Paths are as the caller gives them to the client (without its namespace).
///
/// ```
/// use curator_modeled::ZPath;
///
/// let users = ZPath::parse("/orgs/{org}/users/{id}")?;
/// assert_eq!(users.parameters(), ["org", "id"]);
/// assert!(!users.is_resolved());
///
/// let acme = users.resolve(["acme"])?;          // leading parameters only
/// assert_eq!(acme.to_string(), "/orgs/acme/users/{id}");
/// let user = users.resolve(("acme", 42))?;       // mixed types: a tuple
/// assert_eq!(user.full_path()?, "/orgs/acme/users/42");
/// assert!(users.matches("/orgs/acme/users/42"));
/// assert!(!users.matches("/orgs/acme/users"));
///
/// assert!(users.resolve(("a/b", 1)).is_err());   // not a node name
/// assert!(users.resolve((1, 2, 3)).is_err());    // too many values
/// assert!(users.full_path().is_err());           // not resolved
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ZPath {
    segments: Arc<[Segment]>,
}

impl ZPath {
    /// The root path, `/`.
    pub fn root() -> ZPath {
        ZPath {
            segments: Arc::from(Vec::new()),
        }
    }

    /// Parses a path template: absolute, no empty segment, no trailing `/`; a segment
    /// `{name}` is a parameter (`{}` an unnamed one). Other segments must be valid node names.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] saying what is wrong.
    pub fn parse(template: &str) -> Result<ZPath> {
        if template == "/" {
            return Ok(ZPath::root());
        }
        if !template.starts_with('/') {
            return Err(invalid(template, "path must start with '/'"));
        }
        if template.ends_with('/') {
            return Err(invalid(template, "path must not end with '/'"));
        }
        let mut segments = Vec::new();
        for segment in template[1..].split('/') {
            if let Some(name) = segment
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
            {
                if name.contains(['{', '}']) {
                    return Err(invalid(template, "a parameter name holds '{' or '}'"));
                }
                segments.push(Segment::Param(name.to_owned()));
            } else {
                check_name(segment).map_err(|reason| invalid(template, &reason))?;
                segments.push(Segment::Name(segment.to_owned()));
            }
        }
        Ok(ZPath {
            segments: Arc::from(segments),
        })
    }

    /// This path with one more segment: the node named `child` (any [`NodeName`]).
    ///
    /// ```
    /// # use curator_modeled::ZPath;
    /// assert_eq!(ZPath::root().at("jobs")?.at(7)?.full_path()?, "/jobs/7");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when `child` is not a node name (empty, `.`, `..`, holds `/`).
    pub fn at(&self, child: impl NodeName) -> Result<ZPath> {
        let name = child.node_name();
        check_name(&name).map_err(|reason| invalid(&format!("{self}/{name}"), &reason))?;
        let mut segments = self.segments.to_vec();
        segments.push(Segment::Name(name));
        Ok(ZPath {
            segments: Arc::from(segments),
        })
    }

    /// This path with a parameter segment `{name}` appended.
    ///
    /// ```
    /// # use curator_modeled::ZPath;
    /// assert_eq!(ZPath::parse("/jobs")?.at_parameter("id").to_string(), "/jobs/{id}");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn at_parameter(&self, name: &str) -> ZPath {
        let mut segments = self.segments.to_vec();
        segments.push(Segment::Param(name.replace(['{', '}'], "")));
        ZPath {
            segments: Arc::from(segments),
        }
    }

    /// The parent path (`None` for the root).
    pub fn parent(&self) -> Option<ZPath> {
        let (_, parent) = self.segments.split_last()?;
        Some(ZPath {
            segments: Arc::from(parent.to_vec()),
        })
    }

    /// Whether this is `/`.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Whether no parameter is left.
    pub fn is_resolved(&self) -> bool {
        self.segments
            .iter()
            .all(|segment| matches!(segment, Segment::Name(_)))
    }

    /// The names of the parameters left, in order.
    pub fn parameters(&self) -> Vec<&str> {
        self.segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Param(name) => Some(name.as_str()),
                Segment::Name(_) => None,
            })
            .collect()
    }

    /// Fills the leading parameters with `values`, in order (fewer values than parameters
    /// leave the rest; a tuple mixes types, a slice or array repeats one).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are more values than parameters;
    /// [`Error::InvalidPath`] when a value is not a node name.
    pub fn resolve(&self, values: impl PathParams) -> Result<ZPath> {
        let values = values.into_names();
        let parameters = self.parameters().len();
        if values.len() > parameters {
            return Err(Error::InvalidArgument(format!(
                "{self} has {parameters} parameter(s), {} value(s) given",
                values.len()
            )));
        }
        let mut values = values.into_iter();
        let mut segments = Vec::with_capacity(self.segments.len());
        for segment in self.segments.iter() {
            match segment {
                Segment::Param(name) => match values.next() {
                    Some(value) => {
                        check_name(&value).map_err(|reason| {
                            invalid(
                                &self.to_string(),
                                &format!("the value {value:?} of {{{name}}}: {reason}"),
                            )
                        })?;
                        segments.push(Segment::Name(value));
                    }
                    None => segments.push(segment.clone()),
                },
                Segment::Name(_) => segments.push(segment.clone()),
            }
        }
        Ok(ZPath {
            segments: Arc::from(segments),
        })
    }

    /// The node path, for a resolved path.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the parameters left.
    pub fn full_path(&self) -> Result<String> {
        if self.is_resolved() {
            Ok(self.to_string())
        } else {
            Err(Error::InvalidArgument(format!(
                "the path {self} has parameters left to resolve: {}",
                self.parameters().join(", ")
            )))
        }
    }

    /// The last segment as written (`{id}` for a parameter; empty for the root).
    pub fn node_name(&self) -> String {
        match self.segments.last() {
            Some(Segment::Name(name)) => name.clone(),
            Some(Segment::Param(name)) => format!("{{{name}}}"),
            None => String::new(),
        }
    }

    /// The longest leading part of this path without parameters (the path itself when it is
    /// resolved): the node under which every path this template matches lives.
    pub fn resolved_prefix(&self) -> ZPath {
        let end = self
            .segments
            .iter()
            .position(|segment| matches!(segment, Segment::Param(_)))
            .unwrap_or(self.segments.len());
        ZPath {
            segments: Arc::from(self.segments[..end].to_vec()),
        }
    }

    /// Whether the node path `path` fits this template: as many segments, equal names, any
    /// node name where a parameter is.
    pub fn matches(&self, path: &str) -> bool {
        if path == "/" {
            return self.is_root();
        }
        let Some(rest) = path.strip_prefix('/') else {
            return false;
        };
        let mut names = rest.split('/');
        for segment in self.segments.iter() {
            match (segment, names.next()) {
                (_, None) => return false,
                (_, Some("")) => return false,
                (Segment::Name(expected), Some(name)) if expected != name => return false,
                _ => {}
            }
        }
        names.next().is_none()
    }

    /// A regular expression matching the node paths of this template (a parameter matches one
    /// node name), anchored at both ends: the path pattern of the model's
    /// [`Schema`](curator_framework::schema::Schema), as Curator's `toSchemaPathPattern`.
    ///
    /// ```
    /// # use curator_modeled::ZPath;
    /// assert_eq!(ZPath::parse("/a.b/{id}")?.schema_pattern(), r"^/a\.b/[^/]+$");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn schema_pattern(&self) -> String {
        let mut pattern = String::from("^");
        if self.is_root() {
            pattern.push('/');
        }
        for segment in self.segments.iter() {
            pattern.push('/');
            match segment {
                Segment::Name(name) => pattern.push_str(&regex::escape(name)),
                Segment::Param(_) => pattern.push_str("[^/]+"),
            }
        }
        pattern.push('$');
        pattern
    }

    /// This template with parameter types checked by the compiler (see [`TypedZPath`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `P` has a fixed number of values that differs from
    /// the number of parameters.
    pub fn typed<P: PathParams>(&self) -> Result<TypedZPath<P>> {
        TypedZPath::new(self.clone())
    }
}

impl fmt::Display for ZPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("/");
        }
        for segment in self.segments.iter() {
            match segment {
                Segment::Name(name) => write!(f, "/{name}")?,
                Segment::Param(name) => write!(f, "/{{{name}}}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ZPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ZPath({self})")
    }
}

impl std::str::FromStr for ZPath {
    type Err = Error;

    fn from_str(template: &str) -> Result<ZPath> {
        ZPath::parse(template)
    }
}

fn invalid(path: &str, reason: &str) -> Error {
    Error::InvalidPath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Whether `name` is a node name ZooKeeper accepts as one path segment.
fn check_name(name: &str) -> std::result::Result<(), String> {
    match name {
        "" => Err("empty node name".to_owned()),
        "." | ".." => Err("relative segments ('.' and '..') are not allowed".to_owned()),
        _ if name.contains('/') => Err(format!("{name:?} holds '/'")),
        _ => curator_framework::paths::validate(&format!("/{name}")).map_err(|error| match error {
            Error::InvalidPath { reason, .. } => reason,
            other => other.to_string(),
        }),
    }
}

/// A value that names a node: what fills a parameter of a [`ZPath`] (Curator's `NodeName`).
/// Text as it is; integers in decimal. Implement it for your identifiers.
///
/// ```
/// use curator_modeled::{NodeName, ZPath};
///
/// struct UserId(u64);
/// impl NodeName for UserId {
///     fn node_name(&self) -> String { format!("user-{}", self.0) }
/// }
/// let path = ZPath::parse("/users/{id}")?.resolve([UserId(7)])?;
/// assert_eq!(path.full_path()?, "/users/user-7");
/// # Ok::<(), curator_framework::Error>(())
/// ```
pub trait NodeName {
    /// The node name for this value.
    fn node_name(&self) -> String;
}

impl NodeName for str {
    fn node_name(&self) -> String {
        self.to_owned()
    }
}

impl NodeName for String {
    fn node_name(&self) -> String {
        self.clone()
    }
}

impl<N: NodeName + ?Sized> NodeName for &N {
    fn node_name(&self) -> String {
        (**self).node_name()
    }
}

macro_rules! integer_names {
    ($($t:ty),*) => {$(
        impl NodeName for $t {
            fn node_name(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
integer_names!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

/// The values that fill a [`ZPath`]'s parameters: tuples of up to six [`NodeName`]s (a fixed
/// number, checked by [`TypedZPath`]), or arrays, slices and vectors of one.
pub trait PathParams {
    /// How many values every value of this type holds, when fixed (tuples and arrays).
    fn arity() -> Option<usize>;

    /// The node names, in order.
    fn into_names(self) -> Vec<String>;
}

impl<N: NodeName> PathParams for Vec<N> {
    fn arity() -> Option<usize> {
        None
    }

    fn into_names(self) -> Vec<String> {
        self.iter().map(NodeName::node_name).collect()
    }
}

impl<N: NodeName> PathParams for &[N] {
    fn arity() -> Option<usize> {
        None
    }

    fn into_names(self) -> Vec<String> {
        self.iter().map(NodeName::node_name).collect()
    }
}

impl<N: NodeName, const K: usize> PathParams for [N; K] {
    fn arity() -> Option<usize> {
        Some(K)
    }

    fn into_names(self) -> Vec<String> {
        self.iter().map(NodeName::node_name).collect()
    }
}

macro_rules! tuple_params {
    ($n:expr; $($t:ident $v:ident),+) => {
        impl<$($t: NodeName),+> PathParams for ($($t,)+) {
            fn arity() -> Option<usize> {
                Some($n)
            }

            fn into_names(self) -> Vec<String> {
                let ($($v,)+) = self;
                vec![$($v.node_name()),+]
            }
        }
    };
}
tuple_params!(1; A a);
tuple_params!(2; A a, B b);
tuple_params!(3; A a, B b, C c);
tuple_params!(4; A a, B b, C c, D d);
tuple_params!(5; A a, B b, C c, D d, E e);
tuple_params!(6; A a, B b, C c, D d, E e, F f);

/// A path template whose parameter values have fixed types `P` (a tuple): resolving it takes
/// exactly one value of each type, checked by the compiler (Curator's `TypedZPath1…10`).
///
/// ```
/// use curator_modeled::{TypedZPath, ZPath};
///
/// let users: TypedZPath<(String, u64)> = ZPath::parse("/orgs/{org}/users/{id}")?.typed()?;
/// let path = users.resolve(("acme".to_owned(), 42))?;
/// assert_eq!(path.full_path()?, "/orgs/acme/users/42");
/// // users.resolve((42, "acme")) does not compile.
/// assert!(ZPath::parse("/orgs/{org}")?.typed::<(String, u64)>().is_err());
/// # Ok::<(), curator_framework::Error>(())
/// ```
pub struct TypedZPath<P> {
    template: ZPath,
    _params: PhantomData<fn(P)>,
}

impl<P> Clone for TypedZPath<P> {
    fn clone(&self) -> Self {
        TypedZPath {
            template: self.template.clone(),
            _params: PhantomData,
        }
    }
}

impl<P> fmt::Debug for TypedZPath<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypedZPath({})", self.template)
    }
}

impl<P: PathParams> TypedZPath<P> {
    fn new(template: ZPath) -> Result<Self> {
        let parameters = template.parameters().len();
        if P::arity().is_some_and(|arity| arity != parameters) {
            let arity = P::arity().unwrap_or_default();
            return Err(Error::InvalidArgument(format!(
                "{template} has {parameters} parameter(s); the typed path takes {arity}"
            )));
        }
        Ok(TypedZPath {
            template,
            _params: PhantomData,
        })
    }

    /// The template.
    pub fn template(&self) -> &ZPath {
        &self.template
    }

    /// The path with `values` filled in.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when a value is not a node name.
    pub fn resolve(&self, values: P) -> Result<ZPath> {
        self.template.resolve(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        for text in ["/", "/a", "/a/{b}/c", "/{}", "/x/{id}"] {
            assert_eq!(ZPath::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "a", "/a/", "//a", "/a//b", "/./a", "/a/..", "/{a}}"] {
            assert!(
                matches!(ZPath::parse(bad), Err(Error::InvalidPath { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn matching_and_prefixes() {
        let template = ZPath::parse("/a/{x}/b/{y}").unwrap();
        assert!(template.matches("/a/1/b/2"));
        assert!(!template.matches("/a/1/b"));
        assert!(!template.matches("/a/1/b/2/3"));
        assert!(!template.matches("/a/1/c/2"));
        assert!(!template.matches("/a//b/2"));
        assert_eq!(template.resolved_prefix().to_string(), "/a");
        assert_eq!(
            template
                .resolve(["p"])
                .unwrap()
                .resolved_prefix()
                .to_string(),
            "/a/p/b"
        );
        assert!(ZPath::root().matches("/"));
        assert_eq!(template.parent().unwrap().to_string(), "/a/{x}/b");
        assert!(ZPath::root().parent().is_none());
        assert_eq!(ZPath::root().schema_pattern(), "^/$");
    }

    #[test]
    fn bad_values_are_refused() {
        let template = ZPath::parse("/a/{x}").unwrap();
        for bad in ["", ".", "..", "a/b"] {
            assert!(template.resolve([bad]).is_err(), "{bad:?}");
        }
        assert!(template.resolve(Vec::<String>::new()).unwrap() == template);
        assert!(ZPath::root().at("").is_err());
    }
}

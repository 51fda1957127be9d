//! [`Violation`]: which rule of a schema an operation broke. Beside [`Error`](crate::Error),
//! which carries it, so the error type depends on no feature (schemas are one).

use std::fmt;

/// Which rule of a schema an operation broke; carried by [`Error::SchemaViolation`](crate::Error::SchemaViolation). The
/// messages are Curator's.
///
/// ```
/// use curator_framework::schema::Violation;
/// assert_eq!(Violation::CannotBeDeleted.to_string(), "Cannot be deleted");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Violation {
    /// An ephemeral create where the schema says `ephemeral: cannot`.
    CannotBeEphemeral,
    /// A non-ephemeral create where the schema says `ephemeral: must`.
    MustBeEphemeral,
    /// A sequential create where the schema says `sequential: cannot`.
    CannotBeSequential,
    /// A non-sequential create where the schema says `sequential: must`.
    MustBeSequential,
    /// A watched read or `add_watch` where the schema says `watched: cannot`.
    CannotBeWatched,
    /// An unwatched read where the schema says `watched: must`.
    MustBeWatched,
    /// A delete where the schema says `canBeDeleted: false`.
    CannotBeDeleted,
    /// The schema's data validator refused the data of a create or `set_data`.
    InvalidData,
    /// The schema's data validator refused the ACL of a create or `set_acl`
    /// (`DataValidator::is_valid_acl`). Curator reports this as "Data is not valid".
    InvalidAcl,
    /// A strict set has no schema for the path.
    NoSchema,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Violation::CannotBeEphemeral => "Cannot be ephemeral",
            Violation::MustBeEphemeral => "Must be ephemeral",
            Violation::CannotBeSequential => "Cannot be sequential",
            Violation::MustBeSequential => "Must be sequential",
            Violation::CannotBeWatched => "Cannot be watched",
            Violation::MustBeWatched => "Must be watched",
            Violation::CannotBeDeleted => "Cannot be deleted",
            Violation::InvalidData => "Data is not valid",
            Violation::InvalidAcl => "ACL is not valid",
            Violation::NoSchema => "No schema found",
        })
    }
}

//! ACLs as a ZooKeeper server with its default providers checks them: the `world`, `auth`,
//! `digest` and `ip` schemes, and a `super` identity that passes every check.

use std::net::IpAddr;

use base64::Engine as _;
use curator_wire::proto::{Acl, ErrorCode, Id, Perms};

/// The `digest` scheme's id for `user:password`: `user:base64(sha1("user:password"))`, what a
/// client's `addAuth("digest", "user:password")` gives its connection and what a `digest` ACL
/// entry names.
///
/// ```
/// use curator_zkmodel::acl::digest;
///
/// // The value ZooKeeper's own DigestAuthenticationProvider prints for "super:test".
/// assert_eq!(digest("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
/// ```
pub fn digest(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or_default();
    let hash = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
        user_password.as_bytes(),
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(hash.as_ref());
    format!("{user}:{encoded}")
}

/// The user name a scheme's id stands for, as whoAmI reports it: the part before `:` for
/// `digest`, the id itself for `ip`, nothing for `super`.
pub(crate) fn user_name(id: &Id) -> String {
    match id.scheme.as_str() {
        "digest" => id.id.split(':').next().unwrap_or_default().to_owned(),
        "super" => String::new(),
        _ => id.id.clone(),
    }
}

/// The identities an auth packet adds to a connection, or `None` when the server refuses it
/// (an unknown scheme): it then answers `AuthFailed` and closes the connection.
pub(crate) fn authenticate(
    scheme: &str,
    auth: &[u8],
    peer: &str,
    super_digest: Option<&str>,
) -> Option<Vec<Id>> {
    match scheme {
        "digest" => {
            let id = digest(&String::from_utf8_lossy(auth));
            let mut ids = Vec::new();
            if super_digest == Some(id.as_str()) {
                ids.push(Id::new("super", ""));
            }
            ids.push(Id::new("digest", id));
            Some(ids)
        }
        "ip" => Some(vec![Id::new("ip", peer)]),
        _ => None,
    }
}

/// Checks an ACL given to create or setACL and expands `auth` entries into the requester's
/// authenticated identities (`fixupACL`): duplicates are dropped, an empty list, an unknown
/// scheme, `world` with an id other than `anyone`, a malformed `digest` or `ip` id, or `auth`
/// without an authenticated identity is `InvalidACL`.
/// Adds an identity to a connection's (once), keeping them in the order a ZooKeeper server
/// holds them: its connections keep identities in a `ConcurrentHashMap`'s key set, so whoAmI
/// lists them, and an `auth` ACL expands to them, in that map's iteration order. The order is
/// computed as the map does it (by `Id.hashCode()`, jute's `37 * (37 * 17 + scheme) + id` over
/// Java string hashes, spread and masked to its 16-bin table, insertion order within a bin), so
/// it is exact for up to 12 identities (the map then grows, which the model does not follow).
pub(crate) fn add_identity(auth: &mut Vec<Id>, id: Id) {
    if auth.contains(&id) {
        return;
    }
    auth.push(id);
    // A stable sort: within a bin, insertion order.
    auth.sort_by_key(java_bin);
}

/// The bin of a 16-bin `ConcurrentHashMap` an `Id` falls in.
fn java_bin(id: &Id) -> u32 {
    fn string_hash(s: &str) -> i32 {
        s.encode_utf16().fold(0i32, |hash, unit| {
            hash.wrapping_mul(31).wrapping_add(i32::from(unit))
        })
    }
    let hash = 17i32
        .wrapping_mul(37)
        .wrapping_add(string_hash(&id.scheme))
        .wrapping_mul(37)
        .wrapping_add(string_hash(&id.id)) as u32;
    ((hash ^ (hash >> 16)) & 0x7fff_ffff) & 15
}

pub(crate) fn fixup(acls: &[Acl], auth: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::new();
    for acl in acls {
        if !unique.contains(&acl) {
            unique.push(acl);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut fixed = Vec::new();
    for acl in unique {
        let id = &acl.id;
        if id.scheme == "world" && id.id == "anyone" {
            fixed.push(acl.clone());
        } else if id.scheme == "auth" {
            // Only providers whose identities are "authenticated" count: digest (and super,
            // which has no provider and is skipped); ip is not.
            let mut any = false;
            for who in auth.iter().filter(|who| who.scheme == "digest") {
                any = true;
                fixed.push(Acl {
                    perms: acl.perms,
                    id: who.clone(),
                });
            }
            if !any {
                return Err(ErrorCode::InvalidAcl);
            }
        } else if valid_id(id) {
            fixed.push(acl.clone());
        } else {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(fixed)
}

/// Whether a provider of the scheme exists and accepts the id.
fn valid_id(id: &Id) -> bool {
    match id.scheme.as_str() {
        "digest" => id.id.split(':').count() == 2,
        "ip" => parse_ip_pattern(&id.id).is_some(),
        _ => false,
    }
}

/// Whether the identities `auth` may do `perm` (any of its bits) on a node with `acl`
/// (`ZooKeeperServer.checkACL`). An empty ACL lets everyone in; a `super` identity passes.
pub(crate) fn allows(acl: &[Acl], perm: Perms, auth: &[Id]) -> bool {
    if acl.is_empty() || auth.iter().any(|id| id.scheme == "super") {
        return true;
    }
    acl.iter()
        .filter(|entry| entry.perms.bits() & perm.bits() != 0)
        .any(|entry| {
            let id = &entry.id;
            if id.scheme == "world" && id.id == "anyone" {
                return true;
            }
            auth.iter()
                .filter(|who| who.scheme == id.scheme)
                .any(|who| match id.scheme.as_str() {
                    "digest" => who.id == id.id,
                    "ip" => ip_matches(&id.id, &who.id),
                    _ => false,
                })
        })
}

/// `Ok(())` when allowed, `NoAuth` otherwise.
pub(crate) fn check(acl: &[Acl], perm: Perms, auth: &[Id]) -> Result<(), ErrorCode> {
    if allows(acl, perm, auth) {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

/// getACL's answer to a reader without ADMIN: digest ids with their hash replaced by `x`.
pub(crate) fn redact(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|entry| {
            if entry.id.scheme == "digest" {
                let user = entry.id.id.split(':').next().unwrap_or_default();
                Acl {
                    perms: entry.perms,
                    id: Id::new("digest", format!("{user}:x")),
                }
            } else {
                entry.clone()
            }
        })
        .collect()
}

/// An `ip` ACL id: an address, optionally with a prefix length.
fn parse_ip_pattern(pattern: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match pattern.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits.parse::<u32>().ok()?)),
        None => (pattern, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((addr, bits))
}

fn ip_matches(pattern: &str, client: &str) -> bool {
    let (Some((network, bits)), Ok(client)) = (parse_ip_pattern(pattern), client.parse::<IpAddr>())
    else {
        return false;
    };
    match (network, client) {
        (IpAddr::V4(network), IpAddr::V4(client)) => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(network) & mask == u32::from(client) & mask
        }
        (IpAddr::V6(network), IpAddr::V6(client)) => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(network) & mask == u128::from(client) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(perms: Perms, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id::new(scheme, id),
        }
    }

    #[test]
    fn identities_are_kept_in_the_servers_hash_order() {
        // The order of a Java `ConcurrentHashMap` key set of these three ids (printed by a
        // JVM with ZooKeeper's `Id`), whatever order they were added in; the conformance test
        // found ZooKeeper 3.9.3 answering whoAmI with digest:u2 before ip:127.0.0.1.
        let ip = Id::new("ip", "127.0.0.1");
        let u1 = Id::new("digest", digest("u1:p1"));
        let u2 = Id::new("digest", digest("u2:p2"));
        let mut auth = Vec::new();
        for id in [ip.clone(), u1.clone(), u2.clone(), u1.clone()] {
            add_identity(&mut auth, id);
        }
        assert_eq!(auth, [u2, u1, ip.clone()]);
        assert_eq!(java_bin(&ip), 12);
    }

    #[test]
    fn checks_follow_the_schemes() {
        let alice = Id::new("digest", digest("alice:secret"));
        let ip = Id::new("ip", "127.0.0.1");
        let acl = vec![entry(Perms::READ, "digest", &alice.id)];
        assert!(allows(&acl, Perms::READ, &[ip.clone(), alice.clone()]));
        assert!(!allows(&acl, Perms::WRITE, &[ip.clone(), alice.clone()]));
        assert!(!allows(&acl, Perms::READ, std::slice::from_ref(&ip)));
        assert!(allows(&acl, Perms::WRITE, &[Id::new("super", "")]));
        assert!(allows(&[], Perms::ADMIN, &[]));
        let local = vec![entry(Perms::ALL, "ip", "127.0.0.0/8")];
        assert!(allows(&local, Perms::READ, std::slice::from_ref(&ip)));
        assert!(!allows(&local, Perms::READ, &[Id::new("ip", "10.0.0.1")]));
    }

    #[test]
    fn fixup_expands_auth_and_refuses_what_the_server_refuses() {
        let alice = Id::new("digest", digest("alice:secret"));
        let ip = Id::new("ip", "127.0.0.1");
        let fixed = fixup(
            &[entry(Perms::ALL, "auth", "")],
            &[ip.clone(), alice.clone()],
        )
        .unwrap();
        assert_eq!(
            fixed,
            vec![Acl {
                perms: Perms::ALL,
                id: alice
            }]
        );
        assert_eq!(
            fixup(&[entry(Perms::ALL, "auth", "")], &[ip]),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(fixup(&[], &[]), Err(ErrorCode::InvalidAcl));
        for bad in [
            entry(Perms::ALL, "world", "someone"),
            entry(Perms::ALL, "digest", "no-hash"),
            entry(Perms::ALL, "ip", "not-an-address"),
            entry(Perms::ALL, "sasl", "alice"),
        ] {
            assert_eq!(
                fixup(std::slice::from_ref(&bad), &[]),
                Err(ErrorCode::InvalidAcl),
                "{bad:?}"
            );
        }
        let open = Acl::open_unsafe();
        let twice = [open[0].clone(), open[0].clone()];
        assert_eq!(fixup(&twice, &[]), Ok(open));
    }
}

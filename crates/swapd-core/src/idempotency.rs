//! `Idempotency-Key` semantics (docs/authentication.md): scope (principal, key); a fingerprint of
//! the request; replay of the stored response; 409 while in flight; 422 when the key is reused for
//! another request; kept 24 h. The decision is pure; stores apply it atomically.

use sha2::{Digest, Sha256};

pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 3_600_000;
/// How long an in-flight execution holds its key before another attempt may take over.
pub const LEASE_MS: i64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("send one Idempotency-Key header on every POST and PATCH (a UUID is a good choice)")]
    Missing,
    #[error(
        "the Idempotency-Key header must appear once and match ^[A-Za-z0-9._:-]{{8,255}}$ (optionally in double quotes)"
    )]
    Invalid,
}

/// What [`parse_key`] takes, as the OpenAPI documents state it.
pub const KEY_PATTERN: &str = r#"^([A-Za-z0-9._:-]{8,255}|"[A-Za-z0-9._:-]{8,255}")$"#;

/// Parses the `Idempotency-Key` header values: exactly one value, an optional pair of double
/// quotes (RFC 8941 string), then `^[A-Za-z0-9._:-]{8,255}$`.
pub fn parse_key<'a>(mut values: impl Iterator<Item = &'a [u8]>) -> Result<String, KeyError> {
    let first = values.next().ok_or(KeyError::Missing)?;
    if values.next().is_some() {
        return Err(KeyError::Invalid);
    }
    let unquoted = first
        .strip_prefix(b"\"")
        .and_then(|v| v.strip_suffix(b"\""))
        .unwrap_or(first);
    let valid = (8..=255).contains(&unquoted.len())
        && unquoted
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if !valid {
        return Err(KeyError::Invalid);
    }
    Ok(String::from_utf8(unquoted.to_vec()).expect("checked ASCII"))
}

/// SHA-256 over method, path as sent, canonical query and the canonical JSON of the parsed
/// body (sorted keys, no whitespace), so a retry that re-serializes the same body still matches.
pub fn fingerprint(
    method: &str,
    path: &str,
    canonical_query: &str,
    body: Option<&serde_json::Value>,
) -> String {
    let mut hasher = Sha256::new();
    for part in [method, path, canonical_query] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    if let Some(body) = body {
        // serde_json's Map is a BTreeMap here (no `preserve_order`), so keys come out sorted.
        hasher.update(serde_json::to_vec(body).expect("a Value always serializes"));
    }
    hex::encode(hasher.finalize())
}

/// A stored outcome: replayed byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// What a store holds for one (principal, key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub fingerprint: String,
    pub expires_at_ms: i64,
    pub state: RecordState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    InFlight {
        lease_token: String,
        lease_until_ms: i64,
    },
    Done(StoredResponse),
}

/// What the caller must do with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// Execute it; finish or release with this token.
    Execute { lease_token: String },
    /// Answer with the stored response without executing.
    Replay(StoredResponse),
    /// Another attempt with this key is executing; retry after this many seconds.
    InFlight { retry_after_secs: u64 },
    /// The key was used for a different request.
    Mismatch,
}

/// How a store must change its record for a new attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Write this record (insert, or overwrite an expired or abandoned one), then execute.
    Claim(Record),
    /// Leave the record alone and answer.
    Answer(Begin),
}

pub fn plan(existing: Option<&Record>, fingerprint: &str, lease_token: &str, now_ms: i64) -> Plan {
    let claim = || {
        Plan::Claim(Record {
            fingerprint: fingerprint.to_owned(),
            expires_at_ms: now_ms + IDEMPOTENCY_TTL_MS,
            state: RecordState::InFlight {
                lease_token: lease_token.to_owned(),
                lease_until_ms: now_ms + LEASE_MS,
            },
        })
    };
    let Some(record) = existing.filter(|r| r.expires_at_ms > now_ms) else {
        return claim();
    };
    if record.fingerprint != fingerprint {
        return Plan::Answer(Begin::Mismatch);
    }
    match &record.state {
        RecordState::Done(response) => Plan::Answer(Begin::Replay(response.clone())),
        RecordState::InFlight { lease_until_ms, .. } if *lease_until_ms > now_ms => {
            Plan::Answer(Begin::InFlight {
                retry_after_secs: expected_wait_secs(*lease_until_ms, now_ms),
            })
        }
        // The attempt holding the lease died; this one takes over.
        RecordState::InFlight { .. } => claim(),
    }
}

/// What a request that takes its key only when its write commits must answer instead of
/// executing: `None` when it may execute (no record, or an expired or abandoned one).
pub fn answer(existing: Option<&Record>, fingerprint: &str, now_ms: i64) -> Option<Begin> {
    match plan(existing, fingerprint, "", now_ms) {
        Plan::Answer(answer) => Some(answer),
        Plan::Claim(_) => None,
    }
}

/// How long a retry should wait for the attempt holding the lease until `lease_until_ms`: about
/// as long as it has run so far (a request usually finishes within a second or two), at least
/// a second and at most what is left of its lease, which only bounds an attempt that died.
fn expected_wait_secs(lease_until_ms: i64, now_ms: i64) -> u64 {
    let running_ms = now_ms - (lease_until_ms - LEASE_MS);
    let left_ms = lease_until_ms - now_ms;
    let wait_ms = running_ms.clamp(1_000, left_ms.max(1_000));
    u64::try_from((wait_ms + 999) / 1000).unwrap_or(1)
}

/// Which outcomes are kept for replay: those produced once execution began. Validation (400),
/// authentication (401/403), in-flight (409 with this meaning), rate limits (429) and server
/// errors (5xx, whose writes rolled back) are not stored, so a corrected retry executes.
pub fn is_storable(status: u16) -> bool {
    matches!(status, 200..=299 | 404 | 409 | 410 | 422)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(values: &[&str]) -> Result<String, KeyError> {
        parse_key(values.iter().map(|v| v.as_bytes()))
    }

    #[test]
    fn keys_are_parsed_strictly() {
        assert_eq!(key(&[]), Err(KeyError::Missing));
        assert_eq!(key(&["abcd-1234"]).unwrap(), "abcd-1234");
        assert_eq!(key(&["\"abcd-1234\""]).unwrap(), "abcd-1234");
        for bad in [
            "",
            "short",
            &"a".repeat(256),
            "abc\u{7}defgh",
            "abcd efgh",
            "\"abcdefgh",
        ] {
            assert_eq!(key(&[bad]), Err(KeyError::Invalid), "{bad:?}");
        }
        assert_eq!(key(&["abcdefgh", "abcdefgh"]), Err(KeyError::Invalid));
        assert!(key(&[&"a".repeat(255)]).is_ok());
    }

    #[test]
    fn fingerprints_ignore_formatting_but_not_content_or_route() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":[1,2]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str("{ \"a\" : [1, 2],\n \"b\": 1 }").unwrap();
        let c: serde_json::Value = serde_json::from_str(r#"{"b":2,"a":[1,2]}"#).unwrap();
        let f = |body: &serde_json::Value, route: &str| fingerprint("POST", route, "", Some(body));
        assert_eq!(f(&a, "/api/v3/orders"), f(&b, "/api/v3/orders"));
        assert_ne!(f(&a, "/api/v3/orders"), f(&c, "/api/v3/orders"));
        assert_ne!(f(&a, "/api/v3/orders"), f(&a, "/api/v3/quotes"));
    }

    #[test]
    fn plans_cover_every_case() {
        let now = 1_000_000;
        let claim = plan(None, "fp", "t1", now);
        let Plan::Claim(record) = claim else { panic!() };
        assert_eq!(record.expires_at_ms, now + IDEMPOTENCY_TTL_MS);

        assert_eq!(
            plan(Some(&record), "other", "t2", now),
            Plan::Answer(Begin::Mismatch)
        );
        // The winner has just started: retry in a second, not after its whole lease.
        assert_eq!(
            plan(Some(&record), "fp", "t2", now + 1),
            Plan::Answer(Begin::InFlight {
                retry_after_secs: 1
            })
        );
        // It has run 5 s: about as long again.
        assert_eq!(
            plan(Some(&record), "fp", "t2", now + 5_000),
            Plan::Answer(Begin::InFlight {
                retry_after_secs: 5
            })
        );
        // Near the end of its lease: what is left of it.
        assert_eq!(
            plan(Some(&record), "fp", "t2", now + LEASE_MS - 2_500),
            Plan::Answer(Begin::InFlight {
                retry_after_secs: 3
            })
        );
        assert!(matches!(
            plan(Some(&record), "fp", "t2", now + LEASE_MS),
            Plan::Claim(_)
        ));

        let done = Record {
            state: RecordState::Done(StoredResponse {
                status: 201,
                body: b"{}".to_vec(),
            }),
            ..record.clone()
        };
        assert!(matches!(
            plan(Some(&done), "fp", "t2", now + 5),
            Plan::Answer(Begin::Replay(_))
        ));
        let later = now + IDEMPOTENCY_TTL_MS;
        assert!(matches!(
            plan(Some(&done), "other", "t2", later),
            Plan::Claim(_)
        ));
    }

    #[test]
    fn only_outcomes_after_execution_began_are_stored() {
        for status in [200, 201, 202, 404, 409, 410, 422] {
            assert!(is_storable(status), "{status}");
        }
        for status in [400, 401, 403, 413, 415, 429, 500, 502, 503] {
            assert!(!is_storable(status), "{status}");
        }
    }
}

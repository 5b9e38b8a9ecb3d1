//! Prefixed identifiers on the wire: a prefix followed by 32 lowercase hex digits.

/// The prefix of API key ids (`X-API-KEY`).
pub const API_KEY_PREFIX: &str = "key_";

/// The JSON Schema pattern of [`is_valid_id`].
pub fn id_pattern(prefix: &str) -> String {
    format!("^{prefix}[0-9a-f]{{32}}$")
}

/// True when `id` is `prefix` followed by exactly 32 lowercase hex digits.
pub fn is_valid_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == 32 && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

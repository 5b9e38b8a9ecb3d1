//! Business API request signing (docs/authentication.md): the canonical query, the six-line string
//! to sign, and HMAC-SHA256 over it with the key's secret. Shared by the server (verification) and
//! the SDK (signing), so both compute exactly the same bytes. Part of the wire contract, hence here
//! rather than in the domain crate.

use hmac::{Hmac, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::Sha256;

/// Seconds a request timestamp may differ from server time, either way.
pub const TIMESTAMP_TOLERANCE_SECS: i64 = 300;
/// How long a nonce is remembered: longer than the whole ±300 s window, plus margin.
pub const NONCE_TTL_SECS: i64 = 900;

/// Bytes that stay literal in the canonical query: RFC 3986 unreserved characters.
const UNRESERVED_COMPLEMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("the query has an invalid percent-escape")]
    BadEscape,
    #[error("the query does not decode to UTF-8")]
    NotUtf8,
}

/// The canonical form of a raw query string (without `?`): split on `&`, drop empty pieces,
/// split each at the first `=`, percent-decode (RFC 3986; `+` stays a plus), re-encode every byte
/// outside `A-Za-z0-9-_.~` as uppercase `%XX`, sort by name then value, join with `&`.
pub fn canonical_query(raw: &str) -> Result<String, QueryError> {
    let mut pairs = query_pairs(raw)?
        .into_iter()
        .map(|(name, value)| (encode_component(&name), encode_component(&value)))
        .collect::<Vec<_>>();
    pairs.sort();
    Ok(pairs
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&"))
}

/// The decoded `(name, value)` pairs of a raw query, in order, with the same decoding rules as
/// [`canonical_query`]; handlers read parameters through this so they see exactly what was signed.
pub fn query_pairs(raw: &str) -> Result<Vec<(String, String)>, QueryError> {
    raw.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

fn decode(text: &str) -> Result<String, QueryError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.len() > i + 2
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit();
            if !ok {
                return Err(QueryError::BadEscape);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| QueryError::NotUtf8)
}

/// Percent-encodes every byte outside `A-Za-z0-9-_.~` as uppercase `%XX` (one query name or
/// value in canonical form).
pub fn encode_component(text: &str) -> String {
    utf8_percent_encode(text, UNRESERVED_COMPLEMENT).to_string()
}

/// True when a request path is already in the one form that is signed and routed: starts with
/// `/`, no empty, `.` or `..` segments, no trailing slash (except `/` itself), no encoded `/` or
/// `\`, escapes uppercase, and only `%XX` for bytes outside the RFC 3986 path characters.
pub fn is_canonical_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    rest.split('/').all(is_canonical_segment)
}

fn is_canonical_segment(segment: &str) -> bool {
    if segment.is_empty() || segment == "." || segment == ".." {
        return false;
    }
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |c: u8| c.is_ascii_digit() || (b'A'..=b'F').contains(&c);
            if bytes.len() <= i + 2 || !hex(bytes[i + 1]) || !hex(bytes[i + 2]) {
                return false;
            }
            let value = u8::from_str_radix(&segment[i + 1..i + 3], 16).unwrap_or(0);
            // Encoded separators or escapes of characters that need none are not canonical.
            if matches!(value, b'/' | b'\\') || is_path_char(value) {
                return false;
            }
            decoded.push(value);
            i += 3;
        } else if is_path_char(b) {
            decoded.push(b);
            i += 1;
        } else {
            return false;
        }
    }
    !matches!(decoded.as_slice(), b"." | b"..") && std::str::from_utf8(&decoded).is_ok()
}

fn is_path_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

/// `METHOD\nPATH\nCANONICAL_QUERY\nTIMESTAMP\nNONCE\nBODY`, no trailing newline.
pub fn string_to_sign(
    method: &str,
    path: &str,
    canonical_query: &str,
    timestamp: &str,
    nonce: &str,
    body: &[u8],
) -> Vec<u8> {
    let head = format!("{method}\n{path}\n{canonical_query}\n{timestamp}\n{nonce}\n");
    let mut message = Vec::with_capacity(head.len() + body.len());
    message.extend_from_slice(head.as_bytes());
    message.extend_from_slice(body);
    message
}

/// Lowercase hex HMAC-SHA256 of `message` under `secret`.
pub fn sign(secret: &[u8], message: &[u8]) -> String {
    hex::encode(Verifier::new(secret).mac(message).finalize().into_bytes())
}

/// Constant-time check of a signature; anything but 64 lowercase hex digits fails.
pub fn verify(secret: &[u8], message: &[u8], signature_hex: &str) -> bool {
    Verifier::new(secret).verify(message, signature_hex)
}

/// A secret made ready to verify many signatures: the HMAC key schedule (the secret hashed
/// and its padded blocks absorbed) is done once, not on every request.
#[derive(Clone)]
pub struct Verifier(Hmac<Sha256>);

impl Verifier {
    pub fn new(secret: &[u8]) -> Self {
        Self(Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts keys of any length"))
    }

    /// [`verify`] with this verifier's secret.
    pub fn verify(&self, message: &[u8], signature_hex: &str) -> bool {
        let mut expected = [0u8; 32];
        if !is_signature(signature_hex)
            || hex::decode_to_slice(signature_hex, &mut expected).is_err()
        {
            return false;
        }
        self.mac(message).verify_slice(&expected).is_ok()
    }

    /// The HMAC of `message` under this secret, not yet finalized.
    fn mac(&self, message: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        mac.update(message);
        mac
    }
}

/// `X-API-SIGN`: exactly 64 lowercase hex digits.
pub fn is_signature(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `X-API-NONCE`: `^[A-Za-z0-9._:-]{8,200}$`.
pub fn is_nonce(text: &str) -> bool {
    (8..=200).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// `X-API-TIMESTAMP`: Unix seconds as 1 to 13 digits, nothing else. (Thirteen digits are
/// accepted so that a millisecond timestamp is refused by the time window, with a hint, rather
/// than as malformed.)
pub fn parse_timestamp(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 13 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `X-API-KEY`: `key_` + 32 lowercase hex digits.
pub fn is_key_id(text: &str) -> bool {
    crate::ids::is_valid_id(text, crate::ids::API_KEY_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn canonical_query_follows_the_rules() {
        let cases = [
            ("", ""),
            ("b=2&a=1", "a=1&b=2"),
            ("q=a%20b", "q=a%20b"),
            ("q=a+b", "q=a%2Bb"),
            ("x=%2f", "x=%2F"),
            ("a=2&a=1", "a=1&a=2"),
            ("flag", "flag="),
            ("&&a=1&", "a=1"),
            ("k=v=w", "k=v%3Dw"),
            ("n%61me=%7E~", "name=~~"),
            ("e=%E2%82%AC", "e=%E2%82%AC"),
            ("s=caf\u{e9}", "s=caf%C3%A9"),
        ];
        for (raw, canonical) in cases {
            assert_eq!(canonical_query(raw).unwrap(), canonical, "{raw}");
        }
        assert_eq!(canonical_query("x=%zz"), Err(QueryError::BadEscape));
        assert_eq!(canonical_query("x=%2"), Err(QueryError::BadEscape));
        assert_eq!(canonical_query("x=%E2%82"), Err(QueryError::NotUtf8));
    }

    #[test]
    fn handlers_see_what_was_signed() {
        let pairs = query_pairs("q=a%20b&p=a+b&flag").unwrap();
        assert_eq!(
            pairs,
            [
                ("q".into(), "a b".into()),
                ("p".into(), "a+b".into()),
                ("flag".into(), String::new())
            ]
        );
    }

    #[test]
    fn paths_must_be_canonical() {
        for good in [
            "/",
            "/api/v3",
            "/api/v3/orders/ord_1",
            "/a/b%20c",
            "/a/%C3%A9",
            "/a:b@c",
        ] {
            assert!(is_canonical_path(good), "{good}");
        }
        for bad in [
            "",
            "api/v3",
            "//api/v3",
            "/api/v3/",
            "/api/../v3",
            "/api/./v3",
            "/api/%2e%2e/v3",
            "/api/%2E%2E",
            "/api%2Fv3",
            "/api%5Cv3",
            "/api/%2f",
            "/a/%41",
            "/a/%c3%a9",
            "/a/b c",
            "/a/%zz",
            "/a/%FF",
        ] {
            assert!(!is_canonical_path(bad), "{bad}");
        }
    }

    #[test]
    fn string_to_sign_has_six_lines_and_the_raw_body() {
        let message = string_to_sign(
            "POST",
            "/api/v3/orders",
            "",
            "1700000000",
            "nonce-123",
            b"{\"a\":1}\n",
        );
        assert_eq!(
            message,
            b"POST\n/api/v3/orders\n\n1700000000\nnonce-123\n{\"a\":1}\n"
        );
    }

    #[test]
    fn signatures_verify_only_with_the_same_secret_and_bytes() {
        let message = string_to_sign("GET", "/api/v3", "", "1700000000", "abcdefgh", b"");
        let signature = sign(b"sec_one", &message);
        assert!(is_signature(&signature));
        assert!(verify(b"sec_one", &message, &signature));
        assert!(!verify(b"sec_two", &message, &signature));
        let mut flipped = message.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(!verify(b"sec_one", &flipped, &signature));
        assert!(!verify(b"sec_one", &message, &signature.to_uppercase()));
    }

    /// The worked examples of docs/authentication.md (also reproduced there with openssl).
    #[test]
    fn documented_examples() {
        let secret = b"sec_9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let query = canonical_query("toCcy=ETH&fromCcy=BTC&amount=0.1").unwrap();
        assert_eq!(query, "amount=0.1&fromCcy=BTC&toCcy=ETH");
        let get = string_to_sign(
            "GET",
            "/api/v3/routes",
            &query,
            "1767225600",
            "7f3c9a2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f",
            b"",
        );
        assert_eq!(
            sign(secret, &get),
            "a3b20c3962deca6026c5d6a5b209c1cb42301e6d893806a112b77d023fdc50b7"
        );
        let body = br#"{"amount":"0.1","fromCcy":"BTC","toAddress":"0x52908400098527886E0F7030069857D2E4169EE7","toCcy":"ETH","type":"fixed"}"#;
        let post = string_to_sign(
            "POST",
            "/api/v3/orders",
            "",
            "1767225600",
            "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f",
            body,
        );
        assert_eq!(
            sign(secret, &post),
            "41de6a2e1cc9fdd9a5c9f95b96e4df01eafe51a6576a91f56c704bebb72ce43a"
        );
    }

    #[test]
    fn rfc4231_test_case_2() {
        // HMAC-SHA256 with key "Jefe" (RFC 4231 §4.3).
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn header_formats() {
        assert!(is_nonce("abcdefgh") && is_nonce(&"a".repeat(200)) && is_nonce("A.b_c:d-1"));
        for bad in [
            "abcdefg",
            &"a".repeat(201),
            "abc defgh",
            "abcd/efgh",
            "abcd%efgh",
            "abcdéfgh",
        ] {
            assert!(!is_nonce(bad), "{bad}");
        }
        assert_eq!(parse_timestamp("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_timestamp("1700000000000"), Some(1_700_000_000_000));
        for bad in [
            "",
            "+1700000000",
            "1700000000.5",
            "1.7e9",
            "-1",
            " 1700000000",
            "12345678901234",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
        assert!(
            !is_signature(&"a".repeat(63))
                && !is_signature(&"a".repeat(65))
                && !is_signature(&"g".repeat(64))
        );
    }

    fn query_piece() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                "[a-zA-Z0-9]{0,4}",
                Just("%20".to_owned()),
                Just("+".to_owned()),
                Just("%2f".to_owned()),
                Just("%E2%82%AC".to_owned()),
                Just("~".to_owned()),
                Just("=".to_owned()),
            ],
            0..4,
        )
        .prop_map(|parts| parts.concat())
    }

    /// Text near the wire format: query and header characters, escapes (some broken), and
    /// the odd multi-byte character.
    fn near_query() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("=".to_owned()),
                Just("&".to_owned()),
                Just("%".to_owned()),
                Just("%2".to_owned()),
                Just("%zz".to_owned()),
                Just("%C3%A9".to_owned()),
                Just("%FF".to_owned()),
                Just("+".to_owned()),
                Just("é".to_owned()),
                "[a-zA-Z0-9._~-]{0,4}",
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn the_request_parsers_take_any_input_without_panicking(raw in any::<String>(), near in near_query()) {
            for text in [raw.as_str(), near.as_str()] {
                if let Ok(once) = canonical_query(text) {
                    prop_assert_eq!(canonical_query(&once).unwrap(), once);
                }
                let _ = is_canonical_path(text);
                let _ = is_canonical_path(&format!("/api/v3/{text}"));
                let _ = is_signature(text);
                let _ = is_nonce(text);
                let _ = is_key_id(text);
                let _ = parse_timestamp(text);
            }
        }
    }

    proptest! {
        #[test]
        fn canonicalization_is_idempotent(pieces in proptest::collection::vec(query_piece(), 0..6)) {
            let raw = pieces.join("&");
            let once = canonical_query(&raw).unwrap();
            prop_assert_eq!(canonical_query(&once).unwrap(), once);
        }

        #[test]
        fn canonicalization_ignores_parameter_order(
            pieces in proptest::collection::vec(query_piece(), 0..6),
            seed in any::<u64>(),
        ) {
            let mut shuffled = pieces.clone();
            let len = shuffled.len().max(1) as u64;
            shuffled.rotate_left((seed % len) as usize);
            shuffled.reverse();
            prop_assert_eq!(
                canonical_query(&pieces.join("&")).unwrap(),
                canonical_query(&shuffled.join("&")).unwrap()
            );
        }
    }
}

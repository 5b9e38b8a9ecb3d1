//! Webhook signing and delivery rules, pure: Standard Webhooks signatures
//! (`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, space-separated when several
//! secrets are valid), `whsec_` secrets, the retry schedule, and which network addresses a
//! delivery may reach (research/reliability.md §1.5).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How a signing secret is shown: this prefix and the base64 of its bytes.
pub const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;

/// A new signing secret (256 random bits), as shown to the subscriber once.
pub fn new_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The key bytes of a `whsec_` secret; `None` when it is not one.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    (!key.is_empty()).then_some(key)
}

/// One `v1,<base64>` signature of a delivery attempt.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header value: one signature per valid key (during a rotation, the
/// new secret's first), space-separated.
pub fn signature_header(keys: &[&[u8]], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| signature(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Delays before attempts 2, 3, … (attempt 1 is immediate): about three days in all.
pub const RETRY_DELAYS_SECS: [i64; 9] = [
    5,
    5 * 60,
    30 * 60,
    2 * 3600,
    5 * 3600,
    10 * 3600,
    14 * 3600,
    20 * 3600,
    24 * 3600,
];

/// The most a receiver's `Retry-After` may push the next attempt back.
pub const MAX_RETRY_AFTER_SECS: i64 = 3600;

/// When attempt `failed_attempts + 1` is due after `failed_attempts` failures, `jitter` in
/// [-1, 1] spreading it by up to ±10 %; a receiver's `Retry-After` is honoured up to an hour.
/// `None`: the schedule is exhausted.
pub fn next_attempt_delay_ms(
    failed_attempts: usize,
    jitter: f64,
    retry_after_secs: Option<i64>,
) -> Option<i64> {
    let base = *RETRY_DELAYS_SECS.get(failed_attempts.checked_sub(1)?)? * 1000;
    // Jitter is a spread of a delay, not an amount of money: a float is fine here.
    let spread = (base as f64 * 0.1 * jitter.clamp(-1.0, 1.0)) as i64;
    let scheduled = base + spread;
    let asked = retry_after_secs.map_or(0, |s| s.clamp(0, MAX_RETRY_AFTER_SECS) * 1000);
    Some(scheduled.max(asked))
}

/// Whether a delivery may connect to `ip`: only globally routable unicast addresses, with
/// IPv4 embedded in IPv6 (mapped, NAT64, 6to4, Teredo) checked as IPv4.
pub fn is_deliverable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_global_v4(v4),
            None => is_global_v6(v6),
        },
    }
}

fn is_global_v4(ip: Ipv4Addr) -> bool {
    const BLOCKED: [(u32, u8); 15] = [
        (0x0000_0000, 8),  // 0.0.0.0/8
        (0x0a00_0000, 8),  // 10.0.0.0/8
        (0x6440_0000, 10), // 100.64.0.0/10
        (0x7f00_0000, 8),  // 127.0.0.0/8
        (0xa9fe_0000, 16), // 169.254.0.0/16
        (0xac10_0000, 12), // 172.16.0.0/12
        (0xc000_0000, 24), // 192.0.0.0/24
        (0xc000_0200, 24), // 192.0.2.0/24
        (0xc058_6300, 24), // 192.88.99.0/24
        (0xc0a8_0000, 16), // 192.168.0.0/16
        (0xc612_0000, 15), // 198.18.0.0/15
        (0xc633_6400, 24), // 198.51.100.0/24
        (0xcb00_7100, 24), // 203.0.113.0/24
        (0xe000_0000, 4),  // 224.0.0.0/4
        (0xf000_0000, 4),  // 240.0.0.0/4 (and broadcast)
    ];
    let bits = u32::from(ip);
    !BLOCKED
        .iter()
        .any(|&(net, len)| bits >> (32 - len) == net >> (32 - len))
}

fn is_global_v6(ip: Ipv6Addr) -> bool {
    const BLOCKED: [(u128, u8); 9] = [
        (0, 128),                                        // ::/128
        (1, 128),                                        // ::1/128
        (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64
        (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32
        (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7
        (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10
        (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10
        (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8
        (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 (local NAT64)
    ];
    let bits = u128::from(ip);
    !BLOCKED
        .iter()
        .any(|&(net, len)| bits >> (128 - len) == net >> (128 - len))
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:0:0/96`), NAT64
/// (`64:ff9b::/96`; the local-use `64:ff9b:1::/48` is blocked whole), 6to4 (`2002::/16`) or Teredo (`2001::/32`, XOR-ed).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from(bits as u32);
    let s = ip.segments();
    match (s[0], s[1]) {
        (0x0064, 0xff9b) if s[2..6] == [0, 0, 0, 0] => Some(low32),
        (0x2002, _) => Some(Ipv4Addr::from((bits >> 80) as u32)),
        (0x2001, 0x0000) => Some(Ipv4Addr::from(!(bits as u32))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_round_trip() {
        let secret = new_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(secret_key(&secret).unwrap().len(), SECRET_BYTES);
        assert_ne!(secret, new_secret());
        assert!(secret_key("whsec_").is_none());
        assert!(secret_key("sec_abc").is_none());
        assert!(secret_key("whsec_not base64!").is_none());
    }

    /// An off-the-shelf Standard Webhooks verifier accepts our signatures, alone and in a
    /// rotation list, and refuses a changed body.
    #[test]
    fn standard_webhooks_verifiers_accept_our_signatures() {
        let secret = new_secret();
        let old = new_secret();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let body = br#"{"id":"evt_1","type":"order.completed","sequence":7,"data":{}}"#;
        let keys = [secret_key(&secret).unwrap(), secret_key(&old).unwrap()];
        let header = signature_header(&[&keys[0], &keys[1]], "evt_1", now, body);
        assert_eq!(header.split(' ').count(), 2);
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "evt_1".parse().unwrap());
        headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
        headers.insert("webhook-signature", header.parse().unwrap());
        for secret in [&secret, &old] {
            let verifier = standardwebhooks::Webhook::new(secret).unwrap();
            verifier.verify(body, &headers).unwrap();
            assert!(verifier.verify(b"{}", &headers).is_err());
        }
        let stranger = standardwebhooks::Webhook::new(&new_secret()).unwrap();
        assert!(stranger.verify(body, &headers).is_err());
    }

    #[test]
    fn retries_span_about_three_days_with_bounded_jitter() {
        assert_eq!(
            next_attempt_delay_ms(0, 0.0, None),
            None,
            "the first attempt is immediate"
        );
        assert_eq!(next_attempt_delay_ms(1, 0.0, None), Some(5_000));
        assert_eq!(next_attempt_delay_ms(2, 1.0, None), Some(330_000));
        assert_eq!(next_attempt_delay_ms(2, -1.0, None), Some(270_000));
        assert_eq!(next_attempt_delay_ms(1, 0.0, Some(120)), Some(120_000));
        assert_eq!(
            next_attempt_delay_ms(1, 0.0, Some(86_400)),
            Some(3_600_000),
            "capped"
        );
        assert_eq!(next_attempt_delay_ms(10, 0.0, None), None, "exhausted");
        let total: i64 = RETRY_DELAYS_SECS.iter().sum();
        assert!((2 * 86_400..4 * 86_400).contains(&total), "{total}");
    }

    #[test]
    fn only_global_addresses_are_deliverable() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for blocked in [
            "127.0.0.1",
            "10.1.2.3",
            "172.31.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:0:0:0:0:0:80ff:fefe",
        ] {
            assert!(!is_deliverable(ip(blocked)), "{blocked} must be blocked");
        }
        for allowed in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::",
        ] {
            assert!(is_deliverable(ip(allowed)), "{allowed} must be allowed");
        }
    }
}

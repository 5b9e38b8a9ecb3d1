//! Where webhook deliveries may go (docs/webhooks.md, "Where deliveries may go"): a URL parsed
//! as browsers do and checked per policy, and which network addresses a delivery may reach.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The longest webhook URL a subscriber may register.
pub const MAX_URL_LEN: usize = 2_048;

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

/// Which destinations deliveries may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlPolicy {
    /// `https` on port 443 to global addresses only.
    Live,
    /// Also `http`, any port, and loopback addresses, so a local receiver works.
    Sandbox,
}

/// Why a webhook URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    #[error("url: {0}")]
    Invalid(String),
    #[error("url: only https is allowed")]
    Scheme,
    #[error("url: only port 443 is allowed")]
    Port,
    #[error("url: user names and passwords are not allowed in webhook URLs")]
    Credentials,
    #[error("url: {0} is not a public address")]
    Host(String),
    #[error("url: {0} does not resolve")]
    Unresolvable(String),
}

/// A checked destination: where to connect before the addresses are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub url: url::Url,
    /// The host name (or literal address) as written.
    pub host: String,
    pub port: u16,
    /// Set when the host is a literal address (no resolution).
    pub literal: Option<IpAddr>,
}

/// Checks the shape of a webhook URL under `policy`, parsed as browsers do (WHATWG: `127.1`,
/// `2130706433` and `0177.0.0.1` are IPv4 literals). Addresses are checked after resolution
/// with [`address_allowed`].
pub fn check_url(text: &str, policy: UrlPolicy) -> Result<Destination, UrlProblem> {
    if text.len() > MAX_URL_LEN {
        return Err(UrlProblem::Invalid(format!(
            "at most {MAX_URL_LEN} characters"
        )));
    }
    let url = url::Url::parse(text).map_err(|e| UrlProblem::Invalid(e.to_string()))?;
    match (url.scheme(), policy) {
        ("https", _) | ("http", UrlPolicy::Sandbox) => {}
        _ => return Err(UrlProblem::Scheme),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    if url.fragment().is_some() {
        return Err(UrlProblem::Invalid("fragments are not allowed".into()));
    }
    let (host, literal) = match url.host() {
        Some(url::Host::Domain(name)) => (name.to_owned(), None),
        Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
        None => return Err(UrlProblem::Invalid("no host".into())),
    };
    if let Some(ip) = literal
        && !address_allowed(ip, policy)
    {
        return Err(UrlProblem::Host(ip.to_string()));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| UrlProblem::Invalid("no port".into()))?;
    if policy == UrlPolicy::Live && port != 443 {
        return Err(UrlProblem::Port);
    }
    Ok(Destination {
        url,
        host,
        port,
        literal,
    })
}

/// Whether a delivery may connect to `ip` under `policy`.
pub fn address_allowed(ip: IpAddr, policy: UrlPolicy) -> bool {
    is_deliverable(ip) || (policy == UrlPolicy::Sandbox && is_loopback(ip))
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_as_browsers_do_and_checked_per_policy() {
        use UrlPolicy::{Live, Sandbox};
        let ok = check_url("https://hooks.example.com/swapd?x=1", Live).unwrap();
        assert_eq!(
            (ok.host.as_str(), ok.port, ok.literal),
            ("hooks.example.com", 443, None)
        );
        assert_eq!(
            check_url("http://hooks.example.com/", Live),
            Err(UrlProblem::Scheme)
        );
        assert_eq!(
            check_url("ftp://hooks.example.com/", Sandbox),
            Err(UrlProblem::Scheme)
        );
        assert_eq!(
            check_url("https://example.com:22/", Live),
            Err(UrlProblem::Port)
        );
        assert!(check_url("https://example.com:8443/", Sandbox).is_ok());
        assert_eq!(
            check_url("https://user:pass@example.com/", Live),
            Err(UrlProblem::Credentials)
        );
        assert!(matches!(
            check_url("not a url", Live),
            Err(UrlProblem::Invalid(_))
        ));
        assert!(matches!(
            check_url(&format!("https://example.com/{}", "a".repeat(2_100)), Live),
            Err(UrlProblem::Invalid(_))
        ));
        for blocked in [
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://0.0.0.0/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::ffff:a9fe:a9fe]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:7f00:1::]/",
            "https://10.0.0.1/",
            "https://100.64.0.1/",
            "https://[fd00::1]/",
            "https://2130706433/",
            "https://0177.0.0.1/",
            "https://127.1/",
        ] {
            assert!(
                matches!(check_url(blocked, Live), Err(UrlProblem::Host(_))),
                "{blocked} must be refused in live mode"
            );
        }
        // Sandbox reaches loopback (a local receiver), and nothing else private.
        assert!(check_url("http://127.0.0.1:9000/hook", Sandbox).is_ok());
        assert!(check_url("http://[::1]:9000/hook", Sandbox).is_ok());
        assert!(matches!(
            check_url("http://169.254.169.254/", Sandbox),
            Err(UrlProblem::Host(_))
        ));
        assert!(matches!(
            check_url("http://10.0.0.1/", Sandbox),
            Err(UrlProblem::Host(_))
        ));
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

//! Business API keys: their policy (permissions, IP allowlist, origins, rate limits), issuance
//! and revocation. The secret is shown once at issuance and stored sealed under the master key.

use std::collections::BTreeSet;
use std::str::FromStr;

use ipnet::IpNet;
use rand::RngCore;
use swapd_types::Permission;

use crate::ids::new_id;
use crate::secrets::{MasterKey, SecretError};

pub use swapd_types::ids::API_KEY_PREFIX;
pub const API_SECRET_PREFIX: &str = "sec_";
const MAX_NAME_LEN: usize = 100;
const MAX_LIST_ENTRIES: usize = 100;
/// One request per microsecond: the resolution of the per-minute limiter.
pub const MAX_PER_MINUTE: u32 = 60_000_000;

/// How long a node may keep serving a key it read: a revoked key or a changed policy takes
/// effect on every node within this time (at once with Redis, which announces revocations).
pub const KEY_CACHE_TTL_MS: i64 = 5_000;

/// Per-key request quotas. `weight_per_hour` is spent by route weight (see the OpenAPI document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub per_minute: u32,
    pub per_hour: u32,
    pub weight_per_hour: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_minute: 120,
            per_hour: 3_600,
            weight_per_hour: 10_000,
        }
    }
}

/// What a key may do and from where. Built only through [`ApiKeyPolicy::new`], which validates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyPolicy {
    name: String,
    permissions: BTreeSet<Permission>,
    ip_allow: Vec<IpNet>,
    origins: Vec<String>,
    limits: RateLimits,
    /// The partner's markup on its quotes, in bps of the output (docs/fees.md).
    markup_bps: u32,
    /// Where the onchain routers that pay fees to addresses pay the markup (an EVM address);
    /// without one they leave it out.
    markup_recipient: Option<alloy_primitives::Address>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("name must be 1 to {MAX_NAME_LEN} printable characters")]
    Name,
    #[error("at least one permission is required")]
    NoPermissions,
    #[error(
        "`{0}` is not an IP address or CIDR block (examples: 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)"
    )]
    IpAllow(String),
    #[error("`{0}` is not an origin: use scheme://host[:port] with http or https, no path")]
    Origin(String),
    #[error("{0} must be 1 to {1}")]
    Limit(&'static str, u32),
    #[error("too many {0} entries (at most {MAX_LIST_ENTRIES})")]
    TooMany(&'static str),
    #[error("`{0}` is not an EVM address (0x and 40 hex digits, checksummed when mixed case)")]
    MarkupRecipient(String),
}

impl ApiKeyPolicy {
    pub fn new(
        name: &str,
        permissions: impl IntoIterator<Item = Permission>,
        ip_allow: &[String],
        origins: &[String],
        limits: RateLimits,
    ) -> Result<Self, PolicyError> {
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_LEN
            || name.chars().any(char::is_control)
        {
            return Err(PolicyError::Name);
        }
        let permissions: BTreeSet<Permission> = permissions.into_iter().collect();
        if permissions.is_empty() {
            return Err(PolicyError::NoPermissions);
        }
        if ip_allow.len() > MAX_LIST_ENTRIES {
            return Err(PolicyError::TooMany("IP allowlist"));
        }
        if origins.len() > MAX_LIST_ENTRIES {
            return Err(PolicyError::TooMany("origin"));
        }
        let ip_allow = ip_allow
            .iter()
            .map(|entry| parse_ip_net(entry))
            .collect::<Result<Vec<_>, _>>()?;
        let origins = origins
            .iter()
            .map(|entry| normalize_origin(entry))
            .collect::<Result<Vec<_>, _>>()?;
        for (value, field, max) in [
            (limits.per_minute, "per-minute limit", MAX_PER_MINUTE),
            (limits.per_hour, "per-hour limit", u32::MAX),
            (limits.weight_per_hour, "weighted per-hour limit", u32::MAX),
        ] {
            if value == 0 || value > max {
                return Err(PolicyError::Limit(field, max));
            }
        }
        Ok(Self {
            name: name.to_owned(),
            permissions,
            ip_allow: dedup(ip_allow),
            origins: dedup(origins),
            limits,
            markup_bps: 0,
            markup_recipient: None,
        })
    }

    /// The policy with a partner markup of `bps` (the caller checks it against the operator's
    /// cap, `fees.max_markup_bps`).
    pub fn with_markup_bps(mut self, bps: u32) -> Self {
        self.markup_bps = bps;
        self
    }

    /// The partner's markup on this key's quotes, in bps.
    pub fn markup_bps(&self) -> u32 {
        self.markup_bps
    }

    /// The policy whose markup the onchain routers pay to `address` (an EVM address).
    pub fn with_markup_recipient(mut self, address: &str) -> Result<Self, PolicyError> {
        let parsed = address
            .parse::<alloy_primitives::Address>()
            .ok()
            .filter(|parsed| {
                !parsed.is_zero()
                    && crate::address::Network::Ethereum
                        .validate_address(address)
                        .is_ok()
            })
            .ok_or_else(|| PolicyError::MarkupRecipient(address.chars().take(64).collect()))?;
        self.markup_recipient = Some(parsed);
        Ok(self)
    }

    /// The partner's markup: its rate and its onchain recipient.
    pub fn markup(&self) -> crate::fees::Markup {
        crate::fees::Markup {
            bps: self.markup_bps,
            recipient: self.markup_recipient,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn permissions(&self) -> &BTreeSet<Permission> {
        &self.permissions
    }

    /// Empty means "any address".
    pub fn ip_allow(&self) -> &[IpNet] {
        &self.ip_allow
    }

    /// Normalized origins (`https://app.example.com`). Empty means "any origin".
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    pub fn limits(&self) -> RateLimits {
        self.limits
    }
}

fn dedup<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items.dedup();
    items
}

/// Parses `203.0.113.7` or `10.0.0.0/8`; a bare address becomes a single-host network.
pub fn parse_ip_net(entry: &str) -> Result<IpNet, PolicyError> {
    let entry = entry.trim();
    let net = IpNet::from_str(entry)
        .or_else(|_| std::net::IpAddr::from_str(entry).map(IpNet::from))
        .map_err(|_| PolicyError::IpAllow(entry.to_owned()))?;
    Ok(net.trunc())
}

/// Normalizes an origin to its ASCII serialization (`https://example.com:8443`, default port
/// dropped, host lowercased and punycoded).
pub fn normalize_origin(entry: &str) -> Result<String, PolicyError> {
    let bad = || PolicyError::Origin(entry.to_owned());
    let url = url::Url::parse(entry.trim()).map_err(|_| bad())?;
    let plain = url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() || !plain {
        return Err(bad());
    }
    Ok(url.origin().ascii_serialization())
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::Display,
)]
#[strum(serialize_all = "lowercase")]
pub enum KeyStatus {
    Active,
    Revoked,
}

impl KeyStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A stored API key. The secret is held only in sealed form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: String,
    pub policy: ApiKeyPolicy,
    pub status: KeyStatus,
    pub sealed_secret: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A freshly issued key with its plaintext secret, which exists only in this value.
pub struct IssuedKey {
    pub key: ApiKey,
    pub secret: String,
}

impl ApiKey {
    /// Creates a new active key with a fresh random secret, sealed under `master` and bound to
    /// the key id.
    pub fn issue(policy: ApiKeyPolicy, master: &MasterKey, now_ms: i64) -> IssuedKey {
        let id = new_id(API_KEY_PREFIX);
        let mut raw = [0u8; 32];
        rand::rng().fill_bytes(&mut raw);
        let secret = format!("{API_SECRET_PREFIX}{}", hex::encode(raw));
        let sealed_secret = master.seal(secret.as_bytes(), &id);
        IssuedKey {
            key: ApiKey {
                id,
                policy,
                status: KeyStatus::Active,
                sealed_secret,
                created_at_ms: now_ms,
                revoked_at_ms: None,
            },
            secret,
        }
    }

    /// The plaintext HMAC secret.
    pub fn secret(&self, master: &MasterKey) -> Result<String, SecretError> {
        let bytes = master.open(&self.sealed_secret, &self.id)?;
        String::from_utf8(bytes).map_err(|_| SecretError::Malformed)
    }

    pub fn is_active(&self) -> bool {
        self.status == KeyStatus::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::is_valid_id;

    fn policy() -> ApiKeyPolicy {
        ApiKeyPolicy::new(
            "partner one",
            [Permission::PricesRead, Permission::OrdersRead],
            &[
                "203.0.113.7".into(),
                "10.1.2.3/8".into(),
                "2001:db8::1/32".into(),
            ],
            &[
                "HTTPS://App.Example.com:443/".into(),
                "http://localhost:3000".into(),
            ],
            RateLimits::default(),
        )
        .unwrap()
    }

    #[test]
    fn policy_normalizes_networks_and_origins() {
        let p = policy();
        let nets: Vec<String> = p.ip_allow().iter().map(ToString::to_string).collect();
        assert!(nets.contains(&"203.0.113.7/32".to_owned()));
        assert!(nets.contains(&"10.0.0.0/8".to_owned()));
        assert!(nets.contains(&"2001:db8::/32".to_owned()));
        assert_eq!(
            p.origins(),
            ["http://localhost:3000", "https://app.example.com"]
        );
    }

    #[test]
    fn policy_rejects_bad_input_naming_it() {
        let limits = RateLimits::default();
        let perms = [Permission::PricesRead];
        assert_eq!(
            ApiKeyPolicy::new(" ", perms, &[], &[], limits),
            Err(PolicyError::Name)
        );
        assert_eq!(
            ApiKeyPolicy::new("n", [], &[], &[], limits),
            Err(PolicyError::NoPermissions)
        );
        assert_eq!(
            ApiKeyPolicy::new("n", perms, &["10.0.0.300".into()], &[], limits),
            Err(PolicyError::IpAllow("10.0.0.300".into()))
        );
        for origin in [
            "ftp://x.com",
            "https://x.com/path",
            "x.com",
            "https://u@x.com",
        ] {
            assert_eq!(
                ApiKeyPolicy::new("n", perms, &[], &[origin.into()], limits),
                Err(PolicyError::Origin(origin.into())),
                "{origin}"
            );
        }
        let zero = RateLimits {
            per_hour: 0,
            ..limits
        };
        assert!(matches!(
            ApiKeyPolicy::new("n", perms, &[], &[], zero),
            Err(PolicyError::Limit(..))
        ));
        let too_fast = RateLimits {
            per_minute: MAX_PER_MINUTE + 1,
            ..limits
        };
        assert!(ApiKeyPolicy::new("n", perms, &[], &[], too_fast).is_err());
    }

    #[test]
    fn issued_secret_is_sealed_and_recoverable_only_with_the_master_key() {
        let master = MasterKey::generate();
        let issued = ApiKey::issue(policy(), &master, 42);
        assert!(is_valid_id(&issued.key.id, API_KEY_PREFIX));
        assert!(issued.secret.starts_with(API_SECRET_PREFIX));
        assert_eq!(issued.secret.len(), API_SECRET_PREFIX.len() + 64);
        assert!(!issued.key.sealed_secret.contains(&issued.secret));
        assert_eq!(issued.key.secret(&master).unwrap(), issued.secret);
        assert!(issued.key.secret(&MasterKey::generate()).is_err());
        assert!(issued.key.is_active());
    }
}

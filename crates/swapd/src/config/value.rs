//! Setting values parsed once, where the configuration is read: a URL that is an http(s) URL
//! with a host, an EVM address, a secret that is never printed. Each is read from its text
//! (`FromStr`, whose error says what is expected; the loader adds which setting it was) and
//! shown as its text (`Display`), redacted where the text holds a secret. An optional setting
//! left empty (`SWAPD_X402__PAY_TO=`) is unset, as an absent one is: the `optional` field
//! adapter decides that once for every optional setting.

use std::fmt;
use std::str::FromStr;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serializer};

/// What a secret setting shows as (`swapd config show`).
pub const REDACTED: &str = "<redacted>";

/// An `http://` or `https://` URL with a host, kept as given (the parsed form adds a `/` to a
/// bare origin, which upstream paths would then double).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    url: url::Url,
}

impl HttpUrl {
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl FromStr for HttpUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(format!(
                "`{text}` must be an http:// or https:// URL with a host"
            ));
        }
        Ok(Self {
            text: text.to_owned(),
            url,
        })
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An origin: `scheme://host[:port]`, no path (`public_url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(String);

impl Origin {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Origin {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let url = HttpUrl::from_str(text)?;
        let url = url.url();
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "`{text}` must be an origin (scheme://host[:port]) without a path"
            ));
        }
        Ok(Self(text.to_owned()))
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A URL whose text may carry a password (`postgres://user:password@host/db`,
/// `smtp://user:password@host`, `redis://:password@host`): shown with the password starred.
#[derive(Clone)]
pub struct CredentialUrl(SecretString);

impl CredentialUrl {
    /// `text`, whose scheme the caller checked.
    pub fn new(text: &str) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// The URL with its password starred.
    pub fn redacted(&self) -> String {
        swapd_store::redact_url(self.expose())
    }

    /// `text` if it starts with one of `schemes`; `problem` otherwise.
    pub fn with_scheme(text: &str, schemes: &[&str], problem: &str) -> Result<Self, String> {
        if !schemes.iter().any(|scheme| text.starts_with(scheme)) {
            return Err(problem.to_owned());
        }
        Ok(Self(text.into()))
    }
}

/// A [`CredentialUrl`] of some schemes: `credential_url!(Name, ["a://"], "problem")`.
macro_rules! credential_url {
    ($(#[$doc:meta])* $name:ident, [$($scheme:literal),*], $problem:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name($crate::config::value::CredentialUrl);

        impl $name {
            pub fn expose(&self) -> &str {
                self.0.expose()
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                $crate::config::value::CredentialUrl::with_scheme(text, &[$($scheme),*], $problem)
                    .map(Self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        $crate::config::value::through_text!($name);
    };
}
pub(crate) use credential_url;

impl fmt::Debug for CredentialUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Display for CredentialUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// A secret (an API key, a token's secret): never shown, wiped when dropped.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl FromStr for Secret {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(Self(text.into()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// An EVM address (0x and 40 hex digits; a mixed-case one must be checksummed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvmAddress(pub alloy_primitives::Address);

impl FromStr for EvmAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let well_formed = text
            .strip_prefix("0x")
            .is_some_and(|hex| hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        let parsed = well_formed.then(|| text.parse().ok()).flatten();
        parsed
            .map(Self)
            .ok_or_else(|| "must be an EVM address: 0x followed by 40 hex digits".to_owned())
    }
}

impl fmt::Display for EvmAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_checksum(None))
    }
}

/// An account on a payment network: an EVM address (`0x` + 40 hex digits, checksummed when
/// mixed-case) or a Solana public key (base58 of 32 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainAddress {
    Evm(EvmAddress),
    Solana(String),
}

impl ChainAddress {
    /// Whether the address is of `network`'s kind (CAIP-2 namespace `eip155` or `solana`).
    pub fn fits(&self, network: &Caip2) -> bool {
        match self {
            ChainAddress::Evm(_) => network.as_str().starts_with("eip155:"),
            ChainAddress::Solana(_) => network.as_str().starts_with("solana:"),
        }
    }
}

impl FromStr for ChainAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.starts_with("0x") {
            return text.parse().map(ChainAddress::Evm);
        }
        match swapd_x402::exact_svm::pubkey(text) {
            Some(_) => Ok(ChainAddress::Solana(text.to_owned())),
            None => Err(
                "must be an EVM address (0x followed by 40 hex digits) or a Solana public key \
                 (base58 of 32 bytes)"
                    .into(),
            ),
        }
    }
}

impl fmt::Display for ChainAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainAddress::Evm(address) => address.fmt(f),
            ChainAddress::Solana(key) => f.write_str(key),
        }
    }
}

/// A CAIP-2 chain id (`eip155:8453`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caip2(String);

impl Caip2 {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Caip2 {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let valid = text.split_once(':').is_some_and(|(namespace, reference)| {
            (3..=8).contains(&namespace.len())
                && namespace
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && (1..=32).contains(&reference.len())
                && reference
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err("must be a CAIP-2 chain id such as `eip155:8453`".into())
        }
    }
}

impl fmt::Display for Caip2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A positive decimal string (`0.05`): no exponent, no sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositiveDecimal(String);

impl PositiveDecimal {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for PositiveDecimal {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        let valid = !whole.is_empty()
            && digits(whole)
            && digits(fraction)
            && text.contains('.') != fraction.is_empty()
            && text.bytes().any(|b| (b'1'..=b'9').contains(&b));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err("must be a positive decimal string such as `0.05`".into())
        }
    }
}

impl fmt::Display for PositiveDecimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads and writes a value through its text (`FromStr`, `Display`):
/// `#[serde(with = "value::text")]`.
pub mod text {
    use super::*;

    pub fn serialize<S: Serializer, T: fmt::Display>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(value)
    }

    pub fn deserialize<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: fmt::Display,
    {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An optional setting through its text, empty text meaning unset (so `config show` lists
/// every setting, unset ones as `""`): `#[serde(default, with = "value::optional")]`.
pub mod optional {
    use super::*;

    pub fn serialize<S, T>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: fmt::Display,
    {
        match value {
            Some(value) => s.collect_str(value),
            None => s.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: fmt::Display,
    {
        match Option::<String>::deserialize(d)? {
            Some(text) if !text.is_empty() => {
                text.parse().map(Some).map_err(serde::de::Error::custom)
            }
            _ => Ok(None),
        }
    }
}

/// Serde through the value's text, for the values settings hold whole.
macro_rules! through_text {
    ($($value:ty),* $(,)?) => {
        $(
            impl serde::Serialize for $value {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    $crate::config::value::text::serialize(self, s)
                }
            }

            impl<'de> serde::Deserialize<'de> for $value {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    $crate::config::value::text::deserialize(d)
                }
            }
        )*
    };
}
pub(crate) use through_text;

through_text!(HttpUrl, Caip2, PositiveDecimal);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_what_they_show_and_refuse_the_rest() {
        assert!("http://127.0.0.1:9/v2/".parse::<HttpUrl>().is_ok());
        assert!(
            "ftp://x"
                .parse::<HttpUrl>()
                .unwrap_err()
                .contains("http://")
        );
        assert!("https://a.example".parse::<Origin>().is_ok());
        assert!("https://a.example/path".parse::<Origin>().is_err());
        assert!("0x123".parse::<EvmAddress>().is_err());
        let address = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
        assert_eq!(address.parse::<EvmAddress>().unwrap().to_string(), address);
        assert_eq!("s3cret".parse::<Secret>().unwrap().to_string(), REDACTED);
        assert_eq!(
            format!("{:?}", "s3cret".parse::<Secret>().unwrap()),
            REDACTED
        );
        let url =
            CredentialUrl::with_scheme("postgres://app:hunter2@db/swapd", &["postgres:"], "?")
                .unwrap();
        assert_eq!(url.to_string(), "postgres://app:***@db/swapd");
        assert_eq!(url.expose(), "postgres://app:hunter2@db/swapd");
    }

    #[test]
    fn decimal_and_caip2_checks() {
        let decimal = |text: &str| text.parse::<PositiveDecimal>().is_ok();
        assert!(decimal("0.05") && decimal("1"));
        assert!(!decimal("0") && !decimal(".5") && !decimal("1.") && !decimal("1e3"));
        let caip2 = |text: &str| text.parse::<Caip2>().is_ok();
        assert!(caip2("eip155:8453") && caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"));
        assert!(!caip2("8453") && !caip2("EIP155:1"));
    }
}

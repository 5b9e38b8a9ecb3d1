//! Sign-In-With-X (docs/x402.md, "Signing in"): the challenge swapd advertises, the text a wallet
//! signs (EIP-4361 for EVM, x402's CAIP-122 form for Solana, rebuilt byte-exact), and the checks of
//! a proof: domain and URI against our configured public origin, the time claims, the chain, and
//! the signature (EIP-191 recovery; strict ed25519 with small-order keys refused). Nonces are
//! issued and consumed by the caller through the store.

use alloy_primitives::{Address, Signature};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// CAIP-2 id of Solana mainnet.
pub const SOLANA_MAINNET: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// How old a proof's `issuedAt` may be.
pub const MAX_AGE_SECS: i64 = 5 * 60;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiwxPayload {
    pub domain: String,
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    pub uri: String,
    pub version: String,
    pub chain_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub nonce: String,
    /// Kept verbatim: it is part of the signed text.
    pub issued_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_scheme: Option<String>,
    pub signature: String,
}

/// A proven wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wallet {
    Evm(Address),
    Solana(String),
}

impl Wallet {
    /// How the wallet is named everywhere: the EIP-55 address, or the base58 key.
    pub fn address(&self) -> String {
        match self {
            Wallet::Evm(address) => address.to_checksum(None),
            Wallet::Solana(key) => key.clone(),
        }
    }

    /// The caller scope of everything the wallet owns (orders, plans, jobs, idempotency keys).
    pub fn scope(&self) -> String {
        format!("wallet:{}", self.address())
    }
}

/// Why a proof is refused (TS 2.27's codes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiwxError {
    #[error("invalid_siwx_domain_mismatch")]
    DomainMismatch,
    #[error("invalid_siwx_uri_mismatch")]
    UriMismatch,
    #[error("invalid_siwx_version")]
    Version,
    #[error("invalid_siwx_issued_at")]
    IssuedAt,
    #[error("invalid_siwx_issued_at_too_old")]
    TooOld,
    #[error("invalid_siwx_issued_at_in_future")]
    InFuture,
    #[error("invalid_siwx_expiration_time")]
    ExpirationTime,
    #[error("invalid_siwx_expired")]
    Expired,
    #[error("invalid_siwx_not_before")]
    NotBefore,
    #[error("invalid_siwx_not_yet_valid")]
    NotYetValid,
    #[error("invalid_siwx_chain_id")]
    ChainId,
    #[error("invalid_siwx_unsupported_chain")]
    UnsupportedChain,
    #[error("invalid_siwx_address")]
    Address,
    #[error("invalid_siwx_malformed_signature")]
    MalformedSignature,
    #[error("invalid_siwx_signature")]
    Signature,
    #[error("invalid_siwx_nonce")]
    Nonce,
}

/// What a proof must be bound to.
#[derive(Debug, Clone)]
pub struct Audience<'a> {
    /// Our public origin, e.g. `https://api.example.com` or `http://127.0.0.1:8080`.
    pub origin: &'a str,
    /// The chains we advertise (CAIP-2).
    pub chains: &'a [String],
}

impl Audience<'_> {
    /// `host[:port]` of the origin, as `URL.host` gives it.
    pub fn domain(&self) -> String {
        let url = url_parse(self.origin);
        match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => String::new(),
        }
    }
}

fn url_parse(text: &str) -> reqwest::Url {
    reqwest::Url::parse(text).unwrap_or_else(|_| reqwest::Url::parse("http://invalid").unwrap())
}

/// The `sign-in-with-x` extension of a 402: the challenge for `resource_url` with a fresh
/// `nonce`, issued at `now_ms`.
pub fn challenge(audience: &Audience<'_>, resource_url: &str, nonce: &str, now_ms: i64) -> Value {
    let supported: Vec<Value> = audience
        .chains
        .iter()
        .map(|chain| {
            json!({"chainId": chain, "type": if chain.starts_with("solana:") { "ed25519" } else { "eip191" }})
        })
        .collect();
    json!({
        "info": {
            "domain": audience.domain(),
            "uri": resource_url,
            "version": "1",
            "nonce": nonce,
            "issuedAt": iso_millis(now_ms),
            "statement": "Sign in to swapd with this wallet",
            "resources": [resource_url],
        },
        "supportedChains": supported,
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "domain": {"type": "string"}, "address": {"type": "string"},
                "statement": {"type": "string"}, "uri": {"type": "string", "format": "uri"},
                "version": {"type": "string"}, "chainId": {"type": "string"},
                "type": {"type": "string"}, "nonce": {"type": "string"},
                "issuedAt": {"type": "string", "format": "date-time"},
                "expirationTime": {"type": "string", "format": "date-time"},
                "notBefore": {"type": "string", "format": "date-time"},
                "requestId": {"type": "string"},
                "resources": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "signature": {"type": "string"}
            },
            "required": ["domain", "address", "uri", "version", "chainId", "type", "nonce", "issuedAt", "signature"]
        }
    })
}

/// `2026-01-15T10:30:00.000Z`, as JavaScript's `toISOString` writes it.
pub fn iso_millis(now_ms: i64) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(now_ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

fn parse_time(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// The text the wallet signed, rebuilt from the payload.
pub fn message(payload: &SiwxPayload) -> Result<String, SiwxError> {
    let (account, address, chain_reference, blank_lines) =
        if let Some(id) = payload.chain_id.strip_prefix("eip155:") {
            let address: Address = payload.address.parse().map_err(|_| SiwxError::Address)?;
            let id: u64 = id.parse().map_err(|_| SiwxError::ChainId)?;
            // EIP-4361: the address is checksummed in the text, however it was sent.
            (
                "Ethereum",
                address.to_checksum(None),
                id.to_string(),
                "\n\n",
            )
        } else if let Some(reference) = payload.chain_id.strip_prefix("solana:") {
            (
                "Solana",
                payload.address.clone(),
                reference.to_owned(),
                "\n",
            )
        } else {
            return Err(SiwxError::UnsupportedChain);
        };
    let mut text = format!(
        "{} wants you to sign in with your {account} account:\n{address}\n",
        payload.domain
    );
    match &payload.statement {
        Some(statement) => text.push_str(&format!("\n{statement}\n\n")),
        None => text.push_str(blank_lines),
    }
    text.push_str(&format!(
        "URI: {}\nVersion: {}\nChain ID: {chain_reference}\nNonce: {}\nIssued At: {}",
        payload.uri, payload.version, payload.nonce, payload.issued_at
    ));
    if let Some(at) = &payload.expiration_time {
        text.push_str(&format!("\nExpiration Time: {at}"));
    }
    if let Some(at) = &payload.not_before {
        text.push_str(&format!("\nNot Before: {at}"));
    }
    if let Some(id) = &payload.request_id {
        text.push_str(&format!("\nRequest ID: {id}"));
    }
    if let Some(resources) = &payload.resources {
        text.push_str("\nResources:");
        for resource in resources {
            text.push_str(&format!("\n- {resource}"));
        }
    }
    Ok(text)
}

/// Checks everything about a proof but its nonce (which the caller consumes atomically):
/// audience, version, time claims and chain, then the signature. The proven wallet.
pub fn verify(
    payload: &SiwxPayload,
    audience: &Audience<'_>,
    now_ms: i64,
) -> Result<Wallet, SiwxError> {
    if payload.domain != audience.domain() {
        return Err(SiwxError::DomainMismatch);
    }
    let uri = reqwest::Url::parse(&payload.uri).map_err(|_| SiwxError::UriMismatch)?;
    if uri.origin().ascii_serialization()
        != url_parse(audience.origin).origin().ascii_serialization()
    {
        return Err(SiwxError::UriMismatch);
    }
    if payload.version != "1" {
        return Err(SiwxError::Version);
    }
    let issued = parse_time(&payload.issued_at).ok_or(SiwxError::IssuedAt)?;
    if now_ms - issued > MAX_AGE_SECS * 1000 {
        return Err(SiwxError::TooOld);
    }
    if issued > now_ms {
        return Err(SiwxError::InFuture);
    }
    if let Some(text) = &payload.expiration_time {
        let expires = parse_time(text).ok_or(SiwxError::ExpirationTime)?;
        if expires <= now_ms {
            return Err(SiwxError::Expired);
        }
    }
    if let Some(text) = &payload.not_before {
        let from = parse_time(text).ok_or(SiwxError::NotBefore)?;
        if from > now_ms {
            return Err(SiwxError::NotYetValid);
        }
    }
    if !audience.chains.contains(&payload.chain_id) {
        return Err(SiwxError::UnsupportedChain);
    }
    verify_signature(payload)
}

/// The wallet whose signature the payload carries over its rebuilt text.
pub fn verify_signature(payload: &SiwxPayload) -> Result<Wallet, SiwxError> {
    let text = message(payload)?;
    if payload.chain_id.starts_with("eip155:") {
        if payload.kind != "eip191" {
            return Err(SiwxError::UnsupportedChain);
        }
        let claimed: Address = payload.address.parse().map_err(|_| SiwxError::Address)?;
        let bytes = payload
            .signature
            .strip_prefix("0x")
            .and_then(|h| hex::decode(h).ok())
            .filter(|b| b.len() == 65)
            .ok_or(SiwxError::MalformedSignature)?;
        let signature = Signature::from_raw(&bytes).map_err(|_| SiwxError::MalformedSignature)?;
        if signature.normalize_s().is_some() {
            return Err(SiwxError::Signature);
        }
        let signer = signature
            .recover_address_from_msg(text.as_bytes())
            .map_err(|_| SiwxError::Signature)?;
        if signer != claimed {
            return Err(SiwxError::Signature);
        }
        return Ok(Wallet::Evm(signer));
    }
    if payload.kind != "ed25519" {
        return Err(SiwxError::UnsupportedChain);
    }
    let key: [u8; 32] = bs58::decode(&payload.address)
        .into_vec()
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SiwxError::Address)?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(|_| SiwxError::Address)?;
    if key.is_weak() {
        return Err(SiwxError::Address);
    }
    let signature: [u8; 64] = bs58::decode(&payload.signature)
        .into_vec()
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SiwxError::MalformedSignature)?;
    key.verify_strict(
        text.as_bytes(),
        &ed25519_dalek::Signature::from_bytes(&signature),
    )
    .map_err(|_| SiwxError::Signature)?;
    Ok(Wallet::Solana(payload.address.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The EVM proof of the SIWX worked example (docs/x402.md, "Test vectors").
    fn evm_vector() -> SiwxPayload {
        SiwxPayload {
            domain: "api.example.com".into(),
            address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".into(),
            statement: Some("Sign in to the swap API".into()),
            uri: "https://api.example.com/api/x402/quote".into(),
            version: "1".into(),
            chain_id: "eip155:8453".into(),
            kind: "eip191".into(),
            nonce: "a1b2c3d4e5f67890a1b2c3d4e5f67890".into(),
            issued_at: "2026-01-15T10:30:00.000Z".into(),
            expiration_time: Some("2026-01-15T10:35:00.000Z".into()),
            not_before: None,
            request_id: None,
            resources: Some(vec!["https://api.example.com/api/x402/quote".into()]),
            signature_scheme: None,
            signature: "0x8e9cd36829ff8de16e23091bdad1f9ccf5031e06a807c198eb6b1f94f1928e166e2b47d2fdfd8e18cd70977a112582356230c5acfbef8e6e120e3324e8f620761c".into(),
        }
    }

    /// The Solana proof of the SIWX worked example, seed 32 × 0x07 (docs/x402.md, "Test vectors").
    fn solana_vector() -> SiwxPayload {
        SiwxPayload {
            address: "GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB".into(),
            chain_id: SOLANA_MAINNET.into(),
            kind: "ed25519".into(),
            signature: "5tUqVqjoTyYM9Gh38qaL2bcpZsSBohoXJwURHcGwYKBa87LqpU1LE8cKM75s95KWb4xdznYMTZHedEke8BWDekQT".into(),
            ..evm_vector()
        }
    }

    const AT_MS: i64 = 1_768_473_060_000; // 2026-01-15T10:31:00Z

    fn audience() -> (String, Vec<String>) {
        (
            "https://api.example.com".into(),
            vec!["eip155:8453".into(), SOLANA_MAINNET.into()],
        )
    }

    #[test]
    fn texts_are_rebuilt_byte_exact() {
        assert_eq!(
            message(&evm_vector()).unwrap(),
            "api.example.com wants you to sign in with your Ethereum account:\n\
             0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266\n\nSign in to the swap API\n\n\
             URI: https://api.example.com/api/x402/quote\nVersion: 1\nChain ID: 8453\n\
             Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\nIssued At: 2026-01-15T10:30:00.000Z\n\
             Expiration Time: 2026-01-15T10:35:00.000Z\nResources:\n\
             - https://api.example.com/api/x402/quote"
        );
        let mut lowercase = evm_vector();
        lowercase.address = lowercase.address.to_lowercase();
        assert_eq!(
            message(&lowercase).unwrap(),
            message(&evm_vector()).unwrap()
        );
        let mut bare = evm_vector();
        bare.statement = None;
        assert!(message(&bare).unwrap().contains("92266\n\n\nURI: "));
        let solana = message(&solana_vector()).unwrap();
        assert!(solana.starts_with("api.example.com wants you to sign in with your Solana account:\nGmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB\n\nSign in"));
        assert!(solana.contains("\nChain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\n"));
        let mut bare = solana_vector();
        bare.statement = None;
        assert!(message(&bare).unwrap().contains("AEGB\n\nURI: "));
    }

    #[test]
    fn the_worked_example_proofs_verify_for_evm_and_solana() {
        let (origin, chains) = audience();
        let audience = Audience {
            origin: &origin,
            chains: &chains,
        };
        assert_eq!(
            verify(&evm_vector(), &audience, AT_MS).unwrap().address(),
            "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
        );
        let solana = verify(&solana_vector(), &audience, AT_MS).unwrap();
        assert_eq!(
            solana.scope(),
            "wallet:GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB"
        );
    }

    #[test]
    fn proofs_are_refused_for_another_audience_time_or_signer() {
        let (origin, chains) = audience();
        let ours = Audience {
            origin: &origin,
            chains: &chains,
        };
        let elsewhere = Audience {
            origin: "https://api.example.org",
            chains: &chains,
        };
        assert_eq!(
            verify(&evm_vector(), &elsewhere, AT_MS),
            Err(SiwxError::DomainMismatch)
        );
        let mut other_uri = evm_vector();
        other_uri.uri = "https://evil.example.com/api/x402/quote".into();
        assert_eq!(
            verify(&other_uri, &ours, AT_MS),
            Err(SiwxError::UriMismatch)
        );
        let mut http = evm_vector();
        http.uri = "http://api.example.com/api/x402/quote".into();
        assert_eq!(verify(&http, &ours, AT_MS), Err(SiwxError::UriMismatch));
        // Time claims are checked before the signature.
        let mut short_lived = evm_vector();
        short_lived.expiration_time = Some("2026-01-15T10:32:00.000Z".into());
        assert_eq!(
            verify(&short_lived, &ours, AT_MS + 60_000),
            Err(SiwxError::Expired)
        );
        let mut not_yet = evm_vector();
        not_yet.not_before = Some("2026-01-15T10:33:00.000Z".into());
        assert_eq!(verify(&not_yet, &ours, AT_MS), Err(SiwxError::NotYetValid));
        let mut no_expiry = evm_vector();
        no_expiry.expiration_time = None;
        assert_eq!(
            verify(&no_expiry, &ours, AT_MS + 5 * 60_000),
            Err(SiwxError::TooOld)
        );
        assert_eq!(
            verify(&evm_vector(), &ours, 1_768_473_000_000 - 1),
            Err(SiwxError::InFuture)
        );
        let base_only = vec!["eip155:8453".to_owned()];
        let evm_only = Audience {
            origin: &origin,
            chains: &base_only,
        };
        assert_eq!(
            verify(&solana_vector(), &evm_only, AT_MS),
            Err(SiwxError::UnsupportedChain)
        );
        // Claiming another address with the same signature.
        let mut impostor = evm_vector();
        impostor.address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into();
        assert_eq!(verify(&impostor, &ours, AT_MS), Err(SiwxError::Signature));
        let mut tampered = solana_vector();
        tampered.nonce = "ffffffffffffffffffffffffffffffff".into();
        assert_eq!(verify(&tampered, &ours, AT_MS), Err(SiwxError::Signature));
        let mut garbled = solana_vector();
        garbled.signature = "abc".into();
        assert_eq!(
            verify(&garbled, &ours, AT_MS),
            Err(SiwxError::MalformedSignature)
        );
        // A small-order (weak) Solana key is refused whatever it signs.
        let mut weak = solana_vector();
        weak.address = bs58::encode([0u8; 32]).into_string();
        assert_eq!(verify(&weak, &ours, AT_MS), Err(SiwxError::Address));
    }

    #[test]
    fn challenges_carry_our_domain_and_a_js_style_issue_time() {
        let chains = vec!["eip155:8453".to_owned(), SOLANA_MAINNET.to_owned()];
        let audience = Audience {
            origin: "http://127.0.0.1:8080",
            chains: &chains,
        };
        let challenge = challenge(
            &audience,
            "http://127.0.0.1:8080/api/x402/orders/x",
            "n1",
            AT_MS,
        );
        assert_eq!(challenge["info"]["domain"], "127.0.0.1:8080");
        assert_eq!(challenge["info"]["issuedAt"], "2026-01-15T10:31:00.000Z");
        assert_eq!(challenge["supportedChains"][1]["type"], "ed25519");
        assert_eq!(iso_millis(1_768_473_000_123), "2026-01-15T10:30:00.123Z");
    }
}

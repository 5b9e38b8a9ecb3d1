//! The x402 v2 wire shapes (docs/x402.md, "Paying"; camelCase JSON) and their header encoding:
//! standard base64 with padding on output; standard with or without padding on input.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const X402_VERSION: u8 = 2;
pub const PAYMENT_REQUIRED: &str = "PAYMENT-REQUIRED";
pub const PAYMENT_SIGNATURE: &str = "PAYMENT-SIGNATURE";
pub const PAYMENT_RESPONSE: &str = "PAYMENT-RESPONSE";
pub const SIGN_IN_WITH_X: &str = "SIGN-IN-WITH-X";
/// The extension key of Sign-In-With-X.
pub const SIWX_EXTENSION: &str = "sign-in-with-x";
/// The `payment-identifier` extension: a client's idempotency key for one paid call.
pub const PAYMENT_IDENTIFIER_EXTENSION: &str = "payment-identifier";
/// The `bazaar` extension: what a paid resource takes and answers, for discovery.
pub const BAZAAR_EXTENSION: &str = "bazaar";
/// How long a payment identifier may be (it is made of letters, digits, `-` and `_`).
pub const PAYMENT_ID_LENGTH: std::ops::RangeInclusive<usize> = 16..=128;

/// How a payment is not of the kind a facilitator was asked to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindMismatch {
    /// Not x402 version 2.
    Version,
    /// The payment, or the requirements, are of another scheme.
    Scheme,
    /// The payment was made on another network than the requirements'.
    Network,
}

impl PaymentPayload {
    /// Whether this payment, and `requirements`, are of `scheme`, on one network, in x402 v2:
    /// what each scheme's verification checks first.
    pub fn of_kind(
        &self,
        requirements: &PaymentRequirements,
        scheme: &str,
    ) -> Result<(), KindMismatch> {
        if self.x402_version != X402_VERSION {
            Err(KindMismatch::Version)
        } else if self.accepted.scheme != scheme || requirements.scheme != scheme {
            Err(KindMismatch::Scheme)
        } else if self.accepted.network != requirements.network {
            Err(KindMismatch::Network)
        } else {
            Ok(())
        }
    }
}

/// For a scheme's `Invalid` (with `Version`, `Scheme` and `Network` cases): `reason()`, the
/// reason code as sent to clients, and the kind mismatches as its cases.
macro_rules! scheme_invalid {
    ($invalid:ident) => {
        impl $invalid {
            /// The reason code as sent to clients.
            pub fn reason(&self) -> String {
                self.to_string()
            }
        }

        impl From<$crate::wire::KindMismatch> for $invalid {
            fn from(mismatch: $crate::wire::KindMismatch) -> Self {
                match mismatch {
                    $crate::wire::KindMismatch::Version => $invalid::Version,
                    $crate::wire::KindMismatch::Scheme => $invalid::Scheme,
                    $crate::wire::KindMismatch::Network => $invalid::Network,
                }
            }
        }
    };
}
pub(crate) use scheme_invalid;

/// `extra` fields a server may refresh per request, left out when a payment's `accepted` is
/// matched (as the reference server does).
pub const DYNAMIC_EXTRA: [&str; 2] = ["recentBlockhash", "lastValidBlockHeight"];

/// An optional object field sent as JSON `null` (x402's Python MCP session sends
/// `"extensions": null`) reads as empty, as when it is absent.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Fields newer clients may add (`serviceName`, `tags`, …), kept as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    pub scheme: String,
    pub network: String,
    /// Atomic units, decimal.
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub extra: Map<String, Value>,
}

impl PaymentRequirements {
    /// Whether a client's `accepted` is these requirements (TS 2.27's rule): every field equal
    /// as a string, and `extra` containing ours (a client may add keys) but for the hints
    /// that change from one request to the next (Solana's blockhash).
    pub fn matches(&self, accepted: &PaymentRequirements) -> bool {
        self.scheme == accepted.scheme
            && self.network == accepted.network
            && self.amount == accepted.amount
            && self.asset == accepted.asset
            && self.pay_to == accepted.pay_to
            && self.max_timeout_seconds == accepted.max_timeout_seconds
            && self
                .extra
                .iter()
                .filter(|(key, _)| !DYNAMIC_EXTRA.contains(&key.as_str()))
                .all(|(key, value)| accepted.extra.get(key) == Some(value))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    pub x402_version: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub resource: ResourceInfo,
    pub accepts: Vec<PaymentRequirements>,
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub extensions: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    pub x402_version: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    pub accepted: PaymentRequirements,
    /// Scheme-specific: [`ExactEvmPayload`] for `exact` on EVM.
    pub payload: Value,
    /// Echoed extensions; unknown ones are ignored.
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub extensions: Map<String, Value>,
}

impl PaymentPayload {
    /// The `payment-identifier` this payment echoes with an id, if any; `Err` with why the id
    /// is not one (16 to 128 letters, digits, `-` or `_`).
    pub fn payment_identifier(&self) -> Result<Option<&str>, &'static str> {
        let Some(id) = self
            .extensions
            .get(PAYMENT_IDENTIFIER_EXTENSION)
            .and_then(|extension| extension.get("info"))
            .and_then(|info| info.get("id"))
        else {
            return Ok(None);
        };
        let id = id
            .as_str()
            .ok_or("the payment identifier is not a string")?;
        let well_formed = PAYMENT_ID_LENGTH.contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            return Err("a payment identifier is 16 to 128 letters, digits, '-' or '_'");
        }
        Ok(Some(id))
    }
}

/// The `payment-identifier` extension as a server declares it: accepted, not required (as
/// `declarePaymentIdentifierExtension(false)` of `@x402/extensions` writes it).
pub fn payment_identifier_declaration() -> Value {
    serde_json::json!({
        "info": {"required": false},
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "required": {"type": "boolean"},
                "id": {
                    "type": "string",
                    "minLength": PAYMENT_ID_LENGTH.start(),
                    "maxLength": PAYMENT_ID_LENGTH.end(),
                    "pattern": "^[a-zA-Z0-9_-]+$"
                }
            },
            "required": ["required"]
        }
    })
}

/// The payload of an `exact` payment on Solana: the partially signed transaction, base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactSvmPayload {
    pub transaction: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactEvmPayload {
    pub signature: String,
    pub authorization: Eip3009Authorization,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Eip3009Authorization {
    pub from: String,
    pub to: String,
    pub value: String,
    pub valid_after: String,
    pub valid_before: String,
    pub nonce: String,
}

/// The body of a facilitator's `/verify` and `/settle`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest {
    pub x402_version: u8,
    pub payment_payload: PaymentPayload,
    /// Our requirements, not the client's `accepted`.
    pub payment_requirements: PaymentRequirements,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    pub is_valid: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    #[serde(default)]
    pub transaction: String,
    #[serde(default)]
    pub network: String,
    /// `upto`: the amount settled, in atomic units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupportedKind {
    pub x402_version: u8,
    pub scheme: String,
    pub network: String,
    /// What a requirement needs from this facilitator (Solana: `feePayer`).
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupportedResponse {
    pub kinds: Vec<SupportedKind>,
    #[serde(default)]
    pub extensions: Vec<String>,
    #[serde(default)]
    pub signers: Map<String, Value>,
}

/// Why a header could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("the header is not standard base64")]
    Base64,
    #[error("the header does not hold the expected JSON: {0}")]
    Json(String),
}

/// `value` as compact JSON in padded standard base64 (what every x402 header holds).
pub fn encode_header<T: Serialize>(value: &T) -> String {
    STANDARD.encode(serde_json::to_vec(value).expect("wire types serialize"))
}

/// A header value back into `T`: standard base64, padded or not (URL-safe is refused, as the
/// reference clients do), then JSON.
pub fn decode_header<T: DeserializeOwned>(text: &str) -> Result<T, HeaderError> {
    let text = text.trim();
    let bytes = STANDARD
        .decode(text)
        .or_else(|_| STANDARD_NO_PAD.decode(text))
        .map_err(|_| HeaderError::Base64)?;
    serde_json::from_slice(&bytes).map_err(|e| HeaderError::Json(e.to_string()))
}

#[cfg(test)]
pub(crate) mod tests {
    fn payment_with(extensions: Value) -> PaymentPayload {
        serde_json::from_value(serde_json::json!({
            "x402Version": 2,
            "accepted": {"scheme": "exact", "network": "eip155:8453", "amount": "50000",
                "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                "payTo": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "maxTimeoutSeconds": 300,
                "extra": {}},
            "payload": {},
            "extensions": extensions,
        }))
        .unwrap()
    }

    #[test]
    fn accepted_matches_our_requirements_but_for_per_request_hints() {
        use serde_json::json;
        let ours: PaymentRequirements = serde_json::from_value(json!({
            "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
            "amount": "50000", "asset": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            "payTo": "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4", "maxTimeoutSeconds": 60,
            "extra": {"feePayer": "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd",
                      "recentBlockhash": "GHtXQBsoZHVnNFa9YevAzFr17DJjgHXk3ycTKD5xD3Zi",
                      "lastValidBlockHeight": 100}
        }))
        .unwrap();
        let mut accepted = ours.clone();
        assert!(ours.matches(&accepted));
        // Another blockhash hint (an earlier 402's), or none: the same way to pay.
        accepted.extra.insert(
            "recentBlockhash".into(),
            json!("11111111111111111111111111111111"),
        );
        accepted.extra.remove("lastValidBlockHeight");
        assert!(ours.matches(&accepted));
        // A key the client adds is allowed; a fee payer of its own is not.
        accepted.extra.insert("memo".into(), json!("x"));
        assert!(ours.matches(&accepted));
        accepted
            .extra
            .insert("feePayer".into(), json!("11111111111111111111111111111111"));
        assert!(!ours.matches(&accepted));
        let mut dearer = ours.clone();
        dearer.amount = "50001".into();
        assert!(!ours.matches(&dearer));
    }

    #[test]
    fn a_payment_identifier_is_read_from_the_echoed_extension_and_checked() {
        use serde_json::json;
        let with = |id: Value| {
            payment_with(json!({"payment-identifier": {"info": {"required": false, "id": id}}}))
        };
        assert_eq!(payment_with(json!({})).payment_identifier(), Ok(None));
        let declared_only = json!({"payment-identifier": payment_identifier_declaration()});
        assert_eq!(payment_with(declared_only).payment_identifier(), Ok(None));
        let good = "pay_0123456789abcdef0123456789abcdef";
        assert_eq!(with(json!(good)).payment_identifier(), Ok(Some(good)));
        assert!(with(json!("x".repeat(128))).payment_identifier().is_ok());
        for bad in [
            json!("short_id_15char"),
            json!("x".repeat(129)),
            json!("pay_0123456789abcdef!"),
            json!(7),
        ] {
            assert!(with(bad.clone()).payment_identifier().is_err(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn optional_fields_sent_as_null_read_as_absent() {
        let payload: PaymentPayload = serde_json::from_value(serde_json::json!({
            "x402Version": 2,
            "resource": null,
            "accepted": {"scheme": "exact", "network": "eip155:8453", "amount": "1",
                         "asset": "0xa", "payTo": "0xb", "maxTimeoutSeconds": 60, "extra": null},
            "payload": {},
            "extensions": null
        }))
        .unwrap();
        assert!(payload.resource.is_none());
        assert!(payload.extensions.is_empty());
        assert!(payload.accepted.extra.is_empty());
        let required: PaymentRequired = serde_json::from_value(serde_json::json!({
            "x402Version": 2, "error": null, "resource": {"url": "https://x", "description": null},
            "accepts": [], "extensions": null
        }))
        .unwrap();
        assert!(required.extensions.is_empty() && required.error.is_none());
    }

    /// The `PAYMENT-REQUIRED` header of the x402 worked example (docs/x402.md, "Test vectors").
    pub(crate) const VECTOR_402: &str = "eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQYXltZW50IHJlcXVpcmVkIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vYXBpL3g0MDIvcXVvdGUiLCJkZXNjcmlwdGlvbiI6IlN3YXAgcXVvdGUgKDAuMDUgVVNEKSIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJlaXAxNTU6ODQ1MyIsImFtb3VudCI6IjUwMDAwIiwiYXNzZXQiOiIweDgzMzU4OWZDRDZlRGI2RTA4ZjRjN0MzMkQ0ZjcxYjU0YmRBMDI5MTMiLCJwYXlUbyI6IjB4NzA5OTc5NzBDNTE4MTJkYzNBMDEwQzdkMDFiNTBlMGQxN2RjNzlDOCIsIm1heFRpbWVvdXRTZWNvbmRzIjozMDAsImV4dHJhIjp7Im5hbWUiOiJVU0QgQ29pbiIsInZlcnNpb24iOiIyIn19XSwiZXh0ZW5zaW9ucyI6eyJzaWduLWluLXdpdGgteCI6eyJpbmZvIjp7ImRvbWFpbiI6ImFwaS5leGFtcGxlLmNvbSIsInVyaSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL2FwaS94NDAyL3F1b3RlIiwidmVyc2lvbiI6IjEiLCJub25jZSI6ImExYjJjM2Q0ZTVmNjc4OTBhMWIyYzNkNGU1ZjY3ODkwIiwiaXNzdWVkQXQiOiIyMDI2LTAxLTE1VDEwOjMwOjAwLjAwMFoiLCJleHBpcmF0aW9uVGltZSI6IjIwMjYtMDEtMTVUMTA6MzU6MDAuMDAwWiIsInN0YXRlbWVudCI6IlNpZ24gaW4gdG8gdGhlIHN3YXAgQVBJIiwicmVzb3VyY2VzIjpbImh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL2FwaS94NDAyL3F1b3RlIl19LCJzdXBwb3J0ZWRDaGFpbnMiOlt7ImNoYWluSWQiOiJlaXAxNTU6ODQ1MyIsInR5cGUiOiJlaXAxOTEifSx7ImNoYWluSWQiOiJzb2xhbmE6NWV5a3Q0VXNGdjhQOE5KZFRSRXBZMXZ6cUtxWkt2ZHAiLCJ0eXBlIjoiZWQyNTUxOSJ9XSwic2NoZW1hIjp7IiRzY2hlbWEiOiJodHRwczovL2pzb24tc2NoZW1hLm9yZy9kcmFmdC8yMDIwLTEyL3NjaGVtYSIsInR5cGUiOiJvYmplY3QifX19fQ==";

    #[test]
    fn the_worked_example_402_decodes_and_round_trips() {
        let required: PaymentRequired = decode_header(VECTOR_402).unwrap();
        assert_eq!(required.x402_version, 2);
        assert_eq!(required.error.as_deref(), Some("Payment required"));
        let accepts = &required.accepts[0];
        assert_eq!(accepts.amount, "50000");
        assert_eq!(accepts.asset, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(accepts.extra["name"], "USD Coin");
        assert_eq!(
            required.extensions[SIWX_EXTENSION]["info"]["nonce"],
            "a1b2c3d4e5f67890a1b2c3d4e5f67890"
        );
        // Our encoding is padded standard base64 and loses nothing.
        let encoded = encode_header(&required);
        assert!(encoded.ends_with('='));
        assert_eq!(
            decode_header::<PaymentRequired>(&encoded).unwrap(),
            required
        );
        // Unpadded input is accepted; URL-safe is not.
        let unpadded = VECTOR_402.trim_end_matches('=');
        assert_eq!(
            decode_header::<PaymentRequired>(unpadded).unwrap(),
            required
        );
        assert_eq!(
            decode_header::<PaymentRequired>("eyJ4-_"),
            Err(HeaderError::Base64)
        );
        assert!(matches!(
            decode_header::<PaymentRequired>("e30="),
            Err(HeaderError::Json(_))
        ));
    }

    #[test]
    fn accepted_requirements_match_exactly_but_extra_may_grow() {
        let required: PaymentRequired = decode_header(VECTOR_402).unwrap();
        let ours = &required.accepts[0];
        let mut theirs = ours.clone();
        assert!(ours.matches(&theirs));
        theirs
            .extra
            .insert("assetTransferMethod".into(), "eip3009".into());
        assert!(ours.matches(&theirs));
        theirs.pay_to = theirs.pay_to.to_lowercase();
        assert!(!ours.matches(&theirs), "payTo compares as a string");
        let mut cheaper = ours.clone();
        cheaper.amount = "1".into();
        assert!(!ours.matches(&cheaper));
        let mut no_name = ours.clone();
        no_name.extra.remove("name");
        assert!(!ours.matches(&no_name));
    }

    mod random_input {
        use proptest::prelude::*;

        use super::super::*;
        use crate::siwx::{self, SiwxPayload};

        /// The worked example's header with one byte changed, as base64 text.
        fn tampered() -> impl Strategy<Value = String> {
            let json = STANDARD.decode(super::VECTOR_402).unwrap();
            (0..json.len(), any::<u8>()).prop_map(move |(at, byte)| {
                let mut bytes = json.clone();
                bytes[at] = byte;
                STANDARD.encode(bytes)
            })
        }

        proptest! {
            #[test]
            fn the_x402_headers_take_any_input_without_panicking(
                raw in any::<String>(),
                bytes in proptest::collection::vec(any::<u8>(), 0..256),
                near in tampered(),
            ) {
                for text in [raw.clone(), STANDARD.encode(&bytes), near] {
                    let _ = decode_header::<PaymentRequired>(&text);
                    let _ = decode_header::<PaymentPayload>(&text);
                    if let Ok(proof) = decode_header::<SiwxPayload>(&text) {
                        let _ = siwx::message(&proof);
                        let _ = siwx::verify_signature(&proof);
                    }
                }
            }

            #[test]
            fn siwx_proofs_with_any_fields_are_refused_not_panicked_on(
                fields in proptest::collection::vec(any::<String>(), 8),
                chain in prop_oneof![
                    Just("eip155:8453".to_owned()),
                    Just(siwx::SOLANA_MAINNET.to_owned()),
                    any::<String>(),
                ],
                kind in prop_oneof![Just("eip191".to_owned()), Just("ed25519".to_owned()), any::<String>()],
            ) {
                let proof = SiwxPayload {
                    domain: fields[0].clone(),
                    address: fields[1].clone(),
                    statement: Some(fields[2].clone()),
                    uri: fields[3].clone(),
                    version: "1".into(),
                    chain_id: chain,
                    kind,
                    nonce: fields[4].clone(),
                    issued_at: fields[5].clone(),
                    expiration_time: Some(fields[6].clone()),
                    not_before: None,
                    request_id: None,
                    resources: Some(vec![fields[3].clone()]),
                    signature_scheme: None,
                    signature: fields[7].clone(),
                };
                let _ = siwx::message(&proof);
                prop_assert!(siwx::verify_signature(&proof).is_err());
            }
        }
    }
}

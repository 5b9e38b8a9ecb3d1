//! The `exact` scheme on EVM chains with EIP-3009 `transferWithAuthorization`
//! (docs/x402.md, "Paying"): the EIP-712 digest of an authorization, the payer it recovers to,
//! and the checks a facilitator makes before settling, in the reference facilitator's order.

use alloy_primitives::{Address, B256, FixedBytes, Signature, U256};
use alloy_sol_types::{Eip712Domain, SolStruct, sol};

use crate::wire::{ExactEvmPayload, PaymentPayload, PaymentRequirements};

sol! {
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// A payment that passed every check: who pays, and the authorization's nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPayment {
    pub payer: Address,
    pub nonce: B256,
    pub value: U256,
}

/// Why a payment is invalid, with the reference facilitator's reason codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("invalid_x402_version")]
    Version,
    #[error("invalid_exact_evm_scheme")]
    Scheme,
    #[error("invalid_exact_evm_network_mismatch")]
    Network,
    #[error("invalid_exact_evm_missing_eip712_domain")]
    Domain,
    #[error("invalid_payload")]
    Payload,
    #[error("invalid_exact_evm_failed_to_parse_signature")]
    SignatureFormat,
    #[error("invalid_exact_evm_signature")]
    Signature,
    #[error("invalid_exact_evm_recipient_mismatch")]
    Recipient,
    #[error("invalid_exact_evm_payload_authorization_value_mismatch")]
    Value,
    #[error("invalid_exact_evm_payload_authorization_valid_after")]
    NotYetValid,
    #[error("invalid_exact_evm_payload_authorization_valid_before")]
    Expired,
    #[error("invalid_exact_evm_asset_mismatch")]
    Asset,
    #[error("invalid_exact_evm_nonce_already_used")]
    NonceUsed,
}

crate::wire::scheme_invalid!(Invalid);

/// The EIP-712 domain of the token named by `requirements`: `extra.name` and `extra.version`,
/// the chain of `network`, the asset's contract.
pub fn domain(requirements: &PaymentRequirements) -> Result<Eip712Domain, Invalid> {
    let text = |key: &str| {
        requirements
            .extra
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or(Invalid::Domain)
    };
    let chain_id: u64 = requirements
        .network
        .strip_prefix("eip155:")
        .and_then(|id| id.parse().ok())
        .ok_or(Invalid::Network)?;
    let contract: Address = requirements.asset.parse().map_err(|_| Invalid::Asset)?;
    Ok(Eip712Domain::new(
        Some(text("name")?.into()),
        Some(text("version")?.into()),
        Some(U256::from(chain_id)),
        Some(contract),
        None,
    ))
}

/// The digest the payer signed.
pub fn digest(
    authorization: &TransferWithAuthorization,
    requirements: &PaymentRequirements,
) -> Result<B256, Invalid> {
    Ok(authorization.eip712_signing_hash(&domain(requirements)?))
}

/// The typed authorization of an `exact` EVM payload.
pub fn authorization(payload: &ExactEvmPayload) -> Result<TransferWithAuthorization, Invalid> {
    let auth = &payload.authorization;
    let address = |text: &str| text.parse::<Address>().map_err(|_| Invalid::Payload);
    let number = |text: &str| U256::from_str_radix(text, 10).map_err(|_| Invalid::Payload);
    let nonce: FixedBytes<32> = auth.nonce.parse().map_err(|_| Invalid::Payload)?;
    Ok(TransferWithAuthorization {
        from: address(&auth.from)?,
        to: address(&auth.to)?,
        value: number(&auth.value)?,
        validAfter: number(&auth.valid_after)?,
        validBefore: number(&auth.valid_before)?,
        nonce,
    })
}

/// Every check of the reference facilitator's `verify` except the nonce's use, against **our**
/// `requirements` at `now_secs`: version, scheme and network, the EIP-712 domain, the signature
/// recovering to `from`, the recipient, the exact amount and the time window.
pub fn verify(
    payment: &PaymentPayload,
    requirements: &PaymentRequirements,
    now_secs: u64,
) -> Result<VerifiedPayment, Invalid> {
    payment.of_kind(requirements, "exact")?;
    if payment.accepted.asset != requirements.asset {
        return Err(Invalid::Asset);
    }
    let payload: ExactEvmPayload =
        serde_json::from_value(payment.payload.clone()).map_err(|_| Invalid::Payload)?;
    let authorization = authorization(&payload)?;
    let digest = digest(&authorization, requirements)?;
    let signature_bytes = payload
        .signature
        .strip_prefix("0x")
        .and_then(|h| hex::decode(h).ok())
        .filter(|b| b.len() == 65)
        .ok_or(Invalid::SignatureFormat)?;
    let signature = Signature::from_raw(&signature_bytes).map_err(|_| Invalid::SignatureFormat)?;
    if signature.normalize_s().is_some() {
        return Err(Invalid::Signature);
    }
    let signer = signature
        .recover_address_from_prehash(&digest)
        .map_err(|_| Invalid::Signature)?;
    if signer != authorization.from {
        return Err(Invalid::Signature);
    }
    let pay_to: Address = requirements
        .pay_to
        .parse()
        .map_err(|_| Invalid::Recipient)?;
    if authorization.to != pay_to {
        return Err(Invalid::Recipient);
    }
    if authorization.value.to_string() != requirements.amount {
        return Err(Invalid::Value);
    }
    let now = U256::from(now_secs);
    if authorization.validAfter > now {
        return Err(Invalid::NotYetValid);
    }
    // Six seconds of margin, as both reference facilitators keep, so settlement lands in time.
    if authorization.validBefore < now + U256::from(6) {
        return Err(Invalid::Expired);
    }
    Ok(VerifiedPayment {
        payer: signer,
        nonce: authorization.nonce,
        value: authorization.value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Eip3009Authorization, decode_header};

    /// The paid retry of the x402 worked example (docs/x402.md, "Test vectors").
    fn vector() -> (PaymentPayload, PaymentRequirements) {
        let required: crate::wire::PaymentRequired =
            decode_header(crate::wire::tests::VECTOR_402).unwrap();
        let requirements = required.accepts[0].clone();
        let payload = PaymentPayload {
            x402_version: 2,
            resource: Some(required.resource.clone()),
            accepted: requirements.clone(),
            payload: serde_json::to_value(ExactEvmPayload {
                signature: "0xb61b0f7ff1cb587a181cdf2d81f24ae616e7a77ab5482ac24f68e7f65c70e4704aab97a1d82f973095b9b07564746e02cf93546a026bed9a19b8bb01aaecb4a31b".into(),
                authorization: Eip3009Authorization {
                    from: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".into(),
                    to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
                    value: "50000".into(),
                    valid_after: "0".into(),
                    valid_before: "1768473300".into(),
                    nonce: "0x3b1f0e2c8a7d4e6f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f".into(),
                },
            })
            .unwrap(),
            extensions: Default::default(),
        };
        (payload, requirements)
    }

    const NOW: u64 = 1_768_473_000;

    #[test]
    fn the_worked_example_digest_and_payer() {
        let (payment, requirements) = vector();
        let payload: ExactEvmPayload = serde_json::from_value(payment.payload.clone()).unwrap();
        let digest = digest(&authorization(&payload).unwrap(), &requirements).unwrap();
        assert_eq!(
            digest.to_string(),
            "0xd1f22c56a43fc165b2330664d7efd10e1a9e908cca07daa9da3761d68e50bc47"
        );
        assert_eq!(
            domain(&requirements).unwrap().separator().to_string(),
            "0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f"
        );
        let verified = verify(&payment, &requirements, NOW).unwrap();
        assert_eq!(
            verified.payer.to_checksum(None),
            "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
        );
        assert_eq!(verified.value, U256::from(50_000));
    }

    fn with_authorization(edit: impl FnOnce(&mut Eip3009Authorization)) -> PaymentPayload {
        let (mut payment, _) = vector();
        let mut payload: ExactEvmPayload = serde_json::from_value(payment.payload).unwrap();
        edit(&mut payload.authorization);
        payment.payload = serde_json::to_value(payload).unwrap();
        payment
    }

    #[test]
    fn every_check_refuses_with_its_reason() {
        let (payment, requirements) = vector();
        // Changed fields break the signature.
        let more = with_authorization(|a| a.value = "50001".into());
        assert_eq!(verify(&more, &requirements, NOW), Err(Invalid::Signature));
        let other_nonce = with_authorization(|a| a.nonce = format!("0x{}", "11".repeat(32)));
        assert_eq!(
            verify(&other_nonce, &requirements, NOW),
            Err(Invalid::Signature)
        );
        // Our requirements decide: another recipient or amount is refused before anything else.
        let mut pay_elsewhere = requirements.clone();
        pay_elsewhere.pay_to = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".into();
        assert_eq!(
            verify(&payment, &pay_elsewhere, NOW),
            Err(Invalid::Recipient)
        );
        let mut dearer = requirements.clone();
        dearer.amount = "60000".into();
        assert_eq!(verify(&payment, &dearer, NOW), Err(Invalid::Value));
        // The time window, with six seconds of margin.
        assert_eq!(
            verify(&payment, &requirements, 1_768_473_294),
            Ok(verify(&payment, &requirements, NOW).unwrap())
        );
        assert_eq!(
            verify(&payment, &requirements, 1_768_473_295),
            Err(Invalid::Expired)
        );
        // Version, scheme, network, asset, domain.
        let mut v1 = payment.clone();
        v1.x402_version = 1;
        assert_eq!(verify(&v1, &requirements, NOW), Err(Invalid::Version));
        let mut testnet = payment.clone();
        testnet.accepted.network = "eip155:84532".into();
        assert_eq!(verify(&testnet, &requirements, NOW), Err(Invalid::Network));
        let mut nameless = requirements.clone();
        nameless.extra.remove("name");
        assert_eq!(verify(&payment, &nameless, NOW), Err(Invalid::Domain));
        let mut garbage = payment.clone();
        garbage.payload = serde_json::json!({"signature": "0x00"});
        assert_eq!(verify(&garbage, &requirements, NOW), Err(Invalid::Payload));
        let mut short = payment.clone();
        short.payload["signature"] = "0x1234".into();
        assert_eq!(
            verify(&short, &requirements, NOW),
            Err(Invalid::SignatureFormat)
        );
    }
}

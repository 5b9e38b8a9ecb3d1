//! The `upto` scheme on EVM networks with Permit2 (docs/x402.md, "Paying for what a job used"):
//! the payer signs a Permit2 `PermitWitnessTransferFrom` for the maximum, spendable only by
//! the x402 upto proxy, only to `payTo`, only through the facilitator its witness names; the
//! facilitator verifies it against the maximum and later settles the amount actually used.

use alloy_primitives::{Address, B256, U256, address};
use alloy_sol_types::{Eip712Domain, SolStruct, sol};
use serde::{Deserialize, Serialize};

use crate::wire::{PaymentPayload, PaymentRequirements};

/// Permit2, the same address on every EVM chain.
pub const PERMIT2: Address = address!("0x000000000022D473030F116dDEE9F6B43aC78BA3");
/// The canonical x402 upto proxy: the only spender an upto payment may name.
pub const UPTO_PROXY: Address = address!("0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002");
/// How an upto requirement names its transfer method in `extra`.
pub const ASSET_TRANSFER_METHOD: &str = "permit2";

sol! {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    struct PermitWitnessTransferFrom {
        TokenPermissions permitted;
        address spender;
        uint256 nonce;
        uint256 deadline;
        Witness witness;
    }
}

/// The payload of an upto payment, as the reference client writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoPayload {
    pub signature: String,
    pub permit2_authorization: Permit2Authorization,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permit2Authorization {
    pub from: String,
    pub permitted: Permitted,
    pub spender: String,
    pub nonce: String,
    pub deadline: String,
    pub witness: WitnessFields,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permitted {
    pub token: String,
    pub amount: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessFields {
    pub to: String,
    pub facilitator: String,
    pub valid_after: String,
}

/// Why an upto payment is invalid, as the reference facilitators' reason codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("invalid_x402_version")]
    Version,
    #[error("invalid_upto_evm_scheme")]
    Scheme,
    #[error("invalid_upto_evm_network_mismatch")]
    Network,
    #[error("invalid_upto_evm_payload")]
    Payload,
    #[error("invalid_upto_evm_spender")]
    Spender,
    #[error("invalid_upto_evm_asset_mismatch")]
    Asset,
    #[error("invalid_upto_evm_recipient_mismatch")]
    Recipient,
    #[error("invalid_upto_evm_facilitator_mismatch")]
    Facilitator,
    #[error("invalid_upto_evm_payload_amount_mismatch")]
    Amount,
    #[error("invalid_upto_evm_payload_settlement_exceeds_amount")]
    Exceeds,
    #[error("invalid_upto_evm_payload_valid_after")]
    NotYetValid,
    #[error("invalid_upto_evm_payload_deadline")]
    Expired,
    #[error("invalid_upto_evm_signature")]
    Signature,
    #[error("invalid_upto_evm_nonce_already_used")]
    NonceUsed,
}

crate::wire::scheme_invalid!(Invalid);

/// The EIP-712 domain the payer signs under: Permit2 on the chain of `network`.
pub fn domain(network: &str) -> Result<Eip712Domain, Invalid> {
    let chain_id: u64 = network
        .strip_prefix("eip155:")
        .and_then(|id| id.parse().ok())
        .ok_or(Invalid::Network)?;
    Ok(Eip712Domain::new(
        Some("Permit2".into()),
        None,
        Some(U256::from(chain_id)),
        Some(PERMIT2),
        None,
    ))
}

/// The typed permit of an upto payload.
pub fn permit(payload: &UptoPayload) -> Result<(Address, PermitWitnessTransferFrom), Invalid> {
    let auth = &payload.permit2_authorization;
    let address = |text: &str| text.parse::<Address>().map_err(|_| Invalid::Payload);
    let number = |text: &str| U256::from_str_radix(text, 10).map_err(|_| Invalid::Payload);
    Ok((
        address(&auth.from)?,
        PermitWitnessTransferFrom {
            permitted: TokenPermissions {
                token: address(&auth.permitted.token)?,
                amount: number(&auth.permitted.amount)?,
            },
            spender: address(&auth.spender)?,
            nonce: number(&auth.nonce)?,
            deadline: number(&auth.deadline)?,
            witness: Witness {
                to: address(&auth.witness.to)?,
                facilitator: address(&auth.witness.facilitator)?,
                validAfter: number(&auth.witness.valid_after)?,
            },
        },
    ))
}

/// The digest the payer signed.
pub fn digest(permit: &PermitWitnessTransferFrom, network: &str) -> Result<B256, Invalid> {
    Ok(permit.eip712_signing_hash(&domain(network)?))
}

/// The payload of an upto payment.
pub fn payload(payment: &PaymentPayload) -> Result<UptoPayload, Invalid> {
    serde_json::from_value(payment.payload.clone()).map_err(|_| Invalid::Payload)
}

/// Who signed the permit (when it is its `from`) and its Permit2 nonce.
pub fn payer(payment: &PaymentPayload, network: &str) -> Result<(Address, U256), Invalid> {
    let payload = payload(payment)?;
    let (from, permit) = permit(&payload)?;
    let signature: alloy_primitives::Signature =
        payload.signature.parse().map_err(|_| Invalid::Signature)?;
    let signer = signature
        .recover_address_from_prehash(&digest(&permit, network)?)
        .map_err(|_| Invalid::Signature)?;
    if signer != from {
        return Err(Invalid::Signature);
    }
    Ok((signer, permit.nonce))
}

/// What a payment under a permit is known by, beside the payer: its Permit2 nonce, kept apart
/// from EIP-3009 nonces (`permit2:<decimal>`).
pub fn payment_key(nonce: U256) -> String {
    format!("permit2:{nonce}")
}

/// A permit that passed every check: who pays, its nonce, and the most it lets be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPermit {
    pub payer: Address,
    pub nonce: U256,
    pub maximum: U256,
}

/// Every check the scheme makes of a permit against **our** `requirements` at `now_secs`,
/// whose `amount` is the maximum when verifying and the amount to take when settling: the
/// version, scheme and network; the upto proxy as spender; the token; `payTo` and our
/// facilitator (`extra.facilitatorAddress`) in the witness; a permitted amount equal to the
/// maximum the payment accepted and at least `requirements.amount`; `validAfter ≤ now` and a
/// deadline at least six seconds away; the signature by `from`.
pub fn verify(
    payment: &PaymentPayload,
    requirements: &PaymentRequirements,
    now_secs: u64,
) -> Result<VerifiedPermit, Invalid> {
    payment.of_kind(requirements, "upto")?;
    let (payer, nonce) = self::payer(payment, &requirements.network)?;
    let (_, permit) = permit(&self::payload(payment)?)?;
    if permit.spender != UPTO_PROXY {
        return Err(Invalid::Spender);
    }
    let ours = |text: &str, invalid: Invalid| text.parse::<Address>().map_err(|_| invalid);
    if permit.permitted.token != ours(&requirements.asset, Invalid::Asset)? {
        return Err(Invalid::Asset);
    }
    if permit.witness.to != ours(&requirements.pay_to, Invalid::Recipient)? {
        return Err(Invalid::Recipient);
    }
    let facilitator = requirements
        .extra
        .get("facilitatorAddress")
        .and_then(|f| f.as_str())
        .unwrap_or_default();
    if permit.witness.facilitator != ours(facilitator, Invalid::Facilitator)? {
        return Err(Invalid::Facilitator);
    }
    let number = |text: &str| U256::from_str_radix(text, 10).map_err(|_| Invalid::Amount);
    if permit.permitted.amount != number(&payment.accepted.amount)? {
        return Err(Invalid::Amount);
    }
    if number(&requirements.amount)? > permit.permitted.amount {
        return Err(Invalid::Exceeds);
    }
    let now = U256::from(now_secs);
    if permit.witness.validAfter > now {
        return Err(Invalid::NotYetValid);
    }
    if permit.deadline < now + U256::from(6) {
        return Err(Invalid::Expired);
    }
    Ok(VerifiedPermit {
        payer,
        nonce,
        maximum: permit.permitted.amount,
    })
}

#[cfg(test)]
mod tests;

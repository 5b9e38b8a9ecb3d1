//! Clients of the x402 API for tests: plain requests, payments signed with a local key
//! (alloy's signer, EIP-3009), and SIWX proofs for EVM and Solana wallets.

#![allow(dead_code)]

use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use ed25519_dalek::Signer;
use serde_json::Value;
use swapd_x402::exact::TransferWithAuthorization;
use swapd_x402::siwx::SiwxPayload;
use swapd_x402::wire::{
    self, Eip3009Authorization, ExactEvmPayload, PaymentPayload, PaymentRequired,
};

use super::{Resp, TestServer};

/// A plain HTTP request (no HMAC) with extra headers.
pub async fn send(
    server: &TestServer,
    method: &str,
    path_and_query: &str,
    body: Option<&Value>,
    headers: &[(&str, String)],
) -> Resp {
    let mut request = reqwest::Client::new().request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("{}{path_and_query}", server.base),
    );
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    Resp {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

pub fn required(resp: &Resp) -> PaymentRequired {
    wire::decode_header(resp.header("payment-required").expect("PAYMENT-REQUIRED")).unwrap()
}

/// Pays `required` with `signer` the first way it offers: an EIP-3009 authorization for exactly
/// what it asks, valid for its timeout from `now_secs`, with a fresh nonce.
pub fn pay(required: &PaymentRequired, signer: &PrivateKeySigner, now_secs: i64) -> PaymentPayload {
    pay_as(&required.accepts[0], required, signer, now_secs)
}

/// Pays `required` with `signer` as `accepted` asks (one of its ways to pay, or another).
pub fn pay_as(
    accepted: &wire::PaymentRequirements,
    required: &PaymentRequired,
    signer: &PrivateKeySigner,
    now_secs: i64,
) -> PaymentPayload {
    let accepted = accepted.clone();
    let nonce: [u8; 32] = rand::random();
    let authorization = TransferWithAuthorization {
        from: signer.address(),
        to: accepted.pay_to.parse().unwrap(),
        value: accepted.amount.parse().unwrap(),
        validAfter: alloy_primitives::U256::ZERO,
        validBefore: alloy_primitives::U256::from(now_secs as u64 + accepted.max_timeout_seconds),
        nonce: nonce.into(),
    };
    let domain = swapd_x402::exact::domain(&accepted).unwrap();
    let signature = signer
        .sign_typed_data_sync(&authorization, &domain)
        .unwrap();
    PaymentPayload {
        x402_version: 2,
        resource: Some(required.resource.clone()),
        accepted,
        payload: serde_json::to_value(ExactEvmPayload {
            signature: format!("0x{}", alloy_primitives::hex::encode(signature.as_bytes())),
            authorization: Eip3009Authorization {
                from: signer.address().to_checksum(None),
                to: authorization.to.to_checksum(None),
                value: authorization.value.to_string(),
                valid_after: "0".into(),
                valid_before: authorization.validBefore.to_string(),
                nonce: format!("0x{}", alloy_primitives::hex::encode(nonce)),
            },
        })
        .unwrap(),
        extensions: required.extensions.clone(),
    }
}

/// A payment of `required` as `accepted` asks, carrying `payload`.
fn paying(
    accepted: &wire::PaymentRequirements,
    required: &PaymentRequired,
    payload: impl serde::Serialize,
) -> PaymentPayload {
    PaymentPayload {
        x402_version: 2,
        resource: Some(required.resource.clone()),
        accepted: accepted.clone(),
        payload: serde_json::to_value(payload).unwrap(),
        extensions: Default::default(),
    }
}

/// Pays `required` as `accepted` (an `upto` way to pay) asks, by `signer` as the reference
/// client does: a Permit2 permit of its maximum to the upto proxy, witnessing `payTo` and the
/// facilitator, valid for its timeout from `now_secs`, with a fresh nonce.
pub fn pay_upto(
    accepted: &wire::PaymentRequirements,
    required: &PaymentRequired,
    signer: &PrivateKeySigner,
    now_secs: i64,
) -> PaymentPayload {
    use swapd_x402::upto;
    let address = |text: &str| text.parse::<alloy_primitives::Address>().unwrap();
    let permit = upto::PermitWitnessTransferFrom {
        permitted: upto::TokenPermissions {
            token: address(&accepted.asset),
            amount: accepted.amount.parse().unwrap(),
        },
        spender: upto::UPTO_PROXY,
        nonce: alloy_primitives::U256::from_be_bytes(rand::random::<[u8; 32]>()),
        deadline: alloy_primitives::U256::from(now_secs as u64 + accepted.max_timeout_seconds),
        witness: upto::Witness {
            to: address(&accepted.pay_to),
            facilitator: address(accepted.extra["facilitatorAddress"].as_str().unwrap()),
            validAfter: alloy_primitives::U256::ZERO,
        },
    };
    let signature = signer
        .sign_typed_data_sync(&permit, &upto::domain(&accepted.network).unwrap())
        .unwrap();
    let payload = upto::UptoPayload {
        signature: format!("0x{}", alloy_primitives::hex::encode(signature.as_bytes())),
        permit2_authorization: upto::Permit2Authorization {
            from: signer.address().to_checksum(None),
            permitted: upto::Permitted {
                token: permit.permitted.token.to_checksum(None),
                amount: permit.permitted.amount.to_string(),
            },
            spender: upto::UPTO_PROXY.to_checksum(None),
            nonce: permit.nonce.to_string(),
            deadline: permit.deadline.to_string(),
            witness: upto::WitnessFields {
                to: permit.witness.to.to_checksum(None),
                facilitator: permit.witness.facilitator.to_checksum(None),
                valid_after: "0".into(),
            },
        },
    };
    paying(accepted, required, payload)
}

/// Pays `required` as `accepted` (a Solana way to pay) asks, by `authority` as the reference
/// client does: a transfer of exactly its amount on its blockhash hint, with a fresh memo.
pub fn pay_solana(
    accepted: &wire::PaymentRequirements,
    required: &PaymentRequired,
    authority: &ed25519_dalek::SigningKey,
) -> PaymentPayload {
    let blockhash =
        swapd_x402::exact_svm::pubkey(accepted.extra["recentBlockhash"].as_str().unwrap()).unwrap();
    let memo = alloy_primitives::hex::encode(rand::random::<[u8; 16]>());
    let payload = swapd_x402::exact_svm::pay(accepted, authority, blockhash, 6, &memo).unwrap();
    paying(accepted, required, payload)
}

pub fn payment_header(payment: &PaymentPayload) -> (&'static str, String) {
    ("PAYMENT-SIGNATURE", wire::encode_header(payment))
}

/// The SIWX payload for the challenge in `required`, unsigned.
pub fn siwx_payload(
    required: &PaymentRequired,
    chain: &str,
    kind: &str,
    address: String,
) -> SiwxPayload {
    let info = &required.extensions["sign-in-with-x"]["info"];
    let text = |key: &str| info[key].as_str().unwrap().to_owned();
    SiwxPayload {
        domain: text("domain"),
        address,
        statement: info["statement"].as_str().map(Into::into),
        uri: text("uri"),
        version: text("version"),
        chain_id: chain.into(),
        kind: kind.into(),
        nonce: text("nonce"),
        issued_at: text("issuedAt"),
        expiration_time: None,
        not_before: None,
        request_id: None,
        resources: info["resources"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap().to_owned()).collect()),
        signature_scheme: None,
        signature: String::new(),
    }
}

/// An EIP-191 SIWX proof by `signer` for the challenge in `required`.
pub fn prove_evm(required: &PaymentRequired, signer: &PrivateKeySigner) -> (&'static str, String) {
    let mut payload = siwx_payload(
        required,
        "eip155:8453",
        "eip191",
        signer.address().to_checksum(None),
    );
    sign_evm(&mut payload, signer);
    ("SIGN-IN-WITH-X", wire::encode_header(&payload))
}

pub fn sign_evm(payload: &mut SiwxPayload, signer: &PrivateKeySigner) {
    let text = swapd_x402::siwx::message(payload).unwrap();
    let signature = signer.sign_message_sync(text.as_bytes()).unwrap();
    payload.signature = format!("0x{}", alloy_primitives::hex::encode(signature.as_bytes()));
}

/// An ed25519 SIWX proof by `key` for the challenge in `required`.
pub fn prove_solana(
    required: &PaymentRequired,
    key: &ed25519_dalek::SigningKey,
) -> (&'static str, String) {
    let address = bs58::encode(key.verifying_key().to_bytes()).into_string();
    let mut payload = siwx_payload(
        required,
        swapd_x402::siwx::SOLANA_MAINNET,
        "ed25519",
        address,
    );
    let text = swapd_x402::siwx::message(&payload).unwrap();
    payload.signature = bs58::encode(key.sign(text.as_bytes()).to_bytes()).into_string();
    ("SIGN-IN-WITH-X", wire::encode_header(&payload))
}

pub fn idempotency(key: &str) -> (&'static str, String) {
    ("Idempotency-Key", key.to_owned())
}

//! What a wallet reports about an execution, checked: transaction hashes per chain namespace,
//! and EIP-712 signatures recovered to the plan's wallet.

use alloy_primitives::{Address, B256, Signature};
use swapd_types::onchain::{ReportedSignature, SignatureRequest};

use crate::onchain::plan::{ExecutionPlan, SignedStep};

/// A transaction hash as reported, checked for `namespace` and normalized: `0x` + 64 hex on
/// EVM chains (lowercased), a base58 64-byte signature on Solana.
pub fn normalize_tx_hash(namespace: &str, text: &str) -> Result<String, &'static str> {
    match namespace {
        "eip155" => {
            let hex = text
                .strip_prefix("0x")
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or("an EVM txHash is 0x and 64 hexadecimal digits")?;
            Ok(format!("0x{}", hex.to_ascii_lowercase()))
        }
        "solana" => match bs58::decode(text).into_vec() {
            Ok(bytes) if bytes.len() == 64 && text.len() <= 88 => Ok(text.to_owned()),
            _ => Err("a Solana txHash is the base58 transaction signature (64 bytes)"),
        },
        _ => Err("unknown chain namespace"),
    }
}

/// Why a reported signature does not sign its step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureProblem {
    #[error("expected {expected} signatures (one per signature step), got {got}")]
    Count { expected: usize, got: usize },
    #[error("signature {index}: expected signatureId `{expected}` with purpose `{purpose}`")]
    WrongStep {
        index: usize,
        expected: String,
        purpose: String,
    },
    #[error("signature `{0}` is not a 65-byte 0x-hex signature")]
    Malformed(String),
    #[error("signature `{0}` has a non-canonical (high) s value")]
    NonCanonical(String),
    #[error("signature `{id}` was made by {recovered}, not by the plan's wallet {wallet}")]
    WrongSigner {
        id: String,
        recovered: String,
        wallet: String,
    },
    #[error("signature `{0}` does not match its typed data")]
    Unrecoverable(String),
    #[error("the plan's typed data for `{0}` cannot be hashed")]
    BadTypedData(String),
}

/// Checks that `reported` holds, in order, one signature per signature step of `plan`, each an
/// EIP-712 signature of the step's typed data by the plan's wallet. Returns the normalized
/// report.
pub fn verify_signatures(
    plan: &ExecutionPlan,
    reported: &[ReportedSignature],
) -> Result<Vec<SignedStep>, SignatureProblem> {
    let requests: Vec<&SignatureRequest> = plan.signature_requests().collect();
    if requests.len() != reported.len() {
        return Err(SignatureProblem::Count {
            expected: requests.len(),
            got: reported.len(),
        });
    }
    let wallet: Address = plan
        .wallet_address
        .parse()
        .map_err(|_| SignatureProblem::BadTypedData(plan.wallet_address.clone()))?;
    requests
        .iter()
        .zip(reported)
        .enumerate()
        .map(|(index, (request, signed))| {
            if signed.signature_id != request.signature_id || signed.purpose != request.purpose {
                return Err(SignatureProblem::WrongStep {
                    index,
                    expected: request.signature_id.clone(),
                    purpose: request.purpose.clone(),
                });
            }
            let id = &request.signature_id;
            let hash = typed_data_hash(&request.typed_data)
                .ok_or_else(|| SignatureProblem::BadTypedData(id.clone()))?;
            let recovered = recover_signer(&hash, &signed.signature, id)?;
            if recovered != wallet {
                return Err(SignatureProblem::WrongSigner {
                    id: id.clone(),
                    recovered: recovered.to_checksum(None),
                    wallet: wallet.to_checksum(None),
                });
            }
            Ok(SignedStep {
                signature_id: id.clone(),
                purpose: request.purpose.clone(),
                signature: signed.signature.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// The EIP-712 signing hash of typed data in `eth_signTypedData_v4` JSON.
pub fn typed_data_hash(typed_data: &serde_json::Value) -> Option<B256> {
    let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed_data.clone()).ok()?;
    typed.eip712_signing_hash().ok()
}

fn recover_signer(hash: &B256, signature: &str, id: &str) -> Result<Address, SignatureProblem> {
    let bytes = signature
        .strip_prefix("0x")
        .and_then(|h| hex::decode(h).ok())
        .filter(|b| b.len() == 65)
        .ok_or_else(|| SignatureProblem::Malformed(id.into()))?;
    let signature =
        Signature::from_raw(&bytes).map_err(|_| SignatureProblem::Malformed(id.into()))?;
    // Contracts (OpenZeppelin ECDSA, USDC's permit) refuse high-s signatures; so do we, which
    // also keeps one signature per (message, key).
    if signature.normalize_s().is_some() {
        return Err(SignatureProblem::NonCanonical(id.into()));
    }
    signature
        .recover_address_from_prehash(hash)
        .map_err(|_| SignatureProblem::Unrecoverable(id.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onchain::plan::tests::plan;
    use swapd_types::onchain::PlanStep;

    #[test]
    fn tx_hashes_are_checked_per_namespace() {
        let evm = format!("0x{}", "AB".repeat(32));
        assert_eq!(
            normalize_tx_hash("eip155", &evm).unwrap(),
            format!("0x{}", "ab".repeat(32))
        );
        assert!(normalize_tx_hash("eip155", "0x1234").is_err());
        assert!(normalize_tx_hash("eip155", &"ab".repeat(33)).is_err());
        let solana = bs58::encode([7u8; 64]).into_string();
        assert_eq!(normalize_tx_hash("solana", &solana).unwrap(), solana);
        assert!(normalize_tx_hash("solana", &bs58::encode([7u8; 32]).into_string()).is_err());
        assert!(normalize_tx_hash("solana", &evm).is_err());
    }

    /// The example of EIP-712 itself (`Mail` from Cow to Bob, signed with keccak256("cow")).
    fn eip712_mail() -> serde_json::Value {
        serde_json::json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"}
                ],
                "Person": [
                    {"name": "name", "type": "string"},
                    {"name": "wallet", "type": "address"}
                ],
                "Mail": [
                    {"name": "from", "type": "Person"},
                    {"name": "to", "type": "Person"},
                    {"name": "contents", "type": "string"}
                ]
            },
            "primaryType": "Mail",
            "domain": {
                "name": "Ether Mail",
                "version": "1",
                "chainId": 1,
                "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"
            },
            "message": {
                "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                "contents": "Hello, Bob!"
            }
        })
    }

    const MAIL_SIGNATURE: &str = "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b915621c";

    fn mail_plan(wallet: &str) -> ExecutionPlan {
        let mut plan = plan(true);
        plan.wallet_address = wallet.into();
        plan.steps = vec![PlanStep {
            step_id: "s1".into(),
            kind: "signature".into(),
            description: "sign".into(),
            chain_id: Some(1),
            chain: "eip155:1".into(),
            transaction: None,
            signature: Some(SignatureRequest {
                signature_id: "sig_mail".into(),
                purpose: "order".into(),
                typed_data: eip712_mail(),
            }),
        }];
        plan
    }

    fn signed(signature: &str) -> Vec<ReportedSignature> {
        vec![ReportedSignature {
            signature_id: "sig_mail".into(),
            purpose: "order".into(),
            signature: signature.into(),
        }]
    }

    #[test]
    fn eip712_signatures_recover_to_the_plan_wallet() {
        assert_eq!(
            typed_data_hash(&eip712_mail()).unwrap().to_string(),
            "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"
        );
        let cow = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826";
        let ok = verify_signatures(&mail_plan(cow), &signed(MAIL_SIGNATURE)).unwrap();
        assert_eq!(ok[0].signature, MAIL_SIGNATURE);
        // Any letter case of the wallet is the same wallet.
        assert!(
            verify_signatures(&mail_plan(&cow.to_lowercase()), &signed(MAIL_SIGNATURE)).is_ok()
        );

        let bob = "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB";
        assert!(matches!(
            verify_signatures(&mail_plan(bob), &signed(MAIL_SIGNATURE)),
            Err(SignatureProblem::WrongSigner { .. })
        ));
        // A flipped bit of r recovers someone else (or nobody).
        let tampered = MAIL_SIGNATURE.replacen("4355", "4356", 1);
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &signed(&tampered)),
            Err(SignatureProblem::WrongSigner { .. } | SignatureProblem::Unrecoverable(_))
        ));
        // The same signature over changed typed data does not verify either.
        let mut changed = mail_plan(cow);
        changed.steps[0].signature.as_mut().unwrap().typed_data["message"]["contents"] =
            "Hello, Eve!".into();
        assert!(verify_signatures(&changed, &signed(MAIL_SIGNATURE)).is_err());
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &signed("0x1234")),
            Err(SignatureProblem::Malformed(_))
        ));
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &[]),
            Err(SignatureProblem::Count {
                expected: 1,
                got: 0
            })
        ));
        let mut wrong_id = signed(MAIL_SIGNATURE);
        wrong_id[0].signature_id = "sig_other".into();
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &wrong_id),
            Err(SignatureProblem::WrongStep { .. })
        ));
    }

    #[test]
    fn high_s_twins_of_valid_signatures_are_refused() {
        let signature = Signature::from_raw(&hex::decode(&MAIL_SIGNATURE[2..]).unwrap()).unwrap();
        // (r, n - s, !v) recovers the same key: the malleable twin.
        let n = alloy_primitives::U256::from_str_radix(
            "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
            16,
        )
        .unwrap();
        let twin = Signature::new(signature.r(), n - signature.s(), !signature.v());
        let twin = format!("0x{}", hex::encode(twin.as_bytes()));
        assert!(matches!(
            verify_signatures(
                &mail_plan("0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
                &signed(&twin)
            ),
            Err(SignatureProblem::NonCanonical(_))
        ));
    }
}

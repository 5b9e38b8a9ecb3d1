use super::*;
use serde_json::json;

const PAYER: &str = "0x94fbE87527182391dE06125623c0a9619C962E22";
const PAY_TO: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const FACILITATOR: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const NOW: u64 = 1_768_473_000;

/// The requirements of a 0.60 USDC maximum on Base, and a permit for them signed with viem by
/// the reference client's types (`uptoPermit2WitnessTypes` of `@x402/evm` 2.27).
fn vector() -> (PaymentPayload, PaymentRequirements) {
    let requirements: PaymentRequirements = serde_json::from_value(json!({
        "scheme": "upto", "network": "eip155:8453", "amount": "600000", "asset": USDC,
        "payTo": PAY_TO, "maxTimeoutSeconds": 600,
        "extra": {"name": "USD Coin", "version": "2", "assetTransferMethod": "permit2",
                  "facilitatorAddress": FACILITATOR}
    }))
    .unwrap();
    let payment = PaymentPayload {
        x402_version: 2,
        resource: None,
        accepted: requirements.clone(),
        payload: json!({
            "signature": "0x3218e5c8ecbde2863c8f66eb935d74702a3174d851feb58e58207a178a2e34bf04333b0fda37ceed2476729bc1a68c5a0f30b46eddf7bbf29e3a2f7c038a80e81c",
            "permit2Authorization": {
                "from": PAYER,
                "permitted": {"token": USDC, "amount": "600000"},
                "spender": "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002",
                "nonce": "12345678901234567890",
                "deadline": "1768473600",
                "witness": {"to": PAY_TO, "facilitator": FACILITATOR, "validAfter": "0"}
            }
        }),
        extensions: Default::default(),
    };
    (payment, requirements)
}

#[test]
fn the_reference_clients_permit_hashes_and_recovers_as_viem_signs_it() {
    let (payment, requirements) = vector();
    let (_, permit) = permit(&payload(&payment).unwrap()).unwrap();
    assert_eq!(
        digest(&permit, "eip155:8453").unwrap().to_string(),
        "0x8612299f050251da3dbda7d0fc24a3c1bb032f7422e9b3e09f8261a5389f4f74"
    );
    let verified = verify(&payment, &requirements, NOW).unwrap();
    assert_eq!(verified.payer.to_checksum(None), PAYER);
    assert_eq!(verified.maximum, U256::from(600_000));
    assert_eq!(verified.nonce, U256::from(12_345_678_901_234_567_890u64));
}

#[test]
fn settling_takes_at_most_the_maximum_and_every_check_refuses_with_its_reason() {
    let (payment, requirements) = vector();
    // Settling: any amount up to the maximum, zero included; more is refused.
    for amount in ["0", "50000", "600000"] {
        let mut actual = requirements.clone();
        actual.amount = amount.into();
        assert!(verify(&payment, &actual, NOW).is_ok(), "{amount}");
    }
    let mut more = requirements.clone();
    more.amount = "600001".into();
    assert_eq!(verify(&payment, &more, NOW), Err(Invalid::Exceeds));

    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut payment = payment.clone();
        edit(&mut payment.payload["permit2Authorization"]);
        verify(&payment, &requirements, NOW).unwrap_err()
    };
    // A changed field breaks the signature.
    assert_eq!(
        edited(&|auth| auth["permitted"]["amount"] = json!("700000")),
        Invalid::Signature
    );
    assert_eq!(
        edited(&|auth| auth["from"] = json!(PAY_TO)),
        Invalid::Signature
    );
    // Our requirements decide: another payTo, facilitator, asset, or maximum.
    let refused = |edit: &dyn Fn(&mut PaymentRequirements)| {
        let mut ours = requirements.clone();
        edit(&mut ours);
        verify(&payment, &ours, NOW).unwrap_err()
    };
    assert_eq!(
        refused(&|r| r.pay_to = FACILITATOR.into()),
        Invalid::Recipient
    );
    assert_eq!(
        refused(&|r| {
            r.extra.insert("facilitatorAddress".into(), json!(PAY_TO));
        }),
        Invalid::Facilitator
    );
    assert_eq!(refused(&|r| r.asset = PAY_TO.into()), Invalid::Asset);
    let mut dearer = payment.clone();
    dearer.accepted.amount = "700000".into();
    assert_eq!(verify(&dearer, &requirements, NOW), Err(Invalid::Amount));
    // Time: the deadline with six seconds of margin.
    assert!(verify(&payment, &requirements, 1_768_473_594).is_ok());
    assert_eq!(
        verify(&payment, &requirements, 1_768_473_595),
        Err(Invalid::Expired)
    );
    // Scheme and network.
    assert_eq!(refused(&|r| r.scheme = "exact".into()), Invalid::Scheme);
    let mut elsewhere = payment.clone();
    elsewhere.accepted.network = "eip155:137".into();
    assert_eq!(
        verify(&elsewhere, &requirements, NOW),
        Err(Invalid::Network)
    );
}

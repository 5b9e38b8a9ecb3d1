use super::*;
use serde_json::json;

const PAY_TO: &str = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4";
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

#[test]
fn associated_token_accounts_are_the_program_addresses_solana_derives() {
    // As `@solana/kit`'s getProgramDerivedAddress derives them (bumps 254 and 255).
    let owner = pubkey(PAY_TO).unwrap();
    let mint = pubkey(USDC).unwrap();
    assert_eq!(
        base58(&associated_token_account(
            &owner,
            &mint,
            &program(TOKEN_PROGRAM)
        )),
        "3XZXfFJHF5ox3yPop16oqYfSWxLpkjsEuvTe2S67G2rj"
    );
    assert_eq!(
        base58(&associated_token_account(
            &owner,
            &mint,
            &program(TOKEN_2022_PROGRAM)
        )),
        "H7BrdQ48x8XkXh3UXs7pvPxxF8Z5Ej1WyBwU2ZryzTBL"
    );
}

fn fee_payer() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

fn requirements() -> PaymentRequirements {
    PaymentRequirements {
        scheme: "exact".into(),
        network: SOLANA_MAINNET.into(),
        amount: "50000".into(),
        asset: USDC.into(),
        pay_to: PAY_TO.into(),
        max_timeout_seconds: 60,
        extra: json!({"feePayer": base58(fee_payer().verifying_key().as_bytes())})
            .as_object()
            .unwrap()
            .clone(),
    }
}

fn payment_of(payload: &ExactSvmPayload) -> PaymentPayload {
    PaymentPayload {
        x402_version: 2,
        resource: None,
        accepted: requirements(),
        payload: serde_json::to_value(payload).unwrap(),
        extensions: Default::default(),
    }
}

fn paid(authority: &SigningKey) -> PaymentPayload {
    payment_of(
        &pay(
            &requirements(),
            authority,
            [9; 32],
            6,
            "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        )
        .unwrap(),
    )
}

/// `payment`'s transaction edited by `edit`, re-signed by `authority` (so only the edit is
/// wrong).
fn edited(authority: &SigningKey, edit: impl FnOnce(&mut Message)) -> PaymentPayload {
    let mut tx = transaction(&paid(authority)).unwrap();
    edit(&mut tx.message);
    tx.message_bytes = tx.message.encode();
    tx.signatures = vec![[0; 64]; usize::from(tx.message.required_signatures)];
    if let Some(slot) = tx.signatures.get_mut(1) {
        *slot = authority.sign(&tx.message_bytes).to_bytes();
    }
    payment_of(&ExactSvmPayload {
        transaction: STANDARD.encode(tx.encode()),
    })
}

#[test]
fn a_payment_built_as_the_reference_client_builds_it_verifies_and_names_its_authority() {
    let authority = SigningKey::from_bytes(&[3; 32]);
    let payment = paid(&authority);
    let verified = verify(&payment, &requirements(), 6).unwrap();
    assert_eq!(verified.payer, base58(authority.verifying_key().as_bytes()));
    assert_eq!(verified.amount, 50_000);
    assert_eq!(
        payer(&payment).unwrap(),
        (verified.payer.clone(), verified.transaction.message_hash())
    );
    // Read back byte for byte; its settlement is known by its message's hash.
    let tx = transaction(&payment).unwrap();
    assert_eq!(Transaction::parse(&tx.encode()).unwrap(), tx);
    assert_eq!(tx.message_hash(), verified.transaction.message_hash());
    assert_eq!(STANDARD.decode(tx.message_hash()).unwrap().len(), 32);
    // The fee payer's signature fills slot 0 and names the settled transaction.
    let mut signed = tx.clone();
    let id = sign_as_fee_payer(&mut signed, &fee_payer());
    assert_eq!(bs58::decode(&id).into_vec().unwrap(), signed.signatures[0]);
    assert_eq!(
        signed.message_hash(),
        tx.message_hash(),
        "the hash ignores it"
    );
}

#[test]
fn every_must_of_the_specification_refuses_with_its_reason() {
    let authority = SigningKey::from_bytes(&[3; 32]);
    let reason = |payment: &PaymentPayload| verify(payment, &requirements(), 6).unwrap_err();

    // Not a transaction, or one with lookup tables or a bad index.
    let mut garbage = paid(&authority);
    garbage.payload = json!({"transaction": "AAAA"});
    assert_eq!(reason(&garbage), Invalid::Decode);
    let mut tx = transaction(&paid(&authority)).unwrap();
    tx.message_bytes.push(0);
    let trailing = payment_of(&ExactSvmPayload {
        transaction: STANDARD.encode(tx.encode()),
    });
    assert_eq!(reason(&trailing), Invalid::Decode);
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions[2].accounts[0] = 99)),
        Invalid::Decode
    );

    // Layout: count, compute limit, compute price and its cap, the transfer.
    assert_eq!(
        reason(&edited(&authority, |m| {
            m.instructions.truncate(2);
        })),
        Invalid::InstructionCount
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions.swap(0, 1))),
        Invalid::ComputeLimit
    );
    assert_eq!(
        reason(&edited(&authority, |m| {
            m.instructions[1].data[1..9].copy_from_slice(&5_000_001u64.to_le_bytes())
        })),
        Invalid::ComputePriceTooHigh
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions[2].data[0] = 3)),
        Invalid::NoTransfer
    );
    // Mint, decimals, destination, amount (equal: more is refused too).
    assert_eq!(
        reason(&edited(&authority, |m| m.keys[4] = [1; 32])),
        Invalid::Mint
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions[2].data[9] = 9)),
        Invalid::Mint
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.keys[3] = m.keys[2])),
        Invalid::Recipient
    );
    for amount in [49_999u64, 50_001] {
        assert_eq!(
            reason(&edited(&authority, |m| {
                m.instructions[2].data[1..9].copy_from_slice(&amount.to_le_bytes())
            })),
            Invalid::Amount
        );
    }
    // One memo, no other program; the memo asked for, when asked.
    assert_eq!(
        reason(&edited(&authority, |m| {
            let memo = m.instructions[3].clone();
            m.instructions.push(memo);
        })),
        Invalid::Memo
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions[3].program = 6)),
        Invalid::UnknownInstruction
    );
    let mut with_memo = requirements();
    with_memo.extra.insert("memo".into(), json!("order-42"));
    assert_eq!(
        verify(&paid(&authority), &with_memo, 6).unwrap_err(),
        Invalid::Memo
    );
    // The fee payer: ours, in no instruction, not the one paying.
    assert_eq!(
        reason(&edited(&authority, |m| m.keys[0] = [8; 32])),
        Invalid::FeePayer
    );
    assert_eq!(
        reason(&edited(&authority, |m| m.instructions[3].accounts.push(0))),
        Invalid::FeePayerInInstruction
    );
    // The authority's signature: another key's, or none at all.
    let mut forged = transaction(&paid(&authority)).unwrap();
    forged.signatures[1] = SigningKey::from_bytes(&[4; 32])
        .sign(&forged.message_bytes)
        .to_bytes();
    let forged = payment_of(&ExactSvmPayload {
        transaction: STANDARD.encode(forged.encode()),
    });
    assert_eq!(reason(&forged), Invalid::Signature);
    assert_eq!(
        reason(&edited(&authority, |m| {
            // The authority signs nothing: one required signature, the fee payer's.
            m.required_signatures = 1;
        })),
        Invalid::Signature
    );
    // Another network.
    let mut devnet = paid(&authority);
    devnet.accepted.network = SOLANA_DEVNET.into();
    assert_eq!(reason(&devnet), Invalid::Network);
}

proptest::proptest! {
    /// Whatever bytes arrive, reading them answers (never panics), and what reads back
    /// encodes to the same bytes.
    #[test]
    fn any_bytes_read_without_panicking(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        if let Ok(tx) = Transaction::parse(&bytes) {
            proptest::prop_assert_eq!(tx.encode(), bytes);
        }
    }
}

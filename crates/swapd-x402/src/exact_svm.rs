//! The `exact` scheme on Solana (docs/x402.md, "Paying on Solana"): the partially signed v0
//! transaction a payer sends, read from its wire bytes and checked against our requirements as
//! the scheme's specification lists its MUSTs; the associated token account a transfer must
//! reach; and the client's side, a payment built and signed by the transfer's authority.
//!
//! Wire format: `shortvec(signatures) ‖ signatures ‖ message`, the v0 message being
//! `0x80 ‖ header(3) ‖ shortvec(keys) ‖ keys ‖ blockhash ‖ shortvec(instructions) ‖ … ‖
//! shortvec(lookups) ‖ …`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
pub use ed25519_dalek::SigningKey;
use ed25519_dalek::{Signature, Signer, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::wire::{ExactSvmPayload, PaymentPayload, PaymentRequirements};

pub type Pubkey = [u8; 32];

pub const SOLANA_MAINNET: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
pub const SOLANA_DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
pub const COMPUTE_BUDGET_PROGRAM: &str = "ComputeBudget111111111111111111111111111111";
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
pub const ASSOCIATED_TOKEN_PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
pub const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
pub const LIGHTHOUSE_PROGRAM: &str = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";
/// The highest compute-unit price a payment may set, in micro-lamports: the fee payer (the
/// facilitator) pays it.
pub const MAX_COMPUTE_UNIT_PRICE: u64 = 5_000_000;
/// The number of instructions a payment may hold: the two compute-budget ones, the transfer,
/// and up to three Memo or Lighthouse instructions.
const INSTRUCTIONS: std::ops::RangeInclusive<usize> = 3..=6;
const SET_COMPUTE_UNIT_LIMIT: u8 = 2;
const SET_COMPUTE_UNIT_PRICE: u8 = 3;
const TRANSFER_CHECKED: u8 = 12;
const V0_PREFIX: u8 = 0x80;

/// A base58 public key's 32 bytes; `None` for anything else.
pub fn pubkey(text: &str) -> Option<Pubkey> {
    bs58::decode(text).into_vec().ok()?.try_into().ok()
}

fn program(text: &str) -> Pubkey {
    pubkey(text).expect("a program id constant")
}

pub fn base58(bytes: &[u8]) -> String {
    bs58::encode(bytes).into_string()
}

/// The associated token account of `owner` for `mint` under `token_program`: the program
/// address the Associated Token program derives from `[owner, token_program, mint]`.
pub fn associated_token_account(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    let associated = program(ASSOCIATED_TOKEN_PROGRAM);
    (0..=u8::MAX)
        .rev()
        .find_map(|bump| {
            let mut hasher = Sha256::new();
            for seed in [&owner[..], &token_program[..], &mint[..], &[bump]] {
                hasher.update(seed);
            }
            hasher.update(associated);
            hasher.update(b"ProgramDerivedAddress");
            let candidate: Pubkey = hasher.finalize().into();
            // A program address is off the curve: no private key can sign for it.
            let on_curve = curve25519_dalek::edwards::CompressedEdwardsY(candidate)
                .decompress()
                .is_some();
            (!on_curve).then_some(candidate)
        })
        .expect("one of 256 bumps gives an address off the curve")
}

/// One instruction: the index of its program among the message's keys, its accounts'
/// indexes, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub program: u8,
    pub accounts: Vec<u8>,
    pub data: Vec<u8>,
}

/// A v0 message without address lookup tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub required_signatures: u8,
    pub readonly_signed: u8,
    pub readonly_unsigned: u8,
    pub keys: Vec<Pubkey>,
    pub recent_blockhash: [u8; 32],
    pub instructions: Vec<Instruction>,
}

/// A transaction as sent: its signatures and its message, both the bytes signed and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub signatures: Vec<[u8; 64]>,
    pub message_bytes: Vec<u8>,
    pub message: Message,
}

/// Why a Solana payment is invalid, as reason codes in the reference facilitators' style.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("invalid_x402_version")]
    Version,
    #[error("invalid_exact_svm_scheme")]
    Scheme,
    #[error("invalid_exact_svm_network_mismatch")]
    Network,
    #[error("invalid_exact_svm_payload_transaction_could_not_be_decoded")]
    Decode,
    #[error("invalid_exact_svm_payload_transaction_instructions_length")]
    InstructionCount,
    #[error("invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction")]
    ComputeLimit,
    #[error("invalid_exact_svm_payload_transaction_instructions_compute_price_instruction")]
    ComputePrice,
    #[error(
        "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
    )]
    ComputePriceTooHigh,
    #[error("invalid_exact_svm_payload_no_transfer_instruction")]
    NoTransfer,
    #[error("invalid_exact_svm_payload_mint_mismatch")]
    Mint,
    #[error("invalid_exact_svm_payload_recipient_mismatch")]
    Recipient,
    #[error("invalid_exact_svm_payload_amount_mismatch")]
    Amount,
    #[error("invalid_exact_svm_payload_unknown_instruction")]
    UnknownInstruction,
    #[error("invalid_exact_svm_payload_memo_mismatch")]
    Memo,
    #[error("invalid_exact_svm_payload_fee_payer_mismatch")]
    FeePayer,
    #[error("invalid_exact_svm_payload_fee_payer_included_in_instruction_accounts")]
    FeePayerInInstruction,
    #[error("invalid_exact_svm_payload_fee_payer_transferring_funds")]
    FeePayerTransferring,
    #[error("invalid_exact_svm_payload_signature")]
    Signature,
    #[error("invalid_exact_svm_duplicate_settlement")]
    Duplicate,
}

crate::wire::scheme_invalid!(Invalid);

/// Reads a compact-u16 length, in its one canonical encoding (as Solana reads it).
fn shortvec(bytes: &[u8], at: &mut usize) -> Result<usize, Invalid> {
    let mut value = 0usize;
    for shift in [0, 7, 14] {
        let byte = *bytes.get(*at).ok_or(Invalid::Decode)?;
        *at += 1;
        if shift > 0 && byte == 0 {
            return Err(Invalid::Decode);
        }
        value |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return if value <= usize::from(u16::MAX) {
                Ok(value)
            } else {
                Err(Invalid::Decode)
            };
        }
    }
    Err(Invalid::Decode)
}

fn take<'b>(bytes: &'b [u8], at: &mut usize, count: usize) -> Result<&'b [u8], Invalid> {
    let end = at.checked_add(count).ok_or(Invalid::Decode)?;
    let taken = bytes.get(*at..end).ok_or(Invalid::Decode)?;
    *at = end;
    Ok(taken)
}

fn write_shortvec(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl Transaction {
    /// Reads a wire transaction: a v0 message without address lookup tables, one signature
    /// per required signer, every index within the message's keys.
    pub fn parse(bytes: &[u8]) -> Result<Transaction, Invalid> {
        let mut at = 0;
        let count = shortvec(bytes, &mut at)?;
        let signatures = (0..count)
            .map(|_| take(bytes, &mut at, 64).map(|s| s.try_into().expect("64 bytes")))
            .collect::<Result<Vec<[u8; 64]>, _>>()?;
        let message_bytes = bytes[at..].to_vec();
        let message = Message::parse(&message_bytes)?;
        if usize::from(message.required_signatures) != signatures.len() {
            return Err(Invalid::Decode);
        }
        Ok(Transaction {
            signatures,
            message_bytes,
            message,
        })
    }

    /// The wire bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        write_shortvec(&mut out, self.signatures.len());
        for signature in &self.signatures {
            out.extend_from_slice(signature);
        }
        out.extend_from_slice(&self.message_bytes);
        out
    }

    /// What a settlement is known by, as the reference facilitators key it: the base64 of the
    /// SHA-256 of the message (the fee payer's signature, added at settlement, is not in it).
    pub fn message_hash(&self) -> String {
        STANDARD.encode(Sha256::digest(&self.message_bytes))
    }
}

impl Message {
    fn parse(bytes: &[u8]) -> Result<Message, Invalid> {
        let mut at = 0;
        if take(bytes, &mut at, 1)? != [V0_PREFIX] {
            return Err(Invalid::Decode);
        }
        let header = take(bytes, &mut at, 3)?;
        let key_count = shortvec(bytes, &mut at)?;
        let keys = (0..key_count)
            .map(|_| take(bytes, &mut at, 32).map(|k| k.try_into().expect("32 bytes")))
            .collect::<Result<Vec<Pubkey>, _>>()?;
        let recent_blockhash = take(bytes, &mut at, 32)?.try_into().expect("32 bytes");
        let instruction_count = shortvec(bytes, &mut at)?;
        let mut instructions = Vec::with_capacity(instruction_count.min(16));
        for _ in 0..instruction_count {
            let program = take(bytes, &mut at, 1)?[0];
            let accounts = shortvec(bytes, &mut at)?;
            let accounts = take(bytes, &mut at, accounts)?.to_vec();
            let data = shortvec(bytes, &mut at)?;
            let data = take(bytes, &mut at, data)?.to_vec();
            instructions.push(Instruction {
                program,
                accounts,
                data,
            });
        }
        // Lookup tables would name accounts the payment cannot be checked against.
        if shortvec(bytes, &mut at)? != 0 || at != bytes.len() {
            return Err(Invalid::Decode);
        }
        let within = |index: &u8| usize::from(*index) < keys.len();
        let signers_fit = usize::from(header[0]) <= keys.len() && header[0] >= 1;
        if !signers_fit
            || !instructions
                .iter()
                .all(|ix| within(&ix.program) && ix.accounts.iter().all(within))
        {
            return Err(Invalid::Decode);
        }
        Ok(Message {
            required_signatures: header[0],
            readonly_signed: header[1],
            readonly_unsigned: header[2],
            keys,
            recent_blockhash,
            instructions,
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = vec![
            V0_PREFIX,
            self.required_signatures,
            self.readonly_signed,
            self.readonly_unsigned,
        ];
        write_shortvec(&mut out, self.keys.len());
        for key in &self.keys {
            out.extend_from_slice(key);
        }
        out.extend_from_slice(&self.recent_blockhash);
        write_shortvec(&mut out, self.instructions.len());
        for ix in &self.instructions {
            out.push(ix.program);
            write_shortvec(&mut out, ix.accounts.len());
            out.extend_from_slice(&ix.accounts);
            write_shortvec(&mut out, ix.data.len());
            out.extend_from_slice(&ix.data);
        }
        write_shortvec(&mut out, 0);
        out
    }

    fn program_of(&self, ix: &Instruction) -> &Pubkey {
        &self.keys[usize::from(ix.program)]
    }
}

/// A payment that passed every check: the transfer's authority (who pays), the amount, and
/// the transaction with what identifies its settlement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPayment {
    /// Base58.
    pub payer: String,
    pub amount: u64,
    pub transaction: Transaction,
}

/// The transaction a Solana payment carries.
pub fn transaction(payment: &PaymentPayload) -> Result<Transaction, Invalid> {
    let payload: ExactSvmPayload =
        serde_json::from_value(payment.payload.clone()).map_err(|_| Invalid::Decode)?;
    let bytes = STANDARD
        .decode(payload.transaction.as_bytes())
        .map_err(|_| Invalid::Decode)?;
    Transaction::parse(&bytes)
}

/// Every check the scheme's specification makes a facilitator do before settling, except
/// simulation and the duplicate check, against **our** `requirements` (a token of `decimals`):
/// the instructions' layout, the compute price cap, the transfer's mint, destination (the
/// associated token account of `payTo`) and amount (equal to the price), exactly one memo
/// (equal to `extra.memo` when set), the fee payer (`extra.feePayer`, in no instruction's
/// accounts) and every signature but the fee payer's.
pub fn verify(
    payment: &PaymentPayload,
    requirements: &PaymentRequirements,
    decimals: u8,
) -> Result<VerifiedPayment, Invalid> {
    payment.of_kind(requirements, "exact")?;
    let transaction = transaction(payment)?;
    let message = &transaction.message;
    let ixs = &message.instructions;
    if !INSTRUCTIONS.contains(&ixs.len()) {
        return Err(Invalid::InstructionCount);
    }
    let compute_budget = program(COMPUTE_BUDGET_PROGRAM);
    let limit = &ixs[0];
    if *message.program_of(limit) != compute_budget
        || limit.data.len() != 5
        || limit.data[0] != SET_COMPUTE_UNIT_LIMIT
    {
        return Err(Invalid::ComputeLimit);
    }
    let price = &ixs[1];
    if *message.program_of(price) != compute_budget
        || price.data.len() != 9
        || price.data[0] != SET_COMPUTE_UNIT_PRICE
    {
        return Err(Invalid::ComputePrice);
    }
    let micro_lamports = u64::from_le_bytes(price.data[1..9].try_into().expect("8 bytes"));
    if micro_lamports > MAX_COMPUTE_UNIT_PRICE {
        return Err(Invalid::ComputePriceTooHigh);
    }

    let transfer = &ixs[2];
    let token_program = *message.program_of(transfer);
    let is_token = [program(TOKEN_PROGRAM), program(TOKEN_2022_PROGRAM)].contains(&token_program);
    if !is_token
        || transfer.data.len() != 10
        || transfer.data[0] != TRANSFER_CHECKED
        || transfer.accounts.len() < 4
    {
        return Err(Invalid::NoTransfer);
    }
    let account = |position: usize| message.keys[usize::from(transfer.accounts[position])];
    let (source, mint, destination, authority) = (account(0), account(1), account(2), account(3));
    if Some(mint) != pubkey(&requirements.asset) || transfer.data[9] != decimals {
        return Err(Invalid::Mint);
    }
    let owner = pubkey(&requirements.pay_to).ok_or(Invalid::Recipient)?;
    if destination != associated_token_account(&owner, &mint, &token_program) {
        return Err(Invalid::Recipient);
    }
    let amount = u64::from_le_bytes(transfer.data[1..9].try_into().expect("8 bytes"));
    if requirements.amount.parse::<u64>().ok() != Some(amount) {
        return Err(Invalid::Amount);
    }

    let memo_program = program(MEMO_PROGRAM);
    let mut memos = Vec::new();
    for ix in &ixs[3..] {
        let id = *message.program_of(ix);
        if id == memo_program {
            memos.push(&ix.data);
        } else if id != program(LIGHTHOUSE_PROGRAM) {
            return Err(Invalid::UnknownInstruction);
        }
    }
    let memo_asked = requirements.extra.get("memo").and_then(|m| m.as_str());
    match (memos.as_slice(), memo_asked) {
        ([memo], Some(asked)) if memo.as_slice() != asked.as_bytes() => return Err(Invalid::Memo),
        ([_], _) => {}
        _ => return Err(Invalid::Memo),
    }

    let fee_payer = requirements
        .extra
        .get("feePayer")
        .and_then(|f| f.as_str())
        .and_then(pubkey);
    if fee_payer != Some(message.keys[0]) {
        return Err(Invalid::FeePayer);
    }
    if ixs.iter().any(|ix| ix.accounts.contains(&0)) {
        return Err(Invalid::FeePayerInInstruction);
    }
    if authority == message.keys[0] || source == message.keys[0] {
        return Err(Invalid::FeePayerTransferring);
    }
    signed_by(&transaction, &authority)?;
    Ok(VerifiedPayment {
        payer: base58(&authority),
        amount,
        transaction,
    })
}

/// Whether every signer but the fee payer (the first) has signed `transaction`'s message,
/// `authority` among them.
fn signed_by(transaction: &Transaction, authority: &Pubkey) -> Result<(), Invalid> {
    let message = &transaction.message;
    let signers = &message.keys[..usize::from(message.required_signatures)];
    if !signers[1..].contains(authority) {
        return Err(Invalid::Signature);
    }
    for (key, signature) in signers.iter().zip(&transaction.signatures).skip(1) {
        let verifying = VerifyingKey::from_bytes(key).map_err(|_| Invalid::Signature)?;
        verifying
            .verify_strict(
                &transaction.message_bytes,
                &Signature::from_bytes(signature),
            )
            .map_err(|_| Invalid::Signature)?;
    }
    Ok(())
}

/// Who pays (the transfer's authority, base58, its signature checked) and what the payment
/// is known by (its message's hash), before a facilitator checks the rest.
pub fn payer(payment: &PaymentPayload) -> Result<(String, String), Invalid> {
    let transaction = transaction(payment)?;
    let message = &transaction.message;
    let authority = message
        .instructions
        .get(2)
        .filter(|ix| ix.data.first() == Some(&TRANSFER_CHECKED))
        .and_then(|ix| ix.accounts.get(3))
        .map(|index| message.keys[usize::from(*index)])
        .ok_or(Invalid::NoTransfer)?;
    signed_by(&transaction, &authority)?;
    Ok((base58(&authority), transaction.message_hash()))
}

/// The fee payer's signature on `transaction` (its first signature): the settled
/// transaction's id, base58.
pub fn sign_as_fee_payer(transaction: &mut Transaction, fee_payer: &SigningKey) -> String {
    let signature = fee_payer.sign(&transaction.message_bytes).to_bytes();
    transaction.signatures[0] = signature;
    base58(&signature)
}

/// A payment of `requirements` by `authority` from its associated token account under the
/// Token program, as the reference client builds it (compute limit 20 000, price 1
/// micro-lamport, TransferChecked, a memo), on `recent_blockhash`, for a token of `decimals`.
/// The fee payer's signature is left empty.
pub fn pay(
    requirements: &PaymentRequirements,
    authority: &SigningKey,
    recent_blockhash: [u8; 32],
    decimals: u8,
    memo: &str,
) -> Result<ExactSvmPayload, Invalid> {
    let key = |text: &str| pubkey(text).ok_or(Invalid::Decode);
    let fee_payer = requirements
        .extra
        .get("feePayer")
        .and_then(|f| f.as_str())
        .ok_or(Invalid::FeePayer)
        .and_then(key)?;
    let mint = key(&requirements.asset)?;
    let owner = key(&requirements.pay_to)?;
    let token = program(TOKEN_PROGRAM);
    let authority_key = authority.verifying_key().to_bytes();
    let source = associated_token_account(&authority_key, &mint, &token);
    let destination = associated_token_account(&owner, &mint, &token);
    let amount: u64 = requirements.amount.parse().map_err(|_| Invalid::Amount)?;
    // Writable signer, read-only signer, writable accounts, read-only accounts.
    let keys = vec![
        fee_payer,
        authority_key,
        source,
        destination,
        mint,
        program(COMPUTE_BUDGET_PROGRAM),
        token,
        program(MEMO_PROGRAM),
    ];
    let mut limit = vec![SET_COMPUTE_UNIT_LIMIT];
    limit.extend_from_slice(&20_000u32.to_le_bytes());
    let mut price = vec![SET_COMPUTE_UNIT_PRICE];
    price.extend_from_slice(&1u64.to_le_bytes());
    let mut transfer = vec![TRANSFER_CHECKED];
    transfer.extend_from_slice(&amount.to_le_bytes());
    transfer.push(decimals);
    let message = Message {
        required_signatures: 2,
        readonly_signed: 1,
        readonly_unsigned: 4,
        keys,
        recent_blockhash,
        instructions: vec![
            Instruction {
                program: 5,
                accounts: Vec::new(),
                data: limit,
            },
            Instruction {
                program: 5,
                accounts: Vec::new(),
                data: price,
            },
            Instruction {
                program: 6,
                accounts: vec![2, 4, 3, 1],
                data: transfer,
            },
            Instruction {
                program: 7,
                accounts: Vec::new(),
                data: memo.as_bytes().to_vec(),
            },
        ],
    };
    let message_bytes = message.encode();
    let signature = authority.sign(&message_bytes).to_bytes();
    let transaction = Transaction {
        signatures: vec![[0; 64], signature],
        message_bytes,
        message,
    };
    Ok(ExactSvmPayload {
        transaction: STANDARD.encode(transaction.encode()),
    })
}

#[cfg(test)]
mod tests;

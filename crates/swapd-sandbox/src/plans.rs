//! Execution plans of the sandbox onchain providers, built the way real ones are: EVM steps are
//! transactions with ABI-encoded calldata for the sandbox router and bridge contracts (plus an
//! ERC-20 `approve` when the input is a token), gasless steps are EIP-712 typed data (an
//! EIP-2612 `Permit` of USDC and the bridge's own order), and Solana steps are unsigned legacy
//! transactions in the wire format wallets sign.
//!
//! Tracking is simulated from time: a reported execution is indexed after one sandbox block,
//! confirms over two more, and a bridge then waits for its destination transfer. The last byte
//! of a reported transaction hash chooses the outcome (docs/sandbox.md).

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_sol_types::{SolCall, sol};
use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};
use swapd_core::address::{Network, SOLANA_MAINNET_CAIP2};
use swapd_core::amount::{Amount, Rounding};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::ProviderError;
use swapd_core::onchain::plan::{ExecutionReport, ExecutionStatus, Outcome, Tracked};
use swapd_core::onchain::router::{PlanRequest, TrackRequest};
use swapd_types::onchain::{ExecutionTx, PlanStep, PlanTransaction, SignatureRequest};

sol! {
    /// ERC-20.
    function approve(address spender, uint256 amount) external returns (bool);

    /// The sandbox DEX router: swaps `amountIn` of `tokenIn` for at least `minAmountOut` of
    /// `tokenOut`, paid to `recipient`, before `deadline`. Native ETH is `0xEeee…EEeE`.
    function swapExactIn(
        address tokenIn,
        address tokenOut,
        uint256 amountIn,
        uint256 minAmountOut,
        address recipient,
        uint256 deadline,
        bytes32 reference
    ) external payable returns (uint256 amountOut);

    /// The sandbox bridge: locks `amountIn` of `tokenIn` here and pays at least `minAmountOut`
    /// of `tokenOut` to `recipient` on `destinationChainId` (Solana: 792703809). Recipients and
    /// destination tokens are 32 bytes so Solana keys fit.
    function bridgeOut(
        address tokenIn,
        uint256 amountIn,
        uint256 destinationChainId,
        bytes32 recipient,
        bytes32 tokenOut,
        uint256 minAmountOut,
        uint256 deadline,
        bytes32 reference
    ) external payable;
}

/// The chain id bridges use for Solana mainnet (Relay's convention).
pub const SOLANA_CHAIN_ID: u64 = 792_703_809;
/// How EVM routers name the chain's native asset.
pub const NATIVE_TOKEN: Address = Address::new([0xee; 20]);
/// Wrapped SOL: how Solana programs name native SOL.
pub const WRAPPED_SOL: &str = "So11111111111111111111111111111111111111112";

const APPROVE_GAS: u64 = 60_000;
const SWAP_GAS: u64 = 250_000;
const BRIDGE_GAS: u64 = 300_000;

/// Sandbox blocks from the report until the source transaction is indexed, then confirmed.
const INDEXED_AFTER_BLOCKS: i64 = 1;
const CONFIRMED_AFTER_BLOCKS: i64 = 3;
/// A bridge's destination transfer lands this many blocks after the source confirmed.
const DESTINATION_BLOCKS: i64 = 3;
/// Extra blocks of a delayed bridge (`…fb`).
const DELAY_BLOCKS: i64 = 5;
/// A transaction the chain never shows (`…fa`) is given up on after this many blocks.
const NOT_FOUND_AFTER_BLOCKS: i64 = 10;

/// The sandbox contract (EVM) of a provider: the same address on every EVM chain, derived from
/// its name.
pub fn evm_contract(provider: &str) -> Address {
    Address::from_slice(&keccak256(format!("swapd sandbox contract {provider}"))[12..])
}

/// The sandbox program (Solana) of a provider, derived from its name.
pub fn solana_program(provider: &str) -> [u8; 32] {
    Sha256::digest(format!("swapd sandbox program {provider}")).into()
}

fn caip2(network: Network) -> String {
    network
        .caip2()
        .expect("onchain routes run on EVM chains and Solana")
}

fn base_units(amount: Amount, currency: &CurrencyDef) -> U256 {
    amount.rescale(currency.decimals, Rounding::Down).units()
}

fn invalid(what: &str) -> ProviderError {
    ProviderError::Unavailable(format!("cannot build the plan: {what}"))
}

fn evm_address(text: &str) -> Result<Address, ProviderError> {
    text.parse().map_err(|_| invalid("not an EVM address"))
}

fn solana_key(text: &str) -> Result<[u8; 32], ProviderError> {
    bs58::decode(text)
        .into_vec()
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| invalid("not a Solana key"))
}

/// A token's EVM address (the native marker for native assets).
fn evm_token(currency: &CurrencyDef) -> Result<Address, ProviderError> {
    currency.contract.map_or(Ok(NATIVE_TOKEN), evm_address)
}

/// A token's Solana mint (wrapped SOL for SOL).
fn solana_mint(currency: &CurrencyDef) -> Result<[u8; 32], ProviderError> {
    solana_key(currency.contract.unwrap_or(WRAPPED_SOL))
}

/// A destination account or token in 32 bytes: EVM addresses left-padded, Solana keys as is.
fn bytes32(network: Network, text: &str) -> Result<B256, ProviderError> {
    Ok(if network == Network::Solana {
        B256::from(solana_key(text)?)
    } else {
        evm_address(text)?.into_word()
    })
}

fn destination_token(to: &CurrencyDef) -> Result<B256, ProviderError> {
    if to.network == Network::Solana {
        Ok(B256::from(solana_mint(to)?))
    } else {
        Ok(evm_token(to)?.into_word())
    }
}

fn destination_chain_id(network: Network) -> u64 {
    network.evm_chain_id().unwrap_or(SOLANA_CHAIN_ID)
}

fn reference(plan_id: &str) -> B256 {
    keccak256(plan_id.as_bytes())
}

fn evm_step(
    step_id: &str,
    description: String,
    network: Network,
    to: Address,
    data: Vec<u8>,
    value: U256,
    gas: u64,
) -> PlanStep {
    PlanStep {
        step_id: step_id.into(),
        kind: "transaction".into(),
        description,
        chain_id: network.evm_chain_id(),
        chain: caip2(network),
        transaction: Some(PlanTransaction::Evm {
            to: to.to_checksum(None),
            data: format!("0x{}", hex::encode(data)),
            value: value.to_string(),
            gas: Some(gas.to_string()),
        }),
        signature: None,
    }
}

/// `approve` of the input token when it is not native, then `call` with the native value.
fn evm_transactions(
    request: &PlanRequest,
    contract: Address,
    call: Vec<u8>,
    gas: u64,
    action: &str,
) -> Result<Vec<PlanStep>, ProviderError> {
    let from = request.from;
    let amount_in = base_units(request.from_amount, from);
    let mut steps = Vec::new();
    let value = if let Some(token) = from.contract {
        steps.push(evm_step(
            "approve",
            format!(
                "Allow the {action} contract to take {} {}",
                request.from_amount, from.code
            ),
            from.network,
            evm_address(token)?,
            approveCall {
                spender: contract,
                amount: amount_in,
            }
            .abi_encode(),
            U256::ZERO,
            APPROVE_GAS,
        ));
        U256::ZERO
    } else {
        amount_in
    };
    steps.push(evm_step(
        action,
        format!(
            "{} {} {} for at least {} {}",
            if action == "swap" { "Swap" } else { "Bridge" },
            request.from_amount,
            from.code,
            request.min_output,
            request.to.code
        ),
        from.network,
        contract,
        call,
        value,
        gas,
    ));
    Ok(steps)
}

/// The plan of a same-chain DEX swap.
pub fn dex_plan(provider: &str, request: &PlanRequest) -> Result<Vec<PlanStep>, ProviderError> {
    let (from, to) = (request.from, request.to);
    if from.network == Network::Solana {
        let wallet = solana_key(&request.wallet_address)?;
        let recipient = request
            .recipient
            .as_deref()
            .map_or(Ok(wallet), solana_key)?;
        let mut data = anchor_discriminator("swap_exact_in").to_vec();
        data.extend(u64_units(request.from_amount, from)?.to_le_bytes());
        data.extend(u64_units(request.min_output, to)?.to_le_bytes());
        data.extend(request.deadline_secs.to_le_bytes());
        data.extend(reference(&request.plan_id));
        let transaction = solana_transaction(
            wallet,
            &[
                (recipient, true),
                (solana_mint(from)?, false),
                (solana_mint(to)?, false),
            ],
            solana_program(provider),
            &data,
            blockhash(&request.plan_id),
        );
        return Ok(vec![solana_step(
            format!(
                "Swap {} {} for at least {} {}",
                request.from_amount, from.code, request.min_output, to.code
            ),
            transaction,
        )]);
    }
    let contract = evm_contract(provider);
    let recipient = evm_address(
        request
            .recipient
            .as_deref()
            .unwrap_or(&request.wallet_address),
    )?;
    let call = swapExactInCall {
        tokenIn: evm_token(from)?,
        tokenOut: evm_token(to)?,
        amountIn: base_units(request.from_amount, from),
        minAmountOut: base_units(request.min_output, to),
        recipient,
        deadline: U256::from(request.deadline_secs),
        reference: reference(&request.plan_id),
    }
    .abi_encode();
    evm_transactions(request, contract, call, SWAP_GAS, "swap")
}

/// The plan of a bridge transfer: transactions, or for gasless routes a permit and an order to
/// sign.
pub fn bridge_plan(provider: &str, request: &PlanRequest) -> Result<Vec<PlanStep>, ProviderError> {
    let (from, to) = (request.from, request.to);
    let recipient_text = request
        .recipient
        .as_deref()
        .unwrap_or(&request.wallet_address);
    let recipient = bytes32(to.network, recipient_text)?;
    if from.network == Network::Solana {
        let wallet = solana_key(&request.wallet_address)?;
        let mut data = anchor_discriminator("bridge_out").to_vec();
        data.extend(u64_units(request.from_amount, from)?.to_le_bytes());
        data.extend(destination_chain_id(to.network).to_le_bytes());
        data.extend(recipient);
        data.extend(destination_token(to)?);
        data.extend(base_units(request.min_output, to).to_be_bytes::<32>());
        data.extend(request.deadline_secs.to_le_bytes());
        data.extend(reference(&request.plan_id));
        let transaction = solana_transaction(
            wallet,
            &[(solana_mint(from)?, false)],
            solana_program(provider),
            &data,
            blockhash(&request.plan_id),
        );
        return Ok(vec![solana_step(
            format!(
                "Bridge {} {} to {} on {}",
                request.from_amount, from.code, to.code, to.network
            ),
            transaction,
        )]);
    }
    let contract = evm_contract(provider);
    if request.gasless {
        return gasless_bridge_plan(provider, request, contract, recipient);
    }
    let call = bridgeOutCall {
        tokenIn: evm_token(from)?,
        amountIn: base_units(request.from_amount, from),
        destinationChainId: U256::from(destination_chain_id(to.network)),
        recipient,
        tokenOut: destination_token(to)?,
        minAmountOut: base_units(request.min_output, to),
        deadline: U256::from(request.deadline_secs),
        reference: reference(&request.plan_id),
    }
    .abi_encode();
    evm_transactions(request, contract, call, BRIDGE_GAS, "bridge")
}

/// A permit letting the bridge pull the USDC, and the bridge order itself; the relayer submits
/// both and pays the gas.
fn gasless_bridge_plan(
    provider: &str,
    request: &PlanRequest,
    contract: Address,
    recipient: B256,
) -> Result<Vec<PlanStep>, ProviderError> {
    let (from, to) = (request.from, request.to);
    let token = from
        .contract
        .ok_or_else(|| invalid("gasless routes move tokens, not native assets"))?;
    let chain_id = from
        .network
        .evm_chain_id()
        .ok_or_else(|| invalid("gasless routes start on EVM chains"))?;
    let permit = permit_typed_data(request, chain_id, token, contract)?;
    let order = bridge_order_typed_data(provider, request, chain_id, token, contract, recipient)?;
    let signature_step = |step_id: &str, description: String, purpose: &str, typed_data| PlanStep {
        step_id: step_id.into(),
        kind: "signature".into(),
        description,
        chain_id: Some(chain_id),
        chain: caip2(from.network),
        transaction: None,
        signature: Some(SignatureRequest {
            signature_id: format!("sig_{step_id}"),
            purpose: purpose.into(),
            typed_data,
        }),
    };
    Ok(vec![
        signature_step(
            "permit",
            format!(
                "Sign a permit letting {provider} take {} {}",
                request.from_amount, from.code
            ),
            "permit",
            permit,
        ),
        signature_step(
            "order",
            format!(
                "Sign the order: {} {} to at least {} {} on {}",
                request.from_amount, from.code, request.min_output, to.code, to.network
            ),
            "order",
            order,
        ),
    ])
}

/// The EIP-2612 permit (typed data) letting the bridge `contract` take the USDC `token`.
fn permit_typed_data(
    request: &PlanRequest,
    chain_id: u64,
    token: &str,
    contract: Address,
) -> Result<serde_json::Value, ProviderError> {
    let owner = evm_address(&request.wallet_address)?.to_checksum(None);
    let amount_in = base_units(request.from_amount, request.from).to_string();
    let deadline = request.deadline_secs.to_string();
    Ok(json!({
        "types": {
            "EIP712Domain": eip712_domain_type(),
            "Permit": [
                {"name": "owner", "type": "address"},
                {"name": "spender", "type": "address"},
                {"name": "value", "type": "uint256"},
                {"name": "nonce", "type": "uint256"},
                {"name": "deadline", "type": "uint256"}
            ]
        },
        "primaryType": "Permit",
        "domain": {
            "name": "USD Coin",
            "version": "2",
            "chainId": chain_id,
            "verifyingContract": evm_address(token)?.to_checksum(None)
        },
        "message": {
            "owner": owner,
            "spender": contract.to_checksum(None),
            "value": amount_in,
            // The sandbox token's permit nonce is always 0.
            "nonce": "0",
            "deadline": deadline
        }
    }))
}

/// The bridge's order (typed data): `request`'s terms, paid to `recipient`.
fn bridge_order_typed_data(
    provider: &str,
    request: &PlanRequest,
    chain_id: u64,
    token: &str,
    contract: Address,
    recipient: B256,
) -> Result<serde_json::Value, ProviderError> {
    let (from, to) = (request.from, request.to);
    let owner = evm_address(&request.wallet_address)?.to_checksum(None);
    let amount_in = base_units(request.from_amount, from).to_string();
    let deadline = request.deadline_secs.to_string();
    Ok(json!({
        "types": {
            "EIP712Domain": eip712_domain_type(),
            "BridgeOrder": [
                {"name": "owner", "type": "address"},
                {"name": "tokenIn", "type": "address"},
                {"name": "amountIn", "type": "uint256"},
                {"name": "destinationChainId", "type": "uint256"},
                {"name": "recipient", "type": "bytes32"},
                {"name": "tokenOut", "type": "bytes32"},
                {"name": "minAmountOut", "type": "uint256"},
                {"name": "deadline", "type": "uint256"},
                {"name": "reference", "type": "bytes32"}
            ]
        },
        "primaryType": "BridgeOrder",
        "domain": {
            "name": provider,
            "version": "1",
            "chainId": chain_id,
            "verifyingContract": contract.to_checksum(None)
        },
        "message": {
            "owner": owner,
            "tokenIn": evm_address(token)?.to_checksum(None),
            "amountIn": amount_in,
            "destinationChainId": destination_chain_id(to.network).to_string(),
            "recipient": recipient.to_string(),
            "tokenOut": destination_token(to)?.to_string(),
            "minAmountOut": base_units(request.min_output, to).to_string(),
            "deadline": deadline,
            "reference": reference(&request.plan_id).to_string()
        }
    }))
}

fn eip712_domain_type() -> serde_json::Value {
    json!([
        {"name": "name", "type": "string"},
        {"name": "version", "type": "string"},
        {"name": "chainId", "type": "uint256"},
        {"name": "verifyingContract", "type": "address"}
    ])
}

fn u64_units(amount: Amount, currency: &CurrencyDef) -> Result<u64, ProviderError> {
    u64::try_from(base_units(amount, currency)).map_err(|_| invalid("amount too large for Solana"))
}

/// Anchor's instruction discriminator: the first 8 bytes of SHA-256 of `global:<name>`.
fn anchor_discriminator(name: &str) -> [u8; 8] {
    Sha256::digest(format!("global:{name}"))[..8]
        .try_into()
        .expect("8 bytes")
}

/// The sandbox's stand-in for a recent blockhash: wallets sign over it as they would a real one.
fn blockhash(plan_id: &str) -> [u8; 32] {
    Sha256::digest(format!("swapd sandbox blockhash {plan_id}")).into()
}

fn solana_step(description: String, transaction: Vec<u8>) -> PlanStep {
    PlanStep {
        step_id: "swap".into(),
        kind: "transaction".into(),
        description,
        chain_id: None,
        chain: SOLANA_MAINNET_CAIP2.into(),
        transaction: Some(PlanTransaction::Solana {
            serialized_transaction: base64::engine::general_purpose::STANDARD.encode(transaction),
            last_valid_block_height: None,
        }),
        signature: None,
    }
}

/// Solana's compact-u16 length prefix.
fn compact_u16(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let mut byte = (value & 0x7f) as u8;
        value >>= 7;
        if value != 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if value == 0 {
            break;
        }
    }
}

/// An unsigned legacy transaction with one instruction of `program`: `payer` signs and pays,
/// `accounts` are the instruction's other accounts (writable or not), in that order.
fn solana_transaction(
    payer: [u8; 32],
    accounts: &[([u8; 32], bool)],
    program: [u8; 32],
    data: &[u8],
    blockhash: [u8; 32],
) -> Vec<u8> {
    // Account order of a message: signers, then writable non-signers, then read-only ones.
    fn push(keys: &mut Vec<[u8; 32]>, key: [u8; 32]) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut keys = vec![payer];
    for (key, _) in accounts.iter().filter(|(_, writable)| *writable) {
        push(&mut keys, *key);
    }
    let writable = keys.len();
    for (key, _) in accounts.iter().filter(|(_, writable)| !*writable) {
        push(&mut keys, *key);
    }
    push(&mut keys, program);
    let index = |key: &[u8; 32]| keys.iter().position(|k| k == key).expect("listed") as u8;

    let mut tx = Vec::new();
    compact_u16(&mut tx, 1);
    tx.extend([0u8; 64]);
    tx.extend([1u8, 0, (keys.len() - writable) as u8]);
    compact_u16(&mut tx, keys.len());
    keys.iter().for_each(|key| tx.extend(key));
    tx.extend(blockhash);
    compact_u16(&mut tx, 1);
    tx.push(index(&program));
    let mut instruction_accounts = vec![0u8];
    instruction_accounts.extend(accounts.iter().map(|(key, _)| index(key)));
    compact_u16(&mut tx, instruction_accounts.len());
    tx.extend(instruction_accounts);
    compact_u16(&mut tx, data.len());
    tx.extend(data);
    tx
}

/// What the sandbox shows for a reported execution, from the time since the report and the
/// outcome the report's hash selects. `bridge`: whether a destination transfer follows.
pub fn track(
    request: TrackRequest<'_>,
    bridge: bool,
    block_ms: i64,
    feed: &crate::price_feed::PriceFeed,
    behaviour: &crate::behaviour::Behaviour,
) -> Result<Tracked, ProviderError> {
    let plan = request.plan;
    let id = plan.id.as_str();
    let (from, to) = (plan.from, plan.to);
    let blocks = (request.now_ms - request.reported_at_ms).max(0) / block_ms.max(1);
    let (source_hash, selector) = match request.report {
        ExecutionReport::TxHash { tx_hash } => (tx_hash.clone(), outcome_byte(tx_hash)),
        // A relayer submits the signatures: its transaction, and always the plain outcome.
        ExecutionReport::Signatures { signatures } => {
            let joined: String = signatures.iter().map(|s| s.signature.as_str()).collect();
            (keccak256(joined).to_string(), 0)
        }
    };
    let source = ExecutionTx {
        role: "source".into(),
        chain: caip2(from.network),
        tx_hash: source_hash.clone(),
    };
    if let Some(underway) = underway(blocks, selector, bridge, &source) {
        return Ok(underway);
    }
    // This router's behaviour: its time, its failures, where its deliveries land.
    if request.now_ms - request.reported_at_ms < behaviour.duration_ms(id) {
        return Ok(Tracked::state(
            ExecutionStatus::Pending,
            if bridge {
                "awaiting_destination"
            } else {
                "source_confirming"
            },
            vec![source],
        ));
    }
    if behaviour.fails(id) {
        return Ok(Tracked::state(
            ExecutionStatus::Failed,
            "reverted",
            vec![source],
        ));
    }
    let drift = i64::from(swapd_core::market::pricing::BPS) + i64::from(behaviour.drift_bps(id));
    let expected = plan.expected_output.mul_div(
        alloy_primitives::U256::from(drift.max(0).unsigned_abs()),
        alloy_primitives::U256::from(swapd_core::market::pricing::BPS),
        swapd_core::amount::Rounding::Down,
    );
    let (outcome, token, amount, destination) = match (bridge, selector) {
        // The bridge could not deliver and sent the input back on the source chain.
        (true, 0xfd) => (Outcome::Refunded, from, plan.from_amount, None),
        // The bridge delivered its intermediate asset (USDC) on the destination chain.
        (true, 0xfc) => {
            let usdc = intermediate(to.network).ok_or_else(|| invalid("no intermediate asset"))?;
            let value = convert(feed, to, usdc, expected, request.reported_at_ms)?;
            (Outcome::Partial, usdc, value, Some(to.network))
        }
        (true, _) => (Outcome::Completed, to, expected, Some(to.network)),
        // A DEX swap is atomic: mined means delivered.
        (false, _) => (Outcome::Completed, to, expected, None),
    };
    let mut tx_hashes = vec![source];
    if let Some(network) = destination {
        tx_hashes.push(ExecutionTx {
            role: "destination".into(),
            chain: caip2(network),
            tx_hash: destination_hash(network, &source_hash),
        });
    }
    Ok(Tracked::done(outcome, token, amount, tx_hashes))
}

/// What an execution shows `blocks` after its report until it is done (`None` once it is):
/// indexing, failures the `selector` picks, confirmations, and a bridge's wait for the
/// destination.
fn underway(blocks: i64, selector: u8, bridge: bool, source: &ExecutionTx) -> Option<Tracked> {
    if selector == 0xfa {
        return Some(if blocks < NOT_FOUND_AFTER_BLOCKS {
            Tracked::state(ExecutionStatus::Submitted, "not_indexed", Vec::new())
        } else {
            Tracked::state(ExecutionStatus::Failed, "not_found", Vec::new())
        });
    }
    if blocks < INDEXED_AFTER_BLOCKS {
        return Some(Tracked::state(
            ExecutionStatus::Submitted,
            "not_indexed",
            Vec::new(),
        ));
    }
    match selector {
        0xff => {
            return Some(Tracked::state(
                ExecutionStatus::Failed,
                "reverted",
                vec![source.clone()],
            ));
        }
        0xfe => {
            return Some(Tracked::state(
                ExecutionStatus::Failed,
                "slippage_exceeded",
                vec![source.clone()],
            ));
        }
        _ => {}
    }
    if blocks < CONFIRMED_AFTER_BLOCKS {
        return Some(Tracked::state(
            ExecutionStatus::Pending,
            "source_confirming",
            vec![source.clone()],
        ));
    }
    let mut arrives_after = CONFIRMED_AFTER_BLOCKS;
    if bridge {
        arrives_after += DESTINATION_BLOCKS;
        if blocks < arrives_after {
            return Some(Tracked::state(
                ExecutionStatus::Pending,
                "awaiting_destination",
                vec![source.clone()],
            ));
        }
        if selector == 0xfb {
            arrives_after += DELAY_BLOCKS;
            if blocks < arrives_after {
                return Some(Tracked::state(
                    ExecutionStatus::Pending,
                    "delayed",
                    vec![source.clone()],
                ));
            }
        }
    }
    None
}

/// The byte of a reported hash that selects the sandbox outcome: its last.
fn outcome_byte(tx_hash: &str) -> u8 {
    if let Some(hex) = tx_hash.strip_prefix("0x") {
        return u8::from_str_radix(&hex[hex.len().saturating_sub(2)..], 16).unwrap_or(0);
    }
    bs58::decode(tx_hash)
        .into_vec()
        .ok()
        .and_then(|bytes| bytes.last().copied())
        .unwrap_or(0)
}

fn destination_hash(network: Network, source: &str) -> String {
    let digest = Sha256::digest(format!("swapd sandbox destination {source}"));
    if network == Network::Solana {
        let mut signature = digest.to_vec();
        signature.extend(Sha256::digest(digest));
        bs58::encode(signature).into_string()
    } else {
        format!("0x{}", hex::encode(digest))
    }
}

fn intermediate(network: Network) -> Option<&'static CurrencyDef> {
    swapd_core::market::currencies::CURRENCIES
        .iter()
        .find(|c| c.symbol == "USDC" && c.network == network)
}

fn convert(
    feed: &crate::price_feed::PriceFeed,
    from: &CurrencyDef,
    to: &CurrencyDef,
    amount: Amount,
    at_ms: i64,
) -> Result<Amount, ProviderError> {
    let conversion = swapd_core::market::pricing::Conversion {
        from_price: crate::quoting::usd_price(feed, from, at_ms)?,
        to_price: crate::quoting::usd_price(feed, to, at_ms)?,
        from_precision: from.precision,
        to_precision: to.precision,
        spread_bps: 0,
        network_fee: Amount::zero(to.precision),
    };
    conversion
        .output_for(amount)
        .ok_or_else(|| invalid("cannot convert the partial output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(from: &str, to: &str, amount: &str, min: &str) -> PlanRequest {
        use swapd_core::market::currencies::currency;
        let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
        PlanRequest {
            plan_id: "ocx_00000000000000000000000000000001".into(),
            from,
            to,
            from_amount: Amount::parse(amount, from.precision).unwrap(),
            min_output: Amount::parse(min, to.precision).unwrap(),
            shown: swapd_core::onchain::router::ShownTerms {
                expected_output: Amount::parse(min, to.precision).unwrap(),
                min_output: Amount::parse(min, to.precision).unwrap(),
            },
            wallet_address: "0x1111111111111111111111111111111111111111".into(),
            recipient: None,
            slippage_bps: 50,
            gasless: false,
            deadline_secs: 1_800_000_300,
            onchain_fees: Vec::new(),
        }
    }

    fn evm(step: &PlanStep) -> (&str, Vec<u8>, &str) {
        match step.transaction.as_ref().unwrap() {
            PlanTransaction::Evm {
                to, data, value, ..
            } => (
                to.as_str(),
                hex::decode(&data[2..]).unwrap(),
                value.as_str(),
            ),
            other => panic!("not EVM: {other:?}"),
        }
    }

    #[test]
    fn a_token_swap_approves_then_calls_the_router_with_exact_base_units() {
        let steps = dex_plan("meridian", &request("USDCBASE", "ETHBASE", "1500.5", "0.4")).unwrap();
        assert_eq!(steps.len(), 2);
        let (to, data, value) = evm(&steps[0]);
        assert_eq!(to, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(value, "0");
        let approve = approveCall::abi_decode(&data).unwrap();
        assert_eq!(approve.spender, evm_contract("meridian"));
        assert_eq!(approve.amount, U256::from(1_500_500_000u64));

        let (to, data, value) = evm(&steps[1]);
        assert_eq!(to, evm_contract("meridian").to_checksum(None));
        assert_eq!(value, "0");
        let swap = swapExactInCall::abi_decode(&data).unwrap();
        assert_eq!(swap.tokenOut, NATIVE_TOKEN);
        assert_eq!(swap.amountIn, U256::from(1_500_500_000u64));
        assert_eq!(swap.minAmountOut, U256::from(400_000_000_000_000_000u64));
        assert_eq!(swap.deadline, U256::from(1_800_000_300u64));
        assert_eq!(steps[1].chain_id, Some(8453));
        assert_eq!(steps[1].chain, "eip155:8453");
    }

    #[test]
    fn native_input_is_sent_as_value_without_approval() {
        let steps = dex_plan("meridian", &request("ETH", "USDCETH", "0.25", "700")).unwrap();
        assert_eq!(steps.len(), 1);
        let (_, data, value) = evm(&steps[0]);
        assert_eq!(value, "250000000000000000");
        assert_eq!(
            swapExactInCall::abi_decode(&data).unwrap().tokenIn,
            NATIVE_TOKEN
        );
    }

    #[test]
    fn a_bridge_to_solana_pays_the_solana_recipient_key() {
        let mut to_solana = request("ETHBASE", "USDCSOL", "1", "2000");
        to_solana.recipient = Some("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into());
        let steps = bridge_plan("arcbridge", &to_solana).unwrap();
        let (_, data, value) = evm(&steps[0]);
        assert_eq!(value, "1000000000000000000");
        let call = bridgeOutCall::abi_decode(&data).unwrap();
        assert_eq!(call.destinationChainId, U256::from(SOLANA_CHAIN_ID));
        assert_eq!(
            call.recipient.0,
            solana_key("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM").unwrap()
        );
        assert_eq!(
            call.tokenOut.0,
            solana_key("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap()
        );
        assert_eq!(call.minAmountOut, U256::from(2_000_000_000u64));
    }

    #[test]
    fn gasless_bridges_ask_for_a_usdc_permit_and_an_order_that_hash_as_eip712() {
        let mut gasless = request("USDCBASE", "USDCSOL", "100", "99");
        gasless.gasless = true;
        gasless.recipient = Some("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into());
        let steps = bridge_plan("arcbridge", &gasless).unwrap();
        assert_eq!(steps.len(), 2);
        let permit = steps[0].signature.as_ref().unwrap();
        assert_eq!(permit.purpose, "permit");
        assert_eq!(permit.typed_data["domain"]["name"], "USD Coin");
        assert_eq!(permit.typed_data["domain"]["chainId"], 8453);
        assert_eq!(permit.typed_data["message"]["value"], "100000000");
        assert_eq!(
            permit.typed_data["message"]["spender"],
            evm_contract("arcbridge").to_checksum(None)
        );
        let order = steps[1].signature.as_ref().unwrap();
        assert_eq!(order.purpose, "order");
        for step in &steps {
            let typed = &step.signature.as_ref().unwrap().typed_data;
            assert!(
                swapd_core::onchain::signatures::typed_data_hash(typed).is_some(),
                "{typed}"
            );
        }
    }

    /// Reads a legacy transaction back: (account keys, program index, instruction data).
    fn decode_solana(serialized: &str) -> (Vec<[u8; 32]>, u8, Vec<u8>) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(serialized)
            .unwrap();
        assert_eq!(bytes[0], 1, "one signature slot");
        assert!(bytes[1..65].iter().all(|b| *b == 0), "unsigned");
        let message = &bytes[65..];
        assert_eq!(message[0], 1, "one required signature");
        let count = message[3] as usize;
        let keys: Vec<[u8; 32]> = (0..count)
            .map(|i| message[4 + 32 * i..36 + 32 * i].try_into().unwrap())
            .collect();
        let mut at = 4 + 32 * count + 32;
        assert_eq!(message[at], 1, "one instruction");
        let program = message[at + 1];
        let accounts = message[at + 2] as usize;
        at += 3 + accounts;
        let (mut len, mut shift) = (0usize, 0);
        loop {
            let byte = message[at];
            at += 1;
            len |= ((byte & 0x7f) as usize) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let data = message[at..at + len].to_vec();
        assert_eq!(at + len, message.len());
        (keys, program, data)
    }

    #[test]
    fn solana_swaps_are_unsigned_legacy_transactions_the_wallet_pays_for() {
        let mut swap = request("SOL", "USDCSOL", "2.5", "300");
        swap.wallet_address = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into();
        let steps = dex_plan("sunfish", &swap).unwrap();
        let Some(PlanTransaction::Solana {
            serialized_transaction,
            ..
        }) = &steps[0].transaction
        else {
            panic!("not a Solana transaction");
        };
        let (keys, program, data) = decode_solana(serialized_transaction);
        assert_eq!(keys[0], solana_key(&swap.wallet_address).unwrap());
        assert_eq!(keys[program as usize], solana_program("sunfish"));
        assert_eq!(data[..8], anchor_discriminator("swap_exact_in"));
        assert_eq!(
            u64::from_le_bytes(data[8..16].try_into().unwrap()),
            2_500_000_000
        );
        assert_eq!(
            u64::from_le_bytes(data[16..24].try_into().unwrap()),
            300_000_000
        );
        assert_eq!(steps[0].chain, SOLANA_MAINNET_CAIP2);
        assert_eq!(steps[0].chain_id, None);
    }

    #[test]
    fn docs_sandbox_md_names_the_contracts_plans_call() {
        let doc = include_str!("../../../docs/sandbox.md");
        for (name, value) in [
            (
                "meridian contract",
                evm_contract("meridian").to_checksum(None),
            ),
            (
                "arcbridge contract",
                evm_contract("arcbridge").to_checksum(None),
            ),
            (
                "sunfish program",
                bs58::encode(solana_program("sunfish")).into_string(),
            ),
            (
                "arcbridge program",
                bs58::encode(solana_program("arcbridge")).into_string(),
            ),
            ("native marker", NATIVE_TOKEN.to_checksum(None)),
        ] {
            assert!(
                doc.contains(&format!("`{value}`")),
                "docs/sandbox.md lacks the {name} `{value}`"
            );
        }
    }

    #[test]
    fn compact_u16_matches_solana() {
        for (value, bytes) in [
            (0usize, vec![0u8]),
            (0x7f, vec![0x7f]),
            (0x80, vec![0x80, 0x01]),
            (0x3fff, vec![0xff, 0x7f]),
            (0x4000, vec![0x80, 0x80, 0x01]),
        ] {
            let mut out = Vec::new();
            compact_u16(&mut out, value);
            assert_eq!(out, bytes, "{value}");
        }
    }

    #[test]
    fn the_last_byte_of_a_hash_selects_the_outcome() {
        assert_eq!(outcome_byte(&format!("0x{}ff", "0".repeat(62))), 0xff);
        assert_eq!(outcome_byte(&format!("0x{}FD", "0".repeat(62))), 0xfd);
        let mut signature = [1u8; 64];
        signature[63] = 0xfc;
        assert_eq!(outcome_byte(&bs58::encode(signature).into_string()), 0xfc);
    }
}

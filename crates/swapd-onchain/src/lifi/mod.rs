//! LI.FI (docs/providers.md, "LI.FI"): same-chain swaps and cross-chain routes on the EVM chains
//! and Solana. Its quotes, transaction requests, statuses and errors are mapped onto swapd's
//! provider model by the pure functions here; [`LiFi`] sends them and follows executions on
//! their chains (docs/providers.md, "LI.FI").

mod provider;
#[cfg(test)]
mod tests;
pub mod wire;

pub use provider::{BASE_URL, ID, LiFi};

use alloy_primitives::{Address, U256};
use swapd_core::address::Network;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::fees::{FeeSchedule, OnchainFee};
use swapd_core::market::RateType;
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::provider::{CurrencyOffer, ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::onchain::plan::{ExecutionStatus, Outcome, Tracked};
use swapd_core::onchain::router::{BuiltPlan, PlanRequest};
use swapd_types::onchain::{ExecutionTx, PlanStep, PlanTransaction};

use crate::{approve_calldata, display, parse_json, units};

/// LI.FI's chain id for Solana (not an EIP-155 id).
pub const SOLANA_CHAIN_ID: u64 = 1_151_111_081_099_710;
/// Who a card is priced for when the caller named no wallet: LI.FI needs a sender, and resolve
/// asks again for the real one.
const UNNAMED_EVM_SENDER: &str = "0x0000000000000000000000000000000000000001";
const UNNAMED_SOLANA_SENDER: &str = "11111111111111111111111111111112";
/// Gas suggested for an ERC-20 approval.
const APPROVE_GAS: u64 = 60_000;
/// How long a LI.FI price is shown as valid: it is no lock (the transaction's minimum is).
pub const QUOTE_VALID_SECS: u32 = 60;

/// LI.FI's id of the chain `network` is on; `None` for chains it does not route.
pub fn chain_id(network: Network) -> Option<u64> {
    match network {
        Network::Solana => Some(SOLANA_CHAIN_ID),
        other => other.evm_chain_id(),
    }
}

/// What LI.FI calls `currency`: its token contract or mint, or the chain's native address.
pub fn token_address(currency: &CurrencyDef) -> &'static str {
    crate::zero_native_address(currency)
}

/// The swapd currency a LI.FI token on chain `chain_id` is, if swapd lists it.
pub fn currency_of(chain: u64, address: &str) -> Option<&'static CurrencyDef> {
    crate::currency_at(chain_id, chain, address)
}

/// Every currency swapd lists on a chain LI.FI routes: LI.FI prices any pair of them and states
/// no limits of its own.
pub fn catalog() -> Vec<CurrencyOffer> {
    CURRENCIES
        .iter()
        .filter(|def| chain_id(def.network).is_some())
        .map(|currency| CurrencyOffer {
            currency,
            send: true,
            receive: true,
            min: None,
            max: None,
        })
        .collect()
}

fn uncovered(currency: &CurrencyDef) -> ProviderError {
    ProviderError::PairUnsupported(format!("LI.FI does not route {}", currency.code))
}

fn slippage(bps: u32) -> String {
    // Basis points as LI.FI's decimal fraction: 50 → 0.005.
    let text = format!("{:05}", bps);
    let (whole, fraction) = text.split_at(text.len() - 4);
    let fraction = fraction.trim_end_matches('0');
    let whole = whole.trim_start_matches('0');
    match (whole.is_empty(), fraction.is_empty()) {
        (true, true) => "0".into(),
        (true, false) => format!("0.{fraction}"),
        (false, true) => whole.into(),
        (false, false) => format!("{whole}.{fraction}"),
    }
}

/// The `GET /v1/quote` parameters for a route of `from_amount` (`None` when the output is
/// fixed: `/v1/quote/toAmount`).
pub struct QuoteQuery {
    pub path: &'static str,
    pub query: Vec<(&'static str, String)>,
}

fn query(
    from: &CurrencyDef,
    to: &CurrencyDef,
    amount: (&'static str, String),
    sender: &str,
    recipient: Option<&str>,
    slippage_bps: u32,
    (integrator, fee): (&str, Option<&OnchainFee>),
) -> Result<Vec<(&'static str, String)>, ProviderError> {
    let from_chain = chain_id(from.network).ok_or_else(|| uncovered(from))?;
    let to_chain = chain_id(to.network).ok_or_else(|| uncovered(to))?;
    let mut query = vec![
        ("fromChain", from_chain.to_string()),
        ("toChain", to_chain.to_string()),
        ("fromToken", token_address(from).to_owned()),
        ("toToken", token_address(to).to_owned()),
        amount,
        ("fromAddress", sender.to_owned()),
        ("slippage", slippage(slippage_bps)),
    ];
    if let Some(recipient) = recipient {
        query.push(("toAddress", recipient.to_owned()));
    }
    if !integrator.is_empty() {
        query.push(("integrator", integrator.to_owned()));
    }
    if let Some(fee) = fee {
        // A fraction of the input: 30 bps is `0.003`.
        let fraction = Amount::from_units(U256::from(fee.bps), 4);
        query.push(("fee", fraction.to_string()));
    }
    Ok(query)
}

/// LI.FI takes its `fee` from the input below 100 %.
const MAX_FEE_BPS: u32 = 9_999;

/// The operator's fee LI.FI takes from the input for swapd's integrator (`integrator` and
/// `fee`; docs/fees.md): it pays the integrator's fee wallet, set up with LI.FI, so it needs an
/// integrator name.
pub fn fees_for(
    request: &QuoteRequest,
    integrator: &str,
) -> Option<(Vec<OnchainFee>, FeeSchedule)> {
    if integrator.is_empty() {
        return None;
    }
    crate::onchain_fees(request, ID, (Some(String::new()), false), MAX_FEE_BPS)
}

/// The query that prices a route card.
pub fn card_query(request: &QuoteRequest, integrator: &str) -> Result<QuoteQuery, ProviderError> {
    request.check_signer(ID)?;
    request.check_recipient()?;
    let (from, to) = (request.from, request.to);
    let sender = match &request.wallet {
        Some(swapd_core::market::provider::Wallet {
            address: Some(address),
            ..
        }) => address.as_str(),
        _ if from.network == Network::Solana => UNNAMED_SOLANA_SENDER,
        _ => UNNAMED_EVM_SENDER,
    };
    let (path, amount) = match request.direction {
        swapd_core::market::Direction::From => (
            "quote",
            ("fromAmount", units(request.amount, from).to_string()),
        ),
        swapd_core::market::Direction::To => (
            "quote/toAmount",
            ("toAmount", units(request.amount, to).to_string()),
        ),
    };
    let mut query = query(
        from,
        to,
        amount,
        sender,
        request.recipient.as_deref(),
        swapd_core::onchain::plan::DEFAULT_SLIPPAGE_BPS,
        (
            integrator,
            fees_for(request, integrator)
                .and_then(|(fees, _)| fees.into_iter().next())
                .as_ref(),
        ),
    )?;
    // A card is a price: no need to simulate a transaction for a sender that may hold nothing.
    query.push(("skipSimulation", "true".into()));
    Ok(QuoteQuery { path, query })
}

/// The query that builds the transaction of a plan, for its wallet and slippage.
pub fn plan_query(request: &PlanRequest, integrator: &str) -> Result<QuoteQuery, ProviderError> {
    let query = query(
        request.from,
        request.to,
        (
            "fromAmount",
            units(request.from_amount, request.from).to_string(),
        ),
        &request.wallet_address,
        request.recipient.as_deref(),
        request.slippage_bps,
        (integrator, request.onchain_fees.first()),
    )?;
    Ok(QuoteQuery {
        path: "quote",
        query,
    })
}

/// A base-unit integer string of LI.FI's (decimal, or `0x` hex in transaction requests).
fn integer(text: &str) -> Result<U256, ProviderError> {
    crate::quantity(text).ok_or_else(|| confused("an amount that is not an integer"))
}

fn confused(what: &str) -> ProviderError {
    ProviderError::Unavailable(format!("LI.FI answered {what}"))
}

/// `units` of `currency` in its display precision, rounded as `rounding` says.
/// Checks that LI.FI quoted the tokens asked for.
fn check_tokens(
    quote: &wire::Quote,
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<(), ProviderError> {
    let same = |wire: &wire::Token, def: &CurrencyDef| {
        wire.decimals == def.decimals && wire.address.eq_ignore_ascii_case(token_address(def))
    };
    if same(&quote.action.from_token, from) && same(&quote.action.to_token, to) {
        Ok(())
    } else {
        Err(confused("a quote for other tokens"))
    }
}

/// A card's terms from LI.FI's quote.
pub fn card(
    body: &[u8],
    request: &QuoteRequest,
    integrator: &str,
) -> Result<ProviderQuote, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    let (from, to) = (request.from, request.to);
    check_tokens(&quote, from, to)?;
    let estimate = &quote.estimate;
    let from_amount = match request.direction {
        swapd_core::market::Direction::From => request.amount,
        swapd_core::market::Direction::To => {
            display(integer(&estimate.from_amount)?, from, Rounding::Up)
        }
    };
    let to_amount = display(integer(&estimate.to_amount)?, to, Rounding::Down);
    let min_output = display(integer(&estimate.to_amount_min)?, to, Rounding::Down);
    if to_amount.is_zero() || min_output > to_amount {
        return Err(confused("a quote without a usable output"));
    }
    let quote = ProviderQuote {
        from_amount,
        to_amount,
        min_output,
        rate_type: RateType::Float,
        network_fee: Amount::zero(to.precision),
        fees: gas_fees(estimate, from.network)?,
        min: Amount::zero(from.precision),
        max: None,
        estimated_duration_secs: estimate
            .execution_duration
            .map_or(0, |secs| secs.clamp(0.0, f64::from(u32::MAX)).ceil() as u32),
        valid_for_secs: QUOTE_VALID_SECS,
        gasless: false,
        rate_lock: None,
        onchain_fees: Vec::new(),
    };
    // LI.FI's output is what the input less its fee buys.
    Ok(match fees_for(request, integrator) {
        Some((fees, carried)) => ProviderQuote {
            onchain_fees: fees,
            ..quote.with_input_fees(from, carried)
        },
        None => quote,
    })
}

/// The gas the signer pays, in the source chain's native currency.
fn gas_fees(estimate: &wire::Estimate, network: Network) -> Result<Vec<Fee>, ProviderError> {
    let Some(native) = CURRENCIES
        .iter()
        .find(|def| def.network == network && def.contract.is_none())
    else {
        return Ok(Vec::new());
    };
    let mut total = U256::ZERO;
    for cost in &estimate.gas_costs {
        if cost
            .token
            .address
            .eq_ignore_ascii_case(token_address(native))
        {
            total = total.saturating_add(integer(&cost.amount)?);
        }
    }
    Ok(if total.is_zero() {
        Vec::new()
    } else {
        vec![Fee::cost(
            FeeKind::Network,
            display(total, native, Rounding::Up),
            native,
        )]
    })
}

/// The steps of a plan from LI.FI's quote for the plan's wallet: the approval its
/// `approvalAddress` needs (ERC-20 inputs), then its `transactionRequest`, enforcing LI.FI's
/// guaranteed output. Refused when the price moved past what the card showed
/// ([`PlanRequest::accept`]).
pub fn plan_steps(body: &[u8], request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    let (from, to) = (request.from, request.to);
    check_tokens(&quote, from, to)?;
    let sent = integer(&quote.estimate.from_amount)?;
    if sent != units(request.from_amount, from) {
        return Err(confused("a transaction for another amount"));
    }
    let request = &request.accept(
        "LI.FI",
        display(integer(&quote.estimate.to_amount)?, to, Rounding::Down),
        display(integer(&quote.estimate.to_amount_min)?, to, Rounding::Down),
    )?;
    let transaction = quote
        .transaction_request
        .as_ref()
        .ok_or_else(|| confused("a quote without a transaction"))?;
    let chain = from.network.caip2().ok_or_else(|| uncovered(from))?;
    let description = format!(
        "{} {} {} for at least {} {} (LI.FI via {})",
        if from.network == to.network {
            "Swap"
        } else {
            "Bridge"
        },
        request.from_amount,
        from.code,
        request.min_output,
        to.code,
        quote.tool
    );
    if from.network == Network::Solana {
        let step = PlanStep {
            step_id: "swap".into(),
            kind: "transaction".into(),
            description,
            chain_id: None,
            chain,
            transaction: Some(PlanTransaction::Solana {
                serialized_transaction: transaction.data.clone(),
                last_valid_block_height: None,
            }),
            signature: None,
        };
        return Ok(BuiltPlan::of(vec![step], request));
    }
    let chain_id = from.network.evm_chain_id();
    if transaction.chain_id.is_some_and(|id| Some(id) != chain_id) {
        return Err(confused("a transaction for another chain"));
    }
    let address = |text: &str| {
        text.parse::<Address>()
            .map_err(|_| confused("a transaction without a valid address"))
    };
    let target = address(transaction.to.as_deref().unwrap_or_default())?;
    let value = transaction
        .value
        .as_deref()
        .map_or(Ok(U256::ZERO), integer)?;
    let gas = crate::gas_limit(transaction.gas_limit.as_deref())?;
    let data =
        crate::calldata(&transaction.data).ok_or_else(|| confused("calldata that is not hex"))?;
    let step = |step_id: &str, description: String, to: Address, data: String, value: U256, gas| {
        PlanStep {
            step_id: step_id.into(),
            kind: "transaction".into(),
            description,
            chain_id,
            chain: chain.clone(),
            transaction: Some(PlanTransaction::Evm {
                to: to.to_checksum(None),
                data,
                value: value.to_string(),
                gas,
            }),
            signature: None,
        }
    };
    let mut steps = Vec::new();
    if let (Some(token), Some(spender)) =
        (from.contract, quote.estimate.approval_address.as_deref())
    {
        let spender = address(spender)?;
        steps.push(step(
            "approve",
            format!(
                "Allow LI.FI's contract to take {} {}",
                request.from_amount, from.code
            ),
            address(token)?,
            approve_calldata(spender, sent),
            U256::ZERO,
            Some(APPROVE_GAS.to_string()),
        ));
    }
    steps.push(step(
        if from.network == to.network {
            "swap"
        } else {
            "bridge"
        },
        description,
        target,
        data,
        value,
        gas,
    ));
    Ok(BuiltPlan::of(steps, request))
}

/// What LI.FI's status says about an execution from `from` to `to` whose source transaction is
/// `source`. `None`: LI.FI does not know the transaction yet.
pub fn tracked(
    body: &[u8],
    from: &'static CurrencyDef,
    to: &'static CurrencyDef,
    source: &ExecutionTx,
) -> Result<Option<Tracked>, ProviderError> {
    let status: wire::Status = parse_json(body)?;
    let substatus = status.substatus.as_deref().unwrap_or_default();
    let pending = |substatus: &str| Tracked {
        status: ExecutionStatus::Pending,
        substatus: Some(substatus.into()),
        outcome: None,
        tx_hashes: vec![source.clone()],
        received_amount: None,
        received_token: None,
        fees_paid: Vec::new(),
    };
    Ok(Some(match status.status.as_str() {
        "NOT_FOUND" => return Ok(None),
        // A service behind LI.FI is down: nothing to conclude; ask again later.
        "INVALID" => return Err(confused("that a service it relies on is unavailable")),
        "PENDING" => pending(match substatus {
            "WAIT_SOURCE_CONFIRMATIONS" => "source_confirming",
            "REFUND_IN_PROGRESS" => "refund_in_progress",
            "BRIDGE_NOT_AVAILABLE" | "CHAIN_NOT_AVAILABLE" | "UNKNOWN_ERROR" => "delayed",
            _ => "awaiting_destination",
        }),
        "DONE" => {
            let outcome = match substatus {
                "PARTIAL" => Outcome::Partial,
                "REFUNDED" => Outcome::Refunded,
                _ => Outcome::Completed,
            };
            done(outcome, status.receiving.as_ref(), from, to, source)?
        }
        "FAILED" => Tracked {
            status: ExecutionStatus::Failed,
            substatus: Some(match substatus {
                "" => "failed".into(),
                other => other.to_ascii_lowercase(),
            }),
            outcome: None,
            tx_hashes: vec![source.clone()],
            received_amount: None,
            received_token: None,
            fees_paid: Vec::new(),
        },
        _ => return Err(confused("a status swapd does not know")),
    }))
}

/// A `DONE` status: what arrived, read from LI.FI's `receiving` side (the refund's, for a
/// refund).
fn done(
    outcome: Outcome,
    receiving: Option<&wire::Transfer>,
    from: &'static CurrencyDef,
    to: &'static CurrencyDef,
    source: &ExecutionTx,
) -> Result<Tracked, ProviderError> {
    let receiving =
        receiving.ok_or_else(|| confused("a finished transfer without its receiving side"))?;
    let token = receiving
        .token
        .as_ref()
        .ok_or_else(|| confused("a finished transfer without its token"))?;
    let chain = receiving
        .chain_id
        .or(chain_id(if outcome == Outcome::Refunded {
            from.network
        } else {
            to.network
        }))
        .ok_or_else(|| confused("a finished transfer without its chain"))?;
    let amount = integer(
        receiving
            .amount
            .as_deref()
            .ok_or_else(|| confused("a finished transfer without its amount"))?,
    )?;
    let known = currency_of(chain, &token.address);
    let received_token = known.map_or_else(
        || {
            token
                .symbol
                .clone()
                .unwrap_or_else(|| token.address.clone())
        },
        |def| def.code.to_owned(),
    );
    let received_amount =
        Amount::from_base_units(amount, token.decimals, Rounding::Down).to_string();
    let mut tx_hashes = vec![source.clone()];
    if let Some(hash) = receiving
        .tx_hash
        .as_deref()
        .filter(|hash| *hash != source.tx_hash)
    {
        let network = CURRENCIES
            .iter()
            .map(|def| def.network)
            .find(|network| chain_id(*network) == Some(chain));
        if let Some(caip2) = network.and_then(Network::caip2) {
            tx_hashes.push(ExecutionTx {
                role: "destination".into(),
                chain: caip2,
                tx_hash: hash.to_owned(),
            });
        }
    }
    Ok(Tracked {
        status: ExecutionStatus::Done,
        substatus: Some(
            match outcome {
                Outcome::Completed => "completed",
                Outcome::Partial => "partial",
                Outcome::Refunded => "refunded",
            }
            .into(),
        ),
        outcome: Some(outcome),
        tx_hashes,
        received_amount: Some(received_amount),
        received_token: Some(received_token),
        fees_paid: Vec::new(),
    })
}

/// LI.FI's refusal as swapd's error (docs/providers.md, "LI.FI"): no route (404, or tool errors of
/// `NO_POSSIBLE_ROUTE`/`INSUFFICIENT_LIQUIDITY`), below or above the amounts a route takes
/// (`AMOUNT_TOO_LOW`/`AMOUNT_TOO_HIGH`), rate limits and failures. Never LI.FI's words.
pub fn error(status: u16, body: &[u8], from: &CurrencyDef) -> ProviderError {
    let error: wire::Error = serde_json::from_slice(body).unwrap_or_default();
    let has = |code: &str| error.errors.iter().any(|e| e.code.as_deref() == Some(code));
    match status {
        429 => ProviderError::Unavailable("LI.FI is rate limiting swapd".into()),
        _ if has("AMOUNT_TOO_LOW") => ProviderError::OutOfRange {
            // LI.FI does not say its minimum: the amount asked for is below it.
            min: Amount::zero(from.precision),
            max: None,
            code: from.code,
        },
        _ if has("AMOUNT_TOO_HIGH") || has("INSUFFICIENT_LIQUIDITY") => {
            ProviderError::PairUnsupported("LI.FI has no route for this amount".into())
        }
        404 => ProviderError::PairUnsupported("LI.FI has no route for this pair".into()),
        401 | 403 => ProviderError::Unavailable("LI.FI refused swapd's API key".into()),
        400 => ProviderError::PairUnsupported(format!(
            "LI.FI refused the request{}",
            error
                .code
                .map(|code| format!(" (error {code})"))
                .unwrap_or_default()
        )),
        status => ProviderError::Unavailable(format!("LI.FI answered HTTP {status}")),
    }
}

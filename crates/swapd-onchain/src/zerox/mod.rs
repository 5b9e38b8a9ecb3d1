//! 0x Swap API v2 (docs/providers.md, "0x"): same-chain swaps on the EVM chains swapd reads.
//! A native input is swapped through the AllowanceHolder API (the wallet sends a transaction);
//! a token input through the Gasless API (the wallet signs the trade, and the token's approval
//! when it needs one; 0x's relayer submits them). Mapped onto swapd's provider model by the
//! pure functions here; [`ZeroX`] sends them (docs/providers.md, "0x").

mod provider;
#[cfg(test)]
mod tests;
pub mod wire;

pub use provider::{BASE_URL, ID, ZeroX};

use alloy_primitives::{Address, U256};
use swapd_core::amount::{Amount, Rounding};
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::fees::{FeeSchedule, OnchainFee};
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::provider::{CurrencyOffer, ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::plan::{DEFAULT_SLIPPAGE_BPS, SignedStep};
use swapd_core::onchain::router::{BuiltPlan, PlanRequest};
use swapd_core::onchain::signatures::typed_data_hash;
use swapd_types::onchain::{PlanStep, PlanTransaction, SignatureRequest};

use crate::{approve_calldata, display, parse_json, units};

/// How 0x names a chain's coin.
const NATIVE: &str = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE";
/// Gas suggested for an ERC-20 approval.
const APPROVE_GAS: u64 = 60_000;
/// How long a 0x price is shown as valid: it is no lock (the transaction's minimum is).
const QUOTE_VALID_SECS: u32 = 30;

/// What 0x calls `currency`.
pub fn token(currency: &CurrencyDef) -> &'static str {
    currency.contract.unwrap_or(NATIVE)
}

/// Whether a swap from `from` is gasless: a token input is (0x's relayer pays the gas, taken
/// from the input); the chain's coin cannot be signed over, so it is sent in a transaction.
pub fn gasless(from: &CurrencyDef) -> bool {
    from.contract.is_some()
}

/// Every currency swapd lists on the EVM chains it reads (`reads`): 0x swaps on one chain, and
/// swapd follows the swap on that chain.
pub fn catalog(reads: impl Fn(swapd_core::address::Network) -> bool) -> Vec<CurrencyOffer> {
    CURRENCIES
        .iter()
        .filter(|def| def.network.evm_chain_id().is_some() && reads(def.network))
        .map(|currency| CurrencyOffer {
            currency,
            send: true,
            receive: true,
            min: None,
            max: None,
        })
        .collect()
}

pub struct Query {
    pub path: &'static str,
    pub query: Vec<(&'static str, String)>,
}

/// 0x takes at most this many bps per recipient (`swapFeeBps`).
const MAX_SWAP_FEE_BPS: u32 = 1_000;

/// The fees 0x pays in the output token, one recipient per party: the operator's EVM recipient
/// and the partner's (`swapFeeRecipient`, `swapFeeBps`, `swapFeeToken`; docs/fees.md).
pub fn fees_for(request: &QuoteRequest) -> Option<(Vec<OnchainFee>, FeeSchedule)> {
    let operator = crate::evm_recipient(request);
    crate::onchain_fees(request, ID, (operator, true), MAX_SWAP_FEE_BPS)
}

fn query(
    path: (&'static str, &'static str),
    (from, to): (&CurrencyDef, &CurrencyDef),
    amount: Amount,
    taker: Option<&str>,
    slippage_bps: u32,
    fees: &[OnchainFee],
) -> Query {
    let chain_id = from.network.evm_chain_id().unwrap_or_default();
    let mut query = vec![
        ("chainId", chain_id.to_string()),
        ("sellToken", token(from).to_owned()),
        ("buyToken", token(to).to_owned()),
        ("sellAmount", units(amount, from).to_string()),
        ("slippageBps", slippage_bps.to_string()),
    ];
    if let Some(taker) = taker {
        query.push(("taker", taker.to_owned()));
    }
    if !fees.is_empty() {
        // One recipient per party, in comma lists (the affiliate's share is the operator's).
        let list =
            |each: fn(&OnchainFee) -> String| fees.iter().map(each).collect::<Vec<_>>().join(",");
        query.push(("swapFeeRecipient", list(|fee| fee.recipient.clone())));
        query.push(("swapFeeBps", list(|fee| fee.bps.to_string())));
        query.push(("swapFeeToken", token(to).to_owned()));
    }
    Query {
        path: if gasless(from) { path.1 } else { path.0 },
        query,
    }
}

/// The query that prices a card: `/swap/allowance-holder/price` or `/gasless/price`. Refused
/// without a request: across chains, to another recipient, for a fixed output, or on a chain
/// swapd does not read.
pub fn card_query(request: &QuoteRequest, reads_chain: bool) -> Result<Query, ProviderError> {
    request.check_signer(ID)?;
    let (from, to) = (request.from, request.to);
    let refuse = |why: String| Err(ProviderError::PairUnsupported(why));
    if from.network.evm_chain_id().is_none() || from.network != to.network {
        return refuse(format!(
            "0x swaps on one EVM chain, not {} → {}",
            from.code, to.code
        ));
    }
    if request.recipient.is_some() {
        return refuse("0x pays the signing wallet only".into());
    }
    if request.direction == Direction::To {
        return refuse("0x prices an input amount only".into());
    }
    if !reads_chain {
        return Err(ProviderError::NotConfigured(format!(
            "swapd follows 0x swaps on their chain and reads no {} node: set [chains.{}]",
            from.network,
            from.network.code().to_ascii_lowercase()
        )));
    }
    let taker = request.wallet.as_ref().and_then(|w| w.address.as_deref());
    Ok(query(
        ("swap/allowance-holder/price", "gasless/price"),
        (from, to),
        request.amount,
        taker,
        DEFAULT_SLIPPAGE_BPS,
        &fees_for(request).map(|(fees, _)| fees).unwrap_or_default(),
    ))
}

/// The query that builds a plan for its wallet: `/swap/allowance-holder/quote` or
/// `/gasless/quote`.
pub fn plan_query(request: &PlanRequest) -> Query {
    query(
        ("swap/allowance-holder/quote", "gasless/quote"),
        (request.from, request.to),
        request.from_amount,
        Some(&request.wallet_address),
        request.slippage_bps,
        &request.onchain_fees,
    )
}

fn confused(what: &str) -> ProviderError {
    ProviderError::Unavailable(format!("0x answered {what}"))
}

fn integer(text: Option<&str>) -> Result<U256, ProviderError> {
    text.and_then(|text| U256::from_str_radix(text, 10).ok())
        .ok_or_else(|| confused("an amount that is not an integer"))
}

/// A quote with liquidity, for the tokens and amount asked.
fn usable(
    body: &[u8],
    from: &CurrencyDef,
    to: &CurrencyDef,
    sent: U256,
) -> Result<wire::Quote, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    if !quote.liquidity_available {
        return Err(ProviderError::PairUnsupported(
            "0x has no liquidity for this pair now".into(),
        ));
    }
    let same = |theirs: Option<&str>, def: &CurrencyDef| {
        theirs.is_some_and(|theirs| theirs.eq_ignore_ascii_case(token(def)))
    };
    if !same(quote.sell_token.as_deref(), from) || !same(quote.buy_token.as_deref(), to) {
        return Err(confused("a quote for other tokens"));
    }
    if integer(quote.sell_amount.as_deref())? != sent {
        return Err(confused("a quote for another amount"));
    }
    Ok(quote)
}

/// A card's terms from 0x's price.
pub fn card(body: &[u8], request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
    let (from, to) = (request.from, request.to);
    let answer = usable(body, from, to, units(request.amount, from))?;
    let to_amount = display(integer(answer.buy_amount.as_deref())?, to, Rounding::Down);
    let min_output = match answer.min_buy_amount.as_deref() {
        Some(min) => display(integer(Some(min))?, to, Rounding::Down),
        None => swapd_core::market::routes::less_bps(to_amount, DEFAULT_SLIPPAGE_BPS),
    };
    let mut fees = Vec::new();
    if let Some(fee) = answer.total_network_fee.as_deref()
        && let Some(native) = CURRENCIES
            .iter()
            .find(|def| def.network == from.network && def.contract.is_none())
    {
        fees.push(Fee::cost(
            FeeKind::Network,
            display(integer(Some(fee))?, native, Rounding::Up),
            native,
        ));
    }
    let quote = ProviderQuote {
        from_amount: request.amount,
        to_amount,
        min_output,
        rate_type: RateType::Float,
        network_fee: Amount::zero(to.precision),
        fees,
        min: Amount::zero(from.precision),
        max: None,
        estimated_duration_secs: 30,
        valid_for_secs: QUOTE_VALID_SECS,
        gasless: gasless(from),
        rate_lock: None,
        onchain_fees: Vec::new(),
    };
    // 0x's buy amount is what the taker receives after the fees it pays the recipients. It
    // states the fee of one recipient (`integratorFee`); for several, or where it states
    // nothing, the fees are derived from the buy amount.
    let Some((fees, carried)) = fees_for(request) else {
        return Ok(quote);
    };
    let stated = match (&answer.fees, fees.as_slice()) {
        (
            Some(wire::Fees {
                integrator_fee: Some(stated),
            }),
            [_one],
        ) if stated.token.eq_ignore_ascii_case(token(to)) => {
            Some(display(integer(Some(&stated.amount))?, to, Rounding::Down))
        }
        _ => None,
    };
    Ok(ProviderQuote {
        onchain_fees: fees,
        ..match stated {
            Some(total) => quote.with_stated_fee(to, carried, total),
            None => quote.with_output_fees(to, carried)?,
        }
    })
}

/// What a gasless plan keeps for relaying: the trade and approval to sign, as 0x gave them.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GaslessState {
    pub chain_id: u64,
    pub trade: wire::Signable,
    #[serde(default)]
    pub approval: Option<wire::Signable>,
    /// Set once 0x took the signatures.
    #[serde(default)]
    pub trade_hash: Option<String>,
}

/// A plan from 0x's firm quote, or the news that a gasless one cannot be signed yet.
#[derive(Debug)]
pub enum Planned {
    Built(BuiltPlan),
    /// The gasless quote wants an allowance that only a transaction can give (the token has no
    /// gasless approval): the swap must go through the AllowanceHolder API instead.
    NeedsApprovalTransaction,
}

/// The query of the AllowanceHolder quote a token input falls back to.
pub fn allowance_holder_query(request: &PlanRequest) -> Query {
    let mut query = plan_query(request);
    query.path = "swap/allowance-holder/quote";
    query
}

/// The plan from 0x's firm quote for the wallet (a gasless quote when `path` is 0x's gasless
/// one). Refused when its minimum fell below the card's.
pub fn plan(body: &[u8], request: &PlanRequest, path: &str) -> Result<Planned, ProviderError> {
    let (from, to) = (request.from, request.to);
    let sent = units(request.from_amount, from);
    let quote = usable(body, from, to, sent)?;
    let request = &request.accept(
        "0x",
        display(integer(quote.buy_amount.as_deref())?, to, Rounding::Down),
        display(
            integer(quote.min_buy_amount.as_deref())?,
            to,
            Rounding::Down,
        ),
    )?;
    let chain_id = from.network.evm_chain_id().unwrap_or_default();
    let chain = from.network.caip2().unwrap_or_default();
    let description = format!(
        "Swap {} {} for at least {} {} (0x)",
        request.from_amount, from.code, request.min_output, to.code
    );
    if path.starts_with("gasless/") {
        let allowance_needed = quote.issues.as_ref().is_some_and(|i| i.allowance.is_some());
        if allowance_needed && quote.approval.is_none() {
            return Ok(Planned::NeedsApprovalTransaction);
        }
        let trade = quote
            .trade
            .ok_or_else(|| confused("a gasless quote without a trade"))?;
        let signature =
            |id: &str, purpose: &str, signable: &wire::Signable, description: String| {
                typed_data_hash(&signable.eip712)
                    .ok_or_else(|| confused("typed data that does not hash as EIP-712"))?;
                Ok::<_, ProviderError>(PlanStep {
                    step_id: id.into(),
                    kind: "signature".into(),
                    description,
                    chain_id: Some(chain_id),
                    chain: chain.clone(),
                    transaction: None,
                    signature: Some(SignatureRequest {
                        signature_id: format!("sig_{id}"),
                        purpose: purpose.into(),
                        typed_data: signable.eip712.clone(),
                    }),
                })
            };
        let mut steps = Vec::new();
        if let Some(approval) = &quote.approval {
            steps.push(signature(
                "approval",
                "permit",
                approval,
                format!("Allow 0x to take {} {}", request.from_amount, from.code),
            )?);
        }
        steps.push(signature("trade", "order", &trade, description)?);
        let state = GaslessState {
            chain_id,
            trade,
            approval: quote.approval,
            trade_hash: None,
        };
        return Ok(Planned::Built(BuiltPlan {
            provider_state: Some(serde_json::to_value(state).expect("state serializes")),
            ..BuiltPlan::of(steps, request)
        }));
    }
    let transaction = quote
        .transaction
        .ok_or_else(|| confused("a quote without a transaction"))?;
    let address = |text: &str| {
        text.parse::<Address>()
            .map_err(|_| confused("a transaction without a valid address"))
    };
    let step =
        |id: &str, description: String, to: Address, data: String, value: U256, gas| PlanStep {
            step_id: id.into(),
            kind: "transaction".into(),
            description,
            chain_id: Some(chain_id),
            chain: chain.clone(),
            transaction: Some(PlanTransaction::Evm {
                to: to.to_checksum(None),
                data,
                value: value.to_string(),
                gas,
            }),
            signature: None,
        };
    let mut steps = Vec::new();
    if let (Some(token), Some(allowance)) = (
        from.contract,
        quote.issues.as_ref().and_then(|i| i.allowance.as_ref()),
    ) {
        let spender = address(&allowance.spender)?;
        steps.push(step(
            "approve",
            format!("Allow 0x to take {} {}", request.from_amount, from.code),
            address(token)?,
            approve_calldata(spender, sent),
            U256::ZERO,
            Some(APPROVE_GAS.to_string()),
        ));
    }
    let data =
        crate::calldata(&transaction.data).ok_or_else(|| confused("calldata that is not hex"))?;
    steps.push(step(
        "swap",
        description,
        address(&transaction.to)?,
        data,
        match transaction.value.as_deref() {
            Some(value) => integer(Some(value))?,
            None => U256::ZERO,
        },
        crate::gas_limit(transaction.gas.as_deref())?,
    ));
    Ok(Planned::Built(BuiltPlan::of(steps, request)))
}

/// `/gasless/submit`'s body: each signature (`r‖s‖v`, as reported) split as 0x takes it, with
/// the typed data it signs.
pub fn submit_body(
    state: &GaslessState,
    signatures: &[SignedStep],
) -> Result<String, ProviderError> {
    let split = |purpose: &str| -> Result<wire::Signature, ProviderError> {
        let signed = signatures
            .iter()
            .find(|s| s.purpose == purpose)
            .ok_or_else(|| {
                ProviderError::Unavailable(format!("the {purpose} signature is missing"))
            })?;
        let hex = signed.signature.trim_start_matches("0x");
        if hex.len() != 130 {
            return Err(ProviderError::Unavailable(
                "a signature is not 65 bytes".into(),
            ));
        }
        let v = u8::from_str_radix(&hex[128..], 16)
            .map_err(|_| ProviderError::Unavailable("a signature is not hex".into()))?;
        Ok(wire::Signature {
            v: if v < 27 { v + 27 } else { v },
            r: format!("0x{}", &hex[..64]),
            s: format!("0x{}", &hex[64..128]),
            signature_type: 2,
        })
    };
    let body = wire::Submit {
        chain_id: state.chain_id,
        approval: match &state.approval {
            Some(approval) => Some(wire::Signed {
                kind: &approval.kind,
                eip712: &approval.eip712,
                signature: split("permit")?,
            }),
            None => None,
        },
        trade: wire::Signed {
            kind: &state.trade.kind,
            eip712: &state.trade.eip712,
            signature: split("order")?,
        },
    };
    Ok(serde_json::to_string(&body).expect("the submission serializes"))
}

/// Where a gasless trade stands at 0x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gasless {
    /// Not mined yet.
    Waiting,
    /// Mined in this transaction (`succeeded` or `confirmed`): the chain says the rest.
    Mined(String),
    /// Failed: swapd's substatus, and the transactions 0x tried.
    Failed(String, Vec<String>),
}

/// `/gasless/status/{tradeHash}`'s answer.
pub fn gasless_status(body: &[u8]) -> Result<Gasless, ProviderError> {
    let status: wire::Status = parse_json(body)?;
    let hashes = || {
        status
            .transactions
            .iter()
            .map(|tx| tx.hash.clone())
            .collect()
    };
    Ok(match status.status.as_str() {
        "pending" | "submitted" => Gasless::Waiting,
        "succeeded" | "confirmed" => match status.transactions.as_slice() {
            [mined] => Gasless::Mined(mined.hash.clone()),
            _ => return Err(confused("a mined trade without its one transaction")),
        },
        "failed" => Gasless::Failed(
            match status.reason.as_deref() {
                Some("transaction_reverted") => "reverted".into(),
                Some("order_expired") => "expired".into(),
                Some(reason) => reason.to_ascii_lowercase(),
                None => "failed".into(),
            },
            hashes(),
        ),
        _ => return Err(confused("a status swapd does not know")),
    })
}

/// 0x's refusal as swapd's error (docs/providers.md, "0x"), never 0x's words.
pub fn error(status: u16, body: &[u8], from: &CurrencyDef) -> ProviderError {
    let error: wire::Error = serde_json::from_slice(body).unwrap_or_default();
    match (status, error.name.as_deref()) {
        (429, _) => ProviderError::Unavailable("0x is rate limiting swapd".into()),
        (401 | 403, _) => ProviderError::Unavailable("0x refused swapd's API key".into()),
        (_, Some("SELL_AMOUNT_TOO_SMALL")) => ProviderError::OutOfRange {
            min: error
                .data
                .and_then(|data| data.min_sell_amount)
                .and_then(|min| U256::from_str_radix(&min, 10).ok())
                .map_or(Amount::zero(from.precision), |min| {
                    display(min, from, Rounding::Up)
                }),
            max: None,
            code: from.code,
        },
        (_, Some("INSUFFICIENT_BALANCE" | "INSUFFICIENT_BALANCE_OR_ALLOWANCE")) => {
            ProviderError::WalletUnsupported(format!(
                "the wallet does not hold enough {} for this swap",
                from.code
            ))
        }
        (_, Some("PENDING_TRADES_ALREADY_EXIST")) => {
            ProviderError::Unavailable("0x is still settling another trade of this wallet".into())
        }
        (400..=499, Some(name)) => {
            ProviderError::PairUnsupported(format!("0x refused the request ({name})"))
        }
        (400..=499, None) => ProviderError::PairUnsupported("0x refused the request".into()),
        (status, _) => ProviderError::Unavailable(format!("0x answered HTTP {status}")),
    }
}

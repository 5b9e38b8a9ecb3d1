//! Jupiter (docs/providers.md, "Jupiter"): swaps on Solana through its Metis swap API (`/quote`,
//! then `/swap` for the wallet's unsigned transaction), behind `base_url` and `api_key`
//! settings since its public endpoints are moving. Offered only when swapd reads Solana: a
//! swap has no status API and is followed on the chain. The pure functions here map its wire
//! format; [`Jupiter`] sends it (docs/providers.md, "Jupiter").

mod provider;
#[cfg(test)]
mod tests;
pub mod wire;

pub use provider::{BASE_URL, ID, Jupiter};

use alloy_primitives::U256;
use base64::Engine;
use swapd_core::address::Network;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::fees::{FeeSchedule, OnchainFee};
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::provider::{CurrencyOffer, ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::plan::DEFAULT_SLIPPAGE_BPS;
use swapd_core::onchain::router::PlanRequest;
use swapd_types::onchain::{PlanStep, PlanTransaction};

use crate::{display, parse_json, units};

/// Wrapped SOL: how Jupiter names SOL (it wraps and unwraps it for the wallet).
const WRAPPED_SOL: &str = "So11111111111111111111111111111111111111112";
const QUOTE_VALID_SECS: u32 = 30;

/// The mint Jupiter trades for `currency`.
pub fn mint(currency: &CurrencyDef) -> &'static str {
    currency.contract.unwrap_or(WRAPPED_SOL)
}

/// Every currency swapd lists on Solana, when swapd reads Solana.
pub fn catalog(reads_solana: bool) -> Vec<CurrencyOffer> {
    CURRENCIES
        .iter()
        .filter(|def| reads_solana && def.network == Network::Solana)
        .map(|currency| CurrencyOffer {
            currency,
            send: true,
            receive: true,
            min: None,
            max: None,
        })
        .collect()
}

fn query(
    from: &CurrencyDef,
    to: &CurrencyDef,
    amount: Amount,
    direction: Direction,
    slippage_bps: u32,
    fee: Option<&OnchainFee>,
) -> Vec<(&'static str, String)> {
    let (amount, mode) = match direction {
        Direction::From => (units(amount, from), "ExactIn"),
        Direction::To => (units(amount, to), "ExactOut"),
    };
    let mut query = vec![
        ("inputMint", mint(from).to_owned()),
        ("outputMint", mint(to).to_owned()),
        ("amount", amount.to_string()),
        ("slippageBps", slippage_bps.to_string()),
        ("swapMode", mode.to_owned()),
    ];
    if let Some(fee) = fee {
        query.push(("platformFeeBps", fee.bps.to_string()));
    }
    query
}

/// Jupiter's platform fee is below 100 %.
const MAX_PLATFORM_FEE_BPS: u32 = 9_999;

/// The operator's fee Jupiter takes from the output into the operator's token account for the
/// output's mint (`platformFeeBps`, and `feeAccount` on `/swap`; docs/fees.md): for an exact
/// input only (on an exact output Jupiter would take it from the input), and where the operator
/// named an account for the output (`fees.recipients.solana`).
pub fn fees_for(request: &QuoteRequest) -> Option<(Vec<OnchainFee>, FeeSchedule)> {
    if request.direction != Direction::From {
        return None;
    }
    let account = request.fees.recipients.solana.get(request.to.code).cloned();
    crate::onchain_fees(request, ID, (account, false), MAX_PLATFORM_FEE_BPS)
}

/// Why Jupiter offers nothing without a Solana node.
pub const NO_SOLANA_NODE: &str =
    "swapd follows Jupiter swaps on Solana and reads no Solana node: set [chains.sol]";

/// The `/quote` query of a card. Refused without asking: off Solana, to another recipient, or
/// when swapd does not read Solana.
pub fn card_query(
    request: &QuoteRequest,
    reads_solana: bool,
) -> Result<Vec<(&'static str, String)>, ProviderError> {
    request.check_signer(ID)?;
    let (from, to) = (request.from, request.to);
    let refuse = |why: String| Err(ProviderError::PairUnsupported(why));
    if from.network != Network::Solana || to.network != Network::Solana {
        return refuse(format!(
            "Jupiter swaps on Solana, not {} → {}",
            from.code, to.code
        ));
    }
    if request.recipient.is_some() {
        return refuse("Jupiter pays the signing wallet only".into());
    }
    if !reads_solana {
        return Err(ProviderError::NotConfigured(NO_SOLANA_NODE.into()));
    }
    Ok(query(
        from,
        to,
        request.amount,
        request.direction,
        DEFAULT_SLIPPAGE_BPS,
        fees_for(request)
            .and_then(|(fees, _)| fees.into_iter().next())
            .as_ref(),
    ))
}

/// The `/quote` query of a plan: its input, at its slippage.
pub fn plan_query(request: &PlanRequest) -> Vec<(&'static str, String)> {
    query(
        request.from,
        request.to,
        request.from_amount,
        Direction::From,
        request.slippage_bps,
        request.onchain_fees.first(),
    )
}

fn confused(what: &str) -> ProviderError {
    ProviderError::Unavailable(format!("Jupiter answered {what}"))
}

fn integer(text: &str) -> Result<U256, ProviderError> {
    U256::from_str_radix(text, 10).map_err(|_| confused("an amount that is not an integer"))
}

fn usable(body: &[u8], from: &CurrencyDef, to: &CurrencyDef) -> Result<wire::Quote, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    if quote.input_mint != mint(from) || quote.output_mint != mint(to) {
        return Err(confused("a quote for other mints"));
    }
    Ok(quote)
}

/// A card's terms from Jupiter's quote.
pub fn card(body: &[u8], request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
    let (from, to) = (request.from, request.to);
    let quote = usable(body, from, to)?;
    let to_amount = display(integer(&quote.out_amount)?, to, Rounding::Down);
    let (from_amount, min_output) = match quote.swap_mode.as_str() {
        "ExactIn" => (
            request.amount,
            display(integer(&quote.other_amount_threshold)?, to, Rounding::Down),
        ),
        // The output is exact; the input may rise to the threshold.
        "ExactOut" => (
            display(integer(&quote.other_amount_threshold)?, from, Rounding::Up),
            to_amount,
        ),
        _ => return Err(confused("a swap mode swapd does not know")),
    };
    if to_amount.is_zero() || min_output > to_amount {
        return Err(confused("a quote without a usable output"));
    }
    let quote = ProviderQuote {
        from_amount,
        to_amount,
        min_output,
        rate_type: RateType::Float,
        network_fee: Amount::zero(to.precision),
        fees: Vec::new(),
        min: Amount::zero(from.precision),
        max: None,
        estimated_duration_secs: 15,
        valid_for_secs: QUOTE_VALID_SECS,
        gasless: false,
        rate_lock: None,
        onchain_fees: Vec::new(),
    };
    // Jupiter's out amount is what the wallet receives after the platform fee.
    match fees_for(request) {
        Some((fees, carried)) => Ok(ProviderQuote {
            onchain_fees: fees,
            ..quote.with_output_fees(to, carried)?
        }),
        None => Ok(quote),
    }
}

/// The plan's quote, checked against what the card showed ([`PlanRequest::accept`]): the body
/// `/swap` takes back unchanged, and the request holding Jupiter's guaranteed output.
pub fn checked_quote(
    body: &[u8],
    request: &PlanRequest,
) -> Result<(serde_json::Value, PlanRequest), ProviderError> {
    let (from, to) = (request.from, request.to);
    let quote = usable(body, from, to)?;
    if integer(&quote.in_amount)? != units(request.from_amount, from) {
        return Err(confused("a quote for another amount"));
    }
    let accepted = request.accept(
        "Jupiter",
        display(integer(&quote.out_amount)?, to, Rounding::Down),
        display(integer(&quote.other_amount_threshold)?, to, Rounding::Down),
    )?;
    let quote = serde_json::from_slice(body).map_err(|_| confused("malformed JSON"))?;
    Ok((quote, accepted))
}

/// `/swap`'s body: the quote as Jupiter gave it, for the wallet, SOL wrapped and unwrapped,
/// the platform fee paid into the operator's `fee_account`.
pub fn swap_body(quote: serde_json::Value, wallet: &str, fee: Option<&OnchainFee>) -> String {
    let mut body = serde_json::json!({
        "quoteResponse": quote,
        "userPublicKey": wallet,
        "wrapAndUnwrapSol": true,
        "dynamicComputeUnitLimit": true,
    });
    if let Some(fee) = fee {
        body["feeAccount"] = fee.recipient.clone().into();
    }
    body.to_string()
}

/// The plan's one step: the unsigned transaction, valid until `lastValidBlockHeight`.
pub fn plan_step(body: &[u8], request: &PlanRequest) -> Result<Vec<PlanStep>, ProviderError> {
    let swap: wire::Swap = parse_json(body)?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&swap.swap_transaction)
        .map_err(|_| confused("a transaction that is not base64"))?;
    // Solana caps a transaction at 1232 bytes.
    if decoded.is_empty() || decoded.len() > 1232 {
        return Err(confused("a transaction Solana would not take"));
    }
    Ok(vec![PlanStep {
        step_id: "swap".into(),
        kind: "transaction".into(),
        description: format!(
            "Swap {} {} for at least {} {} (Jupiter)",
            request.from_amount, request.from.code, request.min_output, request.to.code
        ),
        chain_id: None,
        chain: Network::Solana.caip2().unwrap_or_default(),
        transaction: Some(PlanTransaction::Solana {
            serialized_transaction: swap.swap_transaction,
            last_valid_block_height: Some(swap.last_valid_block_height),
        }),
        signature: None,
    }])
}

/// Jupiter's refusal as swapd's error (docs/providers.md, "Jupiter"), never Jupiter's words.
pub fn error(status: u16, body: &[u8]) -> ProviderError {
    let error: wire::Error = serde_json::from_slice(body).unwrap_or_default();
    match (status, error.error_code.as_deref()) {
        (429, _) => ProviderError::Unavailable("Jupiter is rate limiting swapd".into()),
        (401 | 403, _) => ProviderError::Unavailable("Jupiter refused swapd's API key".into()),
        (_, Some("COULD_NOT_FIND_ANY_ROUTE" | "NO_ROUTES_FOUND")) => {
            ProviderError::PairUnsupported("Jupiter has no route for this pair and amount".into())
        }
        (_, Some("TOKEN_NOT_TRADABLE")) => {
            ProviderError::PairUnsupported("Jupiter does not trade this token".into())
        }
        (400..=499, _) => ProviderError::PairUnsupported("Jupiter refused the request".into()),
        (status, _) => ProviderError::Unavailable(format!("Jupiter answered HTTP {status}")),
    }
}

//! Relay (docs/providers.md, "Relay"): cross-chain and same-chain routes from EVM chains, to
//! EVM chains and Solana (an EVM signer paying a Solana recipient). Its quote's steps become the
//! plan's: transaction items are the wallet's transactions; signature items (a permit, an
//! order) are EIP-712 typed data the wallet signs, which swapd then posts where Relay said. The
//! pure functions here map its wire format; [`Relay`] sends it (docs/providers.md, "Relay").

mod provider;
#[cfg(test)]
mod tests;
pub mod wire;

pub use provider::{BASE_URL, ID, Relay};

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};
use swapd_core::address::Network;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::fees::{FeeSchedule, OnchainFee};
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::provider::{CurrencyOffer, ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::plan::{DEFAULT_SLIPPAGE_BPS, MAX_SIGNATURES};
use swapd_core::onchain::router::{BuiltPlan, PlanRequest};
use swapd_core::onchain::signatures::typed_data_hash;
use swapd_types::onchain::{PlanStep, PlanTransaction, SignatureRequest};

use crate::{display, parse_json, units};

/// Relay's chain id for Solana (not an EIP-155 id).
pub const SOLANA_CHAIN_ID: u64 = 792_703_809;
/// Who a card is priced for when the caller named no wallet.
const UNNAMED_EVM_USER: &str = "0x0000000000000000000000000000000000000001";
/// How long a Relay price is shown as valid: the solver's quote is no lock.
const QUOTE_VALID_SECS: u32 = 30;

/// Relay's id of the chain `network` is on.
pub fn chain_id(network: Network) -> Option<u64> {
    match network {
        Network::Solana => Some(SOLANA_CHAIN_ID),
        other => other.evm_chain_id(),
    }
}

/// What Relay calls `currency`.
pub fn currency_address(currency: &CurrencyDef) -> &'static str {
    crate::zero_native_address(currency)
}

fn currency_of(chain: u64, address: &str) -> Option<&'static CurrencyDef> {
    crate::currency_at(chain_id, chain, address)
}

/// Every currency swapd lists on a chain Relay routes. Routes start on EVM chains only: a
/// Solana origin needs instructions assembled into a transaction, which swapd does not do.
pub fn catalog() -> Vec<CurrencyOffer> {
    CURRENCIES
        .iter()
        .filter(|def| chain_id(def.network).is_some())
        .map(|currency| CurrencyOffer {
            currency,
            send: currency.network != Network::Solana,
            receive: true,
            min: None,
            max: None,
        })
        .collect()
}

fn refuse(why: String) -> ProviderError {
    ProviderError::PairUnsupported(why)
}

struct Route<'a> {
    from: &'a CurrencyDef,
    to: &'a CurrencyDef,
    amount: Amount,
    direction: Direction,
    user: &'a str,
    recipient: Option<&'a str>,
    slippage_bps: Option<u32>,
    fees: &'a [OnchainFee],
}

/// Relay's app fees are bps of the input; it takes at most this many.
const MAX_APP_FEE_BPS: u32 = 10_000;

/// The fees Relay takes from the input as app fees, one per party: for the operator's EVM
/// recipient and the partner's (`appFees`; docs/fees.md).
pub fn fees_for(request: &QuoteRequest) -> Option<(Vec<OnchainFee>, FeeSchedule)> {
    let operator = crate::evm_recipient(request);
    crate::onchain_fees(request, ID, (operator, true), MAX_APP_FEE_BPS)
}

fn quote_body(route: Route<'_>, referrer: &str) -> Result<String, ProviderError> {
    let (from, to) = (route.from, route.to);
    if from.network == Network::Solana {
        return Err(refuse(
            "Relay routes from Solana are not offered (swapd assembles no Solana instructions)"
                .into(),
        ));
    }
    let origin = chain_id(from.network)
        .ok_or_else(|| refuse(format!("Relay does not route {}", from.code)))?;
    let destination =
        chain_id(to.network).ok_or_else(|| refuse(format!("Relay does not route {}", to.code)))?;
    let (amount, trade_type) = match route.direction {
        Direction::From => (units(route.amount, from), "EXACT_INPUT"),
        Direction::To => (units(route.amount, to), "EXACT_OUTPUT"),
    };
    let body = wire::QuoteRequest {
        user: route.user,
        recipient: route.recipient,
        origin_chain_id: origin,
        destination_chain_id: destination,
        origin_currency: currency_address(from),
        destination_currency: currency_address(to),
        amount: amount.to_string(),
        trade_type,
        refund_to: Some(route.user),
        slippage_tolerance: route.slippage_bps.map(|bps| bps.to_string()),
        referrer,
        use_permit: from.contract.is_some(),
        // One recipient per party (the affiliate's share is the operator's).
        app_fees: route
            .fees
            .iter()
            .map(|fee| wire::AppFee {
                recipient: &fee.recipient,
                fee: fee.bps.to_string(),
            })
            .collect(),
    };
    Ok(serde_json::to_string(&body).expect("the quote request serializes"))
}

/// The body that prices a card.
pub fn card_body(request: &QuoteRequest, referrer: &str) -> Result<String, ProviderError> {
    request.check_signer(ID)?;
    request.check_recipient()?;
    let user = request
        .wallet
        .as_ref()
        .and_then(|w| w.address.as_deref())
        .unwrap_or(UNNAMED_EVM_USER);
    let fees = fees_for(request).map(|(fees, _)| fees).unwrap_or_default();
    quote_body(
        Route {
            from: request.from,
            to: request.to,
            amount: request.amount,
            direction: request.direction,
            user,
            recipient: request.recipient.as_deref(),
            slippage_bps: None,
            fees: &fees,
        },
        referrer,
    )
}

/// The body that builds a plan for its wallet, recipient and slippage.
pub fn plan_body(request: &PlanRequest, referrer: &str) -> Result<String, ProviderError> {
    quote_body(
        Route {
            from: request.from,
            to: request.to,
            amount: request.from_amount,
            direction: Direction::From,
            user: &request.wallet_address,
            recipient: request.recipient.as_deref(),
            slippage_bps: Some(request.slippage_bps),
            fees: &request.onchain_fees,
        },
        referrer,
    )
}

fn confused(what: &str) -> ProviderError {
    ProviderError::Unavailable(format!("Relay answered {what}"))
}

fn integer(text: &str) -> Result<U256, ProviderError> {
    U256::from_str_radix(text, 10).map_err(|_| confused("an amount that is not an integer"))
}

/// Checks that Relay quoted the currencies asked for.
fn check_sides(
    quote: &wire::Quote,
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<(), ProviderError> {
    let same = |side: &wire::Side, def: &CurrencyDef| {
        currency_of(side.currency.chain_id, &side.currency.address) == Some(def)
            && side.currency.decimals == def.decimals
    };
    if same(&quote.details.currency_in, from) && same(&quote.details.currency_out, to) {
        Ok(())
    } else {
        Err(confused("a quote for other currencies"))
    }
}

fn output(quote: &wire::Quote, to: &CurrencyDef) -> Result<(Amount, Amount), ProviderError> {
    let side = &quote.details.currency_out;
    let expected = display(integer(&side.amount)?, to, Rounding::Down);
    let minimum = match side.minimum_amount.as_deref() {
        Some(minimum) => display(integer(minimum)?, to, Rounding::Down),
        None => swapd_core::market::routes::less_bps(expected, DEFAULT_SLIPPAGE_BPS),
    };
    if expected.is_zero() || minimum > expected {
        return Err(confused("a quote without a usable output"));
    }
    Ok((expected, minimum))
}

fn signature_only(steps: &[wire::Step]) -> bool {
    !steps.is_empty() && steps.iter().all(|step| step.kind == "signature")
}

/// A card's terms from Relay's quote.
pub fn card(body: &[u8], request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    let (from, to) = (request.from, request.to);
    check_sides(&quote, from, to)?;
    let (to_amount, min_output) = output(&quote, to)?;
    let from_amount = match request.direction {
        Direction::From => request.amount,
        Direction::To => display(
            integer(&quote.details.currency_in.amount)?,
            from,
            Rounding::Up,
        ),
    };
    let mut fees = Vec::new();
    if let Some(fees_wire) = &quote.fees {
        for (kind, fee) in [
            (FeeKind::Network, &fees_wire.gas),
            (FeeKind::Provider, &fees_wire.relayer),
        ] {
            let Some(fee) = fee else { continue };
            let Some(currency) = currency_of(fee.currency.chain_id, &fee.currency.address) else {
                continue;
            };
            let amount = display(integer(&fee.amount)?, currency, Rounding::Up);
            if !amount.is_zero() {
                fees.push(Fee::cost(kind, amount, currency));
            }
        }
    }
    let quote = ProviderQuote {
        from_amount,
        to_amount,
        min_output,
        rate_type: RateType::Float,
        network_fee: Amount::zero(to.precision),
        fees,
        min: Amount::zero(from.precision),
        max: None,
        estimated_duration_secs: quote
            .details
            .time_estimate
            .map_or(0, |secs| secs.clamp(0.0, f64::from(u32::MAX)).ceil() as u32),
        valid_for_secs: QUOTE_VALID_SECS,
        gasless: signature_only(&quote.steps),
        rate_lock: None,
        onchain_fees: Vec::new(),
    };
    // Relay's output is what the input less the app fee buys.
    Ok(match fees_for(request) {
        Some((fees, carried)) => ProviderQuote {
            onchain_fees: fees,
            ..quote.with_input_fees(from, carried)
        },
        None => quote,
    })
}

/// Where a signature goes once the wallet made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPost {
    pub signature_id: String,
    pub post: wire::Post,
}

/// What a Relay plan keeps: its request id, and its signatures' destinations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayState {
    pub request_id: String,
    #[serde(default)]
    pub posts: Vec<PendingPost>,
}

/// EIP-712 in `eth_signTypedData_v4`'s shape from Relay's `sign` payload, with the
/// `EIP712Domain` type wallets expect spelled out from the domain's fields.
pub fn typed_data(sign: &wire::Sign) -> Result<serde_json::Value, ProviderError> {
    if sign.signature_kind != "eip712" {
        return Err(refuse(format!(
            "Relay asked for a {} signature; swapd plans take EIP-712 only",
            sign.signature_kind
        )));
    }
    let mut types = sign.types.clone();
    if !types.contains_key("EIP712Domain") {
        let domain_fields = [
            ("name", "string"),
            ("version", "string"),
            ("chainId", "uint256"),
            ("verifyingContract", "address"),
            ("salt", "bytes32"),
        ];
        let present: Vec<serde_json::Value> = domain_fields
            .iter()
            .filter(|(name, _)| sign.domain.get(name).is_some())
            .map(|(name, kind)| serde_json::json!({"name": name, "type": kind}))
            .collect();
        types.insert("EIP712Domain".into(), present.into());
    }
    let typed = serde_json::json!({
        "types": types,
        "primaryType": sign.primary_type.as_deref().ok_or_else(|| confused("typed data without a primary type"))?,
        "domain": sign.domain,
        "message": sign.value,
    });
    typed_data_hash(&typed).ok_or_else(|| confused("typed data that does not hash as EIP-712"))?;
    Ok(typed)
}

/// The plan from Relay's quote for the wallet: its transaction steps, or its signature steps
/// with where each signature goes. Refused when the guaranteed output fell below the card's
/// minimum, or when Relay mixes transactions and signatures (one report carries one kind).
pub fn plan(body: &[u8], request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
    let quote: wire::Quote = parse_json(body)?;
    let (from, to) = (request.from, request.to);
    check_sides(&quote, from, to)?;
    if integer(&quote.details.currency_in.amount)? != units(request.from_amount, from) {
        return Err(confused("a quote for another amount"));
    }
    let (expected, guaranteed) = output(&quote, to)?;
    let request = &request.accept("Relay", expected, guaranteed)?;
    let request_id = quote
        .steps
        .iter()
        .find_map(|step| step.request_id.clone())
        .ok_or_else(|| confused("steps without a request id"))?;
    let signatures = signature_only(&quote.steps);
    if !signatures && quote.steps.iter().any(|step| step.kind != "transaction") {
        return Err(refuse(
            "Relay asked for transactions and signatures in one route; fetch routes again".into(),
        ));
    }
    let chain_id = from.network.evm_chain_id();
    let chain = from.network.caip2().unwrap_or_default();
    let mut steps = Vec::new();
    let mut posts = Vec::new();
    for step in &quote.steps {
        for (index, item) in step.items.iter().enumerate() {
            let step_id = if step.items.len() == 1 {
                step.id.clone()
            } else {
                format!("{}_{}", step.id, index + 1)
            };
            let description = match step.id.as_str() {
                "approve" => format!("Allow Relay to take {} {}", request.from_amount, from.code),
                "authorize" | "authorize1" | "authorize2" => {
                    format!(
                        "Authorize Relay to take {} {}",
                        request.from_amount, from.code
                    )
                }
                _ => format!(
                    "Send {} {} to Relay for at least {} {}",
                    request.from_amount, from.code, request.min_output, to.code
                ),
            };
            if signatures {
                let item: wire::SignatureItem = serde_json::from_value(item.data.clone())
                    .map_err(|_| confused("a signature item swapd cannot read"))?;
                let signature_id = format!("sig_{step_id}");
                steps.push(PlanStep {
                    step_id,
                    kind: "signature".into(),
                    description,
                    chain_id,
                    chain: chain.clone(),
                    transaction: None,
                    signature: Some(SignatureRequest {
                        signature_id: signature_id.clone(),
                        purpose: if step.id.starts_with("authorize") || step.id == "approve" {
                            "permit".into()
                        } else {
                            "order".into()
                        },
                        typed_data: typed_data(&item.sign)?,
                    }),
                });
                posts.push(PendingPost {
                    signature_id,
                    post: item.post,
                });
            } else {
                let tx: wire::EvmTransaction = serde_json::from_value(item.data.clone())
                    .map_err(|_| confused("a transaction item swapd cannot read"))?;
                if tx.chain_id.is_some_and(|id| Some(id) != chain_id) {
                    return Err(confused("a transaction for another chain"));
                }
                let to_address: Address = tx
                    .to
                    .parse()
                    .map_err(|_| confused("a transaction without a valid address"))?;
                let data = crate::calldata(&tx.data)
                    .ok_or_else(|| confused("calldata that is not hex"))?;
                steps.push(PlanStep {
                    step_id,
                    kind: "transaction".into(),
                    description,
                    chain_id,
                    chain: chain.clone(),
                    transaction: Some(PlanTransaction::Evm {
                        to: to_address.to_checksum(None),
                        data,
                        value: integer(tx.value.as_deref().unwrap_or("0"))?.to_string(),
                        gas: crate::gas_limit(tx.gas.as_deref())?,
                    }),
                    signature: None,
                });
            }
        }
    }
    if steps.is_empty() || steps.len() > MAX_SIGNATURES {
        return Err(confused("a route swapd cannot plan"));
    }
    let state = RelayState { request_id, posts };
    Ok(BuiltPlan {
        provider_state: Some(serde_json::to_value(state).expect("state serializes")),
        ..BuiltPlan::of(steps, request)
    })
}

/// Where an intent stands at Relay (`/intents/status/v3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intent {
    /// Relay has not seen the deposit (or its request) yet.
    Waiting,
    /// In progress: swapd's substatus.
    Pending(&'static str),
    /// Filled: the destination transactions.
    Filled(Vec<String>),
    /// Refunded to the origin.
    Refunded(Vec<String>),
    Failed,
}

pub fn intent(body: &[u8]) -> Result<Intent, ProviderError> {
    let status: wire::Status = parse_json(body)?;
    Ok(match status.status.as_str() {
        "waiting" | "unknown" => Intent::Waiting,
        "depositing" => Intent::Pending("source_confirming"),
        "pending" | "submitted" => Intent::Pending("awaiting_destination"),
        "delayed" => Intent::Pending("delayed"),
        "success" => Intent::Filled(status.tx_hashes),
        "refund" | "refunded" => {
            let mut hashes = status.tx_hashes;
            if hashes.is_empty() {
                hashes = status.in_tx_hashes;
            }
            Intent::Refunded(hashes)
        }
        "failure" => Intent::Failed,
        _ => return Err(confused("a status swapd does not know")),
    })
}

/// Relay's refusal as swapd's error (from Relay's OpenAPI document), never Relay's words.
pub fn error(status: u16, body: &[u8], from: &CurrencyDef) -> ProviderError {
    let error: wire::Error = serde_json::from_slice(body).unwrap_or_default();
    match (status, error.error_code.as_deref()) {
        (429, _) => ProviderError::Unavailable("Relay is rate limiting swapd".into()),
        (401 | 403, _) => ProviderError::Unavailable("Relay refused swapd's API key".into()),
        (_, Some("AMOUNT_TOO_LOW")) => ProviderError::OutOfRange {
            min: Amount::zero(from.precision),
            max: None,
            code: from.code,
        },
        (400..=499, Some(code)) => refuse(format!("Relay refused the request ({code})")),
        (400..=499, None) => refuse("Relay refused the request".into()),
        (status, _) => ProviderError::Unavailable(format!("Relay answered HTTP {status}")),
    }
}

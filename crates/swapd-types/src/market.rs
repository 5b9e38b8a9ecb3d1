//! Wire shapes of market data and routing (docs/market.md): catalog, tokens, quotes, route cards
//! and resolution. Amounts are decimal strings in display units; times are Unix seconds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Which side of a swap the requested amount names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The amount is what the user sends.
    #[default]
    From,
    /// The amount is what the user receives (a reverse quote).
    To,
}

/// `fixed`: the rate is locked when the order is made. `float`: the rate is taken when the
/// deposit is exchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RateType {
    #[default]
    Fixed,
    Float,
}

/// How a route is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionType {
    /// Deposit to an address; the provider exchanges and pays out.
    Offchain,
    /// The user's wallet signs transactions or permits (DEX swaps, bridges).
    Onchain,
}

/// One asset on one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Currency {
    /// Unique per asset+network, e.g. `USDTTRC`, `USDCSOL`.
    pub code: String,
    pub symbol: String,
    pub name: String,
    /// `BTC`, `LTC`, `ETH`, `BSC`, `POLYGON`, `BASE`, `ARBITRUM`, `SOL`, `TRX` or `XRP`.
    pub network: String,
    /// CAIP-2 namespace: `bip122`, `eip155`, `solana`, `tron`, `xrpl`.
    pub chain_namespace: String,
    /// EIP-155 chain id on EVM networks.
    pub chain_id: Option<u64>,
    /// Base-unit decimals on its chain.
    pub decimals: u8,
    /// Fraction digits accepted and shown in amounts.
    pub precision: u8,
    /// Token contract or mint; `null` for a native asset.
    pub contract_address: Option<String>,
    /// What the network calls its memo (`destination tag` on XRP), when it has one.
    pub tag_name: Option<String>,
    /// Payouts to this currency need `tag`.
    pub tag_required: bool,
    /// Can be sent (deposited) to swapd.
    pub send: bool,
    /// Can be received (paid out) from swapd.
    pub receive: bool,
    /// Smallest input accepted by any provider, in this currency; `null` when some provider's
    /// limits depend on the pair (a quote for the pair tells them).
    pub min: Option<String>,
    /// Largest input accepted by any provider, in this currency; `null` as for `min`.
    pub max: Option<String>,
}

/// `GET /currencies`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub schema_version: u32,
    pub currencies: Vec<Currency>,
    pub count: usize,
    /// `true` when some provider's part could not be refreshed.
    pub degraded: bool,
    /// Why the catalog is degraded.
    pub reason: Option<String>,
    /// `live` (fresh from the providers), `cache` (some part is a last good answer) or
    /// `snapshot` (the catalog shipped with swapd).
    pub source: String,
}

/// An onchain asset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    pub symbol: String,
    pub name: String,
    /// Network code (`ETH`, `BASE`, `ARBITRUM`, `BSC`, `POLYGON`, `SOL`).
    pub chain: String,
    pub chain_namespace: String,
    pub chain_id: Option<u64>,
    /// Contract address, mint, or `0xEeee…EEeE` for an EVM chain's native asset.
    pub address: String,
    pub decimals: u8,
    pub native: bool,
    /// The catalog currency this token is, usable as `fromCcy`/`toCcy`.
    pub currency_code: Option<String>,
}

/// `GET /tokens/popular`, `GET /tokens/search`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<Token>,
    pub count: usize,
}

/// `GET /tokens/logo`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenLogo {
    pub chain: String,
    pub address: String,
    pub symbol: String,
    /// `data:image/svg+xml;base64,…`.
    pub image: String,
    /// `true`: no logo is known, the image is generated deterministically from the address.
    pub generated: bool,
}

/// Limits on which routes a quote may use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouteConstraints {
    /// Only these providers (lowercase ids).
    #[serde(default)]
    pub providers: Option<Vec<String>>,
    /// None of these providers.
    #[serde(default)]
    pub exclude_providers: Option<Vec<String>>,
}

/// `POST /quotes` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.05"}))]
pub struct QuoteInput {
    pub from_ccy: String,
    pub to_ccy: String,
    /// Decimal string; what is sent (`direction=from`) or received (`direction=to`).
    #[schema(schema_with = crate::schema::amount)]
    pub amount: String,
    #[serde(default)]
    pub direction: Option<Direction>,
    #[serde(default, rename = "type")]
    pub rate_type: Option<RateType>,
    /// Checked against `fromCcy`'s network.
    #[serde(default)]
    pub refund_address: Option<String>,
    #[serde(default)]
    pub route_constraints: Option<RouteConstraints>,
    /// An affiliate's code: its share of the service fee is in the quote (docs/fees.md).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub affiliate_code: Option<String>,
}

/// `POST /quotes` answer: the best offchain offer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    /// `qte_…`.
    pub quote_id: String,
    pub from_ccy: String,
    pub to_ccy: String,
    pub direction: Direction,
    #[serde(rename = "type")]
    pub rate_type: RateType,
    pub from_amount: String,
    pub to_amount: String,
    /// `toAmount / fromAmount`.
    pub rate: String,
    /// Payout network fee, in `toCcy`, already deducted from `toAmount`.
    pub network_fee: String,
    /// Every fee of the quote (docs/fees.md): `toAmount` is what the user receives after them.
    pub fees: Vec<Fee>,
    /// Input limits, in `fromCcy`; `max` is `null` when the provider has no maximum.
    pub min: String,
    pub max: Option<String>,
    pub provider: String,
    pub expires_at: i64,
    /// What the provider's finished swaps of this pair (or, short of enough of them, of every
    /// pair) showed; `null` while it has too few (docs/market.md, "Observed figures").
    pub observed: Option<Observed>,
}

/// How `GET /routes` orders its usable cards (docs/market.md, "Ranking").
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    ToSchema,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum RouteSort {
    /// The output a user can expect to receive: the quote corrected by what the provider
    /// delivered against its quotes and weighed by its success rate; then time.
    #[default]
    Best,
    /// The quoted output, then time.
    Output,
    /// The expected duration (observed when known), then `best`.
    Fastest,
    /// The observed success rate (providers without figures last), then `best`.
    Reliable,
}

impl RouteSort {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whose outcomes observed figures are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ObservedScope {
    /// The provider's swaps of this pair.
    Pair,
    /// The provider's swaps of every pair (too few of this pair).
    Provider,
}

/// What a provider's finished swaps showed over the window (docs/market.md, "Observed
/// figures"): aggregates across every partner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    /// Outcomes counted against the provider (not those the user caused).
    pub sample_size: u32,
    pub scope: ObservedScope,
    /// Completed ÷ counted, a decimal from `0` to `1`.
    #[schema(example = "0.95")]
    pub success_rate: String,
    /// Median and 90th percentile of deposit confirmed → payout sent (offchain) or report →
    /// done (onchain), over completed swaps.
    pub p50_seconds: Option<u32>,
    pub p90_seconds: Option<u32>,
    /// Median of (delivered − quoted) ÷ quoted over completed swaps, in basis points;
    /// negative when the provider delivers less than it quotes.
    pub delivered_vs_quoted_bps: Option<i32>,
}

/// `GET /providers`: each provider's availability and what its finished swaps showed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Scorecards {
    pub providers: Vec<Scorecard>,
    pub count: usize,
    /// How far back the outcomes behind the figures go.
    pub window_days: u32,
    /// Outcomes a provider (or a pair) needs before its figures are shown.
    pub min_samples: u32,
}

/// One provider's scorecard: aggregates over every partner's swaps.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Scorecard {
    pub provider: String,
    pub execution_type: ExecutionType,
    /// `up`, `degraded` (some calls in a row failed) or `down` (skipped for now): the circuit
    /// breaker's view.
    pub availability: String,
    /// Over every pair; `null` while it has too few outcomes.
    pub observed: Option<Observed>,
    /// Its ten busiest pairs with enough outcomes, busiest first.
    pub pairs: Vec<PairScore>,
}

/// What a provider's swaps of one pair showed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairScore {
    pub from_ccy: String,
    pub to_ccy: String,
    pub observed: Observed,
}

/// A fee of a route (docs/fees.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Fee {
    /// `service` (the operator's fee), `partner` (the partner's markup), `affiliate` (an
    /// affiliate's share of the service fee), `provider` (the provider's own fee beyond its
    /// price, e.g. a bridge relayer's) or `network` (the payout's network fee, or the gas the
    /// signing wallet pays on the source chain). All but the gas are deducted from the output,
    /// so `expectedOutputAmount` is what the user receives after them.
    pub kind: String,
    /// The fee's rate in basis points of the output, as an exact decimal (`7.5`), for the
    /// `service`, `partner` and `affiliate` fees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bps: Option<String>,
    pub amount: String,
    /// Currency code the fee is in.
    pub currency: String,
}

/// One way to make the swap. Unusable providers appear with `isAvailable: false`, a reason and
/// no amounts.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteCard {
    /// `rqq_…`; pass it to `POST /routes/resolve` (offchain) or `/onchain/routes/resolve`.
    pub route_quote_id: Option<String>,
    pub execution_type: ExecutionType,
    pub execution_provider: String,
    /// `true` for routes a wallet signs.
    pub wallet_required: bool,
    pub is_available: bool,
    /// Stable code: `provider_unavailable`, `provider_not_configured`, `amount_out_of_range`, `recipient_required`,
    /// `wallet_unsupported`, `pair_unsupported`.
    pub unavailable_reason: Option<String>,
    /// Human explanation of `unavailableReason`.
    pub unavailable_detail: Option<String>,
    pub from_ccy: String,
    pub to_ccy: String,
    pub from_amount: Option<String>,
    pub expected_output_amount: Option<String>,
    /// Least output the route guarantees (slippage or float tolerance applied).
    pub min_output_amount: Option<String>,
    pub rate: Option<String>,
    #[serde(rename = "type")]
    pub rate_type: RateType,
    pub fees: Vec<Fee>,
    /// Onchain routes whose signer can use a gasless permit signature.
    pub gasless: bool,
    /// The observed median when the provider has enough outcomes, its own estimate otherwise.
    pub estimated_duration_seconds: Option<u32>,
    pub expires_at: Option<i64>,
    /// What the provider's finished swaps showed; `null` while it has too few.
    pub observed: Option<Observed>,
}

/// `GET /routes`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Routes {
    /// Usable routes in the order `sort` asked for (`best` by default), then unusable ones.
    pub routes: Vec<RouteCard>,
    pub count: usize,
    /// The order the routes are in.
    pub sort: RouteSort,
}

/// `POST /routes/resolve` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveInput {
    pub route_quote_id: String,
}

/// `POST /routes/resolve` answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    /// Single use, for `POST /orders`; only the key that resolved it can use it.
    pub create_token: String,
    pub expires_at: i64,
    pub route_quote_id: String,
    pub from_ccy: String,
    pub to_ccy: String,
    pub from_amount: String,
    pub to_amount: String,
    pub rate: String,
    #[serde(rename = "type")]
    pub rate_type: RateType,
    pub provider: String,
}

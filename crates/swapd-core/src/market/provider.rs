//! The liquidity-provider port every provider answers: who it is, what it trades and what it
//! quotes, in swapd's normalized terms. Offchain desks ([`crate::offchain::desk::Desk`]) and
//! onchain routers ([`crate::onchain::router::OnchainRouter`]) add what each kind does beyond
//! it. Adapters keep their request/response mapping pure (unit-testable without a network) and
//! share one HTTP transport; the aggregator in `swapd-market` calls every provider
//! concurrently, each under its own deadline.

use async_trait::async_trait;

use crate::amount::Amount;
use crate::fees::entry::Fee;
use crate::fees::{FeePolicy, FeeSchedule, OnchainFee};
use crate::market::currencies::CurrencyDef;
use crate::market::{Direction, ExecutionType, RateType};

/// Who a provider is and what kind of routes it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo {
    /// Lowercase identifier: the `provider` filter of `GET /routes` and `executionProvider`.
    pub id: &'static str,
    pub execution_type: ExecutionType,
}

/// A currency a provider trades, with its limits for sending it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrencyOffer {
    pub currency: &'static CurrencyDef,
    /// The provider accepts deposits of it.
    pub send: bool,
    /// The provider pays out in it.
    pub receive: bool,
    /// Smallest and largest amount the provider accepts as input, in this currency; `None`
    /// when it states no limits per currency, only per pair (live desks).
    pub min: Option<Amount>,
    pub max: Option<Amount>,
}

/// The wallet that will sign an onchain route: its namespace, and its address when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wallet {
    /// `eip155` or `solana`.
    pub namespace: &'static str,
    pub address: Option<String>,
}

#[derive(Debug, Clone)]
pub struct QuoteRequest {
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    /// Scaled to the precision of the side `direction` names.
    pub amount: Amount,
    pub direction: Direction,
    pub rate_type: RateType,
    pub wallet: Option<Wallet>,
    /// Destination of an onchain route when it differs from the signer.
    pub recipient: Option<String>,
    /// The fees the provider is asked to carry (docs/fees.md): its quote's output is what the
    /// user receives after them, and they are among its `fees`.
    pub fees: FeePolicy,
    pub now_ms: i64,
}

impl QuoteRequest {
    /// A request without a signing wallet or recipient: what an offchain quote needs.
    pub fn without_wallet(
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        amount: Amount,
        direction: Direction,
        rate_type: RateType,
        now_ms: i64,
    ) -> Self {
        Self {
            from,
            to,
            amount,
            direction,
            rate_type,
            wallet: None,
            recipient: None,
            fees: FeePolicy::default(),
            now_ms,
        }
    }

    /// The namespace whose wallet signs a route from `from`: the caller's, or the source
    /// chain's when no wallet was named.
    pub fn signer_namespace(&self) -> Option<&'static str> {
        self.wallet
            .as_ref()
            .map(|w| w.namespace)
            .or(self.from.onchain_namespace())
    }

    /// The check every wallet-signed route shares: the signer's namespace must be the source
    /// chain's.
    pub fn check_signer(&self, provider: &str) -> Result<(), ProviderError> {
        let source = self.from.network.chain_namespace();
        match &self.wallet {
            Some(wallet) if wallet.namespace != source => {
                Err(ProviderError::WalletUnsupported(format!(
                    "{provider} routes from {} are signed by an {source} wallet, not {}",
                    self.from.code, wallet.namespace
                )))
            }
            _ => Ok(()),
        }
    }

    /// A route whose signer's namespace is not the destination's needs a recipient there.
    pub fn check_recipient(&self) -> Result<(), ProviderError> {
        let destination = self.to.network.chain_namespace();
        let signer = self.signer_namespace().unwrap_or(destination);
        if signer != destination && self.recipient.is_none() {
            return Err(ProviderError::RecipientRequired(format!(
                "bridging from an {signer} wallet to {} needs a recipientAddress on {}",
                self.to.code, self.to.network
            )));
        }
        Ok(())
    }
}

/// A provider's normalized answer to a [`QuoteRequest`]. Raw provider payloads never leave the
/// adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderQuote {
    pub from_amount: Amount,
    pub to_amount: Amount,
    /// Least output the route guarantees: the quote for fixed rates, less the slippage or rate
    /// tolerance otherwise.
    pub min_output: Amount,
    pub rate_type: RateType,
    /// Network fee of the payout, in the output currency (zero when none).
    pub network_fee: Amount,
    pub fees: Vec<Fee>,
    /// Input limits in the input currency; `max` is `None` when the provider has none.
    pub min: Amount,
    pub max: Option<Amount>,
    pub estimated_duration_secs: u32,
    /// How long the quote's terms hold.
    pub valid_for_secs: u32,
    /// An onchain route whose signer can use a gasless permit signature.
    pub gasless: bool,
    /// The desk's handle on this fixed rate (ChangeNOW's `rateId`), passed back when the
    /// exchange is opened. Never shown to clients.
    pub rate_lock: Option<String>,
    /// The fees an onchain router was asked to collect, and where: passed again when the plan
    /// is built (docs/fees.md).
    pub onchain_fees: Vec<OnchainFee>,
}

impl ProviderQuote {
    /// Lists the parties' fees a provider took out of the output (a desk's commission, a
    /// router's fee in the output token): derived from the output after them, since that is all
    /// the provider states (docs/fees.md).
    pub fn with_output_fees(
        mut self,
        to: &'static CurrencyDef,
        carried: FeeSchedule,
    ) -> Result<Self, ProviderError> {
        let (_, _, fees) = carried.gross_for(self.to_amount).map_err(|_| {
            ProviderError::Unavailable("the provider quoted no output after its fees".into())
        })?;
        self.fees.extend(Fee::of_parties(&fees, to));
        Ok(self)
    }

    /// Lists the operator's fee as the provider stated the `total` it takes (0x's
    /// `integratorFee`), split between the service and the affiliate.
    pub fn with_stated_fee(
        mut self,
        currency: &'static CurrencyDef,
        carried: FeeSchedule,
        total: Amount,
    ) -> Self {
        self.fees
            .extend(Fee::of_parties(&carried.operator_split(total), currency));
        self
    }

    /// Lists the parties' fees a router takes out of the input before it swaps (LI.FI's `fee`,
    /// Relay's `appFees`), in the input currency: its output is already what the rest buys.
    pub fn with_input_fees(mut self, from: &'static CurrencyDef, carried: FeeSchedule) -> Self {
        self.fees
            .extend(Fee::of_parties(&carried.split(self.from_amount), from));
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider does not trade this pair (or this kind of rate).
    #[error("{0}")]
    PairUnsupported(String),
    /// The amount is outside the provider's limits (in the input currency; `max` is `None`
    /// when there is no maximum; `min` is zero and `max` `None` when the provider did not say).
    #[error("{}", range_text(min, max.as_ref(), code))]
    OutOfRange {
        min: Amount,
        max: Option<Amount>,
        code: &'static str,
    },
    /// The route needs a recipient in the destination's namespace.
    #[error("{0}")]
    RecipientRequired(String),
    /// The route cannot be built for this wallet (wrong namespace, ...).
    #[error("{0}")]
    WalletUnsupported(String),
    /// The provider is down, refused, or answered something unusable.
    #[error("{0}")]
    Unavailable(String),
    /// swapd lacks a setting the provider needs for this pair (a chain node to follow its
    /// executions): the operator's to fix.
    #[error("{0}")]
    NotConfigured(String),
}

fn range_text(min: &Amount, max: Option<&Amount>, code: &str) -> String {
    match max {
        Some(max) => format!("amount must be between {min} and {max} {code}"),
        // A provider that refused the amount without saying its limits.
        None if min.is_zero() => format!("the amount of {code} is outside the provider's limits"),
        None => format!("amount must be at least {min} {code}"),
    }
}

impl ProviderError {
    /// Stable reason code for an unavailable route card.
    pub fn reason_code(&self) -> &'static str {
        match self {
            ProviderError::PairUnsupported(_) => "pair_unsupported",
            ProviderError::OutOfRange { .. } => "amount_out_of_range",
            ProviderError::RecipientRequired(_) => "recipient_required",
            ProviderError::WalletUnsupported(_) => "wallet_unsupported",
            ProviderError::Unavailable(_) => "provider_unavailable",
            ProviderError::NotConfigured(_) => "provider_not_configured",
        }
    }
}

#[async_trait]
pub trait Provider: Send + Sync + 'static {
    fn info(&self) -> ProviderInfo;

    /// The currencies the provider trades now, with limits.
    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError>;

    /// Prices `request`. Onchain routers answer only for pairs their wallet-signed route can
    /// execute.
    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError>;
}

//! The liquidity-provider port. A provider answers in swapd's normalized terms; adapters keep
//! their request/response mapping pure (unit-testable without a network) and share one HTTP
//! transport. The aggregator in `swapd-sandbox` calls every provider concurrently, each under
//! its own deadline.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::amount::Amount;
use crate::market::currencies::CurrencyDef;
use crate::market::{Direction, ExecutionType, RateType};
use crate::onchain::{ExecutionPlan, ExecutionReport, SignedStep, Tracked};

/// The longest building a plan may take at a provider: longer than a quote's deadline, since a
/// live provider builds the transaction for the wallet anew (and simulates it).
pub const PLAN_DEADLINE: Duration = Duration::from_secs(10);
/// The longest one look at an execution may take: the source chain, the provider's status and
/// the destination chain, each bounded by its own timeout.
pub const TRACK_DEADLINE: Duration = Duration::from_secs(30);

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
    pub fees: crate::fees::FeePolicy,
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
            fees: crate::fees::FeePolicy::default(),
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

/// Who a fee goes to: `kind` on the wire (docs/fees.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum FeeKind {
    /// A network's transaction cost: the payout's (deducted from the output), or the gas the
    /// signing wallet pays on the source chain (not deducted).
    Network,
    /// What the provider charges besides its price (a bridge relayer's fee), deducted.
    Provider,
    /// The operator's service fee, deducted.
    Service,
    /// The partner's markup, deducted.
    Partner,
    /// The affiliate's share of the service fee, deducted.
    Affiliate,
}

impl From<crate::fees::Party> for FeeKind {
    fn from(party: crate::fees::Party) -> Self {
        match party {
            crate::fees::Party::Service => FeeKind::Service,
            crate::fees::Party::Partner => FeeKind::Partner,
            crate::fees::Party::Affiliate => FeeKind::Affiliate,
        }
    }
}

impl FeeKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fee {
    pub kind: FeeKind,
    pub amount: Amount,
    /// Catalog code of the currency the fee is paid in.
    pub currency: &'static str,
    /// The fee's rate in bps of the output, where it is one (the parties' fees).
    pub rate: Option<crate::fees::Rate>,
}

impl Fee {
    /// A cost without a rate (a network's, a provider's).
    pub fn cost(kind: FeeKind, amount: Amount, currency: &'static str) -> Self {
        Self {
            kind,
            amount,
            currency,
            rate: None,
        }
    }

    /// The parties' fees of a [`crate::fees::FeeSchedule`], in the output currency.
    pub fn of_parties(fees: &[crate::fees::PartyFee], currency: &'static str) -> Vec<Fee> {
        fees.iter()
            .map(|fee| Fee {
                kind: fee.party.into(),
                amount: fee.amount,
                currency,
                rate: Some(fee.rate),
            })
            .collect()
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
    pub onchain_fees: Vec<crate::fees::OnchainFee>,
}

impl ProviderQuote {
    /// Lists the parties' fees a provider took out of the output (a desk's commission, a
    /// router's fee in the output token): derived from the output after them, since that is all
    /// the provider states (docs/fees.md).
    pub fn with_output_fees(
        mut self,
        to: &CurrencyDef,
        carried: crate::fees::FeeSchedule,
    ) -> Result<Self, ProviderError> {
        let (_, _, fees) = carried.gross_for(self.to_amount).map_err(|_| {
            ProviderError::Unavailable("the provider quoted no output after its fees".into())
        })?;
        self.fees.extend(Fee::of_parties(&fees, to.code));
        Ok(self)
    }

    /// Lists the operator's fee as the provider stated the `total` it takes (0x's
    /// `integratorFee`), split between the service and the affiliate.
    pub fn with_stated_fee(
        mut self,
        currency: &CurrencyDef,
        carried: crate::fees::FeeSchedule,
        total: Amount,
    ) -> Self {
        self.fees.extend(Fee::of_parties(
            &carried.operator_split(total),
            currency.code,
        ));
        self
    }

    /// Lists the parties' fees a router takes out of the input before it swaps (LI.FI's `fee`,
    /// Relay's `appFees`), in the input currency: its output is already what the rest buys.
    pub fn with_input_fees(
        mut self,
        from: &CurrencyDef,
        carried: crate::fees::FeeSchedule,
    ) -> Self {
        self.fees
            .extend(Fee::of_parties(&carried.split(self.from_amount), from.code));
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

/// An onchain route to turn into the steps a wallet performs.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// swapd's plan id: provider-side references derive from it.
    pub plan_id: String,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub from_amount: Amount,
    /// The least output the plan's transactions enforce: before [`PlanRequest::accept`], the
    /// card's expected output less the accepted slippage (what a provider that takes a minimum,
    /// the sandbox's, is asked for); after it, the provider's own guarantee.
    pub min_output: Amount,
    /// What the route card showed the user, which the plan must still honour.
    pub shown: ShownTerms,
    pub wallet_address: String,
    /// Where the output goes; the wallet when `None`.
    pub recipient: Option<String>,
    /// The shortfall below the expected output the wallet accepts (`min_output` is the card's
    /// expected output less it).
    pub slippage_bps: u32,
    /// Whether the route is executed with signatures a relayer submits.
    pub gasless: bool,
    /// The plan's deadline (Unix seconds): transactions and permits stop being valid then.
    pub deadline_secs: i64,
    /// The fees the route was quoted with, collected by the plan's transactions.
    pub onchain_fees: Vec<crate::fees::OnchainFee>,
}

/// The output a route card showed: what the user agreed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShownTerms {
    pub expected_output: Amount,
    /// The card's `minOutputAmount`.
    pub min_output: Amount,
}

impl PlanRequest {
    /// The provider's fresh terms for the plan, checked against what the user was shown
    /// (docs/onchain.md, "Resolving"): refused when its guarantee falls below the card's
    /// minimum, or its expected output below the card's less the slippage the user accepted;
    /// otherwise the request with the provider's guarantee as the plan's minimum, which is
    /// what its transactions enforce.
    pub fn accept(
        &self,
        provider: &str,
        expected: Amount,
        guaranteed: Amount,
    ) -> Result<PlanRequest, ProviderError> {
        let code = self.to.code;
        let shown = self.shown;
        if guaranteed < shown.min_output {
            return Err(ProviderError::Unavailable(format!(
                "the price moved: {provider} now guarantees {guaranteed} {code}, below the \
                 minimum of {} {code} the route showed; fetch routes again",
                shown.min_output
            )));
        }
        let floor = crate::market::routes::less_bps(shown.expected_output, self.slippage_bps);
        if expected < floor {
            return Err(ProviderError::Unavailable(format!(
                "the price moved: {provider} now expects {expected} {code}, more than the \
                 accepted {} bps below the {} {code} the route showed; fetch routes again",
                self.slippage_bps, shown.expected_output
            )));
        }
        Ok(PlanRequest {
            min_output: guaranteed,
            ..self.clone()
        })
    }
}

/// What a provider built for a plan: the steps the wallet performs, and what the provider needs
/// later to pass signatures on or to follow the execution (its request id, the endpoints its
/// signatures go to). The state is stored with the plan and never shown to clients.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltPlan {
    pub steps: Vec<swapd_types::onchain::PlanStep>,
    pub provider_state: Option<serde_json::Value>,
    /// The least output the steps' transactions enforce: the plan's `minOutputAmount`.
    pub min_output: Amount,
}

impl BuiltPlan {
    /// `steps` built for `request`, enforcing its minimum.
    pub fn of(steps: Vec<swapd_types::onchain::PlanStep>, request: &PlanRequest) -> Self {
        Self {
            steps,
            provider_state: None,
            min_output: request.min_output,
        }
    }
}

/// A reported execution to look up.
#[derive(Debug, Clone, Copy)]
pub struct TrackRequest<'a> {
    pub plan: &'a ExecutionPlan,
    pub report: &'a ExecutionReport,
    pub reported_at_ms: i64,
    pub now_ms: i64,
}

#[async_trait]
pub trait Provider: Send + Sync + 'static {
    fn info(&self) -> ProviderInfo;

    /// The currencies the provider trades now, with limits.
    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError>;

    /// Prices `request`. Onchain providers answer only for pairs their wallet-signed route can
    /// execute.
    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError>;

    /// The provider as an offchain desk, when it is one: the order engine follows its
    /// exchanges through it.
    fn as_desk(self: Arc<Self>) -> Option<Arc<dyn crate::desk::Desk>> {
        None
    }

    /// What swapd lacks for this provider to serve every pair it trades (a chain node), in
    /// swapd's words, for readiness; `None` when nothing.
    fn unconfigured(&self) -> Option<String> {
        None
    }

    /// Builds the steps a wallet performs to execute an onchain route. Offchain providers build
    /// none.
    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        let _ = request;
        Err(ProviderError::PairUnsupported(format!(
            "{} opens offchain exchanges and builds no onchain plans",
            self.info().id
        )))
    }

    /// Passes a gasless plan's verified signatures on to the relayer that submits them, once,
    /// before the execution is tracked. An answer that the relayer already has them is `Ok`;
    /// `Unavailable` is asked again later; any other error ends the execution. `Some` state
    /// replaces the plan's provider state (a relayer's trade id). Providers whose gasless plans
    /// need no relaying (the sandbox's) answer `Ok(None)`.
    async fn relay_signatures(
        &self,
        plan: &ExecutionPlan,
        signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        let _ = (plan, signatures);
        Ok(None)
    }

    /// Where a reported onchain execution stands.
    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        let _ = request;
        Err(ProviderError::PairUnsupported(format!(
            "{} builds no onchain plans, so it tracks none",
            self.info().id
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::currencies::currency;

    /// A plan request for a card that showed `expected` and a minimum of `min` USDC, resolved
    /// with 1 % slippage.
    fn request(expected: &str, min: &str) -> PlanRequest {
        let (from, to) = (currency("ETH").unwrap(), currency("USDCBASE").unwrap());
        let amount = |text: &str| Amount::parse(text, to.precision).unwrap();
        PlanRequest {
            plan_id: "ocx_1".into(),
            from,
            to,
            from_amount: Amount::parse("1", from.precision).unwrap(),
            min_output: crate::market::routes::less_bps(amount(expected), 100),
            shown: ShownTerms {
                expected_output: amount(expected),
                min_output: amount(min),
            },
            wallet_address: "0x1111111111111111111111111111111111111111".into(),
            recipient: None,
            slippage_bps: 100,
            gasless: false,
            deadline_secs: 0,
            onchain_fees: Vec::new(),
        }
    }

    fn usdc(text: &str) -> Amount {
        Amount::parse(text, 6).unwrap()
    }

    #[test]
    fn an_unchanged_quote_whose_guarantee_is_wider_than_the_slippage_is_accepted_with_it() {
        // A multi-step route: the provider guarantees 3 % under its expected output, more than
        // the 1 % the user accepted; the card showed exactly these figures.
        let request = request("3000", "2910");
        let accepted = request.accept("LI.FI", usdc("3000"), usdc("2910")).unwrap();
        assert_eq!(
            accepted.min_output,
            usdc("2910"),
            "the provider's guarantee"
        );
        // A one-unit tick down between routes and resolve is no reason to refuse.
        let ticked = request
            .accept("LI.FI", usdc("2999.999999"), usdc("2910"))
            .unwrap();
        assert_eq!(ticked.min_output, usdc("2910"));
    }

    #[test]
    fn a_guarantee_below_the_cards_minimum_or_an_expected_output_past_the_slippage_is_refused() {
        let request = request("3000", "2910");
        let below = request
            .accept("LI.FI", usdc("3000"), usdc("2909.999999"))
            .unwrap_err();
        let text = below.to_string();
        assert!(
            text.contains("2909.999999") && text.contains("2910"),
            "{text}"
        );
        // 1 % under 3000 is 2970: an expected output under it moved past what was accepted.
        let moved = request
            .accept("LI.FI", usdc("2969.999999"), usdc("2950"))
            .unwrap_err();
        let text = moved.to_string();
        assert!(
            text.contains("2969.999999") && text.contains("3000"),
            "{text}"
        );
        assert!(request.accept("LI.FI", usdc("2970"), usdc("2950")).is_ok());
    }
}

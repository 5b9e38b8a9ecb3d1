//! The onchain router port: a [`Provider`] whose routes a wallet executes itself. It builds the
//! steps the wallet signs, passes a gasless plan's signatures to its relayer, and tracks a
//! reported execution to its end (docs/onchain.md). The sandbox routers and the live ones
//! (LI.FI, 0x, Relay, Jupiter) run the same code path through it.

use std::time::Duration;

use async_trait::async_trait;

use crate::amount::Amount;
use crate::fees::OnchainFee;
use crate::market::currencies::CurrencyDef;
use crate::market::provider::{Provider, ProviderError};
use crate::onchain::plan::{ExecutionPlan, ExecutionReport, SignedStep, Tracked};

/// The longest building a plan may take at a provider: longer than a quote's deadline, since a
/// live provider builds the transaction for the wallet anew (and simulates it).
pub const PLAN_DEADLINE: Duration = Duration::from_secs(10);
/// The longest one look at an execution may take: the source chain, the provider's status and
/// the destination chain, each bounded by its own timeout.
pub const TRACK_DEADLINE: Duration = Duration::from_secs(30);

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
    pub onchain_fees: Vec<OnchainFee>,
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

/// An onchain router: a [`Provider`] whose routes a wallet executes.
#[async_trait]
pub trait OnchainRouter: Provider {
    /// What swapd lacks for this router to serve every pair it trades (a chain node to follow
    /// its executions), in swapd's words, for readiness; `None` when nothing.
    fn unconfigured(&self) -> Option<String>;

    /// Builds the steps a wallet performs to execute a route.
    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError>;

    /// Passes a gasless plan's verified signatures on to the relayer that submits them, once,
    /// before the execution is tracked. An answer that the relayer already has them is `Ok`;
    /// `Unavailable` is asked again later; any other error ends the execution. `Some` state
    /// replaces the plan's provider state (a relayer's trade id). A router whose gasless plans
    /// need no relaying (the sandbox's), or that makes none, answers `Ok(None)`.
    async fn relay_signatures(
        &self,
        plan: &ExecutionPlan,
        signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError>;

    /// Where a reported execution stands.
    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError>;
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

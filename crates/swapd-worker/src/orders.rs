//! The order lifecycle engine: looks at every due order, asks `swapd_core::lifecycle` what
//! happens next, and carries it out. Saves are compare-and-set with their outbox event, so two
//! engines racing on one order cannot both move it; effects (payouts, refunds) carry the
//! order's deterministic key, so repeating one after a crash sends nothing twice.

use std::sync::Arc;

use swapd_core::amount::{Amount, Rounding};
use swapd_core::lifecycle::{self, Chain, LifecycleRules, Next};
use swapd_core::market::Market;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::{Direction, RateType};
use swapd_core::orders::{EventType, Order};
use swapd_core::provider::QuoteRequest;
use swapd_core::{Clock, Store};

/// At most this many steps per order per pass (a full lifecycle takes fewer).
const MAX_STEPS: usize = 32;
/// Orders looked at per pass.
const BATCH: u32 = 100;

pub struct OrderEngine {
    store: Arc<dyn Store>,
    chain: Arc<dyn Chain>,
    market: Arc<dyn Market>,
    clock: Arc<dyn Clock>,
    rules: LifecycleRules,
    pause_after_payout: bool,
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error("{0}")]
    Store(#[from] swapd_core::StoreError),
    #[error("{0}")]
    Chain(#[from] swapd_core::lifecycle::ChainError),
    #[error("order {0} names an unknown currency")]
    UnknownCurrency(String),
    #[error("{0}")]
    Pricing(String),
}

impl OrderEngine {
    pub fn new(
        store: Arc<dyn Store>,
        chain: Arc<dyn Chain>,
        market: Arc<dyn Market>,
        clock: Arc<dyn Clock>,
        rules: LifecycleRules,
    ) -> Self {
        Self {
            store,
            chain,
            market,
            clock,
            rules,
            pause_after_payout: false,
        }
    }

    /// Sandbox fault: after the next payout is sent, stop dead before saving it (until the
    /// process is killed), to stage a crash at the worst moment.
    pub fn pause_after_payout(mut self, pause: bool) -> Self {
        self.pause_after_payout = pause;
        self
    }

    pub fn rules(&self) -> &LifecycleRules {
        &self.rules
    }

    /// One pass over the due orders. Returns how many were looked at. Failures are logged and
    /// the order is looked at again on a later pass.
    pub async fn run_due(&self) -> usize {
        let due = match self.store.due_orders(self.clock.now_ms(), BATCH).await {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "cannot list due orders; retrying next pass");
                return 0;
            }
        };
        let count = due.len();
        for order in due {
            let id = order.id.clone();
            if let Err(error) = self.drive(order).await {
                tracing::warn!(order = %id, %error, "order step failed; retrying next pass");
            }
        }
        count
    }

    async fn drive(&self, mut order: Order) -> Result<(), StepError> {
        let from = known(&order.from_code)?;
        let to = known(&order.to_code)?;
        for _ in 0..MAX_STEPS {
            let now = self.clock.now_ms();
            let deposits = self
                .chain
                .deposits(
                    from.network,
                    &order.deposit_address,
                    order.deposit_tag.as_deref(),
                    now,
                )
                .await?;
            let next = lifecycle::next(
                &order,
                &deposits,
                from.network,
                from.precision,
                &self.rules,
                now,
            );
            let (updated, event) = match next {
                Next::Idle => return Ok(()),
                Next::Save(updated, event) => (*updated, event),
                Next::Exchange { received } => {
                    match self.price(&order, from, to, received, now).await {
                        Ok(payout) => (
                            lifecycle::after_exchange(&order, payout, now),
                            Some(EventType::WithdrawStarted),
                        ),
                        Err(error) => {
                            // The market did not answer: look again after the poll interval.
                            tracing::warn!(order = %order.id, %error, "cannot price an exchange yet");
                            let mut later = order.clone();
                            later.version += 1;
                            later.next_check_at_ms = Some(now + self.rules.poll_interval_ms);
                            (later, None)
                        }
                    }
                }
                Next::Payout { key, amount } => {
                    let sent = self
                        .chain
                        .transfer(
                            &key,
                            to.code,
                            &order.to_address,
                            order.to_tag.as_deref(),
                            &amount,
                            now,
                        )
                        .await;
                    if self.pause_after_payout && sent.is_ok() {
                        tracing::warn!(
                            order = %order.id,
                            "sandbox fault: paused after a payout, before saving it"
                        );
                        std::future::pending::<()>().await;
                    }
                    match settled(sent)? {
                        Ok(tx) => (
                            lifecycle::after_payout(&order, tx, now),
                            Some(EventType::Completed),
                        ),
                        Err(reason) => (
                            lifecycle::after_failure(&order, reason, now),
                            Some(EventType::Failed),
                        ),
                    }
                }
                Next::Refund { key, amount } => {
                    let address = order
                        .refund_address
                        .clone()
                        .expect("refunds start only with a refund address");
                    let sent = self
                        .chain
                        .transfer(
                            &key,
                            from.code,
                            &address,
                            order.refund_tag.as_deref(),
                            &amount,
                            now,
                        )
                        .await;
                    match settled(sent)? {
                        Ok(tx) => (
                            lifecycle::after_refund(&order, tx, now),
                            Some(EventType::Updated),
                        ),
                        Err(reason) => (
                            lifecycle::after_failure(&order, reason, now),
                            Some(EventType::Failed),
                        ),
                    }
                }
                Next::RefundExtra {
                    key,
                    deposit_tx,
                    amount,
                } => {
                    let address = order
                        .refund_address
                        .clone()
                        .expect("extra deposits go back only with a refund address");
                    let sent = self
                        .chain
                        .transfer(
                            &key,
                            from.code,
                            &address,
                            order.refund_tag.as_deref(),
                            &amount,
                            now,
                        )
                        .await;
                    let updated = match settled(sent)? {
                        Ok(tx) => lifecycle::after_extra_refund(&order, &deposit_tx, tx, now),
                        Err(reason) => {
                            lifecycle::after_extra_refund_failure(&order, &deposit_tx, reason, now)
                        }
                    };
                    (updated, Some(EventType::Updated))
                }
            };
            let Some(saved) = self.save(&order, updated, event).await? else {
                // Another engine moved the order first; it carries on from there.
                return Ok(());
            };
            order = saved;
        }
        Ok(())
    }

    /// Saves `updated` with its event (if any) when `current` is still the stored version.
    async fn save(
        &self,
        current: &Order,
        mut updated: Order,
        event: Option<EventType>,
    ) -> Result<Option<Order>, StepError> {
        let events: Vec<_> = event
            .map(|event| updated.record_event(event, Some(current.status)))
            .into_iter()
            .collect();
        if self.store.update_order(&updated, &events, None).await? {
            Ok(Some(updated))
        } else {
            Ok(None)
        }
    }

    /// What the received amount pays out: a fixed order within tolerance keeps its locked
    /// terms, in proportion to what arrived; anything else (float orders, and exchanges chosen
    /// in an emergency) takes the provider's current float rate.
    async fn price(
        &self,
        order: &Order,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        received: Amount,
        now_ms: i64,
    ) -> Result<Amount, StepError> {
        let parse = |text: &str, precision| {
            Amount::parse(text, precision).map_err(|e| StepError::Pricing(e.to_string()))
        };
        if order.rate_type == RateType::Fixed && order.emergency.is_none() {
            let expected_in = parse(&order.from_amount, from.precision)?;
            let expected_out = parse(&order.to_amount, to.precision)?;
            return Ok(expected_out.mul_div(received.units(), expected_in.units(), Rounding::Down));
        }
        let provider = self.market.provider(&order.provider).ok_or_else(|| {
            StepError::Pricing(format!("provider {} is not configured", order.provider))
        })?;
        let request = QuoteRequest {
            from,
            to,
            amount: received,
            direction: Direction::From,
            rate_type: RateType::Float,
            wallet: None,
            recipient: None,
            now_ms,
        };
        let quote = tokio::time::timeout(self.market.deadline(), provider.quote(&request))
            .await
            .map_err(|_| StepError::Pricing(format!("{} did not answer in time", order.provider)))?
            .map_err(|e| StepError::Pricing(e.to_string()))?;
        Ok(quote.to_amount)
    }
}

/// A transfer's outcome: sent (`Ok(Ok(tx))`), refused for good (`Ok(Err(reason))`), or not
/// known yet (`Err`: retried on the next pass).
fn settled(
    sent: Result<String, swapd_core::lifecycle::ChainError>,
) -> Result<Result<String, String>, StepError> {
    match sent {
        Ok(tx) => Ok(Ok(tx)),
        Err(swapd_core::lifecycle::ChainError::Rejected(reason)) => Ok(Err(reason)),
        Err(unavailable) => Err(unavailable.into()),
    }
}

fn known(code: &str) -> Result<&'static CurrencyDef, StepError> {
    currency(code).ok_or_else(|| StepError::UnknownCurrency(code.to_owned()))
}

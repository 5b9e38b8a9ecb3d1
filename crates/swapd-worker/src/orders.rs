//! The order engine: follows every due order's exchange at its desk through the desk port
//! (`swapd_core::offchain::desk::Desk`), passes on what the customer decided, and brings the order in
//! step with what the desk reports (`swapd_core::offchain::follow`). It never knows whether the desk is a
//! sandbox one or a live one. Saves are compare-and-set with their outbox events, so two
//! engines racing on one order cannot both move it; what a desk does twice (a choice passed on
//! again after a crash) it answers as the first time.

use std::sync::Arc;
use tracing::Instrument;

use futures_util::StreamExt;

use swapd_core::market::Market;

use swapd_core::offchain::desk::{Desk, DeskError, DeskExchange, ExchangeRef, token_context};
use swapd_core::offchain::follow;
use swapd_core::offchain::follow::DeskAction;
use swapd_core::offchain::follow::LifecycleRules;
use swapd_core::offchain::order::Order;
use swapd_core::secrets::MasterKey;
use swapd_core::{Clock, Store};

/// At most this many looks at an order's desk per pass (a desk that keeps moving is followed
/// one change per look; a full lifecycle takes fewer).
const MAX_LOOKS: usize = 32;
/// Orders looked at per pass.
const BATCH: u32 = 100;
/// Orders followed at once in a pass, so one slow desk does not hold up the others' orders.
const CONCURRENT_ORDERS: usize = 8;

pub struct OrderEngine {
    store: Arc<dyn Store>,
    market: Arc<dyn Market>,
    clock: Arc<dyn Clock>,
    master_key: MasterKey,
    rules: LifecycleRules,
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error("{0}")]
    Store(#[from] swapd_core::StoreError),
    #[error("{0}")]
    Desk(#[from] DeskError),
    #[error("provider {0} is not a desk of this deployment")]
    UnknownDesk(String),
    #[error("the order's desk token cannot be opened: {0}")]
    Token(String),
}

impl OrderEngine {
    pub fn new(
        store: Arc<dyn Store>,
        market: Arc<dyn Market>,
        clock: Arc<dyn Clock>,
        master_key: MasterKey,
        rules: LifecycleRules,
    ) -> Self {
        Self {
            store,
            market,
            clock,
            master_key,
            rules,
        }
    }

    pub fn rules(&self) -> &LifecycleRules {
        &self.rules
    }

    /// One pass over the due orders: batch after batch until one comes back short, so that
    /// more orders due than a batch holds are all looked at in this pass rather than a batch a
    /// poll interval. Returns how many were looked at. An order whose desk cannot be asked now
    /// is looked at again a few poll intervals later; it never fails for that.
    pub async fn run_due(&self) -> usize {
        let mut looked = 0;
        loop {
            let claimed = self.run_batch().await;
            looked += claimed;
            if claimed < BATCH as usize {
                return looked;
            }
        }
    }

    /// Claims one batch of due orders and follows them; how many it claimed.
    async fn run_batch(&self) -> usize {
        let now_ms = self.clock.now_ms();
        let lease_until_ms = now_ms + crate::LEASE_MS;
        let due = match self
            .store
            .claim_due_orders(now_ms, lease_until_ms, BATCH)
            .await
        {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "cannot list due orders; retrying next pass");
                return 0;
            }
        };
        let count = due.len();
        futures_util::stream::iter(due)
            .for_each_concurrent(CONCURRENT_ORDERS, |order| async move {
                let Err(error) = self.drive(&order, lease_until_ms).await else {
                    return;
                };
                let now_ms = self.clock.now_ms();
                let failure = follow::DeskFailure {
                    retry_after_ms: match &error {
                        StepError::Desk(DeskError::RateLimited { retry_after }) => retry_after
                            .map(|wait| i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)),
                        _ => None,
                    },
                    skipped_until_ms: self.market.skipped_until(&order.provider, now_ms),
                };
                let jitter = rand::random_range(0..1000);
                let later = follow::retry_later(&order, &self.rules, failure, jitter, now_ms);
                tracing::warn!(
                    order = %order.id,
                    provider = %order.provider,
                    %error,
                    failures = later.desk_failures,
                    next_check_in_ms = later.next_check_at_ms.unwrap_or(now_ms) - now_ms,
                    "cannot follow the order's desk now; backing off"
                );
                if let Err(error) = self.store.update_order(&later, &[], None).await {
                    tracing::warn!(order = %order.id, %error, "cannot reschedule the order");
                }
            })
            .await;
        count
    }

    async fn drive(&self, order: &Order, lease_until_ms: i64) -> Result<(), StepError> {
        let (from, to) = (order.from, order.to);
        let desk = self
            .market
            .desk(&order.provider)
            .ok_or_else(|| StepError::UnknownDesk(order.provider.clone()))?;
        let token = self.desk_token(order)?;
        let mut order = order.clone();
        let mut passed_on = false;
        // The desk's previous report in this pass: the engine looks again while the desk
        // moves, so a sandbox desk (which moves one change per look) or a live desk that is
        // mid-way is followed without waiting for the next poll.
        let mut previous: Option<DeskExchange> = None;
        for _ in 0..MAX_LOOKS {
            let now = self.clock.now_ms();
            if !crate::lease_allows_a_step(now, lease_until_ms) {
                tracing::debug!(order = %order.id, "the order's lease is ending; left to its next claim");
                return Ok(());
            }
            let exchange = ExchangeRef {
                id: &order.provider_ref,
                reference: order.id.as_str(),
                from,
                to,
                access_token: token.as_deref(),
                now_ms: now,
            };
            let span = tracing::info_span!("desk.exchange", provider = %order.provider);
            let seen = self
                .ask(&order.provider, desk.exchange(&exchange).instrument(span))
                .await?;
            if let Some(action) = follow::pending_action(&order, &seen.status) {
                if passed_on {
                    // The desk took the decision and still shows it pending: look later.
                    tracing::warn!(order = %order.id, ?action, "the desk has not acted on the customer's decision yet");
                } else {
                    self.pass_on(desk.as_ref(), &exchange, action).await?;
                    passed_on = true;
                    continue;
                }
            }
            let mut moved = false;
            if let Some(followed) = follow::follow(&order, &seen, &self.rules, now) {
                moved = !followed.events.is_empty();
                let saved = match followed.order.next_check_at_ms {
                    Some(at) if followed.only_reschedules(&order) => {
                        let saved = self
                            .store
                            .reschedule_order(&order.id, order.version, at)
                            .await?;
                        order.next_check_at_ms = Some(at);
                        saved
                    }
                    _ => {
                        let saved = self
                            .store
                            .update_order(&followed.order, &followed.events, None)
                            .await?;
                        order = followed.order;
                        saved
                    }
                };
                if !saved {
                    // Another engine moved the order first; it carries on from there.
                    return Ok(());
                }
            }
            let desk_moved = previous.as_ref().is_some_and(|p| *p != seen);
            if !moved && !desk_moved {
                return Ok(());
            }
            previous = Some(seen);
        }
        Ok(())
    }

    async fn pass_on(
        &self,
        desk: &dyn Desk,
        exchange: &ExchangeRef<'_>,
        action: DeskAction,
    ) -> Result<(), StepError> {
        match &action {
            DeskAction::Choose(choice, refund_to) => {
                self.ask(
                    desk.info().id,
                    desk.choose(exchange, *choice, refund_to.as_ref()),
                )
                .await
            }
            DeskAction::Refund(refund_to) => {
                self.ask(desk.info().id, desk.refund(exchange, refund_to))
                    .await
            }
        }
    }

    /// A call to `provider`'s desk under the desk call deadline, through its circuit breaker:
    /// not made while the desk is skipped for failing, and its outcome counted.
    async fn ask<T>(
        &self,
        provider: &str,
        call: impl Future<Output = Result<T, DeskError>>,
    ) -> Result<T, StepError> {
        let now = self.clock.now_ms();
        if !self.market.allows(provider, now) {
            return Err(DeskError::Unavailable {
                detail: "skipped for failing; asked again after a pause".into(),
            }
            .into());
        }
        let deadline = swapd_core::offchain::desk::CALL_DEADLINE;
        let answer = match tokio::time::timeout(deadline, call).await {
            Ok(answer) => answer,
            Err(_) => Err(DeskError::Unavailable {
                detail: format!("no answer within {} ms", deadline.as_millis()),
            }),
        };
        let failure = match &answer {
            Err(error) if error.is_transient() => Some(error.to_string()),
            _ => None,
        };
        self.market.record(provider, failure, now);
        Ok(answer?)
    }

    fn desk_token(&self, order: &Order) -> Result<Option<String>, StepError> {
        order
            .desk_token
            .as_deref()
            .map(|sealed| {
                let plain = self
                    .master_key
                    .open(sealed, &token_context(order.id.as_str()))
                    .map_err(|e| StepError::Token(e.to_string()))?;
                String::from_utf8(plain).map_err(|e| StepError::Token(e.to_string()))
            })
            .transpose()
    }
}

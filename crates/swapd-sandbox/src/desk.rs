//! The sandbox desks as an upstream runs them: each keeps its own book of the exchanges it
//! opened (in the database, so a restart loses nothing), watches the sandbox chain for their
//! deposits, judges them, prices the exchange, pays out and refunds under deterministic keys,
//! and answers the desk port as ChangeNOW or FixedFloat would. The order engine follows them
//! through [`Desk`] exactly as it follows a live desk. A book advances when it is looked at,
//! one change per look, as a real desk moves while nobody asks.
//!
//! Opening an exchange writes nothing: the desk hands its opening terms back as the exchange's
//! access token (swapd stores it sealed with the order, as it stores FixedFloat's order token)
//! and records the book when it first looks at the exchange, so creating an order stays one
//! write (docs/orders.md).

use std::sync::Arc;

use async_trait::async_trait;
use swapd_core::Store;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::pricing::BPS;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::actions::{self, OpenOrder};
use swapd_core::offchain::desk::{
    Desk, DeskActions, DeskDeposit, DeskError, DeskExchange, DeskStatus, Destination,
    EmergencyCase, ExchangeRef, ExchangeRequest, OpenedExchange,
};
use swapd_core::offchain::follow::LifecycleRules;
use swapd_core::offchain::order::{Choice, EmergencyReason, Order, OrderLifetimes, OrderStatus};
use swapd_core::owner::Owner;

use crate::chain::{ChainError, SandboxChain};
use crate::engine::{self, BookRules, Next};
use crate::offchain::OffchainDesk;
use swapd_core::address::Address;

/// At most this many lifecycle decisions per look (one change, and the steps that only
/// reschedule before it).
const MAX_DECISIONS: usize = 8;

/// What the sandbox desks run on: the database holding their books and the sandbox chain, and
/// the deposit rules they apply.
#[derive(Clone)]
pub struct SandboxWorld {
    pub store: Arc<dyn Store>,
    /// Every network makes a block this often.
    pub block_ms: i64,
    /// A fixed-rate deposit within this many basis points of the agreed amount is exchanged
    /// on the agreed terms.
    pub tolerance_bps: u32,
    /// Fault: after the next payout is sent, stop dead before recording it (until the process
    /// is killed), to stage a crash at the worst moment.
    pub pause_after_payout: bool,
    /// How each provider behaves (`[sandbox]`, docs/sandbox.md).
    pub behaviours: crate::behaviour::Behaviours,
}

/// An offchain sandbox desk: [`OffchainDesk`]'s prices, and exchanges run on the sandbox chain.
pub struct SandboxDesk {
    quoter: OffchainDesk,
    store: Arc<dyn Store>,
    chain: SandboxChain,
    rules: BookRules,
    pause_after_payout: bool,
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error("{0}")]
    Desk(#[from] DeskError),
    #[error("the book changed meanwhile")]
    Moved,
}

impl SandboxDesk {
    pub fn new(quoter: OffchainDesk, world: &SandboxWorld) -> Self {
        let behaviour = world.behaviours.of(quoter.id());
        Self {
            quoter,
            store: world.store.clone(),
            chain: SandboxChain::new(world.store.clone(), world.block_ms),
            rules: BookRules {
                tolerance_bps: world.tolerance_bps,
                // The desk waits for the customer's answer as long as it takes: swapd decides
                // when an unanswered emergency is refunded (swapd_core::offchain::follow).
                emergency_window_ms: i64::MAX / 4,
                poll_interval_ms: 5_000,
                late_watch_ms: 24 * 60 * 60 * 1000,
                behaviour,
            },
            pause_after_payout: world.pause_after_payout,
        }
    }

    /// The exchange's book; recorded from its opening terms the first time it is looked at.
    async fn book(&self, exchange: &ExchangeRef<'_>) -> Result<Order, DeskError> {
        if let Some(book) = self
            .store
            .sandbox_exchange(exchange.id)
            .await
            .map_err(unavailable)?
        {
            return Ok(book);
        }
        let opening: Opening = exchange
            .access_token
            .and_then(|token| serde_json::from_str(token).ok())
            .ok_or(DeskError::NotFound)?;
        let book = self.opened_book(exchange.id, exchange.reference, &opening)?;
        self.store
            .sandbox_open_exchange(exchange.id, &book)
            .await
            .map_err(unavailable)
    }

    /// The book of exchange `id` (for swapd's order `reference`) as it stands when opened.
    fn opened_book(
        &self,
        id: &str,
        reference: &str,
        opening: &Opening,
    ) -> Result<Order, DeskError> {
        let unreadable = |what: &str| DeskError::Unavailable {
            detail: format!("the opening terms of {id} hold an unreadable {what}"),
        };
        let currency = |code: &str| currency(code).ok_or_else(|| unreadable("currency"));
        let (from, to) = (currency(&opening.from)?, currency(&opening.to)?);
        let amount = |text: &str, currency: &CurrencyDef| {
            Amount::parse(text, currency.precision).map_err(|_| unreadable("amount"))
        };
        let address = |currency: &CurrencyDef, text: &str| {
            currency
                .network
                .parse_address(text)
                .map_err(|_| DeskError::AddressRefused)
        };
        let (deposit_address, deposit_tag) =
            crate::addresses::deposit_address(self.quoter.id(), from.network, reference);
        let lifetime = (opening.deposit_deadline_ms - opening.opened_at_ms).max(0);
        let (book, _) = actions::open(OpenOrder {
            id: reference.parse().map_err(|_| unreadable("reference"))?,
            owner: Owner::Desk(self.quoter.id().into()),
            from,
            to,
            rate_type: opening.rate_type,
            direction: Direction::From,
            from_amount: amount(&opening.from_amount, from)?,
            to_amount: amount(&opening.to_amount, to)?,
            min: amount(&opening.min, from)?,
            max: Some(amount(&opening.max, from)?),
            provider: self.quoter.id().into(),
            exchange: OpenedExchange {
                id: id.to_owned(),
                deposit_address,
                deposit_tag,
                access_token: None,
            },
            to_address: address(to, &opening.payout.address)?,
            to_tag: opening.payout.tag.clone(),
            refund_address: opening
                .refund
                .as_ref()
                .map(|r| address(from, &r.address))
                .transpose()?,
            refund_tag: opening.refund.as_ref().and_then(|r| r.tag.clone()),
            email: None,
            affiliate_code: None,
            fees: Vec::new(),
            page_url: None,
            create_token_hash: None,
            rules: LifecycleRules {
                lifetimes: OrderLifetimes {
                    fixed_ms: lifetime,
                    float_ms: lifetime,
                },
                poll_interval_ms: self.rules.poll_interval_ms,
                ..LifecycleRules::default()
            },
            now_ms: opening.opened_at_ms,
        });
        Ok(book)
    }

    /// Stores the next version of the book; `Moved` when another look stored one first.
    async fn save(&self, id: &str, book: &Order) -> Result<(), StepError> {
        if self
            .store
            .sandbox_update_exchange(id, book)
            .await
            .map_err(unavailable)?
        {
            Ok(())
        } else {
            Err(StepError::Moved)
        }
    }

    /// One change of the book, if one is due: a deposit seen or confirmed, a decision on it,
    /// the exchange priced, a payout or refund sent.
    async fn advance(&self, id: &str, mut book: Order, now_ms: i64) -> Result<Order, StepError> {
        for _ in 0..MAX_DECISIONS {
            let deposits = self
                .chain
                .deposits(&book.deposit_address, book.deposit_tag.as_deref(), now_ms)
                .await
                .map_err(chain_unavailable)?;
            let next = engine::next(&book, &deposits, &self.rules, now_ms);
            let updated = match next {
                Next::Idle => return Ok(book),
                // Only when the desk looks next: irrelevant to a desk that moves when asked.
                Next::Save(updated, None) => {
                    book.next_check_at_ms = updated.next_check_at_ms;
                    continue;
                }
                Next::Save(updated, Some(_)) => *updated,
                Next::Exchange { received } => {
                    let payout = self.price(&book, received, now_ms).await?;
                    engine::after_exchange(&book, payout, now_ms)
                }
                Next::Payout { key, amount } => {
                    match self.pay_out(id, &book, &key, amount, now_ms).await? {
                        Ok(tx) => engine::after_payout(&book, tx, now_ms),
                        Err(reason) => engine::after_failure(&book, reason, now_ms),
                    }
                }
                Next::Refund { key, amount } => {
                    match self.send_back(&book, &key, amount, now_ms).await? {
                        Ok(tx) => engine::after_refund(&book, tx, now_ms),
                        Err(reason) => engine::after_failure(&book, reason, now_ms),
                    }
                }
                Next::RefundExtra {
                    key,
                    deposit_tx,
                    amount,
                } => match self.send_back(&book, &key, amount, now_ms).await? {
                    Ok(tx) => engine::after_extra_refund(&book, &deposit_tx, tx, now_ms),
                    Err(reason) => {
                        engine::after_extra_refund_failure(&book, &deposit_tx, reason, now_ms)
                    }
                },
            };
            // The book is stored at the version it was read at plus one.
            let mut updated = updated;
            updated.version = book.version + 1;
            self.save(id, &updated).await?;
            return Ok(updated);
        }
        Ok(book)
    }

    /// Pays `amount` of the output to the book's address under `key`: the transaction, or why
    /// it could not be sent. (A fault may pause here, after the payout and before its record.)
    async fn pay_out(
        &self,
        id: &str,
        book: &Order,
        key: &str,
        amount: Amount,
        now_ms: i64,
    ) -> Result<Result<String, String>, StepError> {
        let sent = self
            .chain
            .transfer(
                key,
                book.to.code,
                book.to_address.as_str(),
                book.to_tag.as_deref(),
                &amount.to_string(),
                now_ms,
            )
            .await;
        if self.pause_after_payout && sent.is_ok() {
            tracing::warn!(
                exchange = id,
                "sandbox fault: paused after a payout, before recording it"
            );
            std::future::pending::<()>().await;
        }
        settled(sent)
    }

    /// Sends `amount` of the input back to the book's refund address under `key`.
    async fn send_back(
        &self,
        book: &Order,
        key: &str,
        amount: Amount,
        now_ms: i64,
    ) -> Result<Result<String, String>, StepError> {
        let Some(address) = &book.refund_address else {
            return Ok(Err("no refund address".into()));
        };
        let sent = self
            .chain
            .transfer(
                key,
                book.from.code,
                address.as_str(),
                book.refund_tag.as_deref(),
                &amount.to_string(),
                now_ms,
            )
            .await;
        settled(sent)
    }

    /// What the received amount pays out: a fixed exchange within tolerance keeps its agreed
    /// terms, in proportion to what arrived; anything else (float exchanges, and exchanges
    /// chosen in an emergency) takes the desk's current float rate.
    async fn price(
        &self,
        book: &Order,
        received: Amount,
        now_ms: i64,
    ) -> Result<Amount, StepError> {
        let (from, to) = (book.from, book.to);
        if book.rate_type == RateType::Fixed && book.emergency.is_none() {
            // Both at the input's scale, so their units are in proportion.
            let expected_in = book.from_amount.rescale(from.precision, Rounding::Down);
            let received = received.rescale(from.precision, Rounding::Down);
            let expected_out = book.to_amount.rescale(to.precision, Rounding::Down);
            return Ok(expected_out.mul_div(received.units(), expected_in.units(), Rounding::Down));
        }
        let request = QuoteRequest::without_wallet(
            from,
            to,
            received,
            Direction::From,
            RateType::Float,
            now_ms,
        );
        let quote = self
            .quoter
            .quote(&request)
            .await
            .map_err(|e| DeskError::Unavailable {
                detail: format!("cannot price the exchange now: {e}"),
            })?;
        // Where this desk's float deliveries land against the market price.
        let drift = i64::from(BPS) + i64::from(self.rules.behaviour.drift_bps(book.id.as_str()));
        Ok(quote.to_amount.mul_div(
            alloy_primitives::U256::from(drift.max(0).unsigned_abs()),
            alloy_primitives::U256::from(BPS),
            Rounding::Down,
        ))
    }

    /// Applies a change the customer asked for to the book, re-reading it when a look moved it
    /// meanwhile.
    async fn change(
        &self,
        exchange: &ExchangeRef<'_>,
        decide: impl Fn(&Order) -> Result<Option<Order>, DeskError>,
    ) -> Result<(), DeskError> {
        for _ in 0..3 {
            let book = self.book(exchange).await?;
            let Some(mut updated) = decide(&book)? else {
                return Ok(());
            };
            updated.version = book.version + 1;
            match self.save(exchange.id, &updated).await {
                Ok(()) => return Ok(()),
                Err(StepError::Moved) => continue,
                Err(StepError::Desk(error)) => return Err(error),
            }
        }
        Err(DeskError::Unavailable {
            detail: "the exchange keeps changing".into(),
        })
    }
}

#[async_trait]
impl Provider for SandboxDesk {
    fn info(&self) -> ProviderInfo {
        self.quoter.info()
    }

    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        self.quoter.catalog(now_ms).await
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        self.quoter.quote(request).await
    }
}

#[async_trait]
impl Desk for SandboxDesk {
    fn actions(&self) -> DeskActions {
        DeskActions {
            choose: true,
            refund: true,
        }
    }

    fn opens_upstream(&self) -> bool {
        false
    }

    /// Deposit addresses derive from the reference, so opening the same exchange twice answers
    /// the same; the book is recorded at the first look (see the module's doc).
    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError> {
        let (from, to) = (request.from, request.to);
        let (min, max) = self
            .quoter
            .limits_for(from, to, request.now_ms)
            .map_err(|_| DeskError::PairUnsupported)?;
        let opening = Opening {
            from: from.code.to_owned(),
            to: to.code.to_owned(),
            rate_type: request.rate_type,
            from_amount: request.from_amount.to_string(),
            to_amount: request.to_amount.to_string(),
            min: min.to_string(),
            max: max.to_string(),
            payout: request.payout.clone(),
            refund: request.refund.clone(),
            opened_at_ms: request.now_ms,
            deposit_deadline_ms: request.deposit_deadline_ms,
        };
        let (deposit_address, deposit_tag) =
            crate::addresses::deposit_address(self.quoter.id(), from.network, &request.reference);
        Ok(OpenedExchange {
            id: format!("{}-{}", self.quoter.id(), request.reference),
            deposit_address,
            deposit_tag,
            access_token: Some(serde_json::to_string(&opening).map_err(|e| {
                DeskError::Unavailable {
                    detail: format!("cannot write the opening terms: {e}"),
                }
            })?),
        })
    }

    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError> {
        let book = self.book(exchange).await?;
        let book = match self.advance(exchange.id, book, exchange.now_ms).await {
            Ok(book) => book,
            // Another look moved it first: report where that one left it.
            Err(StepError::Moved) => self.book(exchange).await?,
            Err(StepError::Desk(error)) => return Err(error),
        };
        reported(exchange.id, &book)
    }

    async fn choose(
        &self,
        exchange: &ExchangeRef<'_>,
        choice: Choice,
        refund_to: Option<&Destination>,
    ) -> Result<(), DeskError> {
        self.change(exchange, |book| {
            let refund = refund_to
                .map(|to| refund_destination(book, to))
                .transpose()?;
            actions::choose(book, choice, refund, exchange.now_ms)
                .map(|changed| changed.map(|(book, _)| book))
                .map_err(|e| DeskError::Refused {
                    detail: e.to_string(),
                })
        })
        .await
    }

    async fn refund(
        &self,
        exchange: &ExchangeRef<'_>,
        refund_to: &Destination,
    ) -> Result<(), DeskError> {
        self.change(exchange, |book| {
            if matches!(book.status, OrderStatus::Refunding | OrderStatus::Refunded) {
                return Ok(None);
            }
            let refund = refund_destination(book, refund_to)?;
            actions::request_refund(book, Some(refund), exchange.now_ms)
                .map(|(book, _)| Some(book))
                .map_err(|e| DeskError::Refused {
                    detail: e.to_string(),
                })
        })
        .await
    }
}

/// What the desk agreed to when it opened an exchange: enough to write its book.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Opening {
    from: String,
    to: String,
    rate_type: RateType,
    from_amount: String,
    to_amount: String,
    min: String,
    max: String,
    payout: Destination,
    refund: Option<Destination>,
    opened_at_ms: i64,
    deposit_deadline_ms: i64,
}

/// The book as the desk reports it.
fn reported(id: &str, book: &Order) -> Result<DeskExchange, DeskError> {
    let status = match book.status {
        OrderStatus::New | OrderStatus::AwaitingDeposit => DeskStatus::AwaitingDeposit,
        OrderStatus::Confirming => DeskStatus::Confirming,
        OrderStatus::Exchanging => DeskStatus::Exchanging,
        OrderStatus::Withdrawing => DeskStatus::Sending,
        OrderStatus::Completed => DeskStatus::Finished,
        OrderStatus::Expired => DeskStatus::Expired,
        OrderStatus::Emergency => DeskStatus::NeedsChoice(
            book.emergency
                .iter()
                .flat_map(|e| &e.reasons)
                .map(|reason| case(*reason))
                .collect(),
        ),
        OrderStatus::Refunding => DeskStatus::Refunding,
        OrderStatus::Refunded => DeskStatus::Refunded,
        OrderStatus::Failed => DeskStatus::Failed,
    };
    Ok(DeskExchange {
        id: id.to_owned(),
        status,
        deposit_address: book.deposit_address.clone(),
        deposit_tag: book.deposit_tag.clone(),
        expected_from: Some(book.from_amount),
        expected_to: Some(book.to_amount),
        deposits: book
            .deposits
            .iter()
            .map(|d| DeskDeposit {
                tx_id: d.tx_id.clone(),
                amount: Some(d.amount),
                confirmations: d.confirmations,
                required_confirmations: Some(d.required_confirmations),
                seen_at_ms: Some(d.seen_at_ms),
                refund_tx: d.refund_tx.clone(),
                refund_error: d.refund_error.clone(),
            })
            .collect(),
        payout_tx: book.payout_tx.clone(),
        payout_amount: book.payout_amount,
        refund_tx: book.refund_tx.clone(),
        refund_amount: book.refund_amount,
        deposit_deadline: Some(book.expires_at_ms / 1000),
        failure_reason: book.failure_reason.clone(),
        commission: None,
    })
}

fn case(reason: EmergencyReason) -> EmergencyCase {
    match reason {
        EmergencyReason::Expired => EmergencyCase::Late,
        EmergencyReason::Less => EmergencyCase::Less,
        EmergencyReason::More => EmergencyCase::More,
        EmergencyReason::Limit => EmergencyCase::OutOfLimits,
    }
}

/// A transfer's outcome: sent (`Ok(Ok(tx))`), refused for good (`Ok(Err(reason))`), or not
/// known yet (`Err`: the desk tries again at the next look).
fn settled(sent: Result<String, ChainError>) -> Result<Result<String, String>, StepError> {
    match sent {
        Ok(tx) => Ok(Ok(tx)),
        Err(ChainError::Rejected(reason)) => Ok(Err(reason)),
        Err(unavailable) => Err(chain_unavailable(unavailable).into()),
    }
}

/// A refund destination as the desk takes it: an address of the book's input network.
fn refund_destination(
    book: &Order,
    to: &Destination,
) -> Result<(Address, Option<String>), DeskError> {
    let address = book
        .from
        .network
        .parse_address(&to.address)
        .map_err(|_| DeskError::AddressRefused)?;
    Ok((address, to.tag.clone()))
}

fn unavailable(error: swapd_core::StoreError) -> DeskError {
    DeskError::Unavailable {
        detail: format!("the sandbox desk's book: {error}"),
    }
}

fn chain_unavailable(error: ChainError) -> DeskError {
    DeskError::Unavailable {
        detail: error.to_string(),
    }
}

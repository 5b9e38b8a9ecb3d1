//! The use cases called directly, on a temporary SQLite store and the sandbox market, without
//! HTTP: a broken rule fails here, where it lives, before any surface test.

use std::sync::Arc;

use swapd_app::observed::ObservedFigures;
use swapd_app::orders::RefundTo;
use swapd_app::routes::RoutesAsk;
use swapd_app::{Context, Error, IdempotencyKey};
use swapd_core::affiliates::Affiliate;
use swapd_core::clock::ManualClock;
use swapd_core::fees::FeePolicy;
use swapd_core::idempotency::{Begin, StoredResponse};
use swapd_core::market::currencies::currency;
use swapd_core::market::observed::RouteSort;
use swapd_core::market::routes::RedeemError;
use swapd_core::market::{Direction, ExecutionType, Market, RateType};
use swapd_core::offchain::order::{Choice, OrderStatus};
use swapd_core::onchain::access::AccessTokens;
use swapd_core::owner::Owner;
use swapd_core::rate_limit::Windows;
use swapd_core::secrets::MasterKey;
use swapd_core::store::{IdempotentFinish, KeyHold, OrderSearch, WindowDecision};
use swapd_core::webhooks::delivery::ReplaySelection;
use swapd_core::webhooks::url_policy::UrlPolicy;
use swapd_core::{Clock, Mode, Store, StoreError};
use swapd_types::orders::{OrderInput, OrderView};
use swapd_types::webhooks::WebhookInput;

const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const T0_MS: i64 = 1_767_225_600_000;

/// The ports the use cases run on: a fresh SQLite file, the sandbox desks and routers keeping
/// their books in it, a clock the test moves.
struct Harness {
    store: Arc<dyn Store>,
    market: Arc<dyn Market>,
    manual_clock: Arc<ManualClock>,
    clock: Arc<dyn Clock>,
    master_key: MasterKey,
    access_tokens: AccessTokens,
    fees: FeePolicy,
    courier: swapd_delivery::Sender,
    windows: StoreWindows,
    observed: ObservedFigures,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("swapd.db").display());
        let store = swapd_store::open(&url, &swapd_store::StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let world = swapd_sandbox::SandboxWorld {
            store: store.clone(),
            block_ms: swapd_sandbox::DEFAULT_BLOCK_MS,
            tolerance_bps: swapd_sandbox::DEFAULT_TOLERANCE_BPS,
            pause_after_payout: false,
            behaviours: swapd_sandbox::Behaviours::punctual(),
        };
        let venues = swapd_sandbox::providers(
            swapd_sandbox::price_feed::PriceFeed::new(0),
            &swapd_sandbox::Faults::default(),
            &world,
        );
        let market: Arc<dyn Market> = Arc::new(swapd_market::Aggregator::new(
            venues,
            swapd_market::MarketOptions::default(),
        ));
        let manual_clock = Arc::new(ManualClock::new(T0_MS));
        let master_key = MasterKey::generate();
        Harness {
            windows: StoreWindows(store.clone(), manual_clock.clone()),
            store,
            market,
            clock: manual_clock.clone(),
            manual_clock,
            access_tokens: AccessTokens::new(master_key.derive("access-tokens")),
            master_key,
            fees: FeePolicy::default(),
            courier: swapd_delivery::Sender::new(
                UrlPolicy::Sandbox,
                std::time::Duration::from_secs(2),
            ),
            observed: ObservedFigures::new(30 * 86_400_000, 20),
            _dir: dir,
        }
    }

    fn cx(&self) -> Context<'_> {
        Context {
            store: &self.store,
            market: &self.market,
            clock: &self.clock,
            master_key: &self.master_key,
            access_tokens: &self.access_tokens,
            mode: Mode::Sandbox,
            order_rules: Default::default(),
            public_url: "http://127.0.0.1:8080",
            courier: &self.courier,
            windows: &self.windows,
            replays_per_minute: 2,
            fees: &self.fees,
            partner: Default::default(),
            observed: &self.observed,
        }
    }

    /// What the store answers a retry of `key` with.
    async fn recorded(&self, key: &Key) -> Option<Begin> {
        self.store
            .idempotent_answer(&key.principal, &key.key, "fingerprint", self.clock.now_ms())
            .await
            .unwrap()
    }

    async fn orders_of(&self, owner: &Owner) -> usize {
        self.store
            .search_orders(&OrderSearch {
                owner: Some(owner.clone()),
                limit: 100,
                ..OrderSearch::default()
            })
            .await
            .unwrap()
            .len()
    }
}

/// The replay budgets, counted in the store as the database-backed limits count them.
struct StoreWindows(Arc<dyn Store>, Arc<ManualClock>);

#[async_trait::async_trait]
impl Windows for StoreWindows {
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        self.0
            .consume_window(key, window_ms, limit, self.1.now_ms())
            .await
    }
}

/// An Idempotency-Key the write takes at commit, as a request that did not claim it first.
struct Key {
    principal: String,
    key: String,
}

impl Key {
    fn of(owner: &Owner, key: &str) -> Self {
        Self {
            principal: owner.scope(),
            key: key.into(),
        }
    }
}

impl IdempotencyKey for Key {
    fn finish<'a>(&'a self, answer: &'a StoredResponse) -> IdempotentFinish<'a> {
        IdempotentFinish {
            principal: &self.principal,
            key: &self.key,
            hold: KeyHold::AtCommit {
                fingerprint: "fingerprint",
                now_ms: T0_MS,
            },
            response: answer,
        }
    }

    fn sealed(&self, master: &MasterKey, answer: &StoredResponse) -> StoredResponse {
        StoredResponse {
            status: answer.status,
            body: master.seal(&answer.body, &self.key).into_bytes(),
        }
    }

    fn stable_id(&self, prefix: &str) -> String {
        format!("{prefix}{:0>32}", self.key.len())
    }
}

fn alice() -> Owner {
    Owner::Key("key_alice".into())
}

fn bob() -> Owner {
    Owner::Key("key_bob".into())
}

fn btc_to_usdt(amount: &str) -> OrderInput {
    OrderInput {
        create_token: None,
        from_ccy: Some("BTC".into()),
        to_ccy: Some("USDTTRC".into()),
        amount: Some(amount.into()),
        direction: None,
        rate_type: None,
        to_address: TRON_ADDRESS.into(),
        tag: None,
        refund_address: None,
        refund_tag: None,
        affiliate_code: None,
        email: None,
    }
}

fn view(body: &[u8]) -> OrderView {
    let envelope: serde_json::Value = serde_json::from_slice(body).unwrap();
    serde_json::from_value(envelope["data"].clone()).unwrap()
}

#[tokio::test]
async fn an_order_opens_on_the_best_offer_with_its_answer_recorded_under_the_key() {
    let h = Harness::new().await;
    let key = Key::of(&alice(), "create-1");
    let (order, answer) = swapd_app::orders::create(h.cx(), &alice(), btc_to_usdt("0.05"), &key)
        .await
        .unwrap();
    assert_eq!(order.status, OrderStatus::AwaitingDeposit);
    assert_eq!((order.from.code, order.to.code), ("BTC", "USDTTRC"));
    assert_eq!(order.from_amount.to_string(), "0.05");
    assert!(order.to_amount > order.from_amount, "{}", order.to_amount);
    assert_eq!(answer.status, 201);
    assert!(answer.recorded);
    assert_eq!(view(&answer.body).order_id, order.id.to_string());

    // The order, its answer under the key: written together.
    let stored = h.store.order(&order.id, &alice()).await.unwrap().unwrap();
    assert_eq!(stored.to_amount, order.to_amount);
    match h.recorded(&key).await {
        Some(Begin::Replay(recorded)) => assert_eq!(recorded.body, answer.body),
        other => panic!("the answer was not recorded: {other:?}"),
    }
}

#[tokio::test]
async fn bad_input_is_refused_with_its_field_and_changes_nothing() {
    let h = Harness::new().await;
    let cases: [(OrderInput, &str); 4] = [
        (
            OrderInput {
                to_address: "not-an-address".into(),
                ..btc_to_usdt("0.05")
            },
            "address_invalid",
        ),
        (btc_to_usdt("0.05e1"), "amount_invalid"),
        (
            OrderInput {
                to_ccy: Some("NOPE".into()),
                ..btc_to_usdt("0.05")
            },
            "pair_unsupported",
        ),
        (
            OrderInput {
                refund_tag: Some("7".into()),
                ..btc_to_usdt("0.05")
            },
            "validation_failed",
        ),
    ];
    for (n, (input, code)) in cases.into_iter().enumerate() {
        let key = Key::of(&alice(), &format!("bad-{n}"));
        let error = swapd_app::orders::create(h.cx(), &alice(), input, &key)
            .await
            .unwrap_err();
        assert_eq!(error.code().as_str(), code, "case {n}: {error}");
        assert!(h.recorded(&key).await.is_none(), "case {n} recorded");
    }
    assert_eq!(h.orders_of(&alice()).await, 0);
}

#[tokio::test]
async fn another_owners_order_and_a_malformed_id_are_the_same_not_found() {
    let h = Harness::new().await;
    let (order, _) = swapd_app::orders::create(
        h.cx(),
        &alice(),
        btc_to_usdt("0.05"),
        &Key::of(&alice(), "k"),
    )
    .await
    .unwrap();
    let id = order.id.to_string();
    assert!(
        swapd_app::orders::owned(h.cx(), &alice(), &id)
            .await
            .is_ok()
    );
    for (owner, id) in [(bob(), id.as_str()), (alice(), "ord_../../etc")] {
        let error = swapd_app::orders::owned(h.cx(), &owner, id)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::OrderNotFound), "{error}");
    }
    // Bob cannot change it either, and nothing about it changes.
    let error = swapd_app::orders::attach_email(h.cx(), &bob(), &id, "bob@example.com", None)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::OrderNotFound), "{error}");
    let unchanged = h.store.order(&order.id, &alice()).await.unwrap().unwrap();
    assert_eq!(unchanged.version, order.version);
}

#[tokio::test]
async fn a_resolved_route_opens_exactly_one_order_on_its_locked_terms() {
    let h = Harness::new().await;
    let ask = || RoutesAsk {
        from: currency("BTC").unwrap(),
        to: currency("USDTTRC").unwrap(),
        amount: swapd_core::amount::Amount::parse("0.05", 8).unwrap(),
        direction: Direction::From,
        rate_type: RateType::Fixed,
        provider: None,
        wallet: None,
        recipient: None,
        affiliate_code: None,
        sort: RouteSort::Best,
    };
    let cards = swapd_app::routes::discover(h.cx(), &alice(), ask())
        .await
        .unwrap();
    let card = cards
        .iter()
        .find(|c| c.is_available && c.execution_type == ExecutionType::Offchain)
        .expect("an offchain route");
    let route_id = card.route_quote_id.clone().unwrap();

    // Another owner cannot resolve it.
    let error = swapd_app::routes::resolve(h.cx(), &bob(), &route_id, &Key::of(&bob(), "r"))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::RouteNotFound), "{error}");

    let resolved = swapd_app::routes::resolve(h.cx(), &alice(), &route_id, &Key::of(&alice(), "r"))
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&resolved.body).unwrap();
    let token = body["data"]["createToken"].as_str().unwrap().to_owned();
    let with_token = || OrderInput {
        create_token: Some(token.clone()),
        from_ccy: None,
        to_ccy: None,
        amount: None,
        refund_address: Some(BTC_ADDRESS.into()),
        ..btc_to_usdt("0")
    };

    // Only its owner redeems it...
    let error = swapd_app::orders::create(h.cx(), &bob(), with_token(), &Key::of(&bob(), "o"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::CreateToken(RedeemError::NotFound)),
        "{error}"
    );
    // ... on the card's terms ...
    let (order, _) =
        swapd_app::orders::create(h.cx(), &alice(), with_token(), &Key::of(&alice(), "o1"))
            .await
            .unwrap();
    assert_eq!(order.rate_type, RateType::Fixed);
    assert_eq!(order.provider, card.execution_provider);
    assert_eq!(
        Some(order.to_amount.to_string()),
        card.expected_output_amount
    );
    // ... once.
    let error = swapd_app::orders::create(h.cx(), &alice(), with_token(), &Key::of(&alice(), "o2"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::CreateToken(RedeemError::Used)),
        "{error}"
    );
    assert_eq!(h.orders_of(&alice()).await, 1);
    assert_eq!(h.orders_of(&bob()).await, 0);
}

#[tokio::test]
async fn decisions_are_refused_where_the_order_does_not_allow_them() {
    let h = Harness::new().await;
    let (order, _) = swapd_app::orders::create(
        h.cx(),
        &alice(),
        btc_to_usdt("0.05"),
        &Key::of(&alice(), "k"),
    )
    .await
    .unwrap();
    let id = order.id.to_string();
    let refund_to = |address: Option<&str>, tag: Option<&str>| RefundTo {
        address: address.map(Into::into),
        tag: tag.map(Into::into),
    };
    // Not in an emergency: nothing to answer.
    let error = swapd_app::orders::answer_emergency(
        h.cx(),
        &alice(),
        &id,
        Choice::Refund,
        refund_to(Some(BTC_ADDRESS), None),
        None,
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::Choice(_)), "{error}");
    // A refund address on the wrong network, or a tag alone, is refused naming its field.
    for (to, code, field) in [
        (
            refund_to(Some(TRON_ADDRESS), None),
            "address_invalid",
            "refundAddress",
        ),
        (refund_to(None, Some("7")), "validation_failed", "refundTag"),
    ] {
        let error = swapd_app::orders::refund(h.cx(), &alice(), &id, to, None)
            .await
            .unwrap_err();
        assert_eq!(error.code().as_str(), code, "{error}");
        assert!(error.to_string().starts_with(field), "{error}");
    }
    let unchanged = h.store.order(&order.id, &alice()).await.unwrap().unwrap();
    assert_eq!(unchanged.version, order.version);

    // An e-mail address is checked, attached once, and attaching it again changes nothing.
    let error = swapd_app::orders::attach_email(h.cx(), &alice(), &id, "not-mail", None)
        .await
        .unwrap_err();
    assert_eq!(error.code().as_str(), "validation_failed");
    swapd_app::orders::attach_email(h.cx(), &alice(), &id, "ann@example.com", None)
        .await
        .unwrap();
    let attached = h.store.order(&order.id, &alice()).await.unwrap().unwrap();
    assert_eq!(attached.version, order.version + 1);
    swapd_app::orders::attach_email(h.cx(), &alice(), &id, "ann@example.com", None)
        .await
        .unwrap();
    let again = h.store.order(&order.id, &alice()).await.unwrap().unwrap();
    assert_eq!(again.version, attached.version);
}

#[tokio::test]
async fn quote_fees_take_an_active_affiliates_share_and_refuse_an_unknown_code() {
    let h = Harness::new().await;
    h.store
        .insert_affiliate(
            &Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", T0_MS).unwrap(),
        )
        .await
        .unwrap();
    let fees = h.cx().quote_fees(Some("wallet-app")).await.unwrap();
    assert_eq!(fees.affiliate_share_bps, 2_500);
    assert_eq!(
        h.cx().quote_fees(None).await.unwrap().affiliate_share_bps,
        0
    );
    let error = h.cx().quote_fees(Some("nobody")).await.unwrap_err();
    assert!(matches!(error, Error::AffiliateUnknown(_)), "{error}");
    let error = h.cx().quote_fees(Some("no spaces")).await.unwrap_err();
    assert_eq!(error.field_problem().map(|(f, _)| f), Some("affiliateCode"));
}

#[tokio::test]
async fn a_subscription_replays_within_its_budget_a_minute() {
    let h = Harness::new().await;
    let key = Key::of(&alice(), "hook");
    let created = swapd_app::webhooks::create(
        h.cx(),
        &alice(),
        WebhookInput {
            url: "http://127.0.0.1:9/hook".into(),
            events: vec!["order.created".into()],
            description: None,
        },
        &key,
    )
    .await
    .unwrap();
    assert_eq!(created.status, 201);
    // The answer carries the signing secret: recorded sealed, answered in clear.
    let body: serde_json::Value = serde_json::from_slice(&created.body).unwrap();
    let secret = body["data"]["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    match h.recorded(&key).await {
        Some(Begin::Replay(recorded)) => {
            assert!(!String::from_utf8_lossy(&recorded.body).contains(secret));
        }
        other => panic!("the answer was not recorded: {other:?}"),
    }
    let id = body["data"]["webhookId"].as_str().unwrap().to_owned();
    assert!(matches!(
        swapd_app::webhooks::owned(h.cx(), &bob(), &id).await,
        Err(Error::WebhookNotFound)
    ));

    let window = ReplaySelection::Window {
        since_ms: T0_MS - 3_600_000,
        until_ms: T0_MS,
        limit: 10,
    };
    let owner = alice();
    let replay = || swapd_app::webhooks::replay(h.cx(), &owner, &id, &window, None);
    assert_eq!(replay().await.unwrap().status, 202);
    assert_eq!(replay().await.unwrap().status, 202);
    let error = replay().await.unwrap_err();
    assert_eq!(error.code().as_str(), "rate_limit_exceeded", "{error}");
    h.manual_clock.advance_ms(60_000);
    assert_eq!(replay().await.unwrap().status, 202);
}

#[tokio::test]
async fn an_onchain_plan_acts_for_the_proven_wallet_and_opens_only_with_its_token() {
    const WALLET: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
    const OTHER: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
    let h = Harness::new().await;
    let cards = swapd_app::routes::discover(
        h.cx(),
        &alice(),
        RoutesAsk {
            from: currency("ETH").unwrap(),
            to: currency("USDCETH").unwrap(),
            amount: swapd_core::amount::Amount::parse("0.5", 18).unwrap(),
            direction: Direction::From,
            rate_type: RateType::Float,
            provider: None,
            wallet: Some(swapd_core::market::provider::Wallet {
                namespace: "eip155",
                address: Some(WALLET.into()),
            }),
            recipient: None,
            affiliate_code: None,
            sort: RouteSort::Best,
        },
    )
    .await
    .unwrap();
    let card = cards
        .iter()
        .find(|c| c.is_available && c.execution_type == ExecutionType::Onchain)
        .expect("an onchain route");
    let input = |wallet: &str| swapd_types::onchain::OnchainResolveInput {
        route_quote_id: card.route_quote_id.clone().unwrap(),
        wallet_address: wallet.into(),
        wallet_chain_namespace: None,
        slippage_bps: None,
    };
    let signed_in = |wallet: &str| swapd_app::onchain::Principal {
        owner: alice(),
        wallet: Some(wallet.into()),
    };

    // A wallet signed in on the x402 API resolves plans for itself only.
    let error = swapd_app::onchain::resolve(
        h.cx(),
        &signed_in(WALLET),
        &input(OTHER),
        &Key::of(&alice(), "p0"),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, Error::WalletMismatch(_)), "{error}");

    let answer = swapd_app::onchain::resolve(
        h.cx(),
        &signed_in(WALLET),
        &input(WALLET),
        &Key::of(&alice(), "p1"),
    )
    .await
    .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    let plan: swapd_types::onchain::ExecutionPlanView =
        serde_json::from_value(body["data"].clone()).unwrap();
    assert_eq!(plan.wallet_address, WALLET);
    assert_eq!(plan.from_amount, "0.5");
    assert!(!plan.steps.is_empty());

    let token = &plan.execution_access_token;
    let id = &plan.execution_plan_id;
    let opened = swapd_app::onchain::authorized_plan(h.cx(), &alice(), id, token)
        .await
        .unwrap();
    assert_eq!(opened.id.to_string(), *id);
    let error = swapd_app::onchain::authorized_plan(h.cx(), &alice(), id, "xat_forged")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::ExecutionTokenInvalid(_)), "{error}");
    let error = swapd_app::onchain::authorized_plan(h.cx(), &bob(), id, token)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::ExecutionNotFound), "{error}");
}

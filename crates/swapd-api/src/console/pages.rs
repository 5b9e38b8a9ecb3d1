//! The console's pages: API keys, orders, webhooks and their deliveries, providers, x402
//! payments. Reads go to the store; every change is the API's or the CLI's use case.

use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;
use strum::VariantArray;
use swapd_core::api_keys::{ApiKeyPolicy, RateLimits};
use swapd_core::offchain::order::OrderStatus;
use swapd_core::owner::Owner;
use swapd_core::store::OrderSearch;
use swapd_core::webhooks::delivery::ReplaySelection;
use swapd_types::Permission;

use super::{CsrfOnly, Operator, forged, layout, page_headers, refused};
use crate::{ApiError, AppState};
use swapd_core::ids::{OrderId, WebhookId};
use swapd_core::notify::Email;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/console/keys", get(keys).post(create_key))
        .route("/console/keys/{id}/revoke", post(revoke_key))
        .route("/console/orders", get(orders))
        .route("/console/orders/{id}", get(order))
        .route("/console/webhooks", get(webhooks))
        .route("/console/webhooks/{id}", get(deliveries))
        .route("/console/webhooks/{id}/replay", post(replay))
        .route("/console/providers", get(providers))
        .route("/console/payments", get(payments))
}

pub(super) fn page(title: &str, operator: &Operator, main: Markup) -> Response {
    page_headers(Html(layout(title, Some(operator), main).into_string()).into_response())
}

pub(super) fn failed(error: impl std::fmt::Display) -> Response {
    tracing::error!(%error, "console page failed");
    refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "The database could not be read; retry.",
    )
}

fn when(ms: i64) -> String {
    crate::html::utc(ms.div_euclid(1000))
}

// --- API keys -----------------------------------------------------------------------------

/// The keys; right after a key was created, its secret, once (carried by the redirect).
async fn keys(
    State(state): State<AppState>,
    operator: Operator,
    parts: axum::http::request::Parts,
) -> Response {
    let created = super::take_flash(&state, &operator, &parts)
        .and_then(|flash| serde_json::from_str::<(String, String)>(&flash).ok());
    let created = created
        .as_ref()
        .map(|(id, secret)| (id.as_str(), secret.as_str()));
    let mut response = keys_page(&state, &operator, created, None).await;
    super::clear_flash(&state, &mut response);
    response
}

async fn keys_page(
    state: &AppState,
    operator: &Operator,
    created: Option<(&str, &str)>,
    problem: Option<&str>,
) -> Response {
    let all = match state.store.list_api_keys().await {
        Ok(all) => all,
        Err(error) => return failed(error),
    };
    let defaults = RateLimits::default();
    page(
        "API keys",
        operator,
        html! {
            h1 { "API keys" }
            @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
            @if let Some((id, secret)) = created {
                section.secret #created {
                    p { "Created " strong { (all.iter().find(|key| key.id == id).map(|key| key.policy.name()).unwrap_or_default()) }
                        ". The secret is shown only now: store it safely." }
                    p { "apiKey: " code #new-key { (id) } }
                    p { "apiSecret: " code #new-secret { (secret) } }
                }
            }
            table #keys {
                tr { th { "Key" } th { "Name" } th { "Status" } th { "Permissions" } th { "Markup (bps)" } th { "Created" } th {} }
                @for key in &all {
                    tr data-key=(key.id) {
                        td { code { (key.id) } }
                        td { (key.policy.name()) }
                        td.status { (key.status) }
                        td { (key.policy.permissions().iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")) }
                        td.markup { (key.policy.markup_bps())
                            @if let Some(recipient) = key.policy.markup().recipient { " to " code { (recipient) } } }
                        td { (when(key.created_at_ms)) }
                        td { @if key.is_active() {
                            form method="post" action=(format!("/console/keys/{}/revoke", key.id)) {
                                input type="hidden" name="csrf" value=(operator.csrf);
                                button type="submit" { "Revoke" }
                            }
                        } }
                    }
                }
            }
            section {
                h2 { "Create a key" }
                form #create-key method="post" action="/console/keys" {
                    input type="hidden" name="csrf" value=(operator.csrf);
                    label { "Name " input name="name" required maxlength="64"; }
                    fieldset { legend { "Permissions" }
                        @for permission in Permission::VARIANTS {
                            label { input type="checkbox" name="permission" value=(permission.as_str()); " " (permission.as_str()) }
                        }
                    }
                    label { "Allowed IP ranges (comma-separated CIDR; empty: any) " input name="ipAllow"; }
                    label { "Allowed browser origins (comma-separated; empty: any) " input name="origins"; }
                    label { "Requests per minute " input name="perMinute" type="number" min="1" value=(defaults.per_minute); }
                    label { "Requests per hour " input name="perHour" type="number" min="1" value=(defaults.per_hour); }
                    label { "Weight per hour " input name="weightPerHour" type="number" min="1" value=(defaults.weight_per_hour); }
                    label { "Partner markup, bps of the output (at most " (state.fee_rules.max_markup_bps) ") "
                        input name="markupBps" type="number" min="0" value="0"; }
                    label { "Markup recipient on chain (an EVM address; empty: 0x and Relay leave the markup out) "
                        input name="markupRecipient" maxlength="42"; }
                    button type="submit" { "Create" }
                }
            }
        },
    )
}

/// The create form, as posted: `permission` repeats, one per box checked; empty numbers take
/// their defaults.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewKeyForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default, rename = "permission")]
    permissions: Vec<String>,
    #[serde(default)]
    ip_allow: String,
    #[serde(default)]
    origins: String,
    #[serde(default)]
    per_minute: String,
    #[serde(default)]
    per_hour: String,
    #[serde(default)]
    weight_per_hour: String,
    #[serde(default)]
    markup_bps: String,
    #[serde(default)]
    markup_recipient: String,
}

impl NewKeyForm {
    /// The policy the form asks for, or what is wrong with it.
    fn policy(&self) -> Result<ApiKeyPolicy, String> {
        let permissions = self
            .permissions
            .iter()
            .map(|p| p.trim().parse::<Permission>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| "unknown permission".to_owned())?;
        let defaults = RateLimits::default();
        let limits = RateLimits {
            per_minute: whole("perMinute", &self.per_minute, defaults.per_minute)?,
            per_hour: whole("perHour", &self.per_hour, defaults.per_hour)?,
            weight_per_hour: whole(
                "weightPerHour",
                &self.weight_per_hour,
                defaults.weight_per_hour,
            )?,
        };
        let markup_bps = whole("markupBps", &self.markup_bps, 0)?;
        let policy = ApiKeyPolicy::new(
            self.name.trim(),
            permissions,
            &comma_list(&self.ip_allow),
            &comma_list(&self.origins),
            limits,
        )
        .map_err(|e| e.to_string())?
        .with_markup_bps(markup_bps);
        match self.markup_recipient.trim() {
            "" => Ok(policy),
            address => policy
                .with_markup_recipient(address)
                .map_err(|e| e.to_string()),
        }
    }
}

/// The whole number in the field `name`, `default` when it is empty.
fn whole(name: &str, text: &str, default: u32) -> Result<u32, String> {
    match text.trim() {
        "" => Ok(default),
        text => text
            .parse()
            .map_err(|_| format!("{name} must be a whole number")),
    }
}

/// The items of a comma-separated field.
fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

async fn create_key(
    State(state): State<AppState>,
    operator: Operator,
    axum_extra::extract::Form(form): axum_extra::extract::Form<NewKeyForm>,
) -> Response {
    if !operator.sent(form.csrf.trim()) {
        return forged();
    }
    let policy = form.policy();
    let policy = match policy {
        Ok(policy) => policy,
        Err(problem) => {
            let mut response = keys_page(&state, &operator, None, Some(&problem)).await;
            *response.status_mut() = StatusCode::BAD_REQUEST;
            return response;
        }
    };
    let now = state.clock.now_ms();
    let cap = state.fee_rules.max_markup_bps;
    match crate::keys::issue(state.store.as_ref(), &state.master_key, policy, cap, now).await {
        Ok(issued) => {
            tracing::info!(key = %issued.key.id, "API key created in the console");
            // Post, redirect, get: a reload of the page that shows the secret creates nothing.
            let flash = serde_json::to_string(&(&issued.key.id, &issued.secret))
                .expect("strings serialize");
            super::redirect_with_flash(&state, &operator, "/console/keys", &flash)
        }
        Err(refused @ crate::keys::IssueError::MarkupAboveCap { .. }) => {
            let mut response = keys_page(&state, &operator, None, Some(&refused.to_string())).await;
            *response.status_mut() = StatusCode::BAD_REQUEST;
            response
        }
        Err(error) => failed(error),
    }
}

async fn revoke_key(
    State(state): State<AppState>,
    operator: Operator,
    Path(id): Path<String>,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    let now = state.clock.now_ms();
    match crate::keys::revoke(state.store.as_ref(), state.limits.sharing(), &id, now).await {
        Ok(Some(key)) => {
            tracing::info!(key = %key.id, "API key revoked in the console");
            page_headers(axum::response::Redirect::to("/console/keys").into_response())
        }
        Ok(None) => refused(StatusCode::NOT_FOUND, "No such API key."),
        Err(error) => refused(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    }
}

// --- Orders -------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OrderQuery {
    #[serde(default)]
    id: String,
    #[serde(default)]
    status: String,
    /// An API key id (`key_…`) or a wallet address.
    #[serde(default)]
    owner: String,
    /// `YYYY-MM-DD` (UTC).
    #[serde(default)]
    from: String,
    #[serde(default)]
    until: String,
}

pub(super) fn day_ms(text: &str) -> Result<Option<i64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let refuse = || format!("`{text}` is not a date (YYYY-MM-DD)");
    let mut parts = text.splitn(3, '-').map(str::parse::<u16>);
    let (Some(Ok(year)), Some(Ok(month)), Some(Ok(day))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(refuse());
    };
    let month = u8::try_from(month)
        .ok()
        .and_then(|m| time::Month::try_from(m).ok());
    let day = u8::try_from(day).ok();
    let (Some(month), Some(day)) = (month, day) else {
        return Err(refuse());
    };
    time::Date::from_calendar_date(i32::from(year), month, day)
        .map(|date| Some(date.midnight().assume_utc().unix_timestamp() * 1000))
        .map_err(|_| refuse())
}

async fn orders(
    State(state): State<AppState>,
    operator: Operator,
    Query(query): Query<OrderQuery>,
) -> Response {
    let status = match query.status.as_str() {
        "" => Ok(None),
        text => text
            .parse::<OrderStatus>()
            .map(Some)
            .map_err(|_| format!("unknown status `{text}`")),
    };
    let owner = match query.owner.trim() {
        "" => None,
        key if key.starts_with("key_") => Some(Owner::Key(key.into())),
        wallet => Some(Owner::Wallet(wallet.into())),
    };
    let search = (|| {
        Ok::<_, String>(OrderSearch {
            id: Some(query.id.trim().to_owned()).filter(|id| !id.is_empty()),
            status: status?,
            owner,
            created_from_ms: day_ms(query.from.trim())?,
            created_until_ms: day_ms(query.until.trim())?.map(|ms| ms + 86_400_000),
            limit: 100,
        })
    })();
    let (found, problem) = match search {
        Ok(search) => match state.store.search_orders(&search).await {
            Ok(found) => (found, None),
            Err(error) => return failed(error),
        },
        Err(problem) => (Vec::new(), Some(problem)),
    };
    page(
        "Orders",
        &operator,
        html! {
            h1 { "Orders" }
            form #search method="get" action="/console/orders" {
                label { "Order id " input name="id" value=(query.id); }
                label { "Status " select name="status" {
                    option value="" { "any" }
                    @for status in OrderStatus::VARIANTS {
                        option value=(status.as_str()) selected[query.status == status.as_str()] { (status.as_str()) }
                    }
                } }
                label { "API key or wallet " input name="owner" value=(query.owner); }
                label { "Created from (UTC) " input type="date" name="from" value=(query.from); }
                label { "until " input type="date" name="until" value=(query.until); }
                button type="submit" { "Search" }
            }
            @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
            p.muted { (found.len()) " found (at most 100, newest first)" }
            table #orders {
                tr { th { "Order" } th { "Status" } th { "Pair" } th { "Amount" } th { "Owner" } th { "Created" } }
                @for order in &found {
                    tr {
                        td { a href=(format!("/console/orders/{}", order.id)) { code { (order.id) } } }
                        td { (order.status.as_str()) }
                        td { (order.from.code) " → " (order.to.code) }
                        td { (order.from_amount) }
                        td { code { (order.owner) } }
                        td { (when(order.created_at_ms)) }
                    }
                }
            }
        },
    )
}

async fn order(
    State(state): State<AppState>,
    operator: Operator,
    Path(id): Path<String>,
) -> Response {
    let Some(id) = OrderId::parse(&id) else {
        return refused(StatusCode::NOT_FOUND, "No such order.");
    };
    let order = match state.store.order_for_page(&id).await {
        Ok(Some(order)) => order,
        Ok(None) => return refused(StatusCode::NOT_FOUND, "No such order."),
        Err(error) => return failed(error),
    };
    let events = match state.store.order_events(&id).await {
        Ok(events) => events,
        Err(error) => return failed(error),
    };
    let mails = match state.store.order_mails(&id).await {
        Ok(mails) => mails,
        Err(error) => return failed(error),
    };
    // Its webhook deliveries: those of its owner's subscriptions for its events.
    let mut deliveries = Vec::new();
    match state.store.subscriptions(&order.owner).await {
        Ok(subscriptions) => {
            for subscription in subscriptions {
                match state
                    .store
                    .deliveries(&subscription.id, &order.owner, 100)
                    .await
                {
                    Ok(found) => deliveries.extend(
                        found
                            .into_iter()
                            .filter(|d| events.iter().any(|e| e.id.as_str() == d.event_id)),
                    ),
                    Err(error) => return failed(error),
                }
            }
        }
        Err(error) => return failed(error),
    }
    let view = order.view();
    page(
        &format!("Order {id}"),
        &operator,
        html! {
            h1 { "Order " code { (order.id) } }
            section {
                p { "Status: " strong #order-status { (view.status) } " · " (order.from_amount) " " (order.from.code) " → " (view.to.amount) " " (order.to.code) " · " (order.provider) }
                p { "Owner: " code { (order.owner) } " · created " (when(order.created_at_ms)) }
                p { "Deposit address: " code { (order.deposit_address) } }
                @if let Some(link) = &order.page_url { p { a href=(link) { "Order page" } } }
            }
            h2 { "Deposits" }
            table { tr { th { "Transaction" } th { "Amount" } th { "Confirmations" } th { "Seen" } }
                @for deposit in &order.deposits {
                    tr { td { code { (deposit.tx_id) } } td { (deposit.amount) } td { (deposit.confirmations) " / " (deposit.required_confirmations) } td { (when(deposit.seen_at_ms)) } }
                } }
            h2 { "Events" }
            table #events { tr { th { "#" } th { "Event" } th { "Status" } th { "At" } th { "E-mail" } }
                @for event in &events {
                    tr { td { (event.sequence) } td { code { (event.id) } " " (event.event_type.as_str()) }
                        td { (event.data["status"].as_str().unwrap_or_default()) } td { (when(event.created_at_ms)) }
                        td { (event.notify_email.as_ref().map(Email::as_str).unwrap_or_default()) " "
                            (mail_state(mails.iter().find(|mail| mail.event_id == event.id.as_str()))) } }
                } }
            h2 { "Webhook deliveries" }
            (delivery_table(&deliveries, None))
        },
    )
}

// --- Webhooks -----------------------------------------------------------------------------

async fn webhooks(State(state): State<AppState>, operator: Operator) -> Response {
    let keys = match state.store.list_api_keys().await {
        Ok(keys) => keys,
        Err(error) => return failed(error),
    };
    let mut all = Vec::new();
    for key in &keys {
        match state.store.subscriptions(&Owner::Key(key.id.clone())).await {
            Ok(found) => all.extend(found),
            Err(error) => return failed(error),
        }
    }
    page(
        "Webhooks",
        &operator,
        html! {
            h1 { "Webhook subscriptions" }
            table #subscriptions {
                tr { th { "Subscription" } th { "Owner" } th { "URL" } th { "Events" } th { "Status" } }
                @for subscription in &all {
                    tr {
                        td { a href=(format!("/console/webhooks/{}?owner={}", subscription.id, subscription.owner)) { code { (subscription.id) } } }
                        td { code { (subscription.owner) } }
                        td { (subscription.url) }
                        td { (subscription.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")) }
                        td { (format!("{:?}", subscription.status).to_lowercase())
                            @if let Some(reason) = &subscription.disabled_reason { " (" (reason) ")" } }
                    }
                }
            }
        },
    )
}

#[derive(Deserialize)]
struct OwnerQuery {
    #[serde(default)]
    owner: String,
}

async fn deliveries(
    State(state): State<AppState>,
    operator: Operator,
    Path(id): Path<String>,
    Query(query): Query<OwnerQuery>,
) -> Response {
    deliveries_page(&state, &operator, &id, &query.owner, None).await
}

async fn deliveries_page(
    state: &AppState,
    operator: &Operator,
    id: &str,
    owner: &str,
    notice: Option<&str>,
) -> Response {
    let (Some(webhook), Ok(owner)) = (WebhookId::parse(id), owner.parse::<Owner>()) else {
        return refused(StatusCode::NOT_FOUND, "No such subscription.");
    };
    let found = match state.store.deliveries(&webhook, &owner, 100).await {
        Ok(found) => found,
        Err(error) => return failed(error),
    };
    page(
        "Deliveries",
        operator,
        html! {
            h1 { "Deliveries of " code { (id) } }
            @if let Some(notice) = notice { p.secret #notice role="status" { (notice) } }
            (delivery_table(&found, Some((operator, id, &owner.scope()))))
        },
    )
}

/// Deliveries with their attempts; with `replay`, a replay button per delivery.
fn delivery_table(
    deliveries: &[swapd_core::webhooks::delivery::Delivery],
    replay: Option<(&Operator, &str, &str)>,
) -> Markup {
    html! {
        table #deliveries {
            tr { th { "Delivery" } th { "Event" } th { "Kind" } th { "Status" } th { "Attempts" } th { "Last answer" } th { "Created" } th {} }
            @for delivery in deliveries {
                tr {
                    td { code { (delivery.id) } }
                    td { code { (delivery.event_id) } }
                    td { (delivery.kind) }
                    td { (format!("{:?}", delivery.status).to_lowercase()) }
                    td { (delivery.attempts) }
                    td { @if let Some(code) = delivery.last_status_code { (code) } " " (delivery.last_error.clone().unwrap_or_default()) }
                    td { (when(delivery.created_at_ms)) }
                    td { @if let Some((operator, id, owner)) = replay {
                        form method="post" action=(format!("/console/webhooks/{id}/replay")) {
                            input type="hidden" name="csrf" value=(operator.csrf);
                            input type="hidden" name="owner" value=(owner);
                            input type="hidden" name="eventId" value=(delivery.event_id);
                            button type="submit" { "Replay" }
                        }
                    } }
                }
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReplayForm {
    #[serde(default)]
    csrf: String,
    owner: String,
    event_id: String,
}

/// Replays one event to the subscription: the API's replay use case, limits included.
async fn replay(
    State(state): State<AppState>,
    operator: Operator,
    Path(id): Path<String>,
    Form(form): Form<ReplayForm>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    let selection = ReplaySelection::Event(form.event_id.clone());
    let Ok(owner) = form.owner.parse::<Owner>() else {
        return refused(StatusCode::BAD_REQUEST, "unknown owner");
    };
    let replayed = swapd_app::webhooks::replay(state.app(), &owner, &id, &selection, None).await;
    let notice = match replayed.map_err(ApiError::from) {
        Ok(_) => format!("Replay of {} queued.", form.event_id),
        Err(error) => return refused(error.status(), error.message()),
    };
    tracing::info!(subscription = %id, event = %form.event_id, "delivery replayed in the console");
    deliveries_page(&state, &operator, &id, &form.owner, Some(&notice)).await
}

// --- Providers and payments ------------------------------------------------------------------

/// Each provider's availability and scorecard (docs/market.md, "Scorecards"): its figures
/// over the window, a chart of each day's success rate and median time, and the outcomes behind
/// them (the newest 50, linked to their orders).
async fn providers(State(state): State<AppState>, operator: Operator) -> Response {
    let now_ms = state.clock.now_ms();
    let health = state.market.health(now_ms);
    let cards = swapd_app::scorecards::scorecards(state.app(), now_ms);
    let observed = state.observed.current();
    let mut recent = Vec::new();
    for card in &cards.providers {
        match state.store.recent_outcomes(&card.provider, 50).await {
            Ok(outcomes) => recent.push(outcomes),
            Err(error) => return failed(error),
        }
    }
    page(
        "Providers",
        &operator,
        html! {
            h1 { "Providers" }
            p.muted { "As the readiness document (" code { "/readyz" } ") shows them; mode " (state.mode.as_str()) ", database " (state.store.backend()) ", shared state " (<&str>::from(state.limits.sharing().state())) ". Figures over the last " (cards.window_days) " days, from " (cards.min_samples) " counted outcomes on; every partner's swaps together." }
            table #providers {
                tr { th { "Provider" } th { "State" } th { "Success" } th { "p50" } th { "p90" } th { "Delivered vs quoted" } th { "Last failure" } }
                @for (card, provider) in cards.providers.iter().zip(&health) {
                    tr data-provider=(card.provider) {
                        td { (card.provider) } td.state { (card.availability) }
                        @match &card.observed {
                            Some(o) => {
                                td.success { (o.success_rate) " of " (o.sample_size) }
                                td { (seconds(o.p50_seconds)) } td { (seconds(o.p90_seconds)) }
                                td { (o.delivered_vs_quoted_bps.map_or_else(|| "-".to_owned(), |bps| format!("{bps:+} bps"))) }
                            }
                            None => { td.success colspan="4" { "too few outcomes yet" } }
                        }
                        td { (provider.last_failure.clone().unwrap_or_default()) }
                    }
                }
            }
            @for (card, outcomes) in cards.providers.iter().zip(&recent) {
                section.scorecard #(format!("scorecard-{}", card.provider)) {
                    h2 { (card.provider) }
                    (charts(observed.daily(&card.provider), now_ms, cards.window_days))
                    @if !card.pairs.is_empty() {
                        p { "Busiest pairs: "
                            @for pair in &card.pairs {
                                span.pair { (pair.from_ccy) " → " (pair.to_ccy) " (" (pair.observed.success_rate) " of " (pair.observed.sample_size) ") " }
                            }
                        }
                    }
                    @if outcomes.is_empty() {
                        p.muted { "No finished swaps in the window yet." }
                    } @else {
                        table.outcomes {
                            tr { th { "Swap" } th { "Pair" } th { "Ended" } th { "Counted" } th { "Quoted" } th { "Delivered" } th { "Time" } th { "At" } }
                            @for outcome in outcomes {
                                tr {
                                    td { @if outcome.source_id.starts_with("ord_") {
                                        a href=(format!("/console/orders/{}", outcome.source_id)) { code { (outcome.source_id) } }
                                    } @else { code { (outcome.source_id) } } }
                                    td { (outcome.from.code) " → " (outcome.to.code) }
                                    td { (outcome.ending.as_str()) @if let Some(e) = &outcome.emergency { " (emergency: " (e) ")" } }
                                    td { (if outcome.counted { "yes" } else { "no: the user's" }) }
                                    td { (outcome.quoted) } td { (outcome.delivered.map(|a| a.to_string()).unwrap_or_default()) }
                                    td { (seconds(outcome.duration_secs)) } td { (when(outcome.ended_at_ms)) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

fn seconds(secs: Option<u32>) -> String {
    secs.map_or_else(|| "-".into(), |s| format!("{s} s"))
}

/// Two small charts over the window, one point a day with outcomes: the success rate (0 to
/// 100 %) and the median time (0 to the window's slowest day). Plain SVG: the console runs no
/// script.
fn charts(days: &[swapd_core::market::observed::Day], now_ms: i64, window_days: u32) -> Markup {
    const W: i64 = 360;
    const H: i64 = 90;
    let window_ms = i64::from(window_days.max(1)) * 86_400_000;
    let start_ms = now_ms - window_ms;
    let x = |at_ms: i64| ((at_ms - start_ms).clamp(0, window_ms) * W / window_ms).to_string();
    let success: Vec<String> = days
        .iter()
        .map(|d| {
            format!(
                "{},{}",
                x(d.start_ms),
                H - i64::from(d.figures.success_bps) * H / 10_000
            )
        })
        .collect();
    let slowest = days
        .iter()
        .filter_map(|d| d.figures.p50_secs)
        .max()
        .unwrap_or(1)
        .max(1);
    let times: Vec<String> = days
        .iter()
        .filter_map(|d| d.figures.p50_secs.map(|p50| (d, p50)))
        .map(|(d, p50)| {
            format!(
                "{},{}",
                x(d.start_ms),
                H - i64::from(p50) * H / i64::from(slowest)
            )
        })
        .collect();
    let chart = |title: String, points: &[String], class: &str| {
        html! {
            figure.chart {
                svg class=(class) width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(title) {
                    rect x="0" y="0" width=(W) height=(H) fill="#f6f7f9" {}
                    polyline fill="none" stroke="#1f5eff" stroke-width="2" points=(points.join(" ")) {}
                    @for point in points {
                        @if let Some((cx, cy)) = point.split_once(',') {
                            circle cx=(cx) cy=(cy) r="2.5" fill="#1f5eff" {}
                        }
                    }
                }
                figcaption { (title) }
            }
        }
    };
    html! {
        div.charts {
            (chart("Success rate by day (0 to 100 %)".into(), &success, "success-chart"))
            (chart(format!("Median time by day (0 to {slowest} s)"), &times, "time-chart"))
        }
    }
}

async fn payments(State(state): State<AppState>, operator: Operator) -> Response {
    let received = match state.store.recent_purchases(200).await {
        Ok(received) => received,
        Err(error) => return failed(error),
    };
    page(
        "x402 payments",
        &operator,
        html! {
            h1 { "x402 payments received" }
            p.muted { "The newest 200: what each payment bought and where it stands (settling, settled: the call is owed, served)." }
            table #payments {
                tr { th { "Payer" } th { "Paid for" } th { "State" } th { "Transaction" } th { "At" } }
                @for payment in &received {
                    tr { td { code { (payment.payer) } } td { (payment.resource) } td { (payment.state) }
                        td { code { (payment.transaction.clone().unwrap_or_default()) } } td { (when(payment.created_at_ms)) } }
                }
            }
        },
    )
}

/// How an event's status e-mail stands, in words: sent, failed for good, or still being tried.
fn mail_state(mail: Option<&swapd_core::store::EventMail>) -> String {
    match mail {
        None => String::new(),
        Some(mail) if mail.sent_at_ms.is_some() => "(sent)".into(),
        Some(mail) if mail.failed_at_ms.is_some() => {
            format!("(failed after {} attempts)", mail.attempts)
        }
        Some(mail) => format!("(pending, {} attempts)", mail.attempts),
    }
}

//! The hosted pages for the partner's customer (docs/order-page.md). `GET
//! /o/{orderId}/{token}` shows an order: where and how much to send, the QR code, the
//! countdown, the rate, and the live timeline; in an emergency it takes the customer's choice
//! through the same use case as `POST /api/v3/orders/{orderId}/emergency`; in sandbox mode it
//! simulates the deposit through the sandbox deposit's use case. `GET /x/{planId}/{token}` shows
//! an onchain execution: its status, steps, transactions and what arrived. The token in a link
//! is the order's (or plan's) own, stored with it, so the pages need no API key and show
//! nothing of anything else. Server-rendered: everything reads without JavaScript; a little
//! script copies, counts down and refreshes the live part.

use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use swapd_app::orders::{self, RefundTo};
use swapd_core::Mode;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::observed::Figures;
use swapd_core::offchain::order::{Choice, Order, OrderEvent, OrderStatus};
use swapd_types::orders::OrderView;
use swapd_types::sandbox::DepositInput;

use crate::html::utc;
use crate::{ApiError, AppState};
use swapd_core::address::Address;
use swapd_core::ids::{OrderId, PlanId};

pub(crate) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/o/{order_id}/{token}", get(page))
        .route("/o/{order_id}/{token}/emergency", post(choose))
        .route("/o/{order_id}/{token}/deposit", post(deposit))
        .route("/x/{plan_id}/{token}", get(execution_page))
        // Every answer under these paths, the framework's JSON refusals included.
        .layer(axum::middleware::map_response(|response: Response| async {
            with_page_headers(response)
        }))
}

/// Whether `token` is the one in `link` (a stored page link), compared in constant time.
pub fn token_matches(link: Option<&str>, token: &str) -> bool {
    link.and_then(|url| url.rsplit('/').next())
        .is_some_and(|own| bool::from(own.as_bytes().ct_eq(token.as_bytes())))
}

/// The order `id` if `token` is its page token; `None` for anything else (unknown order, wrong
/// token, an order without a page), which all answer the same 404.
async fn order_with_token(state: &AppState, id: &str, token: &str) -> Result<Order, Response> {
    let Some(id) = OrderId::parse(id) else {
        return Err(not_found("Order"));
    };
    let order = state
        .store
        .order_for_page(&id)
        .await
        .map_err(|e| ApiError::from(e).into_response())?;
    order
        .filter(|order| token_matches(order.page_url.as_deref(), token))
        .ok_or_else(|| not_found("Order"))
}

fn not_found(what: &str) -> Response {
    let body = layout(
        &format!("{what} not found"),
        html! {
            h1 { (what) " not found" }
            p { "This link is not valid. Ask whoever gave it to you for the link again." }
        },
    );
    with_page_headers((StatusCode::NOT_FOUND, Html(body.into_string())).into_response())
}

async fn page(
    State(state): State<AppState>,
    Path((id, token)): Path<(String, String)>,
) -> Response {
    match order_with_token(&state, &id, &token).await {
        Ok(order) => render(&state, &order, None).await,
        Err(answer) => answer,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChoiceForm {
    choice: String,
    #[serde(default)]
    refund_address: String,
    #[serde(default)]
    refund_tag: String,
}

/// The customer's answer to an emergency: the API's use case, then back to the page (303), or
/// the page again with what was wrong (the choice was not taken).
async fn choose(
    State(state): State<AppState>,
    Path((id, token)): Path<(String, String)>,
    Form(form): Form<ChoiceForm>,
) -> Response {
    let order = match order_with_token(&state, &id, &token).await {
        Ok(order) => order,
        Err(answer) => return answer,
    };
    let choice = match form.choice.as_str() {
        "EXCHANGE" => Choice::Exchange,
        "REFUND" => Choice::Refund,
        _ => {
            let mut response = render(&state, &order, Some("Choose EXCHANGE or REFUND.")).await;
            *response.status_mut() = StatusCode::BAD_REQUEST;
            return response;
        }
    };
    let filled = |text: String| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
    let refund_to = RefundTo {
        address: filled(form.refund_address),
        tag: filled(form.refund_tag),
    };
    let answered =
        orders::answer_emergency(state.app(), &order.owner, &id, choice, refund_to, None).await;
    after_action(&state, &order, answered.map(drop)).await
}

/// "Simulate a deposit" (sandbox mode only): the order's amount arrives at its address, through
/// the sandbox deposit's use case.
async fn deposit(
    State(state): State<AppState>,
    Path((id, token)): Path<(String, String)>,
) -> Response {
    let order = match order_with_token(&state, &id, &token).await {
        Ok(order) => order,
        Err(answer) => return answer,
    };
    if !swapd_app::sandbox::available(state.app()) {
        return not_found("Order");
    }
    if !matches!(
        order.status,
        OrderStatus::New | OrderStatus::AwaitingDeposit
    ) {
        let mut response = render(
            &state,
            &order,
            Some("This order is not awaiting a deposit."),
        )
        .await;
        *response.status_mut() = StatusCode::CONFLICT;
        return response;
    }
    let input = DepositInput {
        amount: order.from_amount.to_string(),
        confirmations: None,
    };
    let sent = swapd_app::sandbox::deposit(state.app(), &order.owner, &id, input, None).await;
    after_action(&state, &order, sent.map(drop)).await
}

async fn after_action(
    state: &AppState,
    order: &Order,
    done: Result<(), swapd_app::Error>,
) -> Response {
    match done {
        Ok(()) => with_page_headers(Redirect::to(page_path(order)).into_response()),
        Err(error) => {
            let error = ApiError::from(error);
            let mut response = render(state, order, Some(error.message())).await;
            *response.status_mut() = error.status();
            response
        }
    }
}

/// The page's own path (`/o/{orderId}/{token}`), from its stored link.
fn page_path(order: &Order) -> &str {
    let link = order.page_url.as_deref().unwrap_or_default();
    link.find("/o/").map_or(link, |at| &link[at..])
}

async fn render(state: &AppState, order: &Order, problem: Option<&str>) -> Response {
    let events = match state.store.order_events(&order.id).await {
        Ok(events) => events,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let from = order.from;
    let sandbox = state.mode == Mode::Sandbox;
    let view = order.view();
    let observed = state.observed.current();
    let figures = observed.route(&order.provider, order.from.code, order.to.code);
    let body = layout(
        &format!("Order {}", order.id),
        html! {
            h1 { "Exchange " (order.from.code) " → " (order.to.code) }
            p.muted { "Order " code { (order.id) } }
            @if let Some(problem) = problem {
                p.problem role="alert" { (problem) }
            }
            div #live data-final=(is_final(order.status)) {
                (status_block(order, &view))
                (expectation_block(order, figures))
                (deposit_block(order, from, sandbox))
                (emergency_block(order, &view, from))
                (terms_block(order, &view))
                (timeline(order, &events))
            }
        },
    );
    with_page_headers(Html(body.into_string()).into_response())
}

async fn execution_page(
    State(state): State<AppState>,
    Path((id, token)): Path<(String, String)>,
) -> Response {
    let Some(id) = PlanId::parse(&id) else {
        return not_found("Execution");
    };
    let plan = match state.store.execution_plan_for_page(&id).await {
        Ok(plan) => plan.filter(|plan| token_matches(plan.page_url.as_deref(), &token)),
        Err(error) => return ApiError::from(error).into_response(),
    };
    let Some(plan) = plan else {
        return not_found("Execution");
    };
    let view = plan.view(state.clock.now_ms());
    let body = layout(
        &format!("Execution {}", plan.id),
        html! {
            h1 { "Swap " (view.from_ccy) " → " (view.to_ccy) " onchain" }
            // No provider named: partners put these pages in front of their own customers.
            p.muted { "Execution " code { (view.execution_plan_id) } }
            div #live data-final=(view.terminal) {
                section.status {
                    p { "Status: " strong #status data-status=(view.status.as_str()) {
                        (execution_text(view.status)) }
                        @if let Some(detail) = &view.substatus { " (" (detail.replace('_', " ")) ")" } }
                    @if let (Some(amount), Some(token)) = (&view.received_amount, &view.received_token) {
                        p { "Arrived: " strong #received { (amount) " " (token) } }
                    }
                }
                section.terms {
                    h2 { "Terms" }
                    dl {
                        dt { "You send" } dd { (view.from_amount) " " (view.from_ccy) }
                        dt { "You receive" } dd { "about " (view.expected_output_amount) " " (view.to_ccy)
                            ", at least " (view.min_output_amount) }
                        dt { "Wallet" } dd { code { (view.wallet_address) } }
                        @if let Some(recipient) = &view.recipient_address {
                            dt { "To" } dd { code { (recipient) } }
                        }
                        dt { "Report by" } dd { (utc(view.expires_at)) }
                    }
                }
                section.steps {
                    h2 { "Steps" }
                    ol #steps { @for step in &plan.steps {
                        li data-kind=(step.kind) { (step.description) " " span.muted { "(" (step.kind) " on " (step.chain) ")" } }
                    } }
                }
                section.transactions {
                    h2 { "Transactions" }
                    @if view.tx_hashes.is_empty() {
                        p.muted { "None reported yet." }
                    }
                    ul #transactions { @for tx in &view.tx_hashes {
                        li data-role=(tx.role) { (tx.role) " on " (tx.chain) ": " code { (tx.tx_hash) } }
                    } }
                }
            }
        },
    );
    with_page_headers(Html(body.into_string()).into_response())
}

fn execution_text(status: swapd_core::onchain::plan::ExecutionStatus) -> &'static str {
    use swapd_core::onchain::plan::ExecutionStatus::*;
    match status {
        AwaitingUser => "Waiting for the wallet to sign",
        Submitted => "Submitted, waiting for the chain",
        Pending => "In progress",
        Done => "Done",
        Failed => "Failed",
        Expired => "Expired: nothing was reported in time",
    }
}

fn is_final(status: OrderStatus) -> bool {
    matches!(
        status,
        OrderStatus::Completed | OrderStatus::Expired | OrderStatus::Refunded | OrderStatus::Failed
    )
}

/// A status in the customer's words; `to_code` is the currency paid out.
fn describe(status: OrderStatus, to_code: &str) -> String {
    match status {
        OrderStatus::New | OrderStatus::AwaitingDeposit => "Waiting for your deposit".into(),
        OrderStatus::Confirming => "Deposit seen, waiting for confirmations".into(),
        OrderStatus::Exchanging => "Exchanging".into(),
        OrderStatus::Withdrawing => format!("Sending your {to_code}"),
        OrderStatus::Completed => "Completed".into(),
        OrderStatus::Expired => "Expired: no deposit arrived in time".into(),
        OrderStatus::Emergency => "Your decision is needed".into(),
        OrderStatus::Refunding => "Refunding your deposit".into(),
        OrderStatus::Refunded => "Refunded".into(),
        OrderStatus::Failed => "Failed".into(),
    }
}

fn status_block(order: &Order, view: &OrderView) -> Markup {
    html! {
        section.status {
            p { "Status: " strong #status data-status=(view.status) { (describe(order.status, order.to.code)) } }
            @for deposit in &view.from.received {
                p.received { "Received " (deposit.amount) " " (order.from.code) " ("
                    (deposit.confirmations.min(deposit.required_confirmations)) " of "
                    (deposit.required_confirmations) " confirmations), transaction "
                    code { (deposit.tx_id) } }
            }
            @if let Some(tx) = &view.to.tx_id {
                p { "Sent " (view.to.amount) " " (order.to.code) " in transaction "
                    code #payout-tx { (tx) } }
            }
            @if let Some(tx) = &view.refund.tx_id {
                p { "Your deposit was sent back in transaction " code #refund-tx { (tx) } }
            }
            @if let Some(reason) = &order.failure_reason {
                p { "Reason: " (reason) }
            }
        }
    }
}

/// While the deposit is confirming or the desk is at work: when the payout can be expected,
/// from the provider's observed times (its median and 90th percentile), not its promise.
fn expectation_block(order: &Order, figures: Option<&Figures>) -> Markup {
    let under_way = matches!(
        order.status,
        OrderStatus::Confirming | OrderStatus::Exchanging | OrderStatus::Withdrawing
    );
    let Some((figures, p50)) = figures
        .filter(|_| under_way)
        .and_then(|f| f.p50_secs.map(|p50| (f, p50)))
    else {
        return html! {};
    };
    let minutes = |secs: u32| secs.div_ceil(60).max(1);
    html! {
        section.expectation {
            p #expectation data-p50=(p50) {
                (order.provider) " usually pays out about " (minutes(p50)) " min after the deposit confirms"
                @if let Some(p90) = figures.p90_secs {
                    " (9 in 10 within " (minutes(p90)) " min)"
                }
                @if let Some(started) = order.exchange_started_at_ms {
                    ": expect it around " (utc(started / 1000 + i64::from(p50)))
                }
                ", from its last " (figures.sample_size) " swaps."
            }
        }
    }
}

fn deposit_block(order: &Order, from: &CurrencyDef, sandbox: bool) -> Markup {
    if !matches!(
        order.status,
        OrderStatus::New | OrderStatus::AwaitingDeposit
    ) {
        return html! {};
    }
    let amount = Some(order.from_amount);
    let uri = swapd_core::payment_uri::wallet_uri(
        from,
        &order.deposit_address,
        order.deposit_tag.as_deref(),
        amount,
    );
    let qr = crate::qr::images(&uri).map(|(_, svg)| svg);
    let expires = order.expires_at_ms / 1000;
    let tag_name = from.network.tag_name().unwrap_or("memo");
    html! {
        section.deposit {
            h2 { "Send exactly" }
            p.amount { span #amount { (order.from_amount) } " " (order.from.code) " "
                button.copy type="button" data-copy=(order.from_amount) { "Copy" } }
            p { "to this address:" }
            p.address { code #deposit-address { (order.deposit_address) } " "
                button.copy type="button" data-copy=(order.deposit_address) { "Copy" } }
            @if let Some(tag) = &order.deposit_tag {
                p.tag { "with " (tag_name) ": " code #deposit-tag { (tag) } " "
                    button.copy type="button" data-copy=(tag) { "Copy" } }
                p.warning { "Without the " (tag_name) " your deposit cannot be credited." }
            }
            @if let Some(svg) = qr {
                img #qr src=(svg) alt="QR code of the deposit" data-payload=(uri) width="220" height="220";
            }
            p { "Send it before " (utc(expires)) " " span #countdown data-expires=(expires) {} }
            @if sandbox {
                form method="post" action=(format!("{}/deposit", page_path(order))) {
                    button #simulate-deposit type="submit" { "Simulate a deposit (sandbox)" }
                }
            }
        }
    }
}

fn emergency_block(order: &Order, view: &OrderView, from: &CurrencyDef) -> Markup {
    let Some(emergency) = order
        .emergency
        .as_ref()
        .filter(|_| order.status == OrderStatus::Emergency)
    else {
        return html! {};
    };
    let Some(case) = &view.emergency else {
        return html! {};
    };
    if let Some(choice) = &case.choice {
        return html! { section.emergency { p { "Your choice: " strong { (choice) } ". It is being carried out." } } };
    }
    let tag_name = from.network.tag_name();
    html! {
        section.emergency {
            h2 { "Something went wrong with your deposit" }
            ul { @for reason in &case.reasons { li { (reason_text(reason)) } } }
            p { "Choose what happens to it before " (utc(emergency.deadline_ms / 1000)) "." }
            form #emergency method="post" action=(format!("{}/emergency", page_path(order))) {
                @for allowed in &case.allowed_choices {
                    label.choice {
                        input type="radio" name="choice" value=(allowed) required;
                        " " (choice_text(allowed))
                    }
                }
                label { "Refund address (" (order.from.code) ")"
                    input name="refundAddress" autocomplete="off"
                        value=(order.refund_address.as_ref().map(Address::as_str).unwrap_or_default()); }
                @if let Some(tag_name) = tag_name {
                    label { "Refund " (tag_name)
                        input name="refundTag" value=(order.refund_tag.clone().unwrap_or_default()); }
                }
                button type="submit" { "Confirm" }
            }
        }
    }
}

fn reason_text(reason: &str) -> &'static str {
    match reason {
        "EXPIRED" => "The deposit arrived after the order expired.",
        "LESS" => "Less than the agreed amount arrived.",
        "MORE" => "More than the agreed amount arrived.",
        "LIMIT" => "The amount is outside what this exchange accepts.",
        _ => "The deposit cannot be exchanged as agreed.",
    }
}

fn choice_text(choice: &str) -> &'static str {
    match choice {
        "EXCHANGE" => "Exchange what arrived at the current rate",
        "REFUND" => "Refund my deposit",
        _ => "Other",
    }
}

fn terms_block(order: &Order, view: &OrderView) -> Markup {
    let rate_kind = match order.rate_type {
        swapd_core::market::RateType::Fixed => "fixed: locked until the order expires",
        swapd_core::market::RateType::Float => "floating: taken when your deposit is exchanged",
    };
    html! {
        section.terms {
            h2 { "Terms" }
            dl {
                dt { "You send" } dd { (view.from.amount) " " (order.from.code) }
                dt { "You receive" } dd { (view.to.amount) " " (order.to.code) }
                dt { "To" } dd { code { (order.to_address.as_str()) }
                    @if let Some(tag) = &order.to_tag { " (" (tag) ")" } }
                dt { "Rate" } dd { "1 " (order.from.code) " = " (view.rate) " " (order.to.code) " (" (rate_kind) ")" }
            }
        }
    }
}

fn timeline(order: &Order, events: &[OrderEvent]) -> Markup {
    // One entry per status the order reached, at the time it reached it.
    let mut steps: Vec<(String, i64)> = Vec::new();
    for event in events {
        let status = event.data["status"].as_str().unwrap_or_default().to_owned();
        if steps.last().is_none_or(|(last, _)| *last != status) {
            steps.push((status, event.created_at_ms / 1000));
        }
    }
    html! {
        section.timeline {
            h2 { "What happened" }
            ol #timeline {
                @for (status, at) in &steps {
                    li data-status=(status) { span.when { (utc(*at)) } " " (status_text(status, order)) }
                }
            }
        }
    }
}

fn status_text(status: &str, order: &Order) -> String {
    if status == OrderStatus::New.as_str() {
        return "Order created".into();
    }
    status
        .parse::<OrderStatus>()
        .map(|status| describe(status, order.to.code))
        .unwrap_or_else(|_| status.to_owned())
}

fn layout(title: &str, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) }
                noscript { meta http-equiv="refresh" content="15"; }
                style { (PreEscaped(STYLE)) }
            }
            body { main { (main) } script { (PreEscaped(SCRIPT)) } }
        }
    }
}

/// The pages are the order's (or plan's) alone: never cached, never framed, no referrer
/// leaking their link; only their own inline style, `data:` images, requests to themselves,
/// and their one script, allowed by its hash: no other script runs, inline or injected.
fn with_page_headers(response: Response) -> Response {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let csp = CSP.get_or_init(|| {
        use base64::Engine;
        use sha2::{Digest, Sha256};
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
        format!(
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; \
             script-src 'sha256-{hash}'; connect-src 'self'; form-action 'self'; \
             base-uri 'none'; frame-ancestors 'none'"
        )
    });
    crate::html::secured(response, csp)
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,sans-serif;margin:0;background:#f6f7f9;color:#1c2330}
main{max-width:40rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.5rem}
section{background:#fff;border-radius:.6rem;padding:.8rem 1rem;margin:.8rem 0;box-shadow:0 1px 2px #0001}
code{word-break:break-all;background:#eef1f5;padding:.1rem .3rem;border-radius:.3rem}
.amount{font-size:1.3rem}.muted{color:#667}.problem{background:#fde8e8;padding:.6rem;border-radius:.4rem}
.warning{color:#a15c00}button{font:inherit;padding:.45rem .9rem;border-radius:.4rem;border:1px solid #889;background:#fff;cursor:pointer}
button[type=submit]{background:#1f5eff;color:#fff;border-color:#1f5eff}
img#qr{display:block;margin:.6rem 0;max-width:100%;height:auto}
label{display:block;margin:.5rem 0}input[name]{display:block;width:100%;box-sizing:border-box;padding:.4rem;margin-top:.2rem}
label.choice input{display:inline;width:auto}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem .8rem}dd{margin:0;overflow-wrap:anywhere}
ol#timeline{padding-left:1.2rem}.when{color:#667;font-size:.85rem}
";

/// Copy buttons, the countdown, and the live part refreshed from the page itself every two
/// seconds until the order is final (not while the customer is filling in a form).
const SCRIPT: &str = r#"
(function () {
  document.addEventListener("click", function (e) {
    var b = e.target.closest("button.copy");
    if (b && navigator.clipboard) { navigator.clipboard.writeText(b.dataset.copy); b.textContent = "Copied"; }
  });
  function tick() {
    var c = document.getElementById("countdown");
    if (!c) return;
    var left = Number(c.dataset.expires) - Math.floor(Date.now() / 1000);
    if (left <= 0) { c.textContent = "(expired)"; return; }
    var m = Math.floor(left / 60), s = left % 60;
    c.textContent = "(" + m + " min " + (s < 10 ? "0" : "") + s + " s left)";
  }
  function refresh() {
    var live = document.getElementById("live");
    if (!live || live.dataset.final === "true") return;
    var active = document.activeElement;
    if (active && active.form) { setTimeout(refresh, 2000); return; }
    fetch(location.pathname, { cache: "no-store" }).then(function (r) { return r.text(); }).then(function (html) {
      var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
      if (next) { live.replaceWith(next); tick(); }
    }).catch(function () {}).finally(function () { setTimeout(refresh, 2000); });
  }
  tick(); setInterval(tick, 1000); setTimeout(refresh, 2000);
})();
"#;

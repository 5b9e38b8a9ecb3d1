//! The console's revenue pages (docs/fees.md, "The console"): the fee ledger's totals per party
//! and currency, expected and realized, the swaps reconciliation flags, the ledger as CSV, and
//! the affiliates (registered, disabled, and what their codes earned). Reads go to the store;
//! the affiliates' rules are `swapd_core::affiliates`', as `swapd affiliates` uses them.

use axum::extract::{Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::html;
use serde::Deserialize;
use swapd_core::StoreError;
use swapd_core::affiliates::{Affiliate, parse_share};
use swapd_core::fees::Party;
use swapd_core::fees::ledger::{LedgerRow, reconcile};
use swapd_types::earnings::EarningsTotal;

use super::pages::{day_ms, failed, page};
use super::{CsrfOnly, Operator, forged, page_headers, refused};
use crate::AppState;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/console/revenue", get(revenue))
        .route("/console/revenue.csv", get(revenue_csv))
        .route(
            "/console/affiliates",
            get(affiliates).post(create_affiliate),
        )
        .route(
            "/console/affiliates/{code}/disable",
            post(disable_affiliate),
        )
}

/// The window asked for: `since` and `until` days (YYYY-MM-DD, UTC, `until` included), the
/// last 30 days by default; an affiliate's code to read its rows only.
#[derive(Debug, Default, Deserialize)]
struct Window {
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    affiliate: String,
}

impl Window {
    /// `[since, until)` in epoch seconds, checked as the earnings API checks it.
    fn bounds(&self, now_ms: i64) -> Result<(i64, i64), String> {
        let since = day_ms(self.since.trim())?.map(|ms| ms / 1000);
        let until = day_ms(self.until.trim())?.map(|ms| ms / 1000 + 86_400);
        swapd_app::earnings::window(since, until, now_ms / 1000).map_err(|e| e.to_string())
    }

    /// The same window in a link's query.
    fn query(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("since", &self.since),
            ("until", &self.until),
            ("affiliate", &self.affiliate),
        ] {
            if !value.trim().is_empty() {
                query.append_pair(name, value.trim());
            }
        }
        query.finish()
    }
}

/// The ledger rows of the window (an affiliate's only, when it names one).
async fn rows(
    state: &AppState,
    window: &Window,
    (since, until): (i64, i64),
) -> Result<Vec<LedgerRow>, StoreError> {
    let limit = swapd_app::earnings::MAX_ROWS + 1;
    let (since_ms, until_ms) = (since * 1000, until * 1000);
    match window.affiliate.trim() {
        "" => {
            state
                .store
                .fee_ledger(None, since_ms, until_ms, limit)
                .await
        }
        code => {
            state
                .store
                .affiliate_ledger(code, since_ms, until_ms, limit)
                .await
        }
    }
}

/// The window asked for, checked, and its rows; the page that answers a bad window or an
/// unreadable ledger.
async fn asked(
    state: &AppState,
    window: &Window,
) -> Result<((i64, i64), Vec<LedgerRow>), Response> {
    let bounds = window
        .bounds(state.clock.now_ms())
        .map_err(|problem| refused(StatusCode::BAD_REQUEST, &problem))?;
    let rows = rows(state, window, bounds).await.map_err(failed)?;
    Ok((bounds, rows))
}

/// Totals per party and currency.
fn totals(rows: &[LedgerRow], (since, until): (i64, i64)) -> Vec<(Party, EarningsTotal)> {
    [Party::Service, Party::Affiliate, Party::Partner]
        .into_iter()
        .flat_map(|party| {
            swapd_app::earnings::summary(rows, party, since, until)
                .totals
                .into_iter()
                .map(move |total| (party, total))
        })
        .collect()
}

async fn revenue(
    State(state): State<AppState>,
    operator: Operator,
    Query(window): Query<Window>,
) -> Response {
    let (bounds, rows) = match asked(&state, &window).await {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    let truncated = rows.len() > swapd_app::earnings::MAX_ROWS as usize;
    let tolerance = state.fee_rules.reconcile_tolerance_bps;
    let mismatches = reconcile(&rows, tolerance);
    page(
        "Revenue",
        &operator,
        html! {
            h1 { "Revenue" }
            form.filters method="get" action="/console/revenue" {
                label { "From " input name="since" type="date" value=(window.since); }
                label { "To " input name="until" type="date" value=(window.until); }
                label { "Affiliate " input name="affiliate" value=(window.affiliate); }
                button type="submit" { "Show" }
            }
            p { "From " (crate::html::utc(bounds.0)) " to " (crate::html::utc(bounds.1)) " (UTC). "
                a #csv href=(format!("/console/revenue.csv?{}", window.query())) { "Download the rows as CSV" } }
            @if truncated { p.problem { "The window holds more rows than one page sums: narrow it." } }
            table #totals {
                tr { th { "Party" } th { "Currency" } th { "Expected" } th { "Realized" } }
                @for (party, total) in totals(&rows, bounds) {
                    tr data-party=(party.as_str()) data-currency=(total.currency) {
                        td { (party.as_str()) } td { (total.currency) }
                        td.expected { (total.expected) } td.realized { (total.realized) }
                    }
                }
            }
            h2 { "Reconciliation" }
            p { "Realized fees off the expected ones by more than " (tolerance) " bps of them." }
            @if mismatches.is_empty() {
                p #reconciled { "Every realized fee matches its expected one." }
            } @else {
                table #mismatches {
                    tr { th { "Swap" } th { "Party" } th { "Currency" } th { "Expected" } th { "Realized" } }
                    @for mismatch in &mismatches {
                        tr data-order=(mismatch.order_id) {
                            td { code { (mismatch.order_id) } } td { (mismatch.party.as_str()) }
                            td { (mismatch.currency) } td { (mismatch.expected) } td { (mismatch.realized) }
                        }
                    }
                }
            }
        },
    )
}

/// A CSV cell: quoted when it holds a separator, a quote or a line break, and kept from being
/// read as a formula by a spreadsheet.
fn cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

async fn revenue_csv(
    State(state): State<AppState>,
    _operator: Operator,
    Query(window): Query<Window>,
) -> Response {
    let (bounds, rows) = match asked(&state, &window).await {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    let mut csv =
        String::from("order_id,owner,party,affiliate_code,stage,bps,amount,currency,at\n");
    for row in rows.iter().take(swapd_app::earnings::MAX_ROWS as usize) {
        let at = (row.at_ms / 1000).to_string();
        let (owner, amount) = (row.owner.scope(), row.amount.to_string());
        let bps = row.bps.map(|bps| bps.to_string()).unwrap_or_default();
        let cells = [
            row.order_id.as_str(),
            &owner,
            row.party.as_str(),
            row.affiliate_code.as_deref().unwrap_or_default(),
            row.stage.as_str(),
            &bps,
            &amount,
            row.currency.code,
            &at,
        ];
        csv.push_str(&cells.map(cell).join(","));
        csv.push('\n');
    }
    let filename = format!("swapd-fees-{}-{}.csv", bounds.0, bounds.1);
    page_headers(
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{filename}\""),
                ),
            ],
            csv,
        )
            .into_response(),
    )
}

async fn affiliates(State(state): State<AppState>, operator: Operator) -> Response {
    affiliates_page(&state, &operator, None).await
}

async fn affiliates_page(state: &AppState, operator: &Operator, problem: Option<&str>) -> Response {
    let all = match state.store.list_affiliates().await {
        Ok(all) => all,
        Err(error) => return failed(error),
    };
    let bounds = Window::default()
        .bounds(state.clock.now_ms())
        .expect("the default window is valid");
    let mut earned = Vec::with_capacity(all.len());
    for affiliate in &all {
        let window = Window {
            affiliate: affiliate.code.clone(),
            ..Window::default()
        };
        match rows(state, &window, bounds).await {
            Ok(rows) => earned.push(totals(&rows, bounds)),
            Err(error) => return failed(error),
        }
    }
    page(
        "Affiliates",
        operator,
        html! {
            h1 { "Affiliates" }
            @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
            table #affiliates {
                tr { th { "Code" } th { "Name" } th { "Share (bps of the service fee)" } th { "Payout" }
                     th { "Status" } th { "Last 30 days: expected / realized" } th {} }
                @for (affiliate, earned) in all.iter().zip(&earned) {
                    tr data-code=(affiliate.code) {
                        td { code { (affiliate.code) } } td { (affiliate.name) } td { (affiliate.share_bps) }
                        td { code { (affiliate.payout) } }
                        td.status { @if affiliate.active { "active" } @else { "disabled" } }
                        td.earned {
                            @for (_, total) in earned {
                                div { (total.expected) " / " (total.realized) " " (total.currency) }
                            }
                            a href=(format!("/console/revenue?affiliate={}", affiliate.code)) { "Rows" }
                        }
                        td { @if affiliate.active {
                            form method="post" action=(format!("/console/affiliates/{}/disable", affiliate.code)) {
                                input type="hidden" name="csrf" value=(operator.csrf);
                                button type="submit" { "Disable" }
                            }
                        } }
                    }
                }
            }
            section {
                h2 { "Register an affiliate" }
                form #create-affiliate method="post" action="/console/affiliates" {
                    input type="hidden" name="csrf" value=(operator.csrf);
                    label { "Code " input name="code" required maxlength="64" pattern="[A-Za-z0-9_-]{1,64}"; }
                    label { "Name " input name="name" required maxlength="100"; }
                    label { "Share of the service fee (bps, or a percent: 25%) " input name="share" required; }
                    label { "Payout address or account " input name="payout" required; }
                    button type="submit" { "Register" }
                }
            }
        },
    )
}

#[derive(Deserialize)]
struct NewAffiliate {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    share: String,
    #[serde(default)]
    payout: String,
}

async fn create_affiliate(
    State(state): State<AppState>,
    operator: Operator,
    Form(form): Form<NewAffiliate>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    let refuse = |problem: String| {
        let (state, operator) = (&state, &operator);
        async move {
            let mut response = affiliates_page(state, operator, Some(&problem)).await;
            *response.status_mut() = StatusCode::BAD_REQUEST;
            response
        }
    };
    let Some(share_bps) = parse_share(form.share.trim()) else {
        return refuse("The share is bps of the service fee (2500) or a percent (25%).".into())
            .await;
    };
    let now = state.clock.now_ms();
    let affiliate = match Affiliate::new(
        form.code.trim(),
        form.name.trim(),
        share_bps,
        form.payout.trim(),
        now,
    ) {
        Ok(affiliate) => affiliate,
        Err(problem) => return refuse(problem.to_string()).await,
    };
    match state.store.insert_affiliate(&affiliate).await {
        Ok(()) => {
            tracing::info!(code = %affiliate.code, "affiliate registered in the console");
            page_headers(Redirect::to("/console/affiliates").into_response())
        }
        Err(StoreError::Conflict(_)) => {
            refuse(format!(
                "An affiliate already has the code `{}`.",
                affiliate.code
            ))
            .await
        }
        Err(error) => failed(error),
    }
}

async fn disable_affiliate(
    State(state): State<AppState>,
    operator: Operator,
    Path(code): Path<String>,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    match state.store.set_affiliate_active(&code, false).await {
        Ok(Some(_)) => {
            tracing::info!(%code, "affiliate disabled in the console");
            page_headers(Redirect::to("/console/affiliates").into_response())
        }
        Ok(None) => refused(StatusCode::NOT_FOUND, "No affiliate has this code."),
        Err(error) => failed(error),
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn csv_cells_are_quoted_and_never_formulas() {
        assert_eq!(cell("0.0675"), "0.0675");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(cell("-code"), "'-code");
    }
}

//! `GET /currencies`: every currency some provider trades, with its networks and limits.

use axum::extract::State;
use swapd_core::market::catalog::{CatalogEntry, SCHEMA_VERSION};
use swapd_types::Success;
use swapd_types::market::{Catalog, Currency};

use super::input::only_parameters;
use crate::json::Json;
use crate::{ApiError, AppState, SignedQuery};

/// The currency catalog.
#[utoipa::path(get, path = "/api/v3/currencies", tag = "business",
    security(("hmac" = [])),
    description = "Every currency some provider trades now, with limits. \
        When a provider cannot be refreshed its last good answer is served (`degraded`, `reason`, \
        `source: cache`); before any provider has answered, the shipped catalog (`source: snapshot`).",
    responses((status = 200, description = "The catalog", body = inline(Success<Catalog>))))]
pub(crate) async fn currencies(
    State(state): State<AppState>,
    query: SignedQuery,
) -> Result<Json<Success<Catalog>>, ApiError> {
    currencies_query(&query)?;
    let view = state.market.catalog(state.clock.now_ms()).await;
    let currencies: Vec<Currency> = view.currencies.iter().map(currency_dto).collect();
    Ok(Json(Success::new(Catalog {
        schema_version: SCHEMA_VERSION,
        count: currencies.len(),
        currencies,
        degraded: view.degraded,
        reason: view.reason,
        source: view.source.as_str().to_owned(),
    })))
}

fn currency_dto(entry: &CatalogEntry) -> Currency {
    let def = entry.currency;
    Currency {
        code: def.code.into(),
        symbol: def.symbol.into(),
        name: def.name.into(),
        network: def.network.code().into(),
        chain_namespace: def.network.chain_namespace().into(),
        chain_id: def.network.evm_chain_id(),
        decimals: def.decimals,
        precision: def.precision,
        contract_address: def.contract.map(Into::into),
        tag_name: def.network.tag_name().map(Into::into),
        tag_required: def.tag_required(),
        send: entry.send,
        receive: entry.receive,
        min: entry.min.map(|a| a.to_string()),
        max: entry.max.map(|a| a.to_string()),
    }
}

/// `GET /currencies` takes no parameters.
fn currencies_query(query: &SignedQuery) -> Result<(), ApiError> {
    only_parameters(query, &[])
}

pub(crate) fn check_currencies_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    currencies_query(query)
}

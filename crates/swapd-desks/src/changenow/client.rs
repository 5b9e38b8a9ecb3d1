//! ChangeNOW over HTTP: each call sent by the shared transport and its answer read by this
//! module's pure functions.

use std::time::Duration;

use reqwest::header::HeaderMap;
use swapd_core::amount::Amount;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::desk::{
    DeskCommission, DeskError, DeskExchange, DeskLimits, DeskQuote, OpenedExchange,
};

use super::{CreateRequest, Side};
use crate::Catalog;
use swapd_http::{Answer, Call, Transport};

/// ChangeNOW's public API root.
pub const BASE_URL: &str = "https://api.changenow.io/v2/";

pub struct ChangeNow {
    transport: Transport,
    /// The same API under the partner's private key: only `GET /v2/exchanges` takes it.
    private: Option<Transport>,
    /// Whether the account has the `payload` partner field, so creates carry swapd's reference.
    payload_reference: bool,
}

impl ChangeNow {
    /// A client of the API at `base_url` with the partner key `api_key`.
    pub fn new(base_url: &str, api_key: &str, timeout: Duration) -> Result<Self, String> {
        Ok(Self {
            transport: Transport::new("ChangeNOW", base_url, timeout, keyed(api_key)?)?,
            private: None,
            payload_reference: false,
        })
    }

    /// Looks exchanges up with the partner's private key after a create whose answer was lost
    /// (`private_api_key`), and sends swapd's reference in the create's `payload`
    /// (`payload_reference`, for accounts that have the field enabled).
    pub fn with_lookup(
        mut self,
        base_url: &str,
        private_api_key: Option<&str>,
        payload_reference: bool,
        timeout: Duration,
    ) -> Result<Self, String> {
        self.payload_reference = payload_reference;
        if let Some(private_api_key) = private_api_key {
            let headers = keyed(private_api_key)
                .map_err(|_| "the private API key holds characters a header cannot carry")?;
            self.private = Some(Transport::new("ChangeNOW", base_url, timeout, headers)?);
        }
        Ok(self)
    }

    /// Whether exchanges can be looked up after a lost create.
    pub fn can_look_up(&self) -> bool {
        self.private.is_some()
    }

    /// Whether creates carry swapd's reference.
    pub fn sends_reference(&self) -> bool {
        self.payload_reference
    }

    /// The exchange `request` opened, looked up among those created since `since_ms`.
    pub async fn find_opened(
        &self,
        request: &CreateRequest<'_>,
        since_ms: i64,
    ) -> Result<super::Found, DeskError> {
        let Some(private) = &self.private else {
            return Ok(super::Found::Nothing);
        };
        let query = super::lookup_query(request.payout_address, since_ms);
        let answer = private.get("exchanges", &query).await?;
        read(answer, |body| super::find_opened(body, request))
    }

    /// What exchange `id` earned the operator's account, read with the private key; `None`
    /// without that key, or before ChangeNOW reports it.
    pub async fn commission(
        &self,
        id: &str,
        pair: (&'static CurrencyDef, &'static CurrencyDef),
    ) -> Result<Option<DeskCommission>, DeskError> {
        let Some(private) = &self.private else {
            return Ok(None);
        };
        let answer = private.get("exchanges", &super::exchange_query(id)).await?;
        read(answer, |body| super::commission(body, id, pair))
    }

    /// The active currencies, as swapd's catalog.
    pub async fn currencies(&self) -> Result<Catalog, DeskError> {
        let query = [("active", "true".to_owned()), ("flow", String::new())];
        let answer = self.transport.get("exchange/currencies", &query).await?;
        read(answer, super::catalog)
    }

    pub async fn limits(
        &self,
        from: Side<'_>,
        to: Side<'_>,
        rate: RateType,
    ) -> Result<DeskLimits, DeskError> {
        let query = super::range_query(from, to, rate);
        let answer = self.transport.get("exchange/range", &query).await?;
        read(answer, |body| super::limits(body, from.currency))
    }

    pub async fn quote(
        &self,
        from: Side<'_>,
        to: Side<'_>,
        rate: RateType,
        direction: Direction,
        amount: Amount,
    ) -> Result<DeskQuote, DeskError> {
        let query = super::estimate_query(from, to, rate, direction, amount);
        let answer = self
            .transport
            .get("exchange/estimated-amount", &query)
            .await?;
        read(answer, |body| {
            super::quote(body, from.currency, to.currency)
        })
    }

    /// Opens an exchange; sent once (a timeout leaves it unknown whether it was opened).
    pub async fn open(&self, request: &CreateRequest<'_>) -> Result<OpenedExchange, DeskError> {
        let body = super::create_body(request);
        let answer = self
            .transport
            .post(Call::Write, "exchange", &body, &[])
            .await?;
        read(answer, super::opened)
    }

    /// Where the exchange `id` from `from` to `to` stands.
    pub async fn exchange(
        &self,
        id: &str,
        from: &CurrencyDef,
        to: &CurrencyDef,
    ) -> Result<DeskExchange, DeskError> {
        let query = [("id", id.to_owned())];
        let answer = self.transport.get("exchange/by-id", &query).await?;
        read(answer, |body| super::exchange(body, from, to))
    }
}

/// `x-changenow-api-key` with `key`, marked sensitive (never logged).
/// ChangeNOW's API key header.
fn keyed(key: &str) -> Result<HeaderMap, String> {
    swapd_http::api_key_headers("x-changenow-api-key", Some(key))
}

/// A 2xx answer read by `map`; anything else as ChangeNOW's error.
fn read<T>(
    answer: Answer,
    map: impl FnOnce(&[u8]) -> Result<T, DeskError>,
) -> Result<T, DeskError> {
    answer.read(map, |refused| {
        super::error(refused.status, &refused.body, refused.retry_after)
    })
}

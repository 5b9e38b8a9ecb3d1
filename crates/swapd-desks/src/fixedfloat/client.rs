//! FixedFloat over HTTP: each body written and signed by this module's pure functions, sent by
//! the shared transport, and its answer read by them.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use swapd_core::amount::Amount;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::desk::{DeskError, DeskExchange, DeskLimits, DeskQuote, OpenedExchange};

use super::{Choice, CreateOrder};
use crate::Catalog;
use swapd_http::{Answer, Call, Transport};

/// FixedFloat's public API root.
pub const BASE_URL: &str = "https://ff.io/api/v2/";

const SIGN: HeaderName = HeaderName::from_static("x-api-sign");

pub struct FixedFloat {
    transport: Transport,
    secret: String,
}

/// An order at FixedFloat: its id and the token that authorizes acting on it.
#[derive(Clone, Copy)]
pub struct OrderRef<'a> {
    pub id: &'a str,
    pub token: &'a str,
}

impl FixedFloat {
    /// A client of the API at `base_url` with the key and secret of an API key.
    pub fn new(
        base_url: &str,
        api_key: &str,
        api_secret: &str,
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut headers = swapd_http::api_key_headers("x-api-key", Some(api_key))?;
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        Ok(Self {
            transport: Transport::new("FixedFloat", base_url, timeout, headers)?,
            secret: api_secret.to_owned(),
        })
    }

    /// The currencies, as swapd's catalog.
    pub async fn currencies(&self) -> Result<Catalog, DeskError> {
        let answer = self.call(Call::Read, "ccies", "{}").await?;
        read(answer, super::catalog)
    }

    /// A price, with the limits FixedFloat gives for the input. `from_code` and `to_code` are
    /// FixedFloat's codes (the catalog's `desk_code`).
    pub async fn quote(
        &self,
        (from_code, from): (&str, &CurrencyDef),
        (to_code, to): (&str, &CurrencyDef),
        rate: RateType,
        direction: Direction,
        amount: Amount,
        referral: Option<super::Referral<'_>>,
    ) -> Result<(DeskQuote, DeskLimits), DeskError> {
        let body = super::price_body(rate, from_code, to_code, direction, amount, referral);
        let answer = self.call(Call::Read, "price", &body).await?;
        read(answer, |body| super::quote(body, from, to))
    }

    /// Opens an order; sent once (FixedFloat has no idempotency key, so a timeout leaves it
    /// unknown whether it was opened).
    pub async fn open(&self, order: &CreateOrder<'_>) -> Result<OpenedExchange, DeskError> {
        let body = super::create_body(order);
        let answer = self.call(Call::Write, "create", &body).await?;
        read(answer, super::opened)
    }

    /// Where the order stands.
    pub async fn exchange(
        &self,
        order: OrderRef<'_>,
        from: &CurrencyDef,
        to: &CurrencyDef,
    ) -> Result<DeskExchange, DeskError> {
        let body = super::order_body(order.id, order.token);
        let answer = self.call(Call::Read, "order", &body).await?;
        read(answer, |body| super::exchange(body, from, to))
    }

    /// The customer's choice in an emergency; whether FixedFloat took it.
    pub async fn choose(&self, order: OrderRef<'_>, choice: Choice<'_>) -> Result<bool, DeskError> {
        let body = super::emergency_body(order.id, order.token, choice);
        let answer = self.call(Call::Write, "emergency", &body).await?;
        read(answer, super::accepted)
    }

    /// Where FixedFloat e-mails the order's changes; whether it took the address.
    pub async fn set_email(&self, order: OrderRef<'_>, email: &str) -> Result<bool, DeskError> {
        let body = super::set_email_body(order.id, order.token, email);
        let answer = self.call(Call::Write, "setEmail", &body).await?;
        read(answer, super::accepted)
    }

    /// `POST method` with `body` and its signature.
    async fn call(&self, call: Call, method: &str, body: &str) -> Result<Answer, DeskError> {
        let mut signature = HeaderValue::from_str(&super::signature(&self.secret, body))
            .expect("hex is a header value");
        signature.set_sensitive(true);
        self.transport
            .post(call, method, body, &[(SIGN, signature)])
            .await
            .map_err(DeskError::from)
    }
}

/// A 2xx answer read by `map` (which reads the envelope's `code`); anything else by its status.
fn read<T>(
    answer: Answer,
    map: impl FnOnce(&[u8]) -> Result<T, DeskError>,
) -> Result<T, DeskError> {
    answer.read(map, |refused| {
        super::error(refused.status, refused.retry_after)
    })
}

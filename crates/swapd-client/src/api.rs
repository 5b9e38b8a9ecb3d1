//! The calls both surfaces share. The Business API (`/api/v3`, [`crate::BusinessClient`]) and the
//! x402 API (`/api/x402`, [`crate::x402::X402Client`]) serve the same catalog, routes, orders and
//! onchain executions under their own prefix and their own authentication; [`SwapApi`] gives both
//! the same typed methods.

use std::future::Future;

use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use swapd_types::market::{
    Catalog, Direction, Quote, QuoteInput, RateType, ResolveInput, Resolved, RouteSort, Routes,
    Scorecards, Token, TokenList, TokenLogo,
};
use swapd_types::onchain::{
    ACCESS_TOKEN_HEADER, ExecutionPlanView, ExecutionReportInput, ExecutionView,
    OnchainResolveInput,
};
use swapd_types::orders::{
    DepositQr, EmailInput, EmergencyInput, OrderInput, OrderView, RefundInput,
};

use crate::{Answer, Error};

/// One request, relative to a surface's prefix.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: Method,
    /// After the prefix: `/orders/ord_…`, or `` for the readiness document.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    /// Extra headers (the onchain access token).
    pub headers: Vec<(&'static str, String)>,
}

impl Call {
    pub fn get(path: impl Into<String>) -> Self {
        Self {
            method: Method::GET,
            path: path.into(),
            query: Vec::new(),
            body: None,
            headers: Vec::new(),
        }
    }

    /// A POST of `body` (serialized now; the client adds the Idempotency-Key).
    pub fn post<B: Serialize + ?Sized>(path: impl Into<String>, body: &B) -> Result<Self, Error> {
        Ok(Self {
            method: Method::POST,
            body: Some(to_value(body)?),
            ..Self::get(path)
        })
    }

    pub fn patch<B: Serialize + ?Sized>(path: impl Into<String>, body: &B) -> Result<Self, Error> {
        Ok(Self {
            method: Method::PATCH,
            ..Self::post(path, body)?
        })
    }

    /// Adds a query parameter.
    pub fn param(mut self, name: &str, value: impl Into<String>) -> Self {
        self.query.push((name.to_owned(), value.into()));
        self
    }

    /// Adds a query parameter when there is a value.
    pub fn param_opt(self, name: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(value) => self.param(name, value),
            None => self,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The query pairs borrowed, as the clients' senders take them.
    pub(crate) fn query_refs(&self) -> Vec<(&str, &str)> {
        self.query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

/// A fresh Idempotency-Key for a mutation (POST, PATCH), none for a read.
pub(crate) fn idempotency_key_for(method: &Method) -> Option<String> {
    matches!(*method, Method::POST | Method::PATCH).then(crate::new_idempotency_key)
}

pub(crate) fn to_value<B: Serialize + ?Sized>(body: &B) -> Result<Value, Error> {
    serde_json::to_value(body).map_err(|e| Error::Unexpected {
        status: 0,
        detail: format!("the request body does not serialize: {e}"),
    })
}

/// The `data` of `answer` as the wire type `T`.
pub(crate) fn typed<T: DeserializeOwned>(answer: Answer) -> Result<T, Error> {
    serde_json::from_value(answer.data).map_err(|e| Error::Unexpected {
        status: answer.status,
        detail: format!("the answer does not have the documented shape: {e}"),
    })
}

/// A surface of the API: where its routes live and how a call is authenticated and sent.
pub trait Surface: Sync {
    /// `/api/v3` or `/api/x402`.
    fn prefix(&self) -> &'static str;

    /// Sends `call` (signed, paid or proven as the surface needs; POST and PATCH with an
    /// Idempotency-Key; retried when that is safe) and unwraps the success envelope.
    fn call(&self, call: Call) -> impl Future<Output = Result<Answer, Error>> + Send;

    /// [`Self::call`], with the answer's `data` as `T`.
    fn call_typed<T: DeserializeOwned>(
        &self,
        call: Call,
    ) -> impl Future<Output = Result<T, Error>> + Send {
        async move { typed(self.call(call).await?) }
    }
}

/// What route discovery is asked: a pair and an amount, and optionally the wallet that would
/// execute onchain cards.
#[derive(Debug, Clone, Default)]
pub struct RoutesQuery {
    pub from_ccy: String,
    pub to_ccy: String,
    pub amount: String,
    pub direction: Option<Direction>,
    pub rate_type: Option<RateType>,
    pub wallet_address: Option<String>,
    pub wallet_chain_namespace: Option<String>,
    /// Where a cross-chain route pays, when not the wallet.
    pub recipient_address: Option<String>,
    /// Only this provider's cards.
    pub provider: Option<String>,
    /// How usable cards are ordered (`best` by default: docs/market.md, "Ranking").
    pub sort: Option<RouteSort>,
}

impl RoutesQuery {
    pub fn new(from_ccy: &str, to_ccy: &str, amount: &str) -> Self {
        Self {
            from_ccy: from_ccy.to_owned(),
            to_ccy: to_ccy.to_owned(),
            amount: amount.to_owned(),
            ..Self::default()
        }
    }

    /// For onchain cards executable by `wallet`.
    pub fn wallet(mut self, wallet: &str) -> Self {
        self.wallet_address = Some(wallet.to_owned());
        self
    }

    pub fn recipient(mut self, recipient: &str) -> Self {
        self.recipient_address = Some(recipient.to_owned());
        self
    }

    fn call(&self) -> Call {
        Call::get("/routes")
            .param("fromCcy", &self.from_ccy)
            .param("toCcy", &self.to_ccy)
            .param("amount", &self.amount)
            .param_opt("direction", self.direction.map(wire_name))
            .param_opt("type", self.rate_type.map(wire_name))
            .param_opt("walletAddress", self.wallet_address.clone())
            .param_opt("walletChainNamespace", self.wallet_chain_namespace.clone())
            .param_opt("recipientAddress", self.recipient_address.clone())
            .param_opt("provider", self.provider.clone())
            .param_opt("sort", self.sort.map(wire_name))
    }
}

/// How an enum is spelled on the wire (`from`, `fixed`, …).
fn wire_name<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn order_path(order_id: &str, rest: &str) -> String {
    format!("/orders/{}{rest}", encode_segment(order_id))
}

/// An id as one path segment (ids are `[a-z_0-9]`; anything else is escaped, not interpreted).
pub(crate) fn encode_segment(id: &str) -> String {
    swapd_types::signing::encode_component(id)
}

/// The typed calls of both surfaces. Bring it into scope: `use swapd_client::SwapApi;`.
///
/// ```no_run
/// # async fn demo() -> Result<(), swapd_client::Error> {
/// use swapd_client::{BusinessClient, Credentials, RoutesQuery, SwapApi};
/// use swapd_client::orders::OrderInput;
///
/// let client = BusinessClient::new("http://127.0.0.1:8080", Credentials::new("key_…", "sec_…"))?;
/// let routes = client.routes(&RoutesQuery::new("BTC", "USDTTRC", "0.05")).await?;
/// let best = routes.routes.first().and_then(|card| card.route_quote_id.clone()).unwrap();
/// let token = client.resolve_route(&best).await?;
/// let order = client
///     .create_order(&OrderInput {
///         create_token: Some(token.create_token),
///         to_address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".into(),
///         ..OrderInput::default()
///     })
///     .await?;
/// println!("send {} {} to {}", order.from.amount, order.from.code, order.from.deposit_address);
/// # Ok(())
/// # }
/// ```
pub trait SwapApi: Surface {
    /// `GET /currencies`: every currency with its network, precision and limits.
    fn currencies(&self) -> impl Future<Output = Result<Catalog, Error>> + Send {
        self.call_typed(Call::get("/currencies"))
    }

    /// `GET /providers`: each provider's availability and what its finished swaps showed.
    fn providers(&self) -> impl Future<Output = Result<Scorecards, Error>> + Send {
        self.call_typed(Call::get("/providers"))
    }

    /// `GET /tokens/popular`, optionally on one chain.
    fn popular_tokens(
        &self,
        chain: Option<&str>,
    ) -> impl Future<Output = Result<TokenList, Error>> + Send {
        self.call_typed(Call::get("/tokens/popular").param_opt("chain", chain))
    }

    /// `GET /tokens/search`: tokens whose symbol or name matches `q`.
    fn search_tokens(
        &self,
        q: &str,
        chain: Option<&str>,
        limit: Option<u32>,
    ) -> impl Future<Output = Result<TokenList, Error>> + Send {
        self.call_typed(
            Call::get("/tokens/search")
                .param("q", q)
                .param_opt("chain", chain)
                .param_opt("limit", limit.map(|l| l.to_string())),
        )
    }

    /// `GET /tokens/by-address`.
    fn token_by_address(
        &self,
        chain: &str,
        address: &str,
    ) -> impl Future<Output = Result<Token, Error>> + Send {
        self.call_typed(
            Call::get("/tokens/by-address")
                .param("chain", chain)
                .param("address", address),
        )
    }

    /// `GET /tokens/logo`.
    fn token_logo(
        &self,
        chain: &str,
        address: &str,
    ) -> impl Future<Output = Result<TokenLogo, Error>> + Send {
        self.call_typed(
            Call::get("/tokens/logo")
                .param("chain", chain)
                .param("address", address),
        )
    }

    /// `POST /quotes`: the legacy best offchain quote.
    fn quote(&self, input: &QuoteInput) -> impl Future<Output = Result<Quote, Error>> + Send {
        let call = Call::post("/quotes", input);
        async move { self.call_typed(call?).await }
    }

    /// `GET /routes`: every route for a pair and amount, offchain and onchain, best first.
    fn routes(&self, query: &RoutesQuery) -> impl Future<Output = Result<Routes, Error>> + Send {
        self.call_typed(query.call())
    }

    /// `POST /routes/resolve`: locks an offchain card's terms into a `createToken`.
    fn resolve_route(
        &self,
        route_quote_id: &str,
    ) -> impl Future<Output = Result<Resolved, Error>> + Send {
        let call = Call::post(
            "/routes/resolve",
            &ResolveInput {
                route_quote_id: route_quote_id.to_owned(),
            },
        );
        async move { self.call_typed(call?).await }
    }

    /// `POST /orders`: from a `createToken`, or from a pair and an amount.
    fn create_order(
        &self,
        input: &OrderInput,
    ) -> impl Future<Output = Result<OrderView, Error>> + Send {
        let call = Call::post("/orders", input);
        async move { self.call_typed(call?).await }
    }

    /// `GET /orders/{orderId}`.
    fn order(&self, order_id: &str) -> impl Future<Output = Result<OrderView, Error>> + Send {
        self.call_typed(Call::get(order_path(order_id, "")))
    }

    /// `POST /orders/{orderId}/emergency`: EXCHANGE or REFUND after a deposit was judged off.
    fn emergency(
        &self,
        order_id: &str,
        input: &EmergencyInput,
    ) -> impl Future<Output = Result<OrderView, Error>> + Send {
        let call = Call::post(order_path(order_id, "/emergency"), input);
        async move { self.call_typed(call?).await }
    }

    /// `POST /orders/{orderId}/refund`: while the deposit has not been exchanged.
    fn refund(
        &self,
        order_id: &str,
        input: &RefundInput,
    ) -> impl Future<Output = Result<OrderView, Error>> + Send {
        let call = Call::post(order_path(order_id, "/refund"), input);
        async move { self.call_typed(call?).await }
    }

    /// `POST /orders/{orderId}/notifications/email`: status e-mails to `email`.
    fn notify_email(
        &self,
        order_id: &str,
        email: &str,
    ) -> impl Future<Output = Result<OrderView, Error>> + Send {
        let call = Call::post(
            order_path(order_id, "/notifications/email"),
            &EmailInput {
                email: email.to_owned(),
            },
        );
        async move { self.call_typed(call?).await }
    }

    /// `GET /orders/{orderId}/qr`: the deposit's QR codes (PNG, base64).
    fn deposit_qr(&self, order_id: &str) -> impl Future<Output = Result<DepositQr, Error>> + Send {
        self.call_typed(Call::get(order_path(order_id, "/qr")))
    }

    /// `POST /onchain/routes/resolve`: an onchain card's execution plan, with the access token
    /// that scopes [`Self::report_execution`] and [`Self::execution`] to it.
    fn resolve_onchain(
        &self,
        input: &OnchainResolveInput,
    ) -> impl Future<Output = Result<ExecutionPlanView, Error>> + Send {
        let call = Call::post("/onchain/routes/resolve", input);
        async move { self.call_typed(call?).await }
    }

    /// `POST /onchain/executions`: reports the wallet's transaction hash or signatures.
    fn report_execution(
        &self,
        access_token: &str,
        report: &ExecutionReportInput,
    ) -> impl Future<Output = Result<ExecutionView, Error>> + Send {
        let call = Call::post("/onchain/executions", report)
            .map(|call| call.header(ACCESS_TOKEN_HEADER, access_token));
        async move { self.call_typed(call?).await }
    }

    /// `GET /onchain/executions/{executionPlanId}`: where the execution stands.
    fn execution(
        &self,
        execution_plan_id: &str,
        access_token: &str,
    ) -> impl Future<Output = Result<ExecutionView, Error>> + Send {
        self.call_typed(
            Call::get(format!(
                "/onchain/executions/{}",
                encode_segment(execution_plan_id)
            ))
            .header(ACCESS_TOKEN_HEADER, access_token),
        )
    }
}

impl<S: Surface> SwapApi for S {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_queries_spell_enums_as_the_wire_does() {
        let mut query = RoutesQuery::new("BTC", "ETH", "1").wallet("0xabc");
        query.direction = Some(Direction::To);
        query.rate_type = Some(RateType::Float);
        let call = query.call();
        assert!(call.query.contains(&("direction".into(), "to".into())));
        assert!(call.query.contains(&("type".into(), "float".into())));
        assert!(
            call.query
                .contains(&("walletAddress".into(), "0xabc".into()))
        );
        assert!(!call.query.iter().any(|(name, _)| name == "provider"));
    }

    #[test]
    fn ids_cannot_walk_out_of_their_path_segment() {
        assert_eq!(order_path("../webhooks", "/qr"), "/orders/..%2Fwebhooks/qr");
    }
}

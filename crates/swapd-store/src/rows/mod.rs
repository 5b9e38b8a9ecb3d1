//! Rows as the database holds them, and their conversion to and from domain values: columns
//! here, JSON bodies through their records (`order`, `route`, `plan`, with `fee`), parsed
//! once by `stored`.

mod fee;
pub(crate) mod order;
pub(crate) mod plan;
pub(crate) mod route;
pub(crate) mod stored;

use swapd_core::StoreError;
use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, RateLimits};
use swapd_core::idempotency::{Record, RecordState, StoredResponse};
use swapd_core::rate_limit::RateState;
use swapd_types::Permission;

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ApiKeyRow {
    pub id: String,
    pub name: String,
    pub permissions: String,
    pub ip_allow: String,
    pub origins: String,
    pub per_minute: i64,
    pub per_hour: i64,
    pub weight_per_hour: i64,
    pub status: String,
    pub sealed_secret: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    pub markup_bps: i64,
    pub markup_recipient: Option<String>,
}

/// The `api_keys` columns in [`ApiKeyRow`] order.
pub(crate) const API_KEY_COLUMNS: &str = "id, name, permissions, ip_allow, origins, per_minute, \
     per_hour, weight_per_hour, status, sealed_secret, created_at, revoked_at, markup_bps, \
     markup_recipient";

impl ApiKeyRow {
    pub fn from_domain(key: &ApiKey) -> Self {
        let policy = &key.policy;
        let limits = policy.limits();
        Self {
            id: key.id.clone(),
            name: policy.name().to_owned(),
            permissions: join(policy.permissions().iter().map(|p| p.as_str()), " "),
            ip_allow: join(policy.ip_allow().iter().map(ToString::to_string), ","),
            origins: policy.origins().join(" "),
            per_minute: limits.per_minute.into(),
            per_hour: limits.per_hour.into(),
            weight_per_hour: limits.weight_per_hour.into(),
            status: key.status.as_str().to_owned(),
            sealed_secret: key.sealed_secret.clone(),
            created_at: key.created_at_ms,
            revoked_at: key.revoked_at_ms,
            markup_bps: policy.markup_bps().into(),
            markup_recipient: policy
                .markup()
                .recipient
                .map(|address| address.to_checksum(None)),
        }
    }

    pub fn into_domain(self) -> Result<ApiKey, StoreError> {
        let corrupt = |what: String| StoreError::Corrupt(format!("api key {}: {what}", self.id));
        let permissions = split(&self.permissions, ' ')
            .map(Permission::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(e.to_string()))?;
        let ip_allow: Vec<String> = split(&self.ip_allow, ',').map(str::to_owned).collect();
        let origins: Vec<String> = split(&self.origins, ' ').map(str::to_owned).collect();
        let limit = |value: i64| u32::try_from(value).map_err(|_| corrupt("limit".into()));
        let limits = RateLimits {
            per_minute: limit(self.per_minute)?,
            per_hour: limit(self.per_hour)?,
            weight_per_hour: limit(self.weight_per_hour)?,
        };
        let markup_bps = u32::try_from(self.markup_bps).map_err(|_| corrupt("markup".into()))?;
        let mut policy = ApiKeyPolicy::new(&self.name, permissions, &ip_allow, &origins, limits)
            .map_err(|e| corrupt(e.to_string()))?
            .with_markup_bps(markup_bps);
        if let Some(recipient) = &self.markup_recipient {
            policy = policy
                .with_markup_recipient(recipient)
                .map_err(|e| corrupt(e.to_string()))?;
        }
        let status = self
            .status
            .parse()
            .map_err(|_| corrupt(format!("unknown key status `{}`", self.status)))?;
        Ok(ApiKey {
            id: self.id,
            policy,
            status,
            sealed_secret: self.sealed_secret,
            created_at_ms: self.created_at,
            revoked_at_ms: self.revoked_at,
        })
    }
}

fn join<I: IntoIterator<Item = S>, S: AsRef<str>>(items: I, separator: &str) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(separator)
}

fn split(text: &str, separator: char) -> impl Iterator<Item = &str> {
    text.split(separator).filter(|s| !s.is_empty())
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RateRow {
    pub tat_us: i64,
    pub window_start_ms: i64,
    pub hour_count: i64,
    pub hour_weight: i64,
}

impl RateRow {
    pub fn into_state(self) -> Result<RateState, StoreError> {
        let count = |value: i64| {
            u32::try_from(value).map_err(|_| StoreError::Corrupt("rate-limit counter".into()))
        };
        Ok(RateState {
            tat_us: self.tat_us,
            window_start_ms: self.window_start_ms,
            hour_count: count(self.hour_count)?,
            hour_weight: count(self.hour_weight)?,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct IdempotencyRow {
    pub fingerprint: String,
    pub lease_token: Option<String>,
    pub lease_until: Option<i64>,
    pub status: Option<i64>,
    pub body: Option<Vec<u8>>,
    pub expires_at: i64,
}

impl IdempotencyRow {
    pub fn into_record(self) -> Result<Record, StoreError> {
        let state = match (self.lease_token, self.lease_until, self.status, self.body) {
            (Some(lease_token), Some(lease_until_ms), None, None) => RecordState::InFlight {
                lease_token,
                lease_until_ms,
            },
            (None, None, Some(status), Some(body)) => RecordState::Done(StoredResponse {
                status: u16::try_from(status)
                    .map_err(|_| StoreError::Corrupt("idempotency status".into()))?,
                body: crate::packed::unpack(&body)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?
                    .into_owned(),
            }),
            _ => return Err(StoreError::Corrupt("idempotency record state".into())),
        };
        Ok(Record {
            fingerprint: self.fingerprint,
            expires_at_ms: self.expires_at,
            state,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SubscriptionRow {
    pub id: String,
    pub owner: String,
    pub url: String,
    pub events: String,
    pub description: Option<String>,
    pub status: String,
    pub disabled_reason: Option<String>,
    pub secret_sealed: String,
    pub previous_secret_sealed: Option<String>,
    pub previous_secret_expires_at: Option<i64>,
    pub failing_since: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub version: i64,
}

/// The `webhook_subscriptions` columns in [`SubscriptionRow`] order.
pub(crate) const SUBSCRIPTION_COLUMNS: &str = "id, owner, url, events, description, status, \
     disabled_reason, secret_sealed, previous_secret_sealed, previous_secret_expires_at, \
     failing_since, created_at, updated_at, version";

impl SubscriptionRow {
    pub fn into_domain(
        self,
    ) -> Result<swapd_core::webhooks::subscription::Subscription, StoreError> {
        use swapd_core::offchain::order::EventType;
        use swapd_core::webhooks::subscription::{Subscription, SubscriptionStatus};
        let corrupt =
            |what: String| StoreError::Corrupt(format!("subscription {}: {what}", self.id));
        let events = split(&self.events, ',')
            .map(|name| {
                name.parse::<EventType>()
                    .map_err(|_| corrupt(format!("event {name}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let status = self
            .status
            .parse::<SubscriptionStatus>()
            .map_err(|_| corrupt(format!("status {}", self.status)))?;
        Ok(Subscription {
            id: stored::id_of(&self.id)?,
            owner: stored::owner_of(&self.owner)?,
            url: self.url,
            events,
            description: self.description,
            status,
            disabled_reason: self.disabled_reason,
            secret_sealed: self.secret_sealed,
            previous_secret_sealed: self.previous_secret_sealed,
            previous_secret_expires_at_ms: self.previous_secret_expires_at,
            failing_since_ms: self.failing_since,
            created_at_ms: self.created_at,
            updated_at_ms: self.updated_at,
            version: self.version,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct JobRow {
    pub id: String,
    pub owner: String,
    pub kind: String,
    pub request: String,
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub attempts: i64,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub payment: Option<String>,
}

/// The `market_jobs` columns in [`JobRow`] order.
pub(crate) const JOB_COLUMNS: &str = "id, owner, kind, request, status, result, error, attempts, \
     created_at, started_at, finished_at, payment";

impl JobRow {
    pub fn from_domain(job: &swapd_core::market_intel::Job) -> Result<Self, StoreError> {
        use crate::codec::encode_json;
        Ok(Self {
            id: job.id.to_string(),
            owner: job.owner.scope(),
            kind: job.request.kind().into(),
            request: encode_json(&job.request)?,
            status: status_text(job.status).into(),
            result: job.result.as_ref().map(encode_json).transpose()?,
            error: job.error.as_ref().map(encode_json).transpose()?,
            attempts: i64::from(job.attempts),
            created_at: job.created_at_ms,
            started_at: job.started_at_ms,
            finished_at: job.finished_at_ms,
            payment: job.payment.as_ref().map(encode_json).transpose()?,
        })
    }

    pub fn into_domain(self) -> Result<swapd_core::market_intel::Job, StoreError> {
        use crate::codec::decode_json as decode;
        use swapd_types::market_intel::JobStatus;
        let corrupt = |what: &str| StoreError::Corrupt(format!("job {}: {what}", self.id));
        let status = match self.status.as_str() {
            "queued" => JobStatus::Queued,
            "running" => JobStatus::Running,
            "succeeded" => JobStatus::Succeeded,
            "failed" => JobStatus::Failed,
            other => return Err(corrupt(&format!("status {other}"))),
        };
        Ok(swapd_core::market_intel::Job {
            request: decode(&self.request)?,
            status,
            result: self.result.as_deref().map(decode).transpose()?,
            error: self.error.as_deref().map(decode).transpose()?,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            created_at_ms: self.created_at,
            started_at_ms: self.started_at,
            finished_at_ms: self.finished_at,
            payment: self.payment.as_deref().map(decode).transpose()?,
            id: stored::id_of(&self.id)?,
            owner: stored::owner_of(&self.owner)?,
        })
    }
}

fn status_text(status: swapd_types::market_intel::JobStatus) -> &'static str {
    use swapd_types::market_intel::JobStatus;
    match status {
        JobStatus::Queued => "queued",
        JobStatus::Running => "running",
        JobStatus::Succeeded => "succeeded",
        JobStatus::Failed => "failed",
    }
}

#[cfg(test)]
mod stored_bodies {
    //! Bodies written by swapd before aggregates held typed values (the fixture's
    //! `written_by`) read into today's aggregates, and written back byte for byte the same
    //! JSON: the stored shape did not change.

    use serde_json::Value;
    use swapd_core::market::routes::RouteQuote;
    use swapd_core::offchain::order::Order;
    use swapd_core::onchain::plan::ExecutionPlan;

    use crate::codec::Body;

    const FIXTURE: &str = include_str!("../../tests/fixtures/bodies-2026-11-28.json");

    fn bodies(table: &str) -> Vec<Value> {
        let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
        let rows = fixture[table].as_array().unwrap().clone();
        assert!(!rows.is_empty(), "the fixture has {table}");
        rows
    }

    /// Every body of `table` reads as a `T` and writes back as it was.
    fn round_trip<T: Body>(table: &str) -> Vec<T> {
        bodies(table)
            .into_iter()
            .map(|stored| {
                let record: T::Record = serde_json::from_value(stored.clone()).unwrap();
                let value = T::from_record(record).unwrap_or_else(|e| panic!("{table}: {e}"));
                let written = serde_json::to_value(value.to_record()).unwrap();
                assert_eq!(written, stored, "{table} written back differently");
                value
            })
            .collect()
    }

    #[test]
    fn orders_and_desk_books_written_before_read_and_write_back_the_same() {
        let orders: Vec<Order> = round_trip("orders");
        assert!(orders.iter().any(|o| o.emergency.is_some()));
        assert!(orders.iter().any(|o| o.deposits.len() > 1));
        assert!(
            orders
                .iter()
                .any(|o| o.fees.iter().any(|f| f.rate.is_some()))
        );
        assert!(orders.iter().any(|o| o.email.is_some()));
        let books: Vec<Order> = round_trip("sandbox_exchanges");
        assert!(books.iter().all(|b| b.owner.scope().starts_with("desk:")));
    }

    #[test]
    fn plans_route_quotes_and_create_tokens_written_before_read_and_write_back_the_same() {
        let plans: Vec<ExecutionPlan> = round_trip("execution_plans");
        assert!(plans.iter().any(|p| p.fees_realized.is_some()));
        let quotes: Vec<RouteQuote> = round_trip("route_quotes");
        assert!(quotes.iter().any(|q| q.wallet_address.is_some()));
        round_trip::<RouteQuote>("create_tokens");
    }
}

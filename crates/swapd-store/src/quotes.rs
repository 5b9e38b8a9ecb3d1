//! Route quotes, createTokens and served rates.

use swapd_core::StoreError;
use swapd_core::market::routes::{CreateTokenRecord, RedeemError, RouteQuote};
use swapd_core::store::{IdempotentFinish, QuoteStore, RateObservation};

use swapd_core::ids::RouteQuoteId;
use swapd_core::owner::Owner;

use crate::codec::{decode_body, encode_body};
use crate::map_sqlx_error;
use crate::packed::Stored;
use crate::sql::{SqlStore, Tx, built};

/// Inside a write transaction: redeems a createToken (see `Store::redeem_create_token`); the
/// caller commits on success.
pub(crate) async fn redeem_in(
    store: &SqlStore,
    tx: &mut Tx,
    hash: &str,
    owner: &Owner,
    now_ms: i64,
) -> Result<Result<CreateTokenRecord, RedeemError>, StoreError> {
    let owner_scope = owner.scope();
    let row: Option<(String, Stored, i64, i64, Option<i64>)> = sqlx::query_as(store.locking(
        "SELECT owner, route, created_at, expires_at, used_at FROM create_tokens \
         WHERE token_hash = $1",
    ))
    .bind(hash)
    .fetch_optional(&mut **tx)
    .await
    .map_err(map_sqlx_error)?;
    Ok(match row {
        None => Err(RedeemError::NotFound),
        Some((stored_owner, _, _, _, _)) if stored_owner != owner_scope => {
            Err(RedeemError::NotFound)
        }
        Some((_, _, _, _, Some(_))) => Err(RedeemError::Used),
        Some((_, _, _, expires_at_ms, None)) if now_ms >= expires_at_ms => {
            Err(RedeemError::Expired)
        }
        Some((_, route, created_at_ms, expires_at_ms, None)) => {
            sqlx::query("UPDATE create_tokens SET used_at = $2 WHERE token_hash = $1")
                .bind(hash)
                .bind(now_ms)
                .execute(&mut **tx)
                .await
                .map_err(map_sqlx_error)?;
            Ok(CreateTokenRecord {
                token_hash: hash.to_owned(),
                owner: owner.clone(),
                route: decode_body(&route)?,
                created_at_ms,
                expires_at_ms,
                used_at_ms: Some(now_ms),
            })
        }
    })
}

#[async_trait::async_trait]
impl QuoteStore for SqlStore {
    async fn save_route_quotes(&self, quotes: &[RouteQuote]) -> Result<(), StoreError> {
        if quotes.is_empty() {
            return Ok(());
        }
        let bodies = quotes
            .iter()
            .map(|quote| encode_body(quote).map(|body| (quote, body)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut insert = sqlx::query(built(format!(
            "INSERT INTO route_quotes (id, owner, body, created_at, expires_at) VALUES {}",
            self.values(bodies.len(), 5)
        )));
        for (quote, body) in bodies {
            insert = insert
                .bind(quote.id.as_str())
                .bind(quote.owner.scope())
                .bind(body)
                .bind(quote.created_at_ms)
                .bind(quote.expires_at_ms);
        }
        self.write_one(insert).await.map(drop)
    }

    async fn route_quote(
        &self,
        id: &RouteQuoteId,
        owner: &Owner,
    ) -> Result<Option<RouteQuote>, StoreError> {
        self.body(
            sqlx::query_scalar("SELECT body FROM route_quotes WHERE id = $1 AND owner = $2")
                .bind(id.as_str())
                .bind(owner.scope()),
        )
        .await
    }

    async fn issue_create_token(
        &self,
        token: &CreateTokenRecord,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError> {
        let route = encode_body(&token.route)?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO create_tokens (token_hash, owner, route_quote_id, route, created_at, \
             expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&token.token_hash)
        .bind(token.owner.scope())
        .bind(token.route.id.as_str())
        .bind(route)
        .bind(token.created_at_ms)
        .bind(token.expires_at_ms)
        .bind(token.used_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        self.commit(tx, Some(finish), &[]).await
    }

    async fn create_token(
        &self,
        token_hash: &str,
        owner: &Owner,
    ) -> Result<Option<CreateTokenRecord>, StoreError> {
        let row: Option<(Stored, i64, i64, Option<i64>)> = sqlx::query_as(
            "SELECT route, created_at, expires_at, used_at FROM create_tokens \
             WHERE token_hash = $1 AND owner = $2",
        )
        .bind(token_hash)
        .bind(owner.scope())
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        row.map(|(route, created_at_ms, expires_at_ms, used_at_ms)| {
            Ok(CreateTokenRecord {
                token_hash: token_hash.to_owned(),
                owner: owner.clone(),
                route: decode_body(&route)?,
                created_at_ms,
                expires_at_ms,
                used_at_ms,
            })
        })
        .transpose()
    }

    async fn redeem_create_token(
        &self,
        token_hash: &str,
        owner: &Owner,
        now_ms: i64,
    ) -> Result<Result<CreateTokenRecord, RedeemError>, StoreError> {
        let mut tx = self.write_tx().await?;
        let redeemed = redeem_in(self, &mut tx, token_hash, owner, now_ms).await?;
        if redeemed.is_ok() {
            tx.commit().await.map_err(map_sqlx_error)?;
        }
        Ok(redeemed)
    }

    async fn record_rates(&self, observations: &[RateObservation]) -> Result<(), StoreError> {
        if observations.is_empty() {
            return Ok(());
        }
        let mut insert = sqlx::query(built(format!(
            "INSERT INTO rate_observations (pair, observed_at, rate, provider) VALUES {}",
            self.values(observations.len(), 4)
        )));
        for o in observations {
            insert = insert
                .bind(&o.pair)
                .bind(o.observed_at_ms)
                .bind(&o.rate)
                .bind(&o.provider);
        }
        self.write_one(insert).await.map(drop)
    }

    async fn rates(
        &self,
        pair: &str,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<RateObservation>, StoreError> {
        let rows: Vec<(String, i64, String, String)> = sqlx::query_as(
            "SELECT pair, observed_at, rate, provider FROM rate_observations \
             WHERE pair = $1 AND observed_at >= $2 AND observed_at < $3 \
             ORDER BY observed_at LIMIT $4",
        )
        .bind(pair)
        .bind(since_ms)
        .bind(until_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        Ok(rows
            .into_iter()
            .map(|(pair, observed_at_ms, rate, provider)| RateObservation {
                pair,
                observed_at_ms,
                rate,
                provider,
            })
            .collect())
    }
}

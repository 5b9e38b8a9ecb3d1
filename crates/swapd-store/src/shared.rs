//! The `impl Store` of both backends. The SQL is the same on SQLite and PostgreSQL wherever the
//! dialects agree, so there is one text of each query (sqlx binds `$N` placeholders on both
//! drivers); the methods that differ are passed in by the backend module.

macro_rules! store_impl {
    ($store:ty, $backend:literal, lock = $lock:literal, skip_locked = $skip_locked:literal, { $($backend_methods:tt)* }) => {
        #[async_trait::async_trait]
        impl swapd_core::Store for $store {
        fn backend(&self) -> &'static str {
            $backend
        }

        async fn migrate(&self) -> Result<(), StoreError> {
            MIGRATOR
                .run(&self.pool)
                .await
                .map_err(|e| StoreError::Database(format!("migration failed: {e}")))
        }

        $($backend_methods)*

        async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)
        }

        async fn ping(&self) -> Result<(), StoreError> {
            sqlx::query_scalar::<_, i32>("SELECT 1")
                .fetch_one(&self.pool)
                .await
                .map(drop)
                .map_err(map_sqlx_error)
        }

        async fn insert_api_key(&self, key: &ApiKey) -> Result<(), StoreError> {
            let row = ApiKeyRow::from_domain(key);
            sqlx::query(concat!(
                "INSERT INTO api_keys (",
                api_key_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
            ))
            .bind(row.id)
            .bind(row.name)
            .bind(row.permissions)
            .bind(row.ip_allow)
            .bind(row.origins)
            .bind(row.per_minute)
            .bind(row.per_hour)
            .bind(row.weight_per_hour)
            .bind(row.status)
            .bind(row.sealed_secret)
            .bind(row.created_at)
            .bind(row.revoked_at)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
        }

        async fn api_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "SELECT ",
                api_key_columns!(),
                " FROM api_keys WHERE id = $1"
            ))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(ApiKeyRow::into_domain)
            .transpose()
        }

        async fn list_api_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "SELECT ",
                api_key_columns!(),
                " FROM api_keys ORDER BY created_at, id"
            ))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .into_iter()
            .map(ApiKeyRow::into_domain)
            .collect()
        }

        async fn remember_nonce(
            &self,
            key_id: &str,
            nonce: &str,
            expires_at_ms: i64,
        ) -> Result<bool, StoreError> {
            let inserted = sqlx::query(
                "INSERT INTO nonces (key_id, nonce, expires_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (key_id, nonce) DO NOTHING",
            )
            .bind(key_id)
            .bind(nonce)
            .bind(expires_at_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(inserted.rows_affected() == 1)
        }

        async fn purge_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
            let mut purged = 0;
            let retained = now_ms - swapd_core::store::EXPIRED_RETENTION_MS;
            for (statement, cutoff) in [
                ("DELETE FROM nonces WHERE expires_at <= $1", now_ms),
                ("DELETE FROM nonce_log WHERE expires_at <= $1", now_ms),
                ("DELETE FROM idempotency_keys WHERE expires_at <= $1", now_ms),
                ("DELETE FROM route_quotes WHERE expires_at <= $1", retained),
                ("DELETE FROM create_tokens WHERE expires_at <= $1", retained),
                ("DELETE FROM siwx_nonces WHERE expires_at <= $1", retained),
            ] {
                purged += sqlx::query(statement)
                    .bind(cutoff)
                    .execute(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?
                    .rows_affected();
            }
            Ok(purged)
        }

        async fn remember_nonces(&self, batch: &[NonceRecord]) -> Result<(), StoreError> {
            let mut tx = self.write_tx().await?;
            // Multi-row inserts: one statement per 1 000 nonces (3 parameters each, well within
            // both databases' parameter limits).
            for chunk in batch.chunks(1_000) {
                sqlx::QueryBuilder::new("INSERT INTO nonce_log (key_id, nonce, expires_at) ")
                    .push_values(chunk, |mut row, record| {
                        row.push_bind(&record.key_id)
                            .push_bind(&record.nonce)
                            .push_bind(record.expires_at_ms);
                    })
                    .push(" ON CONFLICT DO NOTHING")
                    .build()
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
            }
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn live_nonces(&self, now_ms: i64) -> Result<Vec<NonceRecord>, StoreError> {
            let rows: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT key_id, nonce, expires_at FROM nonce_log WHERE expires_at > $1",
            )
            .bind(now_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(rows
                .into_iter()
                .map(|(key_id, nonce, expires_at_ms)| NonceRecord {
                    key_id,
                    nonce,
                    expires_at_ms,
                })
                .collect())
        }

        async fn consume_rate(
            &self,
            key_id: &str,
            limits: RateLimits,
            cost: u32,
            now_ms: i64,
        ) -> Result<RateDecision, StoreError> {
            let mut tx = self.write_tx().await?;
            sqlx::query(
                "INSERT INTO rate_limits (key_id, tat_us, window_start_ms, hour_count, hour_weight) \
                 VALUES ($1, 0, 0, 0, 0) ON CONFLICT (key_id) DO NOTHING",
            )
            .bind(key_id)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let row: RateRow = sqlx::query_as(concat!(
                "SELECT tat_us, window_start_ms, hour_count, hour_weight FROM rate_limits ",
                "WHERE key_id = $1",
                $lock
            ))
            .bind(key_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let decision = rate_limit::decide(row.into_state()?, limits, cost, now_ms);
            if decision.refused_by.is_none() {
                let state = decision.state;
                sqlx::query(
                    "UPDATE rate_limits SET tat_us = $2, window_start_ms = $3, hour_count = $4, \
                     hour_weight = $5 WHERE key_id = $1",
                )
                .bind(key_id)
                .bind(state.tat_us)
                .bind(state.window_start_ms)
                .bind(i64::from(state.hour_count))
                .bind(i64::from(state.hour_weight))
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(decision)
        }

        async fn rate_state(&self, key_id: &str) -> Result<RateState, StoreError> {
            let row: Option<RateRow> = sqlx::query_as(
                "SELECT tat_us, window_start_ms, hour_count, hour_weight FROM rate_limits \
                 WHERE key_id = $1",
            )
            .bind(key_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            row.map_or(Ok(RateState::default()), RateRow::into_state)
        }

        async fn begin_idempotent(
            &self,
            principal: &str,
            key: &str,
            fingerprint: &str,
            lease_token: &str,
            now_ms: i64,
        ) -> Result<Begin, StoreError> {
            // Two first attempts may both find no row; the loser of the insert race retries
            // and then sees the winner's record.
            for _ in 0..3 {
                let mut tx = self.write_tx().await?;
                let existing: Option<IdempotencyRow> = sqlx::query_as(concat!(
                    "SELECT fingerprint, lease_token, lease_until, status, body, expires_at ",
                    "FROM idempotency_keys WHERE principal = $1 AND idem_key = $2",
                    $lock
                ))
                .bind(principal)
                .bind(key)
                .fetch_optional(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
                let existing = existing.map(IdempotencyRow::into_record).transpose()?;
                let record = match idempotency::plan(existing.as_ref(), fingerprint, lease_token, now_ms) {
                    idempotency::Plan::Answer(answer) => return Ok(answer),
                    idempotency::Plan::Claim(record) => record,
                };
                let idempotency::RecordState::InFlight { lease_until_ms, .. } = record.state else {
                    unreachable!("a claim is always in flight");
                };
                let statement = if existing.is_some() {
                    "UPDATE idempotency_keys SET fingerprint = $3, lease_token = $4, \
                     lease_until = $5, status = NULL, body = NULL, created_at = $6, expires_at = $7 \
                     WHERE principal = $1 AND idem_key = $2"
                } else {
                    "INSERT INTO idempotency_keys (principal, idem_key, fingerprint, lease_token, \
                     lease_until, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                };
                let written = sqlx::query(statement)
                    .bind(principal)
                    .bind(key)
                    .bind(&record.fingerprint)
                    .bind(lease_token)
                    .bind(lease_until_ms)
                    .bind(now_ms)
                    .bind(record.expires_at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error);
                match written {
                    Ok(_) => {}
                    Err(StoreError::Conflict(_)) => continue,
                    Err(other) => return Err(other),
                }
                match tx.commit().await.map_err(map_sqlx_error) {
                    Ok(()) => {
                        return Ok(Begin::Execute {
                            lease_token: lease_token.to_owned(),
                        })
                    }
                    Err(StoreError::Conflict(_)) => continue,
                    Err(other) => return Err(other),
                }
            }
            Err(StoreError::Unavailable(
                "idempotency record is contended; retry".into(),
            ))
        }

        async fn finish_idempotent(
            &self,
            principal: &str,
            key: &str,
            lease_token: &str,
            response: &StoredResponse,
        ) -> Result<bool, StoreError> {
            let done = sqlx::query(
                "UPDATE idempotency_keys SET status = $4, body = $5, lease_token = NULL, \
                 lease_until = NULL WHERE principal = $1 AND idem_key = $2 AND lease_token = $3",
            )
            .bind(principal)
            .bind(key)
            .bind(lease_token)
            .bind(i64::from(response.status))
            .bind(&response.body)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(done.rows_affected() == 1)
        }

        async fn release_idempotent(
            &self,
            principal: &str,
            key: &str,
            lease_token: &str,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "DELETE FROM idempotency_keys WHERE principal = $1 AND idem_key = $2 \
                 AND lease_token = $3",
            )
            .bind(principal)
            .bind(key)
            .bind(lease_token)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
        }

        async fn save_route_quotes(&self, quotes: &[RouteQuote]) -> Result<(), StoreError> {
            if quotes.is_empty() {
                return Ok(());
            }
            let bodies = quotes
                .iter()
                .map(|quote| encode_json(quote).map(|body| (quote, body)))
                .collect::<Result<Vec<_>, _>>()?;
            sqlx::QueryBuilder::new(
                "INSERT INTO route_quotes (id, owner, body, created_at, expires_at) ",
            )
            .push_values(&bodies, |mut row, (quote, body)| {
                row.push_bind(&quote.id)
                    .push_bind(&quote.owner)
                    .push_bind(body)
                    .push_bind(quote.created_at_ms)
                    .push_bind(quote.expires_at_ms);
            })
            .build()
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
        }

        async fn route_quote(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<Option<RouteQuote>, StoreError> {
            let body: Option<String> =
                sqlx::query_scalar("SELECT body FROM route_quotes WHERE id = $1 AND owner = $2")
                    .bind(id)
                    .bind(owner)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?;
            body.map(|body| decode_json(&body)).transpose()
        }

        async fn issue_create_token(
            &self,
            token: &CreateTokenRecord,
            finish: IdempotentFinish<'_>,
        ) -> Result<(), StoreError> {
            let route = encode_json(&token.route)?;
            let mut tx = self.write_tx().await?;
            sqlx::query(
                "INSERT INTO create_tokens (token_hash, owner, route_quote_id, route, created_at, \
                 expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&token.token_hash)
            .bind(&token.owner)
            .bind(&token.route.id)
            .bind(route)
            .bind(token.created_at_ms)
            .bind(token.expires_at_ms)
            .bind(token.used_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn create_token(
            &self,
            token_hash: &str,
            owner: &str,
        ) -> Result<Option<CreateTokenRecord>, StoreError> {
            let row: Option<(String, i64, i64, Option<i64>)> = sqlx::query_as(
                "SELECT route, created_at, expires_at, used_at FROM create_tokens \
                 WHERE token_hash = $1 AND owner = $2",
            )
            .bind(token_hash)
            .bind(owner)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            row.map(|(route, created_at_ms, expires_at_ms, used_at_ms)| {
                Ok(CreateTokenRecord {
                    token_hash: token_hash.to_owned(),
                    owner: owner.to_owned(),
                    route: decode_json(&route)?,
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
            owner: &str,
            now_ms: i64,
        ) -> Result<Result<CreateTokenRecord, RedeemError>, StoreError> {
            let mut tx = self.write_tx().await?;
            let redeemed = redeem_in!(tx, $lock, token_hash, owner, now_ms);
            if redeemed.is_ok() {
                tx.commit().await.map_err(map_sqlx_error)?;
            }
            Ok(redeemed)
        }

        async fn create_order(
            &self,
            order: &Order,
            events: &[OrderEvent],
            create_token_hash: Option<&str>,
            finish: IdempotentFinish<'_>,
        ) -> Result<Result<(), RedeemError>, StoreError> {
            let body = encode_json(order)?;
            let mut tx = self.write_tx().await?;
            if let Some(hash) = create_token_hash {
                if let Err(refused) = redeem_in!(tx, $lock, hash, &order.owner, order.created_at_ms) {
                    return Ok(Err(refused));
                }
            }
            sqlx::query(
                "INSERT INTO orders (id, owner, status, version, body, create_token_hash, \
                 created_at, updated_at, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&order.id)
            .bind(&order.owner)
            .bind(order.status.as_str())
            .bind(order.version)
            .bind(body)
            .bind(create_token_hash)
            .bind(order.created_at_ms)
            .bind(order.updated_at_ms)
            .bind(order.next_check_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            insert_events_in!(tx, events);
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(Ok(()))
        }

        async fn order(&self, id: &str, owner: &str) -> Result<Option<Order>, StoreError> {
            let body: Option<String> =
                sqlx::query_scalar("SELECT body FROM orders WHERE id = $1 AND owner = $2")
                    .bind(id)
                    .bind(owner)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?;
            body.map(|body| decode_json(&body)).transpose()
        }

        async fn update_order(
            &self,
            order: &Order,
            events: &[OrderEvent],
        ) -> Result<bool, StoreError> {
            let body = encode_json(order)?;
            let mut tx = self.write_tx().await?;
            let updated = sqlx::query(
                "UPDATE orders SET status = $2, version = $3, body = $4, updated_at = $5, \
                 next_check_at = $7 WHERE id = $1 AND version = $6",
            )
            .bind(&order.id)
            .bind(order.status.as_str())
            .bind(order.version)
            .bind(body)
            .bind(order.updated_at_ms)
            .bind(order.version - 1)
            .bind(order.next_check_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            if updated.rows_affected() != 1 {
                return Ok(false);
            }
            insert_events_in!(tx, events);
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(true)
        }

        async fn due_orders(&self, now_ms: i64, limit: u32) -> Result<Vec<Order>, StoreError> {
            let bodies: Vec<String> = sqlx::query_scalar(
                "SELECT body FROM orders WHERE next_check_at <= $1 ORDER BY next_check_at LIMIT $2",
            )
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            bodies.iter().map(|body| decode_json(body)).collect()
        }

        async fn insert_execution_plan(
            &self,
            plan: &ExecutionPlan,
            finish: IdempotentFinish<'_>,
        ) -> Result<(), StoreError> {
            let body = encode_json(plan)?;
            let mut tx = self.write_tx().await?;
            sqlx::query(
                "INSERT INTO execution_plans (id, owner, resolve_key, status, version, body, \
                 created_at, updated_at, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&plan.id)
            .bind(&plan.owner)
            .bind(&plan.resolve_key)
            .bind(plan.status.as_str())
            .bind(plan.version)
            .bind(body)
            .bind(plan.created_at_ms)
            .bind(plan.updated_at_ms)
            .bind(plan.next_check_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn execution_plan_for(
            &self,
            owner: &str,
            resolve_key: &str,
        ) -> Result<Option<ExecutionPlan>, StoreError> {
            let body: Option<String> = sqlx::query_scalar(
                "SELECT body FROM execution_plans WHERE owner = $1 AND resolve_key = $2",
            )
            .bind(owner)
            .bind(resolve_key)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            body.map(|body| decode_json(&body)).transpose()
        }

        async fn execution_plan(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<Option<ExecutionPlan>, StoreError> {
            let body: Option<String> =
                sqlx::query_scalar("SELECT body FROM execution_plans WHERE id = $1 AND owner = $2")
                    .bind(id)
                    .bind(owner)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?;
            body.map(|body| decode_json(&body)).transpose()
        }

        async fn update_execution_plan(
            &self,
            plan: &ExecutionPlan,
            finish: Option<IdempotentFinish<'_>>,
        ) -> Result<bool, StoreError> {
            let body = encode_json(plan)?;
            let mut tx = self.write_tx().await?;
            let updated = sqlx::query(
                "UPDATE execution_plans SET status = $2, version = $3, body = $4, updated_at = $5, \
                 next_check_at = $7 WHERE id = $1 AND version = $6",
            )
            .bind(&plan.id)
            .bind(plan.status.as_str())
            .bind(plan.version)
            .bind(body)
            .bind(plan.updated_at_ms)
            .bind(plan.version - 1)
            .bind(plan.next_check_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            if updated.rows_affected() != 1 {
                return Ok(false);
            }
            if let Some(finish) = finish {
                finish_idempotent_in!(tx, finish);
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(true)
        }

        async fn due_execution_plans(
            &self,
            now_ms: i64,
            limit: u32,
        ) -> Result<Vec<ExecutionPlan>, StoreError> {
            let bodies: Vec<String> = sqlx::query_scalar(
                "SELECT body FROM execution_plans WHERE next_check_at <= $1 \
                 ORDER BY next_check_at LIMIT $2",
            )
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            bodies.iter().map(|body| decode_json(body)).collect()
        }

        async fn insert_subscription(
            &self,
            subscription: &Subscription,
            finish: IdempotentFinish<'_>,
        ) -> Result<(), StoreError> {
            let mut tx = self.write_tx().await?;
            sqlx::query(concat!(
                "INSERT INTO webhook_subscriptions (",
                subscription_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            ))
            .bind(&subscription.id)
            .bind(&subscription.owner)
            .bind(&subscription.url)
            .bind(subscription.events_column())
            .bind(&subscription.description)
            .bind(subscription.status.as_str())
            .bind(&subscription.disabled_reason)
            .bind(&subscription.secret_sealed)
            .bind(&subscription.previous_secret_sealed)
            .bind(subscription.previous_secret_expires_at_ms)
            .bind(subscription.failing_since_ms)
            .bind(subscription.created_at_ms)
            .bind(subscription.updated_at_ms)
            .bind(subscription.version)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn subscriptions(&self, owner: &str) -> Result<Vec<Subscription>, StoreError> {
            sqlx::query_as::<_, SubscriptionRow>(concat!(
                "SELECT ",
                subscription_columns!(),
                " FROM webhook_subscriptions WHERE owner = $1 ORDER BY created_at, id"
            ))
            .bind(owner)
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .into_iter()
            .map(SubscriptionRow::into_domain)
            .collect()
        }

        async fn subscription(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<Option<Subscription>, StoreError> {
            sqlx::query_as::<_, SubscriptionRow>(concat!(
                "SELECT ",
                subscription_columns!(),
                " FROM webhook_subscriptions WHERE id = $1 AND owner = $2"
            ))
            .bind(id)
            .bind(owner)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(SubscriptionRow::into_domain)
            .transpose()
        }

        async fn update_subscription(
            &self,
            subscription: &Subscription,
            finish: Option<IdempotentFinish<'_>>,
        ) -> Result<bool, StoreError> {
            let mut tx = self.write_tx().await?;
            let updated = sqlx::query(
                "UPDATE webhook_subscriptions SET url = $3, events = $4, description = $5, \
                 status = $6, disabled_reason = $7, secret_sealed = $8, \
                 previous_secret_sealed = $9, previous_secret_expires_at = $10, \
                 failing_since = $11, updated_at = $12, version = $13 \
                 WHERE id = $1 AND owner = $2 AND version = $14",
            )
            .bind(&subscription.id)
            .bind(&subscription.owner)
            .bind(&subscription.url)
            .bind(subscription.events_column())
            .bind(&subscription.description)
            .bind(subscription.status.as_str())
            .bind(&subscription.disabled_reason)
            .bind(&subscription.secret_sealed)
            .bind(&subscription.previous_secret_sealed)
            .bind(subscription.previous_secret_expires_at_ms)
            .bind(subscription.failing_since_ms)
            .bind(subscription.updated_at_ms)
            .bind(subscription.version)
            .bind(subscription.version - 1)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            if updated.rows_affected() != 1 {
                return Ok(false);
            }
            if let Some(finish) = finish {
                finish_idempotent_in!(tx, finish);
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(true)
        }

        async fn claim_deliveries(
            &self,
            now_ms: i64,
            lease_token: &str,
            lease_until_ms: i64,
            limit: u32,
        ) -> Result<Vec<ClaimedDelivery>, StoreError> {
            let mut tx = self.write_tx().await?;
            let claimed: Vec<(String, i64, String, String)> = sqlx::query_as(concat!(
                "UPDATE webhook_deliveries SET lease_token = $1, lease_until = $2 WHERE id IN (",
                "SELECT id FROM webhook_deliveries WHERE status = 'pending' ",
                "AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until <= $3) ",
                "ORDER BY next_attempt_at LIMIT $4",
                $skip_locked,
                ") RETURNING id, attempts, event_id, subscription_id"
            ))
            .bind(lease_token)
            .bind(lease_until_ms)
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let mut subscriptions: std::collections::HashMap<String, Subscription> =
                std::collections::HashMap::new();
            let mut deliveries = Vec::with_capacity(claimed.len());
            for (delivery_id, attempts, event_id, subscription_id) in claimed {
                if !subscriptions.contains_key(&subscription_id) {
                    let row = sqlx::query_as::<_, SubscriptionRow>(concat!(
                        "SELECT ",
                        subscription_columns!(),
                        " FROM webhook_subscriptions WHERE id = $1"
                    ))
                    .bind(&subscription_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
                    subscriptions.insert(subscription_id.clone(), row.into_domain()?);
                }
                let (payload, row): (Option<Vec<u8>>, EventRow) = {
                    let row: PayloadRow = sqlx::query_as(concat!(
                        "SELECT payload, ",
                        event_columns!(),
                        " FROM order_events WHERE id = $1"
                    ))
                    .bind(&event_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
                    let (payload, id, order_id, owner, sequence, event_type, data, created_at, email) = row;
                    (payload, (id, order_id, owner, sequence, event_type, data, created_at, email))
                };
                // Events written before payloads were stored get theirs from the same function.
                let payload = match payload {
                    Some(bytes) => bytes,
                    None => swapd_core::webhooks::event_payload(&event_from_row(row)?),
                };
                deliveries.push(ClaimedDelivery {
                    delivery_id,
                    lease_token: lease_token.to_owned(),
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    event_id,
                    payload,
                    subscription: subscriptions[&subscription_id].clone(),
                });
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(deliveries)
        }

        async fn record_attempt(&self, record: &AttemptRecord) -> Result<bool, StoreError> {
            let after = &record.after;
            let mut tx = self.write_tx().await?;
            let updated = sqlx::query(
                "UPDATE webhook_deliveries SET status = $3, attempts = $4, next_attempt_at = $5, \
                 lease_token = NULL, lease_until = NULL, last_status_code = $6, last_error = $7, \
                 last_latency_ms = $8, last_attempt_at = $9, updated_at = $10 \
                 WHERE id = $1 AND lease_token = $2",
            )
            .bind(&record.delivery_id)
            .bind(&record.lease_token)
            .bind(after.status.as_str())
            .bind(i64::from(record.attempt))
            .bind(after.next_attempt_at_ms)
            .bind(record.status_code.map(i64::from))
            .bind(&record.error)
            .bind(record.latency_ms)
            .bind(record.started_at_ms)
            .bind(record.finished_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            if updated.rows_affected() != 1 {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO webhook_attempts (delivery_id, attempt, subscription_id, started_at, \
                 status_code, latency_ms, error, next_attempt_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&record.delivery_id)
            .bind(i64::from(record.attempt))
            .bind(&record.subscription_id)
            .bind(record.started_at_ms)
            .bind(record.status_code.map(i64::from))
            .bind(record.latency_ms)
            .bind(&record.error)
            .bind(after.next_attempt_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let streak = if after.status == DeliveryStatus::Succeeded {
                "UPDATE webhook_subscriptions SET failing_since = NULL \
                 WHERE id = $1 AND failing_since IS NOT NULL"
            } else {
                "UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, $2) \
                 WHERE id = $1"
            };
            let mut streak = sqlx::query(streak).bind(&record.subscription_id);
            if after.status != DeliveryStatus::Succeeded {
                streak = streak.bind(record.started_at_ms);
            }
            streak
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            if let Some(reason) = &after.disable_subscription {
                sqlx::query(
                    "UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = $2, \
                     updated_at = $3, version = version + 1 WHERE id = $1 AND status = 'active'",
                )
                .bind(&record.subscription_id)
                .bind(reason)
                .bind(record.finished_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(true)
        }

        async fn replay_events(
            &self,
            owner: &str,
            selection: &ReplaySelection,
            types: &[EventType],
        ) -> Result<Vec<(String, EventType)>, StoreError> {
            let rows: Vec<(String, String)> = match selection {
                ReplaySelection::Event(id) => sqlx::query_as(
                    "SELECT id, event_type FROM order_events WHERE id = $1 AND owner = $2",
                )
                .bind(id)
                .bind(owner)
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)?,
                ReplaySelection::Window {
                    since_ms,
                    until_ms,
                    limit,
                } => {
                    if types.is_empty() {
                        return Ok(Vec::new());
                    }
                    let mut query = sqlx::QueryBuilder::new(
                        "SELECT id, event_type FROM order_events WHERE owner = ",
                    );
                    query
                        .push_bind(owner)
                        .push(" AND created_at >= ")
                        .push_bind(*since_ms)
                        .push(" AND created_at < ")
                        .push_bind(*until_ms)
                        .push(" AND event_type IN (");
                    let mut separated = query.separated(", ");
                    for event_type in types {
                        separated.push_bind(event_type.as_str());
                    }
                    query
                        .push(") ORDER BY created_at, order_id, sequence LIMIT ")
                        .push_bind(i64::from(*limit));
                    query
                        .build_query_as()
                        .fetch_all(&self.pool)
                        .await
                        .map_err(map_sqlx_error)?
                }
            };
            rows.into_iter()
                .map(|(id, event_type)| {
                    event_type.parse::<EventType>().ok()
                        .map(|t| (id, t))
                        .ok_or_else(|| StoreError::Corrupt(format!("unknown event type {event_type}")))
                })
                .collect()
        }

        async fn queue_deliveries(
            &self,
            deliveries: &[QueuedDelivery],
            finish: IdempotentFinish<'_>,
        ) -> Result<(), StoreError> {
            let mut tx = self.write_tx().await?;
            for delivery in deliveries {
                sqlx::query(
                    "INSERT INTO webhook_deliveries (id, subscription_id, event_id, owner, kind, \
                     status, attempts, next_attempt_at, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, 'replay', 'pending', 0, $5, $5, $5)",
                )
                .bind(&delivery.id)
                .bind(&delivery.subscription_id)
                .bind(&delivery.event_id)
                .bind(&delivery.owner)
                .bind(delivery.created_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            }
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn deliveries(
            &self,
            subscription_id: &str,
            owner: &str,
            limit: u32,
        ) -> Result<Vec<Delivery>, StoreError> {
            let rows: Vec<DeliveryRow> = sqlx::query_as(
                "SELECT id, subscription_id, event_id, kind, status, attempts, next_attempt_at, \
                 last_status_code, last_error, last_latency_ms, created_at \
                 FROM webhook_deliveries WHERE subscription_id = $1 AND owner = $2 \
                 ORDER BY created_at DESC, id LIMIT $3",
            )
            .bind(subscription_id)
            .bind(owner)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            let mut deliveries = Vec::with_capacity(rows.len());
            for row in rows {
                let (id, subscription_id, event_id, kind, status, attempts, next, code, error, latency, created) = row;
                let log: Vec<(i64, i64, Option<i64>, i64, Option<String>, Option<i64>)> = sqlx::query_as(
                    "SELECT attempt, started_at, status_code, latency_ms, error, next_attempt_at \
                     FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt",
                )
                .bind(&id)
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                deliveries.push(Delivery {
                    status: status.parse::<DeliveryStatus>().ok()
                        .ok_or_else(|| StoreError::Corrupt(format!("delivery status {status}")))?,
                    id,
                    subscription_id,
                    event_id,
                    kind,
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    next_attempt_at_ms: next,
                    last_status_code: code.and_then(|c| u16::try_from(c).ok()),
                    last_error: error,
                    last_latency_ms: latency,
                    created_at_ms: created,
                    log: log
                        .into_iter()
                        .map(|(attempt, started, code, latency, error, next)| Attempt {
                            attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                            started_at_ms: started,
                            status_code: code.and_then(|c| u16::try_from(c).ok()),
                            latency_ms: latency,
                            error,
                            next_attempt_at_ms: next,
                        })
                        .collect(),
                });
            }
            Ok(deliveries)
        }

        async fn record_x402_settlement(
            &self,
            settlement: &X402Settlement,
        ) -> Result<bool, StoreError> {
            let inserted = sqlx::query(
                "INSERT INTO x402_settlements (payer, nonce, amount, pay_to, asset, network, \
                 tx_hash, settled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (payer, nonce) DO NOTHING",
            )
            .bind(&settlement.payer)
            .bind(&settlement.nonce)
            .bind(&settlement.amount)
            .bind(&settlement.pay_to)
            .bind(&settlement.asset)
            .bind(&settlement.network)
            .bind(&settlement.transaction)
            .bind(settlement.settled_at_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(inserted.rows_affected() == 1)
        }

        async fn x402_settlement(
            &self,
            payer: &str,
            nonce: &str,
        ) -> Result<Option<X402Settlement>, StoreError> {
            let row: Option<(String, String, String, String, String, String, String, i64)> =
                sqlx::query_as(
                    "SELECT payer, nonce, amount, pay_to, asset, network, tx_hash, settled_at \
                     FROM x402_settlements WHERE payer = $1 AND nonce = $2",
                )
                .bind(payer)
                .bind(nonce)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
            Ok(row.map(
                |(payer, nonce, amount, pay_to, asset, network, transaction, settled_at_ms)| {
                    X402Settlement {
                        payer,
                        nonce,
                        amount,
                        pay_to,
                        asset,
                        network,
                        transaction,
                        settled_at_ms,
                    }
                },
            ))
        }

        async fn claim_x402_payment(
            &self,
            payer: &str,
            nonce: &str,
            resource: &str,
            now_ms: i64,
        ) -> Result<bool, StoreError> {
            let inserted = sqlx::query(
                "INSERT INTO x402_payment_claims (payer, nonce, resource, claimed_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (payer, nonce) DO NOTHING",
            )
            .bind(payer)
            .bind(nonce)
            .bind(resource)
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(inserted.rows_affected() == 1)
        }

        async fn release_x402_payment(&self, payer: &str, nonce: &str) -> Result<(), StoreError> {
            sqlx::query("DELETE FROM x402_payment_claims WHERE payer = $1 AND nonce = $2")
                .bind(payer)
                .bind(nonce)
                .execute(&self.pool)
                .await
                .map(drop)
                .map_err(map_sqlx_error)
        }

        async fn issue_siwx_nonce(&self, nonce: &str, expires_at_ms: i64) -> Result<(), StoreError> {
            sqlx::query("INSERT INTO siwx_nonces (nonce, expires_at) VALUES ($1, $2)")
                .bind(nonce)
                .bind(expires_at_ms)
                .execute(&self.pool)
                .await
                .map(drop)
                .map_err(map_sqlx_error)
        }

        async fn check_siwx_nonce(
            &self,
            nonce: &str,
            now_ms: i64,
            consume: bool,
        ) -> Result<bool, StoreError> {
            if consume {
                let used = sqlx::query(
                    "UPDATE siwx_nonces SET used_at = $2 \
                     WHERE nonce = $1 AND used_at IS NULL AND expires_at > $2",
                )
                .bind(nonce)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                return Ok(used.rows_affected() == 1);
            }
            let live: Option<i64> = sqlx::query_scalar(
                "SELECT expires_at FROM siwx_nonces \
                 WHERE nonce = $1 AND used_at IS NULL AND expires_at > $2",
            )
            .bind(nonce)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(live.is_some())
        }

        async fn consume_window(
            &self,
            key: &str,
            window_ms: i64,
            limit: u32,
            now_ms: i64,
        ) -> Result<WindowDecision, StoreError> {
            let start = now_ms - now_ms.rem_euclid(window_ms.max(1));
            let mut tx = self.write_tx().await?;
            sqlx::query(
                "INSERT INTO x402_windows (window_key, window_start, used) VALUES ($1, $2, 0) \
                 ON CONFLICT (window_key) DO NOTHING",
            )
            .bind(key)
            .bind(start)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let (stored_start, used): (i64, i64) = sqlx::query_as(concat!(
                "SELECT window_start, used FROM x402_windows WHERE window_key = $1",
                $lock
            ))
            .bind(key)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let used = if stored_start == start { used } else { 0 };
            let used = u32::try_from(used).unwrap_or(u32::MAX);
            let allowed = used < limit;
            if allowed {
                sqlx::query(
                    "UPDATE x402_windows SET window_start = $2, used = $3 WHERE window_key = $1",
                )
                .bind(key)
                .bind(start)
                .bind(i64::from(used + 1))
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            }
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(WindowDecision {
                allowed,
                limit,
                used: if allowed { used + 1 } else { used },
                resets_at_ms: start + window_ms,
            })
        }

        async fn insert_job(&self, job: &Job, finish: IdempotentFinish<'_>) -> Result<(), StoreError> {
            let row = JobRow::from_domain(job)?;
            let mut tx = self.write_tx().await?;
            sqlx::query(concat!(
                "INSERT INTO market_jobs (",
                job_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            ))
            .bind(row.id)
            .bind(row.owner)
            .bind(row.kind)
            .bind(row.request)
            .bind(row.status)
            .bind(row.result)
            .bind(row.error)
            .bind(row.attempts)
            .bind(row.created_at)
            .bind(row.started_at)
            .bind(row.finished_at)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            finish_idempotent_in!(tx, finish);
            tx.commit().await.map_err(map_sqlx_error)
        }

        async fn job(&self, id: &str, owner: &str) -> Result<Option<Job>, StoreError> {
            sqlx::query_as::<_, JobRow>(concat!(
                "SELECT ",
                job_columns!(),
                " FROM market_jobs WHERE id = $1 AND owner = $2"
            ))
            .bind(id)
            .bind(owner)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(JobRow::into_domain)
            .transpose()
        }

        async fn claim_jobs(
            &self,
            now_ms: i64,
            lease_token: &str,
            lease_until_ms: i64,
            limit: u32,
        ) -> Result<Vec<Job>, StoreError> {
            let mut tx = self.write_tx().await?;
            let rows = sqlx::query_as::<_, JobRow>(concat!(
                "UPDATE market_jobs SET status = 'running', lease_token = $1, lease_until = $2, ",
                "attempts = attempts + 1, started_at = COALESCE(started_at, $3) WHERE id IN (",
                "SELECT id FROM market_jobs WHERE status = 'queued' ",
                "OR (status = 'running' AND lease_until <= $3) ORDER BY created_at LIMIT $4",
                $skip_locked,
                ") RETURNING ",
                job_columns!()
            ))
            .bind(lease_token)
            .bind(lease_until_ms)
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            tx.commit().await.map_err(map_sqlx_error)?;
            rows.into_iter().map(JobRow::into_domain).collect()
        }

        async fn finish_job(
            &self,
            id: &str,
            lease_token: &str,
            outcome: &JobOutcome,
            now_ms: i64,
        ) -> Result<bool, StoreError> {
            let (status, result, error) = match outcome {
                JobOutcome::Succeeded(result) => ("succeeded", Some(encode_json(result)?), None),
                JobOutcome::Failed(error) => ("failed", None, Some(encode_json(error)?)),
            };
            let done = sqlx::query(
                "UPDATE market_jobs SET status = $3, result = $4, error = $5, finished_at = $6, \
                 lease_token = NULL, lease_until = NULL \
                 WHERE id = $1 AND lease_token = $2 AND status = 'running'",
            )
            .bind(id)
            .bind(lease_token)
            .bind(status)
            .bind(result)
            .bind(error)
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(done.rows_affected() == 1)
        }

        async fn record_rates(&self, observations: &[RateObservation]) -> Result<(), StoreError> {
            if observations.is_empty() {
                return Ok(());
            }
            sqlx::QueryBuilder::new(
                "INSERT INTO rate_observations (pair, observed_at, rate, provider) ",
            )
            .push_values(observations, |mut row, o| {
                row.push_bind(&o.pair)
                    .push_bind(o.observed_at_ms)
                    .push_bind(&o.rate)
                    .push_bind(&o.provider);
            })
            .build()
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
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

        async fn sandbox_record_deposit(&self, deposit: &SandboxDeposit) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO sandbox_deposits (tx_id, address, tag, amount, confirmations, seen_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&deposit.tx_id)
            .bind(&deposit.address)
            .bind(&deposit.tag)
            .bind(&deposit.amount)
            .bind(i64::from(deposit.confirmations))
            .bind(deposit.seen_at_ms)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
        }

        async fn sandbox_deposits(
            &self,
            address: &str,
            tag: Option<&str>,
        ) -> Result<Vec<SandboxDeposit>, StoreError> {
            let rows: Vec<(String, String, Option<String>, String, i64, i64)> = sqlx::query_as(
                "SELECT tx_id, address, tag, amount, confirmations, seen_at FROM sandbox_deposits \
                 WHERE address = $1 AND COALESCE(tag, '') = COALESCE($2, '') ORDER BY seen_at, tx_id",
            )
            .bind(address)
            .bind(tag)
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(rows
                .into_iter()
                .map(|(tx_id, address, tag, amount, confirmations, seen_at_ms)| SandboxDeposit {
                    tx_id,
                    address,
                    tag,
                    amount,
                    confirmations: u32::try_from(confirmations).unwrap_or(u32::MAX),
                    seen_at_ms,
                })
                .collect())
        }

        async fn sandbox_transfer(
            &self,
            transfer: &SandboxTransfer,
        ) -> Result<SandboxTransfer, StoreError> {
            sqlx::query(
                "INSERT INTO sandbox_transfers (idem_key, tx_id, currency, address, tag, amount, \
                 created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idem_key) DO NOTHING",
            )
            .bind(&transfer.key)
            .bind(&transfer.tx_id)
            .bind(&transfer.currency)
            .bind(&transfer.address)
            .bind(&transfer.tag)
            .bind(&transfer.amount)
            .bind(transfer.created_at_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            let row: (String, String, String, String, Option<String>, String, i64) = sqlx::query_as(
                "SELECT idem_key, tx_id, currency, address, tag, amount, created_at \
                 FROM sandbox_transfers WHERE idem_key = $1",
            )
            .bind(&transfer.key)
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(transfer_from_row(row))
        }

        async fn sandbox_transfers(&self) -> Result<Vec<SandboxTransfer>, StoreError> {
            let rows: Vec<(String, String, String, String, Option<String>, String, i64)> =
                sqlx::query_as(
                    "SELECT idem_key, tx_id, currency, address, tag, amount, created_at \
                     FROM sandbox_transfers ORDER BY created_at, idem_key",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
            Ok(rows.into_iter().map(transfer_from_row).collect())
        }

        async fn order_events(&self, order_id: &str) -> Result<Vec<OrderEvent>, StoreError> {
            let rows: Vec<EventRow> = sqlx::query_as(concat!(
                "SELECT ",
                event_columns!(),
                " FROM order_events WHERE order_id = $1 ORDER BY sequence"
            ))
            .bind(order_id)
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            rows.into_iter().map(event_from_row).collect()
        }

        async fn pending_notifications(&self, limit: u32) -> Result<Vec<OrderEvent>, StoreError> {
            let rows: Vec<EventRow> = sqlx::query_as(concat!(
                "SELECT ",
                event_columns!(),
                " FROM order_events WHERE notify_email IS NOT NULL AND mailed_at IS NULL ",
                "ORDER BY created_at, order_id, sequence LIMIT $1"
            ))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            rows.into_iter().map(event_from_row).collect()
        }

        async fn mark_notified(&self, event_id: &str, now_ms: i64) -> Result<(), StoreError> {
            sqlx::query("UPDATE order_events SET mailed_at = $2 WHERE id = $1")
                .bind(event_id)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map(drop)
                .map_err(map_sqlx_error)
        }

        async fn revoke_api_key(
            &self,
            id: &str,
            now_ms: i64,
        ) -> Result<Option<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "UPDATE api_keys SET status = 'revoked', revoked_at = COALESCE(revoked_at, $2) ",
                "WHERE id = $1 RETURNING ",
                api_key_columns!()
            ))
            .bind(id)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(ApiKeyRow::into_domain)
            .transpose()
        }
        }
    };
}

/// Inside a write transaction `$tx`: completes the idempotency record of `$finish`, or fails
/// the transaction with a conflict when its lease was lost.
macro_rules! finish_idempotent_in {
    ($tx:ident, $finish:expr) => {{
        let finish: IdempotentFinish<'_> = $finish;
        let done = sqlx::query(
            "UPDATE idempotency_keys SET status = $4, body = $5, lease_token = NULL, \
             lease_until = NULL WHERE principal = $1 AND idem_key = $2 AND lease_token = $3",
        )
        .bind(finish.principal)
        .bind(finish.key)
        .bind(finish.lease_token)
        .bind(i64::from(finish.response.status))
        .bind(&finish.response.body)
        .execute(&mut *$tx)
        .await
        .map_err(map_sqlx_error)?;
        if done.rows_affected() != 1 {
            return Err(StoreError::Conflict(
                "the idempotency lease expired before the write committed".into(),
            ));
        }
    }};
}

/// Inside a write transaction `$tx`: redeems a createToken (see `Store::redeem_create_token`),
/// evaluating to `Result<CreateTokenRecord, RedeemError>`; the caller commits on success.
macro_rules! redeem_in {
    ($tx:ident, $lock:literal, $hash:expr, $owner:expr, $now:expr) => {{
        let (hash, owner, now_ms): (&str, &str, i64) = ($hash, $owner, $now);
        let row: Option<(String, String, i64, i64, Option<i64>)> = sqlx::query_as(concat!(
            "SELECT owner, route, created_at, expires_at, used_at FROM create_tokens ",
            "WHERE token_hash = $1",
            $lock
        ))
        .bind(hash)
        .fetch_optional(&mut *$tx)
        .await
        .map_err(map_sqlx_error)?;
        match row {
            None => Err(RedeemError::NotFound),
            Some((stored_owner, _, _, _, _)) if stored_owner != owner => Err(RedeemError::NotFound),
            Some((_, _, _, _, Some(_))) => Err(RedeemError::Used),
            Some((_, _, _, expires_at_ms, None)) if now_ms >= expires_at_ms => {
                Err(RedeemError::Expired)
            }
            Some((stored_owner, route, created_at_ms, expires_at_ms, None)) => {
                sqlx::query("UPDATE create_tokens SET used_at = $2 WHERE token_hash = $1")
                    .bind(hash)
                    .bind(now_ms)
                    .execute(&mut *$tx)
                    .await
                    .map_err(map_sqlx_error)?;
                Ok(CreateTokenRecord {
                    token_hash: hash.to_owned(),
                    owner: stored_owner,
                    route: decode_json(&route)?,
                    created_at_ms,
                    expires_at_ms,
                    used_at_ms: Some(now_ms),
                })
            }
        }
    }};
}

/// Inside a write transaction `$tx`: appends outbox events.
macro_rules! insert_events_in {
    ($tx:ident, $events:expr) => {{
        for event in $events {
            sqlx::query(
                "INSERT INTO order_events (id, order_id, owner, sequence, event_type, data, \
                 created_at, notify_email, payload) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&event.id)
            .bind(&event.order_id)
            .bind(&event.owner)
            .bind(event.sequence)
            .bind(event.event_type.as_str())
            .bind(encode_json(&event.data)?)
            .bind(event.created_at_ms)
            .bind(&event.notify_email)
            .bind(swapd_core::webhooks::event_payload(event))
            .execute(&mut *$tx)
            .await
            .map_err(map_sqlx_error)?;
            // The outbox fan-out: one delivery per active subscription of the owner to this
            // type, in the transaction that wrote the event, so none can be lost.
            sqlx::query(
                "INSERT INTO webhook_deliveries (id, subscription_id, event_id, owner, kind, \
                 status, attempts, next_attempt_at, created_at, updated_at) \
                 SELECT $1 || id, id, $2, owner, 'event', 'pending', 0, $3, $3, $3 \
                 FROM webhook_subscriptions WHERE owner = $4 AND status = 'active' AND events LIKE $5",
            )
            .bind(format!("{}:", event.id))
            .bind(&event.id)
            .bind(event.created_at_ms)
            .bind(&event.owner)
            .bind(swapd_core::webhooks::events_pattern(event.event_type))
            .execute(&mut *$tx)
            .await
            .map_err(map_sqlx_error)?;
        }
    }};
}

/// The columns of an outbox event, in [`EventRow`] order.
macro_rules! event_columns {
    () => {
        "id, order_id, owner, sequence, event_type, data, created_at, notify_email"
    };
}

/// A stored payload with its event's columns.
pub(crate) type PayloadRow = (
    Option<Vec<u8>>,
    String,
    String,
    String,
    i64,
    String,
    String,
    i64,
    Option<String>,
);

pub(crate) type DeliveryRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    i64,
);

pub(crate) type EventRow = (
    String,
    String,
    String,
    i64,
    String,
    String,
    i64,
    Option<String>,
);

pub(crate) fn event_from_row(
    row: EventRow,
) -> Result<swapd_core::orders::OrderEvent, swapd_core::StoreError> {
    let (id, order_id, owner, sequence, event_type, data, created_at_ms, notify_email) = row;
    Ok(swapd_core::orders::OrderEvent {
        id,
        order_id,
        owner,
        sequence,
        event_type: event_type
            .parse::<swapd_core::orders::EventType>()
            .map_err(|_| {
                swapd_core::StoreError::Corrupt(format!("unknown event type {event_type}"))
            })?,
        data: decode_json(&data)?,
        created_at_ms,
        notify_email,
    })
}

type TransferRow = (String, String, String, String, Option<String>, String, i64);

pub(crate) fn transfer_from_row(row: TransferRow) -> swapd_core::store::SandboxTransfer {
    let (key, tx_id, currency, address, tag, amount, created_at_ms) = row;
    swapd_core::store::SandboxTransfer {
        key,
        tx_id,
        currency,
        address,
        tag,
        amount,
        created_at_ms,
    }
}

/// A domain value as a JSON column.
pub(crate) fn encode_json<T: serde::Serialize>(
    value: &T,
) -> Result<String, swapd_core::StoreError> {
    serde_json::to_string(value)
        .map_err(|e| swapd_core::StoreError::Database(format!("cannot encode JSON: {e}")))
}

/// A JSON column back into its domain value.
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, swapd_core::StoreError> {
    serde_json::from_str(text)
        .map_err(|e| swapd_core::StoreError::Corrupt(format!("stored JSON: {e}")))
}

pub(crate) use {event_columns, finish_idempotent_in, insert_events_in, redeem_in, store_impl};

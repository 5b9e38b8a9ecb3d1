//! Affiliates.

use swapd_core::StoreError;
use swapd_core::affiliates::Affiliate;
use swapd_core::fees::ledger::LedgerRow;
use swapd_core::store::AffiliateStore;

use crate::ledger;
use crate::map_sqlx_error;
use crate::sql::SqlStore;

const COLUMNS: &str = "code, name, share_bps, payout, active, created_at";

#[derive(sqlx::FromRow)]
struct AffiliateRow {
    code: String,
    name: String,
    share_bps: i64,
    payout: String,
    active: i64,
    created_at: i64,
}

impl AffiliateRow {
    fn into_domain(self) -> Result<Affiliate, StoreError> {
        Ok(Affiliate {
            share_bps: u32::try_from(self.share_bps)
                .map_err(|_| StoreError::Corrupt(format!("affiliate {}: share", self.code)))?,
            code: self.code,
            name: self.name,
            payout: self.payout,
            active: self.active != 0,
            created_at_ms: self.created_at,
        })
    }
}

#[async_trait::async_trait]
impl AffiliateStore for SqlStore {
    async fn insert_affiliate(&self, affiliate: &Affiliate) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "INSERT INTO affiliates (code, name, share_bps, payout, active, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&affiliate.code)
            .bind(&affiliate.name)
            .bind(i64::from(affiliate.share_bps))
            .bind(&affiliate.payout)
            .bind(i64::from(affiliate.active))
            .bind(affiliate.created_at_ms),
        )
        .await
        .map(drop)
    }

    async fn affiliate(&self, code: &str) -> Result<Option<Affiliate>, StoreError> {
        sqlx::query_as::<_, AffiliateRow>(crate::sql::built(format!(
            "SELECT {COLUMNS} FROM affiliates WHERE code = $1"
        )))
        .bind(code)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .map(AffiliateRow::into_domain)
        .transpose()
    }

    async fn list_affiliates(&self) -> Result<Vec<Affiliate>, StoreError> {
        sqlx::query_as::<_, AffiliateRow>(crate::sql::built(format!(
            "SELECT {COLUMNS} FROM affiliates ORDER BY created_at, code"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .into_iter()
        .map(AffiliateRow::into_domain)
        .collect()
    }

    async fn set_affiliate_active(
        &self,
        code: &str,
        active: bool,
    ) -> Result<Option<Affiliate>, StoreError> {
        sqlx::query_as::<_, AffiliateRow>(crate::sql::built(format!(
            "UPDATE affiliates SET active = $2 WHERE code = $1 RETURNING {COLUMNS}"
        )))
        .bind(code)
        .bind(i64::from(active))
        .fetch_optional(&self.writer)
        .await
        .map_err(map_sqlx_error)?
        .map(AffiliateRow::into_domain)
        .transpose()
    }

    async fn affiliate_ledger(
        &self,
        code: &str,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        ledger::select(
            self,
            Some(("affiliate_code", code)),
            since_ms,
            until_ms,
            limit,
        )
        .await
    }
}

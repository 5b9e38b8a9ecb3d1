//! The sandbox chain's transfers.

use swapd_core::StoreError;
use swapd_core::store::{IdempotentFinish, SandboxChainStore, SandboxDeposit, SandboxTransfer};

use swapd_core::offchain::order::Order;

use crate::codec::encode_body;
use crate::map_sqlx_error;
use crate::sql::SqlStore;

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

#[async_trait::async_trait]
impl SandboxChainStore for SqlStore {
    async fn sandbox_record_deposit(
        &self,
        deposit: &SandboxDeposit,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
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
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        self.commit(tx, finish, &[]).await
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
            .map(
                |(tx_id, address, tag, amount, confirmations, seen_at_ms)| SandboxDeposit {
                    tx_id,
                    address,
                    tag,
                    amount,
                    confirmations: u32::try_from(confirmations).unwrap_or(u32::MAX),
                    seen_at_ms,
                },
            )
            .collect())
    }

    async fn sandbox_transfer(
        &self,
        transfer: &SandboxTransfer,
    ) -> Result<SandboxTransfer, StoreError> {
        self.write_one(
            sqlx::query(
                "INSERT INTO sandbox_transfers (idem_key, tx_id, currency, address, tag, amount, \
                 created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (idem_key) DO NOTHING",
            )
            .bind(&transfer.key)
            .bind(&transfer.tx_id)
            .bind(&transfer.currency)
            .bind(&transfer.address)
            .bind(&transfer.tag)
            .bind(&transfer.amount)
            .bind(transfer.created_at_ms),
        )
        .await?;
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

    async fn sandbox_open_exchange(&self, id: &str, book: &Order) -> Result<Order, StoreError> {
        let inserted = self
            .write_one(
                sqlx::query(
                    "INSERT INTO sandbox_exchanges (id, version, body) VALUES ($1, $2, $3) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(id)
                .bind(book.version)
                .bind(encode_body(book)?),
            )
            .await?;
        if inserted.rows_affected() == 1 {
            return Ok(book.clone());
        }
        self.sandbox_exchange(id)
            .await?
            .ok_or_else(|| StoreError::Database(format!("sandbox exchange {id} vanished")))
    }

    async fn sandbox_exchange(&self, id: &str) -> Result<Option<Order>, StoreError> {
        self.body(sqlx::query_scalar("SELECT body FROM sandbox_exchanges WHERE id = $1").bind(id))
            .await
    }

    async fn sandbox_update_exchange(&self, id: &str, book: &Order) -> Result<bool, StoreError> {
        let updated = self
            .write_one(
                sqlx::query(
                    "UPDATE sandbox_exchanges SET version = $2, body = $3 \
                     WHERE id = $1 AND version = $4",
                )
                .bind(id)
                .bind(book.version)
                .bind(encode_body(book)?)
                .bind(book.version - 1),
            )
            .await?;
        Ok(updated.rows_affected() == 1)
    }
}

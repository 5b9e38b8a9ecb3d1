//! Wire shapes of the sandbox chain's control (`POST /api/v3/sandbox/orders/{orderId}/deposit`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A simulated deposit.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"amount": "0.05", "confirmations": 1}))]
pub struct DepositInput {
    /// In the order's `fromCcy`, at most its precision.
    #[schema(schema_with = crate::schema::amount)]
    pub amount: String,
    /// Confirmations it already has (default 0); one more accrues per sandbox block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000)]
    pub confirmations: Option<u32>,
}

/// The deposit as the sandbox chain recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DepositRecorded {
    pub tx_id: String,
    pub address: String,
    pub tag: Option<String>,
    pub amount: String,
    pub confirmations: u32,
}

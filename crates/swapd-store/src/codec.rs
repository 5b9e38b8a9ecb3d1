//! Domain values stored as JSON columns: each aggregate kept whole (an order, a plan, a route
//! quote) is written and read through its record, the stored shape, so what is stored changes
//! only when a record does (`crate::rows`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use swapd_core::StoreError;

/// A domain value as a JSON column.
pub(crate) fn encode_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Database(format!("cannot encode JSON: {e}")))
}

/// A JSON column back into its domain value.
pub(crate) fn decode_json<T: DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("stored JSON: {e}")))
}

/// An aggregate kept whole as a JSON `body`, through its stored shape.
pub(crate) trait Body: Sized {
    type Record: Serialize + DeserializeOwned;

    fn to_record(&self) -> Self::Record;

    /// The aggregate of a stored record, its text parsed into typed values once, here.
    fn from_record(record: Self::Record) -> Result<Self, StoreError>;
}

pub(crate) fn encode_body<T: Body>(value: &T) -> Result<String, StoreError> {
    encode_json(&value.to_record())
}

pub(crate) fn decode_body<T: Body>(text: &str) -> Result<T, StoreError> {
    T::from_record(decode_json(text)?)
}

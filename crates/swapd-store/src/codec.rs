//! Domain values stored as JSON columns: each aggregate kept whole (an order, a plan, a route
//! quote) is written and read through its record, the stored shape, so what is stored changes
//! only when a record does (`crate::rows`). Aggregates and outbox events are stored packed
//! ([`crate::packed`]).

use serde::Serialize;
use serde::de::DeserializeOwned;
use swapd_core::StoreError;

use crate::packed::{Stored, pack};

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

/// A domain value as a packed JSON document.
pub(crate) fn encode_packed<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    Ok(pack(encode_json(value)?.as_bytes()))
}

/// A packed JSON document (or one written as text before packing) back into its value.
pub(crate) fn decode_packed<T: DeserializeOwned>(stored: &Stored) -> Result<T, StoreError> {
    serde_json::from_slice(&stored.document()?)
        .map_err(|e| StoreError::Corrupt(format!("stored JSON: {e}")))
}

pub(crate) fn encode_body<T: Body>(value: &T) -> Result<Vec<u8>, StoreError> {
    encode_packed(&value.to_record())
}

pub(crate) fn decode_body<T: Body>(stored: &Stored) -> Result<T, StoreError> {
    T::from_record(decode_packed(stored)?)
}

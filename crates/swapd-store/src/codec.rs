//! Domain values stored as JSON columns.

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

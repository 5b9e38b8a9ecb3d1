//! Receiving webhooks: [`Verifier`] checks a delivery's Standard Webhooks signature (with the
//! `standardwebhooks` reference implementation: constant-time, ±5 minutes) and reads its event.
//! The wire types of subscriptions are re-exported here too.
//!
//! ```
//! use swapd_client::webhooks::{Verifier, WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP};
//!
//! # fn handle(headers: &swapd_client::webhooks::HeaderMap, body: &[u8]) -> Result<(), swapd_client::webhooks::VerifyError> {
//! let verifier = Verifier::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
//! let event = verifier.verify(headers, body)?;
//! if let Some(order) = &event.data.order {
//!     println!("{} {}: {} → {}", event.id, event.event_type, order.order_id, order.status);
//! }
//! # Ok(())
//! # }
//! # let _ = (WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP);
//! ```

pub use http::HeaderMap;
pub use swapd_types::webhooks::*;

pub const WEBHOOK_ID: &str = "webhook-id";
pub const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
pub const WEBHOOK_SIGNATURE: &str = "webhook-signature";

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("not a webhook secret (expected whsec_ and base64): {0}")]
    Secret(String),
    /// Missing headers, a stale timestamp, or no signature made with a known secret.
    #[error("the delivery is not authentic: {0}")]
    Signature(String),
    #[error("the delivery is signed but its body is not an event: {0}")]
    Body(#[from] serde_json::Error),
}

/// Verifies deliveries signed with one or more secrets (during a rotation, add the new one
/// beside the old).
pub struct Verifier {
    secrets: Vec<standardwebhooks::Webhook>,
}

impl Verifier {
    pub fn new(secret: &str) -> Result<Self, VerifyError> {
        Self {
            secrets: Vec::new(),
        }
        .and_secret(secret)
    }

    /// Also accepts deliveries signed with `secret`.
    pub fn and_secret(mut self, secret: &str) -> Result<Self, VerifyError> {
        let secret = standardwebhooks::Webhook::new(secret)
            .map_err(|e| VerifyError::Secret(e.to_string()))?;
        self.secrets.push(secret);
        Ok(self)
    }

    /// Checks the signature over the raw `body` as received, then reads the event.
    pub fn verify(
        &self,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<WebhookEvent, VerifyError> {
        let mut last = None;
        for secret in &self.secrets {
            match secret.verify(body, headers) {
                Ok(()) => return Ok(serde_json::from_slice(body)?),
                Err(error) => last = Some(error),
            }
        }
        Err(VerifyError::Signature(
            last.map_or_else(|| "no secret".to_owned(), |e| e.to_string()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn signed(secret: &str, body: &[u8], timestamp: i64) -> http::HeaderMap {
        let signature = standardwebhooks::Webhook::new(secret)
            .unwrap()
            .sign("evt_1", timestamp, body)
            .unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert(WEBHOOK_ID, "evt_1".parse().unwrap());
        headers.insert(WEBHOOK_TIMESTAMP, timestamp.to_string().parse().unwrap());
        headers.insert(WEBHOOK_SIGNATURE, signature.parse().unwrap());
        headers
    }

    fn now() -> i64 {
        crate::now_secs()
    }

    const TEST_EVENT: &[u8] = br#"{"createdAt":1800000000,"data":{"order":null,"previousStatus":null},"id":"evt_1","sequence":0,"test":true,"type":"order.updated"}"#;

    #[test]
    fn a_signed_delivery_is_read_and_a_tampered_one_refused() {
        let verifier = Verifier::new(SECRET).unwrap();
        let headers = signed(SECRET, TEST_EVENT, now());
        let event = verifier.verify(&headers, TEST_EVENT).unwrap();
        assert!(event.test && event.sequence == 0 && event.event_type == EventType::Updated);

        let tampered = String::from_utf8_lossy(TEST_EVENT).replace("updated", "completed");
        assert!(matches!(
            verifier.verify(&headers, tampered.as_bytes()),
            Err(VerifyError::Signature(_))
        ));
        let stale = signed(SECRET, TEST_EVENT, now() - 600);
        assert!(verifier.verify(&stale, TEST_EVENT).is_err());
    }

    #[test]
    fn during_a_rotation_either_secret_verifies() {
        let new = "whsec_QmVsaWV2ZSBtZSwgdGhpcyBpcyBhIG5ldyBzZWNyZXQ=";
        let old_only = Verifier::new(SECRET).unwrap();
        let both = Verifier::new(SECRET).unwrap().and_secret(new).unwrap();
        let headers = signed(new, TEST_EVENT, now());
        assert!(old_only.verify(&headers, TEST_EVENT).is_err());
        assert!(both.verify(&headers, TEST_EVENT).is_ok());
        assert!(matches!(
            Verifier::new("not-a-secret"),
            Err(VerifyError::Secret(_))
        ));
    }
}

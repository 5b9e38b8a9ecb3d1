//! Standard Webhooks signatures (`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
//! space-separated when several secrets are valid), `whsec_` secrets, and the payload bytes
//! that are signed (docs/webhooks.md).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use swapd_types::webhooks::{EventData, WebhookEvent};

use crate::offchain::order::{EventType, OrderEvent};

/// How a signing secret is shown: this prefix and the base64 of its bytes.
pub const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;

/// A new signing secret (256 random bits), as shown to the subscriber once.
pub fn new_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The key bytes of a `whsec_` secret; `None` when it is not one.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    (!key.is_empty()).then_some(key)
}

/// One `v1,<base64>` signature of a delivery attempt.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header value: one signature per valid key (during a rotation, the
/// new secret's first), space-separated.
pub fn signature_header(keys: &[&[u8]], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| signature(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The body of a delivery, serialized once when the event is written:
/// `{id, type, createdAt, sequence, data: {order, previousStatus}}` with sorted keys.
/// `sequence` counts the order's events, so a receiver can drop a stale one.
pub fn event_payload(event: &OrderEvent) -> Vec<u8> {
    let mut order = event.data.clone();
    let previous_status = order
        .as_object_mut()
        .and_then(|fields| fields.remove("previousStatus"))
        .and_then(|status| status.as_str().map(str::to_owned));
    serde_json::to_vec(&WebhookEvent {
        created_at: event.created_at_ms / 1000,
        data: EventData {
            order: Some(order),
            previous_status,
        },
        id: event.id.to_string(),
        sequence: event.sequence,
        test: false,
        event_type: event.event_type,
    })
    .expect("JSON values serialize")
}

/// The body of a test delivery (`POST /callbacks/test`): the shape of an event, marked `test`.
pub fn test_payload(id: &str, event: EventType, now_ms: i64) -> Vec<u8> {
    serde_json::to_vec(&WebhookEvent::<serde_json::Value> {
        created_at: now_ms / 1000,
        data: EventData {
            order: None,
            previous_status: None,
        },
        id: id.to_owned(),
        sequence: 0,
        test: true,
        event_type: event,
    })
    .expect("JSON values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sequence: i64) -> OrderEvent {
        OrderEvent {
            id: "evt_00000000000000000000000000000001".parse().unwrap(),
            order_id: "ord_1".parse().unwrap(),
            owner: "key:a".parse().unwrap(),
            sequence,
            event_type: EventType::Completed,
            data: serde_json::json!({"orderId": "ord_1", "status": "completed", "previousStatus": "withdrawing"}),
            created_at_ms: 1_800_000_000_123,
            notify_email: None,
        }
    }

    #[test]
    fn payloads_are_stable_bytes_with_sorted_keys() {
        let payload = event_payload(&event(7));
        assert_eq!(
            std::str::from_utf8(&payload).unwrap(),
            r#"{"createdAt":1800000000,"data":{"order":{"orderId":"ord_1","status":"completed"},"previousStatus":"withdrawing"},"id":"evt_00000000000000000000000000000001","sequence":7,"type":"order.completed"}"#
        );
        assert_eq!(payload, event_payload(&event(7)));
        let test = test_payload("evt_t", EventType::Updated, 1_800_000_000_000);
        let test: serde_json::Value = serde_json::from_slice(&test).unwrap();
        assert_eq!(test["test"], true);
        assert_eq!(test["type"], "order.updated");
    }

    #[test]
    fn secrets_round_trip() {
        let secret = new_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(secret_key(&secret).unwrap().len(), SECRET_BYTES);
        assert_ne!(secret, new_secret());
        assert!(secret_key("whsec_").is_none());
        assert!(secret_key("sec_abc").is_none());
        assert!(secret_key("whsec_not base64!").is_none());
    }

    /// An off-the-shelf Standard Webhooks verifier accepts our signatures, alone and in a
    /// rotation list, and refuses a changed body.
    #[test]
    fn standard_webhooks_verifiers_accept_our_signatures() {
        let secret = new_secret();
        let old = new_secret();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let body = br#"{"id":"evt_1","type":"order.completed","sequence":7,"data":{}}"#;
        let keys = [secret_key(&secret).unwrap(), secret_key(&old).unwrap()];
        let header = signature_header(&[&keys[0], &keys[1]], "evt_1", now, body);
        assert_eq!(header.split(' ').count(), 2);
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "evt_1".parse().unwrap());
        headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
        headers.insert("webhook-signature", header.parse().unwrap());
        for secret in [&secret, &old] {
            let verifier = standardwebhooks::Webhook::new(secret).unwrap();
            verifier.verify(body, &headers).unwrap();
            assert!(verifier.verify(b"{}", &headers).is_err());
        }
        let stranger = standardwebhooks::Webhook::new(&new_secret()).unwrap();
        assert!(stranger.verify(body, &headers).is_err());
    }
}

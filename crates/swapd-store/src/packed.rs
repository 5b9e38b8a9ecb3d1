//! Documents as stored: every aggregate's body, every outbox event's data and every
//! idempotency record's answer is written packed, deflated against a dictionary of the shapes
//! they share (field names, statuses, an order's record, view and answer), so that what every
//! order repeats costs a few bytes (docs/benchmarks.md, "Storage"). Reads take a packed
//! document or the plain JSON text written before packing began.
//!
//! A packed document is `[0, FORMAT]` then a raw deflate stream; JSON text never starts with a
//! zero byte. [`DICTIONARY_V1`] is part of the format: changing it would misread every document
//! written with it, so a new dictionary gets a new format byte.

use std::borrow::Cow;
use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use sqlx::any::{Any, AnyTypeInfo, AnyValueRef};
use sqlx::error::BoxDynError;

/// The dictionary of format 1: samples of an order's record, its answer and its view.
const DICTIONARY_V1: &[u8] = include_bytes!("packed-v1.dict");
const FORMAT_V1: u8 = 1;
/// zlib's level 3: within 5 % of the best level's size on orders, at a fraction of its time.
const LEVEL: u32 = 3;

thread_local! {
    static PACKER: RefCell<Compress> = RefCell::new(Compress::new(Compression::new(LEVEL), false));
    static UNPACKER: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

/// `document` packed.
pub fn pack(document: &[u8]) -> Vec<u8> {
    PACKER.with_borrow_mut(|packer| {
        packer.reset();
        packer
            .set_dictionary(DICTIONARY_V1)
            .expect("a raw deflate stream takes a dictionary before its first byte");
        let mut packed = Vec::with_capacity(document.len() / 2 + 64);
        packed.extend_from_slice(&[0, FORMAT_V1]);
        loop {
            let read = usize::try_from(packer.total_in()).expect("documents fit in memory");
            let status = packer
                .compress_vec(&document[read..], &mut packed, FlushCompress::Finish)
                .expect("deflate does not fail on memory it was given");
            if status == Status::StreamEnd {
                return packed;
            }
            packed.reserve(packed.capacity().max(256));
        }
    })
}

/// The document `stored` holds: unpacked, or as it is when it was written as plain text.
pub fn unpack(stored: &[u8]) -> Result<Cow<'_, [u8]>, UnpackError> {
    match stored {
        [0, FORMAT_V1, deflated @ ..] => inflate(deflated).map(Cow::Owned),
        [0, ..] => Err(UnpackError("unknown packing format")),
        plain => Ok(Cow::Borrowed(plain)),
    }
}

fn inflate(deflated: &[u8]) -> Result<Vec<u8>, UnpackError> {
    UNPACKER.with_borrow_mut(|unpacker| {
        unpacker.reset(false);
        unpacker
            .set_dictionary(DICTIONARY_V1)
            .map_err(|_| UnpackError("dictionary refused"))?;
        let mut document = Vec::with_capacity(deflated.len() * 4 + 256);
        loop {
            let read = usize::try_from(unpacker.total_in()).expect("documents fit in memory");
            let before = (unpacker.total_in(), unpacker.total_out());
            let status = unpacker
                .decompress_vec(&deflated[read..], &mut document, FlushDecompress::Finish)
                .map_err(|_| UnpackError("corrupt deflate stream"))?;
            match status {
                Status::StreamEnd => return Ok(document),
                _ if document.len() == document.capacity() => {
                    document.reserve(document.capacity());
                }
                _ if before == (unpacker.total_in(), unpacker.total_out()) => {
                    return Err(UnpackError("truncated deflate stream"));
                }
                _ => {}
            }
        }
    })
}

/// A stored document that cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("stored document: {0}")]
pub struct UnpackError(&'static str);

/// A document column as read: a packed `BLOB`/`BYTEA`, or the `TEXT` written before packing
/// (SQLite keeps each value's own type, so one column holds both).
#[derive(Debug)]
pub(crate) struct Stored(pub Vec<u8>);

impl Stored {
    pub(crate) fn document(&self) -> Result<Cow<'_, [u8]>, swapd_core::StoreError> {
        unpack(&self.0).map_err(|e| swapd_core::StoreError::Corrupt(e.to_string()))
    }
}

impl sqlx::Type<Any> for Stored {
    fn type_info() -> AnyTypeInfo {
        <Vec<u8> as sqlx::Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <Vec<u8> as sqlx::Type<Any>>::compatible(ty) || <String as sqlx::Type<Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, Any> for Stored {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        match <Vec<u8> as sqlx::Decode<Any>>::decode(value.clone()) {
            Ok(bytes) => Ok(Self(bytes)),
            Err(_) => <String as sqlx::Decode<Any>>::decode(value).map(|text| Self(text.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORDER: &str = r#"{"id":"ord_5c1b7a0e2f9d4c3b8a6e1d0f9c8b7a65","owner":"key:key_1","status":"completed","deposits":[],"fees":[{"kind":"network","amount":"1","currency":"USDTTRC"}]}"#;

    #[test]
    fn documents_come_back_byte_for_byte_and_smaller() {
        for document in [ORDER.as_bytes(), b"", b"{}", &[b'x'; 100_000]] {
            let packed = pack(document);
            assert_eq!(&packed[..2], &[0, FORMAT_V1]);
            assert_eq!(unpack(&packed).unwrap().as_ref(), document);
        }
        assert!(pack(ORDER.as_bytes()).len() * 2 < ORDER.len());
    }

    #[test]
    fn text_written_before_packing_reads_as_it_is() {
        assert!(
            matches!(unpack(ORDER.as_bytes()).unwrap(), Cow::Borrowed(b) if b == ORDER.as_bytes())
        );
    }

    #[test]
    fn damaged_documents_are_refused_not_misread() {
        let packed = pack(ORDER.as_bytes());
        assert!(unpack(&packed[..packed.len() / 2]).is_err());
        assert!(unpack(&[0, 9, 1, 2, 3]).is_err());
        let mut flipped = packed.clone();
        flipped[4] ^= 0xff;
        assert_ne!(unpack(&flipped).ok().as_deref(), Some(ORDER.as_bytes()));
    }

    /// Rows written as JSON text before packing began (on PostgreSQL converted to bytes by
    /// migration 0024) read as they did; what is written now is packed and reads back the same.
    mod written_before {
        use std::borrow::Cow;

        use swapd_core::idempotency::{Begin, StoredResponse};
        use swapd_core::offchain::order::Order;
        use swapd_core::store::{IdempotencyStore, IdempotentFinish, KeyHold, OrderStore};

        use super::super::FORMAT_V1;
        use crate::conformance::parsed;
        use crate::test_support::{PgTestSchema, postgres_url, sample_order};
        use crate::{SqlStore, StoreOptions};

        const FIXTURE: &str = include_str!("../tests/fixtures/bodies-2026-11-28.json");
        const VIEW: &str = r#"{"orderId":"ord_afffc5f735ba48280942f4a1415db0d5","previousStatus":"withdrawing","status":"completed"}"#;
        const ANSWER: &[u8] =
            br#"{"success":true,"data":{"orderId":"ord_afffc5f735ba48280942f4a1415db0d5"}}"#;

        async fn check(url: &str) {
            let store = SqlStore::open(url, &StoreOptions::default()).await.unwrap();
            let all = store.backend.migrator();
            let before = sqlx::migrate::Migrator {
                migrations: Cow::Owned(all.iter().filter(|m| m.version < 24).cloned().collect()),
                ignore_missing: all.ignore_missing,
                locking: all.locking,
                no_tx: all.no_tx,
                table_name: all.table_name.clone(),
                create_schemas: all.create_schemas.clone(),
            };
            before.run(&store.pool).await.unwrap();
            let fixture: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
            let record = &fixture["orders"][0];
            let (id, owner) = (
                record["id"].as_str().unwrap(),
                record["owner"].as_str().unwrap(),
            );
            sqlx::query(
                "INSERT INTO orders (id, owner, status, version, body, created_at, updated_at) \
                 VALUES ($1, $2, 'completed', 14, $3, 1, 1)",
            )
            .bind(id)
            .bind(owner)
            .bind(record.to_string())
            .execute(&store.pool)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO order_events (id, order_id, owner, sequence, event_type, data, \
                 created_at) VALUES ('evt_00000000000000000000000000000001', $1, $2, 1, \
                 'order.completed', $3, 1)",
            )
            .bind(id)
            .bind(owner)
            .bind(VIEW)
            .execute(&store.pool)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO idempotency_keys (principal, idem_key, fingerprint, status, body, \
                 created_at, expires_at) VALUES ('key_1', 'k1', 'f', 201, $1, 1, $2)",
            )
            .bind(ANSWER)
            .bind(i64::MAX)
            .execute(&store.pool)
            .await
            .unwrap();
            swapd_core::store::Maintenance::migrate(&store)
                .await
                .unwrap();

            let order = store
                .order(&parsed(id), &parsed(owner))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                serde_json::to_value(crate::codec::Body::to_record(&order)).unwrap(),
                *record
            );
            let events = store.order_events(&parsed(id)).await.unwrap();
            assert_eq!(
                events[0].data,
                serde_json::from_str::<serde_json::Value>(VIEW).unwrap()
            );
            let replay = store
                .begin_idempotent("key_1", "k1", "f", "lease", "node", 2)
                .await
                .unwrap();
            assert_eq!(
                replay,
                Begin::Replay(StoredResponse {
                    status: 201,
                    body: ANSWER.to_vec()
                })
            );

            // Written now: packed, a fraction of the text, and read back the same.
            let new: Order = sample_order("ord_packed", "key:key_1", 1_800_000_000_000);
            let mut order = new.clone();
            let events =
                [order.record_event(swapd_core::offchain::order::EventType::Created, None)];
            let response = StoredResponse {
                status: 201,
                body: ANSWER.to_vec(),
            };
            let finish = IdempotentFinish {
                principal: "key_1",
                key: "k2",
                hold: KeyHold::AtCommit {
                    fingerprint: "f",
                    now_ms: 2,
                },
                response: &response,
            };
            store
                .create_order(&order, &events, None, finish)
                .await
                .unwrap()
                .unwrap();
            let (body, data): (Vec<u8>, Vec<u8>) = sqlx::query_as(
                "SELECT o.body, e.data FROM orders o JOIN order_events e ON e.order_id = o.id \
                 WHERE o.id = 'ord_packed'",
            )
            .fetch_one(&store.pool)
            .await
            .unwrap();
            let text = crate::codec::encode_json(&crate::codec::Body::to_record(&order)).unwrap();
            assert_eq!(&body[..2], &[0, FORMAT_V1]);
            assert!(
                body.len() * 2 < text.len(),
                "{} of {}",
                body.len(),
                text.len()
            );
            assert_eq!(&data[..2], &[0, FORMAT_V1]);
            assert_eq!(
                store
                    .order(&parsed("ord_packed"), &parsed("key:key_1"))
                    .await
                    .unwrap(),
                Some(order)
            );
            assert_eq!(
                store.order_events(&parsed("ord_packed")).await.unwrap(),
                events
            );
            let replay = store
                .begin_idempotent("key_1", "k2", "f", "l", "n", 3)
                .await
                .unwrap();
            assert_eq!(replay, Begin::Replay(response));
            swapd_core::store::Maintenance::close(&store).await;
        }

        #[tokio::test]
        async fn on_sqlite() {
            let dir = tempfile::tempdir().unwrap();
            check(&format!(
                "sqlite://{}",
                dir.path().join("swapd.db").display()
            ))
            .await;
        }

        #[tokio::test]
        async fn on_postgres() {
            let Some(url) = postgres_url() else { return };
            let schema = PgTestSchema::create(&url).await;
            check(&schema.database_url()).await;
        }
    }
}

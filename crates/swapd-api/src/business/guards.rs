//! What Business API authentication keeps between requests: a short-lived cache of API keys
//! and of the origins they list, the restart rule for signatures, and the limits' state
//! ([`crate::limits`]: nonces, rate cells, windows), which it reaches through its ports.
//!
//! A single node on SQLite keeps nonces and rate limits in memory, so a signed read never waits
//! for a durable write; nonces are persisted in batches (and on graceful shutdown) and reloaded
//! at start. After an unclean stop, requests signed before the restart are refused too, so
//! replays fail across restarts and crashes. Several nodes share the state through Redis when it
//! is configured, else through the database; with Redis, a revoked key also leaves every node's
//! cache at once (docs/operations.md, "Several nodes").

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use swapd_core::api_keys::ApiKey;
use swapd_core::rate_limit::{Quota, RateDecision};
use swapd_core::secrets::MasterKey;
pub use swapd_core::store::NonceOutcome;
use swapd_core::{Clock, Store, StoreError};
use swapd_redis::Revoked;
use tokio_util::sync::CancellationToken;

use swapd_core::api_keys::KEY_CACHE_TTL_MS;

use crate::limits::{Limits, NonceLimits, Sharing};

const KEY_CACHE_MAX: usize = 10_000;

/// An active or revoked key with its opened secret, ready to verify signatures.
pub struct CachedKey {
    pub key: ApiKey,
    pub verifier: swapd_types::signing::Verifier,
}

pub struct Guards {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    master_key: MasterKey,
    limits: Arc<Limits>,
    /// Set after an unclean stop: requests signed before this restart are refused.
    refuse_signed_before: Option<i64>,
    keys: Mutex<HashMap<String, (Arc<CachedKey>, i64)>>,
    origins: Mutex<Option<(Arc<HashSet<String>>, i64)>>,
}

impl Guards {
    /// Builds the guards over the limits' state `sharing` chooses (on one node, reloading the
    /// nonces persisted by earlier runs). `after_unclean_stop` says the previous process did not
    /// shut down gracefully, so it may have accepted nonces it never flushed.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        master_key: MasterKey,
        sharing: Sharing,
        after_unclean_stop: bool,
    ) -> Result<Self, StoreError> {
        let local = matches!(sharing, Sharing::Local);
        let limits = Limits::new(store.clone(), clock.clone(), sharing).await?;
        Ok(Self {
            store,
            refuse_signed_before: (local && after_unclean_stop).then(|| clock.now_secs()),
            clock,
            master_key,
            limits: Arc::new(limits),
            keys: Mutex::new(HashMap::new()),
            origins: Mutex::new(None),
        })
    }

    /// Other bounds for the single-node nonce set (tests).
    pub fn with_nonce_limits(self, limits: NonceLimits) -> Self {
        self.limits.set_nonce_limits(limits);
        self
    }

    /// The limits' state these guards use, for the other surfaces (through `AppState`).
    pub fn limits(&self) -> Arc<Limits> {
        self.limits.clone()
    }

    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    pub fn sharing(&self) -> &Sharing {
        self.limits.sharing()
    }

    /// After an unclean stop in [`Sharing::Local`] mode, requests signed before this process
    /// started, or in the second it started, are refused: the previous process may have
    /// accepted their nonces after its last flush (timestamps have whole seconds, so one signed
    /// in the start second may be older than the restart). Returns the start time when
    /// `timestamp_secs` is refused.
    pub fn signed_before_start(&self, timestamp_secs: i64) -> Option<i64> {
        self.refuse_signed_before
            .filter(|&started| timestamp_secs <= started)
    }

    /// The key with its secret, from a cache of at most [`KEY_CACHE_TTL_MS`].
    pub async fn key(&self, id: &str) -> Result<Option<Arc<CachedKey>>, StoreError> {
        let now = self.clock.now_ms();
        if let Some((cached, fetched_at)) = self.keys.lock().expect("key cache").get(id)
            && now - fetched_at < KEY_CACHE_TTL_MS
        {
            return Ok(Some(cached.clone()));
        }
        let Some(key) = self.store.api_key(id).await? else {
            return Ok(None);
        };
        let secret = key.secret(&self.master_key).map_err(|e| {
            StoreError::Corrupt(format!("the secret of {id} cannot be opened: {e}"))
        })?;
        let cached = Arc::new(CachedKey {
            key,
            verifier: swapd_types::signing::Verifier::new(secret.as_bytes()),
        });
        let mut keys = self.keys.lock().expect("key cache");
        if keys.len() >= KEY_CACHE_MAX {
            keys.clear();
        }
        keys.insert(id.to_owned(), (cached.clone(), now));
        Ok(Some(cached))
    }

    /// Forgets what the caches hold after a revocation: one key, or all of them.
    pub fn forget(&self, revoked: &Revoked) {
        match revoked {
            Revoked::Key(id) => {
                self.keys.lock().expect("key cache").remove(id);
            }
            Revoked::Unknown => self.keys.lock().expect("key cache").clear(),
        }
        *self.origins.lock().expect("origins") = None;
    }

    /// With Redis, forgets revoked keys as every node hears of them, until `shutdown`.
    pub async fn follow_revocations(self: Arc<Self>, shutdown: CancellationToken) {
        if let Sharing::Redis(redis) = self.limits.sharing() {
            redis
                .follow_revocations(shutdown, |revoked| self.forget(&revoked))
                .await;
        }
    }

    /// Origins listed by any active key (for CORS preflights, which carry no key).
    pub async fn listed_origins(&self) -> Result<Arc<HashSet<String>>, StoreError> {
        let now = self.clock.now_ms();
        if let Some((origins, fetched_at)) = self.origins.lock().expect("origins").as_ref()
            && now - fetched_at < KEY_CACHE_TTL_MS
        {
            return Ok(origins.clone());
        }
        let origins: HashSet<String> = self
            .store
            .list_api_keys()
            .await?
            .into_iter()
            .filter(ApiKey::is_active)
            .flat_map(|k| k.policy.origins().to_vec())
            .collect();
        let origins = Arc::new(origins);
        *self.origins.lock().expect("origins") = Some((origins.clone(), now));
        Ok(origins)
    }

    /// Records `nonce` for `key_id` (on a request signed at `signed_at_secs`), or reports that
    /// it was already used.
    pub async fn claim_nonce(
        &self,
        key_id: &str,
        nonce: &str,
        signed_at_secs: i64,
    ) -> Result<NonceOutcome, StoreError> {
        self.limits
            .nonces
            .claim(key_id, nonce, signed_at_secs)
            .await
    }

    /// Writes the single-node nonces accepted since the last flush.
    pub async fn flush_nonces(&self) -> Result<(), StoreError> {
        self.limits.flush_nonces().await
    }

    /// Flushes the single-node nonces until `shutdown`, then once more.
    pub async fn run_nonce_flusher(self: Arc<Self>, shutdown: CancellationToken) {
        self.limits.clone().run_nonce_flusher(shutdown).await;
    }

    /// Admits or refuses one request of `cost` units for `key`.
    pub async fn consume_rate(&self, key: &ApiKey, cost: u32) -> Result<RateDecision, StoreError> {
        self.limits
            .rates
            .consume(&key.id, key.policy.limits(), cost)
            .await
    }

    /// The tightest quota of `key` without consuming anything.
    pub async fn peek_rate(&self, key: &ApiKey) -> Result<Quota, StoreError> {
        self.limits.rates.peek(&key.id, key.policy.limits()).await
    }
}

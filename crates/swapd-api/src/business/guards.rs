//! The state behind Business API authentication: a short-lived cache of API keys, the nonce
//! set and the per-key rate limiter.
//!
//! A single node on SQLite keeps the nonce set and the rate-limit state in memory, so a signed
//! read never waits for a durable write. Nonces are persisted in batches (and on graceful
//! shutdown) and reloaded at start; after an unclean stop, requests signed before the restart are
//! refused too, so replays fail across restarts and crashes.
//! Several nodes share both through Redis when it is configured, else through the database; with
//! Redis, a revoked key also leaves every node's cache at once (docs/operations.md, "Several
//! nodes").

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use swapd_core::api_keys::ApiKey;
use swapd_core::rate_limit::{self, Quota, RateDecision, RateState, WindowCount};
use swapd_core::secrets::MasterKey;
use swapd_core::signing::NONCE_TTL_SECS;
pub use swapd_core::store::NonceOutcome;
use swapd_core::store::{NonceRecord, WindowDecision};
use swapd_core::{Clock, Store, StoreError};
use swapd_redis::{Revoked, SharedRedis};
use tokio_util::sync::CancellationToken;

/// A revoked key or changed policy takes effect on every node within this time.
pub const KEY_CACHE_TTL_MS: i64 = 5_000;
const KEY_CACHE_MAX: usize = 10_000;
/// Past this many local windows, those that ended are dropped.
const MAX_LOCAL_WINDOWS: usize = 100_000;
/// How often the single-node nonce set is written to the database.
pub const NONCE_FLUSH_INTERVAL: Duration = Duration::from_millis(100);
const NONCE_PRUNE_EVERY_MS: i64 = 10_000;

/// How many nonces the single-node set and its unflushed buffer may hold. Past either, signed
/// requests are refused (503 `auth_unavailable`, fail closed) instead of memory growing. The set
/// holds every nonce of the last `NONCE_TTL_SECS` (15 minutes) in 16 bytes each (about 600 MB
/// for 20 million, a sustained 22,000 requests/s; docs/benchmarks.md); the buffer only grows
/// while flushes fail.
#[derive(Debug, Clone, Copy)]
pub struct NonceLimits {
    pub live: usize,
    pub unflushed: usize,
}

impl Default for NonceLimits {
    fn default() -> Self {
        Self {
            live: 20_000_000,
            unflushed: 1_000_000,
        }
    }
}

/// Where nonces and rate-limit state live.
#[derive(Clone)]
pub enum Sharing {
    /// One node: memory, with nonces persisted in batches.
    Local,
    /// Several nodes: every decision is made in the shared database.
    Database,
    /// Several nodes: every decision is made in Redis.
    Redis(Arc<SharedRedis>),
}

/// Where nonces and rate-limit state live, as `swapd config show` and readiness name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum SharedState {
    Memory,
    Database,
    Redis,
}

impl Sharing {
    pub fn state(&self) -> SharedState {
        match self {
            Self::Local => SharedState::Memory,
            Self::Database => SharedState::Database,
            Self::Redis(_) => SharedState::Redis,
        }
    }
}

/// An active or revoked key with its opened secret, ready to verify signatures.
pub struct CachedKey {
    pub key: ApiKey,
    pub verifier: swapd_types::signing::Verifier,
}

pub struct Guards {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    master_key: MasterKey,
    sharing: Sharing,
    /// Set after an unclean stop: requests signed before this restart are refused.
    refuse_signed_before: Option<i64>,
    keys: Mutex<HashMap<String, (Arc<CachedKey>, i64)>>,
    origins: Mutex<Option<(Arc<HashSet<String>>, i64)>>,
    nonces: Mutex<LocalNonces>,
    nonce_limits: NonceLimits,
    rates: Mutex<HashMap<String, RateState>>,
    /// Fixed windows by key, with when each ends.
    windows: Mutex<HashMap<String, (WindowCount, i64)>>,
}

#[derive(Default)]
struct LocalNonces {
    /// Expiry (Unix seconds) by a digest of (key id, nonce): 16 bytes a nonce, whatever its
    /// length.
    seen: HashMap<[u8; 12], u32>,
    pending: Vec<NonceRecord>,
    pruned_at_ms: i64,
}

/// The set's name for a key's nonce (96 bits: a chance collision among 20 million is below one
/// in 10^14, and would only refuse a request).
fn nonce_digest(key_id: &str, nonce: &str) -> [u8; 12] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(key_id.as_bytes());
    hasher.update([0]);
    hasher.update(nonce.as_bytes());
    let digest = hasher.finalize();
    let mut name = [0; 12];
    name.copy_from_slice(&digest[..12]);
    name
}

/// Unix milliseconds as the set's whole seconds, rounded up (valid until 2106).
fn set_secs(ms: i64) -> u32 {
    u32::try_from((ms + 999).div_euclid(1000)).unwrap_or(u32::MAX)
}

/// An hour's window and a minute of slack: past it a key's rate state is back to its default.
const RATE_CELL_TTL_MS: i64 = 3_660_000;

/// The shared cell of a key's rate limits.
fn rate_cell(key_id: &str) -> String {
    format!("rate:{key_id}")
}

impl Guards {
    /// Builds the guards; in [`Sharing::Local`] mode reloads the nonces persisted by earlier runs.
    /// `after_unclean_stop` says the previous process did not shut down gracefully, so it may
    /// have accepted nonces it never flushed.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        master_key: MasterKey,
        sharing: Sharing,
        after_unclean_stop: bool,
    ) -> Result<Self, StoreError> {
        let now_ms = clock.now_ms();
        let mut nonces = LocalNonces {
            pruned_at_ms: now_ms,
            ..LocalNonces::default()
        };
        let local = matches!(sharing, Sharing::Local);
        if local {
            for record in store.live_nonces(now_ms).await? {
                let expires = nonces
                    .seen
                    .entry(nonce_digest(&record.key_id, &record.nonce))
                    .or_default();
                *expires = (*expires).max(set_secs(record.expires_at_ms));
            }
        }
        Ok(Self {
            store,
            refuse_signed_before: (local && after_unclean_stop).then(|| clock.now_secs()),
            clock,
            master_key,
            sharing,
            keys: Mutex::new(HashMap::new()),
            origins: Mutex::new(None),
            nonces: Mutex::new(nonces),
            nonce_limits: NonceLimits::default(),
            rates: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
        })
    }

    /// Other bounds for the single-node nonce set (tests).
    pub fn with_nonce_limits(mut self, limits: NonceLimits) -> Self {
        self.nonce_limits = limits;
        self
    }

    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    pub fn sharing(&self) -> &Sharing {
        &self.sharing
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
        if let Sharing::Redis(redis) = &self.sharing {
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
        let now = self.clock.now_ms();
        let expires_at_ms = now + NONCE_TTL_SECS * 1000;
        match &self.sharing {
            Sharing::Redis(redis) => {
                redis
                    .claim_nonce(
                        key_id,
                        nonce,
                        NONCE_TTL_SECS * 1000,
                        signed_at_secs,
                        now.div_euclid(1000),
                    )
                    .await
            }
            Sharing::Database => {
                let fresh = self
                    .store
                    .remember_nonce(key_id, nonce, expires_at_ms)
                    .await?;
                Ok(if fresh {
                    NonceOutcome::Fresh
                } else {
                    NonceOutcome::Reused
                })
            }
            Sharing::Local => {
                let mut nonces = self.nonces.lock().expect("nonce set");
                let name = nonce_digest(key_id, nonce);
                let now_secs = now.div_euclid(1000);
                if nonces
                    .seen
                    .get(&name)
                    .is_some_and(|&exp| i64::from(exp) > now_secs)
                {
                    return Ok(NonceOutcome::Reused);
                }
                if nonces.seen.len() >= self.nonce_limits.live {
                    nonces.seen.retain(|_, exp| i64::from(*exp) > now_secs);
                    nonces.pruned_at_ms = now;
                }
                if nonces.seen.len() >= self.nonce_limits.live
                    || nonces.pending.len() >= self.nonce_limits.unflushed
                {
                    return Err(StoreError::Unavailable(
                        "the nonce set is full (too many requests, or nonces cannot be written)"
                            .into(),
                    ));
                }
                nonces.seen.insert(name, set_secs(expires_at_ms));
                nonces.pending.push(NonceRecord {
                    key_id: key_id.to_owned(),
                    nonce: nonce.to_owned(),
                    expires_at_ms,
                });
                Ok(NonceOutcome::Fresh)
            }
        }
    }

    /// Writes the nonces accepted since the last flush and forgets expired ones.
    pub async fn flush_nonces(&self) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let batch = {
            let mut nonces = self.nonces.lock().expect("nonce set");
            if now - nonces.pruned_at_ms >= NONCE_PRUNE_EVERY_MS {
                let now_secs = now.div_euclid(1000);
                nonces.seen.retain(|_, exp| i64::from(*exp) > now_secs);
                nonces.pruned_at_ms = now;
            }
            std::mem::take(&mut nonces.pending)
        };
        if batch.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.store.remember_nonces(&batch).await {
            // Keep them for the next flush; memory still refuses their replay meanwhile.
            self.nonces.lock().expect("nonce set").pending.extend(batch);
            return Err(error);
        }
        Ok(())
    }

    /// Flushes nonces every [`NONCE_FLUSH_INTERVAL`] until `shutdown`, then once more.
    pub async fn run_nonce_flusher(self: Arc<Self>, shutdown: CancellationToken) {
        if !matches!(self.sharing, Sharing::Local) {
            return;
        }
        let mut tick = tokio::time::interval(NONCE_FLUSH_INTERVAL);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    if let Err(error) = self.flush_nonces().await {
                        tracing::warn!(%error, "nonce flush failed; will retry");
                    }
                }
            }
        }
        if let Err(error) = self.flush_nonces().await {
            tracing::error!(%error, "final nonce flush failed");
        }
    }

    /// Admits or refuses one request of `cost` units for `key`.
    pub async fn consume_rate(&self, key: &ApiKey, cost: u32) -> Result<RateDecision, StoreError> {
        let now = self.clock.now_ms();
        let limits = key.policy.limits();
        match &self.sharing {
            Sharing::Redis(redis) => {
                redis
                    .consume_rate(&rate_cell(&key.id), limits, cost, now, RATE_CELL_TTL_MS)
                    .await
            }
            Sharing::Database => self.store.consume_rate(&key.id, limits, cost, now).await,
            Sharing::Local => {
                let mut rates = self.rates.lock().expect("rate state");
                let decide = |state| rate_limit::decide(state, limits, cost, now);
                // Only a key's first request allocates its entry.
                let decision = match rates.get_mut(&key.id) {
                    Some(state) => {
                        let decision = decide(*state);
                        *state = decision.state;
                        decision
                    }
                    None => {
                        let decision = decide(RateState::default());
                        rates.insert(key.id.clone(), decision.state);
                        decision
                    }
                };
                Ok(decision)
            }
        }
    }

    /// Counts one request against the fixed window of `window_ms` for `key` (x402 paid attempts
    /// and wallet reads, webhook replays): in memory on one node, in the shared database on
    /// several. A refused request counts nothing.
    pub async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        let now = self.clock.now_ms();
        match &self.sharing {
            Sharing::Redis(redis) => {
                redis
                    .update(&format!("window:{key}"), window_ms, |stored| {
                        let (decision, counted) =
                            rate_limit::count_in_window(stored, window_ms, limit, now);
                        (decision, decision.allowed.then_some(counted))
                    })
                    .await
            }
            Sharing::Database => self.store.consume_window(key, window_ms, limit, now).await,
            Sharing::Local => {
                let mut windows = self.windows.lock().expect("window state");
                if windows.len() >= MAX_LOCAL_WINDOWS {
                    // Windows that ended count nothing any more.
                    windows.retain(|_, (_, ends_at_ms)| *ends_at_ms > now);
                }
                let stored = windows.get(key).map(|(count, _)| *count);
                let (decision, counted) =
                    rate_limit::count_in_window(stored, window_ms, limit, now);
                if decision.allowed {
                    windows.insert(key.to_owned(), (counted, decision.resets_at_ms));
                }
                Ok(decision)
            }
        }
    }

    /// How much of `key`'s window of `window_ms` is used, counting nothing: a limit of 0 is
    /// refused at once, and a refused request is never counted.
    pub async fn peek_window(
        &self,
        key: &str,
        window_ms: i64,
    ) -> Result<WindowDecision, StoreError> {
        self.consume_window(key, window_ms, 0).await
    }

    /// The tightest quota of `key` without consuming anything.
    pub async fn peek_rate(&self, key: &ApiKey) -> Result<Quota, StoreError> {
        let now = self.clock.now_ms();
        let state = match &self.sharing {
            Sharing::Redis(redis) => redis.read(&rate_cell(&key.id)).await?.unwrap_or_default(),
            Sharing::Database => self.store.rate_state(&key.id).await?,
            Sharing::Local => {
                let rates = self.rates.lock().expect("rate state");
                rates.get(&key.id).copied().unwrap_or_default()
            }
        };
        Ok(rate_limit::peek(state, key.policy.limits(), now))
    }
}

#[async_trait::async_trait]
impl swapd_core::rate_limit::Windows for Guards {
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        Guards::consume_window(self, key, window_ms, limit).await
    }
}

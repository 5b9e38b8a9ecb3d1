//! The state several API nodes share on every request, kept in Redis when `[shared] redis_url`
//! is set (docs/operations.md, "Several nodes"): the nonces signed requests used, the cells of
//! the rate limits, and the revocations of API keys.
//!
//! The cells every request updates (a key's rate limits, an address's request rate) are decided
//! in one atomic step by Lua scripts that mirror the pure functions one node applies in memory
//! (`swapd_core::rate_limit::decide` and `admit_address`); the tests run script and function on
//! the same random inputs, and the caller takes its answer from the function, given the cell's
//! prior value.
//!
//! The rarer cells are read, decided by the same functions in Rust, and written back by a Lua
//! compare-and-set ([`SharedRedis::update`]). Each node remembers the last value it saw of each
//! cell and offers it as the expected value, so a cell one node keeps using costs one round trip;
//! on a conflict Redis answers the current value and the node decides again. Within a node,
//! updates of one cell take turns (a striped lock), so only other nodes can make a guess stale.
//!
//! Every call has a timeout; an unreachable Redis is `StoreError::Unavailable` (the API answers
//! 503 and a replayed nonce is never let through), and the connection comes back by itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError, Script};
use swapd_core::api_keys::RateLimits;
use swapd_core::rate_limit::{
    self, AddressLimits, AddressState, RateDecision, RateState, WindowCount,
};
use swapd_core::store::NonceOutcome;
use swapd_core::{Clock, StoreError};
use tokio_util::sync::CancellationToken;

/// How long one call to Redis may take.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// Conflicting writers past this many retries of one cell: the request is answered 503.
const MAX_CAS_ATTEMPTS: usize = 16;
/// Cells share this many locks (turns) per node.
const STRIPES: usize = 64;
/// Past this many remembered cell values, the memory is forgotten (it is only a guess).
const MAX_GUESSES: usize = 100_000;
/// The key holding when this Redis began keeping nonces (Unix seconds).
const NONCES_SINCE: &str = "nonces-since";
/// How long to wait before subscribing again after the revocation channel dropped.
const RESUBSCRIBE_AFTER: Duration = Duration::from_millis(500);
/// How long the revocation subscription may hear nothing before it checks its connection.
const SUBSCRIPTION_QUIET: Duration = Duration::from_secs(5);

/// Compare-and-set of one cell: `ARGV[1]` the value the caller decided from ('' for none),
/// `ARGV[2]` the value to store ('' to store nothing), `ARGV[3]` its time to live (ms).
/// Answers `{1}` when the cell still held `ARGV[1]`, else `{0, current}`.
const COMPARE_AND_SET: &str = r"
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return {0, current} end
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return {1, ARGV[2]}
";

/// Records a nonce unless it is known. `KEYS[2]` holds when (Unix seconds) this Redis started
/// keeping nonces; when it is missing Redis lost them (a restart without persistence, an
/// eviction), so it is set to now and requests signed before it are refused: they may reuse a
/// nonce Redis forgot. Answers `{1|0|2, since}`: fresh, reused, signed before `since`.
const CLAIM_NONCE: &str = r"
local since = redis.call('GET', KEYS[2])
if not since then
  since = ARGV[2]
  redis.call('SET', KEYS[2], since)
end
if tonumber(ARGV[3]) <= tonumber(since) then return {2, since} end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {1, since} end
return {0, since}
";

/// The key rate limit of `swapd_core::rate_limit::decide`, atomically in Redis: a busy key is
/// one cell every request of every node updates, so a compare-and-set would keep failing; this
/// script decides in one step. It mirrors `decide` (GCRA of the minute, fixed UTC hour windows of
/// requests and weight; a refusal changes nothing), and a test runs both on the same random
/// inputs. `ARGV`: now (ms), per minute, per hour, weight per hour, cost, time to live (ms).
/// Answers the cell's value before this request; the caller decides from it with `decide`,
/// which gives the same answer and the quota to report.
const CONSUME_RATE: &str = r"
local prior = redis.call('GET', KEYS[1]) or ''
local tat, start, count, weight = 0, 0, 0, 0
if prior ~= '' then
  local a, b, c, d = string.match(prior, '^(-?%d+):(-?%d+):(%d+):(%d+)$')
  if a then tat, start, count, weight = tonumber(a), tonumber(b), tonumber(c), tonumber(d) end
end
local now = tonumber(ARGV[1])
local per_minute, per_hour = tonumber(ARGV[2]), tonumber(ARGV[3])
local weight_per_hour, cost = tonumber(ARGV[4]), tonumber(ARGV[5])
local window = now - (now % 3600000)
if start ~= window then start, count, weight = window, 0, 0 end
local now_us = now * 1000
local interval = math.max(math.floor(60000000 / math.max(per_minute, 1)), 1)
local next_tat = math.max(tat, now_us) + interval
if next_tat - 60000000 > now_us or count >= per_hour or weight + cost > weight_per_hour then
  return prior
end
redis.call('SET', KEYS[1],
  string.format('%d:%d:%d:%d', next_tat, start, count + 1, weight + cost), 'PX', ARGV[6])
return prior
";

/// The per-address admission of `swapd_core::rate_limit::admit_address`, atomically in Redis
/// (every request from an address updates its cell, so a compare-and-set would keep failing
/// for a busy one): refused while blocked, else the GCRA of the request rate. Mirrors the Rust
/// rule and is tested against it. `ARGV`: now (ms), requests per second, time to live (ms).
/// Answers the cell's value before this request.
const ADMIT_ADDRESS: &str = r"
local prior = redis.call('GET', KEYS[1]) or ''
local tat, failures, blocked = 0, 0, 0
if prior ~= '' then
  local a, b, c = string.match(prior, '^(-?%d+):(-?%d+):(-?%d+)$')
  if a then tat, failures, blocked = tonumber(a), tonumber(b), tonumber(c) end
end
local now, rate = tonumber(ARGV[1]), tonumber(ARGV[2])
if blocked > now or rate == 0 then return prior end
local interval = math.max(math.floor(1000000 / rate), 1)
local now_us = now * 1000
local next_tat = math.max(tat, now_us) + interval
if next_tat - interval * math.max(rate * 2, 1) - now_us > 0 then return prior end
redis.call('SET', KEYS[1], string.format('%d:%d:%d', next_tat, failures, blocked), 'PX', ARGV[3])
return prior
";

/// What the revocation channel reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// This key was revoked.
    Key(String),
    /// Revocations may have been missed (the channel was down): forget every cached key.
    Unknown,
}

/// A value kept in one Redis string: a rate-limit state.
pub trait Cell: Sized + Copy {
    fn encode(&self) -> String;
    fn decode(text: &str) -> Option<Self>;
}

fn fields<const N: usize>(text: &str) -> Option<[i64; N]> {
    let mut out = [0; N];
    let mut parts = text.split(':');
    for slot in &mut out {
        *slot = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

impl Cell for RateState {
    fn encode(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.tat_us, self.window_start_ms, self.hour_count, self.hour_weight
        )
    }

    fn decode(text: &str) -> Option<Self> {
        let [tat_us, window_start_ms, hour_count, hour_weight] = fields(text)?;
        Some(Self {
            tat_us,
            window_start_ms,
            hour_count: u32::try_from(hour_count).ok()?,
            hour_weight: u32::try_from(hour_weight).ok()?,
        })
    }
}

impl Cell for WindowCount {
    fn encode(&self) -> String {
        format!("{}:{}", self.start_ms, self.used)
    }

    fn decode(text: &str) -> Option<Self> {
        let [start_ms, used] = fields(text)?;
        Some(Self {
            start_ms,
            used: u32::try_from(used).ok()?,
        })
    }
}

impl Cell for AddressState {
    fn encode(&self) -> String {
        format!(
            "{}:{}:{}",
            self.requests_tat_us, self.failures_tat_us, self.blocked_until_ms
        )
    }

    fn decode(text: &str) -> Option<Self> {
        let [requests_tat_us, failures_tat_us, blocked_until_ms] = fields(text)?;
        Some(Self {
            requests_tat_us,
            failures_tat_us,
            blocked_until_ms,
        })
    }
}

pub struct SharedRedis {
    client: Client,
    connection: ConnectionManager,
    prefix: String,
    compare_and_set: Script,
    claim_nonce: Script,
    consume_rate: Script,
    admit_address: Script,
    /// The last value seen of each cell, offered as the expected value of its next update.
    guesses: Mutex<HashMap<String, String>>,
    /// One update at a time per cell (by the cell name's hash) on this node.
    turns: Box<[tokio::sync::Mutex<()>]>,
    /// Redis's clock minus this node's, in milliseconds, as last measured (0 until then).
    clock_offset_ms: AtomicI64,
}

/// How often a node measures its clock against Redis's again.
pub const CLOCK_MEASURED_EVERY: Duration = Duration::from_secs(10);

fn unavailable(error: RedisError) -> StoreError {
    if error.is_io_error() || error.is_timeout() || error.is_connection_dropped() {
        StoreError::Unavailable(format!("redis: {error}"))
    } else {
        StoreError::Database(format!("redis: {error}"))
    }
}

async fn timed<T>(call: impl Future<Output = Result<T, RedisError>>) -> Result<T, StoreError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(result) => result.map_err(unavailable),
        Err(_) => Err(StoreError::Unavailable(format!(
            "redis did not answer within {} ms",
            CALL_TIMEOUT.as_millis()
        ))),
    }
}

impl SharedRedis {
    /// Connects to `url` (`redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS),
    /// naming every key and channel under `prefix`, at `now_secs`: a Redis that keeps no nonces
    /// yet starts its set then. Fails when Redis cannot be reached now.
    pub async fn connect(url: &str, prefix: &str, now_secs: i64) -> Result<Self, StoreError> {
        let client = Client::open(url)
            .map_err(|e| StoreError::Database(format!("redis_url is not a Redis URL: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection = timed(ConnectionManager::new_with_config(client.clone(), config)).await?;
        let shared = Self {
            client,
            connection,
            prefix: prefix.to_owned(),
            compare_and_set: Script::new(COMPARE_AND_SET),
            claim_nonce: Script::new(CLAIM_NONCE),
            consume_rate: Script::new(CONSUME_RATE),
            admit_address: Script::new(ADMIT_ADDRESS),
            guesses: Mutex::new(HashMap::new()),
            turns: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            clock_offset_ms: AtomicI64::new(0),
        };
        let mut connection = shared.connection.clone();
        timed(
            redis::cmd("SET")
                .arg(shared.name(NONCES_SINCE))
                .arg(now_secs)
                .arg("NX")
                .query_async::<()>(&mut connection),
        )
        .await?;
        Ok(shared)
    }

    fn name(&self, what: &str) -> String {
        format!("{}:{what}", self.prefix)
    }

    fn revocations_channel(&self) -> String {
        self.name("revoked")
    }

    /// Measures how far Redis's clock is from `local` (Redis's `TIME`, against the middle of
    /// the round trip); [`SharedRedis::shared_ms`] applies it from then on. Returns the offset.
    pub async fn measure_clock(&self, local: &dyn Clock) -> Result<i64, StoreError> {
        let mut connection = self.connection.clone();
        let before = local.now_ms();
        let (secs, micros): (i64, i64) =
            timed(redis::cmd("TIME").query_async(&mut connection)).await?;
        let after = local.now_ms();
        let offset = secs * 1000 + micros / 1000 - (before + after) / 2;
        self.clock_offset_ms.store(offset, Ordering::Relaxed);
        Ok(offset)
    }

    /// Measures the clock again every [`CLOCK_MEASURED_EVERY`] while `shared` lives: a node whose
    /// clock is stepped keeps deciding on Redis's.
    pub async fn keep_measuring_clock(shared: Weak<Self>, local: std::sync::Arc<dyn Clock>) {
        loop {
            tokio::time::sleep(CLOCK_MEASURED_EVERY).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let Err(error) = shared.measure_clock(&*local).await {
                tracing::debug!(%error, "cannot measure the clock against Redis now");
            }
        }
    }

    /// `local_ms`, a time of this node's clock, on Redis's clock. Every cell kept here (rate
    /// cells, address budgets, windows) is decided on Redis's clock, so that a node whose clock
    /// runs ahead neither pushes a shared cell into the future for the others (refusing them)
    /// nor, behind, gets more than its share (docs/reliability.md).
    pub fn shared_ms(&self, local_ms: i64) -> i64 {
        local_ms + self.clock_offset_ms.load(Ordering::Relaxed)
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        timed(redis::cmd("PING").query_async::<()>(&mut connection)).await
    }

    /// Records that `key_id` used `nonce` for `ttl_ms`, unless it was already recorded. A
    /// request signed at `signed_at_secs` no later than when Redis last lost its nonces is
    /// refused, since its nonce may be one Redis forgot.
    pub async fn claim_nonce(
        &self,
        key_id: &str,
        nonce: &str,
        ttl_ms: i64,
        signed_at_secs: i64,
        now_secs: i64,
    ) -> Result<NonceOutcome, StoreError> {
        let mut connection = self.connection.clone();
        let mut invocation = self.claim_nonce.prepare_invoke();
        invocation
            .key(self.name(&format!("nonce:{key_id}:{nonce}")))
            .key(self.name(NONCES_SINCE))
            .arg(ttl_ms)
            .arg(now_secs)
            .arg(signed_at_secs);
        let (outcome, since): (i64, i64) = timed(invocation.invoke_async(&mut connection)).await?;
        Ok(match outcome {
            1 => NonceOutcome::Fresh,
            0 => NonceOutcome::Reused,
            _ => NonceOutcome::SignedBeforeReset { since_secs: since },
        })
    }

    /// Admits or refuses one request of `cost` units against the rate cell `name` with
    /// `swapd_core::rate_limit::decide`, in one atomic step; the cell lives for `ttl_ms` after
    /// its last change.
    pub async fn consume_rate(
        &self,
        name: &str,
        limits: RateLimits,
        cost: u32,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<RateDecision, StoreError> {
        let args = [
            now_ms,
            limits.per_minute.into(),
            limits.per_hour.into(),
            limits.weight_per_hour.into(),
            cost.into(),
            ttl_ms.max(1),
        ];
        let prior: RateState = self.mirror(&self.consume_rate, name, &args).await?;
        Ok(rate_limit::decide(prior, limits, cost, now_ms))
    }

    /// Admits one request from an address against its cell `name` with
    /// `swapd_core::rate_limit::admit_address`, in one atomic step: `Ok(())` or the milliseconds
    /// to wait. The cell lives for `ttl_ms` after its last change.
    pub async fn admit_address(
        &self,
        name: &str,
        limits: AddressLimits,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Result<(), i64>, StoreError> {
        let args = [now_ms, limits.requests_per_second.into(), ttl_ms.max(1)];
        let prior: AddressState = self.mirror(&self.admit_address, name, &args).await?;
        Ok(rate_limit::admit_address(prior, limits, now_ms).map(drop))
    }

    /// Runs a script that mirrors a pure rule on the cell `name` (deciding and storing in one
    /// step), and returns the cell's value before it: the caller applies the rule to it for the
    /// same answer. A missing or unreadable cell is the rule's default state.
    async fn mirror<C: Cell + Default>(
        &self,
        script: &Script,
        name: &str,
        args: &[i64],
    ) -> Result<C, StoreError> {
        let mut connection = self.connection.clone();
        let mut invocation = script.prepare_invoke();
        invocation.key(self.name(name));
        for arg in args {
            invocation.arg(*arg);
        }
        let prior: String = timed(invocation.invoke_async(&mut connection)).await?;
        Ok(C::decode(&prior).unwrap_or_default())
    }

    /// Updates the cell `name` atomically: `decide` gets its value (`None` when there is none)
    /// and returns its answer with the value to store (`None` to store nothing), which lives
    /// for `ttl_ms`. `decide` may run more than once when other nodes write the cell meanwhile;
    /// only the answer decided from the value the cell held is returned.
    pub async fn update<C: Cell, R>(
        &self,
        name: &str,
        ttl_ms: i64,
        decide: impl Fn(Option<C>) -> (R, Option<C>),
    ) -> Result<R, StoreError> {
        let key = self.name(name);
        let stripe = {
            use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
            BuildHasherDefault::<DefaultHasher>::default().hash_one(&key) as usize % STRIPES
        };
        let _turn = self.turns[stripe].lock().await;
        let mut expected = self
            .guesses
            .lock()
            .expect("guesses")
            .get(&key)
            .cloned()
            .unwrap_or_default();
        let mut connection = self.connection.clone();
        for _ in 0..MAX_CAS_ATTEMPTS {
            let (answer, stored) = decide(C::decode(&expected));
            let stored = stored.map(|c| c.encode()).unwrap_or_default();
            let mut invocation = self.compare_and_set.prepare_invoke();
            invocation
                .key(&key)
                .arg(&expected)
                .arg(&stored)
                .arg(ttl_ms.max(1));
            let (done, current): (i64, String) =
                timed(invocation.invoke_async(&mut connection)).await?;
            let current = if done == 1 && stored.is_empty() {
                expected
            } else {
                current
            };
            self.remember(key.clone(), current.clone());
            if done == 1 {
                return Ok(answer);
            }
            expected = current;
        }
        Err(StoreError::Unavailable(format!(
            "{key} kept changing under {MAX_CAS_ATTEMPTS} attempts"
        )))
    }

    fn remember(&self, key: String, value: String) {
        let mut guesses = self.guesses.lock().expect("guesses");
        if guesses.len() >= MAX_GUESSES {
            guesses.clear();
        }
        guesses.insert(key, value);
    }

    /// The value of the cell `name`, if any.
    pub async fn read<C: Cell>(&self, name: &str) -> Result<Option<C>, StoreError> {
        let mut connection = self.connection.clone();
        let value: Option<String> = timed(
            redis::cmd("GET")
                .arg(self.name(name))
                .query_async(&mut connection),
        )
        .await?;
        Ok(value.as_deref().and_then(C::decode))
    }

    /// Tells every node that `key_id` was revoked, so that none serves it from its cache.
    pub async fn publish_revoked(&self, key_id: &str) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        timed(
            redis::cmd("PUBLISH")
                .arg(self.revocations_channel())
                .arg(key_id)
                .query_async::<()>(&mut connection),
        )
        .await
    }

    /// Reports revocations to `on` until `shutdown`, subscribing again whenever the channel
    /// drops (and reporting [`Revoked::Unknown`] then, since some may have been missed).
    pub async fn follow_revocations(
        &self,
        shutdown: CancellationToken,
        on: impl Fn(Revoked) + Send + Sync,
    ) {
        let channel = self.revocations_channel();
        loop {
            let subscribed = timed(async {
                let mut pubsub = self.client.get_async_pubsub().await?;
                pubsub.subscribe(&channel).await?;
                Ok(pubsub)
            })
            .await;
            match subscribed {
                Ok(pubsub) => {
                    on(Revoked::Unknown);
                    let (mut sink, mut messages) = pubsub.split();
                    loop {
                        tokio::select! {
                            () = shutdown.cancelled() => return,
                            message = messages.next() => match message {
                                Some(message) => match message.get_payload::<String>() {
                                    Ok(key_id) => on(Revoked::Key(key_id)),
                                    Err(_) => on(Revoked::Unknown),
                                },
                                None => break,
                            },
                            // Quiet for a while: over a silent network the subscription would
                            // wait for ever while revocations go unheard; it must answer a ping.
                            () = tokio::time::sleep(SUBSCRIPTION_QUIET) => {
                                if timed(sink.ping::<redis::Value>()).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    tracing::warn!("the key revocation channel dropped; subscribing again");
                    on(Revoked::Unknown);
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot subscribe to key revocations; retrying");
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(RESUBSCRIBE_AFTER) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_and_refuse_other_text() {
        let rate = RateState {
            tat_us: -5,
            window_start_ms: 1_700_000_000_000,
            hour_count: 3,
            hour_weight: 40,
        };
        assert_eq!(RateState::decode(&rate.encode()), Some(rate));
        let window = WindowCount {
            start_ms: 60_000,
            used: 2,
        };
        assert_eq!(WindowCount::decode(&window.encode()), Some(window));
        let address = AddressState {
            requests_tat_us: 1,
            failures_tat_us: 2,
            blocked_until_ms: 3,
        };
        assert_eq!(AddressState::decode(&address.encode()), Some(address));
        assert_eq!(WindowCount::decode(""), None);
        assert_eq!(WindowCount::decode("1:2:3"), None);
        assert_eq!(WindowCount::decode("1:x"), None);
        assert_eq!(RateState::decode("1:2:-3:4"), None);
    }
}

/// Tests against a real Redis, named by `SWAPD_TEST_REDIS_URL`: skipped with a message without
/// it, except under CI (`CI` set), where a missing URL fails the run.
pub mod test_support {
    pub const REDIS_URL_VAR: &str = "SWAPD_TEST_REDIS_URL";

    pub fn redis_url() -> Option<String> {
        match std::env::var(REDIS_URL_VAR) {
            Ok(url) if !url.is_empty() => Some(url),
            _ if std::env::var_os("CI").is_some() => {
                panic!("{REDIS_URL_VAR} must be set in CI: the Redis tests may not be skipped")
            }
            _ => {
                eprintln!(
                    "SKIPPED: Redis test (set {REDIS_URL_VAR}=redis://127.0.0.1:6379 to run it)"
                );
                None
            }
        }
    }

    /// A Redis server of the test's own (`redis-server` on a free port, keeping nothing on
    /// disk), so that it can be stopped and started without disturbing other tests. `None`
    /// (with a message) when `redis-server` is not installed, except under CI.
    pub struct OwnRedis {
        pub port: u16,
        child: Option<std::process::Child>,
    }

    impl OwnRedis {
        pub fn start() -> Option<Self> {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            drop(listener);
            let mut redis = Self { port, child: None };
            if let Err(error) = redis.resume() {
                if std::env::var_os("CI").is_some() {
                    panic!("redis-server must run in CI: {error}");
                }
                eprintln!("SKIPPED: Redis outage test ({error}; install redis-server)");
                return None;
            }
            Some(redis)
        }

        pub fn url(&self) -> String {
            format!("redis://127.0.0.1:{}", self.port)
        }

        /// Starts the server again on the same port (empty: it keeps nothing).
        pub fn resume(&mut self) -> std::io::Result<()> {
            let child = std::process::Command::new("redis-server")
                .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn()?;
            self.child = Some(child);
            for _ in 0..200 {
                if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                    return Ok(());
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            Err(std::io::Error::other(
                "redis-server did not listen within 5 s",
            ))
        }

        /// Kills the server (SIGKILL: what it held is gone).
        pub fn kill(&mut self) {
            if let Some(mut child) = self.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    impl Drop for OwnRedis {
        fn drop(&mut self) {
            self.kill();
        }
    }

    /// A key prefix no other test uses.
    pub fn unique_prefix() -> String {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!(
            "swapd-test-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }
}

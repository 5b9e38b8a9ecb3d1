//! Helpers for tests that need a real PostgreSQL: each test gets its own schema in the shared
//! database named by `SWAPD_TEST_POSTGRES_URL`, dropped when the helper is dropped.

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngCore;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

pub const POSTGRES_URL_VAR: &str = "SWAPD_TEST_POSTGRES_URL";
const SCHEMA_PREFIX: &str = "swapd_test_";
/// Schemas left behind by a killed test run are swept once they are this old.
const STALE_AFTER_SECS: u64 = 3_600;

/// The test PostgreSQL URL. Without it the PostgreSQL tests are skipped with a message, except
/// under CI (`CI` set), where a missing URL fails the run: the PostgreSQL suite is mandatory there.
pub fn postgres_url() -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{POSTGRES_URL_VAR} must be set in CI: the PostgreSQL suite may not be skipped")
        }
        _ => {
            eprintln!(
                "SKIPPED: PostgreSQL test (set {POSTGRES_URL_VAR}=postgres://postgres@127.0.0.1:5432/test to run it)"
            );
            None
        }
    }
}

/// A schema of its own in the test database.
pub struct PgTestSchema {
    url: String,
    schema: String,
}

impl PgTestSchema {
    pub async fn create(url: &str) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut random = [0u8; 6];
        rand::rng().fill_bytes(&mut random);
        let schema = format!("{SCHEMA_PREFIX}{now}_{}", hex::encode(random));
        let mut conn = PgConnection::connect(url)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {POSTGRES_URL_VAR}: {e}"));
        sweep_stale_schemas(&mut conn, now).await;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
            .execute(&mut conn)
            .await
            .expect("create test schema");
        Self {
            url: url.to_owned(),
            schema,
        }
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// A database URL that selects this schema, for passing to `swapd --database-url`.
    pub fn database_url(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-c%20search_path%3D{}",
            self.url, self.schema
        )
    }

    /// [`PgTestSchema::database_url`] through another port of this machine (a proxy's).
    pub fn database_url_at(&self, port: u16) -> String {
        self.database_url_on(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// [`PgTestSchema::database_url`] through `addr` (a relay's).
    pub fn database_url_on(&self, addr: SocketAddr) -> String {
        let mut url = url::Url::parse(&self.database_url()).expect("valid test URL");
        url.set_host(Some(&addr.ip().to_string())).expect("a host");
        url.set_port(Some(addr.port())).expect("a port");
        url.into()
    }
}

impl Drop for PgTestSchema {
    fn drop(&mut self) {
        let url = self.url.clone();
        let schema = self.schema.clone();
        // Drop may run inside a runtime (or while unwinding), so clean up on a thread of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            runtime.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&url).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP SCHEMA IF EXISTS {schema} CASCADE"
                    )))
                    .execute(&mut conn)
                    .await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn sweep_stale_schemas(conn: &mut PgConnection, now: u64) {
    let schemas: Vec<String> = sqlx::query_scalar(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'swapd\\_test\\_%'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap_or_default();
    for schema in schemas {
        let created = schema
            .strip_prefix(SCHEMA_PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        if created.is_some_and(|secs| secs + STALE_AFTER_SECS < now) {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE"
            )))
            .execute(&mut *conn)
            .await;
        }
    }
}

/// The address of the PostgreSQL server a URL names (`localhost` as 127.0.0.1).
pub fn server_addr(url: &str) -> SocketAddr {
    let options = PgConnectOptions::from_str(url).expect("valid test URL");
    let host = options.get_host().replace("localhost", "127.0.0.1");
    format!("{host}:{}", options.get_port())
        .parse()
        .expect("a TCP host")
}

/// Forwards TCP connections to `target` until `cut` is cancelled, then drops every connection:
/// a database that goes away mid-test.
pub async fn tcp_proxy(target: SocketAddr, cut: tokio_util::sync::CancellationToken) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the proxy");
    let addr = listener.local_addr().expect("proxy address");
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = cut.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((mut inbound, _)) = accepted else {
                continue;
            };
            let cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                tokio::select! {
                    () = cut.cancelled() => {}
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                }
            });
        }
    });
    addr
}

/// A TCP relay to `target` that can fall silent, as a network that drops packets does (not as a
/// server that refuses: no connection is closed). While [`SilentRelay::silence`] lasts, bytes
/// sent either way are held, new connections included; [`SilentRelay::heal`] lets them
/// through in order. [`SilentRelay::lose_open`] makes the connections open now silent for good
/// (the server gave up on them while the client did not hear it). [`SilentRelay::delay`] holds
/// every chunk that long each way before passing it on, in order: a slow link, not a slow reader.
pub struct SilentRelay {
    pub addr: SocketAddr,
    silent: tokio::sync::watch::Sender<bool>,
    delay: tokio::sync::watch::Sender<std::time::Duration>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::sync::Weak<std::sync::atomic::AtomicBool>>>>,
}

impl SilentRelay {
    /// A relay on a free loopback port.
    pub async fn start(target: SocketAddr) -> Self {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), target).await
    }

    /// A relay listening on `bind` (port 0: a free one).
    pub async fn start_on(bind: SocketAddr, target: SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .expect("bind the relay");
        let addr = listener.local_addr().expect("relay address");
        let (silent, _) = tokio::sync::watch::channel(false);
        let (delay, _) = tokio::sync::watch::channel(std::time::Duration::ZERO);
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (watch, slow, connections) = (silent.clone(), delay.clone(), open.clone());
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = tokio::net::TcpStream::connect(target).await else {
                    continue;
                };
                let lost = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                connections
                    .lock()
                    .unwrap()
                    .push(std::sync::Arc::downgrade(&lost));
                let (from_client, to_client) = inbound.into_split();
                let (from_server, to_server) = outbound.into_split();
                let link = |from, to| Link {
                    silent: watch.subscribe(),
                    delay: slow.subscribe(),
                    lost: lost.clone(),
                    from,
                    to,
                };
                tokio::spawn(link(from_client, to_server).run());
                tokio::spawn(link(from_server, to_client).run());
            }
        });
        Self {
            addr,
            silent,
            delay,
            open,
        }
    }

    pub fn silence(&self) {
        self.silent.send_replace(true);
    }

    pub fn heal(&self) {
        self.silent.send_replace(false);
    }

    /// Every chunk from now on waits `delay` each way (zero: none).
    pub fn delay(&self, delay: std::time::Duration) {
        self.delay.send_replace(delay);
    }

    pub fn lose_open(&self) {
        for lost in self.open.lock().unwrap().drain(..) {
            if let Some(lost) = lost.upgrade() {
                lost.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
}

/// One direction of a relayed connection.
struct Link {
    silent: tokio::sync::watch::Receiver<bool>,
    delay: tokio::sync::watch::Receiver<std::time::Duration>,
    lost: std::sync::Arc<std::sync::atomic::AtomicBool>,
    from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
}

impl Link {
    /// Reads chunks and hands each, stamped with when it may leave, to a writer: a delay
    /// holds every chunk as long, without slowing the reading.
    async fn run(self) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Self {
            mut silent,
            delay,
            lost,
            mut from,
            mut to,
        } = self;
        let (send, mut chunks) =
            tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
        tokio::spawn(async move {
            while let Some((due, chunk)) = chunks.recv().await {
                tokio::time::sleep_until(due).await;
                if to.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        });
        let mut buffer = vec![0; 16 * 1024];
        loop {
            let read = match from.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            if silent.wait_for(|silent| !silent).await.is_err() {
                return;
            }
            if lost.load(std::sync::atomic::Ordering::SeqCst) {
                // Held open, never answered, never closed.
                let _kept = (from, send);
                std::future::pending::<()>().await;
                return;
            }
            let due = tokio::time::Instant::now() + *delay.borrow();
            if send.send((due, buffer[..read].to_vec())).is_err() {
                return;
            }
        }
    }
}

/// The catalog's currency `code`.
pub fn currency(code: &str) -> &'static swapd_core::market::currencies::CurrencyDef {
    swapd_core::market::currencies::currency(code).expect("a catalog code")
}

/// `text` of the currency `code`, at its precision.
pub fn amount(text: &str, code: &str) -> swapd_core::amount::Amount {
    swapd_core::amount::Amount::parse(text, currency(code).precision).expect("an amount")
}

/// An order awaiting its deposit, as tests store it directly: 0.1 BTC for 9602.5 USDTTRC.
pub fn sample_order(id: &str, owner: &str, now: i64) -> swapd_core::offchain::order::Order {
    let address = |code: &str, text: &str| currency(code).network.parse_address(text).unwrap();
    swapd_core::offchain::order::Order {
        id: id.parse().expect("an order id"),
        owner: owner.parse().expect("an owner"),
        status: swapd_core::offchain::order::OrderStatus::AwaitingDeposit,
        version: 1,
        rate_type: swapd_core::market::RateType::Fixed,
        direction: swapd_core::market::Direction::From,
        from: currency("BTC"),
        to: currency("USDTTRC"),
        provider: "atlas".into(),
        provider_ref: format!("atlas-{id}"),
        desk_token: None,
        rate: amount("96025", "USDTTRC"),
        from_amount: amount("0.1", "BTC"),
        to_amount: amount("9602.5", "USDTTRC"),
        min: amount("0.0001", "BTC"),
        max: Some(amount("1", "BTC")),
        deposit_address: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq".into(),
        deposit_tag: None,
        to_address: address("USDTTRC", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"),
        to_tag: None,
        refund_address: None,
        refund_tag: None,
        deposits: vec![],
        payout_tx: None,
        payout_amount: None,
        refund_tx: None,
        refund_amount: None,
        emergency: None,
        affiliate_code: None,
        fees: Vec::new(),
        fees_realized: None,
        email: None,
        create_token_hash: None,
        created_at_ms: now,
        updated_at_ms: now,
        expires_at_ms: now + 1_800_000,
        next_check_at_ms: Some(now),
        desk_failures: 0,
        event_sequence: 0,
        failure_reason: None,
        page_url: None,
        exchange_started_at_ms: None,
        refund_requested: false,
    }
}

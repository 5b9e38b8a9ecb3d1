//! The store conformance suite on both backends. The PostgreSQL run needs
//! `SWAPD_TEST_POSTGRES_URL` and is mandatory under CI.

use std::sync::Arc;

use swapd_store::test_support::{PgTestSchema, postgres_url};
use swapd_store::{PgStore, SqliteStore, StoreOptions, conformance};

#[tokio::test]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}",
        dir.path().join("nested/dir/swapd.db").display()
    );
    let store = SqliteStore::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(store.journal_mode().await.unwrap(), "wal");
    conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn postgres_store_conforms() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let store = PgStore::open_with(schema.connect_options(), &StoreOptions::default())
        .await
        .unwrap();
    conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn postgres_url_with_search_path_option_selects_the_schema() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let store = swapd_store::open(&schema.database_url(), &StoreOptions::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'api_keys'",
    )
    .bind(schema.schema())
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables, 1);
}

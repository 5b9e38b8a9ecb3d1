//! The catalog shipped with swapd, served when no provider has answered since start. It is the
//! sandbox providers' catalog at a fixed moment; `snapshot_matches_the_sandbox_catalog`
//! regenerates it with `SWAPD_UPDATE_SNAPSHOT=1`.

use serde::{Deserialize, Serialize};
use swapd_core::amount::Amount;
use swapd_core::market::catalog::CatalogEntry;
use swapd_core::market::currencies::currency;

const SNAPSHOT: &str = include_str!("catalog_snapshot.json");

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    code: String,
    send: bool,
    receive: bool,
    min: Option<String>,
    max: Option<String>,
}

/// The shipped catalog.
pub fn catalog() -> Vec<CatalogEntry> {
    let entries: Vec<Entry> = serde_json::from_str(SNAPSHOT).expect("shipped snapshot parses");
    entries
        .into_iter()
        .map(|entry| {
            let def = currency(&entry.code).expect("snapshot codes are registered");
            let amount = |text: &str| Amount::parse(text, def.precision).expect("snapshot amount");
            CatalogEntry {
                currency: def,
                send: entry.send,
                receive: entry.receive,
                min: entry.min.as_deref().map(amount),
                max: entry.max.as_deref().map(amount),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use swapd_core::market::catalog::assemble;

    use swapd_sandbox::Faults;

    use super::*;

    #[tokio::test]
    async fn snapshot_matches_the_sandbox_catalog() {
        let sandbox = crate::test_venues::sandbox_venues(&Faults::default(), 0);
        let mut offers = Vec::new();
        for venue in &sandbox.venues {
            offers.extend(venue.provider().catalog(1_800_000_000_000).await.unwrap());
        }
        let entries: Vec<Entry> = assemble(&offers)
            .into_iter()
            .map(|e| Entry {
                code: e.currency.code.into(),
                send: e.send,
                receive: e.receive,
                min: e.min.map(|a| a.to_string()),
                max: e.max.map(|a| a.to_string()),
            })
            .collect();
        let generated = serde_json::to_string_pretty(&entries).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/catalog_snapshot.json");
        if std::env::var_os("SWAPD_UPDATE_SNAPSHOT").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        assert_eq!(
            SNAPSHOT, generated,
            "the snapshot is stale: rerun with SWAPD_UPDATE_SNAPSHOT=1"
        );
        assert!(catalog().len() >= 20);
    }
}

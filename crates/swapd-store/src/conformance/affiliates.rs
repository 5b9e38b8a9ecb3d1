//! Affiliates.

use super::*;

pub async fn affiliates_are_unique_listed_and_disabled(store: &Arc<dyn Store>) {
    use swapd_core::affiliates::Affiliate;
    let first = Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", 1_000).unwrap();
    let second = Affiliate::new("blog", "Blog", 100, "bc1q", 2_000).unwrap();
    store.insert_affiliate(&first).await.unwrap();
    store.insert_affiliate(&second).await.unwrap();
    assert!(matches!(
        store.insert_affiliate(&first).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.affiliate("wallet-app").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.affiliate("nobody").await.unwrap(), None);
    let codes: Vec<String> = store
        .list_affiliates()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.code)
        .collect();
    assert_eq!(codes, ["wallet-app", "blog"], "oldest first");
    let disabled = store
        .set_affiliate_active("wallet-app", false)
        .await
        .unwrap()
        .unwrap();
    assert!(!disabled.active);
    assert!(!store.affiliate("wallet-app").await.unwrap().unwrap().active);
    assert_eq!(
        store.set_affiliate_active("nobody", false).await.unwrap(),
        None
    );
}

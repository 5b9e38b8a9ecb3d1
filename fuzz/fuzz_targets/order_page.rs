//! The order page's link (`/o/{orderId}/{token}`): an order id is taken only in its exact
//! shape and prints back to itself; a token from the path is compared with the stored link
//! without panicking, and matches it only when it is the link's own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_api::page_token_matches;
use swapd_core::ids::OrderId;

fuzz_target!(|input: (&str, &str, &str)| {
    let (id, own, presented) = input;
    if let Some(order) = OrderId::parse(id) {
        assert_eq!(order.as_str(), id);
        assert!(swapd_types::ids::is_valid_id(id, "ord_"));
    }
    if own.contains('/') {
        return;
    }
    let link = format!("https://swapd.example/o/{id}/{own}");
    assert!(page_token_matches(Some(&link), own));
    assert_eq!(page_token_matches(Some(&link), presented), presented == own);
    assert!(!page_token_matches(None, presented));
});

//! Solana wire transactions (x402 `exact` on Solana): what parses is canonical, so it writes
//! back to the very bytes it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_x402::exact_svm::Transaction;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(transaction) = Transaction::parse(bytes) {
        assert_eq!(transaction.encode(), bytes);
    }
});

//! x402 headers: a payment (`PAYMENT-SIGNATURE`) or a payment requirement (`PAYMENT-REQUIRED`)
//! decodes to a value that encodes and decodes back to itself, and every scheme's verifier takes
//! any decoded payment against its own `accepted` without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_x402::wire::{PaymentPayload, PaymentRequired, decode_header, encode_header};
use swapd_x402::{exact, exact_svm, upto};

fuzz_target!(|text: &str| {
    if let Ok(payment) = decode_header::<PaymentPayload>(text) {
        let again: PaymentPayload = decode_header(&encode_header(&payment)).expect("round trip");
        assert_eq!(again, payment);
        let accepted = &payment.accepted;
        let _ = exact::verify(&payment, accepted, 1_900_000_000);
        let _ = exact_svm::verify(&payment, accepted, 6);
        let _ = upto::verify(&payment, accepted, 1_900_000_000);
    }
    if let Ok(required) = decode_header::<PaymentRequired>(text) {
        let again: PaymentRequired = decode_header(&encode_header(&required)).expect("round trip");
        assert_eq!(again, required);
    }
});

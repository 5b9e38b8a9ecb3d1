//! How a paid or wallet-bound route is documented: its access rule, security scheme and the
//! errors the gate may answer.

use axum::http::Method;
use swapd_types::ErrorCode;
use swapd_types::readiness::Access;
use utoipa::openapi::RefOr;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::SecurityRequirement;

use crate::route_doc::{document_errors, document_idempotency_key, document_page_token, has_body};

/// Marks a Business API operation mounted on the x402 surface with its charge and access rule,
/// and what the gate may answer for that rule.
/// `paged`: a wallet-bound read of a resource with a hosted page, which its page token opens.
pub(crate) fn charge_operation(
    operation: &mut Operation,
    method: &Method,
    access: Access,
    paged: bool,
) {
    use ErrorCode::*;
    let rule = match access {
        Access::Paid => "Paid per call.",
        Access::PaidWallet => {
            "Paid per call; acts for the wallet of the SIGN-IN-WITH-X proof, or else the payer."
        }
        Access::WalletRead => {
            "Free; needs a SIGN-IN-WITH-X proof of the wallet that owns the resource."
        }
        Access::Free => "Free.",
    };
    let own = operation.description.take().unwrap_or_default();
    operation.description = Some(format!("{rule} {own}"));
    operation.tags = Some(vec!["x402".into()]);
    let scheme = match access {
        Access::Paid | Access::PaidWallet => "x402",
        Access::WalletRead => "siwx",
        Access::Free => return,
    };
    operation.security = Some(vec![SecurityRequirement::new(scheme, Vec::<String>::new())]);
    let mut codes = vec![PaymentRequired];
    if access.paid() {
        codes.extend([
            PaymentInvalid,
            PaymentFailed,
            InvalidPaymentPayload,
            PaymentAlreadyUsed,
            PaymentInProgress,
            PaymentIdentifierConflict,
            PaidAttemptsExceeded,
            FacilitatorError,
        ]);
    }
    if matches!(access, Access::PaidWallet | Access::WalletRead) {
        codes.extend([InvalidSiwxPayload, SiwxInvalid]);
    }
    if matches!(access, Access::WalletRead) {
        codes.push(WalletReadsExceeded);
    }
    if has_body(method) {
        document_idempotency_key(operation);
    }
    if paged {
        document_page_token(operation);
    }
    document_errors(operation, &codes);
    if let Some(RefOr::T(response)) = operation.responses.responses.get_mut("402") {
        response.description = format!(
            "{}: the PAYMENT-REQUIRED header holds what to pay and, for wallet-bound routes, \
             the SIWX challenge",
            response.description
        );
    }
}

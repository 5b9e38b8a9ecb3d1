use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};

/// Declares every error code once: its variant, its wire string and its HTTP status.
macro_rules! error_codes {
    ($($variant:ident => $code:literal, $status:literal;)+) => {
        /// The stable error codes of both surfaces (docs/errors.md). Codes are never reused for
        /// another meaning; new codes may be added.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($variant,)+
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The wire string, e.g. `"signature_invalid"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }

            /// The HTTP status this code is always answered with.
            pub fn http_status(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $status,)+
                }
            }

            pub fn from_code(code: &str) -> Option<Self> {
                match code {
                    $($code => Some(ErrorCode::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    ValidationFailed => "validation_failed", 400;
    InvalidJson => "invalid_json", 400;
    AmountInvalid => "amount_invalid", 400;
    AddressInvalid => "address_invalid", 400;
    TagRequired => "tag_required", 400;
    IdempotencyKeyMissing => "idempotency_key_missing", 400;
    IdempotencyKeyInvalid => "idempotency_key_invalid", 400;
    PathNotCanonical => "path_not_canonical", 400;
    QueryInvalidEncoding => "query_invalid_encoding", 400;
    InvalidPaymentPayload => "invalid_payment_payload", 400;
    InvalidSiwxPayload => "invalid_siwx_payload", 400;
    BodyNotAllowed => "body_not_allowed", 400;
    DuplicateParameter => "duplicate_parameter", 400;
    WebhookUrlInvalid => "webhook_url_invalid", 400;
    WebhookUrlSchemeNotAllowed => "webhook_url_scheme_not_allowed", 400;
    WebhookUrlPortNotAllowed => "webhook_url_port_not_allowed", 400;
    WebhookUrlCredentialsNotAllowed => "webhook_url_credentials_not_allowed", 400;
    WebhookUrlHostNotAllowed => "webhook_url_host_not_allowed", 400;
    WebhookUrlUnresolvable => "webhook_url_unresolvable", 400;
    AuthHeaderMissing => "auth_header_missing", 401;
    AuthHeaderDuplicated => "auth_header_duplicated", 401;
    ApiKeyInvalid => "api_key_invalid", 401;
    ApiKeyRevoked => "api_key_revoked", 401;
    SignatureMalformed => "signature_malformed", 401;
    SignatureInvalid => "signature_invalid", 401;
    TimestampInvalid => "timestamp_invalid", 401;
    TimestampOutOfWindow => "timestamp_out_of_window", 401;
    NonceInvalid => "nonce_invalid", 401;
    NonceReused => "nonce_reused", 401;
    SiwxRequired => "siwx_required", 401;
    SiwxInvalid => "siwx_invalid", 401;
    ExecutionTokenMissing => "execution_token_missing", 401;
    ExecutionTokenInvalid => "execution_token_invalid", 401;
    PaymentRequired => "payment_required", 402;
    PaymentInvalid => "payment_invalid", 402;
    PaymentFailed => "payment_failed", 402;
    PermissionDenied => "permission_denied", 403;
    IpNotAllowed => "ip_not_allowed", 403;
    OriginNotAllowed => "origin_not_allowed", 403;
    WalletMismatch => "wallet_mismatch", 403;
    NotFound => "not_found", 404;
    OrderNotFound => "order_not_found", 404;
    RouteNotFound => "route_not_found", 404;
    ExecutionNotFound => "execution_not_found", 404;
    WebhookNotFound => "webhook_not_found", 404;
    EventNotFound => "event_not_found", 404;
    JobNotFound => "job_not_found", 404;
    MethodNotAllowed => "method_not_allowed", 405;
    IdempotencyKeyInUse => "idempotency_key_in_use", 409;
    OrderStateConflict => "order_state_conflict", 409;
    OrderNotRefundable => "order_not_refundable", 409;
    ChoiceNotAllowed => "choice_not_allowed", 409;
    CreateTokenUsed => "create_token_used", 409;
    RotationInProgress => "rotation_in_progress", 409;
    ExecutionAlreadyReported => "execution_already_reported", 409;
    PaymentAlreadyUsed => "payment_already_used", 409;
    PaymentInProgress => "payment_in_progress", 409;
    PaymentIdentifierConflict => "payment_identifier_conflict", 409;
    WebhookLimitReached => "webhook_limit_reached", 409;
    WebhookDisabled => "webhook_disabled", 409;
    DeskActionUnsupported => "desk_action_unsupported", 409;
    QuoteExpired => "quote_expired", 410;
    CreateTokenExpired => "create_token_expired", 410;
    PlanExpired => "plan_expired", 410;
    PayloadTooLarge => "payload_too_large", 413;
    UriTooLong => "uri_too_long", 414;
    UnsupportedMediaType => "unsupported_media_type", 415;
    ContentEncodingUnsupported => "content_encoding_unsupported", 415;
    IdempotencyKeyReused => "idempotency_key_reused", 422;
    PairUnsupported => "pair_unsupported", 422;
    AffiliateUnknown => "affiliate_unknown", 422;
    AmountOutOfRange => "amount_out_of_range", 422;
    RouteUnavailable => "route_unavailable", 422;
    RecipientRequired => "recipient_required", 422;
    WalletUnsupported => "wallet_unsupported", 422;
    ExecutionSignatureInvalid => "execution_signature_invalid", 422;
    RateLimitExceeded => "rate_limit_exceeded", 429;
    IpRateLimited => "ip_rate_limited", 429;
    QuotaExceeded => "quota_exceeded", 429;
    PaidAttemptsExceeded => "paid_attempts_exceeded", 429;
    WalletReadsExceeded => "wallet_reads_exceeded", 429;
    HeadersTooLarge => "headers_too_large", 431;
    InternalError => "internal_error", 500;
    ProviderError => "provider_error", 502;
    FacilitatorError => "facilitator_error", 502;
    ServiceUnavailable => "service_unavailable", 503;
    AuthUnavailable => "auth_unavailable", 503;
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        ErrorCode::from_code(&code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error code `{code}`")))
    }
}

impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .description(Some(
                "Stable error code. Each code always comes with the same HTTP status.",
            ))
            .enum_values(Some(ErrorCode::ALL.iter().map(|c| c.as_str())))
            .into()
    }
}

impl ToSchema for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_and_round_trip() {
        let mut seen = HashSet::new();
        for &code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s}");
            assert_eq!(ErrorCode::from_code(s), Some(code));
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn statuses_follow_the_design_table() {
        assert_eq!(ErrorCode::ValidationFailed.http_status(), 400);
        assert_eq!(ErrorCode::NonceReused.http_status(), 401);
        assert_eq!(ErrorCode::PaymentRequired.http_status(), 402);
        assert_eq!(ErrorCode::OriginNotAllowed.http_status(), 403);
        assert_eq!(ErrorCode::JobNotFound.http_status(), 404);
        assert_eq!(ErrorCode::IdempotencyKeyInUse.http_status(), 409);
        assert_eq!(ErrorCode::PlanExpired.http_status(), 410);
        assert_eq!(ErrorCode::PayloadTooLarge.http_status(), 413);
        assert_eq!(ErrorCode::UnsupportedMediaType.http_status(), 415);
        assert_eq!(ErrorCode::IdempotencyKeyReused.http_status(), 422);
        assert_eq!(ErrorCode::WalletReadsExceeded.http_status(), 429);
        assert_eq!(ErrorCode::FacilitatorError.http_status(), 502);
        assert_eq!(ErrorCode::AuthUnavailable.http_status(), 503);
    }
}

#[cfg(test)]
mod doc_tests {
    use super::ErrorCode;

    #[test]
    fn every_code_is_documented_in_docs_errors_md() {
        let doc = include_str!("../../../docs/errors.md");
        for code in ErrorCode::ALL {
            let cell = format!("`{}`", code.as_str());
            assert!(doc.contains(&cell), "docs/errors.md does not list {cell}");
        }
    }
}

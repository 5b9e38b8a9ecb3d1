//! Why a use case refused or failed, in the domain's terms; each surface maps it to its own
//! answer (the HTTP API through [`Error::code`], DESIGN's stable error codes).

use std::time::Duration;

use swapd_core::StoreError;
use swapd_core::market::routes::RedeemError;
use swapd_core::offchain::actions::ChoiceError;
use swapd_core::onchain::plan::ReportError;
use swapd_core::webhooks::url_policy::UrlProblem;
use swapd_types::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field of the input breaks a rule (`validation_failed`, naming the field).
    #[error("{field}: {problem}")]
    Invalid { field: String, problem: String },
    #[error("{0}")]
    AmountInvalid(String),
    #[error("{0}")]
    AddressInvalid(String),
    #[error("{0}")]
    TagRequired(String),
    #[error("{0}")]
    PairUnsupported(String),
    /// No active affiliate has the code.
    #[error("{0}")]
    AffiliateUnknown(String),
    #[error("{0}")]
    AmountOutOfRange(String),
    #[error("no order with this id belongs to this key")]
    OrderNotFound,
    #[error(transparent)]
    CreateToken(#[from] RedeemError),
    #[error("{0}")]
    RouteUnavailable(String),
    #[error("no route quote with this routeQuoteId was issued to this key")]
    RouteNotFound,
    #[error("{0}")]
    QuoteExpired(String),
    /// A bridge to another namespace than the signer's needs a recipient.
    #[error("{0}")]
    RecipientRequired(String),
    /// The provider refused or could not do what was asked (in swapd's words, never its own).
    #[error("{0}")]
    Provider(String),
    /// The provider is briefly out of reach: nothing was done, the same request may work soon.
    #[error("{message}")]
    ProviderUnavailable {
        message: String,
        retry_after: Option<Duration>,
    },
    #[error(transparent)]
    Choice(#[from] ChoiceError),
    #[error("{0}")]
    DeskActionUnsupported(String),
    #[error("the order keeps changing; read it and try again")]
    OrderKeepsChanging,
    #[error("{0}")]
    WalletUnsupported(String),
    #[error("{0}")]
    WalletMismatch(String),
    #[error("no execution plan with this id was resolved by this key")]
    ExecutionNotFound,
    #[error("{0}")]
    ExecutionTokenInvalid(String),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{0}")]
    SignatureInvalid(String),
    /// Others keep writing what this request would change: nothing was done, retry.
    #[error("{0}")]
    Busy(String),
    #[error("no market-intel job with this id belongs to this wallet")]
    JobNotFound,
    #[error("no webhook subscription with this id belongs to this key")]
    WebhookNotFound,
    #[error("{0}")]
    WebhookLimitReached(String),
    /// A webhook URL swapd may not deliver to (docs/webhooks.md, "Where deliveries may go").
    #[error(transparent)]
    WebhookUrl(#[from] UrlProblem),
    #[error(
        "the previous rotation's grace is still running; wait for it, or rotate with force: true"
    )]
    RotationInProgress,
    #[error("the subscription is disabled; enable it (PATCH status: active) to replay")]
    WebhookDisabled,
    #[error("no event `{0}` of this key")]
    EventNotFound(String),
    /// A budget of the caller's is spent until `retry_after`.
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after: Duration,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A fault of swapd's own (an unreadable stored value): logged, never shown.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.chars().take(64).collect(),
            problem: problem.into(),
        }
    }

    /// The stable code of this error. A store fault keeps its own mapping (the surface's).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Invalid { .. } => ErrorCode::ValidationFailed,
            Self::AmountInvalid(_) => ErrorCode::AmountInvalid,
            Self::AddressInvalid(_) => ErrorCode::AddressInvalid,
            Self::TagRequired(_) => ErrorCode::TagRequired,
            Self::PairUnsupported(_) => ErrorCode::PairUnsupported,
            Self::AffiliateUnknown(_) => ErrorCode::AffiliateUnknown,
            Self::AmountOutOfRange(_) => ErrorCode::AmountOutOfRange,
            Self::OrderNotFound => ErrorCode::OrderNotFound,
            Self::CreateToken(RedeemError::NotFound) => ErrorCode::NotFound,
            Self::CreateToken(RedeemError::Used) => ErrorCode::CreateTokenUsed,
            Self::CreateToken(RedeemError::Expired) => ErrorCode::CreateTokenExpired,
            Self::RouteUnavailable(_) => ErrorCode::RouteUnavailable,
            Self::RouteNotFound => ErrorCode::RouteNotFound,
            Self::QuoteExpired(_) => ErrorCode::QuoteExpired,
            Self::RecipientRequired(_) => ErrorCode::RecipientRequired,
            Self::Provider(_) => ErrorCode::ProviderError,
            Self::ProviderUnavailable { .. } | Self::Store(_) => ErrorCode::ServiceUnavailable,
            // A rule on the order's state: the body must give what the order lacks.
            Self::Choice(ChoiceError::RefundAddressMissing) => ErrorCode::ValidationFailed,
            Self::Choice(ChoiceError::NotInEmergency(_) | ChoiceError::AlreadyChosen(_))
            | Self::OrderKeepsChanging => ErrorCode::OrderStateConflict,
            Self::Choice(ChoiceError::NotAllowed { .. }) => ErrorCode::ChoiceNotAllowed,
            Self::Choice(ChoiceError::NotRefundable(_)) => ErrorCode::OrderNotRefundable,
            Self::DeskActionUnsupported(_) => ErrorCode::DeskActionUnsupported,
            Self::WalletUnsupported(_) => ErrorCode::WalletUnsupported,
            Self::WalletMismatch(_) => ErrorCode::WalletMismatch,
            Self::ExecutionNotFound => ErrorCode::ExecutionNotFound,
            Self::ExecutionTokenInvalid(_) => ErrorCode::ExecutionTokenInvalid,
            Self::Report(ReportError::PlanExpired) => ErrorCode::PlanExpired,
            Self::Report(ReportError::AlreadyReported) => ErrorCode::ExecutionAlreadyReported,
            Self::Report(ReportError::WrongKind(_)) => ErrorCode::ValidationFailed,
            Self::SignatureInvalid(_) => ErrorCode::ExecutionSignatureInvalid,
            Self::Busy(_) => ErrorCode::ServiceUnavailable,
            Self::JobNotFound => ErrorCode::JobNotFound,
            Self::WebhookNotFound => ErrorCode::WebhookNotFound,
            Self::WebhookLimitReached(_) => ErrorCode::WebhookLimitReached,
            Self::WebhookUrl(problem) => match problem {
                UrlProblem::Invalid(_) => ErrorCode::WebhookUrlInvalid,
                UrlProblem::Scheme => ErrorCode::WebhookUrlSchemeNotAllowed,
                UrlProblem::Port => ErrorCode::WebhookUrlPortNotAllowed,
                UrlProblem::Credentials => ErrorCode::WebhookUrlCredentialsNotAllowed,
                UrlProblem::Host(_) => ErrorCode::WebhookUrlHostNotAllowed,
                UrlProblem::Unresolvable(_) => ErrorCode::WebhookUrlUnresolvable,
            },
            Self::RotationInProgress => ErrorCode::RotationInProgress,
            Self::WebhookDisabled => ErrorCode::WebhookDisabled,
            Self::EventNotFound(_) => ErrorCode::EventNotFound,
            Self::RateLimited { .. } => ErrorCode::RateLimitExceeded,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The field an error is about and what is wrong with it, when it names one.
    pub fn field_problem(&self) -> Option<(&str, String)> {
        match self {
            Self::Invalid { field, problem } => Some((field, problem.clone())),
            Self::Choice(ChoiceError::RefundAddressMissing) => Some((
                "refundAddress",
                "is required: the order was created without one".into(),
            )),
            _ => None,
        }
    }

    /// A stored value swapd cannot read back.
    pub(crate) fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }
}

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ErrorCode;

/// `{"success": true, "data": ...}`: the body of every successful response.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Success<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
}

impl<T> Success<T> {
    pub fn new(data: T) -> Self {
        Self {
            success: true,
            data,
        }
    }
}

/// `{"success": false, "error": {...}}`: the body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always `false`.
    pub success: bool,
    pub error: ErrorBody,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable, machine-readable code (lowercase snake case). Never reused for another meaning.
    pub code: ErrorCode,
    /// Human-readable explanation, safe to show to a developer.
    pub message: String,
    /// For validation errors: which fields are wrong and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<FieldProblem>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldProblem {
    pub field: String,
    pub problem: String,
}

impl ErrorEnvelope {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            success: false,
            error: ErrorBody {
                code,
                message: message.into(),
                details: None,
            },
        }
    }
}

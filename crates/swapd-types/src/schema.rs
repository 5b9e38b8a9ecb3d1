//! Field schemas the OpenAPI documents share, each stating a rule the server checks, built from
//! the same constants.

use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};

/// The most integer digits an amount may have.
pub const MAX_WHOLE_DIGITS: usize = 30;
/// The most fraction digits any currency has (each currency allows at most its own precision).
pub const MAX_DECIMALS: u8 = 18;

/// A decimal amount string greater than zero: digits, optionally a point and fraction digits.
pub fn amount() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(amount_pattern()))
        .description(Some(
            "Decimal string greater than zero, at most the currency's precision in fraction digits",
        ))
}

pub fn amount_pattern() -> String {
    format!("^(?=[0-9.]*[1-9])[0-9]{{1,{MAX_WHOLE_DIGITS}}}(\\.[0-9]{{1,{MAX_DECIMALS}}})?$")
}

pub fn optional_amount() -> ObjectBuilder {
    nullable(amount())
}

/// [`crate::orders::is_email_address`], as the mailer's parser also takes it: a local part of
/// 1 to 64 characters an unquoted address may use (dot-separated, no empty part), and a domain
/// of two or more labels of 1 to 63 letters, digits and inner hyphens.
pub fn email() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(254))
        .pattern(Some(EMAIL_PATTERN))
}

/// The pattern of [`email`].
pub const EMAIL_PATTERN: &str = "^(?=[^@]{1,64}@)[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

pub fn optional_email() -> ObjectBuilder {
    nullable(email())
}

fn nullable(schema: ObjectBuilder) -> ObjectBuilder {
    schema.schema_type(SchemaType::from_iter([Type::String, Type::Null]))
}

/// A query parameter that is an [`amount`].
pub struct AmountParam;

impl utoipa::PartialSchema for AmountParam {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        amount().into()
    }
}

impl utoipa::ToSchema for AmountParam {}

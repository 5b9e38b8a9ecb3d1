//! What the server-rendered pages (the order and execution pages, the console) share: their
//! security headers and how they show times.

use axum::http::{HeaderValue, header};
use axum::response::Response;

/// `response` never cached, framed, sniffed or referred, under the content security policy
/// `csp`.
pub(crate) fn secured(mut response: Response, csp: &'static str) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CONTENT_SECURITY_POLICY, csp),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Unix seconds as `2026-11-26 16:05:09 UTC`.
pub(crate) fn utc(secs: i64) -> String {
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp(secs) else {
        return secs.to_string();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_651_200), "2026-11-26 00:00:00 UTC");
        assert_eq!(utc(951_782_400 + 86_399), "2000-02-29 23:59:59 UTC");
    }
}

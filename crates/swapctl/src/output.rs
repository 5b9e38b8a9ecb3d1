//! Printing: the API's `data` as JSON with `--json`, short human text otherwise.

use serde::Serialize;

pub struct Out {
    pub json: bool,
}

impl Out {
    /// Prints `value` as pretty JSON when `--json` was given and returns true; the caller prints
    /// its human form otherwise.
    pub fn json<T: Serialize>(&self, value: &T) -> anyhow::Result<bool> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(value)?);
        }
        Ok(self.json)
    }

    /// One compact JSON line (streams: `order watch`, `webhooks listen`).
    pub fn line<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        println!("{}", serde_json::to_string(value)?);
        Ok(())
    }
}

/// `n` and the noun, singular for one: `1 route`, `3 routes`, `1 delivery`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text`, or `-` for nothing.
pub fn or_dash(text: Option<&str>) -> &str {
    text.unwrap_or("-")
}

/// A Unix time as seconds from now: `in 29m 12s`, `3s ago`.
pub fn relative(unix_secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let delta = unix_secs - now;
    let span = delta.unsigned_abs();
    let text = match span {
        0..60 => format!("{span}s"),
        60..3_600 => format!("{}m {}s", span / 60, span % 60),
        _ => format!("{}h {}m", span / 3_600, span % 3_600 / 60),
    };
    if delta >= 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_say_one_thing_or_many() {
        assert_eq!(super::count(1, "route", "routes"), "1 route");
        assert_eq!(super::count(0, "route", "routes"), "0 routes");
        assert_eq!(super::count(2, "delivery", "deliveries"), "2 deliveries");
    }
}

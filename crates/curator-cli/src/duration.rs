//! Durations written the way people type them: `10s`, `500ms`, `2m`, `1h`, `1.5s`.

use std::time::Duration;

/// Parses `500ms`, `10s`, `2m`, `1h` or `1.5s` (a bare number counts as seconds).
///
/// ```
/// use std::time::Duration;
/// use curator_cli::parse_duration;
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
/// assert!(parse_duration("soon").is_err());
/// ```
///
/// # Errors
/// A message naming the bad input when it is not a non-negative number with one of the units
/// `ms`, `s`, `m`, `h`.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    let text = input.trim();
    if text.starts_with('-') {
        return Err(format!("`{input}` is negative: a duration is 0 or more"));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || format!("`{input}` is not a duration (examples: 500ms, 10s, 2m, 1h)");
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// `1.5s`, `250ms`, `2m`: a short human form of a duration.
pub(crate) fn human(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_garbage() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration(" 250ms "), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "s", "-1s", "10x", "1.2.3s", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn prints_short_forms() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_secs(10)), "10s");
        assert_eq!(human(Duration::from_secs(120)), "2m");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
    }
}

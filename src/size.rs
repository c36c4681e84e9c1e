//! Human sizes: `4096`, `4K`/`4KiB` (1024-based), `4KB` (1000-based), up to exabytes.

use crate::error::{Error, Result};

const EXPECTED: &str = "expected a whole number with an optional suffix K, M, G, T, P, E \
(1024-based, also KiB...) or KB, MB, GB... (1000-based), e.g. 4096, 4K, 1MiB";

/// Parses a size in bytes. Errors name the bad text and the expected form.
///
/// ```
/// use iolab::size::parse_size;
/// assert_eq!(parse_size("4K").unwrap(), 4096);
/// assert_eq!(parse_size("4KB").unwrap(), 4000);
/// assert!(parse_size("4Q").unwrap_err().to_string().contains("'4Q'"));
/// ```
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = |why: &str| {
        Error::usage(
            format!("invalid size '{text}'"),
            format!("{why}; {EXPECTED}"),
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("empty"));
    }
    if t.starts_with('-') {
        return Err(bad("sizes cannot be negative"));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(bad("no number"));
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| bad("number too large"))?;
    let suffix = t[digits_end..].trim();
    let multiplier = suffix_multiplier(suffix).ok_or_else(|| bad("unknown suffix"))?;
    number
        .checked_mul(multiplier)
        .ok_or_else(|| bad("too large for 64 bits"))
}

fn suffix_multiplier(suffix: &str) -> Option<u64> {
    let upper = suffix.to_ascii_uppercase();
    if upper.is_empty() || upper == "B" {
        return Some(1);
    }
    let s = upper.as_str();
    let s = s.strip_suffix("IB").map(|p| (p, 1024u64)).or_else(|| {
        s.strip_suffix('B')
            .filter(|p| !p.is_empty())
            .map(|p| (p, 1000u64))
    });
    let (prefix, base) = match s {
        Some((p, b)) => (p.to_string(), b),
        None => (upper.clone(), 1024),
    };
    let power = match prefix.as_str() {
        "" => {
            return if upper.is_empty() || upper == "B" {
                Some(1)
            } else {
                None
            };
        }
        "K" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    Some(base.pow(power))
}

/// Formats bytes with a binary suffix, e.g. `1.50 GiB`, `4 KiB`, `17 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// MiB per second, the unit every rate is printed in.
pub fn mib_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds <= 0.0 {
        return 0.0;
    }
    bytes as f64 / 1_048_576.0 / seconds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_suffixed() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4KB").unwrap(), 4000);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1E").unwrap(), 1 << 60);
        assert_eq!(parse_size("15E").unwrap(), 15 << 60);
        assert_eq!(parse_size("7B").unwrap(), 7);
        assert_eq!(parse_size("0").unwrap(), 0);
    }

    #[test]
    fn rejects_bad_text_naming_it() {
        for bad in [
            "",
            "-1",
            "4Q",
            "K",
            "1.5G",
            "16E",
            "99999999999999999999",
            "4 KQ",
        ] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
            assert!(e.to_string().contains("e.g. 4096"), "{e}");
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(17), "17 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(3 << 29), "1.50 GiB");
    }
}

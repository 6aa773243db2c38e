//! `retries` (docs/config.md): a failed root test's re-runs and the wait before each, as
//! nextest's: `retries = 2`, or `retries = { count = 2, backoff = "exponential", delay = "30s",
//! jitter = true, max_delay = "5m" }`, in `[supervisor]` or a test file. Pure: the wait before
//! a retry is a function of the policy, the retry's number and a random fraction.

use serde::Deserialize;
use std::time::Duration;

/// `retries` as written: a number (the count, no wait) or a table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RetriesSetting {
    Count(u32),
    Policy(RetriesTable),
}

/// `retries = { … }` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetriesTable {
    pub count: u32,
    #[serde(default)]
    pub backoff: Backoff,
    /// `"30s"`, `"500ms"`, `"2m"`, `"1h"`; 0 when left out.
    pub delay: Option<String>,
    #[serde(default)]
    pub jitter: bool,
    /// The longest an exponential wait grows to.
    pub max_delay: Option<String>,
}

/// How the wait grows from one retry to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    /// The same `delay` before every retry.
    #[default]
    Fixed,
    /// `delay`, then twice as long before each next retry (up to `max_delay`).
    Exponential,
}

impl Backoff {
    pub fn as_str(self) -> &'static str {
        match self {
            Backoff::Fixed => "fixed",
            Backoff::Exponential => "exponential",
        }
    }
}

/// The effective policy: how many re-runs, and the wait before each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryPolicy {
    pub count: u32,
    pub backoff: Backoff,
    pub delay: Duration,
    /// Each wait is a random 50–100 % of its computed value (nextest's jitter), so shards that
    /// failed together do not retry together.
    pub jitter: bool,
    pub max_delay: Option<Duration>,
}

impl RetryPolicy {
    /// A policy from `retries` as written, or why it cannot be one.
    pub fn from_setting(setting: &RetriesSetting) -> Result<Self, String> {
        match setting {
            RetriesSetting::Count(count) => Ok(RetryPolicy {
                count: *count,
                ..RetryPolicy::default()
            }),
            RetriesSetting::Policy(t) => {
                let parse = |field: &str, v: &Option<String>| {
                    v.as_deref()
                        .map(parse_duration)
                        .transpose()
                        .map_err(|e| format!("`retries.{field}`: {e}"))
                };
                Ok(RetryPolicy {
                    count: t.count,
                    backoff: t.backoff,
                    delay: parse("delay", &t.delay)?.unwrap_or_default(),
                    jitter: t.jitter,
                    max_delay: parse("max_delay", &t.max_delay)?,
                })
            }
        }
    }

    /// The wait before the `retry`-th re-run (1 = the first retry); `random` in 0..1 scales it
    /// when jitter is on.
    pub fn delay_before(&self, retry: u32, random: f64) -> Duration {
        let base = match self.backoff {
            Backoff::Fixed => self.delay,
            Backoff::Exponential => {
                let doublings = retry.saturating_sub(1).min(20);
                self.delay.saturating_mul(1u32 << doublings)
            }
        };
        let capped = self.max_delay.map_or(base, |max| base.min(max));
        if self.jitter {
            capped.mul_f64(0.5 + 0.5 * random.clamp(0.0, 1.0))
        } else {
            capped
        }
    }

    /// `2`, or `2 (exponential from 30s, jitter)`: for `check`.
    pub fn describe(&self) -> String {
        if self.delay.is_zero() {
            return self.count.to_string();
        }
        format!(
            "{} ({} from {}ms{}{})",
            self.count,
            self.backoff.as_str(),
            self.delay.as_millis(),
            self.max_delay
                .map_or(String::new(), |m| format!(", at most {}ms", m.as_millis())),
            if self.jitter { ", jitter" } else { "" }
        )
    }
}

/// `"30s"`, `"500ms"`, `"2m"`, `"1h"`, `"1.5s"`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (`500ms`, `30s`, `2m`, `1h`)"))?;
    let seconds = match unit.trim() {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "`{text}` has no unit of `ms`, `s`, `m` or `h` (`500ms`, `30s`, `2m`, `1h`)"
            ))
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("`{text}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> RetryPolicy {
        #[derive(Deserialize)]
        struct Doc {
            retries: RetriesSetting,
        }
        let doc: Doc = toml::from_str(text).expect("toml");
        RetryPolicy::from_setting(&doc.retries).expect("a policy")
    }

    #[test]
    fn a_number_stays_the_count_and_waits_nothing() {
        let p = policy("retries = 2");
        assert_eq!((p.count, p.delay_before(1, 0.3)), (2, Duration::ZERO));
    }

    #[test]
    fn exponential_doubles_up_to_its_cap_and_jitter_keeps_half_to_all() {
        let p = policy(
            "retries = { count = 4, backoff = \"exponential\", delay = \"1s\", max_delay = \"3s\" }",
        );
        let waits: Vec<u64> = (1..=4)
            .map(|n| p.delay_before(n, 0.0).as_millis() as u64)
            .collect();
        assert_eq!(waits, [1000, 2000, 3000, 3000]);
        let j = policy("retries = { count = 1, delay = \"500ms\", jitter = true }");
        assert_eq!(j.delay_before(1, 0.0), Duration::from_millis(250));
        assert_eq!(j.delay_before(1, 1.0), Duration::from_millis(500));
    }

    #[test]
    fn a_bad_duration_or_field_is_refused() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Doc {
            retries: RetriesSetting,
        }
        let doc: Doc = toml::from_str("retries = { count = 1, delay = \"soon\" }").expect("toml");
        let e = RetryPolicy::from_setting(&doc.retries).unwrap_err();
        assert!(e.contains("retries.delay") && e.contains("soon"), "{e}");
        assert!(toml::from_str::<Doc>("retries = { count = 1, wait = \"1s\" }").is_err());
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    }
}

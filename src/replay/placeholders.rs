//! A session's own values in recorded inputs: written as `${NAME}` when recorded, filled with the
//! next session's values at replay (docs/replay.md). A command the agent typed as
//! `curl localhost:41234/health` is recorded as `curl localhost:${APP_PORT}/health` and replays
//! against whatever port the next session chose.
//!
//! Secrets go through the model's redaction ([`Secrets`]) like every other artifact, and
//! their `[REDACTED:NAME]` becomes `${NAME}`: the value never reaches the file, and the replay
//! fills it from the session.

use crate::model::redact::Secrets;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The names and values a session substitutes, and its secrets.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    /// Longest value first, so that a run directory is one placeholder, not the project root and
    /// a tail.
    values: Vec<(String, String)>,
    secret_names: Vec<String>,
    secret_values: Vec<(String, String)>,
    secrets: Secrets,
}

impl Placeholders {
    /// `values`: the session's volatile values by name (ports, `BUGATTI_*` directories and ids);
    /// `secrets`: its `[secrets]`, by name. Values shorter than
    /// [`super::normalize::MIN_VOLATILE_LEN`] are left as typed.
    pub fn new(
        values: impl IntoIterator<Item = (String, String)>,
        secrets: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        let mut values: Vec<(String, String)> = values
            .into_iter()
            .filter(|(_, v)| v.chars().count() >= super::normalize::MIN_VOLATILE_LEN)
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        let secret_values: Vec<(String, String)> =
            secrets.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        Self {
            values,
            secret_names: secret_values.iter().map(|(n, _)| n.clone()).collect(),
            secrets: Secrets::new(secret_values.iter().map(|(n, v)| (n.clone(), v.clone()))),
            secret_values,
        }
    }

    /// The session's values as volatile values for a [`super::normalize::Normalizer`].
    pub fn volatiles(&self) -> impl Iterator<Item = super::normalize::Volatile> + '_ {
        self.values
            .iter()
            .map(|(n, v)| super::normalize::Volatile::new(n.clone(), v.clone()))
    }

    /// Redacts secrets in an output (the form the recording keeps and the replay compares).
    pub fn redact(&self, output: &str) -> String {
        self.secrets.redact_str(output)
    }

    /// An input as recorded: secrets as `${NAME}`, then the session's values as `${NAME}`.
    pub fn insert(&self, input: &str) -> String {
        let mut text = self.secrets.redact_str(input);
        for name in &self.secret_names {
            text = text.replace(&format!("[REDACTED:{name}]"), &format!("${{{name}}}"));
        }
        for (name, value) in &self.values {
            text = replace_value(&text, value, &format!("${{{name}}}"));
        }
        text
    }

    /// A recorded input for this session: every `${NAME}` it knows filled; any other `${…}` (a
    /// shell variable the agent typed) left as it was.
    pub fn fill(&self, recorded: &str) -> String {
        let mut text = recorded.to_string();
        for (name, value) in self.values.iter().chain(&self.secret_values) {
            text = text.replace(&format!("${{{name}}}"), value);
        }
        text
    }

    /// [`Self::insert`] on every string of a JSON value (call arguments).
    pub fn insert_json(&self, value: &Value) -> Value {
        map_strings(value, &|s| self.insert(s))
    }

    /// [`Self::fill`] on every string of a JSON value.
    pub fn fill_json(&self, value: &Value) -> Value {
        map_strings(value, &|s| self.fill(s))
    }
}

/// Replaces `value` by `with`; a number only where it stands whole (port 8080 is not inside 18080).
fn replace_value(text: &str, value: &str, with: &str) -> String {
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return text.replace(value, with);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(value) {
        let before = rest[..at].bytes().last();
        let after = rest[at + value.len()..].bytes().next();
        let whole = !before.is_some_and(|b| b.is_ascii_digit())
            && !after.is_some_and(|b| b.is_ascii_digit());
        out.push_str(&rest[..at]);
        out.push_str(if whole { with } else { value });
        rest = &rest[at + value.len()..];
    }
    out.push_str(rest);
    out
}

fn map_strings(value: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The key of an instruction: SHA-256 (hex) of the instruction as sent with only the session's
/// own values (and secrets) as placeholders, so that any other change of wording or value is a
/// miss.
pub fn instruction_hash(placeholders: &Placeholders, instruction: &str) -> String {
    let digest = Sha256::digest(placeholders.insert(instruction).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(port: &str, ws: &str) -> Placeholders {
        Placeholders::new(
            [
                ("APP_PORT".to_string(), port.to_string()),
                ("BUGATTI_WORKDIR".to_string(), ws.to_string()),
            ],
            [("API_TOKEN".to_string(), "s3cr3t-value".to_string())],
        )
    }

    #[test]
    fn inputs_carry_placeholders_and_no_secret() {
        let a = session("41234", "/tmp/ws-a");
        let typed = "cd /tmp/ws-a && curl -H 'X: s3cr3t-value' localhost:41234/x?n=141234";
        let recorded = a.insert(typed);
        assert_eq!(
            recorded,
            "cd ${BUGATTI_WORKDIR} && curl -H 'X: ${API_TOKEN}' localhost:${APP_PORT}/x?n=141234"
        );
        assert!(!recorded.contains("s3cr3t"));
        let b = session("50000", "/tmp/ws-b");
        assert_eq!(
            b.fill(&recorded),
            "cd /tmp/ws-b && curl -H 'X: s3cr3t-value' localhost:50000/x?n=141234"
        );
        // A shell variable the agent typed is not ours to fill.
        assert_eq!(b.fill("echo ${HOME}"), "echo ${HOME}");
    }

    #[test]
    fn json_arguments_too() {
        let a = session("41234", "/tmp/ws-a");
        let args = serde_json::json!({"cmd": "curl localhost:41234", "yield_time_ms": 1000});
        let recorded = a.insert_json(&args);
        assert_eq!(recorded["cmd"], "curl localhost:${APP_PORT}");
        assert_eq!(recorded["yield_time_ms"], 1000);
        assert_eq!(a.fill_json(&recorded), args);
    }

    #[test]
    fn outputs_are_redacted() {
        let a = session("41234", "/tmp/ws-a");
        assert_eq!(a.redact("token=s3cr3t-value"), "token=[REDACTED:API_TOKEN]");
    }

    #[test]
    fn instruction_hash_is_exact_but_for_the_sessions_values() {
        let a = Placeholders::new([("APP_PORT".to_string(), "41234".to_string())], []);
        let b = Placeholders::new([("APP_PORT".to_string(), "50000".to_string())], []);
        let h = |p: &Placeholders, port: &str| {
            instruction_hash(
                p,
                &format!("Open http://localhost:{port}/ and check the title"),
            )
        };
        assert_eq!(h(&a, "41234"), h(&b, "50000"));
        assert_eq!(h(&a, "41234").len(), 64);
        // A date, a duration, a number: any other change is a miss.
        for (x, y) in [
            ("due date is 2026-12-31", "due date is 2027-01-15"),
            ("ttl is 30 minutes", "ttl is 45 minutes"),
            ("check the title", "check the footer"),
        ] {
            assert_ne!(instruction_hash(&a, x), instruction_hash(&a, y), "{x}");
        }
    }
}

//! Redaction applied to everything the reporter writes: text, and JSON values string by string
//! (redacting serialized JSON text would miss a secret whose value JSON escapes).

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::model::redact::Secrets;
use crate::report::ground::error::ReportError;

/// One or more sets of secrets (the suite's and a run's), applied in turn.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    sets: Vec<Arc<Secrets>>,
}

impl Redactor {
    pub fn new(sets: impl IntoIterator<Item = Arc<Secrets>>) -> Self {
        Self {
            sets: sets.into_iter().filter(|s| !s.is_empty()).collect(),
        }
    }

    /// This redactor plus one more set.
    pub fn with(&self, more: Arc<Secrets>) -> Self {
        let mut sets = self.sets.clone();
        if !more.is_empty() && !sets.iter().any(|s| Arc::ptr_eq(s, &more)) {
            sets.push(more);
        }
        Self { sets }
    }

    pub fn sets(&self) -> &[Arc<Secrets>] {
        &self.sets
    }

    pub fn str(&self, text: &str) -> String {
        let mut out = text.to_string();
        for set in &self.sets {
            out = set.redact_str(&out);
        }
        out
    }

    /// Redacts every string (and object key) inside `value`.
    pub fn value(&self, value: &mut Value) {
        if self.sets.is_empty() {
            return;
        }
        match value {
            Value::String(s) => *s = self.str(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.value(&mut v);
                    map.insert(self.str(&k), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `data` as redacted JSON: compact (one line) or pretty.
    pub fn json<T: Serialize>(
        &self,
        what: &'static str,
        data: &T,
        pretty: bool,
    ) -> Result<String, ReportError> {
        let mut value =
            serde_json::to_value(data).map_err(|source| ReportError::Json { what, source })?;
        self.value(&mut value);
        let text = if pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        };
        text.map_err(|source| ReportError::Json { what, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_values_json_would_escape() {
        let r = Redactor::new([Arc::new(Secrets::new([("TOK", "a\"b\\c")]))]);
        let json = r
            .json(
                "test",
                &serde_json::json!({"k": "x a\"b\\c y", "a\"b\\c": [1, "a\"b\\c"]}),
                false,
            )
            .expect("json");
        assert!(!json.contains("a\\\"b\\\\c"), "{json}");
        assert_eq!(json.matches("[REDACTED:TOK]").count(), 3, "{json}");
    }
}

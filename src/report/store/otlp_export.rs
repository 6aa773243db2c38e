//! Where `--otlp` sends the suite's spans (docs/reports.md, "OpenTelemetry"): a file (OTLP/JSON),
//! or a collector over OTLP/HTTP with JSON (`POST …/v1/traces`, `Content-Type:
//! application/json`). `--otlp env` is the collector OpenTelemetry's own variables name
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`), and the headers
//! of `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS` go with every POST. An
//! export that fails is the caller's to report: it never changes an exit code.

use std::path::PathBuf;
use std::time::Duration;

/// The word for "the collector the OpenTelemetry variables name".
pub const FROM_ENV: &str = "env";

/// OpenTelemetry's default OTLP/HTTP endpoint, when `--otlp env` finds no variable set.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// How long a POST may take (`OTEL_EXPORTER_OTLP_TIMEOUT`'s default, 10 s).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtlpTarget {
    File(PathBuf),
    /// The URL the request is POSTed to (`…/v1/traces`).
    Http(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Write(#[from] std::io::Error),
    #[error("{0}")]
    Http(String),
    #[error("the collector answered HTTP {status}: {body}")]
    Refused { status: u16, body: String },
    #[error("{0}")]
    Headers(String),
}

impl std::fmt::Display for OtlpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Http(url) => f.write_str(url),
        }
    }
}

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// An endpoint base (`http://host:4318`, nothing after the authority, or a trailing `/`) gets
/// `/v1/traces`, as OTLP/HTTP exporters do with `OTEL_EXPORTER_OTLP_ENDPOINT`; a URL with a
/// path is used as written.
fn traces_url(base: &str) -> String {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    match after_scheme.split_once('/') {
        None => format!("{base}/v1/traces"),
        Some((_, "")) => format!("{base}v1/traces"),
        Some(_) => base.to_string(),
    }
}

impl OtlpTarget {
    /// `--otlp`'s value: `env`, a URL (`http://…`, `https://…`) or a file. `env` reads the
    /// variables through `var`.
    pub fn parse(value: &str, var: &dyn Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if value == FROM_ENV {
            if let Some(url) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                return Self::Http(url.trim().to_string());
            }
            let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
            return Self::Http(traces_url(
                base.as_deref().map_or(DEFAULT_ENDPOINT, str::trim),
            ));
        }
        if is_url(value) {
            Self::Http(traces_url(value))
        } else {
            Self::File(PathBuf::from(value))
        }
    }
}

/// `%XX` sequences decoded (W3C Baggage's encoding, which `OTEL_EXPORTER_OTLP_HEADERS` uses).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The headers of `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (its
/// entries win): `key1=value1,key2=value2`, values percent-encoded.
pub fn headers(var: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        let Some(list) = var(name) else { continue };
        for entry in list.split(',').filter(|e| !e.trim().is_empty()) {
            let Some((key, value)) = entry.split_once('=') else {
                return Err(format!("{name}: `{entry}` is not key=value"));
            };
            let key = percent_decoded(key.trim());
            out.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
            out.push((key, percent_decoded(value.trim())));
        }
    }
    Ok(out)
}

/// Writes or POSTs `body` (the OTLP/JSON request) to `target`.
pub fn export(
    target: &OtlpTarget,
    body: &serde_json::Value,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ExportError> {
    let text = body.to_string();
    match target {
        OtlpTarget::File(path) => {
            crate::atomic::write_atomic(path, format!("{text}\n").as_bytes())
                .map_err(|e| e.source)?;
            Ok(())
        }
        OtlpTarget::Http(url) => post(url, &text, &headers(var).map_err(ExportError::Headers)?),
    }
}

/// The suite's spans exported to `--otlp`'s `value`, the process environment read for `env`
/// and the headers: `Ok(the target)`, or the one line that says where the export failed and
/// why.
pub fn export_suite(
    summary: &crate::report::records::suite::SuiteSummary,
    records: &[crate::report::records::run_record::RunRecord],
    value: &str,
) -> Result<OtlpTarget, String> {
    let var = |name: &str| std::env::var(name).ok();
    let target = OtlpTarget::parse(value, &var);
    let body = crate::report::renderers::otlp::request(summary, records);
    export(&target, &body, &var)
        .map(|()| target.clone())
        .map_err(|e| format!("the OpenTelemetry export to {target} failed: {e}"))
}

fn post(url: &str, body: &str, headers: &[(String, String)]) -> Result<(), ExportError> {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DEFAULT_TIMEOUT))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let mut request = agent.post(url).header("Content-Type", "application/json");
    for (key, value) in headers {
        request = request.header(key.as_str(), value.as_str());
    }
    let mut response = request
        .send(body)
        .map_err(|e| ExportError::Http(e.to_string()))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    Err(ExportError::Refused {
        status: status.as_u16(),
        body: body.chars().take(300).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            owned
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn a_base_gets_v1_traces_a_full_url_is_kept_and_env_reads_the_variables() {
        let none = vars(&[]);
        assert_eq!(
            OtlpTarget::parse("http://127.0.0.1:4318", &none),
            OtlpTarget::Http("http://127.0.0.1:4318/v1/traces".into())
        );
        assert_eq!(
            OtlpTarget::parse("http://h:1/", &none),
            OtlpTarget::Http("http://h:1/v1/traces".into())
        );
        assert_eq!(
            OtlpTarget::parse("http://h:1/custom/traces", &none),
            OtlpTarget::Http("http://h:1/custom/traces".into())
        );
        assert_eq!(
            OtlpTarget::parse("out/trace.json", &none),
            OtlpTarget::File("out/trace.json".into())
        );
        assert_eq!(
            OtlpTarget::parse("env", &none),
            OtlpTarget::Http("http://localhost:4318/v1/traces".into())
        );
        let base = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]);
        assert_eq!(
            OtlpTarget::parse("env", &base),
            OtlpTarget::Http("http://c:4318/v1/traces".into())
        );
        let both = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
        ]);
        assert_eq!(
            OtlpTarget::parse("env", &both),
            OtlpTarget::Http("http://t:1/x".into())
        );
    }

    #[test]
    fn headers_are_decoded_and_the_traces_variable_wins() {
        let v = vars(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X=2"),
        ]);
        assert_eq!(
            headers(&v).unwrap(),
            [
                ("api-key".to_string(), "a b".to_string()),
                ("X".to_string(), "2".to_string())
            ]
        );
        assert!(headers(&vars(&[("OTEL_EXPORTER_OTLP_HEADERS", "nokey")])).is_err());
    }
}

//! Properties of the claude-code provider's stream-json reader, fed lines the way the provider
//! reads them: arbitrary bytes, truncated or non-object JSON and odd field types never panic and
//! never end the turn; only a `result` event does, and its verdict follows `is_error`, then the
//! marker of its `result` text, then the last marker of the turn's text blocks.

use bugatti::fuzzing::{self, read_stream};
use bugatti::model::outcome::StepStatus;
use proptest::prelude::*;
use serde_json::{json, Value};

fn marker() -> impl Strategy<Value = (Option<StepStatus>, String)> {
    prop_oneof![
        Just((Some(StepStatus::Ok), "RESULT OK".to_string())),
        "[a-z ]{0,10}".prop_map(|t| (Some(StepStatus::Warn), format!("RESULT WARN: {t}"))),
        "[a-z ]{0,10}".prop_map(|t| (Some(StepStatus::Error), format!("**RESULT ERROR: {t}**"))),
        "[a-z ]{0,20}".prop_map(|t| (None, t)),
    ]
}

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "type", "text", "content", "message", "result", "is_error", "name", "input"
                ])
                .prop_map(str::to_string),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Events shaped like Claude Code's, with fields of the wrong type now and then.
fn event() -> impl Strategy<Value = Value> {
    prop_oneof![
        marker().prop_map(|(_, text)| json!({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})),
        any_json().prop_map(|input| json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": input}]}})),
        any_json().prop_map(|content| json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": content}]}})),
        any_json().prop_map(|message| json!({"type": "assistant", "message": message})),
        Just(json!({"type": "system", "subtype": "init"})),
        any_json(),
    ]
}

/// One output line: an event, the same cut short, or not JSON at all.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => event().prop_map(|e| e.to_string().into_bytes()),
        2 => (event(), any::<prop::sample::Index>()).prop_map(|(e, i)| {
            let s = e.to_string().into_bytes();
            s[..i.index(s.len())].to_vec()
        }),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| b.into_iter().filter(|&c| c != b'\n').collect()),
        1 => any::<String>().prop_map(|s| s.replace('\n', " ").into_bytes()),
    ]
}

/// An assistant event: its text blocks may carry markers, so it is not noise.
fn is_text_block(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| v["type"] == "assistant")
}

fn result_event(is_error: Value, text: &str, cost: Value) -> Value {
    json!({"type": "result", "subtype": "success", "is_error": is_error, "result": text,
           "session_id": "s", "num_turns": 2, "duration_ms": 10, "total_cost_usd": cost})
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        fuzzing::stream_json(&bytes);
    }

    /// Truncated, invalid and odd lines are read past; none ends the turn.
    #[test]
    fn noise_never_ends_the_turn(lines in prop::collection::vec(line(), 0..12)) {
        let bytes = join(&lines);
        fuzzing::stream_json(&bytes);
        let reading = read_stream(&bytes);
        let any_result = lines.iter().any(|l| fuzzing::is_result_event(l));
        prop_assert_eq!(reading.verdict.is_some(), any_result);
    }

    /// A turn: text blocks with or without markers, noise, then the `result` event.
    #[test]
    fn the_result_event_decides(
        blocks in prop::collection::vec(marker(), 0..5),
        noise in prop::collection::vec(line().prop_filter("neither a result nor text", |l| !fuzzing::is_result_event(l) && !is_text_block(l)), 0..5),
        (result_status, result_text) in marker(),
        is_error in prop_oneof![Just(json!(true)), Just(json!(false)), Just(json!(null)), Just(json!("yes"))],
        cost in prop_oneof![Just(json!(0.25)), Just(json!(-3)), Just(json!("free")), Just(json!(1e300))],
        cut_result in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let mut last_block = None;
        for (status, text) in &blocks {
            lines.push(json!({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}).to_string().into_bytes());
            last_block = status.or(last_block);
        }
        lines.extend(noise);
        let result = result_event(is_error.clone(), &result_text, cost).to_string().into_bytes();
        match cut_result {
            // Cut short, the result is not JSON: the turn has not ended.
            Some(i) => {
                lines.push(result[..i.index(result.len())].to_vec());
                let reading = read_stream(&join(&lines));
                prop_assert!(reading.verdict.is_none());
            }
            None => {
                lines.push(result);
                lines.push(b"{\"type\":\"result\",\"is_error\":true}".to_vec()); // after the end: not read
                let bytes = join(&lines);
                let reading = read_stream(&bytes);
                prop_assert_eq!(reading.lines_read, lines.len() - 1);
                let verdict = reading.verdict.expect("a verdict");
                // `is_error` under `subtype: "success"` is Claude Code's report of an API failure:
                // the agent's fault, never the app's.
                let want = if is_error == json!(true) {
                    StepStatus::AgentError
                } else {
                    result_status.or(last_block).unwrap_or(StepStatus::ProtocolError)
                };
                prop_assert_eq!(verdict.status, want, "{:?}", verdict);
                let usage = verdict.usage.expect("usage");
                prop_assert!(usage.step_cost_usd >= 0.0 && usage.step_cost_usd.is_finite());
                fuzzing::stream_json(&bytes);
            }
        }
    }
}

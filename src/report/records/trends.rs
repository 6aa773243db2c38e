//! Trends from history (docs/ci.md): over the last suites of the same selection, the pass rate,
//! duration and agent cost per suite (drawn as inline SVG, no network), the tests that flip
//! between pass and fail most, the slowest and the costliest tests. The same figures as text for
//! `supervisor report --trends`.

use crate::model::ids::SuiteId;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::records::history::HistoryEntry;

/// How many suites a trend looks back over.
pub const WINDOW: usize = 30;
/// How many tests each ranking lists.
const TOP: usize = 5;

/// One suite on the charts.
#[derive(Debug, Clone, PartialEq)]
pub struct SuitePoint {
    pub suite_id: SuiteId,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Passed root tests over root tests that ran (agent errors left out), 0..=1; `None` when
    /// every test that ran ended by an agent error (nothing was learnt of the app).
    pub pass_rate: Option<f64>,
    /// Root tests ended by an agent error, left out of the pass rate.
    pub agent_errors: usize,
    pub duration_ms: u64,
    pub cost_usd: Option<f64>,
}

/// One test in one suite of the window: passed, duration (ms), cost.
type TestRun = (bool, u64, Option<f64>);

/// The trends of one selection.
#[derive(Debug, Clone, PartialEq)]
pub struct Trends {
    /// Oldest first; the last is the suite the report is about.
    pub suites: Vec<SuitePoint>,
    /// (test, times it went from pass to fail or back, suites it ran in), most flips first.
    pub flips: Vec<(String, usize, usize)>,
    /// (test, median duration in ms), slowest first.
    pub slowest: Vec<(String, u64)>,
    /// (test, cost over the window in dollars), costliest first.
    pub costliest: Vec<(String, f64)>,
}

impl Trends {
    /// The trends ending at `current`, from the earlier `entries` of the same selection (at most
    /// [`WINDOW`] suites in all). `None` when there is nothing earlier to draw a trend from.
    pub fn of(entries: &[HistoryEntry], current: &HistoryEntry) -> Option<Self> {
        let mut window: Vec<&HistoryEntry> = entries
            .iter()
            .filter(|e| e.suite_id != current.suite_id && e.selection.same_as(&current.selection))
            .collect();
        window.push(current);
        if window.len() < 2 {
            return None;
        }
        let window = &window[window.len().saturating_sub(WINDOW)..];
        let suites = window
            .iter()
            .map(|e| {
                // An agent error says nothing of the app: out of the pass rate.
                let ran: Vec<_> = e
                    .tests
                    .iter()
                    .filter(|t| t.attempts > 0 && t.agent_error.is_none())
                    .collect();
                let passed = ran.iter().filter(|t| t.passed).count();
                SuitePoint {
                    suite_id: e.suite_id.clone(),
                    started_at: e.started_at,
                    pass_rate: (!ran.is_empty()).then(|| passed as f64 / ran.len() as f64),
                    agent_errors: e.tests.iter().filter(|t| t.agent_error.is_some()).count(),
                    duration_ms: e.duration_ms,
                    cost_usd: e.cost_usd,
                }
            })
            .collect();
        let mut runs: BTreeMap<&str, Vec<TestRun>> = BTreeMap::new();
        for e in window {
            for t in e
                .tests
                .iter()
                .filter(|t| t.attempts > 0 && t.agent_error.is_none())
            {
                runs.entry(t.test_file.as_str()).or_default().push((
                    t.passed,
                    t.duration_ms,
                    t.cost_usd,
                ));
            }
        }
        let mut flips: Vec<(String, usize, usize)> = runs
            .iter()
            .map(|(test, r)| {
                let flips = r.windows(2).filter(|w| w[0].0 != w[1].0).count();
                (test.to_string(), flips, r.len())
            })
            .filter(|(_, flips, _)| *flips > 0)
            .collect();
        flips.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        flips.truncate(TOP);
        let mut slowest: Vec<(String, u64)> = runs
            .iter()
            .map(|(test, r)| {
                let mut d: Vec<u64> = r.iter().map(|x| x.1).collect();
                d.sort_unstable();
                (test.to_string(), d[d.len() / 2])
            })
            .collect();
        slowest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        slowest.truncate(TOP);
        let mut costliest: Vec<(String, f64)> = runs
            .iter()
            .filter_map(|(test, r)| {
                let costs: Vec<f64> = r.iter().filter_map(|x| x.2).collect();
                (!costs.is_empty()).then(|| (test.to_string(), costs.iter().sum()))
            })
            .collect();
        costliest.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        costliest.truncate(TOP);
        Some(Self {
            suites,
            flips,
            slowest,
            costliest,
        })
    }

    /// The report.html section: three charts and three rankings.
    pub fn html(&self) -> String {
        let mut out = String::from("<section id=\"trends\"><h2>Trends</h2>\n");
        let _ = writeln!(
            out,
            "<div class=\"meta\">the last {} suites of this selection, oldest first</div><div class=\"charts\">",
            self.suites.len()
        );
        let secs = crate::report::ground::printable::secs;
        out.push_str(&self.chart(
            "pass rate",
            |s| s.pass_rate.map(|r| r * 100.0),
            Some(100.0),
            |v| format!("{v:.0}%"),
        ));
        out.push_str(&self.chart(
            "duration",
            |s| Some(s.duration_ms as f64),
            None,
            |v| secs(v as u64),
        ));
        if self.suites.iter().any(|s| s.cost_usd.is_some()) {
            out.push_str(&self.chart("agent cost", |s| s.cost_usd, None, |v| format!("${v:.2}")));
        }
        out.push_str("</div>\n<div class=\"rankings\">");
        let list = |title: &str, rows: Vec<String>| {
            let mut s = format!("<div><h3>{title}</h3>");
            if rows.is_empty() {
                s.push_str("<div class=\"meta\">none</div>");
            } else {
                s.push_str("<ol>");
                for row in rows {
                    let _ = write!(s, "<li>{row}</li>");
                }
                s.push_str("</ol>");
            }
            s.push_str("</div>");
            s
        };
        use crate::report::ground::html_escape::escape;
        out.push_str(&list(
            "Flip most (pass ↔ fail)",
            self.flips
                .iter()
                .map(|(t, f, n)| format!("<code>{}</code> {f} flips in {n} suites", escape(t)))
                .collect(),
        ));
        out.push_str(&list(
            "Slowest",
            self.slowest
                .iter()
                .map(|(t, ms)| {
                    format!(
                        "<code>{}</code> {}",
                        escape(t),
                        crate::report::ground::printable::secs(*ms)
                    )
                })
                .collect(),
        ));
        out.push_str(&list(
            "Costliest",
            self.costliest
                .iter()
                .map(|(t, c)| format!("<code>{}</code> ${c:.2}", escape(t)))
                .collect(),
        ));
        out.push_str("</div></section>\n");
        out
    }

    /// The same figures for a terminal.
    pub fn text(&self) -> String {
        let mut out = format!(
            "Trends over the last {} suites of this selection (oldest first):\n",
            self.suites.len()
        );
        for s in &self.suites {
            let _ = writeln!(
                out,
                "  {}  {}  pass {:>4}  {:>8}{}{}",
                s.started_at.format("%Y-%m-%d %H:%M"),
                id_tail(s.suite_id.as_str()),
                s.pass_rate
                    .map_or("–".to_string(), |r| format!("{:.0}%", r * 100.0)),
                crate::report::ground::printable::secs(s.duration_ms),
                s.cost_usd.map_or(String::new(), |c| format!("  ${c:.2}")),
                match s.agent_errors {
                    0 => String::new(),
                    n => format!(
                        "  ({n} agent error{}, not counted)",
                        if n == 1 { "" } else { "s" }
                    ),
                }
            );
        }
        let mut section = |title: &str, rows: Vec<String>| {
            let _ = writeln!(out, "{title}:");
            if rows.is_empty() {
                out.push_str("  none\n");
            }
            for row in rows {
                let _ = writeln!(out, "  {row}");
            }
        };
        section(
            "Flip most",
            self.flips
                .iter()
                .map(|(t, f, n)| format!("{t}: {f} flips in {n} suites"))
                .collect(),
        );
        section(
            "Slowest",
            self.slowest
                .iter()
                .map(|(t, ms)| format!("{t}: {}", crate::report::ground::printable::secs(*ms)))
                .collect(),
        );
        section(
            "Costliest",
            self.costliest
                .iter()
                .map(|(t, c)| format!("{t}: ${c:.2}"))
                .collect(),
        );
        out
    }
}

/// A chart's plot area and margins, in SVG units: the value axis's labels on the left, the
/// dates below.
const PLOT_W: f64 = 240.0;
const PLOT_H: f64 = 60.0;
const LEFT: f64 = 44.0;
const ABOVE: f64 = 8.0;
const BOTTOM: f64 = 16.0;

/// The end of a suite id: a UUIDv7 begins with its time, alike for a night's suites. Cut on a
/// character boundary (the id comes from the history file).
fn id_tail(id: &str) -> &str {
    let start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    &id[start..]
}

/// A suite's date on the time axis and in tooltips.
fn when(s: &SuitePoint) -> String {
    s.started_at.format("%Y-%m-%d %H:%M").to_string()
}

impl Trends {
    /// One line chart, oldest suite left: the value of each suite (`value`; a suite without one,
    /// such as no cost recorded, counts as 0) scaled to `max` (else the largest), with a value
    /// axis (0, half, top), the first and last suites' dates, and a tooltip per suite (an SVG
    /// `<title>`: date, suite, value), so it reads without a script or the network.
    fn chart(
        &self,
        title: &str,
        value: impl Fn(&SuitePoint) -> Option<f64>,
        max: Option<f64>,
        label: impl Fn(f64) -> String,
    ) -> String {
        use crate::report::ground::html_escape::escape;
        // A suite without a value (no cost recorded, only agent errors) is no point at 0: the
        // line skips it and its tooltip says so.
        let values: Vec<Option<f64>> = self.suites.iter().map(&value).collect();
        let top = max
            .unwrap_or_else(|| values.iter().flatten().copied().fold(0.0, f64::max))
            .max(f64::EPSILON);
        let step = if values.len() > 1 {
            PLOT_W / (values.len() - 1) as f64
        } else {
            0.0
        };
        let x = |i: usize| LEFT + i as f64 * step;
        let y = |v: f64| ABOVE + PLOT_H - (v / top).clamp(0.0, 1.0) * PLOT_H;
        let mut svg = String::new();
        // The value axis: gridlines at 0, half and the top, each labelled.
        for v in [0.0, top / 2.0, top] {
            let _ = write!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#d0d7de\"/>\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT + PLOT_W,
                LEFT - 4.0,
                y(v) + 3.0,
                escape(&label(v)),
                y = y(v),
            );
        }
        // The time axis: the first and the last suite's date.
        let base = ABOVE + PLOT_H + 12.0;
        if let (Some(first), Some(last)) = (self.suites.first(), self.suites.last()) {
            let _ = write!(
                svg,
                "<text x=\"{LEFT}\" y=\"{base}\">{}</text><text x=\"{}\" y=\"{base}\" text-anchor=\"end\">{}</text>",
                escape(&when(first)),
                LEFT + PLOT_W,
                escape(&when(last)),
            );
        }
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x(i), y(v))))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        for (i, (s, v)) in self.suites.iter().zip(&values).enumerate() {
            let Some(v) = v else {
                continue;
            };
            let shown = label(*v);
            // A wider transparent circle under each dot: a tooltip a pointer can find.
            let _ = write!(
                svg,
                "<g><title>{}</title><circle class=\"hit\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"7\"/><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\"/></g>",
                escape(&format!(
                    "{} · suite …{} · {title} {shown}",
                    when(s),
                    id_tail(s.suite_id.as_str())
                )),
                x = x(i),
                y = y(*v),
            );
        }
        let (w, h) = (LEFT + PLOT_W + 8.0, ABOVE + PLOT_H + BOTTOM);
        let now = values
            .last()
            .copied()
            .flatten()
            .map_or_else(|| "none recorded".to_string(), &label);
        format!(
            "<figure class=\"chart\"><figcaption>{title}: <b>{}</b></figcaption>\
             <svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{title} per suite, oldest first\">\
             <rect width=\"{w}\" height=\"{h}\" fill=\"#f6f8fa\"/>{svg}</svg></figure>",
            escape(&now),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::records::history::{HistoryTest, Selection};

    fn entry(id: &str, results: &[(&str, bool, u64)], cost: Option<f64>) -> HistoryEntry {
        HistoryEntry {
            schema_version: crate::report::records::run_record::SCHEMA_VERSION,
            suite_id: id.into(),
            started_at: chrono::Utc::now(),
            finished_at: chrono::Utc::now(),
            duration_ms: results.iter().map(|r| r.2).sum(),
            selection: Selection::default(),
            tests: results
                .iter()
                .map(|(t, passed, ms)| HistoryTest {
                    test_file: (*t).into(),
                    outcome: if *passed { "passed" } else { "failed" }.into(),
                    passed: *passed,
                    flaky: false,
                    attempts: 1,
                    duration_ms: *ms,
                    cost_usd: cost,
                    quarantined: false,
                    runs: Vec::new(),
                    agent_error: None,
                })
                .collect(),
            cost_usd: cost.map(|c| c * results.len() as f64),
            replayed_steps: 0,
            agent_steps: 0,
            replay_drift_steps: 0,
            cost_saved_usd: None,
            commit: None,
            dirty: None,
            provider: None,
            stability: Vec::new(),
            suite_dir: None,
        }
    }

    #[test]
    fn an_agent_error_is_left_out_of_the_pass_rate() {
        let before = entry("1", &[("a", true, 100), ("b", true, 10)], None);
        let mut night = entry("2", &[("a", true, 100), ("b", false, 10)], None);
        night.tests[1].agent_error = Some(crate::model::agent_fault::FaultKind::Quota);
        let t = Trends::of(&[before], &night).expect("trends");
        assert_eq!(t.suites[1].pass_rate, Some(1.0), "{:?}", t.suites);
        assert!(t.flips.is_empty(), "{:?}", t.flips);
    }

    #[test]
    fn a_night_of_agent_errors_only_has_no_pass_rate_not_zero() {
        let before = entry("1", &[("a", true, 100)], None);
        let mut night = entry("2", &[("a", false, 100)], None);
        night.tests[0].agent_error = Some(crate::model::agent_fault::FaultKind::RateLimit);
        let t = Trends::of(&[before], &night).expect("trends");
        assert_eq!(t.suites[1].pass_rate, None, "{:?}", t.suites);
        let text = t.text();
        assert!(
            text.contains("pass    –") && text.contains("(1 agent error, not counted)"),
            "{text}"
        );
        assert!(!text.contains("pass   0%"), "{text}");
        let html = t.html();
        assert!(html.contains("pass rate: <b>none recorded</b>"), "{html}");
    }

    #[test]
    fn flips_slowest_and_costliest_are_ranked() {
        let nights = [
            entry("1", &[("a", true, 100), ("flaky", true, 10)], Some(0.5)),
            entry("2", &[("a", true, 120), ("flaky", false, 10)], Some(0.5)),
            entry("3", &[("a", true, 110), ("flaky", true, 10)], Some(0.5)),
        ];
        let t = Trends::of(&nights[..2], &nights[2]).expect("trends");
        assert_eq!(t.suites.len(), 3);
        assert_eq!(t.suites[1].pass_rate, Some(0.5));
        assert_eq!(t.flips, vec![("flaky".to_string(), 2, 3)]);
        assert_eq!(t.slowest[0], ("a".to_string(), 110));
        assert_eq!(t.costliest.len(), 2);
        let html = t.html();
        assert_eq!(html.matches("<svg").count(), 3, "{html}");
        // Axes with values, dates, and a tooltip per suite on each chart; no script.
        assert!(
            html.contains(">100%</text>") && html.contains(">0%</text>"),
            "{html}"
        );
        let date = t.suites[0].started_at.format("%Y-%m-%d %H:%M").to_string();
        assert!(html.contains(&format!(">{date}</text>")), "{html}");
        assert_eq!(html.matches("<title>").count(), 9, "{html}");
        assert!(
            html.contains(&format!("<title>{date} · suite …2 · pass rate 50%</title>")),
            "{html}"
        );
        assert!(html.contains("agent cost $1.00</title>"), "{html}");
        assert!(!html.contains("<script"));
        assert!(t.text().contains("flaky: 2 flips in 3 suites"));
        // Another selection is not part of the trend; one suite alone has none.
        let mut other = entry("4", &[("a", true, 1)], None);
        other.selection.tags = vec!["x".into()];
        assert!(Trends::of(&nights, &other).is_none());
    }
}

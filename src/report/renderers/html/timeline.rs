//! The parts of report.html that are looked at rather than read (docs/reports.md): the suite's
//! timeline (every test's lane on one time axis, a lane group per merged shard), each test's own
//! lane with its film strip, and the failures grouped by their normalised message.
//!
//! Everything is server-rendered HTML: bars are links (focusable, named for a screen reader,
//! their details shown on hover or focus by CSS alone), so the page reads with scripts off.

use super::*;
use crate::report::records::timeline::{Decided, Lane, StepSpan};

/// Ticks drawn on one bar, at most (a step of 500 console calls is still one bar).
const MAX_TICKS: usize = 60;
/// Actions named in a bar's details, at most.
const MAX_TIP_LINES: usize = 8;

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 100.0 / whole as f64).clamp(0.0, 100.0)
    }
}

/// A failure message with what differs between two occurrences of the same failure taken out
/// (numbers, ids, hex, quoted values, paths of runs): the key failures are grouped by.
pub fn normalise(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let mut out = String::with_capacity(first.len());
    let mut chars = first.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .next_if(|c| c.is_ascii_hexdigit() || *c == '.')
                .is_some()
            {}
            out.push('#');
        } else if c.is_ascii_hexdigit() && chars.peek().is_some_and(char::is_ascii_hexdigit) {
            // A run of hex letters and digits of 8 or more (ids) becomes one mark; a word stays.
            let mut word = String::from(c);
            while let Some(n) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '-') {
                word.push(n);
            }
            let hexish = word.len() >= 8
                && word.chars().filter(char::is_ascii_digit).count() >= 2
                && word.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
            out.push_str(if hexish { "#" } else { &word });
        } else if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    let trimmed = out.trim();
    trimmed.chars().take(240).collect()
}

impl ReportPage<'_> {
    /// The legend of the colours and ticks, once per page.
    fn legend(&mut self) {
        self.w("<div class=\"legend\" aria-hidden=\"true\">");
        for d in Decided::ALL {
            let _ = write!(
                self.out,
                "<span><i class=\"sw d-{}\"></i>{}</span>",
                d.key(),
                escape(d.words())
            );
        }
        self.w("<span><i class=\"sw d-setup\"></i>setup</span><span><i class=\"tkl tk-turn\"></i>model turn</span><span><i class=\"tkl tk-console\"></i>console call</span><span><i class=\"tkl tk-browser\"></i>browser action</span></div>");
    }

    /// The suite's timeline: every test's lane on one axis, grouped by the suite (shard) that ran it.
    pub(super) fn suite_timeline(&mut self, lanes: &[(usize, &RootTestSummary, &RunRecord)]) {
        if lanes.is_empty() {
            return;
        }
        let Some(origin) = lanes.iter().map(|(_, _, r)| r.identity.started_at).min() else {
            return;
        };
        let end = lanes
            .iter()
            .map(|(_, _, r)| {
                let lane = &self.lanes[r.identity.run_id.as_str()];
                since(origin, lane.started_at) + lane.total_ms
            })
            .max()
            .unwrap_or(0)
            .max(1);
        let _ = write!(
            self.out,
            "<h2 id=\"timeline\">Timeline</h2><div class=\"note\">Every test on one time axis ({}), each step a bar coloured by how it was decided; hover or focus a bar for its details, follow it to the step.</div>",
            ms(Some(end))
        );
        self.legend();
        let mut groups: Vec<&str> = Vec::new();
        for (_, _, r) in lanes {
            if !groups.contains(&r.identity.suite_id.as_str()) {
                groups.push(r.identity.suite_id.as_str());
            }
        }
        self.w("<div class=\"suite-tl\">");
        let mut cut = 0usize;
        for (g, group) in groups.iter().enumerate() {
            if groups.len() > 1 {
                let _ = write!(
                    self.out,
                    "<div class=\"lgroup\" role=\"group\" aria-label=\"shard {} of {}: suite {}\"><div class=\"ghead\">shard suite <code>{}</code></div>",
                    g + 1,
                    groups.len(),
                    escape(group),
                    escape(group)
                );
            }
            for (index, test, record) in lanes
                .iter()
                .filter(|(_, _, r)| r.identity.suite_id == *group)
            {
                if self.timeline_budget == 0 {
                    cut += 1;
                    continue;
                }
                let before = self.out.len();
                let lane = self.lanes[record.identity.run_id.as_str()].clone();
                let offset = since(origin, lane.started_at);
                let _ = write!(
                    self.out,
                    "<div class=\"lane\"><a class=\"lname\" href=\"#t{index}\" title=\"{}\"><span class=\"badge b-{}\">{}</span> {}</a><div class=\"track\">",
                    escape(&test.test_file),
                    test.outcome.as_str(),
                    test.badge_text(),
                    escape(&test.test_file)
                );
                self.lane_bars(*index, &lane, offset, end);
                self.w("</div></div>");
                self.timeline_budget = self.timeline_budget.saturating_sub(self.out.len() - before);
            }
            if groups.len() > 1 {
                self.w("</div>");
            }
        }
        if cut > 0 {
            let _ = write!(
                self.out,
                "<div class=\"note\">{cut} more tests are not drawn here (the page's timeline budget is spent): <code>supervisor report --chrome-trace FILE</code> has every one.</div>"
            );
        }
        self.w("</div>\n");
    }

    /// A test's own lane (its own axis) and its film strip, at the top of its section.
    pub(super) fn test_timeline(&mut self, index: usize, record: &RunRecord, run_dir: &Path) {
        let Some(lane) = self.lanes.get(record.identity.run_id.as_str()).cloned() else {
            return;
        };
        if lane.steps.is_empty() && lane.setup.is_empty() {
            return;
        }
        let end = lane.total_ms.max(1);
        if self.timeline_budget == 0 {
            self.film_strip(index, record, run_dir, &lane, end);
            return;
        }
        let before = self.out.len();
        let _ = write!(
            self.out,
            "<div class=\"lane own\" role=\"group\" aria-label=\"timeline of this test, {}\"><div class=\"track\">",
            ms(Some(lane.total_ms))
        );
        self.lane_bars(index, &lane, 0, end);
        self.w("</div></div>");
        self.timeline_budget = self.timeline_budget.saturating_sub(self.out.len() - before);
        self.film_strip(index, record, run_dir, &lane, end);
    }

    /// The setup and step bars of one lane, `offset` ms into an axis of `end` ms.
    fn lane_bars(&mut self, index: usize, lane: &Lane, offset: u64, end: u64) {
        for span in &lane.setup {
            let _ = write!(
                self.out,
                "<span class=\"bar d-setup\" tabindex=\"0\" style=\"left:{:.3}%;width:{:.3}%\" aria-label=\"setup {}: {}\"><span class=\"tip\" role=\"tooltip\">setup: {} from start to ready, {}</span></span>",
                pct(offset + span.start_ms, end),
                pct(span.dur_ms, end),
                escape(&span.name),
                ms(Some(span.dur_ms)),
                escape(&span.name),
                ms(Some(span.dur_ms)),
            );
        }
        for step in &lane.steps {
            self.bar(index, step, offset, end);
        }
    }

    fn bar(&mut self, index: usize, step: &StepSpan, offset: u64, end: u64) {
        let name = format!(
            "step {}: {}, {}",
            step.step_id,
            step.decided.words(),
            ms(Some(step.dur_ms))
        );
        let mut tip = format!("{name} · {}", step.status.as_str());
        if let Some(c) = step.cost_usd {
            let _ = write!(tip, " · ${c:.4}");
        }
        let _ = write!(
            self.out,
            "<a class=\"bar d-{}{}\" href=\"#t{index}-s{}\" style=\"left:{:.3}%;width:{:.3}%\" aria-label=\"{}\" data-step=\"{}\"><span class=\"tip\" role=\"tooltip\"><b>{}</b>",
            step.decided.key(),
            if step.status.is_failure() { " failed" } else { "" },
            step.step_id,
            pct(offset + step.start_ms, end),
            pct(step.dur_ms, end),
            escape(&name),
            step.step_id,
            escape(&tip),
        );
        for tick in step.ticks.iter().take(MAX_TIP_LINES) {
            let _ = write!(
                self.out,
                "<br>+{} {} {}{}",
                ms(Some(tick.at_ms.saturating_sub(step.start_ms))),
                tick.kind.key(),
                escape(&bounded(&tick.label, 120)),
                if tick.dur_ms > 0 {
                    format!(" ({})", ms(Some(tick.dur_ms)))
                } else {
                    String::new()
                }
            );
        }
        if step.ticks.len() > MAX_TIP_LINES {
            let _ = write!(self.out, "<br>… {} more", step.ticks.len() - MAX_TIP_LINES);
        }
        self.w("</span>");
        for tick in step.ticks.iter().take(MAX_TICKS) {
            let _ = write!(
                self.out,
                "<i class=\"tk tk-{}\" style=\"left:{:.1}%\"></i>",
                tick.kind.key(),
                pct(tick.at_ms.saturating_sub(step.start_ms), step.dur_ms.max(1))
            );
        }
        self.w("</a>");
    }

    /// Each step's screenshot as a thumbnail under the test's lane, in step order; a step that
    /// showed no page has none (its capture took none), never an empty frame.
    fn film_strip(
        &mut self,
        index: usize,
        record: &RunRecord,
        run_dir: &Path,
        lane: &Lane,
        end: u64,
    ) {
        let mut frames = String::new();
        for step in &record.steps {
            let Some(ev) = step
                .evidence
                .iter()
                .find(|e| e.kind == "screenshot" && e.problem.is_none() && safe_relative(&e.path))
            else {
                continue;
            };
            let Some(data) = self.inline_image(run_dir, &ev.path) else {
                continue;
            };
            let left = lane
                .steps
                .iter()
                .find(|s| s.step_id == step.step_id)
                .map_or(0.0, |s| pct(s.start_ms, end));
            let decided = Decided::of(step).key();
            let _ = write!(
                frames,
                "<a class=\"frame d-{decided}\" href=\"#t{index}-s{}\" data-left=\"{left:.2}\"><img alt=\"step {} screenshot ({})\" src=\"{data}\"><span>step {}</span></a>",
                step.step_id,
                step.step_id,
                escape(&ev.path),
                step.step_id
            );
            self.in_film
                .insert(format!("{}/{}", record.identity.run_id, ev.path));
        }
        if !frames.is_empty() {
            let _ = write!(
                self.out,
                "<div class=\"film\" role=\"list\" aria-label=\"film strip: each step's screenshot\">{frames}</div>"
            );
        }
    }

    /// A screenshot as a `data:` URI within the page's image budget, or `None`.
    pub(super) fn inline_image(&mut self, run_dir: &Path, path: &str) -> Option<String> {
        let mime = image_mime(path)?;
        let file = confined::open_file(run_dir, path).ok()?;
        let size = file.metadata().ok()?.len();
        if size > INLINE_IMAGE_BYTES || size > self.image_budget {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(size).read_to_end(&mut bytes).ok()?;
        self.image_budget -= size;
        Some(format!("data:{mime};base64,{}", base64(&bytes)))
    }

    /// Failures grouped by their normalised message: the same error in 12 tests is one group.
    pub(super) fn failure_groups(&mut self, order: &[usize], records: &HashMap<&str, &RunRecord>) {
        let s = self.input.summary;
        let mut groups: Vec<FailureGroup> = Vec::new();
        for &i in order {
            let test = &s.tests[i];
            if test.outcome.is_pass(s.strict_warnings) {
                continue;
            }
            let record = records.get(test.run_id.as_str()).copied();
            let failing = record.and_then(|r| r.failing_step());
            let message = failing
                .and_then(|st| st.message.clone())
                .or_else(|| test.message.clone())
                .unwrap_or_else(|| test.outcome.as_str().to_string());
            let target = match failing {
                Some(st) => format!("t{}-s{}", i + 1, st.step_id),
                None => format!("t{}", i + 1),
            };
            let key = normalise(&message);
            match groups.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, members)) => members.push((i + 1, test.test_file.clone(), target)),
                None => groups.push((key, message, vec![(i + 1, test.test_file.clone(), target)])),
            }
        }
        if groups.is_empty() {
            return;
        }
        groups.sort_by_key(|(_, _, m)| std::cmp::Reverse(m.len()));
        let _ = write!(
            self.out,
            "<h2 id=\"failure-groups\">Failures by message</h2><ol class=\"fgroups\">"
        );
        for (_, message, members) in &groups {
            let _ = write!(
                self.out,
                "<li class=\"fgroup\" data-count=\"{}\"><span class=\"count\">{} test{}</span> <span class=\"fmsg\">{}</span><div class=\"members\">",
                members.len(),
                members.len(),
                if members.len() == 1 { "" } else { "s" },
                escape(&bounded(message.lines().next().unwrap_or_default(), 400))
            );
            for (_, file, target) in members.iter().take(100) {
                let _ = write!(self.out, "<a href=\"#{target}\">{}</a> ", escape(file));
            }
            if members.len() > 100 {
                let _ = write!(self.out, "… {} more", members.len() - 100);
            }
            self.w("</div></li>");
        }
        self.w("</ol>\n");
    }
}

/// A group of failures: its key, the first message as written, and each member (test index,
/// file, the id its link goes to).
type FailureGroup = (String, String, Vec<(usize, String, String)>);

fn since(origin: chrono::DateTime<chrono::Utc>, at: chrono::DateTime<chrono::Utc>) -> u64 {
    u64::try_from((at - origin).num_milliseconds()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn the_same_failure_with_other_numbers_and_ids_is_one_key() {
        assert_eq!(
            normalise("GET /cart/17 answered 500 after 1234ms (request 9f8e7d6c-1a2b)"),
            normalise("GET /cart/3 answered 500 after 87ms (request 0a1b2c3d-4e5f)")
        );
        assert_ne!(
            normalise("no checkout button"),
            normalise("no basket button")
        );
        assert_eq!(
            normalise("deadbeef words  here\nsecond"),
            "deadbeef words here"
        );
    }
}

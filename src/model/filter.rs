//! `-E, --filter EXPR` (docs/cli.md "Filter expressions"): nextest's filter language over root
//! tests, parsed into an [`Expr`] and evaluated against what is known of each test
//! ([`Subject`]). Pure: the loader gathers the facts (history, git) and asks.
//!
//! ```text
//! expr    := or
//! or      := and (("|" | "or") and)*
//! and     := unary (("&" | "and") unary)*
//! unary   := ("!" | "not") unary | "(" expr ")" | NAME "(" ARG ")"
//! ```

use std::collections::BTreeSet;
use std::ops::Range;

use super::history::StabilityClass;
use super::provider::ProviderKind;

/// A filter expression that did not parse: what was expected, and the byte span of the text it
/// points at (for a caret under the column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FilterError {
    pub message: String,
    pub span: Range<usize>,
}

/// How `test(...)` matches a test's name or file path.
#[derive(Debug, Clone)]
pub enum TextMatch {
    /// `test(/re/)`: the regular expression matches (as `-g`).
    Regex(regex::Regex),
    /// `test(=text)`: the name or the path is exactly the text.
    Exact(String),
    /// `test(text)`, `test(~text)`: the name or the path contains the text.
    Contains(String),
}

/// One parsed filter expression.
#[derive(Debug, Clone)]
pub enum Expr {
    All,
    None,
    Test(TextMatch),
    File(globset::GlobMatcher),
    Tag(String),
    Provider(ProviderKind),
    Class(StabilityClass),
    LastFailed,
    /// `changed()` is `changed(HEAD)`: the working tree, untracked files included, against REF.
    Changed(String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// What a filter asks of one root test.
pub trait Subject {
    /// The test's name (`name = …`, else from its file).
    fn name(&self) -> &str;
    /// The test file relative to the project root, `/`-separated.
    fn path(&self) -> &str;
    fn tags(&self) -> &[String];
    /// The provider the test runs with (its effective config).
    fn provider(&self) -> ProviderKind;
    /// The class the newest history line that classified the test gave it.
    fn class(&self) -> Option<StabilityClass>;
    /// Whether the test did not pass in the previous whole suite (what `--rerun-failed` takes).
    fn failed_last(&self) -> bool;
    /// Whether the test's file, includes, assets, the config or its recording changed against
    /// `rev` (one of [`Expr::revisions`]).
    fn changed(&self, rev: &str) -> bool;
}

impl Expr {
    /// Whether `test` is selected.
    pub fn matches(&self, test: &dyn Subject) -> bool {
        match self {
            Expr::All => true,
            Expr::None => false,
            Expr::Test(m) => m.matches(test.name()) || m.matches(test.path()),
            Expr::File(glob) => glob.is_match(test.path()),
            Expr::Tag(tag) => test.tags().iter().any(|t| t == tag),
            Expr::Provider(kind) => test.provider() == *kind,
            Expr::Class(class) => test.class() == Some(*class),
            Expr::LastFailed => test.failed_last(),
            Expr::Changed(rev) => test.changed(rev),
            Expr::Not(e) => !e.matches(test),
            Expr::And(a, b) => a.matches(test) && b.matches(test),
            Expr::Or(a, b) => a.matches(test) || b.matches(test),
        }
    }

    /// The git revisions its `changed(...)` compare against: what the loader asks git about.
    pub fn revisions(&self) -> BTreeSet<String> {
        let mut revs = BTreeSet::new();
        self.collect_revisions(&mut revs);
        revs
    }

    fn collect_revisions(&self, revs: &mut BTreeSet<String>) {
        match self {
            Expr::Changed(rev) => {
                revs.insert(rev.clone());
            }
            Expr::Not(e) => e.collect_revisions(revs),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.collect_revisions(revs);
                b.collect_revisions(revs);
            }
            _ => {}
        }
    }
}

impl TextMatch {
    fn matches(&self, text: &str) -> bool {
        match self {
            TextMatch::Regex(re) => re.is_match(text),
            TextMatch::Exact(s) => text == s,
            TextMatch::Contains(s) => text.contains(s.as_str()),
        }
    }
}

/// The predicates, as the error for an unknown one lists them.
const PREDICATES: [&str; 9] = [
    "test", "file", "tag", "provider", "class", "last", "changed", "all", "none",
];

/// Parses a filter expression; the error's span points into `text`.
pub fn parse(text: &str) -> Result<Expr, FilterError> {
    let mut parser = Parser { text, pos: 0 };
    parser.skip_space();
    if parser.at_end() {
        return Err(parser.error_here(
            "an empty filter expression: expected a predicate such as `test(/login/)`",
        ));
    }
    let expr = parser.or()?;
    parser.skip_space();
    if !parser.at_end() {
        return Err(parser.error_here("expected `&`, `|` or the end of the expression"));
    }
    Ok(expr)
}

struct Parser<'a> {
    text: &'a str,
    /// A byte offset into `text`, always on a character boundary.
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// The width of the character at the cursor (1 at the end, for the caret).
    fn here(&self) -> Range<usize> {
        let width = self.rest().chars().next().map_or(1, char::len_utf8);
        self.pos..self.pos + width
    }

    fn error_here(&self, message: &str) -> FilterError {
        FilterError {
            message: message.to_string(),
            span: self.here(),
        }
    }

    /// An operator at the cursor, symbol or word; a word only as a whole word.
    fn eat_operator(&mut self, symbol: char, word: &str) -> bool {
        self.skip_space();
        let rest = self.rest();
        if rest.starts_with(symbol) {
            // `||` and `&&` read as one operator, as a shell user writes them.
            self.pos += symbol.len_utf8();
            if symbol != '!' && self.rest().starts_with(symbol) {
                self.pos += symbol.len_utf8();
            }
            return true;
        }
        if let Some(after) = rest.strip_prefix(word) {
            if after.starts_with(|c: char| c.is_whitespace() || c == '(' || c == '!') {
                self.pos += word.len();
                return true;
            }
        }
        false
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.and()?;
        while self.eat_operator('|', "or") {
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.unary()?;
        while self.eat_operator('&', "and") {
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        if self.eat_operator('!', "not") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        self.skip_space();
        if self.rest().starts_with('(') {
            let open = self.here();
            self.pos += 1;
            let inner = self.or()?;
            self.skip_space();
            if !self.rest().starts_with(')') {
                let mut e = self.error_here("expected `)` to close the `(`");
                if self.at_end() {
                    e.span = open;
                    e.message = "this `(` is never closed".to_string();
                }
                return Err(e);
            }
            self.pos += 1;
            return Ok(inner);
        }
        self.predicate()
    }

    fn predicate(&mut self) -> Result<Expr, FilterError> {
        let start = self.pos;
        let name_len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(self.rest().len());
        if name_len == 0 {
            return Err(self.error_here(
                "expected a predicate (test, file, tag, provider, class, last, changed), `!` or `(`",
            ));
        }
        let name = &self.text[start..start + name_len];
        let name_span = start..start + name_len;
        if !PREDICATES.contains(&name) {
            let mut message = format!(
                "unknown predicate `{name}`: expected one of {}",
                PREDICATES.join(", ")
            );
            if let Some(hint) = super::diagnostics::did_you_mean(name, &PREDICATES) {
                message.push_str(&format!(" ({hint})"));
            }
            return Err(FilterError {
                message,
                span: name_span,
            });
        }
        self.pos += name_len;
        if !self.rest().starts_with('(') {
            return Err(self.error_here(&format!("expected `(` after `{name}`")));
        }
        self.pos += 1;
        let (arg, arg_span) = self.argument()?;
        build(name, arg, arg_span)
    }

    /// The text up to the closing `)`: a `/regex/` may hold any character (`\/` for a slash).
    fn argument(&mut self) -> Result<(&'a str, Range<usize>), FilterError> {
        let start = self.pos;
        let rest = self.rest();
        let end = if let Some(body) = rest.strip_prefix('/') {
            let mut escaped = false;
            let close = body.char_indices().find(|&(_, c)| {
                let found = c == '/' && !escaped;
                escaped = c == '\\' && !escaped;
                found
            });
            let Some((i, _)) = close else {
                return Err(FilterError {
                    message: "this regular expression is never closed with `/`".to_string(),
                    span: start..start + 1,
                });
            };
            1 + i + 1
        } else {
            rest.find(')').unwrap_or(rest.len())
        };
        self.pos += end;
        if !self.rest().starts_with(')') {
            return Err(self.error_here("expected `)` to close the predicate's argument"));
        }
        self.pos += 1;
        let arg = &self.text[start..start + end];
        Ok((arg, start..start + end))
    }
}

/// One predicate from its name and argument (as written, spaces around it dropped).
fn build(name: &str, raw: &str, span: Range<usize>) -> Result<Expr, FilterError> {
    let arg = raw.trim();
    let fail = |message: String| FilterError {
        message,
        span: if span.is_empty() {
            span.start..span.start + 1
        } else {
            span.clone()
        },
    };
    let needs_arg = |what: &str| {
        if arg.is_empty() {
            Err(fail(format!("`{name}()` needs {what}")))
        } else {
            Ok(())
        }
    };
    match name {
        "all" | "none" if !arg.is_empty() => Err(fail(format!("`{name}()` takes no argument"))),
        "all" => Ok(Expr::All),
        "none" => Ok(Expr::None),
        "test" => {
            needs_arg("a pattern: /regex/, =exact or text it contains")?;
            if let Some(re) = arg.strip_prefix('/').and_then(|a| a.strip_suffix('/')) {
                let re = re.replace("\\/", "/");
                regex::Regex::new(&re)
                    .map(|re| Expr::Test(TextMatch::Regex(re)))
                    .map_err(|e| fail(format!("not a regular expression: {e}")))
            } else if let Some(exact) = arg.strip_prefix('=') {
                Ok(Expr::Test(TextMatch::Exact(exact.to_string())))
            } else {
                let text = arg.strip_prefix('~').unwrap_or(arg);
                Ok(Expr::Test(TextMatch::Contains(text.to_string())))
            }
        }
        "file" => {
            needs_arg("a glob over the test file's path, such as tests/**/*.test.toml")?;
            super::discovery::glob_matcher(arg)
                .map(Expr::File)
                .map_err(|e| fail(e.to_string()))
        }
        "tag" => {
            needs_arg("a tag")?;
            Ok(Expr::Tag(arg.to_string()))
        }
        "provider" => {
            needs_arg("a provider's name")?;
            ProviderKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == arg)
                .map(Expr::Provider)
                .ok_or_else(|| {
                    fail(format!(
                        "unknown provider `{arg}`: expected one of {}",
                        ProviderKind::names()
                    ))
                })
        }
        "class" => {
            needs_arg("a stability class")?;
            CLASSES
                .into_iter()
                .find(|class| class.as_str() == arg)
                .map(Expr::Class)
                .ok_or_else(|| {
                    let names: Vec<&str> = CLASSES.iter().map(|c| c.as_str()).collect();
                    fail(format!(
                        "unknown class `{arg}`: expected one of {}",
                        names.join(", ")
                    ))
                })
        }
        "last" if arg == "failed" => Ok(Expr::LastFailed),
        "last" => Err(fail(format!(
            "`last({arg})`: the only form is `last(failed)`, the tests that did not pass in the previous whole suite"
        ))),
        _ => {
            // changed: no argument is HEAD. A revision is one word; git says whether it exists.
            if arg.contains(char::is_whitespace) || arg.starts_with('-') {
                return Err(fail(format!("`{arg}` is not a git revision")));
            }
            Ok(Expr::Changed(if arg.is_empty() { "HEAD" } else { arg }.to_string()))
        }
    }
}

const CLASSES: [StabilityClass; 5] = [
    StabilityClass::Stable,
    StabilityClass::AppFlaky,
    StabilityClass::VerdictFlaky,
    StabilityClass::Broken,
    StabilityClass::AgentUnreliable,
];

#[cfg(test)]
mod tests {
    use super::*;

    struct T {
        name: &'static str,
        path: &'static str,
        tags: Vec<String>,
        provider: ProviderKind,
        class: Option<StabilityClass>,
        failed: bool,
        changed: &'static [&'static str],
    }

    impl Subject for T {
        fn name(&self) -> &str {
            self.name
        }
        fn path(&self) -> &str {
            self.path
        }
        fn tags(&self) -> &[String] {
            &self.tags
        }
        fn provider(&self) -> ProviderKind {
            self.provider
        }
        fn class(&self) -> Option<StabilityClass> {
            self.class
        }
        fn failed_last(&self) -> bool {
            self.failed
        }
        fn changed(&self, rev: &str) -> bool {
            self.changed.contains(&rev)
        }
    }

    fn login() -> T {
        T {
            name: "Login works",
            path: "tests/login.test.toml",
            tags: vec!["smoke".into()],
            provider: ProviderKind::ClaudeCode,
            class: Some(StabilityClass::AppFlaky),
            failed: true,
            changed: &["HEAD"],
        }
    }

    fn yes(text: &str) -> bool {
        parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .matches(&login())
    }

    #[test]
    fn each_predicate_matches_what_it_names() {
        assert!(yes("test(/^Login/)"));
        assert!(yes("test(/login\\.test/)"), "the path too, as -g");
        assert!(!yes("test(/^login$/)"));
        assert!(yes("test(=Login works)"));
        assert!(!yes("test(=Login)"));
        assert!(yes("test(works)") && yes("test(~works)"));
        assert!(yes("file(tests/*.test.toml)") && !yes("file(*.test.toml)"));
        assert!(yes("file(**/login.test.toml)"));
        assert!(yes("tag(smoke)") && !yes("tag(nightly)"));
        assert!(yes("provider(claude-code)") && !yes("provider(codex)"));
        assert!(yes("class(app-flaky)") && !yes("class(stable)"));
        assert!(yes("last(failed)"));
        assert!(yes("changed()") && yes("changed(HEAD)") && !yes("changed(origin/main)"));
        assert!(yes("all()") && !yes("none()"));
    }

    #[test]
    fn operators_bind_not_then_and_then_or_and_have_word_spellings() {
        assert!(yes("tag(nightly) | tag(smoke) & provider(claude-code)"));
        assert!(!yes("(tag(nightly) | tag(smoke)) & provider(codex)"));
        assert!(yes("!tag(nightly)") && !yes("!!tag(nightly)"));
        assert!(yes("not tag(nightly) and (tag(x) or tag(smoke))"));
        assert!(yes("tag(smoke) && !test(/x/) || none()"));
        assert!(yes("  not(tag(x))  "), "a word operator before `(`");
    }

    #[test]
    fn a_regex_may_hold_parentheses_and_escaped_slashes() {
        assert!(yes("test(/(Login|Logout) works/)"));
        assert!(yes("test(/tests\\/login/)"));
    }

    #[test]
    fn changed_revisions_are_collected_for_the_loader() {
        let e = parse("changed() | !(changed(origin/main) & tag(a))").expect("parses");
        let revs: Vec<String> = e.revisions().into_iter().collect();
        assert_eq!(revs, ["HEAD", "origin/main"]);
    }

    fn error(text: &str) -> (String, Range<usize>) {
        let e = parse(text).expect_err(text);
        (e.message, e.span)
    }

    #[test]
    fn errors_point_at_the_column_that_is_wrong() {
        let (m, span) = error("tag(a) & tset(b)");
        assert!(m.contains("unknown predicate `tset`"), "{m}");
        assert!(m.contains("test"), "a suggestion: {m}");
        assert_eq!(span, 9..13);
        let (m, span) = error("tag(a) tag(b)");
        assert!(m.contains("expected `&`, `|`"), "{m}");
        assert_eq!(span, 7..8);
        let (m, span) = error("(tag(a) | tag(b)");
        assert!(m.contains("never closed"), "{m}");
        assert_eq!(span, 0..1);
        let (m, span) = error("test(/a(/)");
        assert!(m.contains("not a regular expression"), "{m}");
        assert_eq!(span, 5..9);
        let (m, span) = error("tag(a");
        assert!(m.contains("expected `)`"), "{m}");
        assert_eq!(span, 5..6);
        let (m, _) = error("class(flaky)");
        assert!(m.contains("app-flaky"), "{m}");
        let (m, _) = error("provider(claude)");
        assert!(m.contains("claude-code"), "{m}");
        let (m, _) = error("last(passed)");
        assert!(m.contains("last(failed)"), "{m}");
        let (m, span) = error("tag(a) &");
        assert!(m.contains("expected a predicate"), "{m}");
        assert_eq!(span, 8..9);
        let (m, _) = error("   ");
        assert!(m.contains("empty"), "{m}");
        let (m, span) = error("tag()");
        assert!(m.contains("needs a tag"), "{m}");
        assert_eq!(span, 4..5);
        let (_, span) = error("test(/unclosed)");
        assert_eq!(span, 5..6);
    }
}

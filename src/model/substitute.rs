//! `${NAME}` substitution over the session's variables (ports, `[env]`, `[secrets]`, `BUGATTI_*`).
//!
//! `$${` is a literal `${` (so `$${HOME}` stays `${HOME}` for the shell); a lone `$` is left
//! alone. An unknown or unterminated reference is an error, found at check time by
//! [`references`] and at run time by [`substitute`].

use std::collections::{BTreeMap, BTreeSet};

/// The names the harness itself defines for every session.
pub const BUILTIN_NAMES: &[&str] = &[
    "BUGATTI_RUN_ID",
    "BUGATTI_SESSION_ID",
    "BUGATTI_STEP_ID",
    "BUGATTI_RUN_DIR",
    "BUGATTI_WORKDIR",
    "BUGATTI_PROJECT_ROOT",
];

/// Also defined while a `[checkpoint]` save / restore command runs.
pub const CHECKPOINT_NAMES: &[&str] = &["BUGATTI_CHECKPOINT_ID", "BUGATTI_CHECKPOINT_PATH"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstError {
    #[error("unknown variable `${{{name}}}`")]
    Unknown { name: String },
    #[error("`${{` at byte {at} is not closed with `}}` (write `$${{` for a literal `${{`)")]
    Unterminated { at: usize },
    /// Shell syntax such as `${PORT:-3000}` lands here: the message says how to pass it through.
    #[error("`${{{name}}}` is not a valid variable name (letters, digits and `_`, not starting with a digit); to pass it to the shell as written, write `$${{{name}}}`")]
    BadName { name: String },
    #[error("`${{{name}}}` is shell syntax, which the supervisor does not expand: write `$${{{name}}}` to hand it to the shell as it is")]
    ShellSyntax { name: String },
    #[error("[env] values refer to each other in a cycle: {chain}")]
    Cycle { chain: String },
    #[error("`${{{name}}}` expands to more than {limit} bytes ([env] values that repeat each other grow exponentially)")]
    TooLong { name: String, limit: usize },
}

/// Bytes an `[env]` value may expand to. Values may repeat each other (`B = "${A}${A}"`), so a
/// few dozen short lines could otherwise expand to more memory than the machine has.
pub const MAX_VALUE_LEN: usize = 1 << 20;

enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Split `text` into literal pieces and `${NAME}` references.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, SubstError> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(i) = rest.find('$') {
        let after = &rest[i..];
        if after.starts_with("$${") {
            out.push(Piece::Text(&rest[..i]));
            out.push(Piece::Text("${"));
            rest = &rest[i + 3..];
            offset += i + 3;
        } else if after.starts_with("${") {
            out.push(Piece::Text(&rest[..i]));
            let close = after
                .find('}')
                .ok_or(SubstError::Unterminated { at: offset + i })?;
            let name = &after[2..close];
            if !valid_name(name) {
                let name = name.to_string();
                return Err(if is_shell_syntax(&name) {
                    SubstError::ShellSyntax { name }
                } else {
                    SubstError::BadName { name }
                });
            }
            out.push(Piece::Var(name));
            rest = &after[close + 1..];
            offset += i + close + 1;
        } else {
            out.push(Piece::Text(&rest[..=i]));
            rest = &rest[i + 1..];
            offset += i + 1;
        }
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// `VAR:-default`, `VAR:=x`, `#VAR`, `VAR%suffix`, `!VAR`, …: a shell parameter expansion.
fn is_shell_syntax(name: &str) -> bool {
    let bare = name.trim_start_matches(['#', '!']);
    let head: String = bare
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    valid_name(&head)
        && (bare.len() > head.len() || name.len() > bare.len())
        && bare[head.len()..]
            .chars()
            .next()
            .is_none_or(|c| ":-=?+#%/^,@[".contains(c))
}

/// A name usable as `${NAME}` and as an environment variable.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replace every `${NAME}` by its value; `$${` becomes `${`.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, SubstError> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => {
                out.push_str(vars.get(name).ok_or_else(|| SubstError::Unknown {
                    name: name.to_string(),
                })?)
            }
        }
    }
    Ok(out)
}

/// The names `text` refers to, in order of appearance.
pub fn references(text: &str) -> Result<Vec<String>, SubstError> {
    Ok(pieces(text)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(n) => Some(n.to_string()),
            Piece::Text(_) => None,
        })
        .collect())
}

/// Check-time validation: every reference in `text` is one of `known`.
pub fn check_known(text: &str, known: &BTreeSet<String>) -> Result<(), SubstError> {
    for name in references(text)? {
        if !known.contains(&name) {
            return Err(SubstError::Unknown { name });
        }
    }
    Ok(())
}

/// The session's variables: `base` (the `BUGATTI_*` values, ports, secrets) plus the `[env]`
/// values with their own `${NAME}`s resolved. An env value may use base names and other env
/// names; a cycle among env values is an error.
pub fn session_vars(
    base: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SubstError> {
    /// Resolve env `name` into `out` (which starts with the base names), depth first.
    fn resolve(
        name: &str,
        env: &BTreeMap<String, String>,
        out: &mut BTreeMap<String, String>,
        stack: &mut Vec<String>,
    ) -> Result<(), SubstError> {
        if out.contains_key(name) {
            return Ok(());
        }
        if let Some(pos) = stack.iter().position(|n| n == name) {
            let mut chain = stack[pos..].to_vec();
            chain.push(name.to_string());
            return Err(SubstError::Cycle {
                chain: chain.join(" -> "),
            });
        }
        let raw = env.get(name).ok_or_else(|| SubstError::Unknown {
            name: name.to_string(),
        })?;
        stack.push(name.to_string());
        for r in references(raw)? {
            resolve(&r, env, out, stack)?;
        }
        stack.pop();
        let len: usize = pieces(raw)?
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.len(),
                Piece::Var(n) => out.get(*n).map_or(0, String::len),
            })
            .sum();
        if len > MAX_VALUE_LEN {
            return Err(SubstError::TooLong {
                name: name.to_string(),
                limit: MAX_VALUE_LEN,
            });
        }
        let value = substitute(raw, out)?;
        out.insert(name.to_string(), value);
        Ok(())
    }
    // An [env] name shadows a base name of the same spelling.
    let mut out: BTreeMap<String, String> = base
        .iter()
        .filter(|(k, _)| !env.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for name in env.keys() {
        resolve(name, env, &mut out, &mut Vec::new())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [("APP_PORT", "8080"), ("X", "y")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn replaces_known_names() {
        assert_eq!(
            substitute("http://127.0.0.1:${APP_PORT}/${X}", &vars()).unwrap(),
            "http://127.0.0.1:8080/y"
        );
    }

    #[test]
    fn escape_and_lone_dollar_are_literal() {
        assert_eq!(
            substitute("echo $${HOME} costs $5 $X", &vars()).unwrap(),
            "echo ${HOME} costs $5 $X"
        );
    }

    #[test]
    fn unknown_name_is_an_error() {
        assert_eq!(
            substitute("${NOPE}", &vars()).unwrap_err().to_string(),
            "unknown variable `${NOPE}`"
        );
    }

    #[test]
    fn unterminated_and_bad_names_are_errors() {
        let e = substitute("ab ${APP_PORT", &vars()).unwrap_err();
        assert_eq!(e, SubstError::Unterminated { at: 3 });
        assert!(e.to_string().contains("$${"));
        let e = substitute("${1X}", &vars()).unwrap_err().to_string();
        assert!(e.contains("not a valid variable name"), "{e}");
        let e = substitute("${}", &vars()).unwrap_err().to_string();
        assert!(e.contains("not a valid variable name"), "{e}");
        for shell in ["${PORT:-8080}", "${#NAME}", "${NAME%.txt}", "${X:=1}"] {
            let e = substitute(shell, &vars()).unwrap_err().to_string();
            let literal = format!("$${}", &shell[1..]);
            assert!(
                e.contains("shell syntax") && e.contains(&literal),
                "{shell}: {e}"
            );
        }
        // Shell default syntax gets the way to hand it to the shell.
        let e = substitute("serve --port ${PORT:-3000}", &vars())
            .unwrap_err()
            .to_string();
        assert!(e.contains("write `$${PORT:-3000}`"), "{e}");
        assert_eq!(
            substitute("serve --port $${PORT:-3000}", &vars()).unwrap(),
            "serve --port ${PORT:-3000}"
        );
    }

    #[test]
    fn session_vars_resolve_env_over_base_and_other_env() {
        let base: BTreeMap<String, String> = [("APP_PORT", "8080"), ("BUGATTI_WORKDIR", "/w")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env: BTreeMap<String, String> = [
            ("URL", "http://127.0.0.1:${APP_PORT}${PATH_PART}"),
            ("PATH_PART", "/api"),
            ("DB", "sqlite:///${BUGATTI_WORKDIR}/app.db"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let vars = session_vars(&base, &env).unwrap();
        assert_eq!(vars["URL"], "http://127.0.0.1:8080/api");
        assert_eq!(vars["DB"], "sqlite:////w/app.db");
        assert_eq!(vars["APP_PORT"], "8080");
    }

    #[test]
    fn session_vars_refuse_env_cycles_and_unknowns() {
        let env: BTreeMap<String, String> = [("A", "${B}"), ("B", "x${A}")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let e = session_vars(&BTreeMap::new(), &env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "[env] values refer to each other in a cycle: A -> B -> A"
        );
        let env: BTreeMap<String, String> = [("A".to_string(), "${Z}".to_string())].into();
        assert_eq!(
            session_vars(&BTreeMap::new(), &env).unwrap_err(),
            SubstError::Unknown { name: "Z".into() }
        );
    }

    #[test]
    fn references_and_check_known() {
        assert_eq!(
            references("${A} $${B} ${C}").unwrap(),
            vec!["A".to_string(), "C".to_string()]
        );
        let known: BTreeSet<String> = ["A".to_string()].into();
        assert!(check_known("${A}", &known).is_ok());
        assert_eq!(
            check_known("${A}${Z}", &known).unwrap_err(),
            SubstError::Unknown { name: "Z".into() }
        );
    }

    #[test]
    fn env_values_that_double_each_other_stop_at_the_size_limit() {
        let mut env = BTreeMap::new();
        env.insert("A0".to_string(), "x".repeat(64));
        for i in 1..40 {
            env.insert(format!("A{i}"), format!("${{A{0}}}${{A{0}}}", i - 1));
        }
        let e = session_vars(&BTreeMap::new(), &env).unwrap_err();
        assert!(matches!(e, SubstError::TooLong { .. }), "{e}");
        assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
    }
}

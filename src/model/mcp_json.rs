//! The project's own MCP servers (docs/browser.md): `.mcp.json` in the agent's working directory, as
//! Claude Code reads it (`{"mcpServers": {"name": {…}}}`). The supervisor gives claude-code a
//! generated MCP config with `--strict-mcp-config`, which drops the project's file; so its
//! servers are read here and merged into the generated config. A server named like one of the
//! supervisor's own (`bugatti`, `browser`) is an error before anything runs: the agent could not
//! tell them apart.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The file's name, in the agent's working directory.
pub const FILE_NAME: &str = ".mcp.json";

/// What is wrong with a project's `.mcp.json`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum McpJsonError {
    /// Present but unreadable.
    #[error("{path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// Not JSON, with the position.
    #[error("{path}:{line}:{column}: not JSON: {reason}")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based.
        column: usize,
        /// serde_json's message.
        reason: String,
    },
    /// `mcpServers` is not an object of objects.
    #[error("{path}: {reason}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is expected.
        reason: String,
    },
    /// A server has the name of one of the supervisor's own.
    #[error("{path}: the MCP server `{name}` has the name of the supervisor's own `{name}` server; rename it in {FILE_NAME}")]
    Clash {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
}

/// The servers a project's `.mcp.json` declares.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectServers {
    /// The file they came from.
    pub path: PathBuf,
    /// By name, as written.
    pub servers: Map<String, Value>,
}

impl ProjectServers {
    /// Their names, sorted (serde_json's map keeps its keys in order).
    pub fn names(&self) -> Vec<&str> {
        self.servers.keys().map(String::as_str).collect()
    }
}

/// Reads `<dir>/.mcp.json`: `None` when there is none; an error when it is not what Claude Code
/// reads or names a server in `reserved` (the supervisor's servers in use).
pub fn read(dir: &Path, reserved: &[&str]) -> Result<Option<ProjectServers>, McpJsonError> {
    let path = dir.join(FILE_NAME);
    let text =
        match crate::model::user_file::read_to_string(&path, crate::model::user_file::CONFIG_MAX) {
            Ok(text) => text,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => {
                return Err(McpJsonError::Unreadable {
                    path,
                    reason: e.reason(),
                })
            }
        };
    let value: Value = serde_json::from_str(&text).map_err(|e| McpJsonError::NotJson {
        path: path.clone(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })?;
    let shape = |reason: &str| McpJsonError::Shape {
        path: path.clone(),
        reason: reason.to_string(),
    };
    let servers = match value.get("mcpServers") {
        None => Map::new(),
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => return Err(shape("`mcpServers` must be an object of servers by name")),
    };
    for (name, server) in &servers {
        if !server.is_object() {
            return Err(shape(&format!("the MCP server `{name}` must be an object")));
        }
        if reserved.contains(&name.as_str()) {
            return Err(McpJsonError::Clash {
                path: path.clone(),
                name: name.clone(),
            });
        }
    }
    Ok(Some(ProjectServers { path, servers }))
}

/// Adds the project's servers to a generated MCP config (`{"mcpServers": {…}}`). The
/// generated ones stay as they are ([`read`] has refused a clash already).
pub fn merge(generated: &mut Value, project: &ProjectServers) {
    if !generated["mcpServers"].is_object() {
        generated["mcpServers"] = Value::Object(Map::new());
    }
    if let Some(servers) = generated["mcpServers"].as_object_mut() {
        for (name, server) in &project.servers {
            servers
                .entry(name.clone())
                .or_insert_with(|| server.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(
        text: &str,
    ) -> (
        tempfile::TempDir,
        Result<Option<ProjectServers>, McpJsonError>,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(FILE_NAME), text).expect("write");
        let read = read(dir.path(), &["bugatti", "browser"]);
        (dir, read)
    }

    #[test]
    fn no_file_is_no_servers() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(read(dir.path(), &["bugatti"]), Ok(None));
    }

    #[test]
    fn the_projects_servers_join_the_generated_ones() {
        let (_dir, read) = project(
            r#"{"mcpServers": {"pw": {"command": "npx", "args": ["@playwright/mcp@latest"]}, "db": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
        );
        let servers = read.expect("valid").expect("present");
        assert_eq!(servers.names(), ["db", "pw"]);
        let mut generated = json!({"mcpServers": {"bugatti": {"type": "http", "url": "u"}}});
        merge(&mut generated, &servers);
        assert_eq!(generated["mcpServers"]["bugatti"]["url"], "u");
        assert_eq!(generated["mcpServers"]["pw"]["command"], "npx");
        assert_eq!(generated["mcpServers"]["db"]["type"], "http");
        let mut empty = json!({});
        merge(&mut empty, &servers);
        assert_eq!(empty["mcpServers"].as_object().map(|m| m.len()), Some(2));
    }

    #[test]
    fn a_clash_with_the_supervisors_servers_is_an_error_naming_it() {
        let (_dir, read) = project(r#"{"mcpServers": {"browser": {"command": "x"}}}"#);
        let e = read.expect_err("clash");
        assert!(
            matches!(&e, McpJsonError::Clash { name, .. } if name == "browser"),
            "{e}"
        );
        assert!(e.to_string().contains("rename it in .mcp.json"), "{e}");
        // Only the names in use are reserved.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(FILE_NAME),
            r#"{"mcpServers": {"browser": {}}}"#,
        )
        .expect("write");
        assert!(super::read(dir.path(), &["bugatti"]).is_ok());
    }

    #[test]
    fn broken_files_say_where() {
        let (_dir, read) = project("{\n  \"mcpServers\": {,\n}");
        let e = read.expect_err("not JSON");
        assert!(matches!(e, McpJsonError::NotJson { line: 2, .. }), "{e}");
        assert!(e.to_string().contains(".mcp.json:2:"), "{e}");
        let (_dir, read) = project(r#"{"mcpServers": ["pw"]}"#);
        assert!(matches!(read, Err(McpJsonError::Shape { .. })));
        let (_dir, read) = project(r#"{"mcpServers": {"pw": "npx"}}"#);
        assert!(read.expect_err("shape").to_string().contains("`pw`"));
    }
}

//! `supervisor report --open`: the suite's report.html in the desktop's browser.

/// `report --open`: report.html in the desktop's browser; without a display, or when the opener
/// fails, a plain sentence with the report's path instead of the opener's own errors.
pub fn open_report(page: &std::path::Path) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let no_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .all(|v| std::env::var_os(v).is_none_or(|x| x.is_empty()));
    if !cfg!(target_os = "macos") && no_display {
        eprintln!(
            "report --open: no display to open it on (DISPLAY and WAYLAND_DISPLAY are unset); \
             the report is {}",
            page.display()
        );
        return;
    }
    match std::process::Command::new(opener)
        .arg(page)
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            eprintln!(
                "report --open: {opener} could not open it ({}{}); the report is {}",
                out.status,
                said.lines()
                    .next()
                    .map(|l| format!(": {}", l.trim()))
                    .unwrap_or_default(),
                page.display()
            );
        }
        Err(e) => eprintln!(
            "report --open: cannot run {opener} ({e}); the report is {}",
            page.display()
        ),
    }
}

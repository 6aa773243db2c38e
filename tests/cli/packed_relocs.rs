//! The `supervisor` binary is linked with packed relative relocations (DT_RELR) exactly where the
//! machine that built it can start such a binary (glibc 2.36 or later; see `build.rs`): there its
//! start skips most of the dynamic loader's relocation work, and anywhere else it must not carry a
//! dependency its own machine cannot meet.

use std::process::Command;

/// The build machine's glibc (major, minor), as `build.rs` reads it.
fn glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.trim().strip_prefix("glibc ")?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[test]
fn the_binary_packs_its_relative_relocations_where_its_glibc_can_load_them() {
    let test = "packed_relocs";
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        eprintln!("not a linux-gnu build: build.rs adds nothing here");
        return;
    }
    let binary = env!("CARGO_BIN_EXE_supervisor");
    let Some(dynamic) = crate::common::skip::require(
        test,
        Command::new("readelf")
            .args(["-d", binary])
            .output()
            .map_err(|e| format!("readelf (binutils) cannot run: {e}")),
    ) else {
        return;
    };
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    let packed = dynamic.contains("(RELR)");
    let turned_off =
        std::env::var("BUGATTI_NO_PACKED_RELOCS").is_ok_and(|v| !v.is_empty() && v != "0");
    let wanted = !turned_off && glibc().is_some_and(|v| v >= (2, 36));
    assert_eq!(
        packed,
        wanted,
        "DT_RELR in {binary}: {packed}, expected {wanted} (glibc {:?}):\n{dynamic}",
        glibc()
    );
    // Either way the binary starts on the machine that built it.
    let version = Command::new(binary)
        .arg("--version")
        .output()
        .expect("run the supervisor");
    assert!(
        version.status.success(),
        "{}",
        String::from_utf8_lossy(&version.stderr)
    );
}

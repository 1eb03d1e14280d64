// The release under test, for the driver's hello line (Cargo.toml pins it; provisioning writes it there).
fn main() {
    let manifest = std::fs::read_to_string("Cargo.toml").unwrap_or_default();
    let version = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("fe2o3-amqp"))
        .and_then(|l| l.split('"').nth(1))
        .unwrap_or("unknown")
        .trim_start_matches('=')
        .to_string();
    println!("cargo:rustc-env=FE2O3_VERSION={version}");
    println!("cargo:rerun-if-changed=Cargo.toml");
}

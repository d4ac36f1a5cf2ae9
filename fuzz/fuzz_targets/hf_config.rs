//! Any text as a config.json: an error naming a JSON path or a valid spec, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(i) = memwall_import::model_from_hf(text, "fuzz") {
        let _ = i.model.params();
        let _ = i.model.kv_cache_layers();
    }
});

//! Any bytes as a GGUF file: the reader and the mapping return an error or a valid spec, never
//! panic, and a mapped model's accounting (parameters, stored bytes) does not overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memwall_spec::{Mix, WeightQuant};

fuzz_target!(|data: &[u8]| {
    let Ok(h) = memwall_import::gguf::parse(std::io::Cursor::new(data), data.len() as u64, "fuzz") else { return };
    let Ok(i) = memwall_import::model_from_gguf(&h, "fuzz") else { return };
    let m = &i.model;
    let _ = m.params();
    let bytes: u64 = WeightQuant::new(Mix::Stored).assign(m).iter().map(|a| a.tensor.bytes_in(a.format)).sum();
    assert_eq!(bytes, h.tensor_bytes());
    let _ = m.kv_cache_layers();
});

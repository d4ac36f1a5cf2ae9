//! The dequantization table of `cost.rs` holds the per-format costs measured on the
//! development host, relative to Q4_0 (see `default_dequant_cycles`).

use memwall::spec::cost::default_dequant_cycles;
use memwall::spec::{EngineSpec, QuantFormat};

#[test]
fn the_table_is_the_measured_ratios_anchored_at_q4_0() {
    let text = include_str!("../datasets/hosts/xeon-2c.engine.toml");
    let e: EngineSpec = toml::from_str(text).unwrap();
    e.validate().unwrap();
    let measured = &e.cpu.as_ref().unwrap().dequant_cycles;
    let q40 = measured["q4_0"];
    let anchor = default_dequant_cycles("q4_0".parse().unwrap());
    assert!(measured.len() >= 9);
    for (name, m) in measured {
        let f: QuantFormat = name.parse().unwrap();
        let want = anchor * m / q40;
        let table = default_dequant_cycles(f);
        // Rounded to 3 decimals; a recalibration moves them by a few per cent.
        assert!((table - want).abs() <= 0.15 * want + 0.002, "{name}: table {table}, measured ratio gives {want:.4}");
    }
}

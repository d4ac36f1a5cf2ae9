//! What a CPU core's microarchitecture implies for the cost model: SIMD width, SIMD pipes,
//! int8 dot-product instructions and the dynamic power of one loaded core, so a device given
//! by its spec sheet (cores, clocks and core names) gets its cluster figures.
//!
//! The widths and pipe counts are the vendors' published microarchitecture figures: Arm's Software
//! Optimization Guides for the Cortex cores (`ASIMD/SVE` pipes listed per core), Apple's P/E cores
//! as measured by Dougall Johnson's M1 microarchitecture tables (four 128-bit FP/SIMD pipes per P
//! core, two per E core; later generations keep them), Qualcomm Oryon (four 128-bit vector pipes,
//! Chips and Cheese "Qualcomm's Oryon Core"), AMD Zen 4 (AVX-512 executed on 256-bit datapaths, two
//! FMA pipes) and Zen 5 (full 512-bit datapaths on desktop parts and Strix Halo; 256-bit in the
//! monolithic mobile chips, `zen5-mobile`), Intel Golden/Raptor/Redwood/Lion Cove (two 256-bit FMA
//! ports; AVX-VNNI) and Gracemont/Crestmont/Skymont E cores (two 128-bit pipes; AVX-VNNI). Dot
//! products: ARMv8.2 `SDOT` from the Cortex-A55/A75 on; AVX-VNNI from Alder Lake; AVX512-VNNI on
//! Zen 4. Power per core is an order of magnitude only (the presets' figures for their cores).

/// A core microarchitecture's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreFigures {
    /// SIMD register width, bits.
    pub simd_bits: u32,
    /// SIMD pipes per core.
    pub simd_pipes: u32,
    /// Int8 dot-product instructions.
    pub int8_dot: bool,
    /// Dynamic power of one loaded core at its top clock, W.
    pub power_w: f64,
}

/// The figures of core `name` (lower case, as the device database names cores:
/// `cortex-x4`, `cortex-a720`, `oryon`, `apple-p`, `zen4`, `lion-cove`), matched by prefix
/// family; None for a core the table does not know.
pub fn core_figures(name: &str) -> Option<CoreFigures> {
    let n = name.trim().to_ascii_lowercase();
    let f = |simd_bits, simd_pipes, int8_dot, power_w| Some(CoreFigures { simd_bits, simd_pipes, int8_dot, power_w });
    // Arm big cores: Cortex-X1..X4, X925 (X925: six 128-bit pipes).
    if n.starts_with("cortex-x925") {
        return f(128, 6, true, 4.0);
    }
    if n.starts_with("cortex-x") {
        return f(128, 4, true, 3.0);
    }
    // Older Arm in-order/out-of-order cores without SDOT (A53, A72, A73).
    if ["cortex-a53", "cortex-a72", "cortex-a73"].contains(&n.as_str()) {
        return f(128, 1, false, 0.8);
    }
    // Arm performance cores: A76..A78, A710/A715/A720/A725 (two 128-bit pipes).
    if n.starts_with("cortex-a7") {
        return f(128, 2, true, 1.2);
    }
    // Arm efficiency cores: A510/A520 (two 128-bit pipes shared by a pair: one each) and A55
    // (one 128-bit pipe pair at 64 bits: one 128-bit equivalent).
    if n.starts_with("cortex-a5") {
        return f(128, 1, true, 0.3);
    }
    if n.starts_with("oryon") || n.starts_with("phoenix") {
        return f(128, 4, true, 3.5);
    }
    if n.starts_with("apple") {
        let efficiency = n.ends_with("-e") || ["icestorm", "blizzard", "sawtooth"].iter().any(|e| n.contains(e));
        return if efficiency { f(128, 2, true, 0.4) } else { f(128, 4, true, 4.5) };
    }
    // Zen 5 in AMD's monolithic mobile chips (Strix Point, Krackan Point; the sheets name its
    // cores `zen5-mobile`, `zen5c-mobile`) runs 512-bit ops on 256-bit datapaths, at Zen 4's
    // rate per clock, and 128/256-bit integer vector ops at half Zen 4's (David Huang's
    // measurements of a Ryzen AI 9 365, as reported at
    // https://gamebastion.com/n/the-first-technical-deep-dive-of-the-zen-5/446175).
    if n.starts_with("zen5") && n.ends_with("-mobile") {
        return f(256, 2, true, 4.0);
    }
    if n.starts_with("zen5") {
        return f(512, 2, true, 6.0);
    }
    if n.starts_with("zen") {
        return f(256, 2, n.starts_with("zen4"), 6.0);
    }
    if ["gracemont", "crestmont", "skymont", "darkmont"].iter().any(|e| n.starts_with(e)) {
        return f(128, 2, true, 1.5);
    }
    if n.ends_with("cove") {
        return f(256, 2, true, 8.0);
    }
    if n.starts_with("carmel") || n.starts_with("denver") {
        return f(128, 2, false, 2.0);
    }
    None
}

/// The figures a core the table does not know takes: two 128-bit pipes with dot products,
/// 1.5 W (a mid-range Arm core).
pub const UNKNOWN_CORE: CoreFigures = CoreFigures { simd_bits: 128, simd_pipes: 2, int8_dot: true, power_w: 1.5 };

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_by_hand() {
        assert_eq!(core_figures("cortex-x4").unwrap().simd_pipes, 4);
        assert_eq!(core_figures("Cortex-A720").unwrap().simd_pipes, 2);
        assert_eq!(core_figures("cortex-a520").unwrap().simd_pipes, 1);
        assert!(!core_figures("cortex-a72").unwrap().int8_dot);
        assert_eq!(core_figures("apple-m4-p").unwrap().simd_pipes, 4);
        assert_eq!(core_figures("apple-m4-e").unwrap().simd_pipes, 2);
        assert_eq!(core_figures("zen4").unwrap().simd_bits, 256);
        assert_eq!(core_figures("zen5").unwrap().simd_bits, 512);
        assert_eq!(core_figures("lion-cove").unwrap().simd_bits, 256);
        assert_eq!(core_figures("skymont").unwrap().simd_bits, 128);
        assert_eq!(core_figures("oryon-v2").unwrap().simd_pipes, 4);
        assert_eq!(core_figures("zen5").unwrap().simd_bits, 512);
        assert_eq!(core_figures("zen5-mobile").unwrap().simd_bits, 256);
        assert_eq!(core_figures("zen5c-mobile").unwrap().simd_bits, 256);
        assert_eq!(core_figures("mystery-core"), None);
    }
}

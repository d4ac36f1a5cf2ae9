//! The validation table: rows refused with line and column, rows set aside with their
//! reason (excluded by hand, not stateable, physically impossible), the rest cross-validated.

use memwall_calib::Knob;
use memwall_calib::published::{parse_table, validate};

const HEADER: &str = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,exclude,source\n";

#[test]
fn rows_are_used_or_set_aside_with_their_reason() {
    let text = format!(
        "{HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,12.0,,test\n\
         b,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q8_0,llama.cpp,cpu,4,0,128,8.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,40.0,,test\n\
         d,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,500.0,,test\n\
         e,pi5,no-such-device,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,10.0,,test\n\
         f,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,10.0,a build known to differ,test\n"
    );
    let rows = parse_table(&text, "t.csv").unwrap();
    let v = validate(&rows).unwrap();
    let ids: Vec<&str> = v.validated.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let why = |id: &str| v.excluded.iter().find(|x| x.0 == id).map(|x| x.1.clone()).unwrap();
    assert!(why("d").contains("physically impossible") && why("d").contains("peak bandwidth"), "{}", why("d"));
    assert!(why("e").contains("no-such-device") && !why("e").contains("presets:"), "{}", why("e"));
    assert_eq!(why("f"), "a build known to differ");
    // Every used row has a prediction by a fit that left its device out, and the roofline.
    for r in &v.validated {
        assert!(r.predicted_tok_s > 0.0 && r.roofline_tok_s > r.measured_tok_s, "{r:?}");
    }
}

#[test]
fn malformed_tables_name_the_line_and_column() {
    let cases = [
        (
            format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,four,0,128,12.0,,s\n"),
            "line 2, column threads",
        ),
        (
            format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,4,0,128,-1,,s\n"),
            "line 2, column measured_tok_s",
        ),
        (format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,4,0,128,0,,s\n"), "must be > 0"),
        ("id,device\na,b\n".to_string(), "column unit_device"),
    ];
    for (text, needle) in cases {
        let err = parse_table(&text, "t.csv").unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("t.csv"), "`{needle}` not in {err}");
    }
}

const PREFILL_HEADER: &str = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,prefill_tokens,prefill_depth,measured_prefill_tok_s,exclude,source\n";

#[test]
fn prefill_rates_are_validated_leaving_their_device_out() {
    // Three devices with decode and prefill rates, one with decode only.
    let text = format!(
        "{PREFILL_HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,512,0,60.0,,test\n\
         b,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q8_0,llama.cpp,cpu,4,0,128,8.0,512,0,55.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,40.0,512,0,300.0,,test\n\
         d,pi4,raspberry-pi-4-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,4.0,512,1024,15.0,,test\n\
         e,m3,apple-m3-16gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,40.0,,,,,test\n\
         f,pi5b,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,512,0,5000.0,,test\n"
    );
    let rows = parse_table(&text, "t.csv").unwrap();
    assert_eq!((rows[3].prefill_tokens, rows[3].prefill_depth), (Some(512), 1024));
    let v = validate(&rows).unwrap();
    assert_eq!(v.validated.len(), 6);
    // 5000 tok/s of prefill is beyond 4 Pi 5 cores' peak (about 250 tok/s of a 1.24e9-weight
    // model): its decode row is used, its prefill rate set aside.
    let why = v.excluded.iter().find(|x| x.0 == "f (prefill)").map(|x| x.1.clone()).unwrap();
    assert!(why.contains("physically impossible") && why.contains("peak arithmetic"), "{why}");
    let p = v.prefill.as_ref().expect("prefill rows");
    let ids: Vec<&str> = p.validated.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert!(p.validated.iter().all(|r| r.phase == memwall_calib::Phase::Prefill));
    assert!(v.validated.iter().all(|r| r.phase == memwall_calib::Phase::Decode));
    // Row d's prompt follows 1024 cached tokens.
    assert_eq!(p.observations[3].scenario.workload.history_tokens, Some(1024));
    // Each device's prefill rows are predicted by prefill figures fitted without it.
    assert_eq!(p.cv.folds.keys().map(String::as_str).collect::<Vec<_>>(), ["m2", "pi4", "pi5"]);
    for r in &p.validated {
        assert!(r.predicted_tok_s > 0.0 && r.roofline_tok_s > r.measured_tok_s, "{r:?}");
    }
    // The fold of the Pi 5 never saw its rows: refitting without them gives the same figure.
    let without: Vec<_> = rows.iter().filter(|r| r.unit_device != "pi5").cloned().collect();
    let w = validate(&without).unwrap();
    let full_without = &w.prefill.as_ref().unwrap().cv.full.values;
    assert!((p.cv.folds["pi5"][0] / full_without[0] - 1.0).abs() < 1e-6, "{:?} vs {full_without:?}", p.cv.folds);
    // Each fold sees the prompt rates of two devices, too few to fit the figure
    // (MIN_PREFILL_DEVICES = 3): it keeps its prior; the fit on all three moves off it.
    assert_eq!(memwall_calib::validate::MIN_PREFILL_DEVICES, 3);
    let prior = p.params[0].prior;
    assert!(p.cv.folds.values().all(|f| f[0] == prior), "{:?} vs prior {prior}", p.cv.folds);
    assert!((p.cv.full.values[0] / prior - 1.0).abs() > 1e-3, "{:?}", p.cv.full.values);
    // The profiles written carry the prefill efficiency fitted on every prefill row.
    let profiles = memwall_calib::published::fitted_engine_profiles(&v).unwrap();
    let text = &profiles.iter().find(|(n, _)| n == "llama.cpp").unwrap().1;
    let e: memwall_spec::EngineSpec = toml::from_str(text).unwrap();
    assert!((e.cpu.as_ref().unwrap().prefill_efficiency / p.cv.full.values[0] - 1.0).abs() < 1e-12);
    assert!(e.sources["cpu.prefill_efficiency"].contains("4 prefill rows of 3 devices"), "{:?}", e.sources);
    // That figure is fitted on exactly three devices, which no fold could fit: no
    // cross-validated residual describes it, so its prompt band is unknown.
    assert_eq!(e.cpu.as_ref().unwrap().prefill_error_ratio, None);
    assert!(e.sources["cpu.prefill_error_ratio"].starts_with("unknown"), "{:?}", e.sources);
}

#[test]
fn a_prompt_band_comes_from_the_residuals_of_the_figure_as_shipped() {
    // Four devices' prompt rates: every fold fits llama.cpp's prefill figure on three, as the
    // shipped profile does on four, so its band is its own leave-one-device-out residuals.
    let text = format!(
        "{PREFILL_HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,12.0,512,0,60.0,,test\n\
         b,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q8_0,llama.cpp,cpu,4,0,128,8.0,512,0,55.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,40.0,512,0,300.0,,test\n\
         d,pi4,raspberry-pi-4-8gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,4.0,512,0,15.0,,test\n\
         e,m3,apple-m3-16gb,,llama-3.2-1b,Q4_0,llama.cpp,cpu,4,0,128,45.0,512,0,350.0,,test\n\
         f,op12,snapdragon-8-gen3-16gb,,llama-3.2-1b,int4-g32,executorch,cpu,,64,128,50.2,64,0,260.5,,test\n"
    );
    let v = validate(&parse_table(&text, "t.csv").unwrap()).unwrap();
    let p = v.prefill.as_ref().unwrap();
    let ratio = |id: &str| {
        let r = p.validated.iter().find(|r| r.id == id).unwrap();
        r.measured_tok_s / r.predicted_tok_s
    };
    let profiles = memwall_calib::published::fitted_engine_profiles(&v).unwrap();
    let engine = |name: &str| -> memwall_spec::EngineSpec {
        toml::from_str(&profiles.iter().find(|(n, _)| n == name).unwrap().1).unwrap()
    };
    let llama = engine("llama.cpp");
    let [lo, hi] = llama.cpu.as_ref().unwrap().prefill_error_ratio.expect("a prompt band");
    let device = |id: &str| p.validated.iter().find(|r| r.id == id).unwrap().unit_device.clone();
    let own: Vec<(f64, String)> = ["a", "b", "c", "d", "e"].iter().map(|id| (ratio(id), device(id))).collect();
    let own: Vec<(f64, &str)> = own.iter().map(|(r, d)| (*r, d.as_str())).collect();
    let expected = memwall_calib::published::ratio_interval(&own).unwrap();
    assert!(lo < hi && (lo / expected[0] - 1.0).abs() < 1e-12 && (hi / expected[1] - 1.0).abs() < 1e-12);
    assert!(llama.sources["cpu.prefill_error_ratio"].contains("5 prefill rows of 4 devices"), "{:?}", llama.sources);
    // ExecuTorch's one device ships the prior; its band is the residuals of the rows
    // predicted at the prior (none here but its own: too few devices, unknown).
    let et = engine("executorch");
    assert_eq!(et.cpu.as_ref().unwrap().prefill_error_ratio, None);
    assert!(et.sources["cpu.prefill_error_ratio"].contains("too few devices: unknown"), "{:?}", et.sources);
}

#[test]
fn a_prefill_rate_needs_its_prompt_length_and_the_reverse() {
    let cases = [
        ("a,pi5,raspberry-pi-5-8gb,,m,Q4_0,llama.cpp,cpu,4,0,128,12.0,512,0,,,s\n", "column measured_prefill_tok_s"),
        ("a,pi5,raspberry-pi-5-8gb,,m,Q4_0,llama.cpp,cpu,4,0,128,12.0,,0,60.0,,s\n", "column prefill_tokens"),
        ("a,pi5,raspberry-pi-5-8gb,,m,Q4_0,llama.cpp,cpu,4,0,128,12.0,0,0,60.0,,s\n", "at least one token"),
        ("a,pi5,raspberry-pi-5-8gb,,m,Q4_0,llama.cpp,cpu,4,0,128,12.0,512,0,0,,s\n", "must be > 0"),
    ];
    for (row, needle) in cases {
        let err = parse_table(&format!("{PREFILL_HEADER}{row}"), "t.csv").unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("line 2"), "`{needle}` not in {err}");
    }
}

#[test]
fn a_soc_left_out_is_predicted_from_its_spec_sheet_with_family_figures_computed_without_it() {
    use memwall_calib::published::sheet_device;
    // The M2's own CPU share (0.59, measured) gives way to the Mac family's median without it
    // (0.38 of the other seven Macs), its per-core 50 GB/s to their 60.
    let m2 = memwall_catalog::load_device("apple-m2-16gb").unwrap();
    let s = sheet_device(&m2, &["apple-m2-16gb"]);
    assert_eq!((s.memory.achievable_fraction, s.memory.per_core_gbps), (Some(0.38), Some(60.0)));
    // Apple's GPU share: the median of the nine other Apple presets.
    assert!((s.accelerators.gpu_bandwidth_fraction.unwrap() - 0.776).abs() < 1e-9);
    assert_eq!(s.memory.peak_gbps(), m2.memory.peak_gbps());
    let text = format!(
        "{HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,12.0,,test\n\
         b,pi4,raspberry-pi-4-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,5.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,40.0,,test\n\
         d,m3,apple-m3-16gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,45.0,,test\n"
    );
    let v = validate(&parse_table(&text, "t.csv").unwrap()).unwrap();
    for r in &v.validated {
        assert!(r.sheet_tok_s > 0.0 && r.family_tok_s > 0.0, "{r:?}");
    }
    let row = |id: &str| v.validated.iter().find(|r| r.id == id).unwrap();
    // The M2 row from its sheet reads at 0.38 of the peak instead of 0.59: slower than the
    // leave-one-device-out prediction, which kept the preset's measured share.
    assert!(row("c").sheet_tok_s < row("c").predicted_tok_s, "{:?}", row("c"));
    assert_eq!((row("a").family.as_str(), row("c").family.as_str()), ("board", "apple-mac"));
}

#[test]
fn an_engine_left_out_is_predicted_by_the_generic_figures_fitted_on_the_others() {
    use memwall_calib::published::fitted_engine_profiles;
    // Three engines on CPUs: llama.cpp on three devices, ExecuTorch on two phones, MNN on
    // one. Each row also gets the prediction of an engine no row informs: the generic
    // figures (the median of the other engines' figures) fitted without its engine's rows.
    let text = format!(
        "{HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,12.0,,test\n\
         b,pi4,raspberry-pi-4-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,5.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,40.0,,test\n\
         d,op12,snapdragon-8-gen3-16gb,,llama-3.2-1b,int4-g32,executorch,cpu,,64,128,50.2,,test\n\
         e,op12,snapdragon-8-gen3-16gb,,llama-3.2-3b,int4-g32,executorch,cpu,,64,128,19.7,,test\n\
         f,s24,snapdragon-8-gen2-8gb,,llama-3.2-1b,int4-g32,executorch,cpu,,64,128,35.0,,test\n\
         g,op13,snapdragon-8-elite-12gb,,llama-3.2-1b,Q4_0,mnn,cpu,,64,128,30.0,,test\n"
    );
    let v = validate(&parse_table(&text, "t.csv").unwrap()).unwrap();
    for r in &v.validated {
        assert!(r.engine_tok_s.is_finite() && r.engine_tok_s > 0.0, "{r:?}");
    }
    let row = |id: &str| v.validated.iter().find(|r| r.id == id).unwrap();
    // ExecuTorch's rows left out are predicted by figures fitted without them, not by its
    // own fit on two phones: the two predictions differ.
    assert!((row("d").engine_tok_s / row("d").in_sample_tok_s - 1.0).abs() > 1e-3, "{:?}", row("d"));
    // With its phone left out, ExecuTorch keeps one device, too few for figures of its own:
    // leave-one-device-out answers it as an engine without a profile, the generic figures
    // (llama.cpp's alone, MNN's one device having no vote either), as leaving it out does.
    assert!((row("d").engine_tok_s / row("d").predicted_tok_s - 1.0).abs() < 1e-6, "{:?}", row("d"));
    // MNN's one phone is too few devices for figures of its own: in sample, left out and
    // with its engine left out, it is the engine no row informs.
    let g = row("g");
    assert!((g.in_sample_tok_s / g.engine_tok_s - 1.0).abs() < 1e-6, "{g:?}");
    assert!((g.predicted_tok_s / g.engine_tok_s - 1.0).abs() < 1e-6, "{g:?}");
    // The generic figures are the median of the two informed engines' (in logarithms: with
    // two, the geometric mean), each engine one vote whatever its rows.
    let share = |engine: &str| {
        let i = v.params.iter().position(|p| p.engine == engine && p.knob == Knob::BandwidthShare).unwrap();
        v.cv.full.values[i]
    };
    let typical = v.generic.iter().find(|g| g.knob == Knob::BandwidthShare).unwrap();
    assert_eq!(typical.engines, ["executorch", "llama.cpp"]);
    assert!((typical.value - (share("executorch") * share("llama.cpp")).sqrt()).abs() < 1e-12, "{typical:?}");
    assert!((share("mnn") - typical.value).abs() < 1e-12);
    let profiles = fitted_engine_profiles(&v).unwrap();
    let profile = |name: &str| -> memwall_spec::EngineSpec {
        toml::from_str(&profiles.iter().find(|(n, _)| n == name).unwrap().1).unwrap()
    };
    let generic = profile("generic");
    assert_eq!(generic.name, "generic");
    let cpu = generic.cpu.as_ref().unwrap();
    assert!((cpu.bandwidth_share - typical.value).abs() < 1e-12);
    assert!(generic.sources["cpu.bandwidth_share"].contains("executorch, llama.cpp"), "{:?}", generic.sources);
    // Seven rows: a band from the leave-one-engine-out residuals, which holds them by
    // construction between its 10th and 90th percentiles.
    let [lo, hi] = cpu.error_ratio.expect("a band on the CPU");
    let inside = v.validated.iter().filter(|r| (lo..=hi).contains(&(r.measured_tok_s / r.engine_tok_s))).count();
    assert!(lo < hi && inside >= 4, "[{lo}, {hi}] holds {inside} of 7");
    assert!(generic.sources["cpu.error_ratio"].contains("leave-one-engine-out"), "{:?}", generic.sources);
    // ExecuTorch's rows come from two devices: too few for a band of its own, so it takes
    // the band of an engine no row informs; MNN ships the generic figures and says why.
    let et = profile("executorch");
    assert_eq!(et.cpu.as_ref().unwrap().error_ratio, Some([lo, hi]));
    assert!(et.sources["cpu.error_ratio"].contains("too few"), "{:?}", et.sources);
    assert_eq!(et.cpu.as_ref().unwrap().error_ratio_stated, None);
    let mnn = profile("mnn");
    assert!((mnn.cpu.as_ref().unwrap().bandwidth_share - typical.value).abs() < 1e-12);
    assert!(mnn.sources["cpu.bandwidth_share"].contains("the generic engine's figure"), "{:?}", mnn.sources);
}

#[test]
fn a_band_for_a_new_device_widens_with_few_devices_by_hand() {
    use memwall_calib::published::{new_device_widening, ratio_interval};
    // t(0.9, 2) / z(0.9) × √(1 + 1/3) = 1.886 / 1.2816 × 1.1547 = 1.6993.
    assert!((new_device_widening(3) - 1.886 / 1.2816 * (4.0_f64 / 3.0).sqrt()).abs() < 1e-12);
    assert!((new_device_widening(5) - 1.3103).abs() < 1e-4);
    assert!((new_device_widening(10) - 1.1318).abs() < 1e-4);
    assert!(new_device_widening(1000) > 1.0 && new_device_widening(1000) < 1.001);
    // Five devices at e^-2 … e^2: in logs the 10th, 50th and 90th percentiles are -2, 0 and
    // 2 (each row's midpoint share is 0.1, 0.3, …, 0.9), widened by 1.3103.
    let rows: Vec<(f64, String)> = (-2..=2).map(|k| ((k as f64).exp(), format!("d{k}"))).collect();
    let rows: Vec<(f64, &str)> = rows.iter().map(|(r, d)| (*r, d.as_str())).collect();
    let [lo, hi] = ratio_interval(&rows).unwrap();
    let k = new_device_widening(5);
    assert!((lo.ln() + 2.0 * k).abs() < 1e-12 && (hi.ln() - 2.0 * k).abs() < 1e-12, "[{lo}, {hi}]");
    // One device says nothing of the next; four rows are too few.
    let one: Vec<(f64, &str)> = (0..6).map(|i| (1.0 + i as f64 / 10.0, "a")).collect();
    assert_eq!(ratio_interval(&one), None);
    assert_eq!(ratio_interval(&rows[..4]), None);
}

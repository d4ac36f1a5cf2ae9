//! The thermal networks and governors of two device presets, fitted to published
//! sustained-load measurements, and the check that the presets as shipped reproduce them.
//! The published runs, the networks, the losses and the search are
//! `memwall::calib::thermal` (its documentation keeps the sources and the reasoning).
//!
//! `presets_reproduce_published_sustained_load` simulates each published workload with the
//! shipped presets, prints the comparison and asserts it. `refit_thermal_networks` reruns
//! the search and prints the `[thermal]` sections (and the GPU bandwidth fractions) that
//! were pasted into the device TOMLs:
//!
//! ```text
//! cargo test --release --test thermal_fit -- --ignored --nocapture
//! ```

use memwall::calib::thermal::{
    IPHONE, IPHONE_ITERATIONS, IPHONE_PARAMS, IPHONE_PEAK, IPHONE_SUSTAINED, IphoneFit, Observed, S25, S25_PARAMS,
    S25_RUNS, iphone_device, iphone_scenario, refit_iphone, refit_s25, reproduces, s25_device, s25_loss, s25_runs,
    s25_scenario, shipped, toml_section,
};
use memwall::lab::load_device;
use memwall::sim::des::Summary;
use memwall::spec::{DeviceSpec, Scenario, ThermalSpec};

fn compare(device: &str, fitted: &[f64], shipped: &[f64]) {
    let same = reproduces(fitted, shipped);
    println!("{device}: the search reproduces the shipped preset: {}", if same { "yes" } else { "NO" });
    if !same {
        println!("  fitted  {fitted:?}\n  shipped {shipped:?}");
    }
}

#[test]
#[ignore = "the search: cargo test --release --test thermal_fit -- --ignored --nocapture"]
fn refit_thermal_networks() {
    let start = std::time::Instant::now();
    println!("{IPHONE}: {}", IPHONE_PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "));
    let x = refit_iphone(&mut |line| println!("{line}")).unwrap();
    let fit = IphoneFit::run(iphone_device(&x).unwrap()).unwrap();
    println!(
        "\n# {IPHONE}: R_die {} K/W, R_board {} K/W, C_board {} J/K, first trip {} °C, ladder ratio {}, \
         data loss {:.5}\n# iteration 1 {:.2} tok/s, iterations 8-20 {:.2}, retained at 3 {:.3}, at 8 {:.3}, \
         onset {:?} s, power over 8-20 {:.2} W\n\nGPU reach (accelerators.gpu_bandwidth_fraction, x llm_rs2's share on the S25) = {:?}\n",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        fit.loss(),
        fit.first(),
        fit.sustained(),
        fit.retained(3),
        fit.retained(8),
        fit.obs.summary.throttle_onset_s,
        fit.obs.power_w(7),
        x[5]
    );
    println!("{}", toml_section(iphone_device(&x).unwrap().thermal.as_ref().unwrap(), "see [sources]"));
    let iphone = x;

    println!("{S25}: {}", S25_PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "));
    let x = refit_s25(&mut |line| println!("{line}")).unwrap();
    let obs = s25_runs(&s25_device(&x).unwrap()).unwrap();
    println!(
        "\n# {S25}: R_die {} K/W, R_board {} K/W, C_board {} J/K, first trip {} °C, trip spacing {} °C, \
         data loss {:.5}",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        s25_loss(&obs)
    );
    for (o, r) in obs.iter().zip(&S25_RUNS) {
        println!(
            "# {} tokens from {} °C: {:.2} tok/s, onset {:?} s, mean clock {:.3}, max die {:.1} °C",
            r.tokens,
            r.start_c,
            o.tok_s(),
            o.summary.throttle_onset_s,
            o.mean_clock(),
            o.summary.max_die_c
        );
    }
    println!("\nGPU reach (accelerators.gpu_bandwidth_fraction x llm_rs2's share) = {:?}\n", x[5]);
    println!("{}", toml_section(s25_device(&x).unwrap().thermal.as_ref().unwrap(), "see [sources]"));

    compare(IPHONE, &iphone, &shipped(&load_device(IPHONE).unwrap(), true).unwrap());
    compare(S25, &x, &shipped(&load_device(S25).unwrap(), false).unwrap());
    println!("search took {:.0} s", start.elapsed().as_secs_f64());
}

// ----------------------------------------------------------------------------------------
// The check of the shipped presets.

/// The comparison table: one row per metric, with its verdict.
#[derive(Default)]
struct Report {
    rows: Vec<[String; 5]>,
    failures: Vec<String>,
}

impl Report {
    /// A simulated figure against a published one, within `ok`.
    fn check(&mut self, device: &str, metric: &str, sim: f64, published: &str, ok: bool, tolerance: &str) {
        self.rows.push([device.into(), metric.into(), format!("{sim:.2}"), published.into(), tolerance.into()]);
        if !ok {
            self.failures.push(format!("{device}: {metric}: simulated {sim:.3}, published {published} ({tolerance})"));
        }
    }

    /// A simulated figure shown for information.
    fn show(&mut self, device: &str, metric: &str, sim: String, published: &str) {
        self.rows.push([device.into(), metric.into(), sim, published.into(), "(not asserted)".into()]);
    }

    fn print(&self) {
        let w: Vec<usize> = (0..5).map(|i| self.rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        let head = ["device", "metric", "simulated", "published", "tolerance"];
        let line = |r: &[String; 5]| {
            r.iter().zip(&w).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join(" | ").trim_end().to_string()
        };
        println!("{}", line(&head.map(String::from)));
        println!("{}", w.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-|-"));
        for r in &self.rows {
            println!("{}", line(r));
        }
    }
}

fn within(sim: f64, published: f64, rel: f64) -> bool {
    (sim - published).abs() <= rel * published
}

fn opt(x: Option<f64>) -> String {
    x.map_or("never".into(), |x| format!("{x:.1}"))
}

/// The shipped presets against the published runs. Tolerances: ±15 % on the burst and
/// short-run rates (as asked of every preset); ±10 % on the sustained and long-run rates,
/// about the spread of the measurements themselves (the two nominally identical 2048-token
/// S25 runs differ by 9 %); ±0.06 on retained fractions and mean clocks (~10 %); ±35 % on
/// throttle onsets, which hinge on temperatures we do not know (the die and board of a
/// phone that just ran are warmer than the one sensor logged, and a 1 K error moves the
/// onset by seconds) and are sampled every ~1.25 s.
#[test]
fn presets_reproduce_published_sustained_load() {
    let mut r = Report::default();

    let dev = "iPhone 16 Pro (apple-a18-pro-8gb)";
    let fit = IphoneFit::run(load_device(IPHONE).unwrap()).unwrap();
    assert_eq!(fit.obs.turns.len(), IPHONE_ITERATIONS as usize);
    let s = &fit.obs.summary;
    r.check(
        dev,
        "iteration 1 generation rate, tok/s",
        fit.first(),
        "~40 (peak)",
        within(fit.first(), IPHONE_PEAK, 0.15),
        "±15 %",
    );
    r.check(
        dev,
        "burst_tok_s (first 30 s of decoding)",
        s.burst_tok_s,
        "~40 (peak)",
        within(s.burst_tok_s, IPHONE_PEAK, 0.15),
        "±15 %",
    );
    r.check(
        dev,
        "iterations 8-20 mean rate, tok/s",
        fit.sustained(),
        "22.6",
        within(fit.sustained(), IPHONE_SUSTAINED, 0.10),
        "±10 %",
    );
    let retained = fit.sustained() / fit.first();
    r.check(dev, "retained, iterations 8-20 / iteration 1", retained, "0.56", (retained - 0.56).abs() <= 0.06, "±0.06");
    r.check(
        dev,
        "retained at iteration 8",
        fit.retained(8),
        "0.56 (-44 %)",
        (fit.retained(8) - 0.56).abs() <= 0.06,
        "±0.06",
    );
    r.check(
        dev,
        "retained at iteration 3",
        fit.retained(3),
        "'nearly half lost within two iterations'",
        fit.retained(3) <= 0.70,
        "≤ 0.70",
    );
    r.show(dev, "sustained_tok_s (last 60 s)", format!("{:.2}", s.sustained_tok_s), "22.6");
    r.show(
        dev,
        "per-iteration rates, tok/s",
        (0..IPHONE_ITERATIONS as usize).map(|i| format!("{:.1}", fit.obs.rate(i))).collect::<Vec<_>>().join(" "),
        "~40 ... 22.6",
    );
    r.check(
        dev,
        "throttle onset, s",
        s.throttle_onset_s.unwrap_or(f64::INFINITY),
        "within iterations 1-2 (< ~55 s)",
        s.throttle_onset_s.is_some_and(|t| t < 55.0),
        "< 55 s",
    );
    r.show(
        dev,
        "time to -10 % / -25 %, s",
        format!("{} / {}", opt(s.time_to_minus_10pct_s), opt(s.time_to_minus_25pct_s)),
        "-44 % by iteration 8",
    );
    r.show(dev, "max die / skin, °C", format!("{:.1} / {:.1}", s.max_die_c, s.max_skin_c), "iOS thermal state 'Hot'");
    r.show(
        dev,
        "mean power, iterations 8-20, W",
        format!("{:.2}", fit.obs.power_w(7)),
        "A18 Pro sustained ~4 W (Notebookcheck)",
    );

    let dev = "Galaxy S25 (snapdragon-8-elite-12gb)";
    let runs = s25_runs(&load_device(S25).unwrap()).unwrap();
    for (o, run) in runs.iter().zip(&S25_RUNS) {
        let s = &o.summary;
        let w = format!("{} tokens from {} °C", run.tokens, run.start_c);
        let tol = if run.tokens <= 128 { 0.15 } else { 0.10 };
        r.check(
            dev,
            &format!("{w}: mean rate, tok/s"),
            o.tok_s(),
            &format!("{}", run.tok_s),
            within(o.tok_s(), run.tok_s, tol),
            &format!("±{:.0} %", tol * 100.0),
        );
        if let Some(t) = run.onset_s {
            let sim = s.throttle_onset_s.unwrap_or(f64::INFINITY);
            r.check(
                dev,
                &format!("{w}: throttle onset, s"),
                sim,
                &format!("{t} (GPU leaves 1200 MHz)"),
                within(sim, t, 0.35),
                "±35 %",
            );
        }
        if let Some(c) = run.mean_clock {
            r.check(
                dev,
                &format!("{w}: mean GPU clock / max"),
                o.mean_clock(),
                &format!("{c}"),
                (o.mean_clock() - c).abs() <= 0.06,
                "±0.06",
            );
        }
        r.show(
            dev,
            &format!("{w}: burst / last-60 s tok/s"),
            format!("{:.1} / {:.1}", s.burst_tok_s, s.sustained_tok_s),
            "-",
        );
        r.show(
            dev,
            &format!("{w}: time to -10 % / -25 %, s"),
            format!("{} / {}", opt(s.time_to_minus_10pct_s), opt(s.time_to_minus_25pct_s)),
            "-",
        );
        r.show(
            dev,
            &format!("{w}: max die / skin, °C"),
            format!("{:.1} / {:.1}", s.max_die_c, s.max_skin_c),
            "unnamed sensor +4.6 to +6.5 K (2048 tokens)",
        );
    }
    r.print();
    assert!(r.failures.is_empty(), "the presets no longer reproduce the published runs:\n{}", r.failures.join("\n"));
}

/// Leave-one-device-out for the phone class: each phone's published run predicted with the
/// *other* phone's fitted network (its own figures otherwise), beside its own fit (in
/// sample), the class network a phone without a fit gets (the mean of both fits: half in
/// sample) and no thermal model at all. Printed as a table (`cargo test --release --test
/// thermal_fit cross -- --nocapture`); asserted: the held-out prediction of the retained
/// fraction is closer to the measurement than the no-thermal baseline's 1.0.
#[test]
fn phone_networks_cross_validated() {
    let own_iphone = load_device(IPHONE).unwrap();
    let own_s25 = load_device(S25).unwrap();
    let with_network = |d: &DeviceSpec, net: Option<ThermalSpec>| {
        let mut d = d.clone();
        d.thermal = net;
        d
    };
    let no_thermal = |s: &mut Scenario| s.sim.thermal.enabled = false;
    println!("device | network | first tok/s | sustained tok/s | retained | time to -10 % / -25 %, s | mean power, W");
    // iPhone: 20 iterations; retained = iterations 8-20 over iteration 1 (published 0.56).
    let mut iphone_errors = Vec::new();
    for (label, device, thermal) in [
        ("own fit (in sample)", own_iphone.clone(), true),
        ("S25's fit (held out)", with_network(&own_iphone, own_s25.thermal.clone()), true),
        ("phone class (mean of both fits)", with_network(&own_iphone, None), true),
        ("no thermal model", own_iphone.clone(), false),
    ] {
        let mut s = iphone_scenario(device).unwrap();
        if !thermal {
            no_thermal(&mut s);
        }
        let obs = Observed::run(&s).unwrap();
        assert_eq!(obs.turns.len(), IPHONE_ITERATIONS as usize);
        let fit = IphoneFit { obs };
        let retained = fit.sustained() / fit.first();
        let s = &fit.obs.summary;
        println!(
            "iPhone 16 Pro | {label} | {:.1} | {:.1} | {retained:.2} (measured 0.56) | {} / {} | {:.2}",
            fit.first(),
            fit.sustained(),
            opt(s.time_to_minus_10pct_s),
            opt(s.time_to_minus_25pct_s),
            fit.obs.power_w(7)
        );
        iphone_errors.push((label, (retained - 0.56).abs()));
    }
    // S25: the 2048-token run from 31.7 °C; retained = mean rate over the 128-token run's
    // (published 27.7 / 48.8 = 0.57, which mixes heat with the engine's context slowdown).
    let mut s25_errors = Vec::new();
    for (label, device, thermal) in [
        ("own fit (in sample)", own_s25.clone(), true),
        ("iPhone's fit (held out)", with_network(&own_s25, own_iphone.thermal.clone()), true),
        ("phone class (mean of both fits)", with_network(&own_s25, None), true),
        ("no thermal model", own_s25.clone(), false),
    ] {
        let rates: Vec<(f64, Summary)> = S25_RUNS[..2]
            .iter()
            .map(|run| {
                let mut s = s25_scenario(device.clone(), run).unwrap();
                if !thermal {
                    no_thermal(&mut s);
                }
                let o = Observed::run(&s).unwrap();
                (o.tok_s(), o.summary)
            })
            .collect();
        let retained = rates[1].0 / rates[0].0;
        let s = &rates[1].1;
        println!(
            "Galaxy S25 | {label} | {:.1} | {:.1} | {retained:.2} (measured 0.57) | {} / {} | {:.2}",
            rates[0].0,
            rates[1].0,
            opt(s.time_to_minus_10pct_s),
            opt(s.time_to_minus_25pct_s),
            s.mean_power_w
        );
        s25_errors.push((label, (retained - 27.7 / 48.8).abs()));
    }
    let held_out = |e: &[(&str, f64)]| e.iter().find(|x| x.0.contains("held out")).unwrap().1;
    let baseline = |e: &[(&str, f64)]| e.iter().find(|x| x.0.contains("no thermal")).unwrap().1;
    assert!(held_out(&iphone_errors) < baseline(&iphone_errors), "{iphone_errors:?}");
    assert!(held_out(&s25_errors) < baseline(&s25_errors), "{s25_errors:?}");
}

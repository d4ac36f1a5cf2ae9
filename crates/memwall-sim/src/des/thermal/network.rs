//! The thermal RC network of a device, integrated exactly.
//!
//! The network is a chain of RC nodes from the die outward (die → board → skin → ambient):
//!
//! `C_i dT_i/dt = P_i − (T_i − T_{i+1}) / R_i + (T_{i−1} − T_i) / R_{i−1}`, with
//! `T_n = T_ambient` for the last node's resistance. The die (node 0) also receives the
//! static power `static_w × (1 + α (T_0 − 25))`, which is linear in `T_0`, so the whole
//! network is the linear system `dT/dt = A T + b` with
//! `A = C⁻¹ (−G + static_w α e₀e₀ᵀ)` (`G` the symmetric conductance matrix). It is
//! integrated exactly between events through the eigendecomposition of the symmetric
//! `S = C^{1/2} A C^{−1/2}`, computed once: `T(t) = T_ss + V e^{Λt} V⁻¹ (T(0) − T_ss)`.

use memwall_spec::{SpecError, ThermalSpec};
use nalgebra::{DMatrix, DVector, SymmetricEigen};

use crate::SimError;

/// Reference die temperature of the leakage law, °C.
pub const LEAKAGE_REF_C: f64 = 25.0;

pub use memwall_spec::class::dynamic_power_w;

/// Static power at die temperature `die_c` (°C): `static_w × (1 + leakage_per_c × (T_die − 25))`,
/// watts, never below 0.
///
/// [`ThermalModel`] uses the same law without the floor (it keeps the system linear); the two
/// differ only below `25 − 1 / leakage_per_c` °C (−75 °C at 1 %/K).
pub fn static_power_w(static_w: f64, leakage_per_c: f64, die_c: f64) -> f64 {
    static_linear_w(static_w, leakage_per_c, die_c).max(0.0)
}

/// The leakage law without the floor at 0, watts.
fn static_linear_w(static_w: f64, leakage_per_c: f64, die_c: f64) -> f64 {
    static_w * (1.0 + leakage_per_c * (die_c - LEAKAGE_REF_C))
}

/// The RC network of a device with its state (one temperature per node), integrated exactly.
#[derive(Debug, Clone)]
pub struct ThermalModel {
    n: usize,
    /// Node temperatures, °C, die first.
    temps: Vec<f64>,
    ambient_c: f64,
    static_w: f64,
    leakage_per_c: f64,
    dram_heat_in_die: f64,
    /// Eigenvalues of `A`, 1/s, all negative.
    lambda: Vec<f64>,
    /// Right eigenvectors `V` (row-major, `v[i × n + k]` = node `i` of mode `k`): `A = V Λ V⁻¹`.
    v: Vec<f64>,
    /// `V⁻¹`, row-major (`v_inv[k × n + j]`).
    v_inv: Vec<f64>,
    /// Steady state with no dynamic or DRAM power (ambient and the static power), °C.
    ss_base: Vec<f64>,
    /// Steady-state rise per watt injected into the die, K/W.
    ss_die: Vec<f64>,
    /// Steady-state rise per watt injected into node 1 (the die's column with one node), K/W.
    ss_next: Vec<f64>,
    /// Scratch for `advance`: steady state, then modal coordinates.
    scratch: Vec<f64>,
}

impl ThermalModel {
    /// Build from the spec; `static_w` is the device's static power at 25 °C (W); every node
    /// starts at `start_c` (°C).
    ///
    /// Errors: an invalid spec (see [`ThermalSpec::validate`]), a negative or non-finite
    /// `static_w` or `start_c`, and thermal runaway, naming `leakage_per_c`: the leakage
    /// feedback `static_w × leakage_per_c` (W/K) at least matches the die's conductance to
    /// ambient `1 / ΣR`, so the system matrix has an eigenvalue `≥ 0` and no steady state.
    pub fn new(spec: &ThermalSpec, static_w: f64, start_c: f64) -> Result<Self, SimError> {
        spec.validate()?;
        if !(static_w.is_finite() && static_w >= 0.0) {
            return Err(SpecError::invalid("power.static_w", static_w, "must be a finite non-negative number").into());
        }
        if !start_c.is_finite() {
            return Err(SpecError::invalid("thermal.start_c", start_c, "must be a finite number").into());
        }
        let n = spec.nodes.len();
        let c: Vec<f64> = spec.nodes.iter().map(|x| x.capacitance_j_per_k).collect();
        let r: Vec<f64> = spec.nodes.iter().map(|x| x.resistance_k_per_w).collect();
        let feedback = static_w * spec.leakage_per_c;
        let r_total: f64 = r.iter().sum();
        let runaway = |detail: String| {
            SimError::Spec(SpecError::invalid(
                "leakage_per_c",
                spec.leakage_per_c,
                format!(
                    "thermal runaway: static_w × leakage_per_c × ΣR = {static_w} W × {} /K × {r_total} K/W = {:.4} \
                     ≥ 1, leakage grows faster than the network sheds heat ({detail})",
                    spec.leakage_per_c,
                    feedback * r_total
                ),
            ))
        };
        // (G⁻¹)₀₀ = ΣR for a chain grounded at its far end, so −G + s α e₀e₀ᵀ is negative
        // definite exactly when s α ΣR < 1.
        if feedback * r_total >= 1.0 {
            return Err(runaway("no steady state".into()));
        }

        // M = G − s α e₀e₀ᵀ (symmetric), so C dT/dt = −M T + q.
        let mut m = DMatrix::<f64>::zeros(n, n);
        for (i, ri) in r.iter().enumerate() {
            let g = 1.0 / ri;
            m[(i, i)] += g;
            if i + 1 < n {
                m[(i + 1, i + 1)] += g;
                m[(i, i + 1)] -= g;
                m[(i + 1, i)] -= g;
            }
        }
        m[(0, 0)] -= feedback;

        let sqrt_c: Vec<f64> = c.iter().map(|x| x.sqrt()).collect();
        let s = DMatrix::from_fn(n, n, |i, j| -m[(i, j)] / (sqrt_c[i] * sqrt_c[j]));
        let eig = SymmetricEigen::new(s);
        let lambda: Vec<f64> = eig.eigenvalues.iter().copied().collect();
        let lmax = lambda.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lmax >= 0.0 || lambda.iter().any(|l| !l.is_finite()) {
            return Err(runaway(format!("largest eigenvalue {lmax:e} /s ≥ 0")));
        }
        let q = &eig.eigenvectors;
        let mut v = vec![0.0; n * n];
        let mut v_inv = vec![0.0; n * n];
        for i in 0..n {
            for k in 0..n {
                v[i * n + k] = q[(i, k)] / sqrt_c[i];
                v_inv[k * n + i] = q[(i, k)] * sqrt_c[i];
            }
        }

        let lu = m.lu();
        let solve = |rhs: DVector<f64>| -> Result<Vec<f64>, SimError> {
            lu.solve(&rhs).map(|x| x.iter().copied().collect()).ok_or_else(|| runaway("singular network".into()))
        };
        let mut base = DVector::zeros(n);
        base[0] += static_linear_w(static_w, spec.leakage_per_c, 0.0);
        base[n - 1] += spec.ambient_c / r[n - 1];
        let ss_base = solve(base)?;
        let ss_die = solve(DVector::from_fn(n, |i, _| if i == 0 { 1.0 } else { 0.0 }))?;
        let ss_next =
            if n > 1 { solve(DVector::from_fn(n, |i, _| if i == 1 { 1.0 } else { 0.0 }))? } else { ss_die.clone() };

        Ok(ThermalModel {
            n,
            temps: vec![start_c; n],
            ambient_c: spec.ambient_c,
            static_w,
            leakage_per_c: spec.leakage_per_c,
            dram_heat_in_die: spec.dram_heat_in_die,
            lambda,
            v,
            v_inv,
            ss_base,
            ss_die,
            ss_next,
            scratch: vec![0.0; 2 * n],
        })
    }

    /// Node temperatures, °C, die first.
    pub fn temps_c(&self) -> &[f64] {
        &self.temps
    }

    /// Set every node's temperature, °C, die first (a checkpoint or a test setup).
    ///
    /// # Panics
    /// When `temps_c` does not hold one value per node.
    pub fn set_temps_c(&mut self, temps_c: &[f64]) {
        assert_eq!(temps_c.len(), self.n, "one temperature per thermal node");
        self.temps.copy_from_slice(temps_c);
    }

    /// Die temperature, °C.
    pub fn die_c(&self) -> f64 {
        self.temps[0]
    }

    /// Skin temperature (the last node), °C.
    pub fn skin_c(&self) -> f64 {
        self.temps[self.n - 1]
    }

    /// Ambient temperature, °C.
    pub fn ambient_c(&self) -> f64 {
        self.ambient_c
    }

    /// Static power at the current die temperature, W (the linear law the model integrates).
    pub fn static_now_w(&self) -> f64 {
        static_linear_w(self.static_w, self.leakage_per_c, self.temps[0])
    }

    /// Time constants of the network's modes, `−1/λ_k`, seconds, longest first.
    pub fn time_constants_s(&self) -> Vec<f64> {
        let mut tau: Vec<f64> = self.lambda.iter().map(|l| -1.0 / l).collect();
        tau.sort_by(|a, b| b.total_cmp(a));
        tau
    }

    /// Power into the die and into node 1, W: all dynamic power plus the share
    /// `dram_heat_in_die` of DRAM power into the die, the rest into node 1 (which, with a
    /// single node, is the die's steady-state column again).
    fn node_powers(&self, dynamic_w: f64, dram_w: f64) -> (f64, f64) {
        (dynamic_w + dram_w * self.dram_heat_in_die, dram_w * (1.0 - self.dram_heat_in_die))
    }

    /// Steady-state temperature of node `i` under node powers `(p0, p1)`, °C:
    /// `T_ss = M⁻¹ (q_base + p0 e₀ + p1 e₁)` with `M = G − static_w α e₀e₀ᵀ`.
    fn ss_at(&self, i: usize, p0: f64, p1: f64) -> f64 {
        self.ss_base[i] + p0 * self.ss_die[i] + p1 * self.ss_next[i]
    }

    /// Advance exactly by `dt_s` seconds (`≥ 0`) with constant dynamic power `dynamic_w` into
    /// the die and DRAM power `dram_w` split `dram_heat_in_die` into the die and the rest into
    /// node 1 (all into the die with one node), plus static power with its linear temperature
    /// feedback on the die.
    ///
    /// `T(dt) = T_ss + V e^{Λ dt} y` with modal coordinates `y = V⁻¹ (T(0) − T_ss)`. Returns the
    /// energy dissipated over `dt`, joules, exactly:
    /// `∫ (dynamic + dram + static(T_die)) dt = (dynamic + dram + static(T_die,ss)) dt
    /// + static_w α Σ_k V₀ₖ y_k (e^{λ_k dt} − 1) / λ_k`.
    pub fn advance(&mut self, dt_s: f64, dynamic_w: f64, dram_w: f64) -> f64 {
        debug_assert!(dt_s >= 0.0, "thermal advance by a negative time {dt_s}");
        let n = self.n;
        let (p0, p1) = self.node_powers(dynamic_w, dram_w);
        let mut scratch = std::mem::take(&mut self.scratch);
        let (tss, y) = scratch.split_at_mut(n);
        for (i, t) in tss.iter_mut().enumerate() {
            *t = self.ss_at(i, p0, p1);
        }
        for (yk, row) in y.iter_mut().zip(self.v_inv.chunks_exact(n)) {
            *yk = row.iter().zip(&self.temps).zip(tss.iter()).map(|((a, t), s)| a * (t - s)).sum();
        }
        // ∫₀^dt (T_die − T_die,ss) dt
        let mut excess = 0.0;
        for ((yk, l), v0k) in y.iter_mut().zip(&self.lambda).zip(&self.v[..n]) {
            let g = (l * dt_s).exp_m1();
            excess += v0k * *yk * (g / l);
            *yk *= 1.0 + g;
        }
        for ((t, s), row) in self.temps.iter_mut().zip(tss.iter()).zip(self.v.chunks_exact(n)) {
            *t = s + row.iter().zip(y.iter()).map(|(a, b)| a * b).sum::<f64>();
        }
        let energy = (dynamic_w + dram_w + static_linear_w(self.static_w, self.leakage_per_c, tss[0])) * dt_s
            + self.static_w * self.leakage_per_c * excess;
        self.scratch = scratch;
        energy
    }

    /// Temperatures the network settles to under constant power, °C, die first:
    /// `T_ss = −A⁻¹ b`.
    pub fn steady_state_c(&self, dynamic_w: f64, dram_w: f64) -> Vec<f64> {
        let (p0, p1) = self.node_powers(dynamic_w, dram_w);
        (0..self.n).map(|i| self.ss_at(i, p0, p1)).collect()
    }

    /// Die temperature minus `target_c` as a sum of exponentials in time:
    /// `T_die,ss − target + Σ_k V₀ₖ y_k e^{λ_k t}`.
    fn die_offset(&self, target_c: f64, dynamic_w: f64, dram_w: f64) -> ExpSum {
        let n = self.n;
        let (p0, p1) = self.node_powers(dynamic_w, dram_w);
        let tss: Vec<f64> = (0..n).map(|i| self.ss_at(i, p0, p1)).collect();
        let mut terms = Vec::with_capacity(n + 1);
        terms.push((0.0, 0.0));
        for (k, row) in self.v_inv.chunks_exact(n).enumerate() {
            let yk: f64 = row.iter().zip(&self.temps).zip(&tss).map(|((a, t), s)| a * (t - s)).sum();
            terms.push((self.v[k] * yk, self.lambda[k]));
        }
        // The constant is T_die,ss − target in exact arithmetic; taking it as
        // T_die(0) − target − Σ_k V₀ₖ y_k makes the sum agree with the current temperature at t = 0
        // to rounding.
        terms[0].0 = (self.temps[0] - target_c) - terms[1..].iter().map(|t| t.0).sum::<f64>();
        ExpSum(terms)
    }

    /// Time (s) from now until the die first reaches `target_c` (from either side) under
    /// constant power, if it does within `horizon_s`; `Some(0.0)` when it is there now; `None`
    /// otherwise (an infinite horizon counts as 10¹² s).
    ///
    /// Exact up to root-finding: the die temperature is a sum of exponentials, whose monotone
    /// stretches are separated by the zeros of its derivative (found the same way, recursively);
    /// the first stretch that crosses the target is solved by safeguarded regula falsi to a
    /// relative 10⁻¹², and the end of the bracket past the target is returned, so advancing by
    /// the result lands on the target or just past it.
    pub fn time_to_die_c(&self, target_c: f64, dynamic_w: f64, dram_w: f64, horizon_s: f64) -> Option<f64> {
        if horizon_s.is_nan() || horizon_s <= 0.0 {
            return None;
        }
        let now = self.temps[0] - target_c;
        if now == 0.0 {
            return Some(0.0);
        }
        let f = self.die_offset(target_c, dynamic_w, dram_w);
        crossings(&f, 0.0, now, horizon_s.min(1e12), true).first().copied()
    }
}

/// `Σ_k a_k e^{μ_k t}` (a term with `μ = 0` is a constant).
struct ExpSum(Vec<(f64, f64)>);

impl ExpSum {
    fn eval(&self, t: f64) -> f64 {
        self.0.iter().map(|&(a, mu)| if mu == 0.0 { a } else { a * (mu * t).exp() }).sum()
    }

    /// Whether any term varies with time.
    fn varies(&self) -> bool {
        self.0.iter().any(|&(a, mu)| a != 0.0 && mu != 0.0)
    }

    /// The derivative times `e^{−μ_max t}`: the same zeros, all exponents `≤ 0` (no overflow),
    /// and one time-varying rate fewer.
    fn scaled_derivative(&self) -> ExpSum {
        let terms: Vec<(f64, f64)> =
            self.0.iter().filter(|&&(a, mu)| a != 0.0 && mu != 0.0).map(|&(a, mu)| (a * mu, mu)).collect();
        let top = terms.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
        ExpSum(terms.into_iter().map(|(a, mu)| (a, mu - top)).collect())
    }
}

/// Zeros of `f` in `(lo, hi]`, ascending (only the first when `first_only`), given `f(lo)`.
/// `f` is monotone between consecutive zeros of its derivative, so each such stretch holds at
/// most one.
fn crossings(f: &ExpSum, lo: f64, f_lo: f64, hi: f64, first_only: bool) -> Vec<f64> {
    let mut out = Vec::new();
    if !f.varies() {
        return out;
    }
    let d = f.scaled_derivative();
    let mut cuts = crossings(&d, lo, d.eval(lo), hi, false);
    cuts.push(hi);
    let (mut a, mut fa) = (lo, f_lo);
    for b in cuts {
        if b <= a {
            continue;
        }
        let fb = f.eval(b);
        if fb == 0.0 {
            out.push(b);
        } else if fa != 0.0 && (fa < 0.0) != (fb < 0.0) {
            out.push(solve_bracket(f, a, b, fa, fb));
        }
        if first_only && !out.is_empty() {
            break;
        }
        (a, fa) = (b, fb);
    }
    out
}

/// The zero of `f` in `[a, b]`, where `f(a)` and `f(b)` have opposite signs: Illinois regula
/// falsi, with a bisection whenever the bracket has not halved in three steps. Returns the
/// bracket's `b` end (past the zero) once it is narrower than `10⁻¹² × max(b, 1 ms)`.
fn solve_bracket(f: &ExpSum, mut a: f64, mut b: f64, mut fa: f64, mut fb: f64) -> f64 {
    let b_negative = fb < 0.0;
    let mut side = 0i8;
    let mut checkpoint = b - a;
    let mut bisect = false;
    for iter in 1..=200 {
        if b - a <= 1e-12 * b.max(1e-3) {
            break;
        }
        let mut t = if bisect { 0.5 * (a + b) } else { (a * fb - b * fa) / (fb - fa) };
        if !(t > a && t < b) {
            t = 0.5 * (a + b);
        }
        let ft = f.eval(t);
        if ft == 0.0 {
            return t;
        }
        if (ft < 0.0) == b_negative {
            (b, fb) = (t, ft);
            if side == 1 {
                fa *= 0.5;
            }
            side = 1;
        } else {
            (a, fa) = (t, ft);
            if side == -1 {
                fb *= 0.5;
            }
            side = -1;
        }
        bisect = false;
        if iter % 3 == 0 {
            bisect = b - a > 0.5 * checkpoint;
            checkpoint = b - a;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::des::thermal::fixtures::chain;
    use memwall_spec::ThermalNode;

    fn spec(ambient_c: f64, nodes: &[(f64, f64)], leakage_per_c: f64, dram_heat_in_die: f64) -> ThermalSpec {
        let mut s = chain();
        s.ambient_c = ambient_c;
        s.nodes = nodes
            .iter()
            .enumerate()
            .map(|(i, &(c, r))| ThermalNode { name: format!("n{i}"), capacitance_j_per_k: c, resistance_k_per_w: r })
            .collect();
        s.leakage_per_c = leakage_per_c;
        s.dram_heat_in_die = dram_heat_in_die;
        s
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// `C dT/dt` right-hand side of the full network, in the test's own words.
    fn deriv(sp: &ThermalSpec, static_w: f64, p0: f64, p1: f64, t: &[f64]) -> Vec<f64> {
        let n = t.len();
        (0..n)
            .map(|i| {
                let mut p = if i == 0 { p0 + static_w * (1.0 + sp.leakage_per_c * (t[0] - 25.0)) } else { 0.0 };
                if i == 1 {
                    p += p1;
                }
                let out = if i + 1 < n { t[i + 1] } else { sp.ambient_c };
                p -= (t[i] - out) / sp.nodes[i].resistance_k_per_w;
                if i > 0 {
                    p += (t[i - 1] - t[i]) / sp.nodes[i - 1].resistance_k_per_w;
                }
                p / sp.nodes[i].capacitance_j_per_k
            })
            .collect()
    }

    /// RK4 over `[0, total]` with `steps` steps; the state carries the energy as a last entry.
    fn rk4(
        sp: &ThermalSpec,
        static_w: f64,
        dynamic_w: f64,
        dram_w: f64,
        t0: &[f64],
        total: f64,
        steps: usize,
    ) -> Vec<f64> {
        let p0 = dynamic_w + dram_w * sp.dram_heat_in_die;
        let p1 = dram_w * (1.0 - sp.dram_heat_in_die);
        let n = t0.len();
        let f = |x: &[f64]| {
            let mut d = deriv(sp, static_w, p0, p1, &x[..n]);
            d.push(dynamic_w + dram_w + static_w * (1.0 + sp.leakage_per_c * (x[0] - 25.0)));
            d
        };
        let h = total / steps as f64;
        let mut x: Vec<f64> = t0.iter().copied().chain([0.0]).collect();
        let axpy = |x: &[f64], k: &[f64], s: f64| x.iter().zip(k).map(|(a, b)| a + s * b).collect::<Vec<f64>>();
        for _ in 0..steps {
            let k1 = f(&x);
            let k2 = f(&axpy(&x, &k1, h / 2.0));
            let k3 = f(&axpy(&x, &k2, h / 2.0));
            let k4 = f(&axpy(&x, &k3, h));
            for i in 0..x.len() {
                x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
        }
        x
    }

    #[test]
    fn power_laws_match_hand_numbers() {
        // 4 W × 0.8 × 0.9² = 2.592 W
        assert!(close(dynamic_power_w(4.0, 0.8, 0.9), 2.592, 1e-12));
        assert_eq!(dynamic_power_w(4.0, 1.0, 1.0), 4.0);
        // 1 W × (1 + 0.01 × 50) = 1.5 W
        assert!(close(static_power_w(1.0, 0.01, 75.0), 1.5, 1e-12));
        assert!(close(static_power_w(2.0, 0.02, 25.0), 2.0, 1e-12));
        // 0.5 W × (1 + 0.01 × (−10)) = 0.45 W
        assert!(close(static_power_w(0.5, 0.01, 15.0), 0.45, 1e-12));
        // 1 − 1.25 < 0: floored
        assert_eq!(static_power_w(1.0, 0.01, -100.0), 0.0);
    }

    #[test]
    fn one_node_matches_closed_form() {
        // C = 3 J/K, R = 5 K/W, τ = 15 s; 1.5 W dynamic + 0.5 W DRAM + 0.4 W static (no
        // leakage) all into the die: T_ss = 20 + 2.4 × 5 = 32 °C.
        let sp = spec(20.0, &[(3.0, 5.0)], 0.0, 0.3);
        let mut m = ThermalModel::new(&sp, 0.4, 50.0).unwrap();
        assert!(close(m.steady_state_c(1.5, 0.5)[0], 32.0, 1e-12));
        assert!(close(m.time_constants_s()[0], 15.0, 1e-12));
        let closed = |t: f64| 20.0 + 2.4 * 5.0 * (1.0 - (-t / 15.0).exp()) + 30.0 * (-t / 15.0).exp();
        let mut t = 0.0;
        for dt in [0.5, 2.5, 12.0, 45.0, 1000.0] {
            let e = m.advance(dt, 1.5, 0.5);
            t += dt;
            assert!(close(m.die_c(), closed(t), 1e-9), "t = {t}: {} vs {}", m.die_c(), closed(t));
            assert!(close(e, 2.4 * dt, 1e-12 * dt), "energy {e} vs {}", 2.4 * dt);
        }
        assert_eq!(m.skin_c(), m.die_c());
        assert_eq!(m.ambient_c(), 20.0);
        assert_eq!(m.advance(0.0, 1.5, 0.5), 0.0);
    }

    fn two_nodes() -> ThermalSpec {
        spec(25.0, &[(2.0, 3.0), (10.0, 6.0)], 0.01, 0.5)
    }

    #[test]
    fn two_nodes_semigroup_and_rk4() {
        let sp = two_nodes();
        let (s, pd, pm) = (0.5, 4.0, 1.0);
        let mut one = ThermalModel::new(&sp, s, 25.0).unwrap();
        let mut many = one.clone();
        let e1 = one.advance(100.0, pd, pm);
        let mut e2 = 0.0;
        for _ in 0..1000 {
            e2 += many.advance(0.1, pd, pm);
        }
        for (a, b) in one.temps_c().iter().zip(many.temps_c()) {
            assert!(close(*a, *b, 1e-9), "{a} vs {b}");
        }
        assert!(close(e1, e2, 1e-9 * e1), "{e1} vs {e2}");

        let x = rk4(&sp, s, pd, pm, &[25.0, 25.0], 100.0, 100_000);
        for (a, b) in one.temps_c().iter().zip(&x) {
            assert!(close(*a, *b, 1e-6), "{a} vs rk4 {b}");
        }
        assert!(close(e1, x[2], 1e-6), "energy {e1} vs rk4 {}", x[2]);
        // Something happened: the die warmed well above ambient.
        assert!(one.die_c() > 40.0);
    }

    #[test]
    fn steady_state_hand_checked() {
        // The chain: R = 2 + 4 + 12 K/W. 2 W dynamic + 1 W DRAM (half in the die):
        // skin 25 + 3 × 12 = 61, board 61 + 3 × 4 = 73, die 73 + 2.5 × 2 = 78 °C.
        let mut sp = chain();
        sp.leakage_per_c = 0.0;
        let mut m = ThermalModel::new(&sp, 0.0, 25.0).unwrap();
        let ss = m.steady_state_c(2.0, 1.0);
        for (a, b) in ss.iter().zip([78.0, 73.0, 61.0]) {
            assert!(close(*a, b, 1e-9), "{ss:?}");
        }
        // Without DRAM: die = 25 + P ΣR.
        assert!(close(m.steady_state_c(3.0, 0.0)[0], 25.0 + 3.0 * 18.0, 1e-9));
        m.advance(1e5, 2.0, 1.0);
        for (a, b) in m.temps_c().iter().zip(&ss) {
            assert!(close(*a, *b, 1e-9), "{a} vs {b}");
        }

        // With leakage (ambient 25): ΔT = ΣR (P + s) / (1 − s α ΣR) = 18 × 3 / 0.82.
        let sp = chain();
        let mut m = ThermalModel::new(&sp, 1.0, 25.0).unwrap();
        let want = 25.0 + 54.0 / 0.82;
        assert!(close(m.steady_state_c(2.0, 0.0)[0], want, 1e-9));
        m.advance(1e5, 2.0, 0.0);
        assert!(close(m.die_c(), want, 1e-9));
        assert!(close(m.static_now_w(), 1.0 + 0.01 * 54.0 / 0.82, 1e-9));
    }

    #[test]
    fn class_networks_by_hand() {
        use memwall_spec::{Cooling, DeviceKind};
        let kinds = [
            None,
            Some(DeviceKind::Phone),
            Some(DeviceKind::Tablet),
            Some(DeviceKind::Laptop),
            Some(DeviceKind::Desktop),
            Some(DeviceKind::Sbc),
            Some(DeviceKind::Module),
        ];
        let coolings = [None, Some(Cooling::Passive), Some(Cooling::Heatsink), Some(Cooling::Fan)];
        let sum_r = |k, c| ThermalSpec::for_class(k, c).nodes.iter().map(|n| n.resistance_k_per_w).sum::<f64>();
        for k in kinds {
            for c in coolings {
                let mut sp = ThermalSpec::for_class(k, c);
                sp.validate().unwrap();
                sp.leakage_per_c = 0.0;
                let m = ThermalModel::new(&sp, 0.0, 25.0).unwrap();
                let r: Vec<f64> = sp.nodes.iter().map(|n| n.resistance_k_per_w).collect();
                let cap: Vec<f64> = sp.nodes.iter().map(|n| n.capacitance_j_per_k).collect();
                // Steady state with 5 W into the die: 25 + 5 ΣR.
                let want = 25.0 + 5.0 * r.iter().sum::<f64>();
                assert!(close(m.steady_state_c(5.0, 0.0)[0], want, 1e-9), "{k:?} {c:?}");
                // Σ time constants = trace(G⁻¹C) = Σ_i C_i Σ_{j≥i} R_j for a chain grounded at
                // its far end (1 W injected at node i leaves through R_i..R_last).
                let want: f64 = (0..r.len()).map(|i| cap[i] * r[i..].iter().sum::<f64>()).sum();
                let got: f64 = m.time_constants_s().iter().sum();
                assert!(close(got, want, 1e-9 * want), "{k:?} {c:?}: {got} vs {want}");
            }
        }
        // A bare Raspberry-Pi-class board at 6 W would settle 25 + 6 × 13 = 103 °C, past its
        // 80 °C soft limit; in a passive case 64 °C, with a fan 58 °C.
        let sbc = |c| 25.0 + 6.0 * sum_r(Some(DeviceKind::Sbc), Some(c));
        assert!(close(sbc(Cooling::Passive), 103.0, 1e-9) && close(sbc(Cooling::Heatsink), 64.0, 1e-9));
        assert!(close(sbc(Cooling::Fan), 58.0, 1e-9));
        // A Jetson-class module with its fan: 19 W settles 25 + 19 × 2.3 = 68.7 °C (measured
        // 67–68 °C on an Orin Nano Super).
        assert!(close(25.0 + 19.0 * sum_r(Some(DeviceKind::Module), None), 68.7, 1e-9));
        // Cooling orders the classes: a fanless laptop sheds heat worse than a fan-cooled one,
        // which sheds it worse than a desktop; a phone worst of all.
        let laptop = |c| sum_r(Some(DeviceKind::Laptop), Some(c));
        assert!(laptop(Cooling::Passive) > laptop(Cooling::Fan));
        assert!(laptop(Cooling::Fan) > sum_r(Some(DeviceKind::Desktop), None));
        assert!(sum_r(None, None) > sum_r(Some(DeviceKind::Tablet), None));
        // Usual cooling when none is stated: laptops and modules a fan, boards none.
        assert_eq!(
            ThermalSpec::for_class(Some(DeviceKind::Laptop), None),
            ThermalSpec::for_class(Some(DeviceKind::Laptop), Some(Cooling::Fan))
        );
        assert_eq!(
            ThermalSpec::for_class(Some(DeviceKind::Sbc), None),
            ThermalSpec::for_class(Some(DeviceKind::Sbc), Some(Cooling::Passive))
        );
    }

    #[test]
    fn leakage_energy_matches_quadrature() {
        let sp = chain();
        let (s, pd, pm) = (1.5, 3.0, 0.8);
        let m0 = ThermalModel::new(&sp, s, 30.0).unwrap();
        let total = 60.0;
        let energy = m0.clone().advance(total, pd, pm);
        // Composite Simpson over the exact trajectory.
        let steps = 6000;
        let h = total / steps as f64;
        let mut m = m0.clone();
        let p = |die: f64| pd + pm + static_power_w(s, sp.leakage_per_c, die);
        let mut sum = p(m.die_c());
        for i in 1..=steps {
            m.advance(h, pd, pm);
            let w = if i == steps {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            sum += w * p(m.die_c());
        }
        let quad = sum * h / 3.0;
        assert!(close(energy, quad, 1e-8 * quad), "{energy} vs {quad}");
        // The leakage feedback matters here: more than the static power at 25 °C.
        assert!(energy > (pd + pm + s) * total + 5.0);
    }

    #[test]
    fn runaway_is_an_error_naming_leakage() {
        let mut sp = chain();
        sp.leakage_per_c = 1e3;
        let err = ThermalModel::new(&sp, 1.0, 25.0).unwrap_err().to_string();
        assert!(err.contains("leakage_per_c"), "{err}");
        // Threshold: s α ΣR = 1, α = 1 / 18 at 1 W.
        sp.leakage_per_c = 0.99 / 18.0;
        let m = ThermalModel::new(&sp, 1.0, 25.0).unwrap();
        assert!(m.time_constants_s()[0] > 1e3);
        sp.leakage_per_c = 1.01 / 18.0;
        assert!(ThermalModel::new(&sp, 1.0, 25.0).unwrap_err().to_string().contains("leakage_per_c"));
        // An invalid spec is refused too.
        sp.nodes.clear();
        assert!(ThermalModel::new(&sp, 1.0, 25.0).unwrap_err().to_string().contains("nodes"));
    }

    #[test]
    fn time_to_die_lands_on_target() {
        let sp = chain();
        let m = ThermalModel::new(&sp, 0.5, 25.0).unwrap();
        let t = m.time_to_die_c(60.0, 4.0, 0.5, 1e4).unwrap();
        let mut at = m.clone();
        at.advance(t, 4.0, 0.5);
        assert!(close(at.die_c(), 60.0, 1e-6), "{}", at.die_c());
        assert!(at.die_c() >= 60.0 - 1e-12);
        let mut before = m.clone();
        before.advance(0.999 * t, 4.0, 0.5);
        assert!(before.die_c() < 60.0);
        // Too short a horizon, and a steady state below the target.
        assert_eq!(m.time_to_die_c(60.0, 4.0, 0.5, 0.5 * t), None);
        assert!(m.steady_state_c(0.5, 0.0)[0] < 60.0);
        assert_eq!(m.time_to_die_c(60.0, 0.5, 0.0, 1e6), None);
        assert_eq!(m.time_to_die_c(60.0, 0.5, 0.0, f64::INFINITY), None);
        // Cooling down through a target.
        let t = at.time_to_die_c(40.0, 0.0, 0.0, 1e4).unwrap();
        let mut cool = at.clone();
        cool.advance(t, 0.0, 0.0);
        assert!(close(cool.die_c(), 40.0, 1e-6), "{}", cool.die_c());
        // Already there.
        assert_eq!(at.time_to_die_c(at.die_c(), 1.0, 0.0, 10.0), Some(0.0));
    }

    /// The die trajectory sampled every `step` seconds for `samples` steps.
    fn die_trace(m: &ThermalModel, pd: f64, pm: f64, step: f64, samples: usize) -> Vec<f64> {
        let mut probe = m.clone();
        let mut trace = vec![probe.die_c()];
        for _ in 0..samples {
            probe.advance(step, pd, pm);
            trace.push(probe.die_c());
        }
        trace
    }

    /// Index of the first sample on the other side of `target` from the first one.
    fn first_crossing(trace: &[f64], target: f64) -> Option<usize> {
        let below0 = trace[0] < target;
        (1..trace.len()).find(|&i| (trace[i] < target) != below0)
    }

    #[test]
    fn time_to_die_finds_the_first_of_several_crossings() {
        let sp = chain();
        let step = 0.01;
        let check = |m: &ThermalModel, trace: &[f64], target: f64, pd: f64| {
            let i = first_crossing(trace, target).unwrap();
            let t = m.time_to_die_c(target, pd, 0.0, 2000.0).unwrap();
            assert!(t > (i - 1) as f64 * step - 1e-9 && t <= i as f64 * step + 1e-9, "{target}: {t} vs step {i}");
            let mut at = m.clone();
            at.advance(t, pd, 0.0);
            assert!(close(at.die_c(), target, 1e-6));
        };

        // A hot die over a cold board: at 1.5 W the die first drops as heat flows outward, then
        // rises again as the board and skin warm, settling well below its start.
        let mut m = ThermalModel::new(&sp, 0.3, 25.0).unwrap();
        m.set_temps_c(&[70.0, 30.0, 26.0]);
        let trace = die_trace(&m, 1.5, 0.0, step, 200_000);
        let (imin, min) =
            trace.iter().copied().enumerate().fold((0, f64::INFINITY), |a, x| if x.1 < a.1 { x } else { a });
        let end = *trace.last().unwrap();
        assert!(min < 45.0 && end > min + 5.0 && imin > 0, "min {min} at {imin}, end {end}");
        // On the way down, and a target crossed twice (down, then up again).
        check(&m, &trace, 50.0, 1.5);
        check(&m, &trace, min + 0.5, 1.5);
        // Below the dip: never reached.
        assert_eq!(m.time_to_die_c(min - 0.5, 1.5, 0.0, 2000.0), None);

        // A warm die over a cold board at 3 W: a dip, then a rise past the start. A target above
        // the start is reached only after the dip.
        let mut m = ThermalModel::new(&sp, 0.3, 25.0).unwrap();
        m.set_temps_c(&[50.0, 25.0, 25.0]);
        let trace = die_trace(&m, 3.0, 0.0, step, 200_000);
        let min = trace.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(min < 45.0 && *trace.last().unwrap() > 60.0, "min {min}, end {}", trace.last().unwrap());
        check(&m, &trace, 55.0, 3.0);
        let i = first_crossing(&trace, 55.0).unwrap();
        assert!(trace[..i].iter().any(|&x| x < 45.0));
        check(&m, &trace, 48.0, 3.0);
    }

    /// `cargo test --release -p memwall-sim --lib des::thermal -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn advance_cost() {
        use std::hint::black_box;
        let sp = chain();
        let mut m = ThermalModel::new(&sp, 0.5, 25.0).unwrap();
        let calls = 1_000_000;
        let start = std::time::Instant::now();
        let mut e = 0.0;
        for i in 0..calls {
            let p = if i % 2 == 0 { 4.0 } else { 1.0 };
            e += m.advance(black_box(0.01), black_box(p), black_box(0.5));
        }
        let per = start.elapsed().as_secs_f64() / calls as f64;
        let start = std::time::Instant::now();
        let mut hits = 0;
        for i in 0..100_000 {
            let target = black_box(m.die_c() + 0.5 + (i % 20) as f64 * 0.2);
            hits += m.time_to_die_c(target, 4.0, 0.5, 1e4).is_some() as usize;
        }
        let per_ttd = start.elapsed().as_secs_f64() / 100_000.0;
        println!(
            "advance: {:.1} ns/call (energy {e:.1} J, die {:.2} °C); time_to_die_c: {:.2} µs/call ({hits} hits)",
            per * 1e9,
            m.die_c(),
            per_ttd * 1e6
        );
        assert!(per < 2e-6);
    }
}

//! What a run reports: generation rates as a user sees them (burst, sustained, the times
//! to fall 10 % and 25 %), and the counters and energy the summary is made of.

use std::collections::VecDeque;

/// Generation throughput as a user sees it: decoded tokens over the time spent decoding
/// or held back by a policy (prefill and think time excluded).
#[derive(Debug, Clone, Default)]
pub(crate) struct Rates {
    /// Start of the first decode step.
    t0: Option<f64>,
    /// (tokens, seconds) over the first 30 s after `t0`.
    burst: (u64, f64),
    /// (tokens, seconds) over the first 10 s after `t0`: the reference for slowdowns.
    initial: (u64, f64),
    /// (end, tokens, seconds) of the steps in the last 60 s.
    recent: VecDeque<(f64, u64, f64)>,
    /// (end, tokens, seconds) of the steps in the trailing 10 s.
    window: VecDeque<(f64, u64, f64)>,
    pub minus_10: Option<f64>,
    pub minus_25: Option<f64>,
}

impl Rates {
    const BURST_S: f64 = 30.0;
    const SUSTAINED_S: f64 = 60.0;
    const WINDOW_S: f64 = 10.0;

    fn rate(q: &VecDeque<(f64, u64, f64)>) -> f64 {
        let (n, d) = q.iter().fold((0u64, 0.0), |a, r| (a.0 + r.1, a.1 + r.2));
        if d > 0.0 { n as f64 / d } else { 0.0 }
    }

    /// A decode step (tokens > 0) or a policy pause (tokens = 0) from `start` lasting `dur`.
    pub fn record(&mut self, start: f64, dur: f64, tokens: u64) {
        let t0 = match self.t0 {
            Some(t) => t,
            None if tokens > 0 => *self.t0.insert(start),
            None => return,
        };
        let end = start + dur;
        if end <= t0 + Self::BURST_S {
            self.burst.0 += tokens;
            self.burst.1 += dur;
        }
        if end <= t0 + Self::WINDOW_S {
            self.initial.0 += tokens;
            self.initial.1 += dur;
        }
        self.recent.push_back((end, tokens, dur));
        while self.recent.front().is_some_and(|r| r.0 < end - Self::SUSTAINED_S) {
            self.recent.pop_front();
        }
        self.window.push_back((end, tokens, dur));
        while self.window.front().is_some_and(|r| r.0 < end - Self::WINDOW_S) {
            self.window.pop_front();
        }
        // Slowdowns: the trailing 10 s window against the first 10 s of decoding.
        if end > t0 + Self::WINDOW_S && self.initial.1 > 0.0 {
            let (first, now) = (self.initial.0 as f64 / self.initial.1, Self::rate(&self.window));
            if self.minus_10.is_none() && now < 0.9 * first {
                self.minus_10 = Some(end - t0);
            }
            if self.minus_25.is_none() && now < 0.75 * first {
                self.minus_25 = Some(end - t0);
            }
        }
    }

    pub fn burst(&self) -> f64 {
        if self.burst.1 > 0.0 { self.burst.0 as f64 / self.burst.1 } else { 0.0 }
    }

    pub fn sustained(&self) -> f64 {
        Self::rate(&self.recent)
    }
}

#[cfg(test)]
mod tests {
    use super::Rates;

    #[test]
    fn rates_by_hand() {
        let mut r = Rates::default();
        // 0.1 s tokens for 30 s: 10 tok/s burst.
        let mut t = 5.0;
        for _ in 0..300 {
            r.record(t, 0.1, 1);
            t += 0.1;
        }
        assert!((r.burst() - 10.0).abs() < 1e-9);
        // Then 0.125 s tokens (8 tok/s, −20 %): −10 % is crossed once the trailing 10 s
        // window holds enough slow tokens, −25 % never.
        for _ in 0..800 {
            r.record(t, 0.125, 1);
            t += 0.125;
        }
        assert!((r.sustained() - 8.0).abs() < 1e-9);
        let m10 = r.minus_10.expect("crossed −10 %");
        assert!(m10 > 30.0 && m10 < 40.0, "{m10}");
        assert_eq!(r.minus_25, None);
        // Pauses count as generation time: 1 token per 0.125 s plus a 0.375 s pause = 2 tok/s.
        for _ in 0..200 {
            r.record(t, 0.125, 1);
            r.record(t + 0.125, 0.375, 0);
            t += 0.5;
        }
        assert!((r.sustained() - 2.0).abs() < 0.02, "{}", r.sustained());
        assert!(r.minus_25.is_some());
    }
}

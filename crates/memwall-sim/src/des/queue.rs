//! The event queue: a 4-ary min-heap ordered by (time, insertion sequence), so events at
//! equal times fire in the order they were scheduled. Time is integer nanoseconds. The heap
//! keeps its storage between runs, so the steady state allocates nothing.

/// Simulated time, nanoseconds.
pub type Nanos = u64;

/// Nanoseconds in a second.
pub const NS_PER_S: f64 = 1e9;

/// Seconds → nanoseconds, rounded to nearest (saturating for huge or negative values).
pub fn to_ns(s: f64) -> Nanos {
    (s * NS_PER_S).round().clamp(0.0, u64::MAX as f64) as Nanos
}

/// Nanoseconds → seconds.
pub fn to_s(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_S
}

/// A heap entry; `key = time << 64 | seq` orders by time, then insertion, in one compare.
#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        self.key < other.key
    }

    #[inline]
    fn time(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}

/// A 4-ary heap of timed events.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: Vec::with_capacity(64), seq: 0 }
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Drop every event (keeping the storage).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.seq = 0;
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.first().map(|e| e.time())
    }

    /// Schedule `event` at `time`.
    pub fn push(&mut self, time: Nanos, event: E) {
        let entry = Entry { key: (time as u128) << 64 | self.seq as u128, event };
        self.seq += 1;
        self.heap.push(entry);
        // Sift up.
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 4;
            if entry.before(&self.heap[parent]) {
                self.heap[i] = self.heap[parent];
                i = parent;
            } else {
                break;
            }
        }
        self.heap[i] = entry;
    }

    /// Remove and return the earliest event (FIFO among equal times).
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        let n = self.heap.len();
        if n > 0 {
            // Floyd's bottom-up variant: move the smallest child up along the path to a leaf
            // without comparing against `last`, then sift `last` up from that leaf (it
            // belongs near the bottom, so this saves a compare per level on the way down).
            let mut i = 0;
            loop {
                let first = 4 * i + 1;
                if first >= n {
                    break;
                }
                let mut best = first;
                if first + 4 <= n {
                    // Full family: a branch-light tournament of four.
                    let a = if self.heap[first + 1].before(&self.heap[first]) { first + 1 } else { first };
                    let b = if self.heap[first + 3].before(&self.heap[first + 2]) { first + 3 } else { first + 2 };
                    best = if self.heap[b].before(&self.heap[a]) { b } else { a };
                } else {
                    for c in first + 1..n {
                        if self.heap[c].before(&self.heap[best]) {
                            best = c;
                        }
                    }
                }
                self.heap[i] = self.heap[best];
                i = best;
            }
            while i > 0 {
                let parent = (i - 1) / 4;
                if last.before(&self.heap[parent]) {
                    self.heap[i] = self.heap[parent];
                    i = parent;
                } else {
                    break;
                }
            }
            self.heap[i] = last;
        }
        Some((top.time(), top.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    #[test]
    fn pops_in_time_order_and_fifo_at_equal_times() {
        let mut q = EventQueue::new();
        let mut rng = StdRng::seed_from_u64(3);
        let mut expect = Vec::new();
        for i in 0..10_000u32 {
            let t = rng.random_range(0..500u64);
            q.push(t, i);
            expect.push((t, i));
        }
        // Stable sort by time keeps insertion order among equal times.
        expect.sort_by_key(|e| e.0);
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, expect);
        assert!(q.is_empty());
    }

    #[test]
    fn interleaved_pushes_and_pops_stay_ordered() {
        let mut q = EventQueue::new();
        let mut rng = StdRng::seed_from_u64(9);
        let mut now = 0;
        let mut popped = 0;
        q.push(0, 0u64);
        while let Some((t, _)) = q.pop() {
            assert!(t >= now, "time went backwards: {t} < {now}");
            now = t;
            popped += 1;
            if popped < 50_000 {
                for _ in 0..rng.random_range(0..3) {
                    q.push(now + rng.random_range(0..1000), popped);
                }
                if q.is_empty() {
                    q.push(now + 1, popped);
                }
            }
        }
        assert!(popped >= 50_000);
    }

    #[test]
    fn time_conversions_round_to_nearest() {
        assert_eq!(to_ns(1.5e-9), 2);
        assert_eq!(to_ns(2.0), 2_000_000_000);
        assert_eq!(to_ns(-1.0), 0);
        assert_eq!(to_s(1_500_000_000), 1.5);
    }
}

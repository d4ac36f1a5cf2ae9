//! Caches at a coarse granularity: LRU by bytes over whole objects (one layer's dense
//! weights, one expert of one layer, one layer's KV), so a weight set larger than the cache
//! sweeps it cyclically and gets no reuse while a small one (a small model, hot experts, a
//! short KV) stays resident. Used for the on-chip levels (per-cluster L2, system cache) and
//! for the DRAM expert cache in front of flash.

const NIL: u32 = u32::MAX;

/// An LRU cache of objects with sizes, indexed by dense ids `0..n`.
#[derive(Debug, Clone)]
pub struct LruBytes {
    capacity: f64,
    used: f64,
    size: Vec<f64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    resident: Vec<bool>,
    head: u32,
    tail: u32,
}

impl LruBytes {
    /// An empty cache of `capacity` bytes for objects `0..n`.
    pub fn new(capacity: f64, n: usize) -> Self {
        LruBytes {
            capacity: capacity.max(0.0),
            used: 0.0,
            size: vec![0.0; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            resident: vec![false; n],
            head: NIL,
            tail: NIL,
        }
    }

    /// Capacity, bytes.
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Change the capacity, evicting least-recently-used objects to fit.
    pub fn set_capacity(&mut self, capacity: f64) {
        self.capacity = capacity.max(0.0);
        while self.used > self.capacity && self.tail != NIL {
            let t = self.tail;
            self.unlink(t);
            self.resident[t as usize] = false;
            self.used -= self.size[t as usize];
        }
        if self.head == NIL {
            self.used = 0.0;
        }
    }

    /// Bytes held.
    pub fn used(&self) -> f64 {
        self.used
    }

    /// Whether object `id` is held.
    pub fn contains(&self, id: usize) -> bool {
        self.resident[id]
    }

    fn unlink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        if p == NIL {
            self.head = n
        } else {
            self.next[p as usize] = n
        }
        if n == NIL { self.tail = p } else { self.prev[n as usize] = p }
    }

    fn push_front(&mut self, id: u32) {
        self.prev[id as usize] = NIL;
        self.next[id as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = id;
        }
        self.head = id;
        if self.tail == NIL {
            self.tail = id;
        }
    }

    /// Access object `id` of `bytes` bytes: returns the bytes that hit. A resident object
    /// hits up to its previous size (a KV object that grew misses the new part); a missing
    /// one is inserted, evicting least-recently-used objects until it fits. Objects larger
    /// than the whole cache bypass it.
    pub fn access(&mut self, id: usize, bytes: f64) -> f64 {
        let i = id as u32;
        if self.resident[id] {
            let hit = self.size[id].min(bytes);
            self.unlink(i);
            self.used += bytes - self.size[id];
            self.size[id] = bytes;
            self.push_front(i);
            self.evict_except(i);
            return hit;
        }
        if bytes > self.capacity {
            return 0.0;
        }
        self.resident[id] = true;
        self.size[id] = bytes;
        self.used += bytes;
        self.push_front(i);
        self.evict_except(i);
        0.0
    }

    fn evict_except(&mut self, keep: u32) {
        while self.used > self.capacity && self.tail != NIL && self.tail != keep {
            let t = self.tail;
            self.unlink(t);
            self.resident[t as usize] = false;
            self.used -= self.size[t as usize];
        }
        if self.used > self.capacity && self.tail == keep {
            // The object itself outgrew the cache.
            self.unlink(keep);
            self.resident[keep as usize] = false;
            self.used -= self.size[keep as usize];
        }
        if self.head == NIL {
            self.used = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_sweep_larger_than_the_cache_never_hits() {
        // 10 objects of 1 MB through a 8 MB cache: LRU evicts each just before its reuse.
        let mut c = LruBytes::new(8e6, 10);
        let mut hits = 0.0;
        for _ in 0..5 {
            for id in 0..10 {
                hits += c.access(id, 1e6);
            }
        }
        assert_eq!(hits, 0.0);
        assert!(c.used() <= 8e6);
    }

    #[test]
    fn working_set_that_fits_hits_after_the_first_pass() {
        let mut c = LruBytes::new(8e6, 10);
        let mut hits = 0.0;
        for pass in 0..5 {
            let mut h = 0.0;
            for id in 0..6 {
                h += c.access(id, 1e6);
            }
            if pass == 0 {
                assert_eq!(h, 0.0);
            } else {
                assert_eq!(h, 6e6);
            }
            hits += h;
        }
        assert_eq!(hits, 24e6);
    }

    #[test]
    fn hot_objects_survive_a_stream_of_cold_ones() {
        // Object 0 is touched between every two cold objects; with room for 3 objects it
        // is never the least recently used, so it always hits after the first touch.
        let mut c = LruBytes::new(3e6, 100);
        let mut hot = 0.0;
        for id in 1..100 {
            hot += c.access(0, 1e6);
            c.access(id, 1e6);
        }
        assert_eq!(hot, 98e6);
        assert!(!c.contains(1));
    }

    #[test]
    fn shrinking_the_capacity_evicts_the_oldest() {
        let mut c = LruBytes::new(5e6, 5);
        for id in 0..5 {
            c.access(id, 1e6);
        }
        c.set_capacity(2.5e6);
        assert_eq!(c.used(), 2e6);
        assert!(c.contains(4) && c.contains(3) && !c.contains(2));
    }

    #[test]
    fn growing_object_hits_its_old_part_and_oversized_objects_bypass() {
        let mut c = LruBytes::new(10e6, 3);
        assert_eq!(c.access(0, 2e6), 0.0);
        assert_eq!(c.access(0, 3e6), 2e6);
        assert_eq!(c.used(), 3e6);
        assert_eq!(c.access(1, 11e6), 0.0);
        assert!(!c.contains(1));
        // Growing past the capacity drops the object.
        assert_eq!(c.access(0, 12e6), 3e6);
        assert!(!c.contains(0));
        assert_eq!(c.used(), 0.0);
    }
}

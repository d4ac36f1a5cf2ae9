//! A persistent spinning thread pool for the many small parallel calls of a decode step
//! (hundreds of GEMVs per token), compared against rayon by `memwall-bench-kernels`.
//!
//! Measured on the 2-core development machine: an empty parallel call costs 0.7 µs here
//! against 20 µs with rayon, and a 256 × 4096 Q4_0 GEMV 72 µs against 89 µs, so the
//! decode-path GEMV ([`crate::gemv::gemv_mt`]) uses this pool.
//!
//! Workers wait for a new job by spinning on an epoch counter (then yielding, then sleeping
//! 50 µs at a time when idle for long), take task
//! indices from a shared counter, and the caller works too; `run` returns when every task
//! is done and no worker still holds the job.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Task<'a> = &'a (dyn Fn(usize) + Sync);

struct Shared {
    /// The payload of the first task of the current job that panicked.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    epoch: AtomicUsize,
    next: AtomicUsize,
    done: AtomicUsize,
    n_tasks: AtomicUsize,
    /// Workers holding the current job; changed only under `job`'s lock.
    active: AtomicUsize,
    stop: AtomicBool,
    /// The current job and the epoch it belongs to.
    job: Mutex<(Option<Task<'static>>, usize)>,
}

/// A persistent pool of `threads − 1` workers plus the calling thread. Calls to
/// [`SpinPool::run`] from several threads are serialized (one job at a time); a task must not
/// call `run` on its own pool.
pub struct SpinPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Held for the whole of a `run`: the job counters serve one job at a time.
    running: Mutex<()>,
}

/// Take task indices until none is left. A task that panics still counts as done (its
/// payload is kept for `run` to re-raise on the caller), so no thread waits for it forever
/// and the caller never returns while a worker still holds the job.
fn work(s: &Shared, f: Task<'_>) {
    let n = s.n_tasks.load(Ordering::Acquire);
    loop {
        let i = s.next.fetch_add(1, Ordering::AcqRel);
        if i >= n {
            break;
        }
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))) {
            s.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
        }
        s.done.fetch_add(1, Ordering::AcqRel);
    }
}

fn worker(s: Arc<Shared>) {
    let mut seen = 0;
    loop {
        let mut spins = 0u32;
        while s.epoch.load(Ordering::Acquire) == seen && !s.stop.load(Ordering::Acquire) {
            spins += 1;
            if spins < 20_000 {
                std::hint::spin_loop();
            } else if spins < 21_000 {
                std::thread::yield_now();
            } else if spins < 22_000 {
                // Idle for a while: stop burning the core.
                std::thread::sleep(std::time::Duration::from_micros(50));
            } else {
                // Idle for 50 ms or more (a pool left between uses, as `validate --host` keeps
                // one per design it interleaves): wake 1,000 times a second, not 20,000, so
                // idle pools do not tax the one being timed. The first job after such a pause
                // waits up to 1 ms for this worker.
                spins = 22_000;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        if s.stop.load(Ordering::Acquire) {
            return;
        }
        let job = {
            let g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            seen = g.1;
            if g.0.is_some() {
                s.active.fetch_add(1, Ordering::AcqRel);
            }
            g.0
        };
        if let Some(f) = job {
            work(&s, f);
            s.active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl SpinPool {
    /// A pool running jobs on `threads` threads in all (at least 1).
    pub fn new(threads: usize) -> Self {
        let shared = Arc::new(Shared {
            panic: Mutex::new(None),
            epoch: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            n_tasks: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            job: Mutex::new((None, 0)),
        });
        let workers = (1..threads.max(1))
            .map(|_| {
                let s = Arc::clone(&shared);
                std::thread::spawn(move || worker(s))
            })
            .collect();
        SpinPool { shared, workers, running: Mutex::new(()) }
    }

    /// Threads (workers and the caller).
    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Run `f(0..n_tasks)` across the pool and return when all tasks are done. A panic in a
    /// task is re-raised here, on the caller, once every task has finished.
    pub fn run(&self, n_tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        let _one_job = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let s = &*self.shared;
        {
            let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            // A worker that picked up the previous job late may still be inside it.
            while s.active.load(Ordering::Acquire) != 0 {
                drop(g);
                std::hint::spin_loop();
                g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            }
            #[allow(unsafe_code)]
            // SAFETY: the erased lifetime never outlives this call: `run` returns only when
            // every task is done and no worker holds the job (`active == 0`, counted under
            // this lock), and the next `run` replaces the job before any worker can take a
            // task index from it.
            let erased = unsafe { std::mem::transmute::<Task<'_>, Task<'static>>(f) };
            s.n_tasks.store(n_tasks, Ordering::Release);
            s.done.store(0, Ordering::Release);
            s.next.store(0, Ordering::Release);
            let epoch = s.epoch.load(Ordering::Acquire) + 1;
            *g = (Some(erased), epoch);
            s.epoch.store(epoch, Ordering::Release);
        }
        work(s, f);
        while s.done.load(Ordering::Acquire) < n_tasks || s.active.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        // Late workers must not find this job any more.
        s.job.lock().unwrap_or_else(|e| e.into_inner()).0 = None;
        if let Some(payload) = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
            std::panic::resume_unwind(payload);
        }
    }
}

impl Drop for SpinPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// The process-wide pool used by [`crate::gemv::gemv_mt`], with as many threads as rayon's
/// global pool (the machine's cores unless `RAYON_NUM_THREADS` says otherwise).
pub fn global() -> &'static SpinPool {
    static POOL: std::sync::OnceLock<SpinPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| SpinPool::new(rayon::current_num_threads()))
}

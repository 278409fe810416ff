//! Keeping a compute's other pool threads awake between its parallel steps.
//!
//! A compute runs its steps on one pool thread; each step's kernel splits its
//! work across the pool, and between steps (and in a step's serial parts) the
//! other threads go idle and rayon puts them to sleep. Waking one takes a system
//! call and, where its CPU is running anything else, a wait for the scheduler:
//! Linux does not preempt the running task for a woken one until that task has
//! had its share ("run to parity"), so a low-priority process on one CPU makes
//! every step of a two-thread compute wait for it. Measured on the 2-vCPU
//! machine with a `nice 19` busy loop on one CPU, ResNet-50 on two threads ran
//! 28.1 / 28.9 ms against onnxruntime's 19.5 (whose threads shrug it off); the
//! VM also has minutes where one vCPU is slow in the same way with nothing
//! visible running ("the slow state" of the issue notes: our two-thread
//! ResNet-50 22.5-24 ms while onnxruntime stays at 19).
//!
//! So at the start of a compute on a pool of several threads, one helper job per
//! other thread keeps that thread busy: it runs whatever work the pool has
//! (`rayon::yield_now`) and spins briefly in between, until the compute ends or
//! it has found no work for `IDLE_LIMIT` (a long serial step: it then returns and
//! the thread sleeps as before). A helper that lands on the compute's own thread,
//! or starts after the compute ended, returns at once. Since a helper can also be
//! picked up by a thread waiting inside another job (rayon runs queued jobs while
//! a join waits), the idle limit bounds how long it can hold that thread: no
//! compute ever waits on a helper for longer.
//!
//! Measured in one process, computes alternating without and with
//! (`benchmark/ab.js`, two threads, medians, two rounds each): with a `nice 19`
//! busy loop on one CPU, ResNet-50 26.61 / 26.83 -> 21.10 / 21.59 ms,
//! SqueezeNet 3.41 / 3.83 -> 2.97 / 2.24, MobileNetV2 4.82 / 6.84 -> 3.38 /
//! 4.25 (onnxruntime beside it: 18.6, 2.13, 2.88); without it ResNet-50 19.31 /
//! 19.40 -> 19.17 / 19.07, SqueezeNet 2.09 / 2.07 -> 2.07 / 2.07, MobileNetV2
//! 2.57 / 2.63 -> 2.60 / 2.51. The cost: during a compute's serial parts a
//! helper spins on its core for up to `IDLE_LIMIT` (that core was given to the
//! compute). A context's `keepAwake: false` (`CpuOptions::keep_awake`) turns
//! it off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a helper waits without finding work before it lets its thread sleep.
const IDLE_LIMIT: Duration = Duration::from_micros(300);

/// Spins between two looks for work.
const SPINS: usize = 32;

/// Ends the helpers of one compute when dropped.
pub(super) struct Awake(Option<Arc<AtomicBool>>);

impl Awake {
    /// No helpers (the context turned them off).
    pub(super) fn none() -> Awake {
        Awake(None)
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        if let Some(done) = &self.0 {
            done.store(true, Ordering::Release);
        }
    }
}

/// How long a thread woken by `ready` waits for the compute.
const READY_LIMIT: Duration = Duration::from_micros(400);

/// Wakes one thread of `pool` to wait for a compute about to be handed to it
/// (`Executable::prepare`, called as compute() starts checking its arguments),
/// unless one already waits. A sleeping pool thread takes 20-50 us to wake on
/// the 2-vCPU VM (its vCPU halts when idle); woken now, that overlaps the
/// argument checks, and the compute's spawn finds the thread awake. It runs the
/// first job the pool gets (`rayon::yield_now`), or gives up after
/// `READY_LIMIT` (compute() threw, or was called off). Measured on SqueezeNet,
/// one thread, interleaved with onnxruntime (three rounds, alternating builds):
/// the time outside the engine's run, from the call to the awaited result,
/// 124 / 152 / 129 -> 91 / 128 / 86 us. A context's `prewake: false`
/// (`CpuOptions::prewake`) turns it off.
pub(super) fn ready(pool: &super::Pool) {
    if pool.waiting.swap(true, Ordering::AcqRel) {
        return;
    }
    let waiting = pool.waiting.clone();
    pool.spawn(move || {
        let start = Instant::now();
        while start.elapsed() < READY_LIMIT {
            if let Some(rayon::Yield::Executed) = rayon::yield_now() {
                break;
            }
            for _ in 0..SPINS {
                std::hint::spin_loop();
            }
        }
        waiting.store(false, Ordering::Release);
    });
}

/// Called on a pool thread as a compute starts there: spawns the helpers (one
/// per other thread of the current pool) when the pool has several threads.
pub(super) fn start() -> Awake {
    let threads = rayon::current_num_threads();
    let me = rayon::current_thread_index();
    if threads < 2 || me.is_none() {
        return Awake(None);
    }
    let done = Arc::new(AtomicBool::new(false));
    for _ in 1..threads {
        let done = done.clone();
        rayon::spawn(move || help(&done, me));
    }
    Awake(Some(done))
}

/// One helper: runs the pool's work until `done`, or until it has found none for
/// `IDLE_LIMIT`; at once when on thread `main` (the compute's own).
fn help(done: &AtomicBool, main: Option<usize>) {
    if rayon::current_thread_index() == main {
        return;
    }
    let mut idle_since: Option<Instant> = None;
    while !done.load(Ordering::Acquire) {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => idle_since = None,
            _ => {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= IDLE_LIMIT {
                    return;
                }
                for _ in 0..SPINS {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helpers end with their compute, and a helper that lands on a thread
    /// waiting for something else lets it go within the idle limit: two
    /// "computes" on a two-thread pool, each waiting on a join whose other half
    /// runs a long time, finish (no deadlock) and leave no helper running.
    #[test]
    fn helpers_end_and_never_hold_a_waiting_thread() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        for k in 0..2 {
            let tx = tx.clone();
            pool.spawn(move || {
                let _awake = start();
                let mut sum = 0u64;
                for _ in 0..50 {
                    let (a, b) = rayon::join(|| (0..20_000u64).sum::<u64>(), || (0..20_000u64).map(|x| x ^ k).sum::<u64>());
                    sum = sum.wrapping_add(a).wrapping_add(b);
                }
                tx.send(sum).unwrap();
            });
        }
        drop(tx);
        let got: Vec<u64> = (0..2).map(|_| rx.recv_timeout(Duration::from_secs(20)).expect("a compute stalled")).collect();
        assert_eq!(got.len(), 2);
        // The pool goes quiet: a job spawned now runs promptly.
        let (tx, rx) = std::sync::mpsc::channel();
        let t = Instant::now();
        pool.spawn(move || tx.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn one_thread_pools_and_threads_off_the_pool_spawn_nothing() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert!(pool.install(start).0.is_none());
        // Off any pool (the test's own thread): nothing either.
        assert!(start().0.is_none());
    }

    fn pool(threads: usize) -> super::super::Pool {
        let threads = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        super::super::Pool { threads, waiting: Default::default() }
    }

    /// The woken thread runs the compute handed to the pool next (as soon as it
    /// is queued), and lets the next `ready` wake a thread again afterwards.
    #[test]
    fn a_readied_thread_runs_the_next_job_and_then_lets_go() {
        for threads in [1, 2] {
            let pool = pool(threads);
            for round in 0..3 {
                ready(&pool);
                assert!(pool.waiting.load(Ordering::Acquire), "round {round}: one thread waits");
                // A second call while one waits spawns nothing more (nothing to see
                // but the flag, which stays set).
                ready(&pool);
                let (tx, rx) = std::sync::mpsc::channel();
                pool.spawn(move || tx.send(rayon::current_thread_index()).unwrap());
                let ran_on = rx.recv_timeout(Duration::from_secs(5)).expect("the job never ran");
                assert!(ran_on.is_some_and(|i| i < threads));
                let t = Instant::now();
                while pool.waiting.load(Ordering::Acquire) {
                    assert!(t.elapsed() < Duration::from_secs(5), "round {round}: the waiting thread never let go");
                    std::thread::yield_now();
                }
            }
        }
    }

    /// With no compute coming (compute() threw), the thread gives up within
    /// about `READY_LIMIT` and the pool works as before.
    #[test]
    fn a_readied_thread_gives_up_when_nothing_comes() {
        let pool = pool(1);
        ready(&pool);
        let t = Instant::now();
        while pool.waiting.load(Ordering::Acquire) {
            assert!(t.elapsed() < Duration::from_secs(5), "the waiting thread never gave up");
            std::thread::yield_now();
        }
        assert!(t.elapsed() >= READY_LIMIT / 2, "gave up after {:?}", t.elapsed());
        let (tx, rx) = std::sync::mpsc::channel();
        pool.spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
    }
}

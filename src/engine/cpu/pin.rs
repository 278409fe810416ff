//! Pinning the threads of a pool that spans every core, one per core.
//!
//! Left to the scheduler, the pool's threads sometimes share one core for a
//! whole compute: when other threads of the process have just run (another
//! library's inference, here onnxruntime's), a worker woken by a busy thread is
//! placed beside it and stays, being cache-hot, until the balancer moves it. A
//! two-thread compute then runs at one-thread speed. Measured on the 2-vCPU
//! machine, MobileNetV2 on 2 threads right after an onnxruntime run: 4.77 /
//! 4.82 ms unpinned, 3.08 / 3.08 ms pinned (onnxruntime's own runs 3.35-3.37
//! either way); in a slower minute 4.62 / 4.69 -> 4.05 / 4.05 (onnxruntime
//! 4.02-4.07); computing alone, 3.82-3.86 ms either way.
//!
//! Only a pool with one thread per allowed CPU is pinned, each thread to its
//! own CPU: the pools are shared per thread count, so no two pinned threads
//! share a CPU. Smaller pools stay free to move (two one-thread contexts
//! computing at once must not end up on one CPU). Linux only; where the calls
//! fail (a container that forbids them) the threads stay unpinned. A
//! context's `pinThreads: false` (`CpuOptions::pin_threads`) gets a pool that
//! is never pinned (`shared_pool`).

/// Called on pool thread `index` of `threads` of a pool that pins as it starts.
pub(super) fn worker_started(index: usize, threads: usize) {
    if let Some(cpu) = cpu_for(index, threads, &allowed_cpus()) {
        pin_to(cpu);
    }
}

/// The CPU for thread `index` of a pool of `threads`: a distinct CPU of `allowed`
/// per thread when the pool has exactly one thread per allowed CPU, counted from
/// the last (the first CPUs take more of the system's interrupts and threads);
/// `None` otherwise.
fn cpu_for(index: usize, threads: usize, allowed: &[usize]) -> Option<usize> {
    if threads < 2 || threads != allowed.len() || index >= threads {
        return None;
    }
    allowed.get(allowed.len() - 1 - index).copied()
}

/// The CPUs this process may run on.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    // SAFETY: a cpu_set_t on the stack holding one CPU below CPU_SETSIZE (it came
    // from `allowed_cpus`); failure leaves the thread as it was.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pools_with_a_thread_per_allowed_cpu_are_pinned_each_to_its_own() {
        let allowed = [0, 2, 5, 7];
        let got: Vec<_> = (0..4).map(|i| cpu_for(i, 4, &allowed)).collect();
        assert_eq!(got, [Some(7), Some(5), Some(2), Some(0)]);
        // Fewer threads than CPUs, one thread, more threads, an index past the pool.
        assert_eq!(cpu_for(0, 3, &allowed), None);
        assert_eq!(cpu_for(0, 1, &[3]), None);
        assert_eq!(cpu_for(0, 5, &allowed), None);
        assert_eq!(cpu_for(4, 4, &allowed), None);
        assert_eq!(cpu_for(0, 2, &[]), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_allowed_cpus_include_the_one_running_this_test() {
        let allowed = allowed_cpus();
        // SAFETY: sched_getcpu has no preconditions.
        let now = unsafe { libc::sched_getcpu() };
        assert!(now >= 0 && allowed.contains(&(now as usize)), "{now} not in {allowed:?}");
    }
}

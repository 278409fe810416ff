//! Waking the JS thread ahead of a compute's end (`EarlyNotice`).
//!
//! A compute() promise settles on the JS thread, which sleeps in the event loop
//! while the engine works. Waking it takes 50-120 us on a VM whose idle vCPUs
//! halt at once (measured here: from the engine's last step to the awaiting
//! script), a few percent of a 4 ms MobileNetV2 compute. So the engine says when
//! it is about to finish (`soon`); that queues a call on the JS thread, which
//! then waits, briefly and bounded, for the compute to finish. When it does, the
//! promise's own settle is already queued and runs without the thread going back
//! to sleep. The time the wake-up takes is measured each time (`lead`), so
//! notices come as early as the thread needs and no earlier.
//!
//! The CPU engine sends notices only from contexts whose pool leaves a core to
//! the JS thread (`CpuPlan::notices`): otherwise the wait would take a core from
//! the compute's last steps.
//!
//! One threadsafe function per JS environment, created with the environment's
//! compute tracker (`InFlight`) and unreferenced, so it never keeps the process
//! alive. A context's `earlyWake: false` turns the notices off
//! (`CpuOptions::early_wake`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi::sys;

use crate::engine::{nanos, running_average, EarlyNotice};

/// The first estimate of the wake-up's duration, before any was measured.
const FIRST_LATENCY: Duration = Duration::from_micros(80);
/// Bounds of the lead: at least this much (a wake-up is never free) ...
const MIN_LEAD: Duration = Duration::from_micros(20);
/// ... and at most this much, so a wake-up that was slow because the JS thread
/// was busy (not asleep) does not make later notices come far too early.
const MAX_LEAD: Duration = Duration::from_micros(300);
/// The longest the JS thread waits for a compute to finish after a notice.
const MAX_WAIT: Duration = Duration::from_millis(1);

/// Notices sent, and those the JS thread received while the compute still ran
/// (so that it waited), and the longest such wait in nanoseconds: what
/// `wakeStats()` reports (tests).
static SENT: AtomicU64 = AtomicU64::new(0);
static WAITED: AtomicU64 = AtomicU64::new(0);
static LONGEST_WAIT_NS: AtomicU64 = AtomicU64::new(0);

/// The counters above, for tests: `{ sent, waited, longestWaitUs }`. (Only JS
/// calls it, through the addon's registration, which the Rust test build leaves
/// out: hence the allowances.)
#[cfg_attr(test, allow(dead_code))]
#[napi_derive::napi(object)]
pub struct WakeStats {
    pub sent: f64,
    pub waited: f64,
    pub longest_wait_us: f64,
}

#[cfg_attr(test, allow(dead_code))]
#[napi_derive::napi]
pub fn wake_stats() -> WakeStats {
    WakeStats {
        sent: SENT.load(Ordering::Relaxed) as f64,
        waited: WAITED.load(Ordering::Relaxed) as f64,
        longest_wait_us: LONGEST_WAIT_NS.load(Ordering::Relaxed) as f64 / 1e3,
    }
}

/// One JS environment's wake-up channel.
pub(super) struct Waker {
    tsfn: sys::napi_threadsafe_function,
    /// Recent wake-up durations, nanoseconds (a running average).
    latency_ns: Arc<AtomicU64>,
}

// SAFETY: napi_call_threadsafe_function may be called from any thread; the
// function lives until the environment's cleanup, which waits for every compute
// (`InFlight::wait_idle`, registered after it and so run before its cleanup).
unsafe impl Send for Waker {}
unsafe impl Sync for Waker {}

/// What the JS thread receives: the compute to wait for and when it was sent.
struct Item {
    done: Arc<AtomicBool>,
    latency_ns: Arc<AtomicU64>,
    sent: Instant,
    remaining: Duration,
}

impl Waker {
    /// Creates the environment's threadsafe function (on the JS thread).
    pub(super) fn new(env: &Env) -> Result<Waker> {
        let raw = env.raw();
        let name = "webnn compute wake-up";
        let mut js_name = std::ptr::null_mut();
        let mut tsfn = std::ptr::null_mut();
        // SAFETY: plain N-API calls on the environment's own thread, with valid
        // out-pointers; the callback matches napi_threadsafe_function_call_js.
        unsafe {
            check(sys::napi_create_string_utf8(raw, name.as_ptr().cast(), name.len() as isize, &mut js_name))?;
            check(sys::napi_create_threadsafe_function(
                raw,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                js_name,
                0,
                1,
                std::ptr::null_mut(),
                None,
                std::ptr::null_mut(),
                Some(on_js_thread),
                &mut tsfn,
            ))?;
            check(sys::napi_unref_threadsafe_function(raw, tsfn))?;
        }
        Ok(Waker { tsfn, latency_ns: Arc::new(AtomicU64::new(nanos(FIRST_LATENCY))) })
    }

    /// The notice of one compute.
    pub(super) fn notice(self: &Arc<Self>) -> Arc<ComputeNotice> {
        Arc::new(ComputeNotice { waker: self.clone(), done: Arc::new(AtomicBool::new(false)), sent: AtomicBool::new(false) })
    }
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::GenericFailure, format!("cannot create the compute wake-up (napi status {status})")))
    }
}

/// One compute's side of the channel: the engine calls `soon`, the compute's
/// completion calls `finish`.
pub(super) struct ComputeNotice {
    waker: Arc<Waker>,
    done: Arc<AtomicBool>,
    sent: AtomicBool,
}

impl ComputeNotice {
    /// The compute has finished and its promise's settle is queued.
    pub(super) fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }
}

impl EarlyNotice for ComputeNotice {
    fn lead(&self) -> Duration {
        let latency = Duration::from_nanos(self.waker.latency_ns.load(Ordering::Relaxed));
        (latency * 5 / 4 + Duration::from_micros(10)).clamp(MIN_LEAD, MAX_LEAD)
    }

    fn soon(&self, remaining: Duration) {
        if self.sent.swap(true, Ordering::Relaxed) {
            return;
        }
        let item = Box::into_raw(Box::new(Item {
            done: self.done.clone(),
            latency_ns: self.waker.latency_ns.clone(),
            sent: Instant::now(),
            remaining,
        }));
        // SAFETY: the function is alive (see `Waker`); on success the item's
        // ownership passes to `on_js_thread`, which frees it.
        let status = unsafe { sys::napi_call_threadsafe_function(self.waker.tsfn, item.cast(), sys::ThreadsafeFunctionCallMode::nonblocking) };
        if status == sys::Status::napi_ok {
            SENT.fetch_add(1, Ordering::Relaxed);
        } else {
            // SAFETY: not queued, so still ours.
            drop(unsafe { Box::from_raw(item) });
        }
    }
}

/// On the JS thread: records how long the wake-up took, then waits for the
/// compute to finish, at most about twice what the engine expected was left
/// (and never more than `MAX_WAIT`), so that a misjudged notice costs the event
/// loop little.
unsafe extern "C" fn on_js_thread(env: sys::napi_env, _js: sys::napi_value, _ctx: *mut std::ffi::c_void, data: *mut std::ffi::c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: `soon` queued this box and nothing else frees it.
    let item = unsafe { Box::from_raw(data.cast::<Item>()) };
    // A null env: the environment is closing; there is nothing to wake.
    if env.is_null() {
        return;
    }
    let latency = item.sent.elapsed();
    let old = item.latency_ns.load(Ordering::Relaxed);
    item.latency_ns.store(running_average(old, nanos(latency)), Ordering::Relaxed);
    let wait = (item.remaining.saturating_sub(latency) * 2 + Duration::from_micros(20)).min(MAX_WAIT);
    if item.done.load(Ordering::Acquire) {
        return;
    }
    let start = Instant::now();
    let until = start + wait;
    while !item.done.load(Ordering::Acquire) && Instant::now() < until {
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
    WAITED.fetch_add(1, Ordering::Relaxed);
    LONGEST_WAIT_NS.fetch_max(nanos(start.elapsed()), Ordering::Relaxed);
}

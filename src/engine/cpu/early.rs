//! When a plan tells its caller that it is about to finish (`EarlyNotice`): each
//! step's recent time, kept across computes, says how much of a compute is left
//! before each step. The notice comes at the start of the step during which the
//! lead begins (what is left after that step fits in the lead), unless that step
//! is long (the caller would wait through most of it), then at the next step.
//! The first computes of a plan only measure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::engine::{nanos, running_average, EarlyNotice};

/// Computes of a plan that only measure before notices start.
const WARM_UP: u64 = 2;

/// How much longer than the lead the step that starts the notice may take: the
/// caller may wait that long (see `EarlyNotice`).
const SLACK: u64 = 150_000;

/// A running average of each step's time, in nanoseconds.
pub(super) struct StepTimes {
    ns: Vec<AtomicU64>,
    runs: AtomicU64,
}

impl StepTimes {
    pub(super) fn new(steps: usize) -> StepTimes {
        StepTimes { ns: (0..steps).map(|_| AtomicU64::new(0)).collect(), runs: AtomicU64::new(0) }
    }

    /// The tracker of one compute; `None` when nobody asked for a notice.
    pub(super) fn start<'a>(&'a self, early: Option<&'a dyn EarlyNotice>) -> Option<Tracker<'a>> {
        let early = early?;
        let warm = self.runs.fetch_add(1, Ordering::Relaxed) >= WARM_UP;
        let remaining = self.ns.iter().map(|t| t.load(Ordering::Relaxed)).sum();
        let lead = nanos(early.lead());
        Some(Tracker { times: self, early, lead, remaining, armed: warm })
    }
}

pub(super) struct Tracker<'a> {
    times: &'a StepTimes,
    early: &'a dyn EarlyNotice,
    lead: u64,
    /// The estimated time of the steps not yet started.
    remaining: u64,
    armed: bool,
}

impl Tracker<'_> {
    /// Before step `i`: the notice, once, at the start of the step during which
    /// the lead begins (what is left after it fits in the lead), unless that
    /// step alone would outlast the lead by more than `SLACK` (then the notice
    /// waits for a later step, or does not come).
    pub(super) fn before(&mut self, i: usize) {
        let this = self.times.ns.get(i).map_or(0, |t| t.load(Ordering::Relaxed));
        let after = self.remaining.saturating_sub(this);
        if self.armed && after <= self.lead && self.remaining <= self.lead.saturating_add(SLACK) {
            self.armed = false;
            self.early.soon(Duration::from_nanos(self.remaining));
        }
    }

    /// After step `i`, which took `ns`: folds it into the step's average (a
    /// quarter of the new time).
    pub(super) fn after(&mut self, i: usize, ns: u64) {
        let Some(slot) = self.times.ns.get(i) else { return };
        let old = slot.load(Ordering::Relaxed);
        let new = if old == 0 { ns } else { running_average(old, ns) };
        slot.store(new, Ordering::Relaxed);
        self.remaining = self.remaining.saturating_sub(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records each `soon` call.
    struct Spy {
        lead: Duration,
        calls: Mutex<Vec<Duration>>,
    }

    impl EarlyNotice for Spy {
        fn lead(&self) -> Duration {
            self.lead
        }
        fn soon(&self, remaining: Duration) {
            self.calls.lock().unwrap().push(remaining);
        }
    }

    /// Runs one compute of steps taking `ns` each; returns the step before which
    /// `soon` was called, if any, and with what estimate.
    fn run(times: &StepTimes, spy: &Spy, ns: &[u64]) -> Option<(usize, Duration)> {
        let mut at = None;
        let mut t = times.start(Some(spy)).unwrap();
        for (i, &n) in ns.iter().enumerate() {
            let before = spy.calls.lock().unwrap().len();
            t.before(i);
            if spy.calls.lock().unwrap().len() > before {
                at = Some((i, *spy.calls.lock().unwrap().last().unwrap()));
            }
            t.after(i, n);
        }
        at
    }

    #[test]
    fn notices_come_once_a_lead_before_the_end_after_warm_up() {
        let steps = [400_000u64, 300_000, 200_000, 50_000, 30_000, 20_000];
        let times = StepTimes::new(steps.len());
        let spy = Spy { lead: Duration::from_micros(100), calls: Mutex::new(Vec::new()) };
        // Warm-up computes only measure.
        for _ in 0..WARM_UP {
            assert_eq!(run(&times, &spy, &steps), None);
        }
        // The lead (100 us) begins during step 2 (200 us, 100 us left after it),
        // but that step would outlast the lead by more than SLACK: the notice
        // waits for step 3, when 50 + 30 + 20 us are left. Once per compute.
        for _ in 0..3 {
            assert_eq!(run(&times, &spy, &steps), Some((3, Duration::from_micros(100))));
        }
        assert_eq!(spy.calls.lock().unwrap().len(), 3);
    }

    #[test]
    fn estimates_follow_steps_that_change() {
        let times = StepTimes::new(3);
        let spy = Spy { lead: Duration::from_micros(150), calls: Mutex::new(Vec::new()) };
        for _ in 0..WARM_UP {
            run(&times, &spy, &[100_000, 100_000, 100_000]);
        }
        // The last step fits the 150 us lead, the last two (200 us) do not: the
        // notice comes at the start of the middle step, 200 us from the end.
        assert_eq!(run(&times, &spy, &[100_000, 100_000, 100_000]), Some((1, Duration::from_micros(200))));
        // The middle step becomes fast: its average moves a quarter of the way
        // per compute (100 -> 77.5 -> 60.6 -> 48 us), until the last two fit
        // and the notice moves to the first step.
        let mut at = Vec::new();
        for _ in 0..4 {
            at.push(run(&times, &spy, &[100_000, 10_000, 100_000]).map(|(i, _)| i));
        }
        assert_eq!(at, [Some(1), Some(1), Some(1), Some(0)]);
    }

    #[test]
    fn a_compute_shorter_than_the_lead_is_noticed_at_its_start() {
        let times = StepTimes::new(2);
        let spy = Spy { lead: Duration::from_micros(500), calls: Mutex::new(Vec::new()) };
        for _ in 0..WARM_UP {
            run(&times, &spy, &[10_000, 20_000]);
        }
        assert_eq!(run(&times, &spy, &[10_000, 20_000]), Some((0, Duration::from_micros(30))));
        assert!(times.start(None).is_none());
    }
}

//! Wake-ups: a commit that makes work for a background loop rings that loop's bell, so the
//! loop runs now instead of at its next poll (docs/operations.md, "Wake-ups"). The store rings
//! the bells of its own process after the commit, and on PostgreSQL announces the work to every
//! node through `NOTIFY` on [`CHANNEL`]; polling stays as the safety net.

use tokio::sync::Notify;

/// The `LISTEN`/`NOTIFY` channel work is announced on; the payload is a [`Work`] name.
pub const CHANNEL: &str = "swapd_work";

/// What kind of work a commit made.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::EnumIter,
)]
#[strum(serialize_all = "snake_case")]
pub enum Work {
    /// Webhook deliveries to send.
    Deliveries,
    /// An order due for a look now (created, answered, deposited to in the sandbox).
    Orders,
    /// An execution due for a look now (a report arrived).
    Executions,
    /// Status e-mails to send.
    Notifications,
    /// Market-intel jobs queued.
    Jobs,
}

impl Work {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One bell per kind of work. A ring with no loop waiting is kept until the loop next waits, so
/// work committed during a pass runs right after it.
#[derive(Debug, Default)]
pub struct Bells {
    deliveries: Notify,
    orders: Notify,
    executions: Notify,
    notifications: Notify,
    jobs: Notify,
}

impl Bells {
    fn bell(&self, work: Work) -> &Notify {
        match work {
            Work::Deliveries => &self.deliveries,
            Work::Orders => &self.orders,
            Work::Executions => &self.executions,
            Work::Notifications => &self.notifications,
            Work::Jobs => &self.jobs,
        }
    }

    pub fn ring(&self, work: Work) {
        self.bell(work).notify_one();
    }

    /// Resolves once `work`'s bell rang (at once if it rang since the last wait).
    pub async fn rung(&self, work: Work) {
        self.bell(work).notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_names_round_trip() {
        use strum::IntoEnumIterator;
        for work in Work::iter() {
            assert_eq!(work.as_str().parse::<Work>(), Ok(work));
        }
        assert_eq!(Work::Deliveries.as_str(), "deliveries");
    }

    #[test]
    fn a_ring_before_the_wait_is_kept_and_bells_are_separate() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let bells = Bells::default();
            bells.ring(Work::Deliveries);
            tokio::time::timeout(
                std::time::Duration::from_secs(1),
                bells.rung(Work::Deliveries),
            )
            .await
            .expect("the ring was kept");
            let other = tokio::time::timeout(
                std::time::Duration::from_millis(20),
                bells.rung(Work::Orders),
            )
            .await;
            assert!(other.is_err(), "another bell did not ring");
        });
    }
}

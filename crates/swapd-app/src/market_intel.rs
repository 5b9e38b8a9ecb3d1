//! Market-intel jobs (docs/market-intel.md): queued for the caller, run by the worker, read
//! back by the same caller.

use swapd_core::ids::JobId;
use swapd_core::market_intel::{self, InvalidJob, Job, JobPayment};
use swapd_core::owner::Owner;
use swapd_types::market_intel::JobInput;

use crate::{Answer, Context, Error, IdempotencyKey};

/// Checks a job request as [`queue`] will read it.
pub fn check(input: &JobInput) -> Result<market_intel::JobRequest, Error> {
    market_intel::validate(input).map_err(Error::from)
}

/// Queues `owner`'s job (202 with the queued job), written with the answer; a job paid with
/// `upto` keeps its `payment`, settled for what it used when it ends.
pub async fn queue(
    app: Context<'_>,
    owner: &Owner,
    input: &JobInput,
    payment: Option<JobPayment>,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let request = check(input)?;
    let job = Job {
        payment,
        ..Job::queue(
            JobId::generate(),
            owner.clone(),
            request,
            app.clock.now_ms(),
        )
    };
    let answer = Answer::json(202, &job.view())?;
    app.store
        .insert_job(&job, key.finish(&answer.stored))
        .await?;
    Ok(answer.written(Some(key)))
}

/// `owner`'s job `id`: unknown ids and other callers' jobs are the same "not found".
pub async fn owned(app: Context<'_>, owner: &Owner, id: &str) -> Result<Job, Error> {
    crate::find_owned(
        id,
        JobId::parse,
        || Error::JobNotFound,
        |id| async move { app.store.job(&id, owner).await },
    )
    .await
}

impl From<InvalidJob> for Error {
    fn from(problem: InvalidJob) -> Self {
        if problem.pair_unsupported {
            Error::PairUnsupported(problem.to_string())
        } else {
            Error::invalid(problem.field, problem.problem)
        }
    }
}

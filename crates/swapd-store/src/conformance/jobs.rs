//! Market-intel jobs.

use super::*;

pub async fn jobs_are_claimed_once_taken_over_after_their_lease_and_finished_by_the_holder(
    store: &Arc<dyn Store>,
) {
    let now = 1_700_000_000_000;
    let scope = "wallet:0xjobs";
    let owner = &parsed::<Owner>(scope);
    let response = StoredResponse {
        status: 202,
        body: b"{}".to_vec(),
    };
    let authorized = JobPayment {
        network: "eip155:8453".into(),
        payer: "0x94fbE87527182391dE06125623c0a9619C962E22".into(),
        maximum: "600000".into(),
        unit: "50000".into(),
        payment: serde_json::json!({"x402Version": 2}),
        requirements: serde_json::json!({"scheme": "upto"}),
        state: JobPaymentState::Authorized,
    };
    for i in 0..6 {
        let job = Job {
            id: parsed(&format!("job_conformance_{i}")),
            owner: owner.clone(),
            request: JobRequest::PairDepth {
                from_ccy: "BTC".into(),
                to_ccy: "ETH".into(),
                steps: 4,
            },
            status: JobStatus::Queued,
            result: None,
            error: None,
            attempts: 0,
            created_at_ms: now + i,
            started_at_ms: None,
            finished_at_ms: None,
            payment: (i == 1).then(|| authorized.clone()),
        };
        let key = format!("idem-job-{i}");
        let mut lease = String::new();
        let finish = finish_with(store.as_ref(), scope, &key, &mut lease, &response, now).await;
        store.insert_job(&job, finish).await.unwrap();
    }
    assert_eq!(
        store
            .job(&parsed("job_conformance_0"), owner)
            .await
            .unwrap()
            .unwrap()
            .status,
        JobStatus::Queued
    );
    assert!(
        store
            .job(&parsed("job_conformance_0"), &parsed("wallet:other"))
            .await
            .unwrap()
            .is_none()
    );

    // Three workers claim at once: each job goes to one of them.
    let tasks: Vec<_> = (0..3)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .claim_jobs(now + 10, &format!("jl-{w}"), now + 60_010, 10)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(task.await.unwrap());
    }
    let mut ids: Vec<JobId> = claimed
        .iter()
        .filter(|j| j.owner == *owner)
        .map(|j| j.id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 6);
    ids.dedup();
    assert_eq!(ids.len(), 6, "no job claimed twice");
    let job = claimed
        .iter()
        .find(|j| j.id == "job_conformance_0")
        .unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Running, 1));
    assert_eq!(job.started_at_ms, Some(now + 10));

    // Nothing more while leases hold; after they end, the jobs are taken over.
    let held = store
        .claim_jobs(now + 60_009, "jl-late", now + 120_000, 10)
        .await
        .unwrap();
    assert!(held.iter().all(|j| j.owner != *owner));
    let taken = store
        .claim_jobs(now + 60_010, "jl-new", now + 120_010, 10)
        .await
        .unwrap();
    let taken: Vec<&Job> = taken.iter().filter(|j| j.owner == *owner).collect();
    assert_eq!(taken.len(), 6);
    assert!(
        taken
            .iter()
            .all(|j| j.attempts == 2 && j.started_at_ms == Some(now + 10))
    );
    // Only the lease holder finishes, once.
    let failed = JobOutcome::Failed(JobError {
        code: "timeout".into(),
        message: "too slow".into(),
    });
    assert!(
        !store
            .finish_job(
                &parsed("job_conformance_0"),
                "jl-0",
                &failed,
                None,
                now + 70_000
            )
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_job(
                &parsed("job_conformance_0"),
                "jl-new",
                &failed,
                None,
                now + 70_000
            )
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_job(
                &parsed("job_conformance_0"),
                "jl-new",
                &failed,
                None,
                now + 70_001
            )
            .await
            .unwrap()
    );
    let finished = store
        .job(&parsed("job_conformance_0"), owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, JobStatus::Failed);
    assert_eq!(finished.error.unwrap().code, "timeout");
    assert_eq!(finished.finished_at_ms, Some(now + 70_000));
    assert_eq!(finished.payment, None);
    // An `upto` job keeps its authorization, and what was settled under it with its outcome.
    let paid = |id| async move { store.job(&parsed(id), owner).await.unwrap().unwrap() };
    assert_eq!(
        paid("job_conformance_1").await.payment,
        Some(authorized.clone())
    );
    let settled = JobPayment {
        state: JobPaymentState::Settled {
            amount: "200000".into(),
            transaction: "0xabc".into(),
        },
        ..authorized.clone()
    };
    assert!(
        store
            .finish_job(
                &parsed("job_conformance_1"),
                "jl-new",
                &failed,
                Some(&settled),
                now + 70_000
            )
            .await
            .unwrap()
    );
    assert_eq!(paid("job_conformance_1").await.payment, Some(settled));
    // A finished job is never claimed again.
    let later = store
        .claim_jobs(now + 500_000, "jl-end", now + 600_000, 10)
        .await
        .unwrap();
    assert!(later.iter().all(|j| j.id != "job_conformance_0"));
}

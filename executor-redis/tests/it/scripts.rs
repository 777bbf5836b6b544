//! Lua-level tests: each script called directly with `EVAL`, for the paths
//! the conformance suite cannot reach through the `Storage` API: missing
//! tasks, stale fences, hand-made garbage, and a resent call (same nonce).

use executor_core::{Namespace, TaskState};
use fred::{
    interfaces::{HashesInterface, KeysInterface, LuaInterface, SortedSetsInterface},
    prelude::Pool,
    types::Value,
};

use crate::common;

struct Scripts {
    pool: Pool,
    base: String,
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn texts(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(|i| i.as_string().unwrap_or_default()).collect(),
        _ => Vec::new(),
    }
}

fn nth(v: &Value, i: usize) -> Value {
    match v {
        Value::Array(items) => items.get(i).cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

impl Scripts {
    async fn new() -> (Self, reliable_executor_redis::RedisStorage, Namespace) {
        let (storage, ns) = common::fresh().await;
        let base = format!("{{re:{ns}}}:");
        (Self { pool: storage.pool().clone(), base }, storage, ns)
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    /// EVAL of the prelude + `file` with the seven standard keys.
    async fn call(&self, source: &str, args: &[&str]) -> Result<Value, fred::error::Error> {
        let keys: Vec<String> = ["due", "lease", "dead", "done", "debounce", "wake", "counts"]
            .iter()
            .map(|k| self.key(k))
            .collect();
        let mut all = vec![self.base.clone(), "1".to_owned()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        self.pool.next().eval(format!("{}\n{source}", common::prelude()), keys, all).await
    }

    async fn submit(&self, id: &str, nonce: &str) -> Result<Value, fred::error::Error> {
        let src = include_str!("../../lua/submit.lua");
        self.call(src, &["1", id, "noop", "{}", "n", "0", "3", "", "", "", "p", "", "", "", nonce, "", ""])
            .await
    }

    /// `submit_one.lua` as the storage calls it: the due and wake keys, the
    /// key base and the twelve values joined by newlines, the payload.
    async fn submit_one(&self, values: &[&str]) -> Result<Value, fred::error::Error> {
        let keys = vec![self.key("due"), self.key("wake")];
        let packed =
            std::iter::once(self.base.as_str()).chain(values.iter().copied()).collect::<Vec<_>>().join("\n");
        self.pool
            .next()
            .eval(include_str!("../../lua/submit_one.lua"), keys, vec![packed, "{}".to_owned()])
            .await
    }

    async fn claim(&self, worker: &str, limit: &str, nonce: &str) -> Result<Value, fred::error::Error> {
        self.call(include_str!("../../lua/claim.lua"), &[worker, limit, "60000", nonce]).await
    }

    async fn finish(
        &self,
        id: &str,
        fence: &str,
        code: &str,
        nonce: &str,
    ) -> Result<String, fred::error::Error> {
        let v =
            self.call(include_str!("../../lua/finish.lua"), &["1", id, fence, code, "0", "", nonce]).await?;
        Ok(texts(&nth(&v, 1)).pop().unwrap_or_default())
    }

    async fn state(&self, id: &str) -> Result<Option<String>, fred::error::Error> {
        self.pool.next().hget(self.key(&format!("t:{id}")), "s").await
    }
}

#[tokio::test]
async fn submit_resent_with_the_same_nonce_is_not_a_duplicate() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let first = lua.submit("a", "n1").await?;
    let again = lua.submit("a", "n1").await?;
    let other = lua.submit("a", "n2").await?;
    assert_eq!(nth(&nth(&first, 1), 0), Value::Integer(1), "created under its own id: answered `1`");
    assert_eq!(texts(&nth(&nth(&again, 1), 0))[0], "created", "a resend answers like the first call");
    assert_eq!(texts(&nth(&nth(&other, 1), 0))[0], "duplicate");
    let due: i64 = lua.pool.next().zcard(lua.key("due")).await?;
    assert_eq!(due, 1, "the resend stored nothing twice");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

/// `submit_one.lua` takes its values joined by newlines: a value holding
/// one (none can, through the storage) makes the count wrong, and the call
/// is refused before anything is written; the right count stores the task
/// and answers with the server's clock alone.
#[tokio::test]
async fn submit_one_refuses_values_that_do_not_count_out() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let good = ["t1", "noop", "n", "0", "3", "", "", "", "p", "nonce-1", "", ""];
    let mut split = good;
    split[1] = "no\nop";
    let err = lua.submit_one(&split).await.err().ok_or("a 14th value was accepted")?;
    assert!(err.details().contains("wrong number of values"), "{err:?}");
    let err = lua.submit_one(&good[..11]).await.err().ok_or("12 values were accepted")?;
    assert!(err.details().contains("wrong number of values"), "{err:?}");
    let written: i64 =
        lua.pool.next().exists(vec![lua.key("t:t1"), lua.key("due"), lua.key("counts")]).await?;
    assert_eq!(written, 0, "nothing was written");
    let reply = lua.submit_one(&good).await?;
    let now = reply.as_i64().ok_or_else(|| format!("created is answered with the clock: {reply:?}"))?;
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    assert!(now.abs_diff(i64::try_from(since_epoch.as_millis())?) < 60_000, "{now}");
    let id = executor_core::TaskId::new("t1")?;
    let task = executor_core::storage::Storage::get(&storage, &ns, &id).await?.ok_or("stored")?;
    assert_eq!((task.name.as_str(), task.max_attempts), ("noop", 3));
    assert_eq!(
        outcome(&lua.submit_one(&good).await?),
        ["created", "t1"],
        "a resend answers as the first call"
    );
    let mut again = good;
    again[9] = "nonce-2";
    assert_eq!(outcome(&lua.submit_one(&again).await?), ["duplicate", "t1"]);
    again[8] = "i";
    assert_eq!(outcome(&lua.submit_one(&again).await?), ["existing", "t1"]);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

/// `submit_one.lua` takes well-formed values by one pattern and checks the
/// rest value by value: each bad value gets `submit.lua`'s answer and writes
/// nothing, and a value the pattern leaves to the slow checks but in range
/// (a 10-digit max_attempts, a 16-digit due time) is stored.
#[tokio::test]
async fn submit_one_checks_each_value_the_pattern_does_not_take() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let values = |id: &str, i: usize, v: &str| {
        let mut all = ["", "noop", "t", "1000", "3", "", "", "", "p", "nonce", "", ""].map(str::to_owned);
        all[0] = id.to_owned();
        all[i] = v.to_owned();
        all
    };
    let refused = [
        (3, "", "due"),
        (3, "12a", "due"),
        (3, "90071992547409920", "due"),
        (4, "", "max_attempts"),
        (4, "4294967296", "max_attempts"),
        (5, "1.5", "max_duration"),
        (6, "-1", "timeout"),
        (10, "a b", "queue"),
        (10, &"q".repeat(65), "queue"),
        (11, "10", "priority"),
    ];
    for (n, (i, v, what)) in refused.iter().enumerate() {
        let id = format!("bad-{n}");
        let all = values(&id, *i, v);
        let reply = lua.submit_one(&all.each_ref().map(String::as_str)).await?;
        assert_eq!(
            outcome(&reply),
            ["invalid", id.as_str(), &format!("{what} is not a whole number")],
            "{v:?}"
        );
    }
    let err = lua.submit_one(&values("bad-mode", 8, "d").each_ref().map(String::as_str)).await.err();
    assert!(err.is_some_and(|e| e.details().contains("only plain and idempotent")), "a debounce is refused");
    let mut keys: Vec<String> = (0..refused.len()).map(|n| lua.key(&format!("t:bad-{n}"))).collect();
    keys.extend([lua.key("t:bad-mode"), lua.key("due"), lua.key("counts"), lua.key("queues")]);
    let written: i64 = lua.pool.next().exists(keys).await?;
    assert_eq!(written, 0, "nothing was written");
    for (id, i, v) in [("long-attempts", 4, "4294967295"), ("long-due", 3, "9007199254740991")] {
        let reply = lua.submit_one(&values(id, i, v).each_ref().map(String::as_str)).await?;
        assert!(reply.as_i64().is_some(), "{id}: {reply:?}");
    }
    let id = executor_core::TaskId::new("long-attempts")?;
    let task = executor_core::storage::Storage::get(&storage, &ns, &id).await?.ok_or("stored")?;
    assert_eq!(task.max_attempts, u32::MAX);
    let due: Option<f64> = lua.pool.next().zscore(lua.key("due"), "long-due").await?;
    assert_eq!(due, Some(9_007_199_254_740_991.0));
    common::cleanup(&storage, &ns).await;
    Ok(())
}

/// A lone submit (`submit_one.lua`) writes, field for field and in the same
/// order, the record and index entry a batch (`submit.lua`) writes for the
/// same task, whatever its options: the claim, the admin pages and the
/// other scripts read one shape.
#[tokio::test]
async fn a_lone_submit_stores_what_a_batch_stores() -> executor_core::Result<()> {
    use std::time::Duration;

    use executor_core::{
        QueueName, RetryPolicy, Timestamp,
        storage::{Due, NewTask, Storage, SubmitMode},
        testing,
    };
    let (lua, storage, ns) = Scripts::new().await;
    /// How a variant differs from `testing::new_task`.
    type Shape = fn(&mut NewTask);
    let variants: [(&str, Shape); 8] = [
        ("plain", |_| {}),
        ("idempotent", |t| t.mode = SubmitMode::Idempotent),
        ("delayed", |t| t.due = Due::After(Duration::from_secs(90))),
        ("at", |t| t.due = Due::At(Timestamp::from_millis(4_102_444_800_000))),
        ("options", |t| {
            t.max_duration = Some(Duration::from_secs(3600));
            t.timeout = Some(Duration::from_secs(60));
            t.retry = Some(RetryPolicy::fixed(Duration::from_secs(5)));
            t.max_attempts = 10_001;
        }),
        ("queue", |t| t.queue = QueueName::new("reports").unwrap_or_default()),
        ("priority", |t| t.priority = 7),
        ("both", |t| {
            t.queue = QueueName::new("reports").unwrap_or_default();
            t.priority = 2;
        }),
    ];
    // HGETALL from a script: a flat list in the hash's own order.
    let record = |id: String| {
        let redis = lua.pool.next().clone();
        let key = lua.key(&format!("t:{id}"));
        async move {
            let flat: Vec<String> = redis.eval("return redis.call('HGETALL', KEYS[1])", key, ()).await?;
            let pairs = flat.chunks(2).map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()));
            Ok::<_, fred::error::Error>(pairs.collect::<Vec<(String, String)>>())
        }
    };
    for (name, shape) in &variants {
        let task = |id: String| {
            let mut t = testing::new_task(&id);
            shape(&mut t);
            t
        };
        let (lone, batch) = (format!("lone-{name}"), format!("batch-{name}"));
        storage.submit(&ns, task(lone.clone())).await?;
        let out = storage.submit_many(&ns, vec![task(batch.clone()), task(format!("filler-{name}"))]).await?;
        assert!(out.iter().all(Result::is_ok), "{name}: {out:?}");
        let (a, b) = (
            record(lone.clone()).await.map_err(storage_error)?,
            record(batch.clone()).await.map_err(storage_error)?,
        );
        let fields = |r: &[(String, String)]| r.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>();
        assert_eq!(fields(&a), fields(&b), "{name}: the same fields in the same order");
        let value = |r: &[(String, String)], f: &str| {
            r.iter().find(|(k, _)| k == f).map(|(_, v)| v.parse::<i64>().unwrap_or(-1)).unwrap_or(0)
        };
        for ((fa, va), (_, vb)) in a.iter().zip(&b) {
            match fa.as_str() {
                // The clock and the nonce differ; what is relative to the
                // clock is compared relative to it.
                "c" | "h" => {}
                "d" | "x" if !matches!(*name, "at") => {
                    assert_eq!(
                        value(&a, fa) - value(&a, "c"),
                        value(&b, fa) - value(&b, "c"),
                        "{name}: {fa}"
                    );
                }
                _ => assert_eq!(va, vb, "{name}: field {fa}"),
            }
        }
        let lone_task = storage.get(&ns, &executor_core::TaskId::new(&lone)?).await?;
        let batch_task = storage.get(&ns, &executor_core::TaskId::new(&batch)?).await?;
        let (lone_task, batch_task) =
            (lone_task.ok_or_else(|| gone(&lone))?, batch_task.ok_or_else(|| gone(&batch))?);
        assert_eq!((lone_task.queue, lone_task.priority), (batch_task.queue, batch_task.priority), "{name}");
    }
    let counts = storage.counts(&ns).await?;
    assert_eq!(counts.get(executor_core::TaskState::Created), 3 * variants.len() as u64);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

fn storage_error(e: fred::error::Error) -> executor_core::Error {
    executor_core::Error::storage(e.to_string(), false)
}

fn gone(id: &str) -> executor_core::Error {
    executor_core::Error::invalid("task", format!("{id} is not stored"))
}

/// The answer for the one task of a submit reply.
fn outcome(reply: &Value) -> Vec<String> {
    texts(&nth(&nth(reply, 1), 0))
}

/// Issue 12, item 6: finish, cancel and requeue write their own nonce; the
/// submit's nonce is kept apart (`h`), so a submit resent after a store
/// restart gets its first answer whatever happened to the task since.
#[tokio::test]
async fn submit_resent_after_finish_cancel_or_requeue_still_answers_created() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let cancel = include_str!("../../lua/cancel.lua");
    let requeue = include_str!("../../lua/requeue.lua");
    let outcome = |v: &Value| texts(&nth(&nth(v, 1), 0)).first().cloned().unwrap_or_default();

    lua.submit("done", "s1").await?;
    lua.claim("w1", "1", "c1").await?;
    assert_eq!(lua.finish("done", "1", "C", "f1").await?, "COMPLETED");
    assert_eq!(outcome(&lua.submit("done", "s1").await?), "created", "resent after finish");

    lua.submit("gone", "s2").await?;
    assert_eq!(texts(&lua.call(cancel, &["gone", "x1"]).await?), ["cancelled"]);
    assert_eq!(outcome(&lua.submit("gone", "s2").await?), "created", "resent after cancel");

    lua.submit("back", "s3").await?;
    lua.claim("w1", "1", "c2").await?;
    assert_eq!(lua.finish("back", "1", "F", "f2").await?, "FAILED");
    assert_eq!(texts(&lua.call(requeue, &["back", "r1"]).await?), ["ok"]);
    assert_eq!(outcome(&lua.submit("back", "s3").await?), "created", "resent after requeue");

    assert_eq!(outcome(&lua.submit("done", "s9").await?), "duplicate", "another call is a duplicate");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn claim_resent_returns_the_same_tasks_and_skips_garbage() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    for id in ["a", "b", "c"] {
        lua.submit(id, "").await?;
    }
    // A due entry without a task hash, and a task hand-edited into nonsense.
    let _: () = lua.pool.next().zadd(lua.key("due"), None, None, false, false, (0.0, "ghost")).await?;
    let _: () = lua.pool.next().hset(lua.key("t:c"), ("a", "many")).await?;
    lua.submit("d", "").await?;
    let first = lua.claim("w1", "4", "n1").await?;
    let again = lua.claim("w1", "4", "n1").await?;
    let ids = |v: &Value| -> Vec<String> {
        match nth(v, 2) {
            Value::Array(items) => items.iter().map(|e| texts(e)[0].clone()).collect(),
            _ => Vec::new(),
        }
    };
    assert_eq!(ids(&first), ids(&again), "a resent claim returns what the first one claimed");
    assert_eq!(ids(&first), ["a", "b"], "ghost skipped, corrupt task dead-lettered");
    assert_eq!(lua.state("c").await?.as_deref(), Some("ERROR"));
    let reason: Option<String> = lua.pool.next().hget(lua.key("t:c"), "e").await?;
    assert!(reason.unwrap_or_default().contains("corrupt"), "the reason says why");
    let ghost: Option<f64> = lua.pool.next().zscore(lua.key("due"), "ghost").await?;
    assert_eq!(ghost, None, "the ghost entry is gone");
    let next = lua.claim("w1", "4", "n2").await?;
    assert_eq!(ids(&next), ["d"], "a new nonce claims the rest");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

/// The lease index is a skiplist from its first lease (`lua/common/02_keys.lua`,
/// `add_leases`): Redis would keep a set this small as a
/// listpack, where each added lease scans the whole set. The member that
/// converts it is never seen, and the key still goes with its last lease.
#[tokio::test]
async fn the_lease_index_is_a_skiplist_and_holds_only_leases() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    for id in ["a", "b", "c"] {
        lua.submit(id, "").await?;
    }
    let claimed = lua.claim("w1", "10", "n1").await?;
    let entries: Vec<Vec<String>> = match nth(&claimed, 2) {
        Value::Array(items) => items.iter().map(texts).collect(),
        _ => Vec::new(),
    };
    assert_eq!(entries.len(), 3, "three tasks claimed: {claimed:?}");
    let encoding: Option<String> = lua
        .pool
        .next()
        .eval("return redis.call('OBJECT', 'ENCODING', KEYS[1])", lua.key("lease"), ())
        .await?;
    assert_eq!(encoding.as_deref(), Some("skiplist"));
    let leased: Vec<String> =
        lua.pool.next().zrange(lua.key("lease"), 0, -1, None, false, None, false).await?;
    assert_eq!(leased, ["a", "b", "c"], "the lease index holds the three leases and nothing else");
    for e in &entries {
        assert_eq!(lua.finish(&e[0], &e[6], "C", "n").await?, "COMPLETED");
    }
    let exists: i64 = lua.pool.next().exists(lua.key("lease")).await?;
    assert_eq!(exists, 0, "the key goes with its last lease");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn finish_refuses_missing_and_stale_and_answers_a_resend() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    assert_eq!(lua.finish("nobody", "1", "C", "x").await?, "STALE", "missing task");
    lua.submit("a", "").await?;
    lua.claim("w1", "1", "c1").await?;
    assert_eq!(lua.finish("a", "7", "C", "f0").await?, "STALE", "wrong fence");
    assert_eq!(lua.state("a").await?.as_deref(), Some("RUNNING"), "a stale finish changes nothing");
    assert_eq!(lua.finish("a", "1", "R", "f1").await?, "PENDING");
    assert_eq!(lua.finish("a", "1", "R", "f1").await?, "PENDING", "a resend answers like the first call");
    assert_eq!(lua.finish("a", "1", "R", "f2").await?, "STALE", "a second finish is refused");
    assert_eq!(lua.finish("a", "1", "Q", "f3").await?, "STALE", "an unknown outcome changes nothing");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn heartbeat_reports_missing_and_stale_as_lost() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    lua.submit("a", "").await?;
    lua.claim("w1", "1", "c1").await?;
    let v =
        lua.call(include_str!("../../lua/heartbeat.lua"), &["1000", "a", "1", "b", "1", "a", "2"]).await?;
    assert_eq!(texts(&nth(&v, 0)), vec!["b".to_owned(), "a".to_owned()], "missing b and stale a are lost");
    assert!(texts(&nth(&v, 1)).is_empty());
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn cancel_and_requeue_missing_illegal_and_resent() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let cancel = include_str!("../../lua/cancel.lua");
    let requeue = include_str!("../../lua/requeue.lua");
    assert_eq!(texts(&lua.call(cancel, &["nobody", "n"]).await?), ["missing"]);
    assert_eq!(texts(&lua.call(requeue, &["nobody", "n"]).await?), ["missing"]);
    lua.submit("a", "").await?;
    assert_eq!(texts(&lua.call(requeue, &["a", "r0"]).await?), ["illegal", "CREATED"]);
    assert_eq!(texts(&lua.call(cancel, &["a", "n1"]).await?), ["cancelled"]);
    assert_eq!(texts(&lua.call(cancel, &["a", "n1"]).await?), ["cancelled"], "resend");
    assert_eq!(texts(&lua.call(cancel, &["a", "n2"]).await?), ["illegal", "CANCELLED"]);
    lua.submit("b", "").await?;
    lua.claim("w1", "1", "c1").await?;
    assert_eq!(lua.finish("b", "1", "F", "f1").await?, "FAILED");
    assert_eq!(texts(&lua.call(requeue, &["b", "r1"]).await?), ["ok"]);
    assert_eq!(texts(&lua.call(requeue, &["b", "r1"]).await?), ["ok"], "resend");
    assert_eq!(texts(&lua.call(requeue, &["b", "r2"]).await?), ["illegal", "PENDING"]);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn reap_and_trim_skip_missing_tasks() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let c = lua.pool.next();
    let _: () = c.zadd(lua.key("lease"), None, None, false, false, (1.0, "gone")).await?;
    let _: () = c.zadd(lua.key("done"), None, None, false, false, (1.0, "gone-too")).await?;
    let v = lua.call(include_str!("../../lua/reap.lua"), &["10"]).await?;
    assert!((0..3).all(|i| texts(&nth(&v, i)).is_empty()), "nothing reported for a missing task: {v:?}");
    let left: i64 = c.zcard(lua.key("lease")).await?;
    assert_eq!(left, 0, "the stale lease entry is removed");
    let v = lua.call(include_str!("../../lua/trim.lua"), &["0", "", "10"]).await?;
    assert_eq!(v.as_u64(), Some(1));
    let exists: i64 = c.exists(lua.key("done")).await?;
    assert_eq!(exists, 0);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn leader_release_with_a_stale_token_keeps_the_term() -> TestResult {
    let (lua, storage, ns) = Scripts::new().await;
    let keys = vec![lua.key("leader"), lua.key("leader:seq")];
    let src = |f: &str| format!("{}\n{f}", common::prelude());
    let c = lua.pool.next();
    let term: Value =
        c.eval(src(include_str!("../../lua/leader_acquire.lua")), keys.clone(), vec!["w1", "60000"]).await?;
    assert_eq!(texts(&term)[1], "1");
    let freed: i64 =
        c.eval(src(include_str!("../../lua/leader_release.lua")), keys.clone(), vec!["0"]).await?;
    assert_eq!(freed, 0, "a stale token frees nothing");
    let other: Value =
        c.eval(src(include_str!("../../lua/leader_acquire.lua")), keys.clone(), vec!["w2", "60000"]).await?;
    assert_eq!(other, Value::Null, "w1 still leads");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[test]
fn every_state_name_in_the_scripts_is_a_task_state() {
    for name in ["CREATED", "PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "ERROR", "CANCELLED"] {
        assert!(name.parse::<TaskState>().is_ok(), "{name}");
        assert!(common::prelude().contains(name), "the prelude knows {name}");
    }
}

/// Every attempt's future holds the store's finish future, and a caller's
/// the submit future: the group commit's leading call (which sends the
/// batch from its caller's future) and the send-alone branch are boxed, so
/// both stay small. Unboxed, the finish future was about 35 KB, copied
/// whole on every attempt's spawn (an eighth of the executor's CPU at
/// concurrency 64).
#[tokio::test]
async fn the_finish_and_submit_futures_stay_small() -> executor_core::Result<()> {
    use executor_core::{
        TaskId, WorkerId,
        storage::{Finish, Lease, Storage},
    };
    let (storage, ns) = common::fresh().await;
    let lease = Lease::new(TaskId::new("small")?, 1, WorkerId::new("w")?);
    let finish = storage.finish(&ns, &lease, Finish::Completed);
    let submit = storage.submit(&ns, executor_core::testing::new_task("small"));
    let (f, s) = (std::mem::size_of_val(&finish), std::mem::size_of_val(&submit));
    assert!(f <= 2048, "the finish future is {f} bytes");
    assert!(s <= 2048, "the submit future is {s} bytes");
    Ok(())
}

/// A claim reads fewer fields than `get` (`lua/common/06_records.lua`, `claim_record`) and
/// places them by hand: the record it hands out must be the record as
/// stored. A task with every optional field set (deadline, timeout, retry
/// policy, debounce key, queue, priority, and a last error from a retry)
/// is claimed twice; the second claim's record equals `get`'s after it,
/// the attempt log aside (a claim never returns it).
#[tokio::test]
async fn a_claimed_record_is_the_stored_record() -> executor_core::Result<()> {
    use std::time::Duration;

    use executor_core::{
        QueueName, RetryPolicy, WorkerId,
        queue::ClaimPlan,
        storage::{Debounce, Finish, Storage, SubmitMode},
        testing,
    };
    let (storage, ns) = common::fresh().await;
    let mut task = testing::new_task("all-fields");
    task.max_duration = Some(Duration::from_secs(3600));
    task.timeout = Some(Duration::from_secs(60));
    task.retry = Some(RetryPolicy::fixed(Duration::from_secs(5)));
    task.mode = SubmitMode::Debounce(Debounce::new("all-fields-key", Duration::from_millis(1)));
    task.queue = QueueName::new("reports")?;
    task.priority = 3;
    storage.submit(&ns, task).await?;
    let plan = ClaimPlan::single(QueueName::new("reports")?, 10);
    let worker = WorkerId::generate();
    let claim = || async {
        storage.claim(&ns, &worker, &plan, Duration::from_secs(60)).await.ok().and_then(|mut c| c.pop())
    };
    let first = testing::wait_for(Duration::from_secs(5), "the first claim", claim).await;
    let lease = first.lease().ok_or_else(|| executor_core::Error::invalid("lease", "none"))?;
    storage.finish(&ns, &lease, Finish::Retry { delay: Duration::ZERO, error: "boom".to_owned() }).await?;
    let claimed = testing::wait_for(Duration::from_secs(5), "the second claim", claim).await;
    let mut stored =
        storage.get(&ns, &claimed.id).await?.ok_or_else(|| executor_core::Error::invalid("get", "gone"))?;
    assert_eq!(stored.attempt_log.len(), 1, "the retried attempt is logged: {stored:?}");
    stored.attempt_log.clear();
    assert_eq!(claimed, stored);
    assert_eq!(claimed.attempts, 2);
    assert_eq!(claimed.last_error.as_deref(), Some("boom"));
    assert_eq!(claimed.debounce_key.as_deref(), Some("all-fields-key"));
    assert_eq!((claimed.queue.as_str(), claimed.priority), ("reports", 3));
    assert!(claimed.deadline.is_some() && claimed.timeout.is_some() && claimed.retry.is_some());
    assert_eq!(claimed.finished_at, None);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

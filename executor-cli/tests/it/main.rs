//! End to end: the `rex` binary against Redis, MariaDB and the memory
//! store, its effects checked through the library.

use std::time::Duration;

use assert_cmd::Command;
use executor_any::AnyStorage;
use executor_core::{
    Client, MemoryStorage, Namespace, QueueName, TaskId, TaskState, WorkerId,
    queue::ClaimPlan,
    schedule::Schedule,
    storage::{Finish, Storage},
    testing::{new_task, unique_namespace},
};
use serde_json::Value;
use tokio::runtime::Runtime;

/// A namespace of its own on a store, purged when dropped (also when the
/// test panics).
struct Store {
    url: String,
    storage: AnyStorage,
    client: Client<AnyStorage>,
    rt: Runtime,
}

impl Store {
    /// Connects to `url`, failing with `how_to_start` when the server does
    /// not answer: a backend test never skips silently.
    fn connect(url: &str, how_to_start: &str) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let storage = rt
            .block_on(AnyStorage::connect(url))
            .unwrap_or_else(|e| panic!("the store at {url} does not answer: {e}\n{how_to_start}"));
        let client = Client::without_name_check(storage.clone(), unique_namespace("cli"));
        Self { url: url.to_owned(), storage, client, rt }
    }

    fn ns(&self) -> &Namespace {
        self.client.namespace()
    }

    /// `rex` on this store and namespace, through the environment.
    fn rex(&self, args: &[&str]) -> Output {
        let mut cmd = rex();
        cmd.env("REX_URL", &self.url).env("REX_NAMESPACE", self.ns().as_str()).args(args);
        run(cmd)
    }

    /// Submits a task `id` of handler `name`.
    fn submit(&self, id: &str, name: &str) -> TaskId {
        self.submit_to(id, name, None, 0)
    }

    /// Submits a task `id` of handler `name` to `queue` (the default
    /// queue if `None`) with `priority`.
    fn submit_to(&self, id: &str, name: &str, queue: Option<&str>, priority: u8) -> TaskId {
        let mut task = new_task(id);
        task.name = name.to_owned();
        if let Some(q) = queue {
            task.queue = QueueName::new(q).unwrap_or_else(|e| panic!("{e}"));
        }
        task.priority = priority;
        task.payload = format!(r#"{{"customer":"{id}","n":7}}"#).into_bytes();
        self.rt.block_on(self.storage.submit(self.ns(), task)).unwrap_or_else(|e| panic!("submit {id}: {e}"));
        TaskId::new(id).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Submits a task `id` of handler `name` due in an hour.
    fn submit_later(&self, id: &str, name: &str) -> TaskId {
        let mut task = new_task(id);
        task.name = name.to_owned();
        task.due = executor_core::storage::Due::After(Duration::from_secs(3_600));
        self.rt.block_on(self.storage.submit(self.ns(), task)).unwrap_or_else(|e| panic!("submit {id}: {e}"));
        TaskId::new(id).unwrap_or_else(|e| panic!("{e}"))
    }

    fn due_at(&self, id: &TaskId) -> Option<executor_core::Timestamp> {
        self.rt
            .block_on(self.client.status(id))
            .unwrap_or_else(|e| panic!("status {id}: {e}"))
            .map(|r| r.due_at)
    }

    /// Claims the one due task and finishes it with `finish`.
    fn finish_next(&self, finish: Finish) {
        let worker = WorkerId::generate();
        let claimed = self
            .rt
            .block_on(self.storage.claim(
                self.ns(),
                &worker,
                &ClaimPlan::default_queue(1),
                Duration::from_secs(60),
            ))
            .unwrap_or_else(|e| panic!("claim: {e}"));
        let lease = claimed.first().and_then(|r| r.lease()).unwrap_or_else(|| panic!("nothing claimed"));
        self.rt
            .block_on(self.storage.finish(self.ns(), &lease, finish))
            .unwrap_or_else(|e| panic!("finish: {e}"));
    }

    fn state(&self, id: &TaskId) -> Option<TaskState> {
        self.rt
            .block_on(self.client.status(id))
            .unwrap_or_else(|e| panic!("status {id}: {e}"))
            .map(|r| r.state)
    }

    fn count(&self, state: TaskState) -> u64 {
        self.rt.block_on(self.client.counts()).unwrap_or_else(|e| panic!("counts: {e}")).get(state)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(e) = self.rt.block_on(self.storage.purge(self.client.namespace())) {
            eprintln!("cleanup of {} failed: {e}", self.client.namespace());
        }
        // A MySQL pool's connections close through the runtime: drop the
        // store inside it, leaving memory stores in its place.
        let _inside = self.rt.enter();
        let placeholder = AnyStorage::from(MemoryStorage::new());
        drop(std::mem::replace(&mut self.storage, placeholder.clone()));
        let ns = self.client.namespace().clone();
        drop(std::mem::replace(&mut self.client, Client::without_name_check(placeholder, ns)));
    }
}

/// What a run of `rex` left.
struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    /// Exit 0, nothing on stderr; the stdout.
    #[track_caller]
    fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "rex failed: {}", self.stderr);
        assert_eq!(self.stderr, "", "rex succeeded but wrote to stderr");
        &self.stdout
    }

    /// Stdout as JSON, after [`Output::ok`].
    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// Exit `code` and exactly one line on stderr, `rex: ...`; that line.
    #[track_caller]
    fn fails(&self, code: i32) -> &str {
        assert_eq!(self.code, Some(code), "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "stderr must be one line: {:?}", self.stderr);
        assert!(lines[0].starts_with("rex: "), "{:?}", lines[0]);
        lines[0]
    }
}

/// The `rex` binary with no store settings from the outer environment.
fn rex() -> Command {
    let mut cmd = Command::cargo_bin("rex").unwrap_or_else(|e| panic!("rex binary: {e}"));
    cmd.env_remove("REX_URL").env_remove("REX_NAMESPACE").timeout(Duration::from_secs(60));
    cmd
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("running rex: {e}"));
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|t| t["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    ids
}

/// Every command against one store, checked through the library.
fn tour(store: &Store) {
    // Dead letters first: claims take whichever task is due.
    for id in ["f1", "f2", "f3"] {
        store.submit(id, if id == "f3" { "charge" } else { "sync_crm" });
    }
    // f1, due first, fails once and is retried (due now: after f2 and f3).
    store.finish_next(Finish::Retry { delay: Duration::ZERO, error: "CRM timed out".to_owned() });
    for _ in 0..3 {
        store.finish_next(Finish::Failed { error: "CRM said 503".to_owned() });
    }
    let done = store.submit("c1", "sync_crm");
    store.finish_next(Finish::Completed);
    let waiting = store.submit("p1", "sync_crm");
    let doomed = store.submit("p2", "sync_crm");

    let counts = store.rex(&["counts", "--json"]).json();
    assert_eq!((counts["FAILED"].as_u64(), counts["COMPLETED"].as_u64()), (Some(3), Some(1)), "{counts}");
    assert_eq!((counts["CREATED"].as_u64(), counts["RUNNING"].as_u64()), (Some(2), Some(0)), "{counts}");
    assert!(store.rex(&["counts"]).ok().contains("FAILED     3"));

    let failed = store.rex(&["list", "--state", "failed", "--json"]).json();
    assert_eq!(ids(&failed), ["f1", "f2", "f3"]);
    let named = store.rex(&["list", "--state", "FAILED", "--name", "sync_crm", "--json"]).json();
    assert_eq!(ids(&named), ["f1", "f2"]);
    let limited = store.rex(&["list", "--state", "failed", "--limit", "2"]);
    assert!(limited.ok().contains("there may be more FAILED tasks"), "{}", limited.stdout);
    assert_eq!(limited.ok().lines().filter(|l| l.starts_with('f')).count(), 2);

    let shown = store.rex(&["show", "f1"]);
    for line in ["state            FAILED", "last_error       CRM said 503", "\"customer\": \"f1\""] {
        assert!(shown.ok().contains(line), "no {line:?} in:\n{}", shown.stdout);
    }
    // The attempts table: the retried attempt from the log, then the one
    // that dead-lettered the task.
    let text = shown.ok();
    let table = text.split("attempts:").nth(1).unwrap_or_else(|| panic!("no attempts table in:\n{text}"));
    let rows: Vec<&str> = table.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(rows.len(), 3, "a header and two attempts:\n{table}");
    assert!(rows[0].starts_with('#') && rows[0].contains("OUTCOME"), "{table}");
    assert!(
        rows[1].starts_with("1 ") && rows[1].contains("failed") && rows[1].ends_with("CRM timed out"),
        "{table}"
    );
    assert!(
        rows[2].starts_with("2 ") && rows[2].contains("dead") && rows[2].ends_with("CRM said 503"),
        "{table}"
    );
    let shown = store.rex(&["show", "f1", "--json"]).json();
    assert_eq!((shown["state"].as_str(), shown["payload"]["n"].as_u64()), (Some("FAILED"), Some(7)));
    assert_eq!(
        (shown["attempt_log"][0]["outcome"].as_str(), shown["attempt_log"][0]["error"].as_str()),
        (Some("failed"), Some("CRM timed out")),
        "{shown}"
    );
    let all = shown["all_attempts"].as_array().map(|a| a.len());
    assert_eq!((all, shown["all_attempts"][1]["outcome"].as_str()), (Some(2), Some("dead")), "{shown}");
    store.rex(&["show", "nope"]).fails(1);

    // Run now: a task due in an hour becomes due now; a finished one is
    // refused, an unknown one is not found.
    let later = store.submit_later("later", "sync_crm");
    let hour_away = store.due_at(&later);
    assert!(store.rex(&["run-now", "later"]).ok().contains("later is due now"));
    let now_due = store.due_at(&later);
    assert!(now_due.is_some() && now_due < hour_away, "{now_due:?} not before {hour_away:?}");
    assert_eq!(store.state(&later), Some(TaskState::Created));
    assert_eq!(store.rex(&["run-now", "later", "--json"]).json()["id"].as_str(), Some("later"));
    store.rex(&["run-now", "c1"]).fails(2);
    store.rex(&["run-now", "nope"]).fails(1);
    store.rex(&["delete", "later"]).ok();

    assert!(store.rex(&["cancel", "p1"]).ok().contains("cancelled p1"));
    assert_eq!(store.state(&waiting), Some(TaskState::Cancelled));
    store.rex(&["cancel", "p1"]).fails(2);
    store.rex(&["delete", "p2"]).ok();
    assert_eq!(store.state(&doomed), None);
    store.rex(&["delete", "p2"]).fails(1);

    let requeued = store.rex(&["requeue", "--all-dead", "--json"]).json();
    assert_eq!(requeued["requeued"].as_array().map(Vec::len), Some(3), "{requeued}");
    assert_eq!((store.count(TaskState::Failed), store.count(TaskState::Pending)), (0, 3));
    store.rex(&["requeue", "f1"]).fails(2);

    let mut declined = rex();
    declined.env("REX_URL", &store.url).env("REX_NAMESPACE", store.ns().as_str()).write_stdin("n\n");
    declined.args(["purge", "--state", "completed", "--older-than", "0s"]);
    let declined = run(declined);
    assert_eq!(declined.code, Some(2), "{}", declined.stderr);
    assert!(declined.stderr.starts_with("Delete 1 tasks? [y/N] "), "{:?}", declined.stderr);
    assert_eq!(store.state(&done), Some(TaskState::Completed));
    store.rex(&["purge", "--state", "completed", "--older-than", "7d", "--yes"]).ok();
    assert_eq!(store.state(&done), Some(TaskState::Completed), "finished just now: not older than 7d");
    let purged =
        store.rex(&["purge", "--state", "completed", "--older-than", "0s", "--yes", "--json"]).json();
    assert_eq!(purged["deleted"].as_u64(), Some(1));
    assert_eq!(store.state(&done), None);

    let nightly = Schedule::new("nightly", "report", "0 3 * * *", "Europe/Berlin")
        .unwrap_or_else(|e| panic!("schedule: {e}"));
    store.rt.block_on(store.client.schedules().put(nightly)).unwrap_or_else(|e| panic!("put schedule: {e}"));
    let listed = store.rex(&["schedules", "--json"]).json();
    assert_eq!(listed[0]["name"].as_str(), Some("nightly"), "{listed}");
    assert_eq!(
        (listed[0]["timezone"].as_str(), listed[0]["paused"].as_bool()),
        (Some("Europe/Berlin"), Some(false))
    );
    assert!(listed[0]["next_fire"].as_u64().is_some(), "{listed}");
    assert!(store.rex(&["schedules"]).ok().contains("0 3 * * *"));
    store.rex(&["schedules", "pause", "nightly"]).ok();
    assert_eq!(store.rex(&["schedules", "--json"]).json()[0]["paused"].as_bool(), Some(true));
    store.rex(&["schedules", "resume", "nightly"]).ok();
    assert_eq!(store.rex(&["schedules", "--json"]).json()[0]["paused"].as_bool(), Some(false));
    store.rex(&["schedules", "remove", "nightly"]).ok();
    assert_eq!(store.rex(&["schedules", "--json"]).json(), Value::Array(vec![]));
    store.rex(&["schedules", "remove", "nightly"]).fails(1);

    let watched = store.rex(&["watch", "--iterations", "2", "--interval", "100ms"]);
    let lines: Vec<&str> = watched.ok().lines().collect();
    assert_eq!(lines.len(), 2, "{}", watched.stdout);
    assert!(lines[0].contains("PENDING=3 ") && lines[1].contains("PENDING=3 (+0.0/s)"), "{lines:?}");
    assert!(!watched.stdout.contains('\x1b'), "no ANSI codes when stdout is not a terminal");
}

/// `rex queues` and the queue and priority of `rex list` / `rex show`,
/// against one store, checked through the library.
fn queue_tour(store: &Store) {
    for (id, priority) in [("mail-1", 5), ("mail-2", 0)] {
        store.submit_to(id, "send_mail", Some("emails"), priority);
    }
    store.submit("order-1", "charge");

    let listed = store.rex(&["list", "--state", "created", "--json"]).json();
    let mail = listed
        .as_array()
        .and_then(|l| l.iter().find(|t| t["id"] == "mail-1"))
        .unwrap_or_else(|| panic!("no mail-1 in {listed}"));
    assert_eq!((mail["queue"].as_str(), mail["priority"].as_u64()), (Some("emails"), Some(5)), "{mail}");
    let table = store.rex(&["list", "--state", "created"]);
    assert!(table.ok().starts_with("ID       NAME       QUEUE    PRIORITY  ATTEMPTS"), "{}", table.stdout);
    assert!(table.ok().lines().any(|l| l.starts_with("mail-1   send_mail  emails   5 ")), "{}", table.stdout);
    let shown = store.rex(&["show", "mail-1"]);
    for line in ["queue            emails", "priority         5"] {
        assert!(shown.ok().contains(line), "no {line:?} in:\n{}", shown.stdout);
    }
    let shown = store.rex(&["show", "order-1", "--json"]).json();
    assert_eq!((shown["queue"].as_str(), shown["priority"].as_u64()), (Some("default"), Some(0)));

    let queues = store.rex(&["queues", "--json"]).json();
    let row = |queues: &Value, name: &str| {
        queues
            .as_array()
            .and_then(|l| l.iter().find(|q| q["queue"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {queues}"))
    };
    let emails = row(&queues, "emails");
    assert_eq!((emails["waiting"].as_u64(), emails["due"].as_u64()), (Some(2), Some(2)), "{emails}");
    assert_eq!(emails["paused"].as_bool(), Some(false), "{emails}");
    assert!(emails["oldest_due"].as_u64().is_some() && emails["latency_ms"].as_u64().is_some(), "{emails}");
    assert_eq!(row(&queues, "default")["waiting"].as_u64(), Some(1));
    let table = store.rex(&["queues"]);
    assert!(
        table.ok().starts_with("QUEUE    WAITING  DUE  LATENCY  PAUSED  RUNNING  THROTTLED  LIMITS\n"),
        "{}",
        table.stdout
    );
    assert!(
        table.ok().lines().any(|l| l.starts_with("emails   2        2    ")
            && l.split_whitespace().skip(4).collect::<Vec<_>>() == ["no", "0", "0", "-"]),
        "{}",
        table.stdout
    );
    assert_eq!(emails["running"].as_u64(), Some(0), "{emails}");
    assert_eq!(emails["limits"], serde_json::json!({"concurrency": null, "rate": null}), "{emails}");

    assert_eq!(store.rex(&["queues", "pause", "emails"]).ok(), "paused queue emails\n");
    assert_eq!(row(&store.rex(&["queues", "--json"]).json(), "emails")["paused"].as_bool(), Some(true));
    let paused = store.rt.block_on(store.client.queues()).unwrap_or_else(|e| panic!("queues: {e}"));
    assert!(paused.iter().any(|q| q.queue.as_str() == "emails" && q.paused), "{paused:?}");
    let resumed = store.rex(&["queues", "resume", "emails", "--json"]).json();
    assert_eq!(resumed, serde_json::json!({"queue": "emails", "resumed": true}));
    let listed = store.rt.block_on(store.client.queues()).unwrap_or_else(|e| panic!("queues: {e}"));
    assert!(listed.iter().all(|q| !q.paused), "{listed:?}");
    assert!(store.rex(&["queues", "pause", "e mails"]).fails(2).contains("bad queue name"));

    // Limits: set through rex, seen by the client and in the table, cleared.
    let set = store.rex(&["queues", "limit", "emails", "--concurrency", "4", "--rate", "50/s"]);
    assert_eq!(set.ok(), "limited queue emails: c=4 r=50/1s\n");
    let limited = store.rt.block_on(store.client.queues()).unwrap_or_else(|e| panic!("queues: {e}"));
    let emails =
        limited.iter().find(|q| q.queue.as_str() == "emails").unwrap_or_else(|| panic!("{limited:?}"));
    assert_eq!(emails.limits.concurrency, Some(4), "{emails:?}");
    assert_eq!(emails.limits.rate.map(|r| (r.starts, r.burst)), Some((50, 50)), "{emails:?}");
    assert!(
        store.rex(&["queues"]).ok().lines().any(|l| l.starts_with("emails ") && l.ends_with("c=4 r=50/1s"))
    );
    assert_eq!(
        store.rex(&["queues", "limit", "emails", "--clear"]).ok(),
        "cleared the limits of queue emails\n"
    );
    let cleared = store.rt.block_on(store.client.queues()).unwrap_or_else(|e| panic!("queues: {e}"));
    assert!(cleared.iter().all(|q| q.limits.is_none()), "{cleared:?}");
}

#[test]
fn redis() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let store = Store::connect(
        &url,
        "Start Redis with `redis-server --port 6379 --save '' --appendonly no --daemonize yes`, or run \
         `scripts/test.sh`; point REDIS_URL elsewhere to use another server.",
    );
    tour(&store);
}

#[test]
fn mariadb() {
    let url = std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let store = Store::connect(
        &url,
        "Start MariaDB (`service mariadb start`) with a `test` database root can reach without a \
         password, or run `scripts/test.sh`; point MYSQL_URL elsewhere to use another server.",
    );
    tour(&store);
}

#[test]
fn postgres() {
    let url = std::env::var("POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let store = Store::connect(
        &url,
        "Start PostgreSQL (`source scripts/services.sh && ensure_postgres`) with a `test` database \
         user postgres can reach without a password, or run `scripts/test.sh`; point POSTGRES_URL elsewhere.",
    );
    tour(&store);
}

#[test]
fn postgres_queues() {
    let url = std::env::var("POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    queue_tour(&Store::connect(
        &url,
        "Start PostgreSQL, or run `scripts/test.sh`; POSTGRES_URL points elsewhere.",
    ));
}

#[test]
fn redis_queues() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    queue_tour(&Store::connect(&url, "Start Redis, or run `scripts/test.sh`; REDIS_URL points elsewhere."));
}

#[test]
fn mariadb_queues() {
    let url = std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    queue_tour(&Store::connect(&url, "Start MariaDB, or run `scripts/test.sh`; MYSQL_URL points elsewhere."));
}

/// Each `rex` run on `memory:` starts with an empty store: what can be seen
/// from outside is the empty list and that pause and resume succeed (the
/// unit tests of `queues.rs` list a seeded memory store).
#[test]
fn memory_queues_list_pause_resume() {
    let memory = |args: &[&str]| {
        let mut cmd = rex();
        cmd.env("REX_URL", "memory:").env("REX_NAMESPACE", "app").args(args);
        run(cmd)
    };
    assert_eq!(
        memory(&["queues"]).ok(),
        "QUEUE  WAITING  DUE  LATENCY  PAUSED  RUNNING  THROTTLED  LIMITS\n"
    );
    assert_eq!(memory(&["queues", "--json"]).json(), Value::Array(vec![]));
    assert_eq!(memory(&["queues", "pause", "emails"]).ok(), "paused queue emails\n");
    let resumed = memory(&["queues", "resume", "reports:eu", "--json"]).json();
    assert_eq!(resumed, serde_json::json!({"queue": "reports:eu", "resumed": true}));
}

/// `rex queues limit` on `memory:`: each run starts empty, so what can be
/// seen from outside is the answer of the run that sets the limits (the
/// unit tests of `queues.rs` list a seeded memory store with them).
#[test]
fn memory_queues_limit_and_clear() {
    let memory = |args: &[&str]| {
        let mut cmd = rex();
        cmd.env("REX_URL", "memory:").env("REX_NAMESPACE", "app").args(args);
        run(cmd)
    };
    let set = memory(&["queues", "limit", "emails", "--concurrency", "4", "--rate", "50/s"]);
    assert_eq!(set.ok(), "limited queue emails: c=4 r=50/1s\n");
    let set = memory(&["queues", "limit", "reports", "--rate", "600/1m", "--burst", "10", "--json"]).json();
    assert_eq!(
        set,
        serde_json::json!({
            "queue": "reports", "waiting": 0, "due": 0, "oldest_due": null, "latency_ms": null,
            "paused": false, "running": 0, "throttled": 0,
            "limits": {"concurrency": null, "rate": {"starts": 600, "per_ms": 60000, "burst": 10}}
        })
    );
    assert_eq!(
        memory(&["queues", "limit", "emails", "--clear"]).ok(),
        "cleared the limits of queue emails\n"
    );
    let cleared = memory(&["queues", "limit", "emails", "--clear", "--json"]).json();
    assert_eq!(cleared["limits"], serde_json::json!({"concurrency": null, "rate": null}), "{cleared}");
}

#[test]
fn bad_limits_are_usage_errors_before_the_store_is_asked() {
    let cases: [(&[&str], &str); 10] = [
        (&["--concurrency", "0"], "rex: --concurrency: invalid concurrency limit: 0 is outside 1..=1000000"),
        (&["--concurrency", "-3"], "rex: --concurrency: `-3` is not a whole number"),
        (&["--concurrency", "lots"], "rex: --concurrency: `lots` is not a whole number"),
        (&["--rate", "50"], "rex: --rate: `50` is not N/PERIOD"),
        (&["--rate", "0/s"], "rex: --rate: invalid rate starts: 0 is outside 1..=1000000"),
        (&["--rate", "5/week"], "rex: --rate: `week` in `5/week` is not a period"),
        (&["--rate", "5/s", "--burst", "0"], "rex: --burst: invalid rate burst: 0 is outside 1..=1000000"),
        (&["--burst", "5"], "rex: --burst is the bucket of a --rate; give --rate too"),
        (&["--clear", "--concurrency", "2"], "rex: --clear removes both limits; give it alone"),
        (&[], "rex: give --concurrency N, --rate N/PERIOD (and --burst N), or --clear"),
    ];
    for (flags, start) in cases {
        // A store that is down: the input is refused before it is asked.
        let mut cmd = rex();
        cmd.args(["--url", "redis://127.0.0.1:1", "--namespace", "app", "queues", "limit", "emails"])
            .args(flags);
        let out = run(cmd);
        let line = out.fails(2);
        assert!(line.starts_with(start), "{flags:?}: {line}");
    }
    let mut cmd = rex();
    cmd.args(["--url", "redis://127.0.0.1:1", "--namespace", "app", "queues", "limit", "e mails", "--clear"]);
    assert!(run(cmd).fails(2).contains("bad queue name"));
}

#[test]
fn a_bad_queue_name_is_a_usage_error() {
    let long = "q".repeat(65);
    for name in ["e mails", "", "émails", long.as_str()] {
        for action in ["pause", "resume"] {
            let mut cmd = rex();
            cmd.env("REX_URL", "memory:").env("REX_NAMESPACE", "app").args(["queues", action, name]);
            let out = run(cmd);
            let line = out.fails(2);
            assert!(line.starts_with("rex: bad queue name: invalid queue: "), "{line}");
        }
    }
    // Checked before the store is asked: a bad name is exit 2 even when the store is down.
    let mut cmd = rex();
    cmd.args(["--url", "redis://127.0.0.1:1", "--namespace", "app", "queues", "pause", "e mails"]);
    assert!(run(cmd).fails(2).contains("bad queue name"));
}

#[test]
fn memory_counts_of_an_empty_namespace() {
    let mut cmd = rex();
    cmd.args(["--url", "memory:", "--namespace", "empty", "counts", "--json"]);
    let counts = run(cmd).json();
    assert_eq!(counts.as_object().map(|o| o.len()), Some(8), "{counts}");
    assert!(counts.as_object().is_some_and(|o| o.values().all(|n| n.as_u64() == Some(0))), "{counts}");
}

#[test]
fn a_bad_url_is_a_usage_error() {
    let mut cmd = rex();
    cmd.args(["--url", "nope://", "--namespace", "app", "counts"]);
    assert!(run(cmd).fails(2).contains("REX_URL"));
}

#[test]
fn a_bad_age_is_a_usage_error() {
    let mut cmd = rex();
    cmd.args([
        "--url",
        "memory:",
        "--namespace",
        "app",
        "purge",
        "--state",
        "completed",
        "--older-than",
        "soon",
        "--yes",
    ]);
    assert!(run(cmd).fails(2).contains("--older-than"));
}

#[test]
fn a_missing_url_names_rex_url() {
    let mut cmd = rex();
    cmd.args(["--namespace", "app", "counts"]);
    assert!(run(cmd).fails(2).contains("REX_URL"));
}

#[test]
fn an_unknown_id_is_not_found() {
    let mut cmd = rex();
    cmd.env("REX_URL", "memory:").env("REX_NAMESPACE", "app").args(["show", "nope"]);
    assert!(run(cmd).fails(1).contains("task `nope` not found"));
}

#[test]
fn a_store_that_is_down_is_exit_3() {
    let mut cmd = rex();
    cmd.args(["--url", "redis://127.0.0.1:1", "--namespace", "app", "counts"]);
    run(cmd).fails(3);
}

#[test]
fn completions_need_no_store() {
    for shell in ["bash", "zsh", "fish"] {
        let mut cmd = rex();
        cmd.args(["completions", shell]);
        let out = run(cmd);
        assert!(out.ok().contains("requeue"), "{shell}: {}", out.stdout);
    }
}

#[test]
fn watch_on_memory_stops_after_its_iterations() {
    let mut cmd = rex();
    cmd.args([
        "--url",
        "memory:",
        "--namespace",
        "app",
        "watch",
        "--iterations",
        "3",
        "--interval",
        "10ms",
        "--json",
    ]);
    let out = run(cmd);
    let lines: Vec<Value> =
        out.ok().lines().map(|l| serde_json::from_str(l).unwrap_or(Value::Null)).collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(lines[0]["rates_per_s"].is_null() && lines[2]["rates_per_s"]["FAILED"].as_f64() == Some(0.0));
}

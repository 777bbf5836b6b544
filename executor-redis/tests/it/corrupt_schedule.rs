//! Cron schedules edited by hand: a definition or state that does not parse
//! is left out of `schedules` while the others are listed; schedule keys of
//! another type give a clear error, not a panic; `purge` deletes the
//! schedule keys; a resent advance answers like the first one.

use executor_core::storage::ScheduleStore;
use executor_core::{Error, Timestamp, schedule::Schedule, storage::Advance};
use fred::{
    interfaces::{HashesInterface, KeysInterface, LuaInterface},
    types::Value,
};

use crate::common::corrupt::{Damage, TestResult};

const DEFS: &str = "schedules";
const STATES: &str = "schedules:state";

fn schedule(name: &str) -> TestResult<Schedule> {
    Ok(Schedule::new(name, "report", "*/5 * * * *", "UTC")?)
}

async fn put_all(d: &Damage, names: &[&str]) -> TestResult {
    for name in names {
        d.storage.put_schedule(&d.ns, &schedule(name)?).await?;
    }
    Ok(())
}

async fn listed(d: &Damage) -> TestResult<Vec<String>> {
    Ok(d.storage.schedules(&d.ns).await?.into_iter().map(|e| e.schedule.name).collect())
}

#[tokio::test]
async fn an_unreadable_schedule_is_left_out_of_the_list() -> TestResult {
    let d = Damage::new("schedule-bad").await;
    put_all(&d, &["a", "b", "c", "d", "e"]).await?;
    let r = &d.redis;
    let _: () = r.hset(d.key(DEFS), ("b", "{not json")).await?;
    let _: () = r.hset(d.key(DEFS), ("c", serde_json::to_string(&schedule("other")?)?)).await?;
    let _: () = r.hset(d.key(STATES), ("d", "0 12 x -")).await?;
    let _: () = r.hdel(d.key(STATES), "e").await?;
    assert_eq!(listed(&d).await?, ["a"], "only the readable one");

    // A pause cannot keep a state it cannot read: a clear error, not a guess.
    match d.storage.pause_schedule(&d.ns, "d", true).await {
        Err(e @ Error::Storage { retryable: false, .. }) => {
            assert!(e.to_string().contains("does not parse"), "{e}");
        }
        other => panic!("expected a storage error, got {other:?}"),
    }
    // Putting a schedule again repairs it: a new definition, a new state.
    put_all(&d, &["b", "c", "d", "e"]).await?;
    assert_eq!(listed(&d).await?, ["a", "b", "c", "d", "e"]);
    assert!(d.storage.pause_schedule(&d.ns, "d", true).await?);
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn schedule_keys_of_another_type_are_refused_clearly() -> TestResult {
    for key in [DEFS, STATES] {
        let d = Damage::new("schedule-type").await;
        put_all(&d, &["a"]).await?;
        let _: i64 = d.redis.del(d.key(key)).await?;
        let _: () = d.redis.set(d.key(key), "x", None, None, false).await?;
        let s = &d.storage;
        let far = Advance::new(Timestamp::from_millis(0), Timestamp::from_millis(1), 1, None);
        let answers = [
            s.put_schedule(&d.ns, &schedule("b")?).await.map(|()| true),
            s.schedules(&d.ns).await.map(|l| l.is_empty()),
            s.remove_schedule(&d.ns, "a").await,
            s.pause_schedule(&d.ns, "a", true).await,
            s.advance_schedule(&d.ns, "a", &far).await,
        ];
        for answer in answers {
            match answer {
                Err(e @ Error::Storage { retryable: false, .. }) => {
                    let text = e.to_string();
                    assert!(text.contains("WRONGTYPE") && text.contains(&d.key(key)), "{key}: {text}");
                }
                other => panic!("{key}: expected a storage error, got {other:?}"),
            }
        }
        assert_eq!(d.key_type(&d.key(key)).await?, "string", "nothing was changed");
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn purge_deletes_the_schedule_keys() -> TestResult {
    let d = Damage::new("schedule-purge").await;
    put_all(&d, &["a", "b"]).await?;
    let n: i64 = d.redis.exists(vec![d.key(DEFS), d.key(STATES)]).await?;
    assert_eq!(n, 2);
    d.cleanup().await;
    let n: i64 = d.redis.exists(vec![d.key(DEFS), d.key(STATES)]).await?;
    assert_eq!(n, 0, "purge leaves no schedule behind");
    Ok(())
}

/// fred resends a script whose connection dropped; the second run of the
/// same advance (same nonce) must answer `1` as the first did, and a
/// different call from the old cursor must not move it.
#[tokio::test]
async fn a_resent_advance_answers_like_the_first() -> TestResult {
    let d = Damage::new("schedule-resend").await;
    put_all(&d, &["a"]).await?;
    let cursor = d.storage.schedules(&d.ns).await?[0].cursor.as_millis().to_string();
    let source = format!("{}\n{}", crate::common::prelude(), include_str!("../../lua/schedule.lua"));
    let keys = vec![d.key(DEFS), d.key(STATES)];
    let advance = |nonce: &'static str| {
        let args = vec!["advance", "a", cursor.as_str(), "99", "7", nonce, "a@1"];
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        let (r, source, keys) = (d.redis.clone(), source.clone(), keys.clone());
        async move { r.eval::<Value, _, _, _>(source, keys, args).await }
    };
    assert_eq!(advance("n1").await?.as_u64(), Some(1));
    assert_eq!(advance("n1").await?.as_u64(), Some(1), "the resend");
    assert_eq!(advance("n2").await?.as_u64(), Some(0), "another call from the old cursor");
    let e = d.storage.schedules(&d.ns).await?.remove(0);
    assert_eq!(
        (e.cursor.as_millis(), e.fence, e.last_task.map(|t| t.to_string())),
        (99, 7, Some("a@1".into()))
    );
    d.cleanup().await;
    Ok(())
}

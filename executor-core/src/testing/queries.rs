//! Checks of counts and list pagination.

use std::{collections::BTreeSet, time::Duration};

use crate::{
    Error, ListQuery, Namespace, TaskState,
    storage::{Due, Storage},
};

use super::{
    new_task,
    support::{err, ok, submit, task_in_state},
};

/// Counts report the number of tasks in every state.
pub async fn counts_by_state<S: Storage>(s: &S, ns: &Namespace) {
    let wanted = [
        (TaskState::Pending, 1),
        (TaskState::Running, 1),
        (TaskState::Completed, 2),
        (TaskState::Failed, 1),
        (TaskState::Timeout, 1),
        (TaskState::Error, 1),
        (TaskState::Cancelled, 1),
        // Last: the helper needs no other due task while it claims.
        (TaskState::Created, 3),
    ];
    assert_eq!(ok("counts", s.counts(ns).await).total(), 0, "a fresh namespace is empty");
    for (state, n) in wanted {
        for i in 0..n {
            task_in_state(s, ns, &format!("count-{}-{i}", state.as_str().to_lowercase()), state).await;
        }
    }
    let counts = ok("counts", s.counts(ns).await);
    for (state, n) in wanted {
        assert_eq!(counts.get(state), n, "count of {state}: {counts:?}");
    }
    assert_eq!(counts.total(), 11, "total: {counts:?}");
}

/// Following `next` visits every task of the state exactly once, in pages
/// of at most `limit`, and ends with `next = None`.
pub async fn list_pagination_visits_each_once<S: Storage>(s: &S, ns: &Namespace) {
    for i in 0..3 {
        task_in_state(s, ns, &format!("list-done-{i}"), TaskState::Completed).await;
    }
    let mut expected = BTreeSet::new();
    let tasks = (0..25)
        .map(|i| {
            let mut t = new_task(&format!("list-{i:02}"));
            t.due = Due::After(Duration::from_secs(3_600));
            expected.insert(t.id.clone());
            t
        })
        .collect();
    for r in ok("submit_many", s.submit_many(ns, tasks).await) {
        ok("submit in submit_many", r);
    }

    let mut seen = BTreeSet::new();
    let mut query = ListQuery::new(TaskState::Created, 7);
    for page_no in 1.. {
        assert!(page_no <= 6, "25 tasks in pages of 7 took more than 6 pages");
        let page = ok("list", s.list(ns, query.clone()).await);
        assert!(page.tasks.len() <= 7, "page {page_no} has {} tasks, limit 7", page.tasks.len());
        for t in page.tasks {
            assert_eq!(t.state, TaskState::Created, "{} listed under CREATED", t.id);
            assert!(seen.insert(t.id.clone()), "{} listed twice", t.id);
        }
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every CREATED task exactly once");

    let done = ok("list completed", s.list(ns, ListQuery::new(TaskState::Completed, 7)).await);
    assert_eq!((done.tasks.len(), done.next), (3, None), "a short list is one page");
    let none = ok("list running", s.list(ns, ListQuery::new(TaskState::Running, 7)).await);
    assert!(none.tasks.is_empty() && none.next.is_none(), "an empty state lists nothing");
}

/// With a name, following `next` visits every task of that state and name
/// exactly once and nothing else, whatever other names the state holds
/// (pages may come back short, even empty, while `next` is `Some`); a name
/// no task has lists nothing; a name no task can have is `Invalid`.
pub async fn list_by_name_visits_each_once<S: Storage>(s: &S, ns: &Namespace) {
    let mut expected = BTreeSet::new();
    let tasks = (0..40)
        .map(|i| {
            let mut t = new_task(&format!("named-{i:02}"));
            t.name = if i % 4 == 1 { "alpha".to_owned() } else { format!("beta{}", i % 3) };
            t.due = Due::After(Duration::from_secs(3_600));
            if t.name == "alpha" {
                expected.insert(t.id.clone());
            }
            t
        })
        .collect();
    for r in ok("submit_many", s.submit_many(ns, tasks).await) {
        ok("submit in submit_many", r);
    }
    let mut done = BTreeSet::new();
    for i in 0..2 {
        let id = task_in_state(s, ns, &format!("named-done-{i}"), TaskState::Completed).await;
        done.insert(id);
    }

    let mut seen = BTreeSet::new();
    let mut query = ListQuery::new(TaskState::Created, 3).name("alpha");
    for page_no in 1.. {
        assert!(page_no <= 40, "10 tasks in pages of 3 took more than 40 pages");
        let page = ok("list by name", s.list(ns, query.clone()).await);
        assert!(page.tasks.len() <= 3, "page {page_no} has {} tasks, limit 3", page.tasks.len());
        for t in page.tasks {
            assert_eq!((t.state, t.name.as_str()), (TaskState::Created, "alpha"), "{} listed", t.id);
            assert!(seen.insert(t.id.clone()), "{} listed twice", t.id);
        }
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every CREATED alpha task exactly once");

    // `task_in_state` names its tasks as `new_task` does.
    let name = new_task("any").name;
    let mut listed = BTreeSet::new();
    // Pages of one, so the second page starts at a finished task's cursor
    // with the name filter on (the list's most conditional shape).
    let mut query = ListQuery::new(TaskState::Completed, 1).name(name.clone());
    for _ in 0..40 {
        let page = ok("list completed by name", s.list(ns, query.clone()).await);
        assert!(page.tasks.len() <= 1, "a page of one listed {:?}", page.tasks);
        listed.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, done, "the COMPLETED tasks named {name:?}, and no CREATED task of that name");

    for unknown in ["nobody", name.as_str()] {
        let mut query = ListQuery::new(TaskState::Created, 10).name(unknown);
        for page_no in 1.. {
            assert!(page_no <= 40, "listing a name no task has did not end");
            let page = ok("list an unknown name", s.list(ns, query.clone()).await);
            assert!(page.tasks.is_empty(), "{unknown:?}, which no CREATED task has, listed {:?}", page.tasks);
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
    }
    for bad in ["", "two words", "nul\0"] {
        let e =
            err("list with a bad name", s.list(ns, ListQuery::new(TaskState::Created, 10).name(bad)).await);
        assert!(matches!(e, Error::Invalid { .. }), "name {bad:?}: expected Invalid, got {e:?}");
    }
    let long = "n".repeat(crate::id::MAX_ID_LEN + 1);
    let e = err("list with a long name", s.list(ns, ListQuery::new(TaskState::Created, 10).name(long)).await);
    assert!(matches!(e, Error::Invalid { .. }), "expected Invalid, got {e:?}");
}

/// A cursor the store did not make is refused with `Invalid`.
pub async fn list_refuses_foreign_cursor<S: Storage>(s: &S, ns: &Namespace) {
    submit(s, ns, new_task("cursor")).await;
    let mut q = ListQuery::new(TaskState::Created, 10);
    q.cursor = Some("%%not-a-cursor%%".to_owned());
    let e = err("list with a foreign cursor", s.list(ns, q).await);
    assert!(matches!(e, Error::Invalid { .. }), "expected Invalid, got {e:?}");
}

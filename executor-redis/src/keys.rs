//! The key layout: every key of one namespace partition shares the hash tag
//! `{<prefix>:<ns>}` (partition 0) or `{<prefix>:<ns>#<p>}`, so each script
//! touches a single Redis Cluster slot.
//!
//! Task ids need no escaping: Redis takes the hash tag from the first `{...}`
//! of a key, which is always ours, and scripts only concatenate ids.

use executor_core::{Namespace, TaskId};

/// The keys of one partition of a namespace, in the order the scripts take
/// them (`lua/common/01_values.lua`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PartitionKeys {
    /// `{re:<ns>}:`: task hashes are `<base>t:<id>`.
    pub(crate) base: String,
    /// The eight keys every state-change script receives.
    pub(crate) script_keys: [String; 8],
}

impl PartitionKeys {
    pub(crate) fn due(&self) -> &str {
        &self.script_keys[0]
    }
    pub(crate) fn lease(&self) -> &str {
        &self.script_keys[1]
    }
    pub(crate) fn dead(&self) -> &str {
        &self.script_keys[2]
    }
    pub(crate) fn done(&self) -> &str {
        &self.script_keys[3]
    }
    pub(crate) fn counts(&self) -> &str {
        &self.script_keys[6]
    }
    pub(crate) fn task(&self, id: &str) -> String {
        format!("{}t:{id}", self.base)
    }
    /// The SET of queues paused in this partition (every partition holds a
    /// copy, so a claim checks pause in its own slot).
    pub(crate) fn paused(&self) -> String {
        format!("{}paused", self.base)
    }
    /// The registry of waiting levels: queue -> digits of its priorities
    /// that have a ZSET (`lua/common/02_keys.lua`).
    pub(crate) fn levels(&self) -> String {
        format!("{}queues", self.base)
    }
    /// The waiting ZSET of a level: the due ZSET for the default queue at
    /// priority 0, else `<base>qd:<priority>:<queue>`.
    pub(crate) fn level(&self, queue: &str, priority: u8) -> String {
        if priority == 0 && queue == executor_core::queue::DEFAULT_QUEUE {
            self.due().to_owned()
        } else {
            format!("{}qd:{priority}:{queue}", self.base)
        }
    }
}

/// Where a namespace's keys live.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) prefix: String,
    pub(crate) partitions: u16,
    /// Whether scripts may set the namespace-wide wake marker themselves
    /// (false only on a cluster with several partitions: another slot).
    pub(crate) inline_wake: bool,
}

impl Layout {
    pub(crate) fn base(&self, ns: &Namespace, partition: u16) -> String {
        if partition == 0 {
            format!("{{{}:{}}}:", self.prefix, ns.as_str())
        } else {
            format!("{{{}:{}#{partition}}}:", self.prefix, ns.as_str())
        }
    }

    /// The namespace-wide wake marker, BZPOPMIN'd by waiting executors.
    pub(crate) fn wake(&self, ns: &Namespace) -> String {
        format!("{}wake", self.base(ns, 0))
    }

    /// The hash of workers' announcements (handler names, until when).
    pub(crate) fn workers(&self, ns: &Namespace) -> String {
        format!("{}workers", self.base(ns, 0))
    }

    /// The cron schedules: definitions (name -> JSON) and states (name ->
    /// paused, cursor, fence, nonce, last task), beside the leader that
    /// reads them, in partition 0's slot.
    pub(crate) fn schedules(&self, ns: &Namespace) -> [String; 2] {
        let base = self.base(ns, 0);
        [format!("{base}schedules"), format!("{base}schedules:state")]
    }

    /// Whether queue limits can be kept: their keys live in partition 0's
    /// slot, which every partition's scripts may touch except on a cluster
    /// with several partitions (the case `inline_wake` is false).
    pub(crate) fn has_limits(&self) -> bool {
        self.inline_wake
    }

    /// The queue limits hash `<base0>limits` (`lua/common/05_limits.lua`): partition
    /// 0's for every partition where [`Layout::has_limits`], else the
    /// partition's own, which nothing writes.
    pub(crate) fn limits(&self, ns: &Namespace, partition: u16) -> String {
        let p = if self.has_limits() { 0 } else { partition };
        format!("{}limits", self.base(ns, p))
    }

    /// The throughput history's index ZSET `<base0>history`; each minute's
    /// HASH is `<base0>history:<minute ms>` (`lua/history.lua`). In
    /// partition 0's slot, beside the leader that trims it.
    pub(crate) fn history(&self, ns: &Namespace) -> String {
        format!("{}history", self.base(ns, 0))
    }

    pub(crate) fn leader(&self, ns: &Namespace) -> [String; 2] {
        let base = self.base(ns, 0);
        [format!("{base}leader"), format!("{base}leader:seq")]
    }

    pub(crate) fn partition(&self, ns: &Namespace, partition: u16) -> PartitionKeys {
        let base = self.base(ns, partition);
        let wake = if self.inline_wake { self.wake(ns) } else { format!("{base}wake") };
        let script_keys = [
            format!("{base}due"),
            format!("{base}lease"),
            format!("{base}dead"),
            format!("{base}done"),
            format!("{base}debounce"),
            wake,
            format!("{base}counts"),
            self.limits(ns, partition),
        ];
        PartitionKeys { base, script_keys }
    }

    /// The partition of a task: FNV-1a of its id, so every process agrees.
    pub(crate) fn partition_of(&self, id: &TaskId) -> u16 {
        self.partition_of_str(id.as_str())
    }

    /// The partition a string hashes to (a task id, a debounce key).
    pub(crate) fn partition_of_str(&self, s: &str) -> u16 {
        if self.partitions <= 1 {
            return 0;
        }
        let mut hash: u32 = 0x811c_9dc5;
        for byte in s.bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
        u16::try_from(hash % u32::from(self.partitions)).unwrap_or(0)
    }

    /// A SCAN pattern matching every key of a partition.
    pub(crate) fn pattern(&self, ns: &Namespace, partition: u16) -> String {
        format!("{}*", self.base(ns, partition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_get_their_own_hash_tag() -> executor_core::Result<()> {
        let layout = Layout { prefix: "re".into(), partitions: 3, inline_wake: true };
        let ns = Namespace::new("app:eu")?;
        assert_eq!(layout.base(&ns, 0), "{re:app:eu}:");
        assert_eq!(layout.base(&ns, 2), "{re:app:eu#2}:");
        assert_eq!(layout.partition(&ns, 1).task("a{b}c"), "{re:app:eu#1}:t:a{b}c");
        let p = layout.partition_of(&TaskId::new("order-1")?);
        assert!(p < 3);
        assert_eq!(p, layout.partition_of(&TaskId::new("order-1")?));
        Ok(())
    }
}

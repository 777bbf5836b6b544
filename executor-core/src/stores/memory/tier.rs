//! The tier methods: what `TieredStorage` needs to move tasks between stores.

use super::space::Space;
use crate::{TaskId, TaskRecord, Timestamp};

impl Space {
    /// Waiting tasks due before `before`, earliest first.
    pub(super) fn due_before(&self, before: Timestamp, limit: usize) -> Vec<TaskRecord> {
        self.idx
            .due
            .iter()
            .take_while(|(due, _, _)| *due < before)
            .take(limit)
            .filter_map(|(_, _, id)| self.get(id))
            .collect()
    }

    /// Stores `record` as given unless its id exists.
    pub(super) fn import(&mut self, record: TaskRecord) -> bool {
        if self.tasks.contains_key(&record.id) {
            return false;
        }
        if record.state.is_waiting()
            && let Some(key) = &record.debounce_key
        {
            self.debounce.entry(key.clone()).or_insert_with(|| record.id.clone());
        }
        self.insert(record);
        true
    }

    /// Deletes a waiting task whose fence is still `fence`.
    pub(super) fn remove_waiting(&mut self, id: &TaskId, fence: u64) -> bool {
        let matches =
            self.tasks.get(id).is_some_and(|e| e.record.state.is_waiting() && e.record.fence == fence);
        matches && self.delete(id).is_some()
    }
}

//! Identifiers: task ids, namespaces and worker ids, and their longest
//! lengths.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Longest task id accepted, in bytes. Stores with shorter columns refuse
/// longer ids at submit with [`Error::Invalid`].
pub const MAX_ID_LEN: usize = 191;

/// The id of a task: given by the user (a business key such as
/// `order_12345_pay`) or generated as a UUID v7, which sorts by creation time.
///
/// Ids are 1 to [`MAX_ID_LEN`] bytes of printable ASCII or UTF-8 without
/// control characters or whitespace, so every store can use them in keys.
///
/// ```
/// use reliable_executor::TaskId;
/// let id = TaskId::new("order_12345_pay")?;
/// assert_eq!(id.as_str(), "order_12345_pay");
/// assert!(TaskId::new("has space").is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

impl TaskId {
    /// Validates a user-given id.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the id is empty, longer than [`MAX_ID_LEN`]
    /// bytes, or contains whitespace or control characters.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        validate_key("task id", &id, MAX_ID_LEN)?;
        Ok(Self(id))
    }

    /// A fresh UUID v7 id.
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// Whether the id has the form [`TaskId::generate`] gives (a UUID v7 in
    /// its hyphenated form), rather than a business key a user chose. A
    /// store may replace a generated id by another generated one where it
    /// must (see `TaskBuilder::debounce` on partitioned Redis); it never
    /// replaces a chosen one.
    ///
    /// ```
    /// use reliable_executor::TaskId;
    /// assert!(TaskId::generate().is_generated());
    /// assert!(!TaskId::new("order_12345_pay")?.is_generated());
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn is_generated(&self) -> bool {
        self.0.len() == 36 && uuid::Uuid::try_parse(&self.0).is_ok_and(|u| u.get_version_num() == 7)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl AsRef<str> for TaskId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for TaskId {
    type Error = Error;
    fn try_from(value: &str) -> Result<Self> {
        Self::new(value)
    }
}

impl TryFrom<String> for TaskId {
    type Error = Error;
    fn try_from(value: String) -> Result<Self> {
        Self::new(value)
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> Self {
        id.0
    }
}

/// Longest namespace accepted, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 64;

/// Isolates the tasks of one application from others sharing the same store
/// (the seed's key prefix per application). Letters, digits, `-`, `_`, `.`
/// and `:` only, 1 to 64 bytes.
///
/// ```
/// use reliable_executor::Namespace;
/// assert!(Namespace::new("my-app").is_ok());
/// assert!(Namespace::new("my app").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Namespace(String);

impl Namespace {
    /// Validates a namespace.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty or too long name or a character other
    /// than ASCII letters, digits, `-`, `_`, `.` or `:`.
    pub fn new(ns: impl Into<String>) -> Result<Self> {
        let ns = ns.into();
        if ns.is_empty() || ns.len() > MAX_NAMESPACE_LEN {
            return Err(Error::invalid(
                "namespace",
                format!("`{ns}` must be 1 to {MAX_NAMESPACE_LEN} bytes long"),
            ));
        }
        if let Some(c) =
            ns.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        {
            return Err(Error::invalid(
                "namespace",
                format!("`{ns}` contains {c:?}; use letters, digits, `-`, `_`, `.` or `:`"),
            ));
        }
        Ok(Self(ns))
    }

    /// The namespace as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Namespace {
    /// The name of the running binary as a namespace (characters a
    /// namespace cannot hold become `-`, at most 64 bytes), or `default`
    /// when it cannot be read: what an executor uses when its builder is
    /// given no `.namespace(..)`, so two services sharing a store that both
    /// forget it do not share one queue (seed 000 used the application's
    /// name). Several binaries of one application that share a queue set
    /// the namespace explicitly.
    pub fn of_this_binary() -> Self {
        let stem = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_default();
        Self::from_program_name(&stem)
    }

    fn from_program_name(name: &str) -> Self {
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':') { c } else { '-' })
            .take(MAX_NAMESPACE_LEN)
            .collect();
        Self::new(clean).unwrap_or_else(|_| Self("default".to_owned()))
    }
}

impl Default for Namespace {
    /// [`Namespace::of_this_binary`].
    fn default() -> Self {
        Self::of_this_binary()
    }
}

impl TryFrom<String> for Namespace {
    type Error = Error;
    fn try_from(value: String) -> Result<Self> {
        Self::new(value)
    }
}

impl TryFrom<&str> for Namespace {
    type Error = Error;
    fn try_from(value: &str) -> Result<Self> {
        Self::new(value)
    }
}

impl From<Namespace> for String {
    fn from(ns: Namespace) -> Self {
        ns.0
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one executor process (or one claimer inside it) as the owner
/// of leases and of leadership. Generated per executor: `hostname-pid-uuid`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkerId(String);

impl WorkerId {
    /// A fresh, unique worker id.
    pub fn generate() -> Self {
        let short = uuid::Uuid::new_v4().simple().to_string();
        Self(format!("w-{}-{}", std::process::id(), &short[..12]))
    }

    /// Validates a chosen worker id (same rules as a task id).
    ///
    /// # Errors
    /// [`Error::Invalid`] as for [`TaskId::new`].
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        validate_key("worker id", &id, MAX_ID_LEN)?;
        Ok(Self(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for WorkerId {
    type Error = Error;
    fn try_from(value: String) -> Result<Self> {
        Self::new(value)
    }
}

impl From<WorkerId> for String {
    fn from(id: WorkerId) -> Self {
        id.0
    }
}

impl fmt::Debug for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn validate_key(what: &'static str, key: &str, max: usize) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    if key.len() > max {
        return Err(Error::invalid(what, format!("{} bytes is longer than the limit of {max}", key.len())));
    }
    if let Some(c) = key.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid(
            what,
            format!(
                "`{}` contains {c:?}; whitespace and control characters are not allowed",
                key.escape_debug()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_namespace_is_the_binary_name_made_valid() {
        assert_eq!(Namespace::from_program_name("billing-worker").as_str(), "billing-worker");
        assert_eq!(Namespace::from_program_name("my app (v2)").as_str(), "my-app--v2-");
        assert_eq!(Namespace::from_program_name(&"x".repeat(100)).as_str().len(), MAX_NAMESPACE_LEN);
        assert_eq!(Namespace::from_program_name("").as_str(), "default");
        // This test binary's own name, whatever cargo called it.
        let here = Namespace::of_this_binary();
        assert_ne!(here.as_str(), "default", "a test binary has a name");
        assert_eq!(Namespace::default(), here);
    }

    #[test]
    fn deserialize_validates_like_new() {
        // Config and JSON bodies must not smuggle in what `new` refuses
        // (a namespace that escapes its Redis hash tag, an id with a
        // trailing space that MySQL's collation equates with another).
        for bad in [r#""victim}:t:X{""#, r#""pad ""#, r#""""#] {
            assert!(serde_json::from_str::<Namespace>(bad).is_err(), "namespace {bad} accepted");
        }
        for bad in [r#""pad ""#, r#""""#, r#""a\nb""#] {
            assert!(serde_json::from_str::<TaskId>(bad).is_err(), "task id {bad} accepted");
            assert!(serde_json::from_str::<WorkerId>(bad).is_err(), "worker id {bad} accepted");
        }
        let ns: Namespace = serde_json::from_str(r#""my-app""#).expect("valid namespace");
        assert_eq!(serde_json::to_string(&ns).expect("serializes"), r#""my-app""#);
        let id: TaskId = serde_json::from_str(r#""order_1""#).expect("valid id");
        assert_eq!(serde_json::to_string(&id).expect("serializes"), r#""order_1""#);
    }

    #[test]
    fn generated_ids_are_valid_and_unique() {
        let a = TaskId::generate();
        let b = TaskId::generate();
        assert_ne!(a, b);
        assert!(TaskId::new(a.as_str()).is_ok());
    }

    #[test]
    fn bad_ids_are_refused_with_a_reason() {
        assert!(TaskId::new("").is_err());
        assert!(TaskId::new("a\nb").is_err());
        assert!(TaskId::new("x".repeat(MAX_ID_LEN + 1)).is_err());
        assert!(TaskId::new("x".repeat(MAX_ID_LEN)).is_ok());
        let err = TaskId::new("a b").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("whitespace"), "{err}");
    }

    #[test]
    fn namespaces_are_key_safe() {
        assert!(Namespace::new("app-1.prod:eu").is_ok());
        assert!(Namespace::new("a{b}").is_err());
        assert!(Namespace::new("").is_err());
    }
}

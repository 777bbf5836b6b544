//! The handler registry: every `#[reliable_task]` in the binary, collected
//! by `inventory`, plus handlers registered on the builder by hand.

use std::{collections::HashMap, fmt, future::Future, pin::Pin, sync::Arc};

use serde::de::DeserializeOwned;

use crate::{
    Error, IntoTaskResult, Result, TaskContext, TaskError, TaskOptions,
    api::data::{DataMap, DataNeed},
};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Starts one attempt: decodes the payload (an error here sends the task to
/// `ERROR`) and returns the handler's future.
pub type InvokeFn = fn(TaskContext, &[u8]) -> Result<BoxFuture<Result<(), TaskError>>, String>;

/// A handler registered at link time. `#[reliable_task]` generates one per
/// function through `inventory`; users never build it by hand.
#[derive(Debug)]
pub struct TaskRegistration {
    name: &'static str,
    location: &'static str,
    options: fn() -> TaskOptions,
    invoke: InvokeFn,
    needs: &'static [DataNeed],
    schedule: Option<AttributeSchedule>,
}

/// A `#[reliable_task(cron = .., timezone = ..)]` schedule: the expression
/// and zone (checked by the macro), and the default payload as JSON.
#[derive(Clone, Copy, Debug)]
pub struct AttributeSchedule {
    cron: &'static str,
    timezone: &'static str,
    payload: fn() -> Result<String, String>,
}

impl AttributeSchedule {
    /// Used by the generated code.
    pub const fn new(
        cron: &'static str,
        timezone: &'static str,
        payload: fn() -> Result<String, String>,
    ) -> Self {
        Self { cron, timezone, payload }
    }
}

impl TaskRegistration {
    /// Used by the generated code.
    pub const fn new(
        name: &'static str,
        location: &'static str,
        options: fn() -> TaskOptions,
        invoke: InvokeFn,
    ) -> Self {
        Self { name, location, options, invoke, needs: &[], schedule: None }
    }

    /// The handler's `cron` schedule. Used by the generated code.
    pub const fn with_schedule(mut self, schedule: AttributeSchedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The `Data<T>` types the handler takes, checked by `build()`. Used by
    /// the generated code.
    pub const fn with_data(mut self, needs: &'static [DataNeed]) -> Self {
        self.needs = needs;
        self
    }

    /// The task name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Where it was defined (`module::path` and `file:line`).
    pub fn location(&self) -> &'static str {
        self.location
    }
}

inventory::collect!(TaskRegistration);

type DynInvoke = dyn Fn(TaskContext, &[u8]) -> Result<BoxFuture<Result<(), TaskError>>, String> + Send + Sync;

/// A handler registered on the builder at run time, from a closure.
///
/// ```
/// use reliable_executor::{Handler, TaskContext, TaskError};
///
/// let h = Handler::new("resize_image", |width: u32, _ctx: TaskContext| async move {
///     if width == 0 { return Err(TaskError::abort("width 0")); }
///     Ok(())
/// });
/// assert_eq!(h.name(), "resize_image");
/// ```
#[derive(Clone)]
pub struct Handler {
    name: String,
    location: String,
    options: TaskOptions,
    invoke: Arc<DynInvoke>,
    needs: &'static [DataNeed],
    schedule: Option<AttributeSchedule>,
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler")
            .field("name", &self.name)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Handler {
    /// A handler from an async closure taking the decoded payload and the context.
    #[track_caller]
    pub fn new<P, F, Fut, R>(name: impl Into<String>, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P, TaskContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoTaskResult + 'static,
    {
        let caller = std::panic::Location::caller();
        let f = Arc::new(f);
        Self {
            name: name.into(),
            location: format!("Handler::new at {}:{}", caller.file(), caller.line()),
            options: TaskOptions::new(),
            invoke: Arc::new(move |ctx, bytes| {
                let payload: P = decode(bytes)?;
                let fut = f(payload, ctx);
                Ok(Box::pin(async move { fut.await.into_task_result() }))
            }),
            needs: &[],
            schedule: None,
        }
    }

    /// Sets the handler's defaults.
    pub fn options(mut self, options: TaskOptions) -> Self {
        self.options = options;
        self
    }

    /// The task name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn from_registration(r: &'static TaskRegistration) -> Self {
        let invoke = r.invoke;
        Self {
            name: r.name.to_owned(),
            location: r.location.to_owned(),
            options: (r.options)(),
            invoke: Arc::new(invoke),
            needs: r.needs,
            schedule: r.schedule,
        }
    }

    /// The schedule its `#[reliable_task(cron = ..)]` attribute declares,
    /// named after the task: the executor stores it when it starts.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] when the default payload does not encode.
    pub fn schedule(&self) -> crate::Result<Option<crate::schedule::Schedule>> {
        let Some(s) = self.schedule else { return Ok(None) };
        let payload = (s.payload)().map_err(|e| crate::Error::invalid("schedule payload", e))?;
        Ok(Some(
            crate::schedule::Schedule::new(&self.name, &self.name, s.cron, s.timezone)?
                .payload_json(payload)?,
        ))
    }

    /// The handler's defaults.
    pub fn default_options(&self) -> &TaskOptions {
        &self.options
    }

    /// Starts one attempt directly (the runtime's path; also handy in tests):
    /// decodes `payload` and returns the handler's future.
    ///
    /// # Errors
    /// The decode error as text, which the runtime records as the `ERROR` reason.
    pub fn start(
        &self,
        ctx: TaskContext,
        payload: &[u8],
    ) -> Result<BoxFuture<Result<(), TaskError>>, String> {
        (self.invoke)(ctx, payload)
    }
}

/// Decodes a JSON payload, with the serde error as text (the `ERROR` reason).
///
/// # Errors
/// The decode error, prefixed for the task's `last_error`.
pub fn decode<P: DeserializeOwned>(bytes: &[u8]) -> Result<P, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("payload does not decode: {e}"))
}

/// Name → handler, built once when the executor or client is built.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    handlers: HashMap<String, Handler>,
}

impl Registry {
    /// Every `#[reliable_task]` linked into the binary, plus `extra`.
    ///
    /// # Errors
    /// [`Error::DuplicateHandler`] naming both definitions of a name;
    /// [`Error::Invalid`] for a handler whose defaults are invalid.
    pub fn collect(extra: impl IntoIterator<Item = Handler>) -> Result<Self> {
        let mut registry = Self::default();
        for r in inventory::iter::<TaskRegistration> {
            registry.insert(Handler::from_registration(r))?;
        }
        for h in extra {
            registry.insert(h)?;
        }
        Ok(registry)
    }

    fn insert(&mut self, h: Handler) -> Result<()> {
        crate::id::validate_key("task name", &h.name, crate::id::MAX_ID_LEN)?;
        if let Err(Error::Invalid { what, reason }) = h.options.validate() {
            return Err(Error::Invalid {
                what,
                reason: format!("{reason} (default of handler `{}` at {})", h.name, h.location),
            });
        }
        if let Some(existing) = self.handlers.get(&h.name) {
            return Err(Error::DuplicateHandler {
                name: h.name.clone(),
                first: existing.location.clone(),
                second: h.location.clone(),
            });
        }
        self.handlers.insert(h.name.clone(), h);
        Ok(())
    }

    /// The handler for `name`.
    pub fn get(&self, name: &str) -> Option<&Handler> {
        self.handlers.get(name)
    }

    /// Checks that every `Data<T>` a handler takes was given to the builder.
    ///
    /// # Errors
    /// [`Error::MissingData`] naming the first handler and type found missing.
    pub(crate) fn check_data(&self, data: &DataMap) -> Result<()> {
        let mut names = self.names();
        names.sort_unstable();
        for name in names {
            let Some(h) = self.handlers.get(name) else { continue };
            if let Some(need) = h.needs.iter().find(|n| !data.has(n)) {
                return Err(Error::MissingData {
                    handler: h.name.clone(),
                    location: h.location.clone(),
                    type_name: need.type_name(),
                });
            }
        }
        Ok(())
    }

    /// Every registered name, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.handlers.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The schedules of the handlers' `#[reliable_task(cron = ..)]`
    /// attributes, by name.
    ///
    /// # Errors
    /// [`Error::Invalid`] when a default payload does not encode.
    pub fn schedules(&self) -> Result<Vec<crate::schedule::Schedule>> {
        let mut out = Vec::new();
        for name in self.names() {
            if let Some(h) = self.handlers.get(name)
                && let Some(s) = h.schedule()?
            {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Number of handlers.
    pub fn len(&self) -> usize {
        self.handlers.len()
    }

    /// No handlers at all: usually a handler crate the linker dropped.
    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_names_are_refused_naming_both() {
        let a = Handler::new("dup", |_: (), _ctx: TaskContext| async {});
        let b = Handler::new("dup", |_: (), _ctx: TaskContext| async {});
        let err = Registry::collect([a, b]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("`dup` is registered twice"), "{err}");
        assert_eq!(err.matches("Handler::new at").count(), 2, "{err}");
    }

    #[test]
    fn bad_payload_is_a_decode_error_not_a_panic() {
        let h = Handler::new("typed", |n: u64, _ctx: TaskContext| async move {
            let _ = n;
        });
        let ctx = TaskContext::for_test(crate::TaskId::generate(), "typed");
        let err = h.start(ctx, b"{not json").err().unwrap_or_default();
        assert!(err.starts_with("payload does not decode"), "{err}");
    }
}

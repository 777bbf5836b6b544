//! Application state for handlers: values given to the executor builder
//! with [`ExecutorBuilder::data`](crate::ExecutorBuilder::data), received by
//! a handler parameter of type [`Data<T>`].

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    fmt,
    ops::{Deref, DerefMut},
    sync::Arc,
};

/// A value of the application's state, handed to a handler that asks for it
/// by type, in the spirit of axum's `State` and apalis' `Data`:
///
/// ```standalone_crate
/// use reliable_executor::prelude::*;
/// use reliable_executor::{Data, Executor, MemoryStorage};
///
/// #[derive(Clone)]
/// struct Mailer { from: String }
///
/// #[derive(Serialize, Deserialize)]
/// struct Welcome { to: String }
///
/// #[reliable_task(name = "send_welcome")]
/// async fn send_welcome(mail: Welcome, mailer: Data<Mailer>, ctx: TaskContext) -> Result<(), TaskError> {
///     println!("{} -> {} (task {})", mailer.from, mail.to, ctx.id());
///     Ok(())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), reliable_executor::Error> {
/// let executor = Executor::builder(MemoryStorage::new())
///     .data(Mailer { from: "hello@example.com".into() })
///     .build()
///     .await?;
/// send_welcome::submit(&executor, Welcome { to: "ada@example.com".into() }).await?;
/// # Ok(())
/// # }
/// ```
///
/// Parameters come after the payload, in any order: `Data<T>` for each
/// type given with `.data(..)`, and `TaskContext`. The executor clones the
/// value for every attempt, so share expensive state through a handle that
/// is cheap to clone (a pool, an `Arc`). `build()` refuses to start when a
/// handler asks for a type that was not given, naming both.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Data<T>(pub T);

impl<T> Data<T> {
    /// The value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Data<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Data<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Data<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Data").field(&self.0).finish()
    }
}

/// One type a handler receives as `Data<T>`, declared by the code
/// `#[reliable_task]` generates so `build()` can check it. Not for users.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct DataNeed {
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl DataNeed {
    /// The need of a `Data<T>` parameter.
    pub const fn of<T: 'static>() -> Self {
        Self { type_id: TypeId::of::<T>, type_name: std::any::type_name::<T> }
    }

    /// The type's name, for errors.
    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }

    pub(crate) fn type_id(&self) -> TypeId {
        (self.type_id)()
    }
}

/// The values given to the builder, by type.
#[derive(Clone, Default)]
pub(crate) struct DataMap(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl fmt::Debug for DataMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataMap({} values)", self.0.len())
    }
}

impl DataMap {
    /// Adds `value`, replacing an earlier value of the same type.
    pub(crate) fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// A clone of the value of type `T`, if one was given.
    pub(crate) fn get<T: Clone + 'static>(&self) -> Option<T> {
        self.0.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref::<T>()).cloned()
    }

    pub(crate) fn has(&self, need: &DataNeed) -> bool {
        self.0.contains_key(&need.type_id())
    }
}

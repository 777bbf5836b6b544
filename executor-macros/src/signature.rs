//! What a handler's signature says: its payload type, whether it takes a
//! `TaskContext`, and every way it is not a handler the runtime can call.

use syn::{FnArg, GenericParam, ItemFn, PatType, Type, TypeReference};

use crate::diagnostics::Errors;

/// One parameter of a handler, in the order the user wrote them.
pub(crate) enum Param {
    /// The decoded payload (always first when present).
    Payload,
    /// The attempt's `TaskContext`.
    Context,
    /// `Data<T>`: the application's value of type `T` (the type held).
    Data(Box<Type>),
}

/// A handler's accepted shape: the payload first if any, then
/// `TaskContext` and `Data<T>` parameters in any order.
#[derive(Default)]
pub(crate) struct Signature {
    /// The payload type, if the handler takes one.
    pub(crate) payload: Option<Type>,
    /// Whether it takes a `TaskContext`.
    pub(crate) context: bool,
    /// Every parameter, in order.
    pub(crate) params: Vec<Param>,
}

impl Signature {
    /// Checks `f`, recording every problem in `errors`.
    pub(crate) fn check(f: &ItemFn, errors: &mut Errors) -> Self {
        let sig = &f.sig;
        if sig.asyncness.is_none() {
            errors.at(
                sig.fn_token,
                "a #[reliable_task] handler must be an `async fn`: write `async fn` (the runtime awaits it \
                 on a worker)",
            );
        }
        if let Some(t) = &sig.constness {
            errors.at(t, "a #[reliable_task] handler cannot be a `const fn`; remove `const`");
        }
        if let Some(t) = &sig.unsafety {
            errors.at(
                t,
                "a #[reliable_task] handler cannot be an `unsafe fn`: the runtime calls it with any payload; \
                 remove `unsafe` and keep the unsafe block inside",
            );
        }
        if let Some(abi) = &sig.abi {
            errors.at(abi, "a #[reliable_task] handler cannot have an ABI; remove it");
        }
        if let Some(v) = &sig.variadic {
            errors.at(v, "a #[reliable_task] handler cannot be variadic");
        }
        generics(f, errors);

        let mut shape = Self::default();
        let mut context_arg: Option<&PatType> = None;
        // The first `TaskContext` or `Data<..>` seen, which a payload may not follow.
        let mut extractor: Option<(&PatType, &'static str)> = None;
        for arg in &sig.inputs {
            let arg = match arg {
                FnArg::Receiver(receiver) => {
                    errors.at(
                        receiver,
                        "a #[reliable_task] handler cannot take `self`: the runtime has no value to call it \
                         on; make it a free function and pass what it needs in the payload",
                    );
                    continue;
                }
                FnArg::Typed(arg) => arg,
            };
            if is_context(&arg.ty) {
                if context_arg.is_some() {
                    errors.at(&arg.ty, "a handler takes at most one `TaskContext`; remove this one");
                } else if let Type::Reference(_) = &*arg.ty {
                    errors.at(
                        &arg.ty,
                        "take the `TaskContext` by value: `ctx: TaskContext` (it is cheap to clone)",
                    );
                }
                context_arg = context_arg.or(Some(arg));
                extractor = extractor.or(Some((arg, "`TaskContext`")));
                shape.context = true;
                shape.params.push(Param::Context);
                continue;
            }
            if let Some(held) = data_type(&arg.ty, errors) {
                extractor = extractor.or(Some((arg, "`Data<..>`")));
                if let Some(held) = held {
                    shape.params.push(Param::Data(Box::new(held)));
                }
                continue;
            }
            if let Some((first, what)) = extractor {
                errors.at(
                    &first.ty,
                    format!(
                        "{what} must come after the payload: \
                         `async fn name(payload: P, ctx: TaskContext, db: Data<Pool>)`"
                    ),
                );
            }
            if shape.payload.is_some() {
                errors.at(
                    arg,
                    "a #[reliable_task] handler takes one payload parameter; put the values in one \
                     struct: `#[derive(Serialize, Deserialize)] struct Params { .. }`. To receive the \
                     application's state (a pool, a client, config), take `Data<ThatType>` and give the \
                     value to the executor builder with `.data(value)`",
                );
                continue;
            }
            if payload_type_ok(&arg.ty, errors) {
                shape.payload = Some((*arg.ty).clone());
                shape.params.push(Param::Payload);
            }
        }
        shape
    }
}

/// `Some(Some(T))` for a well-formed `Data<T>`, `Some(None)` for a misused
/// one (reported), `None` for any other type.
fn data_type(ty: &Type, errors: &mut Errors) -> Option<Option<Type>> {
    match ty {
        Type::Reference(r) if data_type(&r.elem, &mut Errors::default()).is_some() => {
            errors.at(
                ty,
                "take `Data<T>` by value: `db: Data<Pool>` (the executor clones it for each attempt)",
            );
            Some(None)
        }
        Type::Paren(p) => data_type(&p.elem, errors),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Data" {
                return None;
            }
            let held = match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            };
            match held {
                Some(Type::Reference(r)) => {
                    errors.at(
                        &r,
                        "`Data` holds an owned value the executor clones for each attempt: \
                         `Data<Pool>`, not `Data<&Pool>`",
                    );
                    Some(None)
                }
                Some(t) => Some(Some(t)),
                None => {
                    errors.at(ty, "write `Data<T>` with the one type it holds, e.g. `Data<MySqlPool>`");
                    Some(None)
                }
            }
        }
        _ => None,
    }
}

fn generics(f: &ItemFn, errors: &mut Errors) {
    let generics = &f.sig.generics;
    let help = "a #[reliable_task] handler cannot be generic: the runtime must know the payload type to \
                decode it; use a concrete type (an enum if it takes several kinds of payload)";
    for param in &generics.params {
        match param {
            GenericParam::Lifetime(l) => errors.at(
                l,
                "a #[reliable_task] handler cannot have lifetime parameters: its payload is decoded \
                 into an owned value; remove the lifetime",
            ),
            _ => errors.at(param, help),
        }
    }
    if let Some(w) = &generics.where_clause {
        errors.at(w, help);
    }
    for arg in &f.sig.inputs {
        if let FnArg::Typed(arg) = arg
            && let Type::ImplTrait(t) = &*arg.ty
        {
            errors.at(t, help);
        }
    }
}

/// Whether `ty` is the task context: any path ending in `TaskContext`
/// (`TaskContext`, `reliable_executor::TaskContext`, `&TaskContext`).
fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().is_some_and(|s| s.ident == "TaskContext")
        }
        Type::Reference(r) => is_context(&r.elem),
        Type::Paren(p) => is_context(&p.elem),
        _ => false,
    }
}

/// Payload types the macro refuses before the compiler would, with a better
/// message. Serde bounds are checked by the compiler (see `expand`).
fn payload_type_ok(ty: &Type, errors: &mut Errors) -> bool {
    match ty {
        Type::Reference(TypeReference { elem, .. }) => {
            let owned = match &**elem {
                Type::Path(p) if p.path.is_ident("str") => "`String`".to_owned(),
                Type::Slice(s) => {
                    let elem = &s.elem;
                    format!("`Vec<{}>`", quote::quote!(#elem))
                }
                _ => "an owned type".to_owned(),
            };
            errors.at(
                ty,
                format!(
                    "the payload is decoded from JSON into a value the handler owns, so it cannot be a \
                     reference: take {owned} instead"
                ),
            );
            false
        }
        // Reported as generic by `generics`.
        Type::ImplTrait(_) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(item: &str) -> (Signature, Vec<String>) {
        let f: ItemFn = match syn::parse_str(item) {
            Ok(f) => f,
            Err(e) => panic!("test input does not parse: {e}"),
        };
        let mut errors = Errors::default();
        let sig = Signature::check(&f, &mut errors);
        (sig, errors.messages())
    }

    #[test]
    fn accepted_shapes() {
        let (s, e) = check("async fn a() {}");
        assert!(e.is_empty() && s.payload.is_none() && !s.context, "{e:?}");
        let (s, e) = check("async fn a(p: Order) -> Result<(), TaskError> { Ok(()) }");
        assert!(e.is_empty() && s.payload.is_some() && !s.context, "{e:?}");
        let (s, e) = check("async fn a(ctx: reliable_executor::TaskContext) {}");
        assert!(e.is_empty() && s.payload.is_none() && s.context, "{e:?}");
        let (s, e) = check("async fn a(Order { id }: Order, _: TaskContext) {}");
        assert!(e.is_empty() && s.payload.is_some() && s.context, "{e:?}");
        let (s, e) = check(
            "async fn a(p: Order, db: Data<Pool>, ctx: TaskContext, c: reliable_executor::Data<Cfg>) {}",
        );
        assert!(e.is_empty() && s.payload.is_some() && s.context && s.params.len() == 4, "{e:?}");
        let (s, e) = check("async fn a(db: Data<Pool>) {}");
        assert!(e.is_empty() && s.payload.is_none() && s.params.len() == 1, "{e:?}");
    }

    #[test]
    fn refused_shapes_each_say_why() {
        let cases = [
            ("fn a() {}", "must be an `async fn`"),
            ("async fn a(&self) {}", "cannot take `self`"),
            ("async fn a<T>(p: T) {}", "cannot be generic"),
            ("async fn a(p: impl Serialize) {}", "cannot be generic"),
            ("async fn a<'a>(p: Cow<'a, str>) {}", "lifetime parameters"),
            ("async fn a(p: u32, q: u32) {}", "one payload parameter"),
            ("async fn a(ctx: TaskContext, p: u32) {}", "must come after the payload"),
            ("async fn a(db: Data<Pool>, p: u32) {}", "must come after the payload"),
            ("async fn a(p: u32, db: &Data<Pool>) {}", "by value"),
            ("async fn a(p: u32, db: Data<&Pool>) {}", "owned value"),
            ("async fn a(p: u32, db: Pool) {}", "take `Data<ThatType>`"),
            ("async fn a(ctx: TaskContext, c: TaskContext) {}", "at most one `TaskContext`"),
            ("async fn a(ctx: &TaskContext) {}", "by value"),
            ("async fn a(p: &str) {}", "take `String` instead"),
            ("async fn a(p: &[u8]) {}", "take `Vec<u8>` instead"),
            ("async unsafe fn a() {}", "cannot be an `unsafe fn`"),
        ];
        for (item, expected) in cases {
            let (_, errors) = check(item);
            assert!(errors.iter().any(|e| e.contains(expected)), "{item}: {errors:?}");
        }
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let (_, errors) = check("fn a<T>(&self, p: u32, q: u32) {}");
        assert_eq!(errors.len(), 4, "{errors:?}");
    }
}

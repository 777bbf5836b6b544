//! A handler inside a function body with a block-local payload type, a
//! public handler used from another module, and types named via `self::`.
mod handlers {
    use reliable_executor::prelude::*;

    #[derive(Serialize, Deserialize)]
    pub struct Email {
        pub to: String,
    }

    /// Sends one email.
    #[reliable_task(name = "send_email")]
    pub async fn send_email(email: self::Email) -> Result<(), TaskError> {
        let _ = email.to;
        Ok(())
    }
}

fn main() {
    let _ = handlers::send_email::with(handlers::Email { to: "a@example.com".into() });

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Local(u8);

    #[reliable_executor::reliable_task(name = "local")]
    async fn local(_l: Local) {}

    let _ = local::with(Local(1));
    let _ = local(Local(2));
}

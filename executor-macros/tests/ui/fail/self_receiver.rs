use executor_core::prelude::*;

struct Mailer;

impl Mailer {
    #[reliable_task(name = "send")]
    async fn send(&self) {}
}

fn main() {}

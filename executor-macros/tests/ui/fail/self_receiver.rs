use reliable_executor::prelude::*;

struct Mailer;

impl Mailer {
    #[reliable_task(name = "send")]
    async fn send(&self) {}
}

fn main() {}

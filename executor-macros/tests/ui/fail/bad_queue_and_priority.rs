use reliable_executor::reliable_task;

#[reliable_task(name = "spaced", queue = "e mails")]
async fn spaced() {}

#[reliable_task(name = "empty", queue = "")]
async fn empty() {}

#[reliable_task(name = "not_a_string", queue = emails)]
async fn not_a_string() {}

#[reliable_task(name = "too_high", priority = 10)]
async fn too_high() {}

#[reliable_task(name = "negative", priority = -1)]
async fn negative() {}

fn main() {}

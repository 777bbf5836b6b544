//! MySQL/MariaDB storage for executor-core (in progress).

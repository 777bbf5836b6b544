//! HTTP admin API, dashboard and Prometheus endpoint (in progress).

//! Presenters: what the commands print or write for people and scrapers (the per-window table,
//! the HTML report page, the Prometheus metrics), apart from the commands that gather it.

pub(crate) mod html;
pub(crate) mod live;
pub(crate) mod metrics;
pub(crate) mod table;

//! Presenters: what the commands print or write for people and scrapers (the per-window table,
//! the HTML report page, the interaction panel, the live run's end-of-run lines and its
//! Prometheus metrics), apart from the commands that gather it.

pub(crate) mod html;
pub(crate) mod live;
pub(crate) mod metrics;
pub(crate) mod panel;
pub(crate) mod table;

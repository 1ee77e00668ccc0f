//! `jouleclaw live --metrics ADDR`: Prometheus text metrics of the running substrate, served
//! over HTTP/1.1 on a loopback address only (spec/LIVE.md section 10).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use jouleclaw_live::Substrate;
use jouleclaw_live::synth::Latency;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// What the metrics are read from.
pub(crate) struct Source {
    /// The substrate (its counters and its sink's).
    pub(crate) substrate: Substrate,
    /// Push latency.
    pub(crate) push: Arc<Latency>,
    /// Tick-to-yield latency.
    pub(crate) yields: Arc<Latency>,
    /// The generator's lag behind its schedule.
    pub(crate) lag: Arc<Latency>,
    /// Windows and ticks the run's calls scheduled.
    pub(crate) scheduled: (u64, u64),
    /// -1 while the run lasts; at its end 1 when it kept up with its schedule, 0 when it fell
    /// behind (`synth::Capacity::kept_up`).
    pub(crate) kept_up: Arc<AtomicI64>,
}

type Labels = Vec<(String, String)>;

fn counter(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let c: Counter = Counter::default();
    c.inc_by(v);
    reg.register(name, help, c);
}

fn gauge(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let g: Gauge = Gauge::default();
    g.set(i64::try_from(v).unwrap_or(i64::MAX));
    reg.register(name, help, g);
}

fn quantiles(reg: &mut Registry, name: &str, help: &str, l: &Latency) {
    let fam = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    for q in [0.5, 0.9, 0.99] {
        fam.get_or_create(&vec![("quantile".to_owned(), q.to_string())])
            .set(l.quantile_us(q) as f64 / 1e6);
    }
    fam.get_or_create(&vec![("quantile".to_owned(), "1".to_owned())])
        .set(l.max_us() as f64 / 1e6);
    reg.register(name, help, fam);
}

/// The sink's ack latency, bucketed by the sink itself (`SinkStats::lag_buckets`).
#[derive(Debug)]
struct AckHistogram {
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl prometheus_client::encoding::EncodeMetric for AckHistogram {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        let mut buckets = self.buckets.clone();
        let bucketed: u64 = buckets.iter().map(|(_, n)| n).sum();
        buckets.push((f64::INFINITY, self.count.saturating_sub(bucketed)));
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.sum, self.count, &buckets, None,
        )
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

/// The metrics now, in the Prometheus text format.
pub(crate) fn render(s: &Source) -> String {
    let mut reg = Registry::with_prefix("jouleclaw");
    streams_and_windows(&mut reg, s);
    ticks(&mut reg, s.substrate.stats());
    receipts(&mut reg, s.substrate.sink_stats());
    latencies_and_schedule(&mut reg, s);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

/// Streams, windows and checkpoints.
fn streams_and_windows(reg: &mut Registry, s: &Source) {
    let st = s.substrate.stats();
    let sk = s.substrate.sink_stats();
    let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
    gauge(
        reg,
        "streams_open",
        "Streams open now",
        s.substrate.open_streams() as u64,
    );
    counter(
        reg,
        "streams_opened",
        "Streams opened",
        r(&st.streams_opened),
    );
    counter(
        reg,
        "streams_sealed",
        "Streams whose final batch (final seal) is durable: live's sealed durable",
        r(&sk.seals_durable),
    );
    counter(
        reg,
        "streams_final_signed",
        "Streams closed with their final seal signed (durable or not)",
        r(&st.streams_sealed),
    );
    counter(
        reg,
        "streams_failed",
        "Streams failed, each once (by its workers or the sink)",
        r(&st.failed_streams),
    );
    counter(
        reg,
        "windows",
        "Windows closed (receipts minted)",
        r(&st.windows),
    );
    counter(reg, "checkpoints", "Checkpoints signed", r(&st.checkpoints));
    counter(reg, "ticks_accepted", "Ticks accepted", r(&st.accepted));
}

/// Ticks refused by code, windows by verdict and by finding.
fn ticks(reg: &mut Registry, st: &jouleclaw_live::SubstrateStats) {
    let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let closed = r(&st.refused_closed);
    let overloaded = r(&st.refused_overloaded);
    let other = r(&st.refused).saturating_sub(closed + overloaded);
    let refused = [
        ("window_closed", closed),
        ("overloaded", overloaded),
        ("other", other),
    ];
    by_label(
        reg,
        "ticks_refused",
        "Ticks refused, by code",
        "code",
        refused,
    );
    let verdicts = jouleclaw_live::VERDICT_KINDS.iter().zip(&st.verdicts);
    by_label(
        reg,
        "window_verdicts",
        "Windows minted, by composite verdict",
        "verdict",
        verdicts.map(|(kind, v)| (*kind, r(v))),
    );
    let findings = jouleclaw_live::FINDING_KINDS.iter().zip(&st.findings);
    by_label(
        reg,
        "window_findings",
        "Windows minted, by conservation finding",
        "finding",
        findings.map(|(kind, v)| (*kind, r(v))),
    );
}

/// Registers a counter family `name` with one counter per `(label value, count)`.
fn by_label<'a>(
    reg: &mut Registry,
    name: &str,
    help: &str,
    label: &str,
    counts: impl IntoIterator<Item = (&'a str, u64)>,
) {
    let family = Family::<Labels, Counter>::default();
    for (value, v) in counts {
        family
            .get_or_create(&vec![(label.to_owned(), value.to_owned())])
            .inc_by(v);
    }
    reg.register(name, help, family);
}

/// The receipts' fate at the sink, and its journal.
fn receipts(reg: &mut Registry, sk: &jouleclaw_live::SinkStats) {
    let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
    counter(
        reg,
        "receipts_durable",
        "Receipts acknowledged or fsynced by the sink",
        r(&sk.receipts_durable),
    );
    gauge(
        reg,
        "receipts_pending",
        "Receipts journaled and not acknowledged",
        r(&sk.receipts_pending),
    );
    gauge(
        reg,
        "receipts_unknown_fate",
        "At the drain timeout: pending receipts sent without an ack (the cluster may hold them)",
        r(&sk.receipts_unknown_fate),
    );
    gauge(
        reg,
        "receipts_unsent",
        "At the drain timeout: pending receipts never sent",
        r(&sk.receipts_unsent),
    );
    gauge(
        reg,
        "journal_undelivered",
        "When the sink ended: batches the journal file lists undelivered",
        r(&sk.journal_undelivered),
    );
    gauge(
        reg,
        "journal_unmarked",
        "When the sink ended: of them, acknowledged without their delivered mark on disk",
        r(&sk.journal_unmarked),
    );
    counter(
        reg,
        "journal_write_errors",
        "Journal writes that failed and were cut back",
        r(&sk.journal_write_errors),
    );
    counter(
        reg,
        "receipts_lost",
        "Receipts neither durable nor journaled",
        r(&sk.receipts_lost),
    );
    counter(
        reg,
        "sink_retries",
        "Publish attempts that failed and were retried",
        r(&sk.retries),
    );
    gauge(
        reg,
        "journal_bytes",
        "Bytes of undelivered batches in the journal",
        r(&sk.journal_bytes),
    );
}

/// The sink's acknowledgement latency, the push, tick-to-yield and generator latencies, the
/// schedule and whether the run kept up with it.
fn latencies_and_schedule(reg: &mut Registry, s: &Source) {
    let sk = s.substrate.sink_stats();
    let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
    // Per-bucket counts: the encoder makes them cumulative.
    let buckets: Vec<(f64, u64)> = jouleclaw_live::LAG_BUCKETS_MS
        .iter()
        .zip(&sk.lag_buckets)
        .map(|(ms, n)| (*ms as f64 / 1e3, r(n)))
        .collect();
    reg.register(
        "sink_ack_latency_seconds",
        "Time from signing a checkpoint to its durability (ack or fsync)",
        AckHistogram {
            sum: r(&sk.sum_lag_ns) as f64 / 1e9,
            count: r(&sk.batches_durable),
            buckets,
        },
    );
    let lag: Gauge<f64, AtomicU64> = Gauge::default();
    lag.set(r(&sk.max_lag_ns) as f64 / 1e9);
    reg.register(
        "sink_lag_max_seconds",
        "Largest time from signing a checkpoint to its durability",
        lag,
    );
    quantiles(
        reg,
        "push_latency_seconds",
        "Push latency quantiles (1 is the maximum)",
        &s.push,
    );
    quantiles(
        reg,
        "tick_to_yield_seconds",
        "Tick-to-yield latency quantiles (1 is the maximum)",
        &s.yields,
    );
    gauge(
        reg,
        "scheduled_windows",
        "Windows the run's calls scheduled (beside windows_total, minted)",
        s.scheduled.0,
    );
    gauge(
        reg,
        "scheduled_ticks",
        "Ticks the run's calls scheduled (beside ticks_accepted_total)",
        s.scheduled.1,
    );
    quantiles(
        reg,
        "generator_lag_seconds",
        "The load generator's lag behind its schedule, quantiles (1 is the maximum)",
        &s.lag,
    );
    let kept: Gauge = Gauge::default();
    kept.set(s.kept_up.load(Ordering::Relaxed));
    reg.register(
        "kept_up",
        "-1 while the run lasts; then 1 when it kept up with its schedule, 0 when it fell behind",
        kept,
    );
}

/// Connections kept at once. A new connection past the bound closes the oldest one that is
/// not answering a request, preferring one that never sent a request: a local process that
/// opens connections and holds them cannot keep a scraper out (it only closes its own).
pub(crate) const MAX_CONNECTIONS: usize = 8;

/// How long a connection may take to send a request's headers, and to last in all.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection's state, for the choice of which one a new connection closes.
const FRESH: u8 = 0;
const ANSWERING: u8 = 1;
const SERVED: u8 = 2;

/// One connection being served.
struct Conn {
    id: u64,
    state: Arc<std::sync::atomic::AtomicU8>,
    abort: tokio::task::AbortHandle,
}

/// Which of `conns` (oldest first) a new connection closes: the oldest that never sent a
/// request, else the oldest that is not answering one; `None` when every one is answering.
fn to_close(conns: &std::collections::VecDeque<Conn>) -> Option<usize> {
    let st = |c: &Conn| c.state.load(Ordering::SeqCst);
    conns
        .iter()
        .position(|c| st(c) == FRESH)
        .or_else(|| conns.iter().position(|c| st(c) == SERVED))
}

/// Serves `page()` at `GET /metrics` on `addr`, which must be a loopback address; returns the
/// bound address (port 0 picks one). Runs until the runtime stops. At most
/// [`MAX_CONNECTIONS`] connections at once, each bounded in time; past the bound a new
/// connection closes an idle one ([`MAX_CONNECTIONS`]): memory stays bounded and connections
/// held open do not starve the scrape.
pub(crate) async fn serve(
    addr: SocketAddr,
    page: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<SocketAddr> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("--metrics {addr}: only a loopback address (127.0.0.0/8, ::1) is served"),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let page = Arc::new(page);
    let conns = Arc::new(std::sync::Mutex::new(
        std::collections::VecDeque::<Conn>::new(),
    ));
    jouleclaw_live::tokio::spawn(async move {
        let mut next_id = 0u64;
        while let Ok((conn, _)) = listener.accept().await {
            // Held while the task is spawned and listed: a task that ends at once removes
            // itself only after it is listed.
            let Ok(mut list) = conns.lock() else { return };
            if list.len() >= MAX_CONNECTIONS {
                match to_close(&list) {
                    Some(i) => {
                        if let Some(old) = list.remove(i) {
                            old.abort.abort();
                        }
                    }
                    None => {
                        // Every connection is answering a request: closed unanswered.
                        drop(conn);
                        continue;
                    }
                }
            }
            next_id += 1;
            let id = next_id;
            let state = Arc::new(std::sync::atomic::AtomicU8::new(FRESH));
            let page = Arc::clone(&page);
            let (task_state, task_conns) = (Arc::clone(&state), Arc::clone(&conns));
            let task = jouleclaw_live::tokio::spawn(async move {
                let svc_state = Arc::clone(&task_state);
                let service =
                    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let page = Arc::clone(&page);
                        let state = Arc::clone(&svc_state);
                        async move {
                            state.store(ANSWERING, Ordering::SeqCst);
                            let r = if req.method() == hyper::Method::GET
                                && req.uri().path() == "/metrics"
                            {
                                Response::builder()
                                    .header(
                                        "content-type",
                                        "text/plain; version=0.0.4; charset=utf-8",
                                    )
                                    .body(Full::new(Bytes::from(page())))
                            } else {
                                Response::builder()
                                    .status(StatusCode::NOT_FOUND)
                                    .body(Full::new(Bytes::from_static(b"GET /metrics\n")))
                            };
                            state.store(SERVED, Ordering::SeqCst);
                            r
                        }
                    });
                let served = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(hyper_util::rt::TokioIo::new(conn), service);
                let _ = tokio::time::timeout(CONNECTION_TIMEOUT, served).await;
                if let Ok(mut list) = task_conns.lock() {
                    list.retain(|c| c.id != id);
                }
            });
            list.push_back(Conn {
                id,
                state,
                abort: task.abort_handle(),
            });
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn get(addr: SocketAddr) -> std::io::Result<String> {
        let mut c = TcpStream::connect(addr).await?;
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await?;
        let mut out = String::new();
        c.read_to_string(&mut out).await?;
        Ok(out)
    }

    #[tokio::test]
    async fn connections_held_open_never_keep_a_scrape_out() {
        let addr = serve("127.0.0.1:0".parse().unwrap(), || "up 1\n".to_owned())
            .await
            .unwrap();
        assert!(get(addr).await.unwrap().ends_with("up 1\n"));
        // A local process holds every slot with connections that send nothing (before: the
        // next scrape was closed unanswered, 20 of 20).
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        // Accepted in order: the held ones are listed before the scrape's.
        for round in 0..20 {
            assert!(
                get(addr).await.unwrap_or_default().ends_with("up 1\n"),
                "scrape {round} kept out"
            );
            // The holder opens one more each time, as it would to keep the slots.
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        // What was closed is the oldest held connection, never answered (bounded read).
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(5), idle[0].read(&mut buf))
            .await
            .expect("the oldest held connection is closed")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }

    /// `streams_sealed_total` said 300 where live said 0 sealed durable: it counted final
    /// seals signed. A stream whose final batch the sink could not store is sealed (signed)
    /// but neither durable nor counted sealed; it is counted failed once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sealed_and_failed_streams_are_counted_as_live_counts_them() {
        use jouleclaw_live::{FileSink, Substrate, SubstrateConfig, TokioClock};
        use jouleclaw_stream::{Tick, TickKind, duplex};
        let dir = std::env::temp_dir().join(format!("jc-metrics-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A folder another run left: that stream's (final) batch is refused stream_exists.
        std::fs::create_dir_all(dir.join("taken.partial")).unwrap();
        let s = Substrate::start(
            SubstrateConfig::new("did:example:steward"),
            Arc::new(TokioClock::new(1_780_617_600)),
            Arc::new(jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key()),
            Box::new(FileSink::new(&dir).unwrap()),
        )
        .unwrap();
        for id in ["taken", "free"] {
            let h = s.open_stream(id).unwrap();
            let ts = h.now_ns();
            h.push(Tick::new(
                ts / h.window_ns(),
                duplex::MIC,
                TickKind::Audio,
                Bytes::from(vec![0u8; 320]),
                ts,
            ))
            .unwrap();
            h.close().await.unwrap();
        }
        s.shutdown().await.unwrap();
        let page = render(&Source {
            substrate: s,
            push: Arc::new(Latency::default()),
            yields: Arc::new(Latency::default()),
            lag: Arc::new(Latency::lag()),
            scheduled: (2, 3),
            kept_up: Arc::new(AtomicI64::new(0)),
        });
        let _ = std::fs::remove_dir_all(&dir);
        for line in [
            "jouleclaw_streams_sealed_total 1\n",
            "jouleclaw_streams_final_signed_total 2\n",
            "jouleclaw_streams_failed_total 1\n",
            "jouleclaw_scheduled_windows 2\n",
            "jouleclaw_scheduled_ticks 3\n",
            "jouleclaw_kept_up 0\n",
            "jouleclaw_generator_lag_seconds{quantile=\"0.99\"} 0",
        ] {
            assert!(page.contains(line), "{line}{page}");
        }
    }

    #[tokio::test]
    async fn only_loopback_is_served() {
        let e = serve("0.0.0.0:0".parse().unwrap(), String::new)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}

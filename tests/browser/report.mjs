// Browser test of `jouleclaw report` (spec/REPORT.md, "Browser test").
//
// Runs the demo trace through the real binary, writes the report, renders it in headless
// Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: no port, no npm package), takes a screenshot and checks through the
// DOM that the timeline has one column per window and that the verification badge is present.
// It also checks that the page ran no script and fetched nothing.
//
// Usage: node tests/browser/report.mjs --jouleclaw target/debug/jouleclaw --screenshot OUT.png
//        [--chromium /usr/bin/chromium]
// Exit 0 when every check passes, 1 otherwise. Stops by itself after 90 s.
// No dependencies beyond Node (>= 18) and Chromium.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
function arg(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const jouleclaw = resolve(arg("--jouleclaw", join(repo, "target/debug/jouleclaw")));
const screenshot = resolve(arg("--screenshot", join(tmpdir(), "jouleclaw-report.png")));
const chromiumBin = arg("--chromium", "/usr/bin/chromium");
const EXPECTED_WINDOWS = 13;

const work = mkdtempSync(join(tmpdir(), "jouleclaw-browser-"));
let chromium = null;
const failures = [];
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
}
async function finish(code) {
  // Chromium writes to its profile until it has exited: wait for that (at most 5 s) first.
  if (chromium && chromium.exitCode === null && chromium.signalCode === null) {
    const exited = new Promise((ok) => chromium.once("exit", ok));
    const grace = setTimeout(() => chromium.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(grace);
  }
  try {
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  } catch (e) {
    console.error(`note: could not remove ${work}: ${e.message}`);
  }
  process.exit(code);
}
const deadline = setTimeout(() => {
  console.error("FAIL browser test timed out after 90 s");
  if (chromium) chromium.kill("SIGKILL");
  finish(1);
}, 90_000);

// 1. The demo run and its report, with the real binary.
const out = join(work, "d");
// The trace by its path relative to the repository, as summary.json (and the page) record it.
// Sealed, so that the page can say the stream is complete (an unsealed one is refused).
execFileSync(jouleclaw, ["run", "conformance/traces/duplex-demo.jsonl", "--seal-every", "5", "--out", out, "--quiet"], {
  cwd: repo,
  stdio: ["ignore", "ignore", "ignore"],
});
const page = join(out, "report.html");
execFileSync(jouleclaw, ["report", out, "-o", page], { stdio: ["ignore", "inherit", "ignore"] });

// 2. Chromium with the DevTools protocol on fds 3 (to the browser) and 4 (from it).
chromium = spawn(
  chromiumBin,
  [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    `--user-data-dir=${join(work, "profile")}`,
    "--remote-debugging-pipe",
    "about:blank",
  ],
  { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] },
);
chromium.on("exit", (code) => {
  if (failures.length === 0 && !done) {
    console.error(`FAIL chromium exited early (code ${code})`);
    finish(1);
  }
});
const toBrowser = chromium.stdio[3];
const fromBrowser = chromium.stdio[4];
let done = false;
let nextId = 1;
const pending = new Map();
const listeners = [];
let buffer = Buffer.alloc(0);
fromBrowser.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  let nul;
  while ((nul = buffer.indexOf(0)) >= 0) {
    const msg = JSON.parse(buffer.subarray(0, nul).toString("utf8"));
    buffer = buffer.subarray(nul + 1);
    if (msg.id !== undefined && pending.has(msg.id)) {
      const { ok, fail } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) fail(new Error(`${msg.error.message} (${msg.error.code})`));
      else ok(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});
function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  return new Promise((ok, fail) => {
    pending.set(id, { ok, fail });
    toBrowser.write(JSON.stringify(msg) + "\0");
  });
}
function once(method, sessionId) {
  return new Promise((ok) => {
    const l = (msg) => {
      if (msg.method === method && msg.sessionId === sessionId) {
        listeners.splice(listeners.indexOf(l), 1);
        ok(msg.params);
      }
    };
    listeners.push(l);
  });
}

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const s = (m, p) => send(m, p, sessionId);
  const requests = [];
  listeners.push((msg) => {
    if (msg.sessionId === sessionId && msg.method === "Network.requestWillBeSent") {
      requests.push(msg.params.request.url);
    }
  });
  await s("Page.enable");
  await s("Network.enable");
  await s("Runtime.enable");
  await s("Emulation.setDeviceMetricsOverride", {
    width: 1280,
    height: 900,
    deviceScaleFactor: 1,
    mobile: false,
  });
  const url = pathToFileURL(page).href;
  const loaded = once("Page.loadEventFired", sessionId);
  await s("Page.navigate", { url });
  await loaded;

  // 3. The DOM, as Chromium rendered it.
  const { result } = await s("Runtime.evaluate", {
    returnByValue: true,
    expression: `(() => {
      const cols = [...document.querySelectorAll("#timeline svg.strip g.window")];
      const ids = cols.map((g) => Number(g.dataset.window));
      const boxes = cols.map((g) => g.getBBox());
      const badge = document.getElementById("verification");
      const summary = document.getElementById("summary");
      const top = summary ? summary.getBoundingClientRect().bottom + window.scrollY : 1600;
      return {
        columns: cols.length,
        ids,
        rendered: boxes.filter((b) => b.width > 0 && b.height > 0).length,
        verdicts: cols.map((g) => g.dataset.verdict),
        findings: cols.map((g) => g.dataset.finding),
        badgeText: badge ? badge.textContent : null,
        badgeClass: badge ? badge.className : null,
        badgeVisible: badge ? badge.getBoundingClientRect().height > 0 : false,
        scripts: document.scripts.length,
        tableRows: document.querySelectorAll("#receipts tbody tr").length,
        interaction: (() => {
          const e = document.getElementById("interaction-status");
          return e ? { text: e.textContent, visible: e.getBoundingClientRect().height > 0 } : null;
        })(),
        panelRows: document.querySelectorAll("#interaction-panel tr[data-metric]").length,
        sealNotes: ["stop-latency-seal", "interaction-seal"].map((id) => {
          const e = document.getElementById(id);
          return e ? e.textContent : null;
        }),
        height: Math.ceil(top + 16),
        width: document.documentElement.scrollWidth,
      };
    })()`,
  });
  const dom = result.value;
  check(dom.columns === EXPECTED_WINDOWS, `timeline has ${dom.columns} columns, one per window (${EXPECTED_WINDOWS})`);
  check(
    JSON.stringify(dom.ids) === JSON.stringify([...Array(EXPECTED_WINDOWS).keys()]),
    `columns are windows 0..${EXPECTED_WINDOWS - 1} in order`,
  );
  check(dom.rendered === EXPECTED_WINDOWS, `every column is rendered with a non-empty box (${dom.rendered})`);
  check(
    dom.verdicts.filter((v) => v === "yield").length === 2 && dom.verdicts[6] === "yield" && dom.verdicts[10] === "yield",
    "windows 6 and 10 are the two yields",
  );
  check(dom.findings[9] === "hallucination" && dom.findings[10] === "barge_in_ignored", "window 9 hallucination, window 10 barge-in ignored");
  check(dom.badgeText !== null && dom.badgeVisible, "the verification badge is present and visible");
  check(
    dom.badgeClass === "badge ok" && /13\/13 receipts/.test(dom.badgeText || ""),
    `the badge says 13/13 verified (${JSON.stringify(dom.badgeText)})`,
  );
  check(dom.tableRows === EXPECTED_WINDOWS, `the receipt table has ${dom.tableRows} rows`);
  check(
    dom.interaction !== null && dom.interaction.visible && /verified and bound to the receipts/.test(dom.interaction.text),
    `the interaction section is drawn from its verified document (${JSON.stringify(dom.interaction)})`,
  );
  check(dom.panelRows === 9, `the interaction panel has ${dom.panelRows} metric rows (9)`);
  check(
    /^stop latency sealed: /.test(dom.sealNotes[0] || "") && /^interaction panel sealed: /.test(dom.sealNotes[1] || ""),
    `both documents are inside the final seal (${JSON.stringify(dom.sealNotes)})`,
  );
  check(dom.scripts === 0, "the page holds no script");
  const foreign = requests.filter((u) => u !== url);
  check(foreign.length === 0, `the page fetched nothing besides itself (${foreign.join(", ") || "none"})`);
  check(dom.width <= 1280, `no horizontal overflow at 1280 px (${dom.width})`);

  // 4. The screenshot: the page from the header through the summary counts.
  const shot = await s("Page.captureScreenshot", {
    format: "png",
    captureBeyondViewport: true,
    clip: { x: 0, y: 0, width: 1280, height: dom.height, scale: 1 },
  });
  writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  const png = readFileSync(screenshot);
  check(png.subarray(1, 4).toString() === "PNG" && png.length > 10_000, `screenshot written: ${screenshot} (${png.length} bytes)`);

  // 5. A call with interaction events (one 200 ms frame, so one window, per token: u user
  // speech, a agent speech, b backchannel, v vocal tic, n non-directed speech): each event is
  // a mark with a non-empty box inside its window's column.
  const CALL = "u u u . . a a a a aub a a a a a a a . . v . . a a a au au a . . . . . . u u . " +
    "a a . u au u . . a a an a a a . .";
  const MARKERS = { u: "user_speech", b: "backchannel", v: "vocal_tic", n: "non_directed" };
  const lines = [];
  CALL.split(" ").forEach((t, k) => {
    const ts = k * 200_000_000;
    lines.push(JSON.stringify({ ts_ns: ts, channel_id: 1, kind: "audio", bytes_len: 640 }));
    for (const [c, m] of Object.entries(MARKERS)) {
      if (t.includes(c)) lines.push(JSON.stringify({ ts_ns: ts + 1000, channel_id: 0, kind: "marker", marker: { custom: m } }));
    }
    if (t.includes("a")) lines.push(JSON.stringify({ ts_ns: ts + 2000, channel_id: 3, kind: "audio", bytes_len: 480 }));
  });
  const trace = join(work, "call.jsonl");
  writeFileSync(trace, lines.join("\n") + "\n");
  const callDir = join(work, "call");
  execFileSync(jouleclaw, ["run", trace, "--seal-every", "5", "--out", callDir, "--quiet"], { stdio: ["ignore", "ignore", "ignore"] });
  const callPage = join(callDir, "report.html");
  execFileSync(jouleclaw, ["report", callDir, "-o", callPage], { stdio: ["ignore", "ignore", "ignore"] });
  const callLoaded = once("Page.loadEventFired", sessionId);
  await s("Page.navigate", { url: pathToFileURL(callPage).href });
  await callLoaded;
  const { result: callResult } = await s("Runtime.evaluate", {
    returnByValue: true,
    expression: `(() => {
      const marks = [...document.querySelectorAll("#timeline g.window g.event")];
      return {
        kinds: marks.map((g) => g.dataset.kind),
        rendered: marks.filter((g) => { const b = g.getBBox(); return b.width > 0 && b.height > 0; }).length,
        inColumn: marks.filter((g) => {
          const w = Number(g.dataset.window), col = g.closest("g.window");
          return Number(col.dataset.window) <= w && w <= Number(col.dataset.last);
        }).length,
        tableRows: document.querySelectorAll("#interaction-events tbody tr").length,
        width: document.documentElement.scrollWidth,
      };
    })()`,
  });
  const call = callResult.value;
  const want = ["response", "backchannel_correct", "vocal_tic_error", "yield", "response", "agent_interrupts_user", "response", "non_directed_error"];
  check(JSON.stringify(call.kinds) === JSON.stringify(want), `the call's events are on the timeline in frame order (${call.kinds.join(", ")})`);
  check(call.rendered === want.length && call.inColumn === want.length, `every event mark is rendered inside its window's column (${call.rendered}, ${call.inColumn})`);
  check(call.tableRows === want.length, `the event table has ${call.tableRows} rows`);
  check(call.width <= 1280, `no horizontal overflow at 1280 px with the interaction section (${call.width})`);

  done = true;
  send("Browser.close").catch(() => {});
} catch (e) {
  console.error(`FAIL ${e.stack || e}`);
  failures.push(String(e));
}
clearTimeout(deadline);
console.log(failures.length === 0 ? "browser test: all checks passed" : `browser test: ${failures.length} check(s) failed`);
if (failures.length > 0 && chromium.exitCode === null) chromium.kill("SIGKILL");
await finish(failures.length === 0 ? 0 : 1);

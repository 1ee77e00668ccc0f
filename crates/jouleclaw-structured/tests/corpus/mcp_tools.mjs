// Starts each installed MCP server over stdio (no network is needed: tools/list is local),
// sends initialize, notifications/initialized and tools/list only, and writes
// {"<package>": <tools/list result>, ...} to the file named by the last argument.
//
//   node mcp_tools.mjs NODE_MODULES_DIR PACKAGE[=ARG ...]... OUT.json
//
// Each server gets 20 s; one that does not answer, exits or answers an error fails the run
// (exit 1), never silently.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const [, , modules, ...rest] = process.argv;
const out = rest.pop();

function toolsList(pkg, args) {
  const meta = JSON.parse(readFileSync(join(modules, pkg, "package.json"), "utf8"));
  const bin = typeof meta.bin === "string" ? meta.bin : Object.values(meta.bin)[0];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(modules, pkg, bin), ...args], {
      stdio: ["pipe", "pipe", "ignore"],
      env: { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), "mcp-home-")) },
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${pkg}: no tools/list answer within 20 s`));
    }, 20000);
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if (msg.id === 1) {
          child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
          child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }) + "\n");
        } else if (msg.id === 2) {
          clearTimeout(timer);
          child.kill("SIGKILL");
          if (msg.error || !msg.result || !Array.isArray(msg.result.tools)) {
            reject(new Error(`${pkg}: tools/list failed: ${JSON.stringify(msg.error ?? msg)}`));
          } else {
            resolve(msg.result);
          }
        }
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${pkg}: exited (${code}) before answering tools/list`));
    });
    child.stdin.write(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "jouleclaw-corpus", version: "1" },
        },
      }) + "\n",
    );
  });
}

const result = {};
for (const spec of rest) {
  const [pkg, ...args] = spec.split("=");
  const argv = args.length ? args.join("=").split(" ") : [];
  try {
    result[pkg] = await toolsList(pkg, argv);
    console.error(`${pkg}: ${result[pkg].tools.length} tools`);
  } catch (e) {
    console.error(String(e.message ?? e));
    process.exit(1);
  }
}
writeFileSync(out, JSON.stringify(result));

// Starts each installed MCP server over stdio (no network is needed: tools/list is local),
// sends initialize, notifications/initialized and tools/list only, and writes
// {"<package>": <tools/list result>, ...} to the file named by the last argument.
//
//   node mcp_tools.mjs NODE_MODULES_DIR (PACKAGE[=ARG ...] | PACKAGE+VAR=VALUE[+VAR=VALUE]...)... OUT.json
//
// `+VAR=VALUE` sets an environment variable of that server (a placeholder API key some servers
// need to start; it is never used: no call is made). Each server runs in a network namespace
// of its own with no interface up (`unshare -n`, when the user may make one: root) and gets
// 20 s; one that does not answer, exits or answers an error fails the run (exit 1), never
// silently.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const [, , modules, ...rest] = process.argv;
const out = rest.pop();
const isolated = spawnSync("unshare", ["-n", "true"]).status === 0;
console.error(isolated ? "servers run without network (unshare -n)" : "note: unshare -n unavailable: servers run with the host's network");

function toolsList(pkg, args, env) {
  const meta = JSON.parse(readFileSync(join(modules, pkg, "package.json"), "utf8"));
  const bin = typeof meta.bin === "string" ? meta.bin : Object.values(meta.bin)[0];
  const argv = [join(modules, pkg, bin), ...args];
  return new Promise((resolve, reject) => {
    const [cmd, cmdArgs] = isolated ? ["unshare", ["-n", process.execPath, ...argv]] : [process.execPath, argv];
    const child = spawn(cmd, cmdArgs, {
      stdio: ["pipe", "pipe", "ignore"],
      env: { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), "mcp-home-")), ...env },
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
  // PACKAGE=ARG ARG... or PACKAGE+VAR=VALUE+VAR=VALUE... (npm names hold neither = nor +).
  let name = spec;
  let argv = [];
  const env = {};
  if (spec.includes("+")) {
    const [p, ...vars] = spec.split("+");
    name = p;
    for (const v of vars) {
      const i = v.indexOf("=");
      env[v.slice(0, i)] = v.slice(i + 1);
    }
  } else if (spec.includes("=")) {
    const i = spec.indexOf("=");
    name = spec.slice(0, i);
    argv = spec.slice(i + 1).split(" ");
  }
  try {
    result[name] = await toolsList(name, argv, env);
    console.error(`${name}: ${result[name].tools.length} tools`);
  } catch (e) {
    console.error(String(e.message ?? e));
    process.exit(1);
  }
}
writeFileSync(out, JSON.stringify(result));

// A client built on the official TypeScript SDK (@agentclientprotocol/sdk, as the pinned npm
// packages install it), for the tests: it starts AGENT, initializes with protocol 1 or 2,
// opens a session in CWD, sends PROMPT, waits for the turn's end (v1: the prompt's response;
// v2: state_update idle), closes the agent's stdin and prints what it saw as one JSON line.
//
//   node ts_sdk_client.mjs SDK_DIR PROTOCOL CWD PROMPT -- AGENT [ARGS]...
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, protocol, cwd, prompt, dashes, ...agent] = process.argv.slice(2);
if (dashes !== "--" || agent.length === 0) {
  console.error("usage: ts_sdk_client.mjs SDK_DIR PROTOCOL CWD PROMPT -- AGENT [ARGS]...");
  process.exit(2);
}
const entry = protocol === "2" ? "dist/v2/stable/acp.js" : "dist/v1/stable/acp.js";
const acp = await import(pathToFileURL(`${sdkDir}/${entry}`).href);

const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: 0, reads: [], errors: [] };
let idle;
const ended = new Promise((resolve) => (idle = resolve));

const app = acp.client({ name: "acp-proxy-tests-ts-sdk-client" });
app.onRequest(acp.methods.client.session.requestPermission, (cx) => {
  seen.permissions += 1;
  const allow = cx.params.options.find((option) => option.kind === "allow_once");
  return { outcome: { outcome: "selected", optionId: (allow ?? cx.params.options[0]).optionId } };
});
app.onNotification(acp.methods.client.session.update, (cx) => {
  const update = cx.params.update;
  seen.updates.push(update.sessionUpdate);
  if (update.sessionUpdate === "state_update" && update.state === "idle") {
    idle(update.stopReason);
  }
});
if (protocol !== "2") {
  app.onRequest(acp.methods.client.fs.readTextFile, (cx) => {
    seen.reads.push(cx.params.path);
    try {
      return { content: readFileSync(cx.params.path, "utf8") };
    } catch {
      throw acp.RequestError.resourceNotFound(cx.params.path);
    }
  });
}

let stopReason;
try {
  await app.connectWith(stream, async (cx) => {
    const init =
      protocol === "2"
        ? await cx.request(acp.methods.agent.initialize, {
            protocolVersion: 2,
            info: { name: "acp-proxy-tests-ts-sdk-client", version: "1.0.0" },
            capabilities: {},
          })
        : await cx.request(acp.methods.agent.initialize, {
            protocolVersion: 1,
            clientInfo: { name: "acp-proxy-tests-ts-sdk-client", version: "1.0.0" },
            clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
          });
    seen.protocol = init.protocolVersion;
    const session = await cx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const answer = await cx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    stopReason = protocol === "2" ? await ended : answer.stopReason;
  });
} catch (error) {
  seen.errors.push(String(error?.message ?? error));
}
child.stdin.end();
seen.exit = await exited;
seen.stopReason = stopReason;
process.stdout.write(JSON.stringify(seen) + "\n");

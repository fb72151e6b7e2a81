// Truss's MCP server under the official TypeScript SDK's client, which
// checks what Claude Code relies on: every tool declares an outputSchema,
// and a result of a tool that has one carries structuredContent that
// validates against it (the client refuses the result otherwise). On top,
// the structured content must hold the output the text block shows.
// Usage: node structured.cjs NODE_MODULES WORKSPACE
const { createRequire } = require("node:module");
const path = require("node:path");
const [nm, ws] = process.argv.slice(2);
const req = createRequire(path.join(nm, "noop.js"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = req("@modelcontextprotocol/sdk/client/stdio.js");

function check(ok, msg) {
  if (!ok) {
    console.error("FAIL " + msg);
    process.exit(1);
  }
  console.log("ok  " + msg);
}

(async () => {
  const client = new Client({ name: "truss-interop", version: "1" });
  await client.connect(new StdioClientTransport({
    command: "truss", args: ["mcp", "serve", "--root", ws, "--no-ledger", "--test-cmd", "echo 2 passed, 0 failed"],
    env: process.env,
  }));
  const { tools } = await client.listTools(); // caches the output validators
  for (const t of tools) {
    check(t.outputSchema && t.outputSchema.type === "object", `${t.name} declares an object outputSchema`);
  }
  const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const calls = [
    ["view", { path: "hello.txt" }, (r) => r.structuredContent.content === "hello from the workspace" && text(r).includes(r.structuredContent.content)],
    ["view", { path: "blob.bin" }, (r) => r.isError && r.structuredContent.binary.size === 4096 && text(r).includes("4096 bytes")],
    ["view", { path: "nope.txt" }, (r) => r.isError && r.structuredContent.error.kind === "not_found"],
    ["create", { path: "new.txt", content: "a\nb\n" }, (r) => r.structuredContent.changes[0].kind === "add"],
    ["replace", { path: "new.txt", old_str: "b", new_str: "B" }, (r) => r.structuredContent.snippet.text === "a\nB" && text(r).includes("     2\tB")],
    ["insert", { path: "new.txt", line: 0, text: "top" }, (r) => r.structuredContent.snippet.text.startsWith("top")],
    ["patch", { patch: "*** Begin Patch\n*** Add File: p.txt\n+pea\n*** End Patch\n" }, (r) => r.structuredContent.changes[0].path === "p.txt"],
    ["shell", { command: "cat hello.txt; echo warn >&2; (exit 4)" }, (r) => r.isError && r.structuredContent.stdout === "hello from the workspace\n" &&
      r.structuredContent.stderr === "warn\n" && r.structuredContent.exit_code === 4 && text(r).includes("hello from the workspace") && text(r).includes("[exit code: 4]")],
    ["validate", {}, (r) => r.structuredContent.passed === true && text(r).includes(r.structuredContent.summary)],
  ];
  for (const [name, args, ok] of calls) {
    const r = await client.callTool({ name, arguments: args }); // throws if structuredContent misses or fails the schema
    check(r.structuredContent !== undefined && ok(r), `${name} ${JSON.stringify(args).slice(0, 60)}: ${JSON.stringify(r.structuredContent).slice(0, 100)}`);
  }
  await client.close();
})().catch((e) => {
  console.error("FAIL " + (e && e.stack || e));
  process.exit(1);
});

// Engram's MCP tools in Mastra (@mastra/mcp), over stdio and over
// streamable HTTP. Run: node mastra.mjs
import { MCPClient } from "@mastra/mcp";

const mcp = new MCPClient({
  servers: {
    // engram mcp: a store of this process's own, over stdio.
    stdio: {
      command: process.env.ENGRAM_BIN ?? "engram",
      args: ["mcp", "--dir", process.env.ENGRAM_DIR ?? "./mem", "--user", "alice"],
    },
    // engram serve: the tenant comes from the token, the user from a header.
    http: {
      url: new URL(process.env.ENGRAM_URL ?? "http://127.0.0.1:7437/mcp"),
      requestInit: {
        headers: {
          Authorization: `Bearer ${process.env.ENGRAM_TOKEN}`,
          "X-Engram-User": "alice",
        },
      },
    },
  },
});

// Per server, as an agent's toolsets; mcp.listTools() names them stdio_recall, http_recall...
const { toolsets, errors } = await mcp.listToolsetsWithErrors();
if (Object.keys(errors).length > 0) throw new Error(`cannot list tools: ${JSON.stringify(errors)}`);
// A call Mastra refuses (arguments its schema check rejects) answers
// { error: true, message } rather than throwing.
const call = async (tool, args) => {
  const result = await tool.execute(args);
  if (result?.error === true) throw new Error(result.message);
  return result;
};
for (const server of ["stdio", "http"]) {
  const tools = toolsets[server];
  console.log(`${server} tools: ${Object.keys(tools).sort().join(", ")}`);
  // Engram's own tools list every argument as required, as OpenAI's strict
  // mode asks, and take null for one left out.
  await call(tools.remember, {
    text: "Alice wants to be contacted by email, not phone", kind: "preference",
    tags: null, metadata: null, importance: null, expires_at: null, shared: null,
  });
  const recalled = await call(tools.recall, {
    text: "Should we phone or email Alice?",
    max_tokens: null, max_messages: null, top_k: null, hops: null, sources: null, shared: null, trace: null,
  });
  // A tool with an output schema answers with its structured content.
  console.log(`${server} recall: ${recalled.messages[0].content}`);
  await call(tools.create_entities, {
    entities: [{ name: "Alice", entityType: "person", observations: ["renewal owner is Dana"] }],
  });
  const found = await call(tools.search_nodes, { query: "Dana" });
  console.log(`${server} search_nodes: ${JSON.stringify(found)}`);
}
await mcp.disconnect();

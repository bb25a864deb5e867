// Engram's MCP tools in LangChain.js (@langchain/mcp-adapters), over stdio
// and over streamable HTTP. Run: node langchain.mjs
import { MultiServerMCPClient } from "@langchain/mcp-adapters";

const client = new MultiServerMCPClient({
  mcpServers: {
    // engram mcp: a store of this process's own, over stdio.
    stdio: {
      transport: "stdio",
      command: process.env.ENGRAM_BIN ?? "engram",
      args: ["mcp", "--dir", process.env.ENGRAM_DIR ?? "./mem", "--user", "alice"],
    },
    // engram serve: the tenant comes from the token, the user from a header.
    http: {
      url: process.env.ENGRAM_URL ?? "http://127.0.0.1:7437/mcp",
      headers: {
        Authorization: `Bearer ${process.env.ENGRAM_TOKEN}`,
        "X-Engram-User": "alice",
      },
      automaticSSEFallback: false,
    },
  },
});

for (const server of ["stdio", "http"]) {
  const tools = Object.fromEntries((await client.getTools(server)).map((t) => [t.name, t]));
  console.log(`${server} tools: ${Object.keys(tools).sort().join(", ")}`);
  // Engram's own tools list every argument as required, as OpenAI's strict
  // mode asks, and take null for one left out.
  await tools.remember.invoke({
    text: "Alice wants to be contacted by email, not phone", kind: "preference",
    tags: null, metadata: null, importance: null, expires_at: null, shared: null,
  });
  // A tool answers with its text, and its structured content when it has one.
  const recalled = await tools.recall.invoke({
    text: "Should we phone or email Alice?",
    max_tokens: null, max_messages: null, top_k: null, hops: null, sources: null, shared: null, trace: null,
  });
  console.log(`${server} recall: ${recalled.structuredContent.messages[0].content}`);
  await tools.create_entities.invoke({
    entities: [{ name: "Alice", entityType: "person", observations: ["renewal owner is Dana"] }],
  });
  const found = await tools.search_nodes.invoke({ query: "Dana" });
  console.log(`${server} search_nodes: ${JSON.stringify(found.structuredContent)}`);
}
await client.close();

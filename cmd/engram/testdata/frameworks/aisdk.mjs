// Engram's MCP tools in the Vercel AI SDK (ai 6, @ai-sdk/mcp), over stdio
// and over streamable HTTP. Run: node aisdk.mjs
import { createMCPClient } from "@ai-sdk/mcp";
import { Experimental_StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";

const transports = {
  // engram mcp: a store of this process's own, over stdio.
  stdio: new Experimental_StdioMCPTransport({
    command: process.env.ENGRAM_BIN ?? "engram",
    args: ["mcp", "--dir", process.env.ENGRAM_DIR ?? "./mem", "--user", "alice"],
  }),
  // engram serve: the tenant comes from the token, the user from a header.
  http: {
    type: "http",
    url: process.env.ENGRAM_URL ?? "http://127.0.0.1:7437/mcp",
    headers: {
      Authorization: `Bearer ${process.env.ENGRAM_TOKEN}`,
      "X-Engram-User": "alice",
    },
  },
};

for (const [server, transport] of Object.entries(transports)) {
  const client = await createMCPClient({ transport });
  // The tool set to pass to generateText or streamText as `tools`.
  const tools = await client.tools();
  console.log(`${server} tools: ${Object.keys(tools).sort().join(", ")}`);
  const call = { toolCallId: "1", messages: [] }; // what the model's call would carry
  await tools.remember.execute({ text: "Alice wants to be contacted by email, not phone", kind: "preference" }, call);
  const recalled = await tools.recall.execute({ text: "Should we phone or email Alice?" }, call);
  console.log(`${server} recall: ${recalled.structuredContent.messages[0].content}`);
  await tools.create_entities.execute({
    entities: [{ name: "Alice", entityType: "person", observations: ["renewal owner is Dana"] }],
  }, call);
  const found = await tools.search_nodes.execute({ query: "Dana" }, call);
  console.log(`${server} search_nodes: ${JSON.stringify(found.structuredContent)}`);
  await client.close();
}

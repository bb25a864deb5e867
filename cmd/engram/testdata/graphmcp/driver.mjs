// The client side of `engram bench graph-mcp`: it starts each MCP server
// over stdio through the TypeScript SDK, writes the same graph to each
// (entities with two observations, a chain of relations, in batches),
// then times search_nodes and open_nodes (and an MCP ping, the floor of
// a round trip) on the servers in turn, call by call, and prints one JSON
// object. The Go command starts it and prints
// the table.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const cfg = JSON.parse(process.argv[2]);
const n = cfg.entities, batch = cfg.batch, queries = cfg.queries;

let seed = cfg.seed >>> 0 || 1;
function rand(k) { // xorshift32, so both servers get the same calls
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % k;
}

function entity(i) {
  return {
    name: `entity-${i}`,
    entityType: `type-${i % 10}`,
    observations: [
      `entity-${i} was seen in batch ${String(Math.floor(i / 5)).padStart(6, "0")} near the river`,
      `It prefers topic ${i % 100} of the catalogue and says hello`,
    ],
  };
}

function relations() {
  const out = [];
  for (let i = 1; i < n; i++) {
    if (i % 50 !== 0) out.push({ from: `entity-${i - 1}`, to: `entity-${i}`, relationType: "knows" });
  }
  return out;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  return r;
}

function count(r) {
  const g = r.structuredContent ?? JSON.parse(r.content[0].text);
  return g.entities.length;
}

async function start(s) {
  const transport = new StdioClientTransport({ command: s.command, args: s.args, env: { ...process.env, ...s.env }, stderr: "inherit" });
  const client = new Client({ name: "engram-bench-graph-mcp", version: "0" });
  await client.connect(transport);
  return client;
}

async function write(client) {
  const t0 = performance.now();
  for (let i = 0; i < n; i += batch) {
    const es = [];
    for (let j = i; j < Math.min(n, i + batch); j++) es.push(entity(j));
    await call(client, "create_entities", { entities: es });
  }
  const rels = relations();
  for (let i = 0; i < rels.length; i += batch) {
    await call(client, "create_relations", { relations: rels.slice(i, i + batch) });
  }
  return { seconds: (performance.now() - t0) / 1000, relations: rels.length };
}

const clients = [];
const results = [];
for (const s of cfg.servers) {
  const client = await start(s);
  clients.push(client);
  const w = await write(client);
  results.push({ name: s.name, writeSeconds: w.seconds, relations: w.relations, search: [], open: [], ping: [] });
  process.stderr.write(`${s.name}: wrote ${n} entities and ${w.relations} relations in ${w.seconds.toFixed(1)} s\n`);
}

// Queries alternate between the servers, so that both see the same load
// on the machine; the first few calls of each kind warm up and are not
// counted.
const warm = Math.min(5, queries);
for (let q = 0; q < queries + warm; q++) {
  const b = rand(Math.max(1, Math.floor(n / 5)));
  const query = `Batch ${String(b).padStart(6, "0")}`;
  const names = [];
  for (let k = 0; k < 5; k++) names.push(`entity-${rand(n)}`);
  for (let i = 0; i < clients.length; i++) {
    let t0 = performance.now();
    await clients[i].ping();
    const tp = performance.now() - t0;
    t0 = performance.now();
    const found = count(await call(clients[i], "search_nodes", { query }));
    const ts = performance.now() - t0;
    t0 = performance.now();
    const opened = count(await call(clients[i], "open_nodes", { names }));
    const to = performance.now() - t0;
    if (found !== Math.min(5, n - 5 * b) || opened !== new Set(names).size) {
      throw new Error(`${results[i].name}: search_nodes(${query}) found ${found}, open_nodes found ${opened}`);
    }
    if (q >= warm) {
      results[i].search.push(ts);
      results[i].open.push(to);
      results[i].ping.push(tp);
    }
  }
}
for (const c of clients) await c.close();
process.stdout.write(JSON.stringify({ entities: n, batch, queries, results }) + "\n");

// app.js is the Engram memory inspector: one vanilla ES module, no framework.
//
// Layout of this file:
//   1. DOM helpers (h, s, clear, formatting)
//   2. API client (session, CSRF header, JSON errors, 401 -> login)
//   3. Shell: status line, confirmation dialog, navigation, router
//   4. Pages: users, sessions, session (messages + window), memories,
//      graph (SVG + entity panel), recall (context + trace)
//
// Security rules (the server sends a strict Content-Security-Policy):
// stored text only ever reaches the DOM through textContent,
// createTextNode or setAttribute; this file never uses innerHTML,
// outerHTML, insertAdjacentHTML, document.write, eval or inline styles.

// ---------------------------------------------------------------------------
// 1. DOM helpers

const SVG_NS = "http://www.w3.org/2000/svg";

// h builds an HTML element. attrs values: strings/numbers become attributes,
// true sets a boolean attribute, false/null/undefined are skipped, and a
// function under an "on..." key becomes an event listener (addEventListener,
// not an on* attribute, so the CSP allows it). Children may be nodes,
// strings (added as text), arrays, or null.
function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s builds an SVG element the same way.
function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on")) {
      // Only listeners: an on* attribute would be inline script.
      if (typeof v !== "function") throw new TypeError(`h: ${k} must be a function`);
      el.addEventListener(k.slice(2), v);
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// clear removes every child of el and returns it.
function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// fill replaces el's children.
function fill(el, ...children) {
  append(clear(el), children);
  return el;
}

const $ = (id) => document.getElementById(id);

// humanBytes writes a size as 12.1 KB (powers of 1024).
function humanBytes(n) {
  if (!Number.isFinite(n) || n < 1024) return `${n || 0} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

// fmtTime writes an RFC 3339 time as "2026-03-01 12:00 UTC" (empty for
// none); the title attribute of a <time> keeps the exact value.
function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

function timeEl(t) {
  if (!t) return h("span", { class: "muted" }, "—");
  return h("time", { datetime: t, title: t }, fmtTime(t));
}

// timeLines is timeEl with the date and the time each kept whole, for a
// narrow column: it wraps between them, never inside the date.
function timeLines(t) {
  if (!t) return timeEl(t);
  const [date, ...rest] = fmtTime(t).split(" ");
  return h("time", { datetime: t, title: t }, h("span", { class: "nowrap" }, date), " ", h("span", { class: "nowrap" }, rest.join(" ")));
}

function excerpt(text, n) {
  const t = String(text || "");
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

// headRow is a table's header row. The headers named in nums head numeric
// columns, and are aligned as their numbers are (right).
function headRow(headers, nums = []) {
  return h("tr", {}, headers.map((x) => h("th", { scope: "col", class: nums.includes(x) ? "num" : null }, x)));
}

// table builds a <table> with a caption, a header row and body rows,
// wrapped in a div that scrolls sideways on narrow screens.
function table(id, caption, headers, rows, nums) {
  return h("div", { class: "table-wrap" },
    h("table", { id },
      h("caption", {}, caption),
      h("thead", {}, headRow(headers, nums)),
      h("tbody", {}, rows)));
}

function emptyRow(cols, text) {
  return h("tr", { class: "empty" }, h("td", { colspan: cols }, text));
}

// debounce delays fn until calls stop for ms.
function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// ---------------------------------------------------------------------------
// 2. API client

const session = { csrf: "", tenant: "" };

// ApiError carries the API's {"error":{"code","message"}} body.
class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function toLogin() {
  window.location.assign("/ui/login");
}

// api calls the Engram HTTP API through /ui/api. path starts with /v1/.
// It answers the decoded JSON (null for 204) or throws ApiError.
async function api(method, path, body) {
  const init = {
    method,
    credentials: "same-origin",
    headers: { "X-CSRF-Token": session.csrf, "Content-Type": "application/json" },
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  let resp;
  try {
    resp = await fetch("/ui/api" + path, init);
  } catch (e) {
    throw new ApiError(0, "network", `The server did not answer: ${e.message}`);
  }
  if (resp.status === 401) {
    toLogin();
    throw new ApiError(401, "unauthenticated", "Your session has ended; log in again.");
  }
  if (resp.status === 204) return null;
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    if (resp.ok) return null;
  }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(resp.status, err.code || "http_" + resp.status,
      err.message || `${method} ${path} failed with HTTP ${resp.status}`);
  }
  return data;
}

// qs builds a query string from the set (non-empty) values of params.
function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  }
  const q = u.toString();
  return q ? "?" + q : "";
}

const enc = encodeURIComponent;
const userPath = (user) => `/v1/users/${enc(user)}`;

async function loadSession() {
  const resp = await fetch("/ui/session", { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (resp.status === 401) {
    toLogin();
    return false;
  }
  if (!resp.ok) throw new Error(`GET /ui/session failed with HTTP ${resp.status}`);
  const data = await resp.json();
  session.csrf = data.csrf || "";
  session.tenant = data.tenant || "";
  return true;
}

// ---------------------------------------------------------------------------
// 3. Shell: status, confirmation, navigation, routing

// status shows the outcome of an action (or an API error) in #status, which
// screen readers announce (role=status, aria-live=polite).
function status(text, kind) {
  const el = $("status");
  el.className = kind ? "status-" + kind : "";
  el.textContent = text || "";
}

function showError(e) {
  status(e && e.message ? e.message : String(e), "error");
}

// run performs an action, reports its result in #status, and reloads the
// view's data afterwards so the change shows at once.
async function run(action, okText, reload) {
  try {
    await action();
    status(okText, "ok");
  } catch (e) {
    showError(e);
  }
  if (reload) {
    try {
      await reload();
    } catch (e) {
      showError(e);
    }
  }
}

// confirmDelete asks with <dialog id="confirm"> and answers true on Yes.
// Escape (the dialog's cancel event) and No answer false.
function confirmDelete(text) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  const opener = document.activeElement;
  return new Promise((resolve) => {
    const finish = (answer) => {
      $("confirm-yes").removeEventListener("click", yes);
      $("confirm-no").removeEventListener("click", no);
      dialog.removeEventListener("close", closed);
      if (dialog.open) dialog.close();
      if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
      resolve(answer);
    };
    const yes = () => finish(true);
    const no = () => finish(false);
    const closed = () => finish(false); // Escape closes the dialog
    $("confirm-yes").addEventListener("click", yes);
    $("confirm-no").addEventListener("click", no);
    dialog.addEventListener("close", closed);
    dialog.showModal();
    $("confirm-no").focus();
  });
}

// setNav points the user links of <nav id="nav"> at user (hidden when
// there is none) and marks the current page with aria-current.
function setNav(user, page) {
  const nav = $("nav");
  const who = $("nav-user");
  who.hidden = !user;
  who.textContent = user ? `User ${user}:` : "";
  for (const a of nav.querySelectorAll("a[data-nav]")) {
    const p = a.getAttribute("data-nav");
    if (p !== "users") {
      a.hidden = !user;
      a.setAttribute("href", user ? `#/u/${enc(user)}/${p}` : "#/users");
    }
    if (p === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

// parseRoute reads location.hash: #/users, #/u/USER/PAGE, #/u/USER/s/SESSION.
function parseRoute() {
  const parts = window.location.hash.replace(/^#\/?/, "").split("/").map((p) => {
    try {
      return decodeURIComponent(p);
    } catch (e) {
      return p;
    }
  });
  if (parts[0] === "u" && parts[1]) {
    if (parts[2] === "s" && parts[3]) return { page: "session", user: parts[1], session: parts[3] };
    const page = ["sessions", "memories", "graph", "recall"].includes(parts[2]) ? parts[2] : "sessions";
    return { page, user: parts[1] };
  }
  return { page: "users" };
}

const pages = {
  users: renderUsers,
  sessions: renderSessions,
  session: renderSession,
  memories: renderMemories,
  graph: renderGraph,
  recall: renderRecall,
};

// route renders the page the hash names into a fresh container. Async
// loads write into that container, so a late answer for a page the user
// has left lands in a detached element and is never seen.
function route() {
  const r = parseRoute();
  setNav(r.user, r.page === "session" ? "sessions" : r.page);
  status("");
  const view = clear($("view"));
  const page = h("div", { class: "page page-" + r.page });
  view.appendChild(page);
  pages[r.page](page, r).catch(showError);
}

// moreButton is a "Load more" button for cursor paging.
function moreButton(id, label, onClick) {
  return h("button", { id, type: "button", class: "secondary more", hidden: true, onclick: onClick }, label);
}

// ---------------------------------------------------------------------------
// 4a. Users

async function renderUsers(page) {
  const tbody = h("tbody");
  let after = "";
  const more = moreButton("users-more", "More users", () => load(false).catch(showError));
  page.append(
    h("h1", {}, "Users"),
    h("p", { class: "muted" }, "Everyone this tenant's assistant remembers, with what is stored for each."),
    h("div", { class: "table-wrap" },
      h("table", { id: "users" },
        h("caption", {}, "Users, their sessions and stored memory"),
        h("thead", {}, headRow(["User", "Sessions", "Messages", "Memories", "Versions", "Entities", "Facts", "Size"],
          ["Sessions", "Messages", "Memories", "Versions", "Entities", "Facts", "Size"])),
        tbody)),
    more);

  async function load(first) {
    if (first) after = "";
    // GET /v1/users answers at most 50 users a page.
    const data = await api("GET", "/v1/users" + qs({ limit: 50, after }));
    if (first) clear(tbody);
    for (const u of data.users || []) tbody.appendChild(userRow(u));
    if (!tbody.firstChild) tbody.appendChild(emptyRow(8, "No users yet."));
    after = data.next || "";
    more.hidden = !after;
  }
  await load(true);
}

function userRow(u) {
  const us = u.usage || {};
  const num = (n) => h("td", { class: "num" }, String(n || 0));
  return h("tr", { "data-user": u.user },
    h("th", { scope: "row" }, h("a", { class: "open-user", href: `#/u/${enc(u.user)}/sessions` }, u.user)),
    num(us.sessions), num(us.messages), num(us.memories), num(us.versions), num(us.entities), num(us.facts),
    h("td", { class: "num", title: `${us.bytes || 0} bytes` }, humanBytes(us.bytes || 0)));
}

// ---------------------------------------------------------------------------
// 4b. Sessions of a user

async function renderSessions(page, r) {
  const user = r.user;
  const tbody = h("tbody");
  let after = "";
  const more = moreButton("sessions-more", "More sessions", () => load(false).catch(showError));
  page.append(
    h("div", { class: "page-head" },
      h("h1", {}, `Sessions of ${user}`),
      h("button", {
        id: "delete-user", type: "button", class: "danger", onclick: async () => {
          if (!(await confirmDelete(`Delete user “${user}” with every session, message, memory and fact? This cannot be undone.`))) return;
          try {
            await api("DELETE", userPath(user));
            window.location.hash = "#/users";
            status(`Deleted user ${user}.`, "ok");
          } catch (e) {
            showError(e);
          }
        },
      }, "Delete this user")),
    h("div", { class: "table-wrap" },
      h("table", { id: "sessions" },
        h("caption", {}, "Conversation sessions, newest activity shown per row"),
        h("thead", {}, headRow(["Session", "Messages", "Created", "Updated", "Actions"], ["Messages"])),
        tbody)),
    more);

  const sessionRow = (si) => h("tr", { "data-session": si.id },
    h("th", { scope: "row" }, h("a", { class: "open-session", href: `#/u/${enc(user)}/s/${enc(si.id)}` }, si.id)),
    h("td", { class: "num" }, String(si.messages || 0)),
    h("td", {}, timeEl(si.created)),
    h("td", {}, timeEl(si.updated)),
    h("td", {}, h("button", {
      type: "button", class: "delete-session danger small", "aria-label": `Delete session ${si.id}`,
      onclick: async () => {
        if (!(await confirmDelete(`Delete session “${si.id}” and its messages?`))) return;
        await run(() => api("DELETE", `${userPath(user)}/sessions/${enc(si.id)}`), `Deleted session ${si.id}.`, () => load(true));
      },
    }, "Delete")));

  async function load(first) {
    if (first) after = "";
    const data = await api("GET", `${userPath(user)}/sessions` + qs({ limit: 100, after }));
    if (first) clear(tbody);
    for (const si of data.sessions || []) tbody.appendChild(sessionRow(si));
    if (!tbody.firstChild) tbody.appendChild(emptyRow(5, "No sessions."));
    after = data.next || "";
    more.hidden = !after;
  }
  await load(true);
}

// ---------------------------------------------------------------------------
// 4c. One session: messages and the window the next model call would see

// messageItem renders one chat message: role, name, time, tokens, content,
// the tool calls it makes and, for a tool result, the call it answers.
function messageItem(m) {
  const role = String(m.role || "");
  const head = h("div", { class: "msg-head" },
    h("span", { class: "role" }, role),
    m.name ? h("span", { class: "name" }, m.name) : null,
    m.time ? timeEl(m.time) : null,
    m.tokens ? h("span", { class: "muted" }, `${m.tokens} tokens`) : null,
    m.id ? h("code", { class: "muted id" }, m.id) : null);
  const parts = [head];
  if (m.tool_call_id) parts.push(h("p", { class: "tool-result" }, "Result of tool call ", h("code", {}, m.tool_call_id)));
  if (m.content) parts.push(h("pre", { class: "content" }, m.content));
  if (m.tool_calls && m.tool_calls.length) {
    parts.push(h("ul", { class: "tool-calls" }, m.tool_calls.map((tc) => h("li", { class: "tool-call" },
      h("span", {}, "Calls "), h("code", { class: "tool-name" }, tc.name || ""),
      tc.id ? h("span", { class: "muted" }, ` (call ${tc.id})`) : null,
      h("pre", { class: "tool-args" }, argsText(tc.arguments))))));
  }
  return h("li", { class: "msg", "data-role": role, "data-id": m.id || null }, parts);
}

// argsText pretty-prints a tool call's arguments (JSON, decoded by fetch).
function argsText(a) {
  if (a === undefined || a === null || a === "") return "(no arguments)";
  if (typeof a === "string") return a;
  try {
    return JSON.stringify(a, null, 2);
  } catch (e) {
    return String(a);
  }
}

async function renderSession(page, r) {
  const { user, session: sid } = r;
  const base = `${userPath(user)}/sessions/${enc(sid)}`;
  const list = h("ol", { id: "messages", class: "messages" });
  let after = "";
  const more = moreButton("messages-more", "Load more messages", () => loadMessages(false).catch(showError));

  const budget = h("input", { id: "budget", type: "number", min: 1, step: 1, value: 4000, inputmode: "numeric" });
  const winList = h("ol", { id: "window-messages", class: "messages compact" });
  const winSummary = h("div", { id: "window-summary", class: "summary", hidden: true });
  const winTokens = h("p", { id: "window-tokens", class: "muted" });
  const winForm = h("form", { id: "window-form", class: "inline-form", onsubmit: (e) => { e.preventDefault(); loadWindow().catch(showError); } },
    h("label", { for: "budget" }, "Token budget"), budget,
    h("button", { id: "window-go", type: "submit" }, "Show window"));

  page.append(
    h("p", { class: "crumbs" }, h("a", { href: `#/u/${enc(user)}/sessions` }, `Sessions of ${user}`), " / ", sid),
    h("h1", {}, `Session ${sid}`),
    h("div", { class: "split" },
      h("section", { class: "panel", "aria-labelledby": "messages-title" },
        h("h2", { id: "messages-title" }, "Messages"), list, more),
      h("section", { class: "panel", "aria-labelledby": "window-title" },
        h("h2", { id: "window-title" }, "Window for the next model call"),
        h("p", { class: "muted" }, "The most recent messages that fit the budget, after the rolling summary."),
        winForm, winTokens, winSummary, winList)));

  async function loadMessages(first) {
    if (first) after = "";
    const data = await api("GET", `${base}/messages` + qs({ limit: 50, after }));
    if (first) clear(list);
    for (const m of data.messages || []) list.appendChild(messageItem(m));
    if (!list.firstChild) list.appendChild(h("li", { class: "empty" }, "No messages."));
    after = data.next || "";
    more.hidden = !after;
  }

  async function loadWindow() {
    const n = Number.parseInt(budget.value, 10);
    const data = await api("GET", `${base}/window` + qs({ max_tokens: Number.isFinite(n) && n > 0 ? n : "" }));
    fill(winList, (data.messages || []).map(messageItem));
    if (!winList.firstChild) winList.appendChild(h("li", { class: "empty" }, "Nothing fits this budget."));
    winTokens.textContent = `${data.tokens || 0} tokens in ${(data.messages || []).length} messages` +
      (Number.isFinite(n) && n > 0 ? ` (budget ${n})` : "");
    winSummary.hidden = !data.summary;
    fill(winSummary, data.summary ? [h("h3", {}, "Rolling summary"), h("pre", { class: "content" }, data.summary)] : []);
  }

  await Promise.all([loadMessages(true), loadWindow()]);
}

// ---------------------------------------------------------------------------
// 4d. Memories: list, search, history, edit, add, delete

const KINDS = ["fact", "preference", "episode", "summary", "observation"];

// memoryBody is a memory as PUT/POST take it: only the fields the API
// accepts (it rejects unknown fields), so an edit keeps tags, source,
// metadata, expiry and importance.
function memoryBody(m, text) {
  const b = { kind: m.kind || "fact", text };
  if (m.tags && m.tags.length) b.tags = m.tags;
  if (m.metadata && Object.keys(m.metadata).length) b.metadata = m.metadata;
  if (m.source && m.source.length) b.source = m.source;
  if (m.expires_at) b.expires_at = m.expires_at;
  if (m.importance) b.importance = m.importance;
  return b;
}

async function renderMemories(page, r) {
  const user = r.user;
  const mpath = `${userPath(user)}/memories`;
  const tbody = h("tbody");
  const more = moreButton("memories-more", "More memories", () => load(false).catch(showError));
  const query = h("input", { id: "mem-query", type: "search", placeholder: "words to look for", autocomplete: "off" });
  const resultNote = h("p", { id: "mem-result", class: "muted" });
  const history = h("section", { id: "mem-history", class: "panel", hidden: true, "aria-labelledby": "mem-history-title", tabindex: "-1" });
  let after = "";
  let searching = "";

  // Edit form (one, shown under the table for the memory being edited).
  let editing = null;
  const editText = h("textarea", { id: "mem-edit-text", rows: 4, required: true });
  const editTitle = h("h2", { id: "mem-edit-title" }, "Edit memory");
  const editForm = h("form", { id: "mem-edit", class: "panel", hidden: true, "aria-labelledby": "mem-edit-title" },
    editTitle,
    h("p", { class: "muted" }, "Saving writes a new version; the old one stays in the history."),
    h("label", { for: "mem-edit-text" }, "Text"), editText,
    h("div", { class: "actions" },
      h("button", { id: "mem-edit-save", type: "submit" }, "Save new version"),
      h("button", { id: "mem-edit-cancel", type: "button", class: "secondary", onclick: () => closeEdit() }, "Cancel")));
  editForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!editing) return;
    const m = editing;
    await run(() => api("PUT", `${mpath}/${enc(m.id)}`, memoryBody(m, editText.value)), "Saved a new version of the memory.", () => reload());
    closeEdit();
  });
  editForm.addEventListener("keydown", (e) => {
    if (e.key === "Escape") closeEdit();
  });
  function openEdit(m, opener) {
    editing = m;
    editForm.hidden = false;
    editForm.opener = opener;
    editTitle.textContent = `Edit memory ${m.id}`;
    editText.value = m.text || "";
    editText.focus();
  }
  function closeEdit() {
    editing = null;
    editForm.hidden = true;
  }

  // Add form.
  const addText = h("textarea", { id: "mem-add-text", rows: 3, required: true });
  const addKind = h("select", { id: "mem-add-kind" }, KINDS.map((k) => h("option", { value: k }, k)));
  const addTags = h("input", { id: "mem-add-tags", type: "text", placeholder: "contact, billing", autocomplete: "off" });
  const addExpires = h("input", { id: "mem-add-expires", type: "date" });
  const addForm = h("form", { id: "mem-add", class: "panel", "aria-labelledby": "mem-add-title" },
    h("h2", { id: "mem-add-title" }, "Add a memory"),
    h("label", { for: "mem-add-text" }, "Text"), addText,
    h("div", { class: "row" },
      h("div", {}, h("label", { for: "mem-add-kind" }, "Kind"), addKind),
      h("div", {}, h("label", { for: "mem-add-tags" }, "Tags (comma separated)"), addTags),
      h("div", {}, h("label", { for: "mem-add-expires" }, "Expires (optional)"), addExpires)),
    h("div", { class: "actions" }, h("button", { id: "mem-add-submit", type: "submit" }, "Add memory")));
  addForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { kind: addKind.value, text: addText.value };
    const tags = addTags.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (tags.length) body.tags = tags;
    if (addExpires.value) body.expires_at = new Date(addExpires.value + "T00:00:00Z").toISOString();
    let ok = false;
    await run(async () => {
      await api("POST", mpath, body);
      ok = true;
    }, "Added the memory.", () => reload());
    if (ok) {
      addText.value = "";
      addTags.value = "";
      addExpires.value = "";
    }
  });

  const searchForm = h("form", { id: "mem-search", class: "inline-form", role: "search" },
    h("label", { for: "mem-query" }, "Search memories"), query,
    h("button", { id: "mem-search-go", type: "submit" }, "Search"));
  searchForm.addEventListener("submit", (e) => {
    e.preventDefault();
    searching = query.value.trim();
    reload().catch(showError);
  });

  page.append(
    h("h1", {}, `Memories of ${user}`),
    searchForm, resultNote,
    h("div", { class: "table-wrap" },
      h("table", { id: "memories" },
        h("caption", {}, "Memories (latest versions)"),
        h("thead", {}, headRow(["Kind", "Text", "Tags", "Source messages", "Versions", "Created", "Expires", "Actions"], ["Versions"])),
        tbody)),
    more, editForm, history, addForm);

  function memoryRow(m) {
    const versions = h("span", { class: "versions" }, m.supersedes ? "…" : "1");
    const row = h("tr", { "data-id": m.id },
      h("td", {}, h("span", { class: "kind kind-" + (KINDS.includes(m.kind) ? m.kind : "other") }, m.kind || "fact")),
      h("td", { class: "text" }, h("div", { class: "mem-text" }, m.text || ""), h("code", { class: "muted id" }, m.id)),
      h("td", {}, (m.tags || []).map((t) => h("span", { class: "tag" }, t))),
      h("td", {}, (m.source || []).length ? h("ul", { class: "plain" }, m.source.map((x) => h("li", {}, h("code", {}, x)))) : h("span", { class: "muted" }, "—")),
      h("td", { class: "num" }, versions, " ",
        h("button", { type: "button", class: "history secondary small", "aria-label": `Versions of memory ${m.id}`, onclick: () => showHistory(m).catch(showError) }, "History")),
      h("td", {}, timeEl(m.created_at)),
      h("td", {}, timeEl(m.expires_at)),
      h("td", { class: "actions-cell" },
        h("button", { type: "button", class: "edit-memory small", "aria-label": `Edit memory ${m.id}`, onclick: (e) => openEdit(m, e.currentTarget) }, "Edit"),
        h("button", {
          type: "button", class: "delete-memory danger small", "aria-label": `Delete memory ${m.id}`,
          onclick: async () => {
            if (!(await confirmDelete(`Delete the memory “${excerpt(m.text, 80)}” and all its versions?`))) return;
            await run(() => api("DELETE", `${mpath}/${enc(m.id)}`), "Deleted the memory.", () => reload());
          },
        }, "Delete")));
    // An edited memory has older versions; count them from its history.
    if (m.supersedes) {
      api("GET", `${mpath}/${enc(m.id)}/history`)
        .then((d) => { versions.textContent = String((d.memories || []).length || 1); })
        .catch(() => { versions.textContent = "?"; });
    }
    return row;
  }

  async function showHistory(m) {
    const data = await api("GET", `${mpath}/${enc(m.id)}/history`);
    const vs = data.memories || [];
    fill(history,
      h("h2", { id: "mem-history-title" }, `Versions of memory ${m.id}`),
      h("ol", { class: "versions-list" }, vs.map((v) => h("li", { "data-id": v.id },
        h("div", { class: "msg-head" },
          h("span", { class: "kind" }, v.kind || "fact"), timeEl(v.created_at), h("code", { class: "muted id" }, v.id),
          v.superseded_by ? h("span", { class: "muted" }, "replaced by ", h("code", {}, v.superseded_by)) : h("strong", {}, "current")),
        h("pre", { class: "content" }, v.text || ""),
        (v.tags || []).length ? h("div", {}, v.tags.map((t) => h("span", { class: "tag" }, t))) : null))),
      h("button", { type: "button", class: "secondary", id: "mem-history-close", onclick: () => { history.hidden = true; } }, "Close history"));
    history.hidden = false;
    history.focus();
  }

  // load lists memories (paged), or searches: the API has no text filter on
  // the memories listing, so a search is a lexical recall restricted to
  // this user's memories (POST /v1/recall, sources ["memories"]), which
  // answers the whole memory records, best match first.
  async function load(first) {
    if (first) after = "";
    if (searching) {
      const data = await api("POST", "/v1/recall", {
        user, text: searching, sources: ["memories"], retrieval: "lexical", top_k: 200, max_tokens: 1000000,
      });
      const ms = (data.items || []).filter((it) => it.memory).map((it) => it.memory);
      fill(tbody, ms.map(memoryRow));
      if (!tbody.firstChild) tbody.appendChild(emptyRow(8, "No memory matches."));
      resultNote.textContent = `${ms.length} ${ms.length === 1 ? "memory matches" : "memories match"} “${searching}”.`;
      more.hidden = true;
      return;
    }
    const data = await api("GET", mpath + qs({ limit: 100, after }));
    if (first) clear(tbody);
    for (const m of data.memories || []) tbody.appendChild(memoryRow(m));
    if (!tbody.firstChild) tbody.appendChild(emptyRow(8, "No memories."));
    resultNote.textContent = "";
    after = data.next || "";
    more.hidden = !after;
  }
  const reload = () => load(true);
  await reload();
}

// ---------------------------------------------------------------------------
// 4e. Graph: SVG of entities and relations, paged, with an entity panel

const GRAPH_PAGE = 40;

// graphSize is the SVG's drawing size: the width it has on screen (so
// labels keep a readable size on a phone), between 340 and 800 units.
function graphSize(svg) {
  const shown = svg.parentNode ? svg.parentNode.clientWidth : 0;
  const w = Math.round(Math.min(800, Math.max(340, shown || 800)));
  return { w, h: w < 600 ? Math.round(w * 1.1) : 520 };
}

// layout places nodes with a few hundred steps of a plain force model
// (repulsion between all pairs, springs along edges, a pull to the
// centre), starting from a circle so the result is the same every time.
function layout(names, edges, size) {
  const width = size.w;
  const height = size.h;
  const n = names.length;
  const pos = new Map();
  names.forEach((name, i) => {
    const a = (2 * Math.PI * i) / Math.max(n, 1);
    pos.set(name, { x: Math.cos(a) * 200, y: Math.sin(a) * 150 });
  });
  if (n > 1) {
    const k = Math.sqrt((width * height) / n) * 0.9; // ideal edge length
    const gravity = (n * k * k) / (0.25 * width * height);
    for (let step = 0; step < 300; step++) {
      const temp = 20 * (1 - step / 300) + 0.5;
      const disp = new Map(names.map((m) => [m, { x: 0, y: 0 }]));
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const a = pos.get(names[i]);
          const b = pos.get(names[j]);
          let dx = a.x - b.x;
          let dy = a.y - b.y;
          let d = Math.hypot(dx, dy);
          if (d < 0.01) {
            dx = 0.01 * (i + 1);
            dy = 0.01;
            d = Math.hypot(dx, dy);
          }
          const f = (k * k) / d;
          const da = disp.get(names[i]);
          const db = disp.get(names[j]);
          da.x += (dx / d) * f;
          da.y += (dy / d) * f;
          db.x -= (dx / d) * f;
          db.y -= (dy / d) * f;
        }
      }
      for (const e of edges) {
        if (e.from === e.to) continue;
        const a = pos.get(e.from);
        const b = pos.get(e.to);
        const dx = a.x - b.x;
        const dy = a.y - b.y;
        const d = Math.max(Math.hypot(dx, dy), 0.01);
        const f = (d * d) / k;
        const da = disp.get(e.from);
        const db = disp.get(e.to);
        da.x -= (dx / d) * f;
        da.y -= (dy / d) * f;
        db.x += (dx / d) * f;
        db.y += (dy / d) * f;
      }
      for (const name of names) {
        const p = pos.get(name);
        const d = disp.get(name);
        // Gravity towards the centre: with repulsion summed over n nodes,
        // a pull of about n*k^2/(w*h/4) per unit of distance settles the
        // drawing at the size of the viewBox, so edges keep about length k.
        d.x -= p.x * gravity;
        d.y -= p.y * gravity;
        const len = Math.max(Math.hypot(d.x, d.y), 0.01);
        p.x += (d.x / len) * Math.min(len, temp);
        p.y += (d.y / len) * Math.min(len, temp);
      }
    }
  }
  // Fit into the viewBox with a margin for labels.
  const xs = [...pos.values()].map((p) => p.x);
  const ys = [...pos.values()].map((p) => p.y);
  const minX = Math.min(...xs);
  const maxX = Math.max(...xs);
  const minY = Math.min(...ys);
  const maxY = Math.max(...ys);
  const mx = Math.min(90, width * 0.14);
  const my = 40;
  for (const p of pos.values()) {
    p.x = maxX > minX ? mx + ((p.x - minX) / (maxX - minX)) * (width - 2 * mx) : width / 2;
    p.y = maxY > minY ? my + ((p.y - minY) / (maxY - minY)) * (height - 2 * my) : height / 2;
  }
  return pos;
}

// drawGraph fills svg with the entities and relations of g. Relations whose
// ends are not on this page get a faint node of their own.
function drawGraph(svg, g, onOpen, selected) {
  clear(svg);
  const size = graphSize(svg);
  svg.setAttribute("viewBox", `0 0 ${size.w} ${size.h}`);
  const names = [];
  const known = new Map();
  for (const e of g.entities || []) {
    if (!known.has(e.name)) {
      known.set(e.name, e);
      names.push(e.name);
    }
  }
  const ghosts = new Set();
  for (const r of g.relations || []) {
    for (const x of [r.from, r.to]) {
      if (!known.has(x) && !ghosts.has(x)) {
        ghosts.add(x);
        names.push(x);
      }
    }
  }
  const edges = (g.relations || []).map((r) => ({ from: r.from, to: r.to, type: r.relationType }));
  const pos = layout(names, edges, size);

  svg.appendChild(s("defs", {},
    s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 22, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }))));
  if (!names.length) {
    svg.appendChild(s("text", { x: size.w / 2, y: size.h / 2, "text-anchor": "middle", class: "empty-label" }, "No entities on this page."));
    return;
  }
  const edgeLayer = s("g", { class: "edges" });
  const nodeLayer = s("g", { class: "nodes" });
  svg.append(edgeLayer, nodeLayer);
  for (const e of edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    edgeLayer.appendChild(s("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-type": e.type },
      s("title", {}, `${e.from} —${e.type}→ ${e.to}`),
      s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, "marker-end": "url(#arrow)" }),
      s("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, "text-anchor": "middle", class: "edge-label" }, excerpt(e.type, 24))));
  }
  for (const name of names) {
    const p = pos.get(name);
    const ent = known.get(name);
    const node = s("g", {
      class: "node" + (ghosts.has(name) ? " ghost" : "") + (name === selected ? " selected" : ""),
      "data-entity": name, tabindex: 0, role: "button",
      "aria-label": `Entity ${name}${ent && ent.entityType ? ", " + ent.entityType : ""}`,
      transform: `translate(${p.x.toFixed(1)} ${p.y.toFixed(1)})`,
    },
    s("title", {}, ent && ent.entityType ? `${name} (${ent.entityType})` : name),
    s("circle", { r: 14 }),
    s("text", { y: 30, "text-anchor": "middle" }, excerpt(name, 22)));
    node.addEventListener("click", () => onOpen(name));
    node.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        onOpen(name);
      }
    });
    nodeLayer.appendChild(node);
  }
}

async function renderGraph(page, r) {
  const user = r.user;
  const upath = userPath(user);
  const svg = s("svg", { id: "graph", viewBox: "0 0 800 520", role: "group", "aria-label": `Knowledge graph of ${user}` });
  const pageNote = h("p", { id: "graph-page", class: "muted" });
  const prev = h("button", { id: "graph-prev", type: "button", class: "secondary", disabled: true }, "← Previous");
  const next = h("button", { id: "graph-next", type: "button", class: "secondary", disabled: true }, "Next →");
  const gq = h("input", { id: "graph-query", type: "search", placeholder: "entity name or observation", autocomplete: "off" });
  const searchForm = h("form", { id: "graph-search", class: "inline-form", role: "search" },
    h("label", { for: "graph-query" }, "Find entities"), gq,
    h("button", { id: "graph-search-go", type: "submit" }, "Find"),
    h("button", { id: "graph-clear", type: "button", class: "secondary" }, "Show all"));
  const panel = h("section", { id: "entity", class: "panel", hidden: true, "aria-labelledby": "entity-name", tabindex: "-1" });

  // Paging: the API pages with an opaque cursor (next); Previous walks back
  // through the cursors seen.
  const cursors = [""];
  let pageIdx = 0;
  let searchText = "";
  let selected = "";
  let nextCursor = "";

  page.append(
    h("h1", {}, `Knowledge graph of ${user}`),
    searchForm,
    h("div", { class: "graph-layout" },
      h("div", { class: "graph-box" },
        h("div", { class: "pager" }, prev, pageNote, next),
        h("div", { class: "svg-wrap" }, svg),
        h("p", { class: "muted small" }, "Select an entity (click, or Tab to it and press Enter) to see its facts and history. ",
          "A dashed circle is an entity on another page, or one known only from its relations; arrows point from subject to object.")),
      panel));

  async function loadGraph() {
    let g;
    if (searchText) {
      g = await api("GET", `${upath}/graph/search` + qs({ q: searchText, limit: 100 }));
      pageNote.textContent = `${(g.entities || []).length} entities match “${searchText}”`;
      prev.disabled = true;
      next.disabled = true;
    } else {
      g = await api("GET", `${upath}/graph` + qs({ limit: GRAPH_PAGE, cursor: cursors[pageIdx] }));
      nextCursor = g.next || "";
      const n = (g.entities || []).length;
      pageNote.textContent = `Page ${pageIdx + 1}: ${n} ${n === 1 ? "entity" : "entities"}, ${(g.relations || []).length} relations`;
      prev.disabled = pageIdx === 0;
      next.disabled = !nextCursor;
    }
    drawGraph(svg, g, (name) => openEntity(name).catch(showError), selected);
  }
  prev.addEventListener("click", () => {
    if (pageIdx > 0) pageIdx--;
    loadGraph().catch(showError);
  });
  next.addEventListener("click", () => {
    if (!nextCursor) return;
    if (cursors.length === pageIdx + 1) cursors.push(nextCursor);
    else cursors[pageIdx + 1] = nextCursor;
    pageIdx++;
    loadGraph().catch(showError);
  });
  searchForm.addEventListener("submit", (e) => {
    e.preventDefault();
    searchText = gq.value.trim();
    loadGraph().catch(showError);
  });
  searchForm.querySelector("#graph-clear").addEventListener("click", () => {
    gq.value = "";
    searchText = "";
    loadGraph().catch(showError);
  });

  // --- entity panel ---------------------------------------------------------
  // The as-of slider runs from the earliest valid_from among the entity's
  // facts (history included) to now; its last step means "now" and shows
  // the facts that hold today, any other step asks the API for the facts
  // valid at that time (as_of).
  let asofMin = 0;
  const ASOF_STEPS = 100;

  async function openEntity(name) {
    selected = name;
    for (const n of svg.querySelectorAll("g.node")) n.classList.toggle("selected", n.getAttribute("data-entity") === name);
    const [opened, histS, histO] = await Promise.all([
      api("POST", `${upath}/graph/open`, { names: [name] }),
      api("GET", `${upath}/facts` + qs({ subject: name, history: true, limit: 1000 })),
      api("GET", `${upath}/facts` + qs({ object: name, history: true, limit: 1000 })),
    ]);
    const ent = (opened.entities || []).find((e) => e.name === name) || (opened.entities || [])[0] || null;
    const all = [...(histS.facts || []), ...(histO.facts || [])];
    const times = all.map((f) => Date.parse(f.valid_from)).filter(Number.isFinite);
    asofMin = times.length ? Math.min(...times) : Date.now();
    renderPanel(name, ent, all.length);
    panel.hidden = false;
    await loadFacts(name);
  }

  function asofTime(slider) {
    const v = Number(slider.value);
    if (v >= ASOF_STEPS) return null; // now
    const now = Date.now();
    return new Date(asofMin + ((now - asofMin) * v) / ASOF_STEPS);
  }

  function renderPanel(name, ent, historyCount) {
    const slider = h("input", {
      id: "asof", type: "range", min: 0, max: ASOF_STEPS, step: 1, value: ASOF_STEPS, "aria-describedby": "asof-label",
      disabled: historyCount === 0,
    });
    const sliderLabel = h("output", { id: "asof-label", for: "asof" }, "now");
    const factsBody = h("tbody", { id: "entity-facts-body" });
    const subj = h("input", { id: "fact-subject", type: "text", value: name, required: true, autocomplete: "off" });
    const pred = h("input", { id: "fact-predicate", type: "text", required: true, autocomplete: "off", placeholder: "works at" });
    const obj = h("input", { id: "fact-object", type: "text", required: true, autocomplete: "off" });
    const from = h("input", { id: "fact-valid-from", type: "date" });
    const addForm = h("form", { id: "fact-add", "aria-labelledby": "fact-add-title" },
      h("h3", { id: "fact-add-title" }, "Add a fact"),
      h("div", { class: "row" },
        h("div", {}, h("label", { for: "fact-subject" }, "Subject"), subj),
        h("div", {}, h("label", { for: "fact-predicate" }, "Predicate"), pred),
        h("div", {}, h("label", { for: "fact-object" }, "Object"), obj),
        h("div", {}, h("label", { for: "fact-valid-from" }, "Valid from (optional)"), from)),
      h("div", { class: "actions" }, h("button", { id: "fact-add-submit", type: "submit" }, "Add fact")));
    addForm.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { subject: subj.value.trim(), predicate: pred.value.trim(), object: obj.value.trim() };
      if (from.value) body.valid_from = new Date(from.value + "T00:00:00Z").toISOString();
      let ok = false;
      await run(async () => {
        await api("POST", `${upath}/facts`, body);
        ok = true;
      }, `Added the fact ${body.subject} —${body.predicate}→ ${body.object}.`, async () => {
        await loadGraph();
        await openEntity(name);
      });
      if (ok) {
        pred.value = "";
        obj.value = "";
        from.value = "";
      }
    });

    const onSlide = debounce(() => loadFacts(name).catch(showError), 150);
    slider.addEventListener("input", () => {
      const t = asofTime(slider);
      sliderLabel.textContent = t ? fmtTime(t.toISOString()) : "now";
      onSlide();
    });

    fill(panel,
      h("div", { class: "page-head" },
        h("h2", { id: "entity-name" }, name),
        h("button", { id: "entity-close", type: "button", class: "secondary small", onclick: () => { panel.hidden = true; } }, "Close")),
      ent ? h("p", { class: "muted" }, ent.entityType ? ["Type ", h("strong", {}, ent.entityType)] : "No type",
        ent.createdAt ? [", created ", timeEl(ent.createdAt)] : null)
        : h("p", { class: "muted" }, "No entity record with this name; it appears only in facts."),
      h("h3", {}, "Aliases"),
      ent && (ent.aliases || []).length ? h("ul", { id: "entity-aliases", class: "chips" }, ent.aliases.map((a) => h("li", { class: "tag" }, a)))
        : h("p", { id: "entity-aliases", class: "muted" }, "None."),
      h("h3", {}, "Observations"),
      ent && (ent.observations || []).length ? h("ul", { id: "entity-observations" }, ent.observations.map((o) => h("li", {}, o)))
        : h("p", { id: "entity-observations", class: "muted" }, "None."),
      h("h3", {}, "Facts"),
      h("div", { class: "asof" },
        h("label", { for: "asof" }, "As of"), slider, sliderLabel),
      h("p", { class: "muted small" }, `${historyCount} ${historyCount === 1 ? "fact" : "facts"} in this entity's history. Slide left to see what held earlier.`),
      h("div", { class: "table-wrap" },
        h("table", { id: "entity-facts" },
          h("caption", {}, "Facts about this entity valid at the chosen time"),
          h("thead", {}, headRow(["Fact", "Valid from", "Valid to", "Actions"])),
          factsBody)),
      h("div", { class: "actions" },
        h("button", {
          id: "delete-entity", type: "button", class: "danger", onclick: async () => {
            if (!(await confirmDelete(`Delete entity “${name}” and the facts that name it?`))) return;
            await run(() => api("DELETE", `${upath}/entities`, { entityNames: [name] }), `Deleted entity ${name}.`, async () => {
              panel.hidden = true;
              selected = "";
              await loadGraph();
            });
          },
        }, "Delete entity")),
      addForm);
    panel.factsBody = factsBody;
    panel.slider = slider;
    panel.focus();
  }

  async function loadFacts(name) {
    const t = asofTime(panel.slider);
    const asOf = t ? t.toISOString() : "";
    const [a, b] = await Promise.all([
      api("GET", `${upath}/facts` + qs({ subject: name, as_of: asOf, limit: 1000 })),
      api("GET", `${upath}/facts` + qs({ object: name, as_of: asOf, limit: 1000 })),
    ]);
    const seen = new Set();
    const facts = [...(a.facts || []), ...(b.facts || [])].filter((f) => !seen.has(f.id) && seen.add(f.id));
    fill(panel.factsBody, facts.map((f) => factRow(f, name)));
    if (!facts.length) panel.factsBody.appendChild(emptyRow(4, t ? "No fact held at that time." : "No facts hold now."));
  }

  function factRow(f, name) {
    return h("tr", { "data-fact": f.id },
      h("td", { class: "fact" },
        h("span", { class: "fact-subject" }, f.subject), " —", h("span", { class: "fact-predicate" }, f.predicate), "→ ",
        h("span", { class: "fact-object" }, f.object),
        f.source ? h("span", { class: "fact-source muted small" }, "from ", h("code", {}, f.source)) : null),
      h("td", { class: "when" }, timeLines(f.valid_from)),
      h("td", { class: "when" }, f.valid_to ? timeLines(f.valid_to) : h("span", { class: "muted" }, "still holds")),
      h("td", {}, h("button", {
        type: "button", class: "delete-fact danger small", "aria-label": `Delete fact ${f.subject} ${f.predicate} ${f.object}`,
        onclick: async () => {
          if (!(await confirmDelete(`Delete the fact “${f.subject} —${f.predicate}→ ${f.object}”?`))) return;
          await run(() => api("DELETE", `${upath}/facts/${enc(f.id)}`), "Deleted the fact.", async () => {
            await loadGraph();
            await openEntity(name);
          });
        },
      }, "Delete")));
  }

  await loadGraph();
}

// ---------------------------------------------------------------------------
// 4f. Recall: the assembled context and the trace of every candidate

async function renderRecall(page, r) {
  const user = r.user;
  const q = h("input", { id: "recall-query", type: "text", required: true, autocomplete: "off", placeholder: "who owns the renewal?" });
  const sess = h("input", { id: "recall-session", type: "text", autocomplete: "off", placeholder: "optional" });
  const budget = h("input", { id: "recall-budget", type: "number", min: 1, step: 1, value: 4000, inputmode: "numeric" });
  const context = h("pre", { id: "recall-context", class: "content context" });
  const stats = h("p", { id: "recall-stats", class: "muted" });
  const traceWrap = h("div", { id: "recall-trace-wrap" });
  const result = h("section", { id: "recall-result", hidden: true, "aria-labelledby": "recall-context-title" },
    h("h2", { id: "recall-context-title" }, "Context for the next model call"), stats, context,
    h("h2", {}, "Trace"),
    h("p", { class: "muted small" }, "Every candidate, best first: its rank in each ranked list, the fused score, and whether it was kept or why it was dropped."),
    traceWrap);
  const form = h("form", { id: "recall-form", class: "panel" },
    h("div", { class: "row" },
      h("div", { class: "grow" }, h("label", { for: "recall-query" }, "Question"), q),
      h("div", {}, h("label", { for: "recall-session" }, "Session (optional)"), sess),
      h("div", {}, h("label", { for: "recall-budget" }, "Token budget"), budget)),
    h("div", { class: "actions" }, h("button", { id: "recall-go", type: "submit" }, "Recall")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    recall().catch(showError);
  });
  page.append(h("h1", {}, `Recall for ${user}`), form, result);

  async function recall() {
    const body = { user, text: q.value, trace: true };
    if (sess.value.trim()) body.session = sess.value.trim();
    const n = Number.parseInt(budget.value, 10);
    if (Number.isFinite(n) && n > 0) body.max_tokens = n;
    const data = await api("POST", "/v1/recall", body);
    context.textContent = contextText(data);
    const t = data.trace || {};
    stats.textContent = `${t.tokens_used || 0} of ${t.budget || 0} tokens used (window ${t.window_tokens || 0}, preamble ${t.preamble_tokens || 0}); ` +
      `${(data.items || []).length} items kept of ${(t.candidates || []).length} candidates; took ${(t.took_ms || 0).toFixed(1)} ms` +
      ((t.entities || []).length ? `; entities named: ${t.entities.join(", ")}` : "");
    fill(traceWrap, traceTable(t));
    result.hidden = false;
    status("Recalled.", "ok");
  }
}

// contextText writes the chat messages the model would get, one block each.
function contextText(data) {
  const msgs = data.messages || [];
  if (!msgs.length) return "(empty context)";
  return msgs.map((m) => {
    let head = `[${m.role}${m.name ? " " + m.name : ""}]`;
    if (m.tool_call_id) head += ` result of ${m.tool_call_id}`;
    const calls = (m.tool_calls || []).map((tc) => `\n→ ${tc.name}(${argsText(tc.arguments)})`).join("");
    return `${head}\n${m.content || ""}${calls}`;
  }).join("\n\n");
}

// RANK_LISTS names the ranked lists a recall fuses (the trace's internal
// names, memory.Trace.Lists) for people, in the order the trace shows
// them, with what each ranks.
const RANK_LISTS = [
  ["vector", "meaning", "memories, shared memories and episodes by meaning (embedding similarity)"],
  ["bm25", "keywords", "memories, shared memories and episodes by the question's words (BM25)"],
  ["graph", "graph", "facts about the entities the question names, those sharing its other words first"],
  ["graph.other", "graph (other facts)", "facts about the named entities that share none of the question's other words, at a tenth of the weight"],
];

// rankLists returns the trace's lists in RANK_LISTS order (any list it
// does not know after them, by name) as { key, name, about, n }.
function rankLists(t) {
  const lists = t.lists || {};
  const known = RANK_LISTS.filter(([k]) => k in lists).map(([key, name, about]) => ({ key, name, about, n: lists[key] }));
  const other = Object.keys(lists).filter((k) => !RANK_LISTS.some(([rk]) => rk === k)).sort()
    .map((key) => ({ key, name: key, about: "", n: lists[key] }));
  return [...known, ...other];
}

// traceTable lists every candidate with its ranks, one line per ranked
// list it is in, so the table keeps its width however many lists the
// recall fused; a legend above it says what each list ranks.
function traceTable(t) {
  const lists = rankLists(t);
  const headers = ["#", "Source", "Text", "Ranks", "Fused score", "Tokens", "Kept or why not"];
  const rows = (t.candidates || []).map((c) => h("tr", { "data-id": c.id, "data-kept": c.kept ? "true" : "false", class: c.kept ? "kept" : "dropped" },
    h("td", { class: "num" }, String(c.rank || "")),
    h("td", {}, c.source || "", h("code", { class: "id muted" }, c.id || "")),
    h("td", { class: "text", title: c.text || "" }, excerpt(c.text, 140)),
    h("td", { class: "ranks" }, rankItems(c, lists)),
    h("td", { class: "num" }, (c.fused || 0).toFixed(4)),
    h("td", { class: "num" }, c.tokens ? String(c.tokens) : ""),
    h("td", { class: "why" }, c.kept ? h("strong", { class: "kept-label" }, "kept") : h("span", { class: "reason" }, c.reason || "dropped"))));
  const legend = h("ul", { id: "recall-lists", class: "plain small" }, lists.map((l) =>
    h("li", { "data-list": l.key }, h("strong", {}, l.name), l.about ? `: ${l.about}` : "", `; ${l.n} ${l.n === 1 ? "candidate" : "candidates"}`)));
  return [h("h3", {}, "Ranked lists"), legend,
    table("recall-trace", "Recall trace", headers, rows.length ? rows : [emptyRow(headers.length, "No candidates.")], ["#", "Fused score", "Tokens"])];
}

// rankItems is a candidate's rank in each list it is in, as "name #rank"
// (its score in the list on hover), or a dash when it is in none.
function rankItems(c, lists) {
  const items = lists.filter((l) => c.ranks && c.ranks[l.key]).map((l) =>
    h("li", { "data-list": l.key, title: c.scores && c.scores[l.key] !== undefined ? `score ${c.scores[l.key]} in ${l.name}` : null },
      h("span", { class: "list-name" }, l.name), " ", h("span", { class: "rank" }, `#${c.ranks[l.key]}`)));
  return items.length ? h("ul", { class: "plain" }, items) : h("span", { class: "muted" }, "—");
}

// ---------------------------------------------------------------------------
// Start-up

async function logout() {
  try {
    await fetch("/ui/logout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": session.csrf } });
  } finally {
    toLogin();
  }
}

async function start() {
  $("logout").addEventListener("click", () => logout());
  // The skip link focuses the content without touching the hash router.
  const skip = document.querySelector("a.skip");
  if (skip) {
    skip.addEventListener("click", (e) => {
      e.preventDefault();
      $("view").focus();
    });
  }
  try {
    if (!(await loadSession())) return;
  } catch (e) {
    showError(e);
    return;
  }
  $("tenant").textContent = session.tenant;
  window.addEventListener("hashchange", route);
  route();
}

start();

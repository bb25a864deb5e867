package webui

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// skipShortBrowser skips the browser tests under -short: together they
// take well over the ~30 s a short run allows.
func skipShortBrowser(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests skipped under -short (they start Chromium several times)")
	}
}

// TestBrowserWalkthrough signs in through the form, opens a user, searches
// memories, deletes one through the confirmation dialog, runs a Recall and
// reads its trace, opens the graph and an entity, edits a memory and adds
// a memory and a fact: each step checked in the page and in the store.
func TestBrowserWalkthrough(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	ctx := context.Background()

	// Not signed in: the app sends the browser to the login page, with no
	// error shown yet.
	b.navigate("/ui/")
	b.waitFor("the login page", `location.pathname === "/ui/login" && document.getElementById("login")`)
	if browserJS[bool](b, `!document.getElementById("login-error").hidden && document.getElementById("login-error").offsetParent !== null`) {
		b.fatalf("the login error shows before any attempt")
	}

	// A wrong token: back to the login page with the error.
	b.typeInto("#token", "not-a-valid-token-0123456789")
	b.click("#login-submit")
	b.waitFor("the login error", `new URLSearchParams(location.search).get("failed") === "1" && document.getElementById("login-error") && document.getElementById("login-error").offsetParent !== null`)
	if got := browserJS[string](b, `document.getElementById("login-error").textContent.trim()`); got != "That token was not accepted." {
		t.Errorf("login error says %q", got)
	}

	// The right token: the users page, acme's users only.
	b.typeInto("#token", browserTokenAcme)
	b.click("#login-submit")
	b.waitFor("the users table", `document.querySelector("#users tr[data-user]")`)
	if h := browserJS[string](b, `location.hash`); h != "" && h != "#/users" {
		t.Errorf("after signing in the hash is %q, want #/users (or none, the default)", h)
	}
	users := b.attrs("#users tr[data-user]", "data-user")
	slices.Sort(users)
	if !slices.Equal(users, []string{"alice", "bruno"}) {
		t.Errorf("users table lists %q, want alice and bruno", users)
	}

	// Each row shows the user's counts and size.
	usage, err := b.store.Usage(ctx, acmeAlice)
	if err != nil {
		t.Fatal(err)
	}
	aliceRow := browserJS[string](b, `document.querySelector('#users tr[data-user="alice"]').innerText`)
	for what, n := range map[string]int{"messages": usage.Messages, "memories": usage.Memories, "facts": usage.Facts} {
		if !regexp.MustCompile(`(^|\D)` + strconv.Itoa(n) + `(\D|$)`).MatchString(aliceRow) {
			t.Errorf("alice's row does not show her %d %s: %q", n, what, aliceRow)
		}
	}
	if !regexp.MustCompile(`\d\s?(B|kB|KB|KiB|MB|MiB)\b`).MatchString(aliceRow) {
		t.Errorf("alice's row shows no size in bytes: %q", aliceRow)
	}

	// Open alice: her sessions.
	b.click(`#users tr[data-user="alice"] a.open-user`)
	b.waitFor("alice's sessions", `location.hash === "#/u/alice/sessions" && document.querySelector('#sessions tr[data-session="lisbon-trip"]')`)
	if s := b.attrs("#sessions tr[data-session]", "data-session"); !slices.Contains(s, "packing") || len(s) != 2 {
		t.Errorf("sessions table lists %q, want lisbon-trip and packing", s)
	}

	// A session: every message with its role, the tool call and its
	// result; the window under a budget is the store's.
	b.click(`#sessions tr[data-session="lisbon-trip"] a.open-session`)
	b.waitFor("the session's messages", `location.hash === "#/u/alice/s/lisbon-trip" && document.querySelectorAll("#messages li.msg").length === 11`)
	roles := b.attrs("#messages li.msg", "data-role")
	if want := []string{"system", "user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"}; !slices.Equal(roles, want) {
		t.Errorf("message roles %q, want %q", roles, want)
	}
	msgText := browserJS[string](b, `document.getElementById("messages").textContent`)
	for _, want := range []string{"search_flights", "call_flights_1", `"LIS"`, "TP 539", "Pena Palace"} {
		if !strings.Contains(msgText, want) {
			t.Errorf("the messages do not show %q", want)
		}
	}
	win, err := b.store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "lisbon-trip"}).Window(ctx, memory.WindowOptions{MaxMessages: 1 << 20, MaxTokens: 150})
	if err != nil {
		t.Fatal(err)
	}
	b.typeInto("#budget", "150")
	b.click("#window-go")
	b.waitFor("the window", fmt.Sprintf(`document.querySelectorAll("#window-messages li").length === %d`, len(win)))
	winText := browserJS[string](b, `document.getElementById("window-messages").textContent`)
	if last := win[len(win)-1].Content; !strings.Contains(winText, last) {
		t.Errorf("the window does not end with %q", last)
	}
	b.goHash("#/u/alice/sessions")
	b.waitFor("alice's sessions again", `document.querySelector('#sessions tr[data-session="lisbon-trip"]')`)

	// Memories, then a search.
	b.click(`#nav a[data-nav="memories"]`)
	hotel, seat, porto := b.seed.mem["hotel"], b.seed.mem["seat"], b.seed.mem["porto"]
	b.waitFor("alice's memories", fmt.Sprintf(`location.hash === "#/u/alice/memories" && document.querySelector('#memories tr[data-id=%q]')`, hotel))
	current, err := b.store.Memories(ctx, acmeAlice, memory.MemoriesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.attrs("#memories tr[data-id]", "data-id"); len(got) != len(current) {
		t.Errorf("memories table has %d rows, the store %d current memories", len(got), len(current))
	}
	// A row shows the memory's source message and expiry.
	hotelRow := browserJS[string](b, fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]').textContent`, hotel))
	if !strings.Contains(hotelRow, b.seed.bookingMessage) {
		t.Errorf("the hotel memory's row does not show its source message %s: %q", b.seed.bookingMessage, hotelRow)
	}
	passport := browserJS[string](b, fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]').textContent`, b.seed.mem["passport"]))
	if exp := fmt.Sprintf("%d-03-31", time.Now().UTC().Year()+1); !strings.Contains(passport, exp) {
		t.Errorf("the passport memory's row does not show its expiry %s: %q", exp, passport)
	}
	b.typeInto("#mem-query", "hotel")
	b.key(kb.Enter)
	b.waitFor("the search result", fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]') && !document.querySelector('#memories tr[data-id=%q]')`, hotel, seat))
	b.typeInto("#mem-query", "")
	b.key(kb.Enter)
	b.waitFor("the whole list again", fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]')`, seat))

	// Delete one through the dialog: gone from the page and the store.
	b.click(fmt.Sprintf(`#memories tr[data-id=%q] button.delete-memory`, porto))
	b.waitFor("the dialog", `document.getElementById("confirm").open`)
	if txt := browserJS[string](b, `document.getElementById("confirm-text").textContent`); txt == "" {
		t.Error("the confirmation dialog says nothing")
	}
	b.confirm()
	b.waitFor("the deleted row to go", fmt.Sprintf(`!document.querySelector('#memories tr[data-id=%q]') && document.querySelector('#memories tr[data-id=%q]')`, porto, seat))
	if _, err := b.store.Memory(ctx, acmeAlice, porto); err == nil {
		t.Errorf("memory %s is still in the store after the page deleted it", porto)
	}
	if code := browserAPIStatus(t, b.url+"/v1/users/alice/memories/"+porto, browserTokenAcme); code != http.StatusNotFound {
		t.Errorf("GET /v1/users/alice/memories/%s answers %d after the page deleted it, want 404", porto, code)
	}

	// Edit a memory: a new version; its history shows both.
	b.click(fmt.Sprintf(`#memories tr[data-id=%q] button.edit-memory`, seat))
	b.typeInto("#mem-edit-text", "Prefers an aisle seat on morning flights")
	b.submit("#mem-edit")
	b.waitFor("the edited memory", `Array.from(document.querySelectorAll("#memories tr[data-id]")).some(r => r.textContent.includes("Prefers an aisle seat"))`)
	newID := browserJS[string](b, `Array.from(document.querySelectorAll("#memories tr[data-id]")).find(r => r.textContent.includes("Prefers an aisle seat")).dataset.id`)
	hist, err := b.store.MemoryHistory(ctx, acmeAlice, newID)
	if err != nil || len(hist) != 2 {
		t.Fatalf("the store's history of the edited memory %s: %d versions, %v", newID, len(hist), err)
	}
	b.click(fmt.Sprintf(`#memories tr[data-id=%q] button.history`, newID))
	b.waitFor("the history of the edited memory", `document.querySelector("#mem-history") && !document.querySelector("#mem-history").hidden &&
		document.querySelector("#mem-history").textContent.includes("Prefers an aisle seat") &&
		document.querySelector("#mem-history").textContent.includes("Prefers a window seat")`)

	// Add a memory.
	b.typeInto("#mem-add-text", "Wants a tram 28 ride on the first evening")
	b.do("choose a kind", chromedp.SetValue(chromedp.CSS("#mem-add-kind"), "episode"))
	b.typeInto("#mem-add-tags", "lisbon, trams")
	b.submit("#mem-add")
	b.waitFor("the added memory", `Array.from(document.querySelectorAll("#memories tr[data-id]")).some(r => r.textContent.includes("tram 28 ride"))`)
	added := browserMemoryByText(t, b.store, acmeAlice, "Wants a tram 28 ride on the first evening")
	if added.Kind != "episode" || !slices.Equal(added.Tags, []string{"lisbon", "trams"}) {
		t.Errorf("added memory is %s with tags %q, want episode with lisbon, trams", added.Kind, added.Tags)
	}

	// Recall: the trace has a row for the hotel memory with its rank and
	// fused score.
	rec, err := b.store.Recall(ctx, memory.Query{Scope: acmeAlice, Text: b.seed.recallQuery, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	cand, ok := recallCandidate(rec, hotel)
	if !ok {
		t.Fatal("the hotel memory is no longer a candidate")
	}
	b.click(`#nav a[data-nav="recall"]`)
	b.waitFor("the recall form", `location.hash === "#/u/alice/recall" && document.getElementById("recall-form")`)
	b.typeInto("#recall-query", b.seed.recallQuery)
	b.submit("#recall-form")
	b.waitFor("the trace row of the hotel memory", fmt.Sprintf(`Array.from(document.querySelectorAll("#recall-trace tr")).some(r => r.textContent.includes(%q))`, hotel))
	row := browserJS[string](b, fmt.Sprintf(`Array.from(document.querySelectorAll("#recall-trace tr")).find(r => r.textContent.includes(%q)).innerText`, hotel))
	if !browserHasNumberNear(row, cand.Fused) {
		t.Errorf("the trace row of %s shows no fused score near %.4f: %q", hotel, cand.Fused, row)
	}
	for list, rank := range cand.Ranks {
		if !regexp.MustCompile(`(^|\D)` + strconv.Itoa(rank) + `(\D|$)`).MatchString(row) {
			t.Errorf("the trace row of %s does not show its rank %d in %s: %q", hotel, rank, list, row)
		}
	}
	if !regexp.MustCompile(`(?i)kept|✓`).MatchString(row) {
		t.Errorf("the trace row of the kept hotel memory does not say kept: %q", row)
	}
	if ctxText := browserJS[string](b, `document.getElementById("recall-context").textContent`); !strings.Contains(ctxText, "Hotel Avenida Palace") {
		t.Errorf("the recalled context does not hold the hotel memory: %q", ctxText)
	}

	// The graph: click Lisbon, its facts show.
	b.click(`#nav a[data-nav="graph"]`)
	b.waitFor("the graph", `location.hash === "#/u/alice/graph" && document.querySelector('#graph g.node[data-entity="Lisbon"]')`)
	// Six facts hold now (lived in Hamburg ended in 2020).
	if n := len(b.attrs("#graph g.edge", "class")); n != 6 {
		t.Errorf("the graph draws %d edges, want the 6 facts valid now", n)
	}
	b.click(`#graph g.node[data-entity="Lisbon"]`)
	b.waitFor("Lisbon's panel", `document.getElementById("entity-name") && document.getElementById("entity-name").textContent.trim() === "Lisbon"`)
	b.waitFor("Lisbon's facts", fmt.Sprintf(`document.querySelector('#entity-facts tr[data-fact=%q]') && document.querySelector('#entity-facts tr[data-fact=%q]')`, b.seed.fact["located_in"], b.seed.fact["near"]))
	if !strings.Contains(browserJS[string](b, `document.getElementById("entity").textContent`), "Capital of Portugal") {
		t.Error("Lisbon's panel does not show its observation")
	}

	// Add a fact from the panel.
	b.typeInto("#fact-subject", "Alice")
	b.typeInto("#fact-predicate", "visits")
	b.typeInto("#fact-object", "Belém Tower")
	b.submit("#fact-add")
	var facts []graph.Fact
	b.waitFor("the status after adding a fact", `document.getElementById("status").textContent !== ""`)
	err = b.store.ViewGraph(ctx, acmeAlice, func(g *graph.Tx) (err error) {
		facts, err = g.Facts(graph.FactQuery{Subject: "Alice", Predicate: "visits"})
		return err
	})
	if err != nil || len(facts) != 1 || facts[0].Object != "Belém Tower" {
		t.Errorf("the store's Alice visits facts: %+v, %v; want one to Belém Tower", facts, err)
	}
	// The status line names the new fact at once; the page then draws
	// the graph again and reopens Lisbon's panel, and a click on Alice
	// before that ends is undone by it (the walk failed so under load).
	// The form's fields are emptied once both are done.
	b.waitFor("the new fact in the graph, Lisbon's panel again", fmt.Sprintf(`document.querySelector('#graph g.node[data-entity="Belém Tower"]') && document.getElementById("fact-object") && document.getElementById("fact-object").value === "" && document.getElementById("entity-name").textContent.trim() === "Lisbon" && document.querySelector('#entity-facts tr[data-fact=%q]')`, b.seed.fact["located_in"]))

	// Alice's facts through time: the as-of slider at its start (Home)
	// shows where she lived in 2015, at its end (End) where she lives now.
	b.click(`#graph g.node[data-entity="Alice"]`)
	b.waitFor("Alice's facts now", fmt.Sprintf(`document.getElementById("entity-name").textContent.trim() === "Alice" && document.querySelector('#entity-facts tr[data-fact=%q]')`, b.seed.fact["lives_in"]))
	if browserJS[bool](b, fmt.Sprintf(`!!document.querySelector('#entity-facts tr[data-fact=%q]')`, b.seed.fact["lived_in"])) {
		t.Error("Alice's facts now include Hamburg, which ended in 2020")
	}
	b.do("focus the slider", chromedp.Focus(chromedp.ID("asof")))
	b.key(kb.Home)
	b.waitFor("Alice's facts in 2015", fmt.Sprintf(`document.querySelector('#entity-facts tr[data-fact=%q]') && !document.querySelector('#entity-facts tr[data-fact=%q]') && document.getElementById("asof-label").textContent.includes("2015")`,
		b.seed.fact["lived_in"], b.seed.fact["lives_in"]))
	b.checkTables("Alice's facts in 2015, one with an end")
	b.key(kb.End)
	b.waitFor("Alice's facts now again", fmt.Sprintf(`!document.querySelector('#entity-facts tr[data-fact=%q]') && document.querySelector('#entity-facts tr[data-fact=%q]')`,
		b.seed.fact["lived_in"], b.seed.fact["lives_in"]))
	b.noErrors("walkthrough")
}

// TestBrowserDeletes uses the other delete controls, each through the
// confirmation dialog: a fact, an entity, a session and a whole user; each
// is gone from the page and from the store.
func TestBrowserDeletes(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	ctx := context.Background()
	b.login(browserTokenAcme)

	factsOf := func(q graph.FactQuery) []graph.Fact {
		t.Helper()
		var fs []graph.Fact
		if err := b.store.ViewGraph(ctx, acmeAlice, func(g *graph.Tx) (err error) {
			fs, err = g.Facts(q)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return fs
	}

	// A fact, from Lisbon's panel.
	b.goHash("#/u/alice/graph")
	b.click(`#graph g.node[data-entity="Lisbon"]`)
	near := b.seed.fact["near"]
	b.click(fmt.Sprintf(`#entity-facts tr[data-fact=%q] button.delete-fact`, near))
	b.confirm()
	b.waitFor("the fact to go", fmt.Sprintf(`!document.querySelector('#entity-facts tr[data-fact=%q]') && document.querySelector('#entity-facts tr[data-fact=%q]')`, near, b.seed.fact["located_in"]))
	if fs := factsOf(graph.FactQuery{Subject: "Sintra", Predicate: "near"}); len(fs) != 0 {
		t.Errorf("the deleted fact is still in the store: %+v", fs)
	}

	// An entity: Sintra.
	b.click(`#graph g.node[data-entity="Sintra"]`)
	b.waitFor("Sintra's panel", `document.getElementById("entity-name").textContent.trim() === "Sintra"`)
	b.click("#delete-entity")
	b.confirm()
	b.waitFor("Sintra to leave the graph", `!document.querySelector('#graph g.node[data-entity="Sintra"]') && document.querySelector('#graph g.node[data-entity="Lisbon"]')`)
	if err := b.store.ViewGraph(ctx, acmeAlice, func(g *graph.Tx) error {
		_, err := g.Entity("Sintra")
		return err
	}); err == nil {
		t.Error("the deleted entity Sintra is still in the store")
	}

	// A session.
	b.goHash("#/u/alice/sessions")
	b.click(`#sessions tr[data-session="packing"] button.delete-session`)
	b.confirm()
	b.waitFor("the session to go", `!document.querySelector('#sessions tr[data-session="packing"]') && document.querySelector('#sessions tr[data-session="lisbon-trip"]')`)
	if msgs, err := b.store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "packing"}).Messages(ctx, memory.MessagesOptions{}); err != nil || len(msgs) != 0 {
		t.Errorf("the deleted session still has %d messages (%v)", len(msgs), err)
	}

	// The whole user: bruno.
	b.goHash("#/u/bruno/sessions")
	b.waitFor("bruno's sessions", `document.querySelector('#sessions tr[data-session="standup-notes"]')`)
	b.click("#delete-user")
	b.confirm()
	b.waitFor("the users page without bruno", `(location.hash === "#/users" || location.hash === "") && document.querySelector('#users tr[data-user="alice"]') && !document.querySelector('#users tr[data-user="bruno"]')`)
	if u, err := b.store.Usage(ctx, acmeBruno); err != nil || u.Messages+u.Memories+u.Entities+u.Facts != 0 {
		t.Errorf("bruno still holds %+v (%v)", u, err)
	}
	b.noErrors("deletes")
}

// TestBrowserCSRF signs in, then opens a page of another origin on the
// same host (the same site, so the SameSite cookie is sent: only the
// CSRF token and the Origin check stand in the way) that tries to add a
// memory and sign the user out the ways another page can, without the
// CSRF token: fetch in no-cors mode and plain form posts (a DELETE or a
// custom header would need a CORS preflight the server never grants).
// None of it takes effect.
func TestBrowserCSRF(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	ctx := context.Background()
	b.login(browserTokenAcme)
	victim := b.seed.mem["hotel"]
	attack := fmt.Sprintf(`<!doctype html><title>attack</title>
<iframe name="sink"></iframe>
<form id="add" method="post" enctype="text/plain" target="sink" action="%[1]s/ui/api/v1/users/alice/memories"><input name='{"text":"planted by csrf","x":"' value='"}'></form>
<form id="out" method="post" target="sink" action="%[1]s/ui/logout"></form>
<script>
(async () => {
	try {
		await fetch(%[2]q, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: '{"text":"planted by csrf fetch"}'});
	} catch (e) {}
	document.getElementById("add").submit();
	await new Promise(r => setTimeout(r, 500));
	document.getElementById("out").submit();
	await new Promise(r => setTimeout(r, 500));
	document.title = "done";
})();
</script>`, b.url, b.url+"/ui/api/v1/users/alice/memories")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, attack)
	}))
	defer evil.Close()
	b.do("open the attacker's page", chromedp.Navigate(evil.URL))
	b.waitFor("the attack to finish", `document.title === "done"`)

	ms, err := b.store.Memories(ctx, acmeAlice, memory.MemoriesOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(m.Text, "csrf") {
			t.Errorf("a cross-origin page added a memory: %q", m.Text)
		}
	}
	// Still signed in: the app loads without the login page.
	b.navigate("/ui/#/u/alice/memories")
	b.waitFor("the memories page, still signed in", fmt.Sprintf(`location.pathname === "/ui/" && document.querySelector('#memories tr[data-id=%q]')`, victim))
}

// browserAPIStatus is the status of a GET of the HTTP API with a bearer
// token.
func browserAPIStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestBrowserPaging pages through a long session and a graph bigger than
// one page: every message shows once, every entity on some page, and
// Previous goes back to the first page.
func TestBrowserPaging(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	b.login(browserTokenAcme)
	b.goHash("#/u/bruno/s/standup-notes")
	b.waitFor("bruno's messages", `document.querySelector("#messages li.msg")`)
	for i := 0; browserJS[bool](b, `!!document.getElementById("messages-more") && !document.getElementById("messages-more").hidden`); i++ {
		if i > 20 {
			b.fatalf("the more button never goes away")
		}
		n := browserJS[int](b, `document.querySelectorAll("#messages li.msg").length`)
		b.click("#messages-more")
		b.waitFor("more messages", fmt.Sprintf(`document.querySelectorAll("#messages li.msg").length > %d || document.getElementById("messages-more").hidden`, n))
	}
	text := browserJS[string](b, `document.getElementById("messages").textContent`)
	for i := range 130 {
		if c := strings.Count(text, fmt.Sprintf("Stand-up note %03d:", i)); c != 1 {
			t.Errorf("message %03d shows %d times after paging to the end", i, c)
		}
	}

	b.goHash("#/u/bruno/graph")
	b.waitFor("bruno's graph", `document.querySelector("#graph g.node")`)
	seen := map[string]int{}
	var firstPage []string
	for page := 0; ; page++ {
		if page > 20 {
			b.fatalf("the graph's next button never stops")
		}
		names := b.attrs("#graph g.node", "data-entity")
		if page == 0 {
			firstPage = names
		}
		for _, n := range names {
			seen[n]++
		}
		if !browserJS[bool](b, `(() => { const n = document.getElementById("graph-next"); return !!n && !n.disabled && !n.hidden; })()`) {
			break
		}
		b.click("#graph-next")
		b.waitFor("the next graph page", fmt.Sprintf(`document.querySelector("#graph g.node") && !Array.from(document.querySelectorAll("#graph g.node")).some(n => n.getAttribute("data-entity") === %q)`, names[0]))
	}
	// The entities at the far end of a page's relations may be drawn
	// on that page too, so an entity can show on two pages; each one
	// must show on at least one.
	if len(seen) != 130 {
		t.Errorf("paging the graph reached %d entities, want 130", len(seen))
	}
	if len(firstPage) >= 130 {
		t.Errorf("the first graph page draws all %d entities: no paging", len(firstPage))
	}
	// Back to the first page.
	for i := 0; browserJS[bool](b, `(() => { const p = document.getElementById("graph-prev"); return !!p && !p.disabled && !p.hidden; })()`); i++ {
		if i > 20 {
			b.fatalf("the graph's previous button never stops")
		}
		cur := b.attrs("#graph g.node", "data-entity")
		b.click("#graph-prev")
		b.waitFor("the previous graph page", fmt.Sprintf(`document.querySelector("#graph g.node") && !Array.from(document.querySelectorAll("#graph g.node")).some(n => n.getAttribute("data-entity") === %q)`, cur[0]))
	}
	if got := b.attrs("#graph g.node", "data-entity"); !slices.Equal(got, firstPage) {
		t.Errorf("Previous back to the start shows %d entities %q..., not the first page", len(got), got[:min(3, len(got))])
	}
	b.noErrors("paging")
}

// browserMemoryByText finds the user's current memory with the text.
func browserMemoryByText(t *testing.T, store *memory.Store, scope memory.Scope, text string) memory.Memory {
	t.Helper()
	ms, err := store.Memories(context.Background(), scope, memory.MemoriesOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Text == text {
			return m
		}
	}
	t.Fatalf("no memory %q in the store", text)
	return memory.Memory{}
}

// browserHasNumberNear reports whether the text shows a number within 1%
// (or 0.0005) of want.
func browserHasNumberNear(text string, want float64) bool {
	for _, s := range regexp.MustCompile(`\d*\.\d+(e-?\d+)?|\d+`).FindAllString(text, -1) {
		if v, err := strconv.ParseFloat(s, 64); err == nil && (math.Abs(v-want) <= 0.0005 || math.Abs(v-want) <= 0.01*want) {
			return true
		}
	}
	return false
}

// browserPayloads are markup that runs script when a page puts stored
// text into the DOM as HTML.
var browserPayloads = []string{
	`<script>window.__x=1</script>`,
	`<img src=x onerror="window.__x=1">`,
	`"><svg onload=window.__x=1>`,
}

// TestBrowserEscaping stores markup in every field that can hold it and
// renders every page: nothing runs and the text shows literally. The CSP
// is turned off for this test, so that it checks the escaping itself.
func TestBrowserEscaping(t *testing.T) {
	skipShortBrowser(t)
	var fields []string // "payload @field" strings the pages must show
	seed := func(t *testing.T, store *memory.Store) *browserSeed {
		ctx := context.Background()
		sc := memory.Scope{Tenant: "acme", User: "mallory", Session: "evil"}
		user := memory.Scope{Tenant: "acme", User: "mallory"}
		var msgs []memory.Message
		var mems []memory.Memory
		var ents []graph.Entity
		var facts []memory.Fact
		for i, p := range browserPayloads {
			f := func(field string) string {
				s := p + " @" + field
				fields = append(fields, s)
				return s
			}
			call := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				memory.Message{Role: memory.RoleUser, Name: "mallory", Content: f("content"), Metadata: map[string]string{"note": p}},
				memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: call, Name: "lookup",
					Arguments: []byte(fmt.Sprintf(`{"q":%q}`, "args "+strings.ReplaceAll(p, `"`, "'")))}}},
				memory.Message{Role: memory.RoleTool, ToolCallID: call, Content: f("tool result")},
			)
			mems = append(mems, memory.Memory{Kind: "fact", Text: f("memory text"), Tags: []string{p}, Metadata: map[string]string{"note": p}})
			ents = append(ents, graph.Entity{Name: f("entity"), Type: p, Observations: []string{f("observation")}, Aliases: []string{f("alias")}})
			facts = append(facts, memory.Fact{Subject: p + " @entity", Predicate: fmt.Sprintf("rel%d", i), Object: f("object"), Source: p})
		}
		if err := store.Session(sc).Append(ctx, msgs...); err != nil {
			t.Fatalf("append: %v", err)
		}
		for _, m := range mems {
			if _, err := store.Remember(ctx, user, m); err != nil {
				t.Fatalf("remember %q: %v", m.Text, err)
			}
		}
		if err := store.UpdateGraph(ctx, user, func(g *graph.Tx) error {
			_, err := g.CreateEntities(ents)
			return err
		}); err != nil {
			t.Fatalf("entities: %v", err)
		}
		for _, f := range facts {
			if _, err := store.Relate(ctx, user, f); err != nil {
				t.Fatalf("fact %+v: %v", f, err)
			}
		}
		// Fields the store may refuse markup in: a message's name, a
		// tool call's name and id, a predicate. Each one it takes is
		// checked like the others; the log says which it refused.
		try := func(field string, err error) {
			if err != nil {
				t.Logf("the store refuses markup in %s: %v", field, err)
				return
			}
			fields = append(fields, browserPayloads[1]+" @"+field)
		}
		p := browserPayloads[1] // the one with quotes and an attribute
		try("name", store.Session(sc).Append(ctx, memory.Message{Role: memory.RoleUser, Name: p + " @name", Content: "hello"}))
		try("tool name", store.Session(sc).Append(ctx,
			memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "call_tool_name", Name: p + " @tool name"}}},
			memory.Message{Role: memory.RoleTool, ToolCallID: "call_tool_name", Content: "ok"}))
		try("call id", store.Session(sc).Append(ctx,
			memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: p + " @call id", Name: "lookup"}}},
			memory.Message{Role: memory.RoleTool, ToolCallID: p + " @call id", Content: "ok"}))
		_, err := store.Relate(ctx, user, memory.Fact{Subject: browserPayloads[0] + " @entity", Predicate: p + " @predicate", Object: "x"})
		try("predicate", err)
		return &browserSeed{recallQuery: "window"}
	}
	b := newBrowserEnv(t, &browserOptions{bypassCSP: true, seed: seed})
	b.login(browserTokenAcme)

	check := func(where string, want []string) {
		t.Helper()
		if x := browserJS[bool](b, `typeof window.__x !== "undefined"`); x {
			b.fatalf("%s: stored markup ran (window.__x is set)", where)
		}
		if n := browserJS[int](b, `document.querySelectorAll("#view script, #view img[src=x], #view svg[onload], [onerror], [onload]").length`); n != 0 {
			t.Errorf("%s: stored markup became %d elements", where, n)
		}
		text := b.text()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the page does not show %q literally", where, w)
			}
		}
	}
	pick := func(field string) []string {
		var out []string
		for _, f := range fields {
			if strings.HasSuffix(f, "@"+field) {
				out = append(out, f)
			}
		}
		return out
	}

	b.goHash("#/users")
	b.waitFor("users", `document.querySelector('#users tr[data-user="mallory"]')`)
	check("users", nil)
	b.goHash("#/u/mallory/sessions")
	b.waitFor("sessions", `document.querySelector('#sessions tr[data-session="evil"]')`)
	check("sessions", nil)
	b.goHash("#/u/mallory/s/evil")
	b.waitFor("messages", `document.querySelectorAll("#messages li.msg").length >= 9`)
	check("messages", slices.Concat(pick("content"), pick("tool result"), pick("name"), pick("tool name"), pick("call id"),
		[]string{"args <script>window.__x=1</script>", "args <img src=x onerror='window.__x=1'>", "mallory"}))
	b.typeInto("#budget", "2000")
	b.click("#window-go")
	b.waitFor("the window", `document.querySelectorAll("#window-messages li").length > 0`)
	check("window", pick("content"))
	b.goHash("#/u/mallory/memories")
	b.waitFor("memories", `document.querySelectorAll("#memories tr[data-id]").length >= 3`)
	check("memories", append(pick("memory text"), browserPayloads...)) // the tags are the bare payloads
	b.click("#memories tr[data-id] button.history")
	b.waitFor("history", `document.querySelector("#mem-history") && !document.querySelector("#mem-history").hidden`)
	check("memory history", nil)
	b.goHash("#/u/mallory/graph")
	b.waitFor("graph", `document.querySelectorAll("#graph g.node").length >= 3`)
	check("graph", slices.Concat(pick("entity"), pick("predicate")))
	for _, name := range pick("entity") {
		b.do("open entity", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`Array.from(document.querySelectorAll("#graph g.node")).find(n => n.getAttribute("data-entity") === %q).dispatchEvent(new MouseEvent("click", {bubbles: true}))`, name)))
		b.waitFor("entity "+name, fmt.Sprintf(`document.getElementById("entity-name") && document.getElementById("entity-name").textContent.trim() === %q`, name))
		want := []string{name}
		for _, f := range fields {
			if strings.HasPrefix(f, strings.TrimSuffix(name, " @entity")) && (strings.HasSuffix(f, "@observation") || strings.HasSuffix(f, "@object") || strings.HasSuffix(f, "@alias")) {
				want = append(want, f)
			}
		}
		check("entity "+name, want)
	}
	b.goHash("#/u/mallory/recall")
	b.waitFor("recall form", `document.getElementById("recall-form")`)
	b.typeInto("#recall-query", "window script img svg onerror onload")
	b.submit("#recall-form")
	b.waitFor("the trace", `document.querySelectorAll("#recall-trace tr").length > 1`)
	check("recall", nil)
	if x := browserJS[bool](b, `typeof window.__x !== "undefined"`); x {
		t.Fatal("stored markup ran")
	}
	exc, _, _ := b.reported()
	for _, e := range exc {
		t.Errorf("uncaught JavaScript error: %s", e)
	}
}

// browserCSP is the contract's Content-Security-Policy.
const browserCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// TestBrowserCSP visits every page, with the actions that draw new parts
// (dialogs, history, the window, the entity panel, the trace), and fails on
// any Content-Security-Policy violation the browser reports; it also reads
// the policy and the other security headers of every kind of response.
func TestBrowserCSP(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/ui/login", "/ui/", "/ui/static/app.js", "/ui/static/app.css", "/ui/static/login.js", "/ui/session", "/ui/api/v1/users"} {
		resp, err := client.Get(b.url + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); got != browserCSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", p, got, browserCSP)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", p, got)
		}
		if got := resp.Header.Get("Referrer-Policy"); got != "same-origin" {
			t.Errorf("GET %s: Referrer-Policy %q", p, got)
		}
	}

	b.login(browserTokenAcme)
	visit := func(hash, ready string) {
		t.Helper()
		b.goHash(hash)
		b.waitFor(hash, ready)
	}
	visit("#/users", `document.querySelector("#users tr[data-user]")`)
	visit("#/u/alice/sessions", `document.querySelector("#sessions tr[data-session]")`)
	b.click(`#sessions tr[data-session="packing"] button.delete-session`)
	b.waitFor("the dialog", `document.getElementById("confirm").open`)
	b.click("#confirm-no")
	b.waitFor("the dialog to close", `!document.getElementById("confirm").open`)
	visit("#/u/alice/s/lisbon-trip", `document.querySelectorAll("#messages li.msg").length >= 11`)
	b.typeInto("#budget", "150")
	b.click("#window-go")
	b.waitFor("the window", `document.querySelectorAll("#window-messages li").length > 0`)
	visit("#/u/bruno/s/standup-notes", `document.querySelector("#messages li.msg")`)
	n := browserJS[int](b, `document.querySelectorAll("#messages li.msg").length`)
	b.click("#messages-more")
	b.waitFor("more messages", fmt.Sprintf(`document.querySelectorAll("#messages li.msg").length > %d`, n))
	visit("#/u/alice/memories", `document.querySelector("#memories tr[data-id]")`)
	b.click(fmt.Sprintf(`#memories tr[data-id=%q] button.history`, b.seed.mem["budget"]))
	b.waitFor("history", `document.querySelector("#mem-history") && !document.querySelector("#mem-history").hidden`)
	b.click(fmt.Sprintf(`#memories tr[data-id=%q] button.edit-memory`, b.seed.mem["seat"]))
	b.waitFor("the edit form", `document.getElementById("mem-edit-text")`)
	visit("#/u/alice/graph", `document.querySelector("#graph g.node")`)
	b.click(`#graph g.node[data-entity="Alice"]`)
	b.waitFor("Alice's panel", `document.querySelector("#entity-facts tr[data-fact]")`)
	b.do("move the as-of slider", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("asof"); s.value = s.min; s.dispatchEvent(new Event("input", {bubbles: true})); s.dispatchEvent(new Event("change", {bubbles: true})); })()`))
	visit("#/u/bruno/graph", `document.querySelector("#graph g.node")`)
	if browserJS[bool](b, `!!document.getElementById("graph-next") && !document.getElementById("graph-next").disabled && !document.getElementById("graph-next").hidden`) {
		first := b.attrs("#graph g.node", "data-entity")
		b.click("#graph-next")
		b.waitFor("the next graph page", fmt.Sprintf(`document.querySelector("#graph g.node") && document.querySelector("#graph g.node").getAttribute("data-entity") !== %q`, first[0]))
	} else {
		t.Error("bruno's graph of 130 entities has no next page")
	}
	visit("#/u/alice/recall", `document.getElementById("recall-form")`)
	b.typeInto("#recall-query", b.seed.recallQuery)
	b.submit("#recall-form")
	b.waitFor("the trace", `document.querySelectorAll("#recall-trace tr").length > 1`)
	b.noErrors("CSP walk")
}

// TestBrowserIsolation signs in as globex and walks to acme's users by
// hash: nothing of acme's ever shows.
func TestBrowserIsolation(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	b.login(browserTokenGlobex)
	b.waitFor("globex's users", `document.querySelectorAll("#users tr[data-user]").length >= 2`)
	users := b.attrs("#users tr[data-user]", "data-user")
	slices.Sort(users)
	if !slices.Equal(users, []string{"alice", "gina"}) {
		t.Errorf("globex's users table lists %q, want alice and gina", users)
	}
	// Session ids are left out: the page may echo the ids of its URL.
	acme := []string{browserAcmeMarker, "Hotel Avenida Palace", "Lisbon", "Kestrel", "Component 0", "window seat", "Stand-up note", "Sintra"}
	noAcme := func(where string) {
		t.Helper()
		text := b.text()
		for _, s := range acme {
			if strings.Contains(text, s) {
				t.Errorf("%s: globex's page shows acme's %q", where, s)
			}
		}
	}
	noAcme("users")
	pages := []struct{ hash, ready string }{
		{"#/u/alice/sessions", `document.querySelector('#sessions tr[data-session="kickoff"]')`},
		{"#/u/alice/s/lisbon-trip", `document.getElementById("status").textContent !== "" || document.querySelector("#messages")`},
		{"#/u/alice/memories", `Array.from(document.querySelectorAll("#memories tr")).some(r => r.textContent.includes("Globex kickoff"))`},
		{"#/u/alice/graph", `document.getElementById("graph") || document.getElementById("status").textContent !== ""`},
		{"#/u/bruno/sessions", `document.getElementById("sessions") || document.getElementById("status").textContent !== ""`},
		{"#/u/bruno/s/standup-notes", `document.getElementById("messages") || document.getElementById("status").textContent !== ""`},
		{"#/u/bruno/memories", `document.getElementById("memories") || document.getElementById("status").textContent !== ""`},
		{"#/u/bruno/graph", `document.getElementById("graph") || document.getElementById("status").textContent !== ""`},
	}
	for _, p := range pages {
		b.goHash(p.hash)
		b.waitFor(p.hash, p.ready)
		// Give late answers a moment to land before reading the page.
		b.do("settle", chromedp.Evaluate[chromedp.Void](`new Promise(r => setTimeout(r, 300))`, chromedp.EvalAwaitPromise))
		noAcme(p.hash)
	}
	b.goHash("#/u/alice/recall")
	b.waitFor("the recall form", `document.getElementById("recall-form")`)
	b.typeInto("#recall-query", "Which hotel in Lisbon did I book?")
	b.submit("#recall-form")
	b.waitFor("the recall answer", `document.querySelector("#recall-trace") || document.getElementById("status").textContent !== ""`)
	b.do("settle", chromedp.Evaluate[chromedp.Void](`new Promise(r => setTimeout(r, 300))`, chromedp.EvalAwaitPromise))
	noAcme("recall")

	// The API behind the page answers for globex only, whatever the path.
	body := browserJS[string](b, `(async () => {
		const s = await (await fetch("/ui/session")).json();
		const out = [];
		for (const p of ["/ui/api/v1/users/alice/memories", "/ui/api/v1/users/bruno/memories",
			"/ui/api/v1/users/alice/sessions/lisbon-trip/messages", "/ui/api/v1/users/alice/graph"]) {
			out.push(await (await fetch(p)).text());
		}
		out.push(await (await fetch("/ui/api/v1/recall", {method: "POST", headers: {"X-CSRF-Token": s.csrf, "Content-Type": "application/json"},
			body: JSON.stringify({user: "alice", text: "hotel Lisbon"})})).text());
		return s.tenant + "\n" + out.join("\n");
	})()`)
	if !strings.HasPrefix(body, "globex\n") {
		t.Errorf("the session's tenant is not globex: %.100q", body)
	}
	for _, s := range acme {
		if strings.Contains(body, s) {
			t.Errorf("globex's session reads acme's %q through /ui/api/", s)
		}
	}
}

// TestBrowserTokenNeverInURL signs in and checks that the token is in no
// URL the tab visited, not in its storage or readable cookies, and not in
// the server's logs.
func TestBrowserTokenNeverInURL(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	// A failed attempt first: its redirect must not carry the token either.
	wrong := "wrong-token-abcdefghijklmnop-0123"
	b.navigate("/ui/login")
	b.typeInto("#token", wrong)
	b.click("#login-submit")
	b.waitFor("the login error", `new URLSearchParams(location.search).get("failed") === "1"`)
	b.login(browserTokenAcme)
	b.goHash("#/u/alice/memories")
	b.waitFor("memories", `document.querySelector("#memories tr[data-id]")`)
	b.goHash("#/u/alice/recall")
	b.waitFor("recall", `document.getElementById("recall-form")`)

	hist, err := chromedp.Run(b.ctx, func(ctx context.Context, tg *chromedp.Target) (*page.GetNavigationHistoryResult, error) {
		r, err := cdp.Call(ctx, tg, page.GetNavigationHistory, cdp.Empty{})
		return &r, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Entries) < 3 {
		t.Errorf("navigation history has %d entries", len(hist.Entries))
	}
	for _, tok := range []string{browserTokenAcme, wrong} {
		for _, e := range hist.Entries {
			if strings.Contains(e.URL, tok) || strings.Contains(e.UserTypedURL, tok) {
				t.Errorf("history entry %q holds a token", e.URL)
			}
		}
		where := browserJS[string](b, `location.href + "\n" + document.cookie + "\n" + JSON.stringify(Object.entries(localStorage)) + JSON.stringify(Object.entries(sessionStorage)) + "\n" + document.referrer`)
		if strings.Contains(where, tok) {
			t.Errorf("the page's URL, cookies, storage or referrer hold a token: %q", where)
		}
		for name, log := range map[string]string{"API access log": b.apiLog.String(), "inspector log": b.uiLog.String()} {
			if strings.Contains(log, tok) {
				t.Errorf("the %s holds a token", name)
			}
		}
	}
	if !strings.Contains(b.apiLog.String(), "/v1/users") {
		t.Error("the API access log saw none of the page's requests (is the logger wired?)")
	}
	b.noErrors("token")
}

// TestBrowserKeyboard uses the keyboard alone: Tab reaches the memory
// search box and a delete button, Escape closes the dialog without
// deleting, and Enter on a graph node opens the entity.
func TestBrowserKeyboard(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	b.login(browserTokenAcme)
	b.goHash("#/u/alice/memories")
	b.waitFor("memories", `document.querySelector("#memories tr[data-id] button.delete-memory")`)
	b.do("focus the page top", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.focus()`))
	if !b.tabUntil(`el.id === "mem-query"`, 60) {
		b.fatalf("60 Tabs did not reach the memory search box")
	}
	b.do("type a search", chromedp.KeyEvent("hotel"))
	b.key(kb.Enter)
	hotel := b.seed.mem["hotel"]
	b.waitFor("the search result", fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]') && !document.querySelector('#memories tr[data-id=%q]')`, hotel, b.seed.mem["seat"]))
	if !b.tabUntil(`el.matches("button.delete-memory")`, 60) {
		b.fatalf("60 Tabs did not reach a delete button")
	}
	visible := browserJS[bool](b, `(() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle !== "none" && s.outlineWidth !== "0px" || s.boxShadow !== "none"; })()`)
	if !visible {
		t.Error("the focused delete button shows no focus outline")
	}
	target := browserJS[string](b, `document.activeElement.closest("tr[data-id]").dataset.id`)
	b.key(kb.Enter)
	b.waitFor("the dialog", `document.getElementById("confirm").open`)
	b.key(kb.Escape)
	b.waitFor("the dialog to close on Escape", `!document.getElementById("confirm").open`)
	if _, err := b.store.Memory(context.Background(), acmeAlice, target); err != nil {
		t.Errorf("Escape on the dialog deleted the memory: %v", err)
	}

	b.goHash("#/u/alice/graph")
	b.waitFor("the graph", `document.querySelector('#graph g.node[data-entity="Sintra"]')`)
	if !b.tabUntil(`el.matches("#graph g.node")`, 80) {
		b.fatalf("80 Tabs did not reach a graph node")
	}
	name := browserJS[string](b, `document.activeElement.getAttribute("data-entity")`)
	b.key(kb.Enter)
	b.waitFor("the entity opened with Enter", fmt.Sprintf(`document.getElementById("entity-name") && document.getElementById("entity-name").textContent.trim() === %q`, name))
	b.noErrors("keyboard")
}

// TestBrowserScreenshots takes the README's screenshots: each page at
// 1280x800, and the memories at a phone's 390x844. They go to
// docs/inspector/ with ENGRAM_UPDATE_SCREENSHOTS=1, else to a temporary
// directory.
func TestBrowserScreenshots(t *testing.T) {
	skipShortBrowser(t)
	b := newBrowserEnv(t, nil)
	b.do("viewport", chromedp.EmulateViewport(1280, 800))
	b.navigate("/ui/login")
	b.waitFor("login", `document.getElementById("login")`)
	b.screenshot("login")
	b.login(browserTokenAcme)
	b.waitFor("users", `document.querySelectorAll("#users tr[data-user]").length === 2`)
	b.screenshot("users")
	b.checkTables("the users page")
	b.goHash("#/u/alice/sessions")
	b.waitFor("sessions", `document.querySelectorAll("#sessions tr[data-session]").length === 2`)
	b.screenshot("sessions")
	b.checkTables("the sessions page")
	b.goHash("#/u/alice/s/lisbon-trip")
	b.waitFor("messages", `document.querySelectorAll("#messages li.msg").length >= 11`)
	b.typeInto("#budget", "200")
	b.click("#window-go")
	b.waitFor("the window", `document.querySelectorAll("#window-messages li").length > 0`)
	b.do("scroll to top", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	b.screenshot("messages")
	b.goHash("#/u/alice/memories")
	b.waitFor("memories", fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]')`, b.seed.mem["hotel"]))
	b.do("scroll to top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	b.screenshot("memories")
	b.checkTables("the memories page")
	b.goHash("#/u/alice/graph")
	b.waitFor("graph", `document.querySelector('#graph g.node[data-entity="Lisbon"]')`)
	b.click(`#graph g.node[data-entity="Alice"]`)
	b.waitFor("Alice's panel", `document.querySelector("#entity-facts tr[data-fact]")`)
	b.do("scroll to top", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	b.screenshot("graph")
	b.checkTables("the graph page with Alice's facts")
	b.goHash("#/u/alice/recall")
	b.waitFor("recall", `document.getElementById("recall-form")`)
	b.typeInto("#recall-query", b.seed.recallQuery)
	b.submit("#recall-form")
	b.waitFor("the trace", `document.querySelectorAll("#recall-trace tr").length > 1`)
	// Show the end of the context and the start of the trace.
	b.do("scroll to the trace", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur();
		window.scrollTo(0, document.getElementById("recall-trace").getBoundingClientRect().top + window.scrollY - 260)`))
	b.screenshot("recall")
	// The trace fuses three ranked lists (keywords, the graph and its
	// other facts): the width that pushed the last columns off screen.
	rec, err := b.store.Recall(context.Background(), memory.Query{Scope: acmeAlice, Text: b.seed.recallQuery, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.Trace.Lists["graph.other"]; !ok || len(rec.Trace.Lists) < 3 {
		t.Fatalf("the screenshot's recall fuses %v, want three lists with graph.other", rec.Trace.Lists)
	}
	b.checkTables("the recall page")
	if txt := browserJS[string](b, `document.getElementById("recall-trace-wrap").innerText`); strings.Contains(txt, "graph.other") {
		t.Errorf("the trace shows the internal list name graph.other")
	}

	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	b.goHash("#/u/alice/memories")
	b.waitFor("memories", fmt.Sprintf(`document.querySelector('#memories tr[data-id=%q]')`, b.seed.mem["hotel"]))
	b.do("scroll to top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	// At a phone's width the page is one column: the document does not
	// scroll sideways (wide tables scroll inside their own box).
	if w := browserJS[int](b, `document.documentElement.scrollWidth`); w > 390+2 {
		t.Errorf("at 390 px wide the page is %d px wide (it scrolls sideways)", w)
	}
	b.screenshot("memories-phone")
	b.noErrors("screenshots")
}

// browserTableCheck lists, for every table on the page, the cells a
// 1280x800 reader cannot see (their right edge past the window or past the
// visible box of the nearest ancestor that clips or scrolls them) and the
// header cells whose alignment differs from their column's first row.
const browserTableCheck = `(() => {
  const out = [];
  const name = (el) => (el.closest("table").id || "table") + " " + el.tagName.toLowerCase() + " " + JSON.stringify(el.innerText.trim().slice(0, 30));
  const winRight = document.documentElement.clientWidth;
  for (const el of document.querySelectorAll("#view th, #view td")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    let right = winRight;
    for (let p = el.parentElement; p && p !== document.documentElement; p = p.parentElement) {
      if (/auto|scroll|hidden|clip/.test(getComputedStyle(p).overflowX)) {
        right = Math.min(right, p.getBoundingClientRect().left + p.clientLeft + p.clientWidth);
        break;
      }
    }
    if (r.right > right + 1) out.push("clipped: " + name(el) + " ends at " + Math.round(r.right) + " px, visible to " + Math.round(right) + " px");
  }
  for (const t of document.querySelectorAll("#view table")) {
    const head = t.tHead && t.tHead.rows[0];
    const body = Array.from(t.tBodies[0] ? t.tBodies[0].rows : []).find((row) => head && row.cells.length === head.cells.length);
    if (!body) continue;
    for (const th of head.cells) {
      const a = getComputedStyle(th).textAlign, b = getComputedStyle(body.cells[th.cellIndex]).textAlign;
      if (a !== b) out.push("misaligned: " + name(th) + " is " + a + " over " + b + " cells");
    }
  }
  return out;
})()`

// checkTables fails the test for every table cell the page clips at its
// width and every header not aligned with its column.
func (b *browserEnv) checkTables(where string) {
	b.t.Helper()
	for _, p := range browserJS[[]string](b, browserTableCheck) {
		b.t.Errorf("%s: %s", where, p)
	}
}

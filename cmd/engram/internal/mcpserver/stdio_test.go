package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStdioBadLines drives the server over a pair of pipes, as a client
// does over stdin and stdout, with bad lines among good ones: each bad line
// is answered with a JSON-RPC error whose id is null, and the server goes
// on serving. (With the SDK's own IOTransport the first bad line ended the
// connection and engram mcp exited.)
func TestStdioBadLines(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := NewServer(openStore(t), fixed(testScope))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(ctx, NewStdioTransport(inR, outW))
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	type reply struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
	}
	read := func() reply {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no answer: %v (the server ended: %v)", lines.Err(), <-done)
		}
		var r reply
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return r
	}
	wantError := func(line string, code int) {
		t.Helper()
		send(line)
		r := read()
		if r.Error == nil || r.Error.Code != code || r.ID != nil {
			t.Fatalf("%q answered %+v, want error %d with a null id", line, r, code)
		}
	}

	wantError("this is not JSON", -32700)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if r := read(); r.ID != float64(1) || r.Error != nil {
		t.Fatalf("initialize = %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	wantError(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700) // cut short
	wantError(`{"foo": 1}`, -32600)
	wantError(`42`, -32600)
	wantError(`[]`, -32600)
	wantError(`[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`, -32600) // no batches since 2025-06-18
	wantError("\xff\xfe{}", -32700)
	send("")
	send("   ")
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	r := read()
	if r.ID != float64(4) || r.Error != nil || !strings.Contains(string(r.Result), "create_entities") {
		t.Fatalf("tools/list after the bad lines = %+v", r)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_graph","arguments":{}}}`)
	if r := read(); r.ID != float64(5) || r.Error != nil {
		t.Fatalf("read_graph = %+v", r)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Errorf("Run after the client closed = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the server did not end when its input did")
	}
}

// TestStdioLongLine: a line over the limit is answered with a parse error
// and skipped without being held whole, and the next line is served.
func TestStdioLongLine(t *testing.T) {
	var out strings.Builder
	in := strings.NewReader(strings.Repeat("x", 100) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	f := &lineFilter{r: bufio.NewReaderSize(in, 16), out: &out, limit: 64}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Errorf("passed %q", got)
	}
	if !strings.Contains(out.String(), `"code":-32700`) || !strings.Contains(out.String(), "longer than 64 bytes") {
		t.Errorf("answered %q", out.String())
	}
}

// TestStdioBatchesThatEndedTheServer: under a protocol version with
// batches, a batch of two notifications (the SDK keys both by the zero id
// and fails the connection on the repeat) and a batch nested past the
// SDK's 1000-level decoder each ended the server; the filter must answer
// them with -32600 instead of passing them on. Ordinary batches pass.
func TestStdioBatchesThatEndedTheServer(t *testing.T) {
	deep := strings.Repeat("[", 998) + strings.Repeat("]", 998)
	f := &lineFilter{batchesAllowed: true} // as under 2025-03-26
	for _, tc := range []struct {
		line string
		code int
	}{
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, -32600},
		{`[{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":` + deep + `}}]`, -32600},
		{`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":` + deep + `}}`, -32600},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 0},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"[[[[{{{{\"]]"}}]`, 0},
	} {
		if code, msg := f.check([]byte(tc.line)); code != tc.code {
			t.Errorf("check(%.80q) = %d %q, want %d", tc.line, code, msg, tc.code)
		}
	}
}

// TestStdioBatchesAndIDs: the same rule as over HTTP (issue 26). A batch
// is taken only after an initialize that asked for a protocol version with
// batches (2024-11-05 or 2025-03-26), never before one; an id the SDK
// would not echo exactly (it reads numbers as float64 and then int64: 1e30
// came back as -9223372036854775808) is refused with -32600, and the others
// come back as sent.
func TestStdioBatchesAndIDs(t *testing.T) {
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	f := &lineFilter{}
	if code, _ := f.check([]byte(batch)); code != -32600 {
		t.Errorf("a batch before initialize = %d, want -32600", code)
	}
	for _, v := range []struct {
		version string
		code    int
	}{{"2024-11-05", 0}, {"2025-03-26", 0}, {"2025-06-18", -32600}, {"2099-01-01", -32600}} {
		f := &lineFilter{}
		f.check([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v.version + `"}}`))
		if code, msg := f.check([]byte(batch)); code != v.code {
			t.Errorf("a batch after initialize %s = %d %q, want %d", v.version, code, msg, v.code)
		}
	}
	f = &lineFilter{batchesAllowed: true}
	for _, id := range []string{`1e30`, `9007199254740993`, `-9007199254740993`, `1.5`, `-0`, `1E2`, `true`, `{}`, `[]`} {
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`,
			`[{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}]`,
		} {
			if code, msg := f.check([]byte(line)); code != -32600 || !strings.Contains(msg, "id") {
				t.Errorf("check(%s) = %d %q, want -32600 naming the id", line, code, msg)
			}
		}
	}
	for _, id := range []string{`0`, `42`, `-7`, `9007199254740992`, `-9007199254740992`, `"1e30"`, `null`} {
		if code, msg := f.check([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)); code != 0 {
			t.Errorf("id %s = %d %q, want it taken", id, code, msg)
		}
	}
}

// TestStdioAnswersBeforeEOF serves input that ends right after its
// requests, a remember call among them, and requires an answer to every
// request before Run returns (engram mcp then exits). Before, the end of
// the input cancelled the requests still in flight and their answers were
// lost.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"remember","arguments":{"text":"the input ends after this"}}}
`)
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := NewServer(openStore(t), fixed(testScope)).Run(ctx, NewStdioTransport(in, &out)); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("Run = %v", err)
	}
	answered := map[any]bool{}
	for line := range strings.Lines(out.String()) {
		var r struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		answered[r.ID] = r.Result != nil
	}
	for _, id := range []any{float64(1), float64(2), "three"} {
		if !answered[id] {
			t.Errorf("no answer to request %v; the output:\n%s", id, out.String())
		}
	}
}

// TestInflight: wait returns once every request read has been answered,
// cancelled by the client, or the output has failed.
func TestInflight(t *testing.T) {
	// waits reports whether fl.wait returns: a wait that must return gets
	// ten seconds, one that must block 50 ms (a blocked wait stays
	// blocked, so neither depends on the machine's speed).
	waits := func(fl *inflight, want bool) bool {
		done := make(chan struct{})
		go func() { fl.wait(); close(done) }()
		timeout := 50 * time.Millisecond
		if want {
			timeout = 10 * time.Second
		}
		select {
		case <-done:
			return true
		case <-time.After(timeout):
			return false
		}
	}
	fl := newInflight()
	fl.read([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if !waits(fl, true) {
		t.Fatal("wait blocked on a notification")
	}
	fl.read([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"a","method":"tools/list"}]`))
	fl.answered([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`))
	fl.answered([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}}]`))
	if waits(fl, false) {
		t.Fatal("wait returned with request \"a\" unanswered")
	}
	fl.read([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`))
	if !waits(fl, true) {
		t.Fatal("wait blocked on a cancelled request")
	}
	// The SDK does not answer a request whose id is in flight already.
	fl.read([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	fl.read([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	fl.answered([]byte(`{"jsonrpc":"2.0","id":5,"result":{}}`))
	if !waits(fl, true) {
		t.Fatal("wait blocked on a second request with the id of one in flight")
	}
	fl.read([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	fl.fail()
	if !waits(fl, true) {
		t.Fatal("wait blocked after the output failed")
	}
}

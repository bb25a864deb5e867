package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

func TestInspect(t *testing.T) {
	dir := seedStore(t)
	out := mustRun(t, "inspect", "--dir", dir)
	for _, want := range []string{
		"Store " + dir + ": ", "on disk", "not encrypted",
		"TENANT  USERS  SESSIONS  MESSAGES  MEMORIES  VERSIONS  ENTITIES  FACTS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]string{ // tenant: users sessions messages memories versions entities facts
		"acme":   "2 3 7 4 1 5 2",
		"globex": "1 1 1 0 0 0 0",
		"total":  "3 4 8 4 1 5 2",
	}
	for id, want := range rows {
		re := regexp.MustCompile(`(?m)^\s*` + id + `((?:\s+\d+){7})\s`)
		m := re.FindStringSubmatch(out)
		if m == nil || strings.Join(strings.Fields(m[1]), " ") != want {
			t.Errorf("row %s = %v, want %s:\n%s", id, m, want, out)
		}
	}

	out = mustRun(t, "inspect", "--dir", dir, "--tenant", "acme")
	for id, want := range map[string]string{ // sessions messages memories versions entities facts
		"alice":    "2 6 2 1 2 1",
		"bob":      "1 1 1 0 1 0",
		"(shared)": "0 0 1 0 2 1",
		"total":    "3 7 4 1 5 2",
	} {
		re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(id) + `((?:\s+\d+){6})\s`)
		m := re.FindStringSubmatch(out)
		if m == nil || strings.Join(strings.Fields(m[1]), " ") != want {
			t.Errorf("row %s = %v, want %s:\n%s", id, m, want, out)
		}
	}

	out = mustRun(t, "inspect", "--dir", dir, "--tenant", "acme", "--user", "alice")
	for _, want := range []string{"User alice of tenant acme:", "SESSION  CREATED", "billing ", "renewal "} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of alice lacks %q:\n%s", want, out)
		}
	}

	out = mustRun(t, "inspect", "--dir", dir, "--tenant", "acme", "--user", "alice", "--json")
	var rep struct {
		DiskBytes int64 `json:"disk_bytes"`
		User      struct {
			ID       string
			Messages int
			Bytes    int64
		}
		Sessions []struct {
			ID       string
			Messages int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	if rep.DiskBytes == 0 || rep.User.ID != "alice" || rep.User.Messages != 6 || rep.User.Bytes == 0 ||
		len(rep.Sessions) != 2 || rep.Sessions[1].ID != "renewal" || rep.Sessions[1].Messages != 5 {
		t.Errorf("inspect --json: %+v", rep)
	}
}

func TestInspectErrors(t *testing.T) {
	dir := seedStore(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no dir", []string{"inspect"}, []string{`"dir" not set`}},
		{"no store", []string{"inspect", "--dir", t.TempDir()}, []string{"no store in"}},
		{"user without tenant", []string{"inspect", "--dir", dir, "--user", "alice"}, []string{"--user needs --tenant"}},
		{"bad tenant", []string{"inspect", "--dir", dir, "--tenant", "a\x00b"}, []string{"invalid scope"}},
		{"arguments", []string{"inspect", "--dir", dir, "extra"}, []string{"unknown command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.want, tt.args...) })
	}
}

// refusingExtractor fails every job with a refusal, which parks it at once.
type refusingExtractor struct{}

func (refusingExtractor) Extract(context.Context, *memory.ExtractInput) (*memory.Extraction, error) {
	return nil, memory.ErrExtractionRefused
}

// parkedStore builds a store in a new directory whose one user message
// was parked by a refusing extractor, and returns the directory and the
// message's id.
func parkedStore(t *testing.T) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	ctx := context.Background()
	st, err := memory.Open(dir, &memory.Options{Extractor: refusingExtractor{}, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	scope := memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"}
	sess := st.Session(scope)
	if err := sess.Append(ctx, memory.Message{Role: memory.RoleUser, Content: "My renewal owner is Dana."}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err := sess.Messages(ctx, memory.MessagesOptions{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("messages = %v, %v", msgs, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, msgs[0].ID
}

func TestInspectExtractionQueue(t *testing.T) {
	dir, id := parkedStore(t)
	out := mustRun(t, "inspect", "--dir", dir)
	for _, want := range []string{
		"Extraction queue (whole store): 0 pending (0 retrying), 1 parked",
		"PARKED SESSION", "acme/alice/renewal", id, "the model refused", "engram extract retry",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}

	var rep struct {
		Extraction struct {
			Pending, Retrying int
			ParkedTotal       int `json:"parked_total"`
			Parked            []struct {
				Tenant, User, Session string
				MessageID             string `json:"message_id"`
				Attempts              int
				Error                 string
			}
		}
	}
	for _, args := range [][]string{{}, {"--tenant", "acme", "--user", "alice"}} {
		out = mustRun(t, append([]string{"inspect", "--dir", dir, "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("inspect --json: %v\n%s", err, out)
		}
		q := rep.Extraction
		if q.Pending != 0 || q.ParkedTotal != 1 || len(q.Parked) != 1 {
			t.Fatalf("inspect --json %v: extraction %+v", args, q)
		}
		p := q.Parked[0]
		if p.Tenant != "acme" || p.User != "alice" || p.Session != "renewal" || p.MessageID != id ||
			p.Attempts < 1 || !strings.Contains(p.Error, "refused") {
			t.Errorf("inspect --json %v: parked job %+v", args, p)
		}
	}

	// Another tenant's view lists none of them.
	out = mustRun(t, "inspect", "--dir", dir, "--tenant", "globex", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Extraction.ParkedTotal != 1 || len(rep.Extraction.Parked) != 0 {
		t.Errorf("inspect --tenant globex: extraction %+v", rep.Extraction)
	}

	// A store with nothing parked lists no jobs.
	out = mustRun(t, "inspect", "--dir", seedStore(t))
	if !strings.Contains(out, "(0 retrying), 0 parked") || strings.Contains(out, "PARKED") {
		t.Errorf("inspect of a store with an empty queue:\n%s", out)
	}
}

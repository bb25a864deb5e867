package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
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

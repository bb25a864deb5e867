package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/engramdb/engram/memory"
)

// FuzzRecallPartition: whatever the body, finding a recall's partition
// leaves the body byte for byte for the handler, and names the partition
// of the body's user in the token's tenant, or none.
func FuzzRecallPartition(f *testing.F) {
	for _, s := range []string{`{"user":"alice","text":"x"}`, `{"user":""}`, `{"user":"../x"}`, `not json`, ``, `{"user":"a\u0000b"}`} {
		f.Add([]byte(s))
	}
	h := &Handler{}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/recall", bytes.NewReader(body))
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, "acme"))
		part, ok := h.recallPartition(r)
		got, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("body after = %q, %v; want %q", got, err, body)
		}
		if ok && !bytes.HasPrefix(part, memory.Partition(memory.Scope{Tenant: "acme"})) {
			t.Fatalf("partition %q is not under the tenant's", part)
		}
	})
}

// TestUserPartition: the {user} segment and the token's tenant name the
// partition; an invalid user names none (the route refuses it here).
func TestUserPartition(t *testing.T) {
	for _, tc := range []struct {
		user string
		ok   bool
	}{{"alice", true}, {"", false}, {"..", false}} {
		r := httptest.NewRequest("GET", "/v1/users/x/memories", nil)
		r.SetPathValue("user", tc.user)
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, "acme"))
		part, ok := userPartition(r)
		if ok != tc.ok || ok && !bytes.Equal(part, memory.Partition(memory.Scope{Tenant: "acme", User: tc.user})) {
			t.Errorf("userPartition(%q) = %q, %v", tc.user, part, ok)
		}
	}
}

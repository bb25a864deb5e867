package memory

import (
	"context"
	"testing"
)

// TestBatchFactAlreadyStored pins what the README says of Write's facts: a
// new fact's Source is the message the batch appended before it; a fact
// stored before comes back as that earlier fact, with its own Source.
func TestBatchFactAlreadyStored(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, &Options{Extraction: ExtractOff})
	scope := Scope{Tenant: "t", User: "alice", Session: "s"}
	write := func(text string) BatchResult {
		var b Batch
		b.Append(scope, Message{Role: RoleUser, Content: text})
		b.Relate(scope, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Eve"})
		res, err := s.Write(ctx, &b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := write("Eve owns my renewal now.")
	if first.Facts[0].Source != first.MessageIDs[0] {
		t.Fatalf("new fact's Source %q, want the message %q", first.Facts[0].Source, first.MessageIDs[0])
	}
	again := write("Still Eve for the renewal.")
	if again.Facts[0].Source != first.MessageIDs[0] || again.Facts[0].ID != first.Facts[0].ID {
		t.Fatalf("the fact again: %+v; want the earlier fact (Source %q)", again.Facts[0], first.MessageIDs[0])
	}
}

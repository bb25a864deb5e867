package memory

import (
	"errors"
	"strings"
	"testing"
)

// TestTooLargeBeforeTokenizing: a message over MaxMessageBytes is refused
// before any token is counted (issue 12, defect 4: a 300 KiB message took
// 81 s to refuse), by Append, Batch and ImportMessages alike.
func TestTooLargeBeforeTokenizing(t *testing.T) {
	st := openMem(t, &Options{MaxMessageBytes: 64 << 10})
	big := strings.Repeat("a", 64<<10+1)
	calls := map[string]func() error{
		"Append": func() error { return st.Session(testScope).Append(bg, user("hi"), user(big)) },
		"Batch": func() error {
			var b Batch
			b.Append(testScope, user(big))
			_, err := st.Write(bg, &b)
			return err
		},
		"ImportMessages": func() error {
			_, err := st.ImportMessages(bg, testScope, []Message{user(big)})
			return err
		},
		"tool arguments": func() error {
			m := call("c1")
			m.ToolCalls[0].Arguments = []byte(`"` + big + `"`)
			return st.Session(testScope).Append(bg, m)
		},
	}
	for name, f := range calls {
		t.Run(name, func(t *testing.T) {
			before := tokenizedBytes.Load()
			if err := f(); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if n := tokenizedBytes.Load() - before; n > 0 {
				t.Errorf("%d bytes tokenized before the size check", n)
			}
		})
	}
	if msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{}); err != nil || len(msgs) != 0 {
		t.Fatalf("Messages = %d, %v; want nothing written", len(msgs), err)
	}
}

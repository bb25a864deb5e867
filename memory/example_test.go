package memory_test

import (
	"context"
	"fmt"
	"log"

	"github.com/engramdb/engram/memory"
)

// The README's quick start: TestReadmeQuickStart checks the README holds
// this function's body word for word.
func Example() {
	ctx := context.Background()
	store, err := memory.Open("", nil) // "" keeps the store in memory; pass a directory to persist it
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	sess := store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"})
	err = sess.Append(ctx,
		memory.Message{Role: memory.RoleSystem, Content: "You are a support agent."},
		memory.Message{Role: memory.RoleUser, Content: "My name is Alice. My renewal owner is Dana."},
		memory.Message{Role: memory.RoleAssistant, Content: "Thanks Alice, noted."},
		memory.Message{Role: memory.RoleUser, Content: "Who owns my renewal?"},
	)
	if err != nil {
		log.Fatal(err)
	}

	// The window for the next model call: system messages are always kept,
	// the oldest turns are trimmed first.
	window, err := sess.Window(ctx, memory.WindowOptions{MaxMessages: 3, MaxTokens: 2000})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range window {
		fmt.Printf("%-9s %2d tokens  %s\n", m.Role, m.Tokens, m.Content)
	}
	// Output:
	// system    10 tokens  You are a support agent.
	// assistant  9 tokens  Thanks Alice, noted.
	// user       9 tokens  Who owns my renewal?
}

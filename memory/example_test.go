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

// The README's Recall section: TestReadmeRecall checks the README holds
// this function's body word for word.
func ExampleStore_Recall() {
	ctx := context.Background()
	store, err := memory.Open("", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// Monday: Alice names her renewal owner and how to reach her. The
	// store forms memories and graph facts from what she says.
	monday := memory.Scope{Tenant: "acme", User: "alice", Session: "monday"}
	err = store.Session(monday).Append(ctx,
		memory.Message{Role: memory.RoleUser, Content: "My renewal owner is Dana. Please email me, no phone calls."},
		memory.Message{Role: memory.RoleAssistant, Content: "Noted: Dana owns your renewal, and we will email you."},
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Flush(ctx); err != nil { // wait for memory formation
		log.Fatal(err)
	}

	// Friday, a new session: Recall brings Monday back.
	rec, err := store.Recall(ctx, memory.Query{
		Scope: memory.Scope{Tenant: "acme", User: "alice", Session: "friday"},
		Text:  "Who owns my renewal, and should we phone or email?",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range rec.Items {
		fmt.Printf("%-8s  %s\n", it.Source, it.Text)
	}
	chat := rec.ChatMessages() // a dated system preamble holding the items, then Friday's window
	fmt.Println(len(chat), chat[0].Role)
	// Output:
	// graph     alice —renewal owner→ Dana
	// episodes  Noted: Dana owns your renewal, and we will email you.
	// episodes  My renewal owner is Dana. Please email me, no phone calls.
	// memories  alice asks to email alice, no phone calls
	// 1 system
}

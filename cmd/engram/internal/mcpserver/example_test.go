package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
	"github.com/engramdb/engram/memory"
)

// A server over an in-memory store, and a client on the SDK's in-memory
// transport; engram mcp serves the same server on stdio.
func ExampleNewServer() {
	ctx := context.Background()
	store, err := memory.Open("", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	scope := memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"}
	server := mcpserver.NewServer(store, func(context.Context) (memory.Scope, error) { return scope, nil })

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, c := range []mcp.CallToolParams{
		{Name: "create_entities", Arguments: map[string]any{"entities": []map[string]any{
			{"name": "Alice", "entityType": "person", "observations": []string{"account 3942"}},
			{"name": "Dana", "entityType": "person", "observations": []string{}},
		}}},
		{Name: "create_relations", Arguments: map[string]any{"relations": []map[string]any{
			{"from": "Alice", "to": "Dana", "relationType": "renewal owner"},
		}}},
		{Name: "open_nodes", Arguments: map[string]any{"names": []string{"alice"}}},
	} {
		res, err := cs.CallTool(ctx, &c)
		if err != nil {
			log.Fatal(err)
		}
		if c.Name == "open_nodes" {
			fmt.Println(res.Content[0].(*mcp.TextContent).Text)
		}
	}
	// Output:
	// {
	//   "entities": [
	//     {
	//       "name": "Alice",
	//       "entityType": "person",
	//       "observations": [
	//         "account 3942"
	//       ]
	//     }
	//   ],
	//   "relations": [
	//     {
	//       "from": "Alice",
	//       "to": "Dana",
	//       "relationType": "renewal owner"
	//     }
	//   ]
	// }
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

type recallOptions struct {
	store       storeFlags
	maxTokens   int
	maxMessages int
	topK        int
	hops        int
	sources     []string
	trace       bool
	json        bool
}

func newRecallCmd() *cobra.Command {
	var o recallOptions
	cmd := &cobra.Command{
		Use:   "recall --dir D [--tenant T] --user U [--session S] TEXT...",
		Short: "Print the context Recall assembles for a query, and optionally its trace",
		Long: `recall runs the hybrid Recall a model call would get for TEXT: the session's
window and rolling summary (with --session), then the user's memories,
earlier messages (episodes) and knowledge-graph facts that match, fused and
fitted to the token budget. It prints the result as chat messages, each under
its role; --trace adds a table of every candidate with its rank in each list,
its fused score and why it was kept or dropped; --json prints the messages,
the recalled items and the trace as JSON, as POST /v1/recall writes them.

Recall also folds messages that left a session's window into its rolling
summary, so it may write to the store. It never extracts: the store is
opened with extraction off, and what is queued stays queued.

--tenant may be left out when the store holds one tenant, as engram ui does.`,
		Example: `  engram recall --dir ./data --tenant acme --user alice "Who owns my renewal?"
  engram recall --dir ./data --tenant acme --user alice --session renewal \
      --sources memories,episodes,graph --top-k 5 --trace "Where do my invoices go?"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.store.open.explain(runRecall(cmd, strings.Join(args, " "), o))
		},
	}
	o.store.register(cmd, flagOptional, flagRequired, flagOptional)
	cmd.Flag("tenant").Usage = "the tenant (default: the store's only tenant)"
	o.store.registerEmbedder(cmd)
	f := cmd.Flags()
	f.IntVar(&o.maxTokens, "max-tokens", memory.DefaultRecallTokens, "token budget of the whole context")
	f.IntVar(&o.maxMessages, "max-messages", memory.DefaultRecallMessages, "message budget of the session's window")
	f.IntVar(&o.topK, "top-k", memory.DefaultTopK, "recalled items (memories, episodes and facts) at most")
	f.IntVar(&o.hops, "hops", memory.DefaultHops, "graph distance from the entities the text names")
	f.StringSliceVar(&o.sources, "sources", nil,
		"what to recall from: memories, shared (the tenant's shared memories), episodes, graph (comma-separated; default: Recall's, memories, episodes and graph)")
	f.BoolVar(&o.trace, "trace", false, "print the trace of every candidate as a table")
	f.BoolVar(&o.json, "json", false, "print the messages, the recalled items and the trace as JSON")
	return cmd
}

// parseSources reads --sources.
func parseSources(names []string) ([]memory.Source, error) {
	known := memory.Sources()
	var out []memory.Source
	for _, n := range names {
		s := memory.Source(strings.TrimSpace(n))
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("--sources: unknown source %q (want memories, shared, episodes or graph)", n)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--sources: name at least one of memories, shared, episodes, graph")
	}
	return out, nil
}

func runRecall(cmd *cobra.Command, text string, o recallOptions) (err error) {
	pick := o.store.tenant == ""
	if pick {
		// Checked with a stand-in, before the store is opened; the
		// store's own tenant replaces it below.
		o.store.tenant = "t"
	}
	if err := o.store.checkScope(); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("recall: the text is empty")
	}
	var sources []memory.Source // nil: Recall's defaults
	if cmd.Flags().Changed("sources") {
		if sources, err = parseSources(o.sources); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"--max-tokens", o.maxTokens}, {"--max-messages", o.maxMessages}, {"--top-k", o.topK}, {"--hops", o.hops}} {
		if b.v < 1 {
			return fmt.Errorf("%s %d: want at least 1", b.name, b.v)
		}
	}
	st, err := o.store.openStore(existingStore)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if pick {
		if o.store.tenant, err = soleTenant(cmd.Context(), st); err != nil {
			return fmt.Errorf("recall: %w", err)
		}
		if o.store.tenant == "" {
			return fmt.Errorf("recall: the store in %s holds no tenant yet", o.store.where())
		}
	}

	rec, err := st.Recall(cmd.Context(), memory.Query{
		Scope:       o.store.scope(),
		Text:        text,
		MaxTokens:   o.maxTokens,
		MaxMessages: o.maxMessages,
		TopK:        o.topK,
		Hops:        o.hops,
		Sources:     sources,
		Trace:       o.trace || o.json,
	})
	if err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	w := cmd.OutOrStdout()
	if o.json {
		return writeRecallJSON(w, rec)
	}
	msgs := rec.ChatMessages()
	fmt.Fprintf(w, "Context for %q: %s, %d of %s\n\n", text, plural.Count(len(msgs), "message"), rec.Trace.TokensUsed, plural.Count(rec.Trace.Budget, "token"))
	if len(msgs) == 0 {
		fmt.Fprintln(w, "(nothing recalled: no window, no summary, no matching memories, episodes or facts)")
	}
	for _, m := range msgs {
		head := "[" + string(m.Role) + "]"
		if m.Name != "" {
			head = "[" + string(m.Role) + " " + m.Name + "]"
		}
		body := describe(m)
		if m.Role == memory.RoleSystem || m.Role == memory.RoleUser {
			body = m.Content
		}
		fmt.Fprintf(w, "%s\n%s\n\n", head, body)
	}
	if !o.trace {
		return nil
	}
	entities := "none"
	if len(rec.Trace.Entities) > 0 {
		entities = strings.Join(rec.Trace.Entities, ", ")
	}
	fmt.Fprintf(w, "Trace (entities named: %s; %s; %v):\n", entities, plural.Count(len(rec.Trace.Candidates), "candidate"), rec.Trace.Took.Round(10*time.Microsecond))
	return writeTrace(w, &rec.Trace, len(rec.Trace.Candidates))
}

// writeRecallJSON prints the chat messages, the recalled items and the
// trace, in the shape of the MCP recall tool's result and of POST
// /v1/recall (which adds the summary and the preamble).
func writeRecallJSON(w io.Writer, rec *memory.Recollection) error {
	out := struct {
		Messages []memory.Message `json:"messages"`
		wire.Recall
	}{rec.ChatMessages(), wire.NewRecall(rec)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/memory"
)

// conversationFlags are the flags bench locomo and bench longmemeval
// share: the data file, the modes, how the fresh stores are configured,
// and the JSON output.
type conversationFlags struct {
	data         string
	modes        string
	jsonPath     string
	vectorWeight float64
	extract      string
	embed        openFlags
}

// register adds the flags to f; dataHelp and jsonHelp describe --data and
// --json.
func (o *conversationFlags) register(f *pflag.FlagSet, dataHelp, jsonHelp string) {
	f.StringVar(&o.data, "data", "", dataHelp)
	f.StringVar(&o.modes, "mode", "default", "comma-separated modes: "+strings.Join(bench.ConversationModes, ", ")+", or all")
	f.Float64Var(&o.vectorWeight, "vector-weight", 0, "memory.Options.VectorWeight: the weight of vector search in hybrid fusion (0: the default, none with the offline embedder)")
	f.StringVar(&o.extract, "extract", "async", "extraction while ingesting: async (the default pipeline, drained before the questions), sync or off (messages only)")
	o.embed.registerEmbedder(f)
	f.StringVar(&o.jsonPath, "json", "", jsonHelp)
}

// setup checks the flags and returns the modes they name and the factory
// of the fresh in-memory stores the questions are asked of. Errors are
// prefixed with cmd ("bench locomo").
func (o *conversationFlags) setup(cmd string) ([]string, func() (*memory.Store, error), error) {
	if o.data == "" {
		return nil, nil, fmt.Errorf("%s: --data FILE is required", cmd)
	}
	modes, err := parseConversationModes(o.modes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	mode, err := parseExtractMode(o.extract)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	synonyms, err := o.embed.synonymsOn()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	// One embedder for every store: a static model is loaded once.
	embedder, err := o.embed.newEmbedder()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	open := func() (*memory.Store, error) {
		return memory.Open("", &memory.Options{VectorWeight: o.vectorWeight, SweepInterval: -1, Extraction: mode, Embedder: embedder, Synonyms: synonyms})
	}
	return modes, open, nil
}

// parseConversationModes reads a --mode list: names of
// bench.ConversationModes, or "all" for every one.
func parseConversationModes(s string) ([]string, error) {
	var modes []string
	for _, m := range strings.Split(s, ",") {
		switch m = strings.TrimSpace(m); {
		case m == "all":
			modes = append(modes, bench.ConversationModes...)
		case slices.Contains(bench.ConversationModes, m):
			modes = append(modes, m)
		case m != "":
			return nil, fmt.Errorf("unknown --mode %q (have %s, all)", m, strings.Join(bench.ConversationModes, ", "))
		}
	}
	if len(modes) == 0 {
		return nil, errors.New("--mode names no mode")
	}
	return modes, nil
}

// report prints the table (what table writes) to stdout and the rows to
// the --json file, if one was given. Errors are prefixed with cmd.
func (o *conversationFlags) report(cmd string, stdout io.Writer, table func(io.Writer) error, rows any) error {
	if err := table(stdout); err != nil {
		return err
	}
	if o.jsonPath == "" {
		return nil
	}
	if err := writeJSONFile(o.jsonPath, rows); err != nil {
		return fmt.Errorf("%s: --json: %w", cmd, err)
	}
	return nil
}

// writeJSONFile writes v to path as indented JSON, atomically.
func writeJSONFile(path string, v any) error {
	return fileio.WriteAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

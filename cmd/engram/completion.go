package main

import (
	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
)

// flagValue is one row of the table of flags that take one of a few
// values: the values shell completion offers for flag on every command
// that has it, or only on the command named cmd when it is not "".
type flagValue struct {
	cmd, flag string
	values    []string
}

// flagValues is the one table of fixed flag values. A flag added to a
// command is completed with its row's values without a line of its own;
// registerCompletions walks the command tree.
func flagValues() []flagValue {
	var sources []string
	for _, s := range memory.Sources() {
		sources = append(sources, string(s))
	}
	return []flagValue{
		{flag: "embedder", values: []string{embedderHashing, embedderStatic, embedderOllama, embedderOpenAI}},
		{flag: "synonyms", values: []string{"on", "off"}},
		{flag: "extract", values: []string{memory.ExtractAsync.String(), memory.ExtractSync.String(), memory.ExtractOff.String()}},
		{flag: "durability", values: []string{"sync", "async"}},
		{flag: "metrics", values: []string{"public", "token", "off"}},
		{flag: "log-format", values: []string{"text", "json"}},
		{flag: "sources", values: sources},
		{cmd: "import", flag: "format", values: []string{"jsonl", "nquads"}},
		{cmd: "export", flag: "format", values: []string{"jsonl", "nquads", "dir"}},
	}
}

// registerCompletions registers the completion of every flag of
// flagValues on cmd and its subcommands that have it.
func registerCompletions(cmd *cobra.Command) {
	for _, v := range flagValues() {
		if v.cmd != "" && v.cmd != cmd.Name() {
			continue
		}
		if cmd.Flags().Lookup(v.flag) == nil {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(v.flag, cobra.FixedCompletions(v.values, cobra.ShellCompDirectiveNoFileComp))
	}
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}

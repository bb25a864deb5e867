package main

import "github.com/spf13/cobra"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "engram",
		Short: "An embedded memory engine for AI agents",
		Long: `Engram keeps an agent's memory in one local directory: conversations with
token-budgeted windows and rolling summaries, memories recalled by meaning
and keyword, a temporal knowledge graph, and one hybrid recall over all of
them. No service, no network unless you configure one.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// engram --version prints the line engram version prints.
		Version: versionString(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newDemoCmd(), newVersionCmd(), newBenchCmd(), newServeCmd(),
		newImportCmd(), newExportCmd(), newRecallCmd(), newInspectCmd(), newBackupCmd(), newRestoreCmd(), newMCPCmd(),
		newCompactCmd(), newExtractCmd(), newUICmd(), newModelCmd())
	registerCompletions(root)
	return root
}

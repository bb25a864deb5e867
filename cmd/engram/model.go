package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/embed"
)

func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Pull Model2Vec models from Hugging Face for --embedder static, and list them",
		Long: `model pulls a Model2Vec static-embedding model from the Hugging Face Hub,
verified, into the models folder, where --embedder static --model NAME finds
it by name; and lists the models there. Nothing else in Engram downloads
anything: without engram model pull, no model is fetched.

The models folder is $` + embed.ModelsDirEnv + ` when set, else engram/models in
the user's cache folder (~/.cache on Linux, ~/Library/Caches on macOS,
%LocalAppData% on Windows).`,
		Example: `  engram model pull potion-base-8M
  engram model list
  engram recall --dir ./data --user alice --embedder static --model potion-base-8M "car"`,
	}
	cmd.AddCommand(newModelPullCmd(), newModelListCmd())
	return cmd
}

func newModelPullCmd() *cobra.Command {
	var endpoint string
	cmd := &cobra.Command{
		Use:   "pull NAME",
		Short: "Download a Model2Vec model from Hugging Face, verified, at a pinned revision",
		Long: `pull downloads a Model2Vec model's config.json, tokenizer.json and
model.safetensors from the Hugging Face Hub into the models folder and checks
each file's size and checksum before it is used.

NAME is one of the models Engram knows, each pinned to a commit of its
minishlab repository:

  potion-base-8M            English, 256 dimensions, 30 MB; its files'
                            SHA-256 are pinned in Engram as published
  potion-base-32M           English, 512 dimensions, 130 MB
  potion-retrieval-32M      English, tuned for retrieval, 130 MB
  potion-multilingual-128M  101 languages, 256 dimensions, 512 MB

or any Hugging Face repository org/name of a Model2Vec model, at @REVISION (a
commit, branch or tag; default main). A branch or tag is resolved to its
commit. Each file is checked against the SHA-256 the Hub reports for a file
stored with LFS, or the git blob id it reports for another, and against the
pinned checksums. What was pulled (repository, revision, commit, each file's
size and SHA-256) is recorded in engram-model.lock in the model's folder: a
later pull of the same commit fails if the Hub then reports other files. A
pull of a moved branch replaces the model once the new files have all
verified; until then the old one stays usable.

An interrupted download is kept (a .partial file) and the next pull resumes
it with an HTTP Range request. A file that fails its checksum is deleted and
the pull fails. Progress goes to standard error.

The Hub is $HF_ENDPOINT when set (as for Hugging Face's own tools), else
https://huggingface.co; --endpoint overrides both. $HF_TOKEN, when set, is
sent as a bearer token (gated or private models).`,
		Example: `  engram model pull potion-base-8M
  engram model pull minishlab/potion-base-32M@main
  ENGRAM_MODEL_DIR=./models engram model pull potion-retrieval-32M
  engram model pull --endpoint https://hf-mirror.example potion-base-8M`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelPull(cmd, args[0], endpoint)
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the Hub's base URL (default: $HF_ENDPOINT, else https://huggingface.co)")
	return cmd
}

func runModelPull(cmd *cobra.Command, name, endpoint string) error {
	pr := &pullPrinter{w: cmd.ErrOrStderr()}
	m, err := embed.Pull(cmd.Context(), name, &embed.PullOptions{Endpoint: endpoint, Progress: pr.report})
	if err != nil {
		return fmt.Errorf("model pull: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "pulled %s (%s, %s) into %s\nuse it with: --embedder static --model %s\n",
		m.Name, modelSource(m), bytesText(m.Size), m.Dir, m.Name)
	return nil
}

// pullPrinter prints a pull's progress: a line when a file starts, at
// every tenth of it, and when it is done.
type pullPrinter struct {
	w     io.Writer
	file  string
	tenth int64
}

func (p *pullPrinter) report(pr embed.PullProgress) {
	if pr.File != p.file {
		p.file, p.tenth = pr.File, -1
		switch {
		case pr.Resumed == pr.Total:
			fmt.Fprintf(p.w, "%s: %s, in place\n", pr.File, bytesText(pr.Total))
			return
		case pr.Resumed > 0:
			fmt.Fprintf(p.w, "%s: resuming at %s of %s\n", pr.File, bytesText(pr.Resumed), bytesText(pr.Total))
		default:
			fmt.Fprintf(p.w, "%s: downloading %s\n", pr.File, bytesText(pr.Total))
		}
	}
	if pr.Total <= 0 {
		return
	}
	if t := pr.Done * 10 / pr.Total; t > p.tenth && pr.Done > pr.Resumed {
		p.tenth = t
		fmt.Fprintf(p.w, "%s: %s of %s (%d%%)\n", pr.File, bytesText(pr.Done), bytesText(pr.Total), pr.Done*100/pr.Total)
	}
}

// modelSource is "repo@revision", with the commit when the revision is a
// branch or tag.
func modelSource(m *embed.ModelInfo) string {
	switch {
	case m.Repo == "":
		return "interrupted"
	case m.Revision == m.Commit:
		return m.Repo + "@" + m.Commit
	}
	return m.Repo + "@" + m.Revision + " (" + m.Commit + ")"
}

func newModelListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the models pulled into the models folder",
		Long: `list shows the models in the models folder ($` + embed.ModelsDirEnv + `, else
engram/models in the user's cache folder): each one's name (what --model
takes), repository and revision (with the commit a branch was resolved to),
size on disk and folder. A model whose pull did not complete is marked
incomplete: run engram model pull NAME again to finish it.`,
		Example: `  engram model list`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runModelList(cmd.OutOrStdout())
		},
	}
}

func runModelList(w io.Writer) error {
	root, err := embed.ModelsDir()
	if err != nil {
		return fmt.Errorf("model list: %w", err)
	}
	models, err := embed.ListModels(root)
	if err != nil {
		return fmt.Errorf("model list: %w", err)
	}
	if len(models) == 0 {
		fmt.Fprintf(w, "no models in %s (engram model pull potion-base-8M)\n", root)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSIZE\tPATH")
	for i := range models {
		m := &models[i]
		name := m.Name
		if !m.Complete {
			name += " (incomplete)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, modelSource(m), bytesText(m.Size), m.Dir)
	}
	return tw.Flush()
}

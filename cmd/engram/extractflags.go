package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/memory"
)

// extractFlags configure memory formation in the long-running commands that
// take what users say (serve and mcp): when appended messages are
// extracted, whether tool results are, and by which extractor. The other
// commands that open a store (inspect, export, recall, ...) open it with
// extraction off, so that reading or administering a store never runs an
// extractor as a side effect; its queue waits for the next serve or mcp.
type extractFlags struct {
	mode      string
	tools     bool
	model     string
	baseURL   string
	apiKeyEnv string
}

// register adds --extract, --extract-tools, --extract-model,
// --extract-base-url and --extract-api-key-env.
func (f *extractFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "extract", "async",
		"when appended messages become memories, entities and facts: async (in the background; Append does not wait), sync (before Append returns) or off")
	fs.BoolVar(&f.tools, "extract-tools", false, "extract from tool results too (by default only user and assistant messages)")
	fs.StringVar(&f.model, "extract-model", "",
		"extract with this chat model over an OpenAI-compatible API instead of the offline rule extractor (needs --extract-base-url)")
	fs.StringVar(&f.baseURL, "extract-base-url", "",
		"the extraction model's API root: https://api.openai.com/v1, Ollama's http://localhost:11434/v1, ...")
	fs.StringVar(&f.apiKeyEnv, "extract-api-key-env", apiKeyEnv,
		"the environment variable holding the extraction API key, if any (a key is never a flag: flags show in the process list)")
}

// parseExtractMode reads an --extract value; "" means async, the default.
func parseExtractMode(s string) (memory.ExtractionMode, error) {
	if s == "" {
		return memory.ExtractAsync, nil
	}
	for _, m := range []memory.ExtractionMode{memory.ExtractAsync, memory.ExtractSync, memory.ExtractOff} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("--extract %q is not async, sync or off", s)
}

// apply sets the options the flags name.
func (f *extractFlags) apply(o *memory.Options) error {
	mode, err := parseExtractMode(f.mode)
	if err != nil {
		return err
	}
	o.Extraction = mode
	o.ExtractToolResults = f.tools
	if f.model == "" && f.baseURL == "" {
		return nil // the offline default
	}
	if f.model == "" || f.baseURL == "" {
		return errors.New("--extract-model and --extract-base-url go together (e.g. --extract-model llama3.2 --extract-base-url http://localhost:11434/v1)")
	}
	var key string
	if f.apiKeyEnv != "" {
		key = os.Getenv(f.apiKeyEnv)
	}
	x, err := memory.NewOpenAIExtractor(&memory.OpenAIExtractorOptions{BaseURL: f.baseURL, Model: f.model, APIKey: key})
	if err != nil {
		return fmt.Errorf("--extract-model: %w", err)
	}
	o.Extractor = x
	return nil
}

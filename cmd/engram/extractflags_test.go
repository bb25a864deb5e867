package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/memory"
)

func TestExtractFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		mode    memory.ExtractionMode
		tools   bool
		model   bool
		wantErr string
	}{
		{"default", nil, memory.ExtractAsync, false, false, ""},
		{"sync with tools", []string{"--extract", "sync", "--extract-tools"}, memory.ExtractSync, true, false, ""},
		{"off", []string{"--extract", "off"}, memory.ExtractOff, false, false, ""},
		{"model", []string{"--extract-model", "llama3.2", "--extract-base-url", "http://localhost:11434/v1"}, memory.ExtractAsync, false, true, ""},
		{"unknown mode", []string{"--extract", "later"}, 0, false, false, `--extract "later" is not async, sync or off`},
		{"model alone", []string{"--extract-model", "llama3.2"}, 0, false, false, "go together"},
		{"base URL alone", []string{"--extract-base-url", "http://localhost:11434/v1"}, 0, false, false, "go together"},
		{"bad base URL", []string{"--extract-model", "m", "--extract-base-url", "ftp://x"}, 0, false, false, "--extract-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f extractFlags
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var o memory.Options
			err := f.apply(&o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("apply = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Extraction != tt.mode || o.ExtractToolResults != tt.tools || (o.Extractor != nil) != tt.model {
				t.Errorf("options = %v, tools %v, extractor %T", o.Extraction, o.ExtractToolResults, o.Extractor)
			}
		})
	}
}

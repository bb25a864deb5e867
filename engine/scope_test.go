package engine

import (
	"errors"
	"testing"
)

// TestScopeIDsThatDisguise checks the scope ids that are refused although
// they are printable UTF-8: path components that a URL or file path
// resolves away (".", "..", anything with "/"), and invisible format
// characters (bidirectional overrides and isolates, zero-width characters)
// that make one id look like another.
func TestScopeIDsThatDisguise(t *testing.T) {
	bad := []struct{ name, id string }{
		{"dot", "."},
		{"dot dot", ".."},
		{"slash", "a/b"},
		{"leading slash", "/alice"},
		{"dot dot slash", "../evil"},
		{"only slash", "/"},
		{"LRE", "ali\u202ace"},
		{"RLE", "ali\u202bce"},
		{"PDF", "alice\u202c"},
		{"LRO", "\u202dalice"},
		{"RLO", "alice\u202egpj.exe"},
		{"LRI", "\u2066alice"},
		{"RLI", "\u2067alice"},
		{"FSI", "\u2068alice"},
		{"PDI", "alice\u2069"},
		{"LRM", "alice\u200e"},
		{"RLM", "alice\u200f"},
		{"ALM", "alice\u061c"},
		{"zero width space", "ad\u200bmin"},
		{"zero width joiner", "ad\u200dmin"},
		{"word joiner", "ad\u2060min"},
		{"BOM", "\ufeffalice"},
		{"soft hyphen", "ad\u00admin"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			for _, sc := range []Scope{
				{Tenant: tc.id},
				{Tenant: "acme", User: tc.id},
				{Tenant: "acme", User: "alice", Session: tc.id},
				{Tenant: "acme", User: "alice", Agent: tc.id},
			} {
				if err := sc.Validate(LevelTenant); !errors.Is(err, ErrInvalidScope) {
					t.Errorf("Validate(%+q) = %v, want ErrInvalidScope", sc, err)
				}
			}
			if err := ValidateScopeID(tc.id); err == nil {
				t.Errorf("ValidateScopeID(%+q) = nil, want an error", tc.id)
			}
		})
	}
	good := []string{"...", ".alice", "alice.", "a..b", "a\\b", "ali ce", "アリス", "Ācme", "a-b_c.d", "user@example.com", "עברית", "مرحبا"}
	for _, id := range good {
		if err := (Scope{Tenant: id, User: id, Session: id, Agent: id}).Validate(LevelSession); err != nil {
			t.Errorf("Validate(%+q) = %v, want nil", id, err)
		}
	}
	// ValidateID, which also checks tags, metadata keys and tool names,
	// keeps allowing '/': "project/x" is an ordinary tag.
	if err := ValidateID("project/x"); err != nil {
		t.Errorf("ValidateID(project/x) = %v, want nil", err)
	}
}

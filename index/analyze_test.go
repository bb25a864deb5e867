package index

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"stems", "Running runners ran", []string{"run", "runner", "ran"}},
		{"stems plural", "Accounts accounting", []string{"account", "account"}},
		{"number kept", "account 3942", []string{"account", "3942"}},
		{"identifiers whole", "user_id foo.bar alice@example.com abc-123 v1.2.3 GPT4",
			[]string{"user_id", "foo.bar", "alice@example.com", "abc-123", "v1.2.3", "gpt4"}},
		{"identifier not stemmed", "running_jobs Running-Jobs", []string{"running_jobs", "running-jobs"}},
		{"joiner runs", "std::vector https://example.com/a?b=c",
			[]string{"std::vector", "https://example.com/a", "b", "c"}},
		{"trailing punctuation", "Hello, world. (foo.bar). _x_ -y-", []string{"hello", "world", "foo.bar", "x", "y"}},
		{"digit grouping", "1,000,000 dollars; a,b 3,x", []string{"1,000,000", "dollar", "b", "3", "x"}},
		{"possessive", "Alice's", []string{"alic"}}, // as "Alice": Porter2 stems it to "alic"
		{"curly possessive", "ALICE\u2019S", []string{"alic"}},
		{"plural possessive", "students' books", []string{"student", "book"}},
		{"identifier possessive", "user_id's 1990's", []string{"user_id", "1990"}},
		{"stop words", "The and of is it It's what they're doing, don't WON'T let's", nil},
		{"stop words among words", "What is the capital of France?", []string{"capit", "franc"}},
		{"empty", "", nil},
		{"spaces and symbols", " \t\n!?… — 🙂 ", nil},
		{"accents fold", "Café CAFÉ cafe\u0301", []string{"café", "café", "café"}},
		{"full folding", "Straße STRASSE", []string{"strass", "strass"}},
		{"compatibility forms", "ｆｕｌｌｗｉｄｔｈ ﬁle", []string{"fullwidth", "file"}},
		{"soft hyphen ignored", "hy\u00adphen", []string{"hyphen"}},
		{"cjk", "東京タワー 中文abc", []string{"東", "京", "タワー", "中", "文", "abc"}},
		{"greek", "ΟΔΥΣΣΕΥΣ Οδυσσεύς", []string{"οδυσσευσ", "οδυσσεύσ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Analyze(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestAnalyzeSameAsBase(t *testing.T) {
	for _, p := range [][2]string{
		{"Alice's", "Alice"},
		{"Alice’s", "alice"},
		{"RUNNING", "run"},
		{"connections", "connected"},
	} {
		if a, b := Analyze(p[0]), Analyze(p[1]); !slices.Equal(a, b) {
			t.Errorf("Analyze(%q) = %q, Analyze(%q) = %q; want equal", p[0], a, p[1], b)
		}
	}
}

func TestAnalyzeLongToken(t *testing.T) {
	long := strings.Repeat("é", 300) + "1" // identifier; é is 2 bytes
	got := Analyze(long + " x")
	if len(got) != 2 || len(got[0]) != maxTermBytes || !utf8.ValidString(got[0]) || got[1] != "x" {
		t.Fatalf("long token: %d terms, first %d bytes", len(got), len(got[0]))
	}
	odd := "a" + strings.Repeat("é", 300) // the cut falls inside a rune
	if got := Analyze(odd); len(got) != 1 || len(got[0]) != maxTermBytes-1 || !utf8.ValidString(got[0]) {
		t.Fatalf("cut inside a rune: %q", got)
	}
}

func TestAppendTerms(t *testing.T) {
	buf := make([]string, 0, 16)
	buf = append(buf, "keep")
	got := AppendTerms(buf, "Running runners")
	if !slices.Equal(got, []string{"keep", "run", "runner"}) || &got[0] != &buf[0] {
		t.Fatalf("AppendTerms = %q; want appended in place", got)
	}
	if n := testing.AllocsPerRun(100, func() { got = AppendTerms(got[:0], "3942 user_id foo.bar") }); n != 0 {
		t.Errorf("AppendTerms on lower-case identifiers allocates %v times, want 0", n)
	}
}

func TestStopWords(t *testing.T) {
	// The Snowball English list has 174 words; every entry must be in the
	// form Analyze looks up (lower-case, ASCII apostrophes).
	if len(stopWords) != 174 {
		t.Errorf("%d stop words, want 174", len(stopWords))
	}
	for w := range stopWords {
		if w != strings.ToLower(w) || strings.ContainsAny(w, "’ ") {
			t.Errorf("stop word %q is not in folded form", w)
		}
		if got := Analyze(w); got != nil {
			t.Errorf("Analyze(%q) = %q, want nothing", w, got)
		}
	}
}

// FuzzAnalyze: any text analyzes without panicking into non-empty,
// lower-case, valid UTF-8 terms of at most maxTermBytes that fold leaves
// unchanged, and AppendTerms agrees with Analyze.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"Running runners ran", "account 3942", "user_id", "Alice's", "alice@example.com",
		"v1.2.3 abc-123 gpt4", "Café cafe\u0301 Straße ﬁ ｆｕｌｌ", "東京タワー 中文abc", "1,000,000",
		"Ꭰꭰ", "ǰ ΐ ᾳ İ", "a\u200db\u00adc\u200bd", "'x' -y- ::", "\xff\xfe", strings.Repeat("ab-", 200),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		terms := Analyze(text)
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) || len(term) > maxTermBytes {
				t.Fatalf("Analyze(%q): bad term %q", text, term)
			}
			if lower := strings.ToLower(term); lower != term {
				t.Fatalf("Analyze(%q): term %q is not lower-case (%q)", text, term, lower)
			}
			if folded := fold(term); folded != term {
				t.Fatalf("Analyze(%q): term %q folds to %q", text, term, folded)
			}
		}
		if got := AppendTerms([]string{"x"}, text); len(got) != len(terms)+1 || !slices.Equal(got[1:], terms) {
			t.Fatalf("AppendTerms disagrees with Analyze: %q, %q", got, terms)
		}
	})
}

// BenchmarkAnalyze measures the analysis of a typical memory: a sentence
// of English with a number and an identifier.
func BenchmarkAnalyze(b *testing.B) {
	for _, text := range []string{
		"The user's account 3942 was migrated to the new billing_plan on Tuesday after two failed payments.",
		"Ο χρήστης προτιμά καφέ χωρίς ζάχαρη και μένει στην Αθήνα από το 2019.",
	} {
		b.Run(fmt.Sprintf("bytes=%d", len(text)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			var buf []string
			for b.Loop() {
				buf = AppendTerms(buf[:0], text)
			}
		})
	}
}

func ExampleAnalyze() {
	fmt.Println(Analyze("Alice's runners ran the v1.2.3 migration for user_id 3942."))
	// Output: [alic runner ran v1.2.3 migrat user_id 3942]
}

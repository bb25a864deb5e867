package memory

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuickStart keeps the README's Go quick start identical to
// Example, which the test run compiles and checks.
func TestReadmeQuickStart(t *testing.T) { checkReadmeExample(t, "../README.md", "Example") }

// TestReadmeRecall keeps the Recall guide's example identical to
// ExampleStore_Recall.
func TestReadmeRecall(t *testing.T) {
	checkReadmeExample(t, "../docs/recall.md", "ExampleStore_Recall")
}

// checkReadmeExample fails unless the Markdown file doc holds the body of
// the example function name.
func checkReadmeExample(t *testing.T, doc, name string) {
	readme, err := os.ReadFile(doc)
	if err != nil {
		t.Skipf("no %s next to the module: %v", doc, err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)func ` + name + `\(\) \{\n(.*?)\n\t// Output:`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("no %s body in example_test.go", name)
	}
	var lines []string
	for _, l := range strings.Split(string(m[1]), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	body := strings.Join(lines, "\n")
	if !strings.Contains(string(readme), body) {
		t.Fatalf("%s does not hold the body of memory.%s; paste it in:\n%s", doc, name, body)
	}
}

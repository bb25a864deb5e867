package memory

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuickStart keeps the README's Go quick start identical to
// Example, which the test run compiles and checks.
func TestReadmeQuickStart(t *testing.T) { checkReadmeExample(t, "Example") }

// TestReadmeRecall keeps the README's Recall example identical to
// ExampleStore_Recall.
func TestReadmeRecall(t *testing.T) { checkReadmeExample(t, "ExampleStore_Recall") }

func checkReadmeExample(t *testing.T, name string) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("no README next to the module: %v", err)
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
		t.Fatalf("README.md does not hold the body of memory.%s; paste it in:\n%s", name, body)
	}
}

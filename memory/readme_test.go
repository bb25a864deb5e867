package memory

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuickStart keeps the README's Go quick start identical to
// Example, which the test run compiles and checks.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("no README next to the module: %v", err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)func Example\(\) \{\n(.*?)\n\t// Output:`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no Example body in example_test.go")
	}
	var lines []string
	for _, l := range strings.Split(string(m[1]), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	body := strings.Join(lines, "\n")
	if !strings.Contains(string(readme), body) {
		t.Fatalf("README.md does not hold the body of memory.Example; paste it in:\n%s", body)
	}
}

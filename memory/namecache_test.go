package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestNameCacheBoundedByNames: the cached name sets hold at most
// maxNames names together, whatever the number of graphs, and the count
// follows invalidations.
func TestNameCacheBoundedByNames(t *testing.T) {
	c := nameCache{maxNames: 10}
	set := func(n int) *nameSet {
		s := &nameSet{names: map[string]string{}}
		for i := range n {
			s.names[fmt.Sprint("name", i)] = "Name"
		}
		return s
	}
	check := func() {
		t.Helper()
		n := 0
		for _, s := range c.sets {
			n += len(s.names)
		}
		if n != c.names || n > 10 {
			t.Fatalf("cached sets hold %d names, counted %d, bound 10", n, c.names)
		}
	}
	c.mu.Lock()
	for i := range 20 {
		c.addLocked(fmt.Sprint("root", i), set(4))
		check()
	}
	if len(c.sets) != 2 {
		t.Fatalf("%d sets of 4 names cached under a bound of 10", len(c.sets))
	}
	c.addLocked("huge", set(11))
	check()
	c.mu.Unlock()
	c.invalidate([]byte("root19"))
	c.invalidatePrefix([]byte("root"))
	c.mu.Lock()
	defer c.mu.Unlock()
	check()
	if c.names != 0 {
		t.Fatalf("%d names counted after every set was invalidated", c.names)
	}
}

// TestPartitionCacheBytesOption: the budget reaches the engine, and a
// negative one is refused, named.
func TestPartitionCacheBytesOption(t *testing.T) {
	_, err := Open("", &Options{PartitionCacheBytes: -1})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "PartitionCacheBytes") {
		t.Fatalf("negative PartitionCacheBytes: %v, want ErrInvalidOptions naming it", err)
	}
	s, err := Open("", &Options{PartitionCacheBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b := s.Stats().Cache.Budget; b != 3<<20 {
		t.Fatalf("engine budget %d, want %d", b, 3<<20)
	}
}

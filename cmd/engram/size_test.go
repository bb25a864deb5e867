package main

import (
	"errors"
	"testing"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/memory"
)

func TestByteSizeFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "256MiB", want: 256 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "1GB", want: 1e9},
		{in: "512 KiB", want: 512 << 10},
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "-1", bad: true},
		{in: "-1GiB", bad: true},
		{in: "lots", bad: true},
		{in: "", bad: true},
		{in: "99999999999EiB", bad: true},
	} {
		t.Run(c.in, func(t *testing.T) {
			var s byteSize
			err := s.Set(c.in)
			if c.bad {
				if !errors.Is(err, errBadSize) {
					t.Fatalf("Set(%q) = %v, want errBadSize", c.in, err)
				}
				return
			}
			if err != nil || int64(s) != c.want {
				t.Fatalf("Set(%q) = %d, %v; want %d", c.in, s, err, c.want)
			}
		})
	}
}

// TestPartitionCacheFlag: --partition-cache and --block-cache reach the
// store's options.
func TestPartitionCacheFlag(t *testing.T) {
	var f openFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs, true)
	if err := fs.Parse([]string{"--partition-cache", "64MiB", "--block-cache", "32MiB"}); err != nil {
		t.Fatal(err)
	}
	var o memory.Options
	if err := f.apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.PartitionCacheBytes != 64<<20 || o.BlockCacheBytes != 32<<20 {
		t.Fatalf("PartitionCacheBytes %d, BlockCacheBytes %d; want %d, %d", o.PartitionCacheBytes, o.BlockCacheBytes, 64<<20, 32<<20)
	}
}

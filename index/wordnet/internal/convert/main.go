// Command convert compiles Debian's wordnet-base files into wordnet.bin,
// the table package wordnet embeds: the format wnconv.Convert writes,
// compressed with DEFLATE. Run it with go generate in index/wordnet:
//
//	go run ./internal/convert -dir /usr/share/wordnet -out wordnet.bin
package main

import (
	"bytes"
	"compress/flate"
	"flag"
	"fmt"
	"os"

	"github.com/engramdb/engram/index/wordnet/internal/wnconv"
)

func main() {
	dir := flag.String("dir", "/usr/share/wordnet", "the WordNet database directory (Debian's wordnet-base)")
	out := flag.String("out", "wordnet.bin", "the table to write")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	raw, err := wnconv.Convert(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes (%d before compression)\n", out, buf.Len(), len(raw))
	return nil
}

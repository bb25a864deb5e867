// Package wnconv compiles the WordNet 3.0 database files (as Debian's
// wordnet-base installs them in /usr/share/wordnet) into the table format
// package wordnet decodes. It is shared by the converter command and by
// the test that checks the committed table against a fresh conversion.
package wnconv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Magic and Version open every table; package wordnet checks both.
const (
	Magic   = "EWN\x00"
	Version = 1
)

// posFiles are the parts of speech converted, in table order: nouns, then
// verbs. ssType is the digit sense keys give the part of speech.
var posFiles = [2]struct{ name, ssType string }{{"noun", "1"}, {"verb", "2"}}

// synset is one synonym set read from a data file.
type synset struct {
	lexFile string   // lex_filenum, two digits
	words   []string // lower-case lemmas, in the file's order
	lexIDs  []int    // each word's lex_id
	hyper   []int64  // offsets of direct hypernyms (pointer "@") of the same part of speech
}

// Convert reads the WordNet files in dir and returns the table: for each
// one-word lemma of a noun or verb, its senses in WordNet's order (most
// frequent first) with their tag counts from cntlist.rev, keeping the first
// sense and every other sense with a tag count above zero; for each synset
// a kept sense names, its one-word members and its direct hypernyms (whose
// members are kept too); and the exception lists (noun.exc, verb.exc)
// mapping irregular forms to one-word base forms. Glosses, multiword
// lemmas and every other pointer are left out.
func Convert(dir string) ([]byte, error) {
	counts, err := readCounts(filepath.Join(dir, "cntlist.rev"))
	if err != nil {
		return nil, err
	}
	type posData struct {
		synsets map[int64]*synset
		senses  map[string][]int64 // lemma -> synset offsets, WordNet's order
		exc     map[string][]string
	}
	var pd [2]posData
	for p, pf := range posFiles {
		ss, err := readData(filepath.Join(dir, "data."+pf.name))
		if err != nil {
			return nil, err
		}
		idx, err := readIndex(filepath.Join(dir, "index."+pf.name))
		if err != nil {
			return nil, err
		}
		exc, err := readExc(filepath.Join(dir, pf.name+".exc"))
		if err != nil {
			return nil, err
		}
		pd[p] = posData{ss, idx, exc}
	}

	// Kept senses, per part of speech and lemma.
	type sense struct {
		off   int64
		count uint64
	}
	kept := [2]map[string][]sense{{}, {}}
	for p, pf := range posFiles {
		for lemma, offs := range pd[p].senses {
			if strings.ContainsAny(lemma, "_ ") {
				continue
			}
			for i, off := range offs {
				s, ok := pd[p].synsets[off]
				if !ok {
					return nil, fmt.Errorf("wnconv: index.%s: %s names missing synset %d", pf.name, lemma, off)
				}
				j := slices.Index(s.words, lemma)
				if j < 0 {
					return nil, fmt.Errorf("wnconv: data.%s: synset %d lacks %s", pf.name, off, lemma)
				}
				key := fmt.Sprintf("%s%%%s:%s:%02d::", lemma, pf.ssType, s.lexFile, s.lexIDs[j])
				c := counts[key]
				if c > 0 || i == 0 {
					kept[p][lemma] = append(kept[p][lemma], sense{off, c})
				}
			}
		}
	}

	// Synsets: those kept senses name, then their hypernyms.
	type ssKey struct {
		pos int
		off int64
	}
	need := map[ssKey]bool{}
	for p := range kept {
		for _, ss := range kept[p] {
			for _, s := range ss {
				need[ssKey{p, s.off}] = true
				for _, h := range pd[p].synsets[s.off].hyper {
					if _, ok := pd[p].synsets[h]; !ok {
						return nil, fmt.Errorf("wnconv: data.%s: hypernym %d of %d is missing", posFiles[p].name, h, s.off)
					}
					need[ssKey{p, h}] = true
				}
			}
		}
	}
	keys := make([]ssKey, 0, len(need))
	for k := range need {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ssKey) int {
		if a.pos != b.pos {
			return a.pos - b.pos
		}
		return int(a.off - b.off)
	})
	ssID := make(map[ssKey]int, len(keys))
	for i, k := range keys {
		ssID[k] = i
	}

	// Words: every one-word member of a kept synset and every lemma with
	// kept senses or exceptions.
	wordSet := map[string]bool{}
	for _, k := range keys {
		for _, w := range pd[k.pos].synsets[k.off].words {
			if !strings.Contains(w, "_") {
				wordSet[w] = true
			}
		}
	}
	for p := range kept {
		for lemma := range kept[p] {
			wordSet[lemma] = true
		}
	}
	words := make([]string, 0, len(wordSet))
	for w := range wordSet {
		words = append(words, w)
	}
	slices.Sort(words)
	wordID := make(map[string]int, len(words))
	for i, w := range words {
		wordID[w] = i
	}

	var b []byte
	b = append(b, Magic...)
	b = append(b, Version)
	b = appendStrings(b, words)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		s := pd[k.pos].synsets[k.off]
		var mem []int
		for _, w := range s.words {
			if id, ok := wordID[w]; ok && !slices.Contains(mem, id) {
				mem = append(mem, id)
			}
		}
		b = binary.AppendUvarint(b, uint64(len(mem)))
		for _, id := range mem {
			b = binary.AppendUvarint(b, uint64(id))
		}
		var hyp []int
		for _, h := range s.hyper {
			if id, ok := ssID[ssKey{k.pos, h}]; ok && !slices.Contains(hyp, id) {
				hyp = append(hyp, id)
			}
		}
		b = binary.AppendUvarint(b, uint64(len(hyp)))
		for _, id := range hyp {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	for p := range kept {
		lemmas := make([]string, 0, len(kept[p]))
		for l := range kept[p] {
			lemmas = append(lemmas, l)
		}
		slices.Sort(lemmas)
		b = binary.AppendUvarint(b, uint64(len(lemmas)))
		prev := -1
		for _, l := range lemmas {
			id := wordID[l]
			b = binary.AppendUvarint(b, uint64(id-prev)) // ascending: a delta of at least 1
			prev = id
			ss := kept[p][l]
			b = binary.AppendUvarint(b, uint64(len(ss)))
			for _, s := range ss {
				b = binary.AppendUvarint(b, uint64(ssID[ssKey{p, s.off}]))
				b = binary.AppendUvarint(b, s.count)
			}
		}
	}
	for p := range pd {
		var infl []string
		bases := map[string][]int{}
		for form, bs := range pd[p].exc {
			if strings.Contains(form, "_") {
				continue
			}
			for _, base := range bs {
				if _, ok := kept[p][base]; ok && base != form {
					bases[form] = append(bases[form], wordID[base])
				}
			}
			if len(bases[form]) > 0 {
				infl = append(infl, form)
			}
		}
		slices.Sort(infl)
		b = appendStrings(b, infl)
		for _, f := range infl {
			b = binary.AppendUvarint(b, uint64(len(bases[f])))
			for _, id := range bases[f] {
				b = binary.AppendUvarint(b, uint64(id))
			}
		}
	}
	return b, nil
}

// appendStrings appends a count and the sorted, distinct strings front
// coded: each as the length of the prefix it shares with the one before,
// then the length and bytes of the rest.
func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	prev := ""
	for _, s := range ss {
		n := 0
		for n < len(s) && n < len(prev) && s[n] == prev[n] {
			n++
		}
		b = binary.AppendUvarint(b, uint64(n))
		b = binary.AppendUvarint(b, uint64(len(s)-n))
		b = append(b, s[n:]...)
		prev = s
	}
	return b
}

// readCounts reads cntlist.rev: "sense_key sense_number tag_cnt" a line.
func readCounts(path string) (map[string]uint64, error) {
	m := map[string]uint64{}
	err := eachLine(path, func(line string) error {
		f := strings.Fields(line)
		if len(f) != 3 {
			return errors.New("want 3 fields")
		}
		c, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return err
		}
		m[f[0]] += c
		return nil
	})
	return m, err
}

// readData reads a data file's synsets (lines not starting with a space:
// the licence header does): offset lex_filenum ss_type w_cnt (word lex_id)
// × w_cnt p_cnt (pointer offset pos source/target) × p_cnt ... | gloss.
func readData(path string) (map[int64]*synset, error) {
	m := map[int64]*synset{}
	err := eachLine(path, func(line string) error {
		if strings.HasPrefix(line, " ") {
			return nil
		}
		if i := strings.Index(line, " | "); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return errors.New("short synset line")
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return err
		}
		wc, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return err
		}
		s := &synset{lexFile: f[1]}
		i := 4
		for range wc {
			if i+1 >= len(f) {
				return errors.New("short word list")
			}
			lid, err := strconv.ParseUint(f[i+1], 16, 8)
			if err != nil {
				return err
			}
			s.words = append(s.words, strings.ToLower(f[i]))
			s.lexIDs = append(s.lexIDs, int(lid))
			i += 2
		}
		if i >= len(f) {
			return errors.New("no pointer count")
		}
		pc, err := strconv.Atoi(f[i])
		if err != nil {
			return err
		}
		i++
		for range pc {
			if i+3 >= len(f) {
				return errors.New("short pointer list")
			}
			if f[i] == "@" && f[i+2] == f[2] {
				h, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return err
				}
				s.hyper = append(s.hyper, h)
			}
			i += 4
		}
		m[off] = s
		return nil
	})
	return m, err
}

// readIndex reads an index file: lemma pos synset_cnt p_cnt (ptr) × p_cnt
// sense_cnt tagsense_cnt (offset) × synset_cnt.
func readIndex(path string) (map[string][]int64, error) {
	m := map[string][]int64{}
	err := eachLine(path, func(line string) error {
		if strings.HasPrefix(line, " ") {
			return nil
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return errors.New("short index line")
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		if n < 1 || n >= len(f) {
			return errors.New("bad synset count")
		}
		offs := make([]int64, 0, n)
		for _, s := range f[len(f)-n:] {
			off, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return err
			}
			offs = append(offs, off)
		}
		m[f[0]] = offs
		return nil
	})
	return m, err
}

// readExc reads an exception list: "inflected base..." a line.
func readExc(path string) (map[string][]string, error) {
	m := map[string][]string{}
	err := eachLine(path, func(line string) error {
		f := strings.Fields(line)
		if len(f) < 2 {
			return errors.New("short exception line")
		}
		m[f[0]] = append(m[f[0]], f[1:]...)
		return nil
	})
	return m, err
}

func eachLine(path string, fn func(string) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("wnconv: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if sc.Text() == "" {
			continue
		}
		if err := fn(sc.Text()); err != nil {
			return fmt.Errorf("wnconv: %s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("wnconv: %s: %w", path, err)
	}
	return nil
}

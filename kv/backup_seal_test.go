package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

var sealTestKey = bytes.Repeat([]byte{7}, 32)

// fillSecret writes keys whose values hold a recognisable plaintext.
func fillSecret(t *testing.T, db *DB, n int) {
	t.Helper()
	if err := db.Update(context.Background(), func(tx *Txn) error {
		for i := range n {
			if err := tx.Set(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "plaintext-secret-%d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestBackupSealed: an encrypted store's backup holds no plaintext, opens
// only with the same key (ErrBackupKey otherwise, before anything is
// loaded) and fails with ErrBadBackup when damaged anywhere.
func TestBackupSealed(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, t.TempDir(), &Options{EncryptionKey: sealTestKey})
	fillSecret(t, src, 5000) // several frames
	var buf bytes.Buffer
	if err := src.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	sealed := buf.Bytes()
	if bytes.Contains(sealed, []byte("plaintext-secret")) || bytes.Contains(sealed, []byte("k00001")) {
		t.Fatal("the backup of an encrypted store holds plaintext")
	}
	if !bytes.HasPrefix(sealed, []byte(sealMagic)) || sealed[len(sealMagic)] != sealVersion {
		t.Fatalf("header %q", sealed[:9])
	}
	if len(sealed) < 2*sealChunk+sealHeader {
		t.Fatalf("a %d-byte stream has one frame; the test wants several", len(sealed))
	}

	dst := openTest(t, t.TempDir(), &Options{EncryptionKey: sealTestKey})
	if err := dst.Restore(ctx, bytes.NewReader(sealed)); err != nil {
		t.Fatalf("Restore with the key: %v", err)
	}
	if err := dst.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("k02999"))
		if err != nil || string(v) != "plaintext-secret-2999" {
			return fmt.Errorf("k02999 = %q, %v", v, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	for name, key := range map[string][]byte{
		"no key":      nil,
		"another key": bytes.Repeat([]byte{8}, 32),
		"shorter key": bytes.Repeat([]byte{7}, 16),
	} {
		db := openTest(t, t.TempDir(), &Options{EncryptionKey: key})
		if err := db.Restore(ctx, bytes.NewReader(sealed)); !errors.Is(err, ErrBackupKey) {
			t.Errorf("%s: Restore = %v, want ErrBackupKey", name, err)
		}
		// Nothing was loaded: the store stays usable.
		if err := db.View(ctx, func(*Txn) error { return nil }); err != nil {
			t.Errorf("%s: the store after a refused restore: %v", name, err)
		}
	}

	lastFrame := bytes.LastIndex(sealed, nil) // len(sealed)
	for name, in := range map[string][]byte{
		"flipped frame byte": flipAt(sealed, sealHeader+100),
		"flipped tag":        flipAt(sealed, len(sealed)-1),
		"flipped frame len":  flipAt(sealed, sealHeader),
		"cut at a frame":     sealed[:sealHeader+4+sealChunk+16],
		"cut inside a frame": sealed[:lastFrame-10],
		"no frames":          sealed[:sealHeader],
		"trailing bytes":     append(bytes.Clone(sealed), 0),
		"version":            flipAt(sealed, len(sealMagic)),
	} {
		db := openTest(t, t.TempDir(), &Options{EncryptionKey: sealTestKey})
		if err := db.Restore(ctx, bytes.NewReader(in)); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: Restore = %v, want ErrBadBackup", name, err)
		}
	}
	// A damaged salt or check cannot be told from another key.
	db := openTest(t, t.TempDir(), &Options{EncryptionKey: sealTestKey})
	if err := db.Restore(ctx, bytes.NewReader(flipAt(sealed, len(sealMagic)+5))); !errors.Is(err, ErrBackupKey) {
		t.Errorf("flipped salt: Restore = %v, want ErrBackupKey", err)
	}
}

// TestBackupPlainIntoEncrypted: a plain store's backup is Badger's own
// stream and loads into an encrypted store too.
func TestBackupPlainIntoEncrypted(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, t.TempDir(), nil)
	fillSecret(t, src, 10)
	var buf bytes.Buffer
	if err := src.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(buf.Bytes(), []byte(sealMagic)) {
		t.Fatal("a plain store's backup is sealed")
	}
	dst := openTest(t, t.TempDir(), &Options{EncryptionKey: sealTestKey})
	if err := dst.Restore(ctx, &buf); err != nil {
		t.Fatal(err)
	}
}

func flipAt(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0x40
	return out
}

// sealBytes seals plain as a backup stream would be, in frames of
// sealChunk.
func sealBytes(t testing.TB, plain []byte) []byte {
	var buf bytes.Buffer
	sw, err := newSealWriter(&buf, sealTestKey)
	if err != nil {
		t.Fatal(err)
	}
	// Odd-sized writes cross frame boundaries.
	for p := plain; len(p) > 0; {
		n := min(len(p), 1000+len(p)%7919)
		if _, err := sw.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzOpenBackup: any input opens to an error or to bytes, never a panic
// or an allocation past one frame; a sealed stream opens to exactly what
// was sealed, and any change to it (magic aside, which makes it an
// unsealed stream for Badger's checks) is an error.
func FuzzOpenBackup(f *testing.F) {
	f.Add([]byte("hello"), uint32(0), byte(0), false)
	f.Add(bytes.Repeat([]byte("x"), 3*sealChunk+5), uint32(sealHeader+3), byte(1), false)
	f.Add([]byte{}, uint32(70), byte(0x80), false)
	f.Add([]byte(sealMagic+"\x01garbage"), uint32(0), byte(0), true)
	f.Fuzz(func(t *testing.T, plain []byte, pos uint32, flip byte, raw bool) {
		if raw {
			// plain is the whole stream.
			r, err := openBackup(bytes.NewReader(plain), sealTestKey)
			if err != nil {
				if !errors.Is(err, ErrBadBackup) && !errors.Is(err, ErrBackupKey) {
					t.Fatalf("open: untyped error %v", err)
				}
				return
			}
			if _, err := io.Copy(io.Discard, r); err != nil && !errors.Is(err, ErrBadBackup) {
				t.Fatalf("read: untyped error %v", err)
			}
			return
		}
		sealed := sealBytes(t, plain)
		if flip != 0 {
			sealed[int(pos)%len(sealed)] ^= flip
		}
		r, err := openBackup(bytes.NewReader(sealed), sealTestKey)
		var got []byte
		if err == nil {
			got, err = io.ReadAll(r)
		}
		changed := flip != 0
		magicHit := changed && int(pos)%len(sealed) < len(sealMagic)
		switch {
		case !changed && err != nil:
			t.Fatalf("a sound stream: %v", err)
		case !changed && !bytes.Equal(got, plain):
			t.Fatalf("opened %d bytes, sealed %d", len(got), len(plain))
		case magicHit:
			// Read as Badger's own stream; its frame checks follow.
		case changed && err == nil:
			t.Fatalf("a stream changed at %d opened without an error", int(pos)%len(sealed))
		case changed && !errors.Is(err, ErrBadBackup) && !errors.Is(err, ErrBackupKey):
			t.Fatalf("untyped error %v", err)
		}
	})
}

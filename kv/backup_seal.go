package kv

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A sealed backup stream, what [DB.Backup] writes from an encrypted store:
//
//	magic "ENGRSEAL" | version u8 (1) | salt [32]byte |
//	check [32]byte (HMAC-SHA256 of the bytes before it) |
//	frames
//
// and each frame is
//
//	header u32 (little-endian: bit 31 marks the last frame, the rest is
//	the sealed length) | AES-256-GCM sealed chunk of at most
//	sealChunk bytes of Badger's backup stream
//
// The frame key and the check key are drawn from the store's key by HKDF
// (SHA-256) with the stream's random salt, so every backup has keys of its
// own; the nonce is the frame's index, and the frame header is the
// additional data, so a frame cannot be moved, dropped, cut off, or marked
// last, without the stream failing to open. The check tells a wrong key
// apart from a damaged stream before any frame is read.
const (
	sealMagic   = "ENGRSEAL"
	sealVersion = 1
	sealSalt    = 32
	sealCheck   = 32
	sealHeader  = len(sealMagic) + 1 + sealSalt + sealCheck
	// sealChunk is the plaintext of one frame: 64 KiB keeps a frame's
	// buffers small and the 16-byte tag's overhead at 0.02%.
	sealChunk = 64 << 10
	sealLast  = 1 << 31
	sealInfo  = "engram backup v1"
)

// sealKeys derives the frame cipher and the check key of a stream.
func sealKeys(storeKey, salt []byte) (cipher.AEAD, []byte, error) {
	keys, err := hkdf.Key(sha256.New, storeKey, salt, sealInfo, 64)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(keys[:32])
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, err
	}
	return aead, keys[32:], nil
}

func sealCheckSum(checkKey, header []byte) []byte {
	m := hmac.New(sha256.New, checkKey)
	m.Write(header)
	return m.Sum(nil)
}

// sealWriter seals what is written to it into frames on w. Close writes
// the last frame; without it the stream does not open.
type sealWriter struct {
	w     io.Writer
	aead  cipher.AEAD
	buf   []byte
	out   []byte
	index uint64
}

// newSealWriter writes the stream header to w and returns the writer of
// its frames.
func newSealWriter(w io.Writer, storeKey []byte) (*sealWriter, error) {
	header := make([]byte, 0, sealHeader)
	header = append(header, sealMagic...)
	header = append(header, sealVersion)
	salt := make([]byte, sealSalt)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	header = append(header, salt...)
	aead, checkKey, err := sealKeys(storeKey, salt)
	if err != nil {
		return nil, err
	}
	header = append(header, sealCheckSum(checkKey, header)...)
	if _, err := w.Write(header); err != nil {
		return nil, err
	}
	return &sealWriter{w: w, aead: aead, buf: make([]byte, 0, sealChunk)}, nil
}

func (sw *sealWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if len(sw.buf) == sealChunk {
			if err := sw.frame(false); err != nil {
				return n, err
			}
		}
		k := copy(sw.buf[len(sw.buf):sealChunk], p)
		sw.buf = sw.buf[:len(sw.buf)+k]
		p = p[k:]
		n += k
	}
	return n, nil
}

// Close seals what is buffered as the last frame.
func (sw *sealWriter) Close() error { return sw.frame(true) }

func (sw *sealWriter) frame(last bool) error {
	var hdr [4]byte
	n := uint32(len(sw.buf) + sw.aead.Overhead())
	if last {
		n |= sealLast
	}
	binary.LittleEndian.PutUint32(hdr[:], n)
	sw.out = append(sw.out[:0], hdr[:]...)
	sw.out = sw.aead.Seal(sw.out, sealNonce(sw.aead, sw.index), sw.buf, hdr[:])
	sw.index++
	sw.buf = sw.buf[:0]
	_, err := sw.w.Write(sw.out)
	return err
}

func sealNonce(aead cipher.AEAD, index uint64) []byte {
	nonce := make([]byte, aead.NonceSize())
	binary.BigEndian.PutUint64(nonce[len(nonce)-8:], index)
	return nonce
}

// sealReader opens the frames of a sealed stream.
type sealReader struct {
	r     io.Reader
	aead  cipher.AEAD
	plain []byte // opened, not yet read
	buf   []byte
	index uint64
	done  bool // the last frame was opened
	err   error
}

// openBackup returns the stream of Badger's backup frames in r: r itself
// when it is not sealed, or what its frames open to with storeKey. A
// sealed stream read without a key, or with another key, fails with
// [ErrBackupKey]; a damaged one, here or while it is read, with
// [ErrBadBackup].
func openBackup(r io.Reader, storeKey []byte) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(len(sealMagic))
	if err != nil || string(magic) != sealMagic {
		return br, nil // Badger's own stream (or too short: its reader says so)
	}
	header := make([]byte, sealHeader)
	if _, err := io.ReadFull(br, header); err != nil {
		return nil, fmt.Errorf("%w: sealed backup header: %v", ErrBadBackup, err)
	}
	if v := header[len(sealMagic)]; v != sealVersion {
		return nil, fmt.Errorf("%w: sealed backup version %d, this build reads %d", ErrBadBackup, v, sealVersion)
	}
	if len(storeKey) == 0 {
		return nil, fmt.Errorf("%w: the backup is encrypted and the store has no key", ErrBackupKey)
	}
	salt := header[len(sealMagic)+1 : len(sealMagic)+1+sealSalt]
	aead, checkKey, err := sealKeys(storeKey, salt)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBackupKey, err)
	}
	if !hmac.Equal(sealCheckSum(checkKey, header[:sealHeader-sealCheck]), header[sealHeader-sealCheck:]) {
		return nil, fmt.Errorf("%w: the backup was sealed with another key (or its header is damaged)", ErrBackupKey)
	}
	return &sealReader{r: br, aead: aead}, nil
}

func (sr *sealReader) Read(p []byte) (int, error) {
	for len(sr.plain) == 0 {
		if sr.err != nil {
			return 0, sr.err
		}
		if sr.done {
			// Nothing may follow the last frame.
			var one [1]byte
			if n, _ := io.ReadFull(sr.r, one[:]); n > 0 {
				sr.err = fmt.Errorf("%w: bytes after the last sealed frame", ErrBadBackup)
				return 0, sr.err
			}
			sr.err = io.EOF
			return 0, io.EOF
		}
		sr.err = sr.next()
	}
	n := copy(p, sr.plain)
	sr.plain = sr.plain[n:]
	return n, nil
}

// next opens the next frame into sr.plain.
func (sr *sealReader) next() error {
	var hdr [4]byte
	if _, err := io.ReadFull(sr.r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: the sealed stream ends before its last frame", ErrBadBackup)
		}
		return err
	}
	h := binary.LittleEndian.Uint32(hdr[:])
	n := int(h &^ sealLast)
	if n < sr.aead.Overhead() || n > sealChunk+sr.aead.Overhead() {
		return fmt.Errorf("%w: a sealed frame of %d bytes", ErrBadBackup, n)
	}
	if cap(sr.buf) < n {
		sr.buf = make([]byte, n)
	}
	sr.buf = sr.buf[:n]
	if _, err := io.ReadFull(sr.r, sr.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: the sealed stream ends inside a frame", ErrBadBackup)
		}
		return err
	}
	plain, err := sr.aead.Open(sr.buf[:0], sealNonce(sr.aead, sr.index), sr.buf, hdr[:])
	if err != nil {
		return fmt.Errorf("%w: sealed frame %d does not open: %v", ErrBadBackup, sr.index, err)
	}
	sr.index++
	sr.plain = plain
	sr.done = h&sealLast != 0
	return nil
}

// backup writes Badger's backup stream of the store to w, sealed when the
// store has a key.
func (db *DB) backup(ctx context.Context, w io.Writer) error {
	if len(db.opts.EncryptionKey) == 0 {
		_, err := db.bdb.Backup(ctxWriter{ctx, w}, 0)
		return err
	}
	sw, err := newSealWriter(ctxWriter{ctx, w}, db.opts.EncryptionKey)
	if err != nil {
		return err
	}
	if _, err := db.bdb.Backup(sw, 0); err != nil {
		return err
	}
	return sw.Close()
}

package kv

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// Schema, version 1 (every name under PostgresOptions.Schema):
//
//	meta(key text primary key, value bytea)        schema-version, key-check
//	kv(k bytea primary key, v bytea, expires_at bigint)
//	                                               expires_at: Unix seconds, 0 never
//	leases(part bytea primary key, node text, epoch bigint)
//	lease_expiry(part bytea primary key, expires_at timestamptz)
//	                                               apart, so that renewals never
//	                                               touch the rows writes lock
//	nodes(node text primary key, addr text, seen timestamptz, started timestamptz)
//	fence(parts, epochs, node)                     raises EN001 unless node holds
//	                                               every part at its epoch
//	take(part, node, ttl, held)                    takes or extends a lease; EN002
//	                                               if another live node holds it
//
// bytea compares as unsigned bytes, then by length: the primary-key index
// keeps Badger's key order, so prefix scans need no sort.
const pgSchemaVersion = 1

// SQLSTATEs the store's functions raise.
const (
	fenceSQLState = "EN001" // a write without the partition's lease
	heldSQLState  = "EN002" // take: another live node holds the lease
)

// pgMigrations[i] moves the schema from version i to i+1.
var pgMigrations = []string{
	`CREATE TABLE {s}.kv (
		k bytea PRIMARY KEY,
		v bytea NOT NULL,
		expires_at bigint NOT NULL DEFAULT 0
	);
	CREATE INDEX kv_expiring ON {s}.kv (expires_at) WHERE expires_at <> 0;
	CREATE TABLE {s}.leases (
		part bytea PRIMARY KEY,
		node text NOT NULL,
		epoch bigint NOT NULL
	);
	CREATE INDEX leases_node ON {s}.leases (node);
	CREATE TABLE {s}.lease_expiry (
		part bytea PRIMARY KEY,
		expires_at timestamptz NOT NULL
	);
	CREATE TABLE {s}.nodes (
		node text PRIMARY KEY,
		addr text NOT NULL,
		seen timestamptz NOT NULL,
		started timestamptz NOT NULL DEFAULT now()
	);
	CREATE FUNCTION {s}.fence(parts bytea[], epochs bigint[], me text) RETURNS void
	LANGUAGE plpgsql AS $$
	DECLARE n int;
	BEGIN
		SELECT count(*) INTO n FROM (
			SELECT 1 FROM {s}.leases l
			JOIN unnest(parts, epochs) AS h(part, epoch) ON l.part = h.part AND l.epoch = h.epoch
			WHERE l.node = me FOR SHARE OF l) x;
		IF n <> cardinality(parts) THEN
			RAISE EXCEPTION 'a partition lease of node % was taken over', me USING ERRCODE = 'EN001';
		END IF;
	END $$;
	CREATE FUNCTION {s}.take(p bytea, me text, ttl double precision, held bigint) RETURNS bigint
	LANGUAGE plpgsql AS $$
	DECLARE cur_node text; cur_epoch bigint; until timestamptz;
	BEGIN
		-- held is the epoch the caller holds the lease at (0: none): then
		-- only its expiry moves, a row the fence does not lock, so a
		-- renewal never conflicts with a write in flight.
		IF held > 0 THEN
			UPDATE {s}.lease_expiry x SET expires_at = now() + make_interval(secs => ttl)
			FROM {s}.leases l WHERE l.part = p AND x.part = p AND l.node = me AND l.epoch = held;
			IF FOUND THEN
				RETURN held;
			END IF;
		END IF;
		INSERT INTO {s}.leases (part, node, epoch) VALUES (p, me, 0) ON CONFLICT (part) DO NOTHING;
		INSERT INTO {s}.lease_expiry (part, expires_at) VALUES (p, '-infinity') ON CONFLICT (part) DO NOTHING;
		SELECT node, epoch INTO cur_node, cur_epoch FROM {s}.leases WHERE part = p FOR UPDATE;
		SELECT expires_at INTO until FROM {s}.lease_expiry WHERE part = p;
		IF cur_node <> me AND until > now() THEN
			RAISE EXCEPTION '%', cur_node USING ERRCODE = 'EN002', DETAIL = until::text;
		END IF;
		UPDATE {s}.leases SET node = me, epoch = cur_epoch + 1 WHERE part = p;
		UPDATE {s}.lease_expiry SET expires_at = now() + make_interval(secs => ttl) WHERE part = p;
		RETURN cur_epoch + 1;
	END $$;`,
}

// migrate creates the schema or brings it to pgSchemaVersion, under an
// advisory lock so that processes opening the store at once do it once.
func (s *pgStore) migrate(ctx context.Context) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return pgError(err)
	}
	defer tx.Rollback(context.Background())
	h := fnv.New64a()
	h.Write([]byte("engram schema " + s.opts.Schema))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
		return fmt.Errorf("kv: postgres: lock schema: %w", err)
	}
	if _, err := tx.Exec(ctx, s.q.sql(`CREATE SCHEMA IF NOT EXISTS {s};
		CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value bytea NOT NULL)`)); err != nil {
		return fmt.Errorf("kv: postgres: create schema: %w", err)
	}
	version := 0
	var raw []byte
	switch err := tx.QueryRow(ctx, s.q.sql(`SELECT value FROM {s}.meta WHERE key = 'schema-version'`)).Scan(&raw); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("kv: postgres: read schema version: %w", err)
	default:
		if _, err := fmt.Sscanf(string(raw), "%d", &version); err != nil {
			return fmt.Errorf("%w: schema version %q", ErrCorrupt, raw)
		}
	}
	if version > pgSchemaVersion {
		return fmt.Errorf("%w: the schema is version %d; this build knows %d (upgrade Engram)", ErrInvalidOptions, version, pgSchemaVersion)
	}
	for v := version; v < pgSchemaVersion; v++ {
		if _, err := tx.Exec(ctx, s.q.sql(pgMigrations[v])); err != nil {
			return fmt.Errorf("kv: postgres: migrate schema to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, s.q.sql(`INSERT INTO {s}.meta (key, value) VALUES ('schema-version', $1)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`), []byte(fmt.Sprint(pgSchemaVersion))); err != nil {
		return fmt.Errorf("kv: postgres: write schema version: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("kv: postgres: %w", err)
	}
	return nil
}

// keyCheckPlain is sealed under the store's key and kept in meta, so that
// a wrong key, a key given to a store without one and a store with one
// opened without it are told apart at open.
const keyCheckPlain = "engram key check"

func (s *pgStore) checkKey(ctx context.Context) error {
	var stored []byte
	err := s.pool.QueryRow(ctx, s.q.sql(`SELECT value FROM {s}.meta WHERE key = 'key-check'`)).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v := []byte("none")
		if s.seal != nil {
			v = s.seal.seal([]byte("key-check"), []byte(keyCheckPlain))
		}
		// First open: record it, unless a concurrent open did.
		if _, err := s.pool.Exec(ctx, s.q.sql(`INSERT INTO {s}.meta (key, value) VALUES ('key-check', $1) ON CONFLICT DO NOTHING`), v); err != nil {
			return fmt.Errorf("kv: postgres: %w", err)
		}
		return s.checkKey(ctx)
	case err != nil:
		return fmt.Errorf("kv: postgres: %w", err)
	}
	none := string(stored) == "none"
	switch {
	case none && s.seal == nil:
		return nil
	case none:
		return fmt.Errorf("%w: the store is not encrypted; open it without a key", ErrEncryptionKey)
	case s.seal == nil:
		return fmt.Errorf("%w: the store is encrypted; a key is needed", ErrEncryptionKey)
	}
	if p, err := s.seal.open([]byte("key-check"), stored); err != nil || string(p) != keyCheckPlain {
		return fmt.Errorf("%w: the key does not open this store", ErrEncryptionKey)
	}
	return nil
}

// valueSealer seals values with AES-GCM, the key they are stored under as
// additional data, so a value moved to another key does not open.
type valueSealer struct{ aead cipher.AEAD }

func newValueSealer(key []byte) (*valueSealer, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &valueSealer{a}, nil
}

// overhead is how many bytes sealing adds to a value: nonce and tag.
func (v *valueSealer) overhead() int { return v.aead.NonceSize() + v.aead.Overhead() }

// seal returns nonce | ciphertext.
func (v *valueSealer) seal(key, plain []byte) []byte {
	ns := v.aead.NonceSize()
	out := make([]byte, ns, ns+len(plain)+v.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return v.aead.Seal(out, out, plain, key)
}

// open appends the plaintext of a sealed value to dst.
func (v *valueSealer) openTo(dst, key, sealed []byte) ([]byte, error) {
	ns := v.aead.NonceSize()
	if len(sealed) < ns+v.aead.Overhead() {
		return dst, fmt.Errorf("%w: sealed value of key %q is %d bytes", ErrCorrupt, key, len(sealed))
	}
	out, err := v.aead.Open(dst, sealed[:ns], sealed[ns:], key)
	if err != nil {
		return dst, fmt.Errorf("%w: value of key %q does not open with the store's key", ErrCorrupt, key)
	}
	return out, nil
}

func (v *valueSealer) open(key, sealed []byte) ([]byte, error) { return v.openTo(nil, key, sealed) }

package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// heldLease is a lease this node holds.
type heldLease struct {
	epoch uint64
	until time.Time
}

// fencePlan splits the partitions a commit wrote into those this node
// holds (with their epochs: the commit checks them) and those it must
// take in the commit. With ExplicitLeases a partition not held is
// ErrFenced at once.
func (s *pgStore) fencePlan(parts map[string]struct{}) (held map[string]uint64, take [][]byte, err error) {
	if len(parts) == 0 {
		return nil, nil, nil
	}
	s.leases.Lock()
	defer s.leases.Unlock()
	held = make(map[string]uint64, len(parts))
	for p := range parts {
		if l, ok := s.leases.m[p]; ok {
			held[p] = l.epoch
			continue
		}
		if s.opts.ExplicitLeases {
			s.stats.fenced.Add(1)
			return nil, nil, fmt.Errorf("%w: this node (%s) holds no lease on partition %q", ErrFenced, s.opts.Node, p)
		}
		take = append(take, []byte(p))
	}
	sort.Slice(take, func(i, j int) bool { return bytes.Compare(take[i], take[j]) < 0 })
	return held, take, nil
}

// took records a lease taken at epoch by a statement that started at
// start; when this node did not hold it at that epoch it calls OnAcquire.
func (s *pgStore) took(part []byte, epoch uint64, start time.Time) {
	s.leases.Lock()
	old, had := s.leases.m[string(part)]
	s.leases.m[string(part)] = heldLease{epoch: epoch, until: start.Add(s.opts.LeaseTTL)}
	s.leases.Unlock()
	if had && old.epoch == epoch {
		return
	}
	s.stats.acquired.Add(1)
	if epoch > 1 && !had {
		s.stats.takeovers.Add(1)
	}
	if s.opts.OnAcquire != nil {
		s.opts.OnAcquire(part)
	}
}

func (s *pgStore) acquire(ctx context.Context, part []byte) (Lease, error) {
	if len(part) == 0 {
		return Lease{}, ErrEmptyKey
	}
	var epoch int64
	var until time.Time
	s.leases.Lock()
	held := s.leases.m[string(part)].epoch
	s.leases.Unlock()
	start := s.now()
	err := s.pool.QueryRow(ctx, s.q.sql(`SELECT {s}.take($1, $2, $3, $4), now() + make_interval(secs => $3)`),
		part, s.opts.Node, s.opts.LeaseTTL.Seconds(), int64(held)).Scan(&epoch, &until)
	if err != nil {
		return Lease{}, s.heldError(err, part)
	}
	s.took(part, uint64(epoch), start)
	return Lease{Partition: bytes.Clone(part), Node: s.opts.Node, Epoch: uint64(epoch), Expires: until}, nil
}

func (s *pgStore) release(ctx context.Context, part []byte) error {
	s.leases.Lock()
	delete(s.leases.m, string(part))
	s.leases.Unlock()
	_, err := s.pool.Exec(ctx, s.q.sql(`UPDATE {s}.lease_expiry x SET expires_at = '-infinity' FROM {s}.leases l
		WHERE l.part = x.part AND x.part = $1 AND l.node = $2`), part, s.opts.Node)
	return pgError(err)
}

// releaseAll gives up every lease and the heartbeat row (Close).
func (s *pgStore) releaseAll(ctx context.Context) error {
	s.leases.Lock()
	s.leases.m = map[string]heldLease{}
	s.leases.Unlock()
	b := &pgx.Batch{}
	b.Queue(s.q.sql(`UPDATE {s}.lease_expiry x SET expires_at = '-infinity' FROM {s}.leases l WHERE l.part = x.part AND l.node = $1`), s.opts.Node)
	b.Queue(s.q.sql(`DELETE FROM {s}.nodes WHERE node = $1`), s.opts.Node)
	return pgError(s.pool.SendBatch(ctx, b).Close())
}

// dropAll forgets every lease held, calling OnLose for each: the
// database has been out of reach for longer than a lease lasts.
func (s *pgStore) dropAll() {
	s.leases.Lock()
	m := s.leases.m
	s.leases.m = map[string]heldLease{}
	s.leases.Unlock()
	for p := range m {
		s.stats.lost.Add(1)
		if s.opts.OnLose != nil {
			s.opts.OnLose([]byte(p))
		}
	}
}

func (s *pgStore) holds(part []byte) bool {
	if s.opts.Partition == nil {
		return true // nothing is fenced: one process has the store
	}
	s.leases.Lock()
	defer s.leases.Unlock()
	l, ok := s.leases.m[string(part)]
	// Past until, this node has not heard from the database for a whole
	// TTL (it was paused, or cut off): another may own the partition.
	return ok && s.now().Before(l.until)
}

func (s *pgStore) lease(ctx context.Context, part []byte) (Lease, bool, error) {
	l := Lease{Partition: bytes.Clone(part)}
	var epoch int64
	err := s.pool.QueryRow(ctx, s.q.sql(`SELECT l.node, l.epoch, x.expires_at FROM {s}.leases l JOIN {s}.lease_expiry x ON x.part = l.part
		WHERE l.part = $1 AND l.epoch > 0 AND x.expires_at > now()`), part).
		Scan(&l.Node, &epoch, &l.Expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Lease{}, false, nil
	case err != nil:
		return Lease{}, false, pgError(err)
	}
	l.Epoch = uint64(epoch)
	return l, true, nil
}

func (s *pgStore) nodes(ctx context.Context) ([]Node, error) {
	rows, err := s.pool.Query(ctx, s.q.sql(`SELECT node, addr, seen FROM {s}.nodes
		WHERE seen > now() - make_interval(secs => $1) ORDER BY node`), s.opts.LeaseTTL.Seconds())
	if err != nil {
		return nil, pgError(err)
	}
	var out []Node
	for rows.Next() {
		var n Node
		if err := rows.Scan(&n.ID, &n.Addr, &n.Seen); err != nil {
			rows.Close()
			return nil, pgError(err)
		}
		out = append(out, n)
	}
	return out, pgError(rows.Err())
}

// heartbeat writes this node's row.
func (s *pgStore) heartbeat(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, s.q.heartbeat, s.opts.Node, s.opts.Addr)
	return err
}

// renew extends this node's leases and heartbeat in one round trip, and
// drops (calling OnLose) the leases another node took over.
func (s *pgStore) renew(ctx context.Context) error {
	s.leases.Lock()
	parts := make([][]byte, 0, len(s.leases.m))
	asked := make(map[string]uint64, len(s.leases.m))
	for p, l := range s.leases.m {
		parts = append(parts, []byte(p))
		asked[p] = l.epoch
	}
	s.leases.Unlock()
	start := s.now()
	b := &pgx.Batch{}
	b.Queue(s.q.heartbeat, s.opts.Node, s.opts.Addr)
	b.Queue(s.q.sql(`UPDATE {s}.lease_expiry x SET expires_at = now() + make_interval(secs => $3) FROM {s}.leases l
		WHERE l.part = x.part AND l.node = $1 AND x.part = ANY($2::bytea[]) RETURNING x.part, l.epoch`), s.opts.Node, parts, s.opts.LeaseTTL.Seconds())
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	live := map[string]uint64{}
	for rows.Next() {
		var p []byte
		var e int64
		if err := rows.Scan(&p, &e); err != nil {
			rows.Close()
			return err
		}
		live[string(p)] = uint64(e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.stats.renewals.Add(1)
	var lost [][]byte
	s.leases.Lock()
	for _, p := range parts {
		cur, ok := s.leases.m[string(p)]
		if !ok || cur.epoch != asked[string(p)] {
			continue // released, or taken again, meanwhile
		}
		if le, found := live[string(p)]; found && le == cur.epoch {
			cur.until = start.Add(s.opts.LeaseTTL)
			s.leases.m[string(p)] = cur
			continue
		}
		delete(s.leases.m, string(p))
		lost = append(lost, p)
	}
	s.leases.Unlock()
	for _, p := range lost {
		s.stats.lost.Add(1)
		s.opts.Logger.Warn("kv: partition lease taken over by another node", "node", s.opts.Node, "partition", fmt.Sprintf("%q", p))
		if s.opts.OnLose != nil {
			s.opts.OnLose(p)
		}
	}
	return nil
}

func (s *pgStore) renewLoop() {
	defer s.bg.Done()
	t := time.NewTicker(s.opts.LeaseTTL / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.renewNow:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.LeaseTTL/3)
		err := s.renew(ctx)
		cancel()
		if err == nil {
			lastOK = time.Now()
			continue
		}
		s.stats.renewFailures.Add(1)
		s.opts.Logger.Warn("kv: lease renewal failed", "node", s.opts.Node, "err", err)
		if time.Since(lastOK) > s.opts.LeaseTTL {
			// Another node may have taken any of them over by now: stop
			// serving from what this one cached.
			s.dropAll()
		}
	}
}

// sweepInterval is how often expired rows are deleted; reads skip them
// from the second they expire.
const sweepInterval = 30 * time.Second

func (s *pgStore) sweepLoop() {
	defer s.bg.Done()
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), sweepInterval)
		if _, err := s.sweep(ctx); err != nil {
			s.opts.Logger.Warn("kv: sweeping expired keys failed", "err", err)
		}
		cancel()
	}
}

// sweep deletes expired rows in batches and returns how many.
func (s *pgStore) sweep(ctx context.Context) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.q.sql(`DELETE FROM {s}.kv WHERE k = ANY(ARRAY(
			SELECT k FROM {s}.kv WHERE expires_at <> 0 AND expires_at <= $1 LIMIT 1000))`), time.Now().Unix())
		if err != nil {
			return total, pgError(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 1000 {
			return total, nil
		}
	}
}

func (s *pgStore) clusterStats() ClusterStats {
	s.leases.Lock()
	held := len(s.leases.m)
	s.leases.Unlock()
	return ClusterStats{
		Held: held, Acquired: s.stats.acquired.Load(), Takeovers: s.stats.takeovers.Load(),
		Renewals: s.stats.renewals.Load(), Lost: s.stats.lost.Load(), Fenced: s.stats.fenced.Load(),
		RenewFailures: s.stats.renewFailures.Load(),
	}
}

package kv

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Traffic counts what a PostgreSQL store sent to the database since
// [OpenPostgres], background work (lease renewals, heartbeats, sweeps)
// included. A round trip is one request the store waited on: a query, or a
// batch of statements sent together. Dividing the growth of RoundTrips
// over a run of calls by the calls gives their round trips per call, the
// cost that network latency multiplies.
type Traffic struct {
	// RoundTrips counts queries and batches sent.
	RoundTrips uint64
	// Statements counts the SQL statements in them (a batch of BEGIN, a
	// write and a read is three).
	Statements uint64
}

// Traffic returns what the store has sent to the database so far.
func (c *Cluster) Traffic() Traffic { return c.pg.trace.snapshot() }

// pgTrace counts round trips and statements, as a pgx tracer on every
// connection of the pool. Two atomic adds per round trip cost nothing
// beside the round trip itself.
type pgTrace struct {
	roundTrips, statements atomic.Uint64
}

var (
	_ pgx.QueryTracer    = (*pgTrace)(nil)
	_ pgx.BatchTracer    = (*pgTrace)(nil)
	_ pgx.CopyFromTracer = (*pgTrace)(nil)
)

func (t *pgTrace) snapshot() Traffic {
	return Traffic{RoundTrips: t.roundTrips.Load(), Statements: t.statements.Load()}
}

func (t *pgTrace) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.roundTrips.Add(1)
	t.statements.Add(1)
	return ctx
}

func (t *pgTrace) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *pgTrace) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	t.roundTrips.Add(1)
	t.statements.Add(uint64(d.Batch.Len()))
	return ctx
}

func (t *pgTrace) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *pgTrace) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (t *pgTrace) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	t.roundTrips.Add(1)
	t.statements.Add(1)
	return ctx
}

func (t *pgTrace) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

package memory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestPostgresConcurrentFirstWrites: more concurrent Remembers than the pool has connections,
// to a partition this process has not loaded, deadlock: each holds a
// connection in its transaction, and the one loading the partition's
// index (inside its transaction) waits for another connection.
func TestPostgresConcurrentFirstWrites(t *testing.T) {
	dsn, schema := pgTestSchema(t)
	st, err := Open("", &Options{Postgres: &PostgresOptions{DSN: dsn, Schema: schema, Node: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	scope := Scope{Tenant: "acme", User: "alice"}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Remember(ctx, scope, Memory{Text: fmt.Sprintf("memory %d", i)}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package memory

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// BenchmarkUsersPage times what GET /v1/users does for a page, 24 users
// of a tenant with their usage (op=page: Store.UserUsages; op=each:
// Store.Users, then Store.Usage per user), on Badger and on PostgreSQL
// with the same data. Each user has 2 sessions of 40
// messages of about 2 KB and 20 memories, so most records are over the
// 512 bytes a keys-only scan on PostgreSQL brings along with the key
// (issue 26: the page read every value, 2.6 to 4.7 s for 24 users). The
// PostgreSQL rows need ENGRAM_TEST_POSTGRES and report round trips per
// page. Compare the backends with
//
//	go test -run '^$' -bench BenchmarkUsersPage -benchtime 20x -count 5 ./memory/ > out.txt
//	benchstat -col /store out.txt
func BenchmarkUsersPage(b *testing.B) {
	type backend struct {
		name string
		st   *Store
	}
	st, err := Open(b.TempDir(), &Options{Extraction: ExtractOff, SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	backends := []backend{{"badger", st}}
	if os.Getenv("ENGRAM_TEST_POSTGRES") != "" {
		dsn, schema := kvtest.PostgresSchema(b, "mb_")
		st, err := Open("", &Options{Extraction: ExtractOff, SweepInterval: -1, Postgres: &PostgresOptions{DSN: dsn, Schema: schema}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		backends = append(backends, backend{"postgres", st})
	} else {
		b.Log("ENGRAM_TEST_POSTGRES is not set: Badger alone")
	}
	const users = 24
	tenant := Scope{Tenant: "bench"}
	for _, be := range backends {
		for u := range users {
			seedUsagePageUser(b, be.st, Scope{Tenant: tenant.Tenant, User: fmt.Sprintf("user%02d", u)})
		}
	}
	ops := []struct {
		name string
		page func(st *Store) error
	}{
		// What GET /v1/users does: one scan for the page.
		{"page", func(st *Store) error {
			page, err := st.UserUsages(bg, tenant, ListOptions{Limit: users})
			if err == nil && len(page) != users {
				err = fmt.Errorf("%d users", len(page))
			}
			return err
		}},
		// Users, then Usage user by user (engram inspect's way).
		{"each", func(st *Store) error {
			ids, err := st.Users(bg, tenant, ListOptions{Limit: users})
			for _, id := range ids {
				if err == nil {
					_, err = st.Usage(bg, Scope{Tenant: tenant.Tenant, User: id})
				}
			}
			return err
		}},
	}
	for _, op := range ops {
		b.Run("op="+op.name, func(b *testing.B) {
			for _, be := range backends {
				b.Run("store="+be.name, func(b *testing.B) {
					var before kv.Traffic
					c := be.st.Cluster()
					if c != nil {
						before = c.Traffic()
					}
					b.ReportAllocs()
					for b.Loop() {
						if err := op.page(be.st); err != nil {
							b.Fatal(err)
						}
					}
					if c != nil {
						b.ReportMetric(float64(c.Traffic().RoundTrips-before.RoundTrips)/float64(b.N), "roundtrips/op")
					}
				})
			}
		})
	}
}

// seedUsagePageUser writes BenchmarkUsersPage's data for one user.
func seedUsagePageUser(b *testing.B, st *Store, scope Scope) {
	b.Helper()
	for s := range 2 {
		msgs := make([]Message, 40)
		for i := range msgs {
			msgs[i] = user(fmt.Sprintf("turn %d of session %d: %s", i, s, strings.Repeat("the renewal is due in March. ", 70)))
		}
		if err := st.Session(Scope{Tenant: scope.Tenant, User: scope.User, Session: fmt.Sprint("s", s)}).Append(bg, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		var text strings.Builder
		for j := range 40 {
			fmt.Fprintf(&text, "w%dx%d ", i, j)
		}
		if _, err := st.Remember(bg, scope, Memory{Text: text.String()}); err != nil {
			b.Fatal(err)
		}
	}
}

package memory

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// BenchmarkBackends times Recall, Append and Remember on Badger and on
// PostgreSQL in the same run, on stores loaded with the same data: one
// user with 50 sessions of 40 messages, 500 memories and 400 facts, the
// texts taken from the LoCoMo sample when ../shared/data has it. Both
// stores make each write durable before it returns: Badger on disk with
// Sync, PostgreSQL with its fsync and synchronous_commit (on in .ci/run's
// cluster). The PostgreSQL rows need ENGRAM_TEST_POSTGRES and report the
// round trips and statements each op sent (kv.Traffic, background work
// included). Compare the backends with
//
//	benchstat -col /store old.txt
func BenchmarkBackends(b *testing.B) {
	texts, questions := backendBenchTexts()
	type backend struct {
		name string
		st   *Store
	}
	var backends []backend
	st, err := Open(b.TempDir(), &Options{Durability: Sync, Extraction: ExtractOff, SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	backends = append(backends, backend{"badger", st})
	if os.Getenv("ENGRAM_TEST_POSTGRES") != "" {
		dsn, schema := kvtest.PostgresSchema(b, "mb_")
		st, err := Open("", &Options{Durability: Sync, Extraction: ExtractOff, SweepInterval: -1,
			Postgres: &PostgresOptions{DSN: dsn, Schema: schema}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		backends = append(backends, backend{"postgres", st})
	} else {
		b.Log("ENGRAM_TEST_POSTGRES is not set: Badger alone")
	}
	scope := Scope{Tenant: "bench", User: "caroline"}
	for _, be := range backends {
		loadBackendBench(b, be.st, scope, texts)
	}
	// traffic measures the round trips and statements fn sends per op.
	traffic := func(b *testing.B, st *Store, fn func(i int)) {
		var before kv.Traffic
		c := st.Cluster()
		if c != nil {
			before = c.Traffic()
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			fn(i)
			i++
		}
		if c != nil {
			after := c.Traffic()
			b.ReportMetric(float64(after.RoundTrips-before.RoundTrips)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(after.Statements-before.Statements)/float64(b.N), "stmts/op")
		}
	}
	b.Run("op=recall", func(b *testing.B) {
		for _, be := range backends {
			b.Run("store="+be.name, func(b *testing.B) {
				traffic(b, be.st, func(i int) {
					q := Query{Scope: Scope{Tenant: scope.Tenant, User: scope.User, Session: fmt.Sprint("s-", i%50)}, Text: questions[i%len(questions)]}
					if _, err := be.st.Recall(bg, q); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	})
	b.Run("op=append", func(b *testing.B) {
		for _, be := range backends {
			b.Run("store="+be.name, func(b *testing.B) {
				sess := be.st.Session(Scope{Tenant: scope.Tenant, User: scope.User, Session: "appended"})
				traffic(b, be.st, func(i int) {
					if err := sess.Append(bg, user(texts[i%len(texts)])); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	})
	b.Run("op=remember", func(b *testing.B) {
		for _, be := range backends {
			b.Run("store="+be.name, func(b *testing.B) {
				traffic(b, be.st, func(i int) {
					m := Memory{Text: fmt.Sprintf("%s (note %d)", texts[i%len(texts)], i)}
					if _, err := be.st.Remember(bg, scope, m); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	})
}

// loadBackendBench fills st with BenchmarkBackends' data for scope's user.
func loadBackendBench(b *testing.B, st *Store, scope Scope, texts []string) {
	b.Helper()
	r := rand.New(rand.NewPCG(17, 2))
	for s := range 50 {
		msgs := make([]Message, 40)
		for i := range msgs {
			m := user(texts[(s*40+i)%len(texts)])
			if i%2 == 1 {
				m = asst(m.Content)
			}
			msgs[i] = m
		}
		if err := st.Session(Scope{Tenant: scope.Tenant, User: scope.User, Session: fmt.Sprint("s-", s)}).Append(bg, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 500 {
		m := Memory{Text: texts[(i*7)%len(texts)], Importance: r.Float64()}
		if _, err := st.Remember(bg, scope, m); err != nil {
			b.Fatal(err)
		}
	}
	// Facts about the speakers and the capitalised names of the texts.
	var names []string
	seen := map[string]bool{}
	for _, t := range texts {
		for _, w := range strings.Fields(t) {
			w = strings.Trim(w, ".,!?'\"")
			if len(w) > 3 && w[0] >= 'A' && w[0] <= 'Z' && !seen[w] {
				seen[w] = true
				names = append(names, w)
			}
		}
	}
	if len(names) < 20 {
		for i := range 100 {
			names = append(names, fmt.Sprint("Entity", i))
		}
	}
	subjects := []string{"Caroline", "Melanie", "caroline"}
	var facts []graph.Fact
	dup := map[graph.Fact]bool{}
	for len(facts) < 400 {
		f := graph.Fact{Predicate: recallBenchWords[r.IntN(len(recallBenchWords))], Object: names[r.IntN(len(names))]}
		if r.IntN(2) == 0 {
			f.Subject = subjects[r.IntN(len(subjects))]
		} else {
			f.Subject = names[r.IntN(len(names))]
		}
		if f.Subject == f.Object || dup[f] {
			continue
		}
		dup[f] = true
		facts = append(facts, f)
	}
	if _, err := st.ImportGraph(bg, scope, &graph.Dump{Facts: facts}, nil); err != nil {
		b.Fatal(err)
	}
}

// backendBenchTexts returns the turns and questions of the LoCoMo sample,
// or generated ones when it is missing.
func backendBenchTexts() (texts, questions []string) {
	var samples []struct {
		QA []struct {
			Question string `json:"question"`
		} `json:"qa"`
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if raw, err := os.ReadFile("../../shared/data/locomo/locomo-sample.json"); err == nil && json.Unmarshal(raw, &samples) == nil {
		for _, s := range samples {
			for _, qa := range s.QA {
				questions = append(questions, qa.Question)
			}
			for i := 1; ; i++ {
				v, ok := s.Conversation[fmt.Sprint("session_", i)]
				if !ok {
					break
				}
				var turns []struct {
					Text string `json:"text"`
				}
				if json.Unmarshal(v, &turns) == nil {
					for _, t := range turns {
						if t.Text != "" {
							texts = append(texts, t.Text)
						}
					}
				}
			}
		}
	}
	if len(texts) > 0 && len(questions) > 0 {
		return texts, questions
	}
	r := rand.New(rand.NewPCG(3, 4))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = recallBenchWords[r.IntN(len(recallBenchWords))]
		}
		return strings.Join(w, " ")
	}
	texts, questions = texts[:0], questions[:0]
	for range 400 {
		texts = append(texts, "Caroline said the "+words(8+r.IntN(10)))
	}
	for range 100 {
		questions = append(questions, "What did Caroline say about the "+words(3)+"?")
	}
	return texts, questions
}

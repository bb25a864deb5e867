// The cayley side-by-side benchmark, in its own module so that cayley
// v0.7.7 (go 1.12, an unpruned graph of some 190 modules) never enters
// Engram's go.mod; see README.md. The go directive matches the root's.
module github.com/engramdb/engram/bench/cayley

go 1.25.0

require (
	github.com/cayleygraph/cayley v0.7.7
	github.com/cayleygraph/quad v1.1.0
	github.com/engramdb/engram v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/dgraph-io/badger/v4 v4.9.6 // indirect
	github.com/dgraph-io/ristretto/v2 v2.2.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/flatbuffers v25.2.10+incompatible // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.9.2 // indirect
	github.com/jackc/puddle/v2 v2.2.2 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/kljensen/snowball v0.10.0 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	github.com/philippgille/chromem-go v0.7.0 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	github.com/viterin/vek v0.4.3 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.41.0 // indirect
	go.opentelemetry.io/otel/metric v1.41.0 // indirect
	go.opentelemetry.io/otel/trace v1.41.0 // indirect
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/text v0.29.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
)

replace github.com/engramdb/engram => ../..

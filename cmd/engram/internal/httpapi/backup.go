package httpapi

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/backupfile"
	"github.com/engramdb/engram/cmd/engram/internal/transfer"
	"github.com/engramdb/engram/memory"
)

// backup streams a backup of the whole store (GET /v1/admin/backup): the
// file engram backup writes, sealed as it seals it when the store is
// encrypted, so engram restore loads it. Admin tokens only: it holds every
// tenant's data. A client that goes away stops it.
func (h *Handler) backup(w http.ResponseWriter, r *http.Request) error {
	name := "engram-" + time.Now().UTC().Format("20060102T150405Z") + ".backup"
	return h.stream(w, r, "application/octet-stream", name, func(w io.Writer) error {
		return backupfile.Write(r.Context(), h.store, w)
	})
}

// export streams what engram export writes for one tenant (JSONL) or one
// user's graph (N-Quads): GET /v1/admin/export?format=jsonl|nquads
// &tenant=T[&user=U]. Admin tokens only: it names any tenant.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	format, err := exportFormat(q.Get("format"))
	if err != nil {
		return err
	}
	scope := memory.Scope{Tenant: q.Get("tenant"), User: q.Get("user")}
	if scope.Tenant == "" {
		return badRequest("invalid_parameter", "tenant is required: the tenant to export")
	}
	if err := scope.Validate(scope.Level()); err != nil {
		return err
	}
	ctx := r.Context()
	if format == transfer.FormatNQuads {
		if scope.User == "" {
			return badRequest("invalid_parameter", "user is required with format=nquads: an N-Quads export holds one user's graph")
		}
		return h.stream(w, r, "application/n-quads", scope.User+".nq", func(w io.Writer) error {
			return transfer.ExportNQuads(ctx, h.store, scope, w)
		})
	}
	name := scope.Tenant
	if scope.User != "" {
		name = scope.User
	}
	return h.stream(w, r, "application/x-ndjson", name+".jsonl", func(w io.Writer) error {
		_, err := transfer.ExportJSONL(ctx, h.store, scope, w)
		return err
	})
}

// exportFormat parses the format parameter: jsonl (the default) or
// nquads.
func exportFormat(s string) (transfer.Format, error) {
	if s == "" {
		return transfer.FormatJSONL, nil
	}
	f, err := transfer.ParseFormat(s)
	if err != nil {
		return 0, badRequest("invalid_parameter", "format %s is not jsonl or nquads", quote(s))
	}
	return f, nil
}

// stream answers with what fill writes, as an attachment named name. The
// status and headers go out with the first byte, so an error before it is
// answered as JSON like any other. An error after it cannot change the
// status: the response is cut (http.ErrAbortHandler), so that the client
// sees a broken transfer, never a complete-looking short file; the access
// log has the error.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, contentType, name string, fill func(io.Writer) error) error {
	sw := &streamWriter{w: w, start: func(hd http.Header) {
		hd.Set("Content-Type", contentType)
		hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Content-Type-Options", "nosniff")
	}}
	err := fill(sw)
	switch {
	case err == nil:
		sw.begin()
		return nil
	case !sw.started:
		return err
	}
	if info := infoFrom(r.Context()); info != nil {
		info.err = fmt.Errorf("stream cut after %d bytes: %w", sw.n, err)
	}
	panic(http.ErrAbortHandler)
}

// streamWriter sends the status and headers at its first write.
type streamWriter struct {
	w       http.ResponseWriter
	start   func(http.Header)
	started bool
	n       int64
}

func (s *streamWriter) begin() {
	if !s.started {
		s.started = true
		s.start(s.w.Header())
		s.w.WriteHeader(http.StatusOK)
	}
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.begin()
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/engine"
)

// MinTokenLength is the shortest bearer token a tokens file may hold, in
// bytes: 16 random characters of the token alphabet carry up to 96 bits.
// Generate tokens with `openssl rand -hex 32` (256 bits).
const MinTokenLength = 16

// Tokens maps bearer tokens to tenants: each token names exactly one tenant,
// and a tenant may have several tokens (one per client, say). It is read from
// a tokens file, JSON of this shape:
//
//	{
//	  "tokens": [
//	    {"token": "3f9c…64 hex characters…", "tenant": "acme", "name": "ci"},
//	    {"token": "b71e…",                   "tenant": "acme", "name": "desktop"},
//	    {"token": "0d2a…",                   "tenant": "globex"},
//	    {"token": "9e41…",                   "tenant": "acme", "name": "ops", "admin": true}
//	  ]
//	}
//
// A token is at least [MinTokenLength] characters of the RFC 6750 token
// alphabet (letters, digits and -._~+/=); a tenant is an Engram id (see
// [engine.ValidateScopeID]); name is optional and labels the client in access
// logs, which never show tokens.
//
// "admin": true marks an operator's token: besides its tenant's routes it
// may call the store-wide admin routes (GET /v1/admin/backup, /export and
// /stats), which read every tenant's data; any other token gets 403
// admin_required there. An admin token still names a tenant, whose data
// the tenant routes serve it.
//
// Only SHA-256 digests of the tokens are kept in memory, and a lookup compares
// the presented token's digest with every entry in constant time, so neither
// the time taken nor an early exit tells a caller how close a guess was.
//
// A Tokens is immutable and safe for concurrent use.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	tenant string
	name   string
	admin  bool
}

// tokensFile is the JSON shape of a tokens file.
type tokensFile struct {
	Tokens []struct {
		Token  string `json:"token"`
		Tenant string `json:"tenant"`
		Name   string `json:"name,omitempty"`
		Admin  bool   `json:"admin,omitempty"`
	} `json:"tokens"`
}

// LoadTokens reads a tokens file (see [Tokens]). On Unix it refuses a file
// that its group or other users can read or write, with [ErrTokensFileMode]:
// `chmod 600 FILE` fixes it. Other errors wrap [ErrInvalidTokens] or the
// error of reading the file.
func LoadTokens(path string) (*Tokens, error) {
	// A tokens file is small; 1 MiB holds thousands of entries.
	data, err := fileio.ReadPrivate(path, 1<<20)
	switch {
	case errors.Is(err, fileio.ErrNotPrivate):
		return nil, fmt.Errorf("%w: %w", ErrTokensFileMode, err)
	case errors.Is(err, fileio.ErrNotRegular), errors.Is(err, fileio.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", ErrInvalidTokens, err)
	case err != nil:
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	t, err := ParseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTokens parses the JSON of a tokens file (see [Tokens]). Unknown
// fields are an error, so a misspelt "tenant" cannot go unnoticed. An error
// wraps [ErrInvalidTokens] and names every bad entry by its index.
func ParseTokens(data []byte) (*Tokens, error) {
	var file tokensFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTokens, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalidTokens)
	}
	if len(file.Tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInvalidTokens)
	}
	var errs []error
	t := &Tokens{entries: make([]tokenEntry, 0, len(file.Tokens))}
	seen := make(map[[sha256.Size]byte]int, len(file.Tokens))
	for i, e := range file.Tokens {
		if err := checkToken(e.Token); err != nil {
			errs = append(errs, fmt.Errorf("tokens[%d]: token %v", i, err))
		}
		if err := engine.ValidateScopeID(e.Tenant); err != nil {
			errs = append(errs, fmt.Errorf("tokens[%d]: tenant %v", i, err))
		}
		if strings.ContainsFunc(e.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			errs = append(errs, fmt.Errorf("tokens[%d]: name has a control character", i))
		}
		d := sha256.Sum256([]byte(e.Token))
		if j, dup := seen[d]; dup {
			errs = append(errs, fmt.Errorf("tokens[%d]: same token as tokens[%d]", i, j))
		}
		seen[d] = i
		t.entries = append(t.entries, tokenEntry{digest: d, tenant: e.Tenant, name: e.Name, admin: e.Admin})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTokens, errors.Join(errs...))
	}
	return t, nil
}

// checkToken enforces the RFC 6750 b64token alphabet and a minimum length.
func checkToken(tok string) error {
	if len(tok) < MinTokenLength {
		return fmt.Errorf("is %d characters; at least %d are required", len(tok), MinTokenLength)
	}
	for _, c := range []byte(tok) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~+/=", c) >= 0:
		default:
			return fmt.Errorf("has a character outside letters, digits and -._~+/=")
		}
	}
	return nil
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Tenants returns the tenants the tokens name, sorted, each once.
func (t *Tokens) Tenants() []string {
	out := make([]string, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e.tenant)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lookup returns the entry of token. It compares the digest with every entry
// whatever matches, so its time depends only on the number of entries.
func (t *Tokens) lookup(token string) (tokenEntry, bool) {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return tokenEntry{}, false
	}
	return t.entries[found], true
}

type tenantKey struct{}

// adminKey marks, in a request's context, a request authenticated with
// an admin token.
type adminKey struct{}

// Lookup returns the tenant and client name of token, and whether the
// token is valid. Like the API's own check it compares digests in constant
// time; it is for front doors that take a token another way than a bearer
// header (the inspector's login form).
func (t *Tokens) Lookup(token string) (tenant, name string, ok bool) {
	e, ok := t.lookup(token)
	return e.tenant, e.name, ok
}

// Tenant returns the tenant of the bearer token that authenticated the
// request whose context ctx is, or "" for a context that did not come through
// the handler's authentication. Handlers mounted through [Options].MCP read
// it to scope every call: the tenant always comes from the token, never from
// the request.
func Tenant(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 7235).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authenticate resolves the bearer token to a tenant, puts it in the
// request's context and in the access-log record, or answers 401.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	tok, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
		h.writeError(w, r, &apiError{status: http.StatusUnauthorized, code: "unauthorized",
			message: "this call needs an Authorization: Bearer <token> header"})
		return r, false
	}
	e, ok := h.tokens.lookup(tok)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram", error="invalid_token"`)
		h.writeError(w, r, &apiError{status: http.StatusUnauthorized, code: "unauthorized",
			message: "the bearer token is not valid"})
		return r, false
	}
	if info := infoFrom(r.Context()); info != nil {
		info.tenant, info.client = e.tenant, e.name
	}
	ctx := context.WithValue(r.Context(), tenantKey{}, e.tenant)
	if e.admin {
		ctx = context.WithValue(ctx, adminKey{}, true)
	}
	return r.WithContext(ctx), true
}

// isAdmin reports whether the request was authenticated with an admin
// token.
func isAdmin(ctx context.Context) bool {
	ok, _ := ctx.Value(adminKey{}).(bool)
	return ok
}

// errAdminRequired answers an admin route called with a tenant's token.
var errAdminRequired = &apiError{status: http.StatusForbidden, code: "admin_required",
	message: `this route reads the whole store and needs an admin token: mark the token "admin": true in the tokens file and restart the server`}

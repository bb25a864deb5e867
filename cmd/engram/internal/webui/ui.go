package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
)

//go:embed static
var embedded embed.FS

// Prefix is where the inspector lives; every other path goes to the API.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every inspector response: scripts,
// styles and requests to this origin only, no inline code, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// CSRFHeader is the request header that carries a session's CSRF token.
const CSRFHeader = "X-CSRF-Token"

// cookieName names the session cookie.
const cookieName = "engram_ui"

// Defaults of Options.
const (
	// DefaultSessionTTL is how long a session lasts without a request.
	DefaultSessionTTL = 12 * time.Hour
	// DefaultMaxSessions bounds the sessions kept at once; signing in
	// past it ends the session closest to expiring.
	DefaultMaxSessions = 10000
)

// maxLoginBody bounds the login form's body.
const maxLoginBody = 4 << 10

// ErrInvalidOptions is returned by New for bad arguments.
var ErrInvalidOptions = errors.New("webui: invalid options")

// Options configures the inspector. The zero value is usable.
type Options struct {
	// Logger receives sign-ins and refused attempts (never a token);
	// nil discards them. Requests to the API are logged by the API.
	Logger *slog.Logger
	// SessionTTL is how long a session lasts without a request; zero
	// means DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept at once; zero means
	// DefaultMaxSessions.
	MaxSessions int
}

// UI serves the inspector under [Prefix] and hands every other request to
// the API handler it wraps. It is safe for concurrent use.
type UI struct {
	api    http.Handler
	tokens *httpapi.Tokens
	log    *slog.Logger
	ttl    time.Duration
	max    int
	files  map[string]file
	now    func() time.Time // a test seam

	mu struct {
		sync.Mutex
		sessions map[string]*session // by sessionKey of the cookie's id
	}
}

// session is one signed-in browser.
type session struct {
	token   string // the bearer token, kept here and nowhere else
	tenant  string
	csrf    string
	expires time.Time
}

// file is an embedded static file, ready to serve.
type file struct {
	body  []byte
	ctype string
	etag  string
}

// New returns the inspector in front of api (the HTTP API's handler),
// signing people in with tokens.
func New(api http.Handler, tokens *httpapi.Tokens, opts *Options) (*UI, error) {
	if api == nil || tokens == nil {
		return nil, errors.Join(ErrInvalidOptions, errors.New("webui: the API handler and the tokens are required"))
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.SessionTTL < 0 || opts.MaxSessions < 0 {
		return nil, errors.Join(ErrInvalidOptions, errors.New("webui: SessionTTL and MaxSessions must not be negative"))
	}
	u := &UI{api: api, tokens: tokens, log: opts.Logger, ttl: opts.SessionTTL, max: opts.MaxSessions, now: time.Now}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.ttl == 0 {
		u.ttl = DefaultSessionTTL
	}
	if u.max == 0 {
		u.max = DefaultMaxSessions
	}
	u.mu.sessions = map[string]*session{}
	files, err := loadFiles(embedded)
	if err != nil {
		return nil, err
	}
	u.files = files
	return u, nil
}

// loadFiles reads the embedded static files once.
func loadFiles(fsys fs.FS) (map[string]file, error) {
	files := map[string]file{}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		files[strings.TrimPrefix(p, "static/")] = file{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	for _, need := range []string{"index.html", "login.html"} {
		if _, ok := files[need]; err == nil && !ok {
			err = errors.New("webui: static/" + need + " is missing from the build")
		}
	}
	return files, err
}

// ServeHTTP serves the inspector's paths and passes the rest to the API.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/ui" {
		setHeaders(w)
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	if !strings.HasPrefix(p, Prefix) {
		u.api.ServeHTTP(w, r)
		return
	}
	setHeaders(w)
	// One spelling per resource: a path with dot segments, doubled
	// slashes or escaped slashes is refused, not cleaned, so no check
	// below can be walked around.
	if clean(p) != p || (r.URL.RawPath != "" && r.URL.RawPath != p) {
		jsonError(w, http.StatusNotFound, "not_found", "no such page")
		return
	}
	rest := strings.TrimPrefix(p, Prefix)
	switch {
	case rest == "" || rest == "index.html":
		u.servePage(w, r)
	case rest == "login":
		u.serveLogin(w, r)
	case rest == "logout":
		u.serveLogout(w, r)
	case rest == "session":
		u.serveSession(w, r)
	case strings.HasPrefix(rest, "static/"):
		u.serveStatic(w, r, strings.TrimPrefix(rest, "static/"))
	case strings.HasPrefix(rest, "api/"):
		u.serveAPI(w, r, "/"+strings.TrimPrefix(rest, "api/"))
	default:
		jsonError(w, http.StatusNotFound, "not_found", "no such page")
	}
}

// clean is path.Clean keeping a trailing slash.
func clean(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// setHeaders sets the security headers of every inspector response.
func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// servePage serves the application to a signed-in browser and sends
// anyone else to the login form.
func (u *UI) servePage(w http.ResponseWriter, r *http.Request) {
	if !readMethod(w, r) {
		return
	}
	if _, ok := u.session(r); !ok {
		http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
		return
	}
	u.serveFile(w, r, "index.html", true)
}

// serveLogin serves the form (GET) or signs in with the token it posts.
func (u *UI) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		u.serveFile(w, r, "login.html", true)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET or POST")
		return
	}
	if !sameOrigin(r) {
		u.log.Warn("inspector: sign-in from another origin refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"))
		jsonError(w, http.StatusForbidden, "cross_origin", "the request did not come from this site")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		jsonError(w, http.StatusBadRequest, "invalid_form", "the sign-in form could not be read")
		return
	}
	token := r.PostForm.Get("token")
	tenant, name, ok := u.tokens.Lookup(token)
	if !ok {
		u.log.Warn("inspector: sign-in refused: unknown token", "remote", r.RemoteAddr)
		http.Redirect(w, r, Prefix+"login?failed=1", http.StatusSeeOther)
		return
	}
	id := newSecret()
	key := sessionKey(id)
	s := &session{token: token, tenant: tenant, csrf: newSecret(), expires: u.now().Add(u.ttl)}
	u.mu.Lock()
	u.evictLocked()
	u.mu.sessions[key] = s
	u.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: Prefix,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	u.log.Info("inspector: signed in", "tenant", tenant, "client", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// evictLocked drops expired sessions, and when the store of sessions is
// full, the one closest to expiring.
func (u *UI) evictLocked() {
	now := u.now()
	var oldest string
	for k, s := range u.mu.sessions {
		if !now.Before(s.expires) {
			delete(u.mu.sessions, k)
			continue
		}
		if oldest == "" || s.expires.Before(u.mu.sessions[oldest].expires) {
			oldest = k
		}
	}
	if len(u.mu.sessions) >= u.max && oldest != "" {
		delete(u.mu.sessions, oldest)
	}
}

// serveLogout ends the session.
func (u *UI) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	s, ok := u.session(r)
	if !ok {
		http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
		return
	}
	if !u.checkCSRF(w, r, s) {
		return
	}
	if c, err := r.Cookie(cookieName); err == nil {
		u.mu.Lock()
		delete(u.mu.sessions, sessionKey(c.Value))
		u.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// serveSession tells the page its tenant and CSRF token.
func (u *UI) serveSession(w http.ResponseWriter, r *http.Request) {
	if !readMethod(w, r) {
		return
	}
	s, ok := u.session(r)
	if !ok {
		jsonError(w, http.StatusUnauthorized, "unauthorized", "sign in first")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	b, _ := json.Marshal(struct {
		Tenant string `json:"tenant"`
		CSRF   string `json:"csrf"`
	}{s.tenant, s.csrf})
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// serveAPI hands a signed-in browser's request to the API at apiPath,
// with the session's bearer token in place of its cookie.
func (u *UI) serveAPI(w http.ResponseWriter, r *http.Request, apiPath string) {
	if !strings.HasPrefix(apiPath, "/v1/") {
		jsonError(w, http.StatusNotFound, "not_found", "only the /v1/ API is reachable from the inspector")
		return
	}
	s, ok := u.session(r)
	if !ok {
		jsonError(w, http.StatusUnauthorized, "unauthorized", "sign in first")
		return
	}
	if !safeMethod(r.Method) && !u.checkCSRF(w, r, s) {
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = apiPath, ""
	r2.RequestURI = r2.URL.RequestURI()
	r2.Header.Del("Cookie")
	r2.Header.Del(CSRFHeader)
	r2.Header.Set("Authorization", "Bearer "+s.token)
	w.Header().Set("Cache-Control", "no-store")
	u.api.ServeHTTP(w, r2)
}

// serveStatic serves an embedded file.
func (u *UI) serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	if !readMethod(w, r) {
		return
	}
	u.serveFile(w, r, name, false)
}

// serveFile writes an embedded file; HTML is never cached, the rest is
// revalidated by its ETag.
func (u *UI) serveFile(w http.ResponseWriter, r *http.Request, name string, page bool) {
	f, ok := u.files[name]
	if !ok {
		jsonError(w, http.StatusNotFound, "not_found", "no such file")
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	if page {
		h.Set("Cache-Control", "no-store")
	} else {
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		if r.Header.Get("If-None-Match") == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if r.Method == http.MethodHead {
		return
	}
	w.Write(f.body)
}

// session returns the request's live session, extending it.
func (u *UI) session(r *http.Request) (*session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil, false
	}
	key := sessionKey(c.Value)
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.mu.sessions[key]
	if !ok {
		return nil, false
	}
	if !now.Before(s.expires) {
		delete(u.mu.sessions, key)
		return nil, false
	}
	s.expires = now.Add(u.ttl)
	cp := *s
	return &cp, true
}

// checkCSRF answers 403 and returns false unless a state-changing request
// carries the session's CSRF token and comes from this origin.
func (u *UI) checkCSRF(w http.ResponseWriter, r *http.Request, s *session) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		jsonError(w, http.StatusForbidden, "csrf", "the request lacks this page's CSRF token; reload the page")
		return false
	}
	if !sameOrigin(r) {
		jsonError(w, http.StatusForbidden, "cross_origin", "the request did not come from this site")
		return false
	}
	return true
}

// sameOrigin reports whether a browser's request comes from this site: its
// Origin, when sent, names this host, and Sec-Fetch-Site, when sent, is
// not cross-site. A request with neither is not from a browser's page.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		if err != nil || ou.Host == "" || !strings.EqualFold(ou.Host, r.Host) {
			return false
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// readMethod answers 405 and returns false unless the request is GET or HEAD.
func readMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
	return false
}

// newSecret returns 256 random bits, URL-safe.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionKey is what the sessions are kept under: a digest of the
// cookie's id, so a lookup's timing says nothing about stored ids.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return string(sum[:])
}

// jsonError answers in the API's error shape.
func jsonError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

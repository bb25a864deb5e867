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
	"net"
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
	// DefaultMaxSessionAge is how long a session lasts however busy.
	DefaultMaxSessionAge = 7 * 24 * time.Hour
	// DefaultMaxSessions bounds the sessions kept at once: past it a
	// sign-in is refused (503) until sessions end.
	DefaultMaxSessions = 10000
	// MaxSessionsPerToken bounds one token's sessions: signing in past
	// it ends that token's session closest to expiring, so one tenant
	// can neither fill the table nor end another tenant's sessions.
	MaxSessionsPerToken = 50
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
	// Hosts, when set, are the only Host headers the server answers,
	// on every path, the API's included; others get 421. An entry is
	// host:port, or a host name alone, which allows it on any port. It
	// stops a DNS-rebinding page, which reaches a loopback server under
	// a name of its own, from reading the inspector or the routes that
	// need no token (/metrics, /healthz, /openapi.json).
	Hosts []string
	// SecureCookie marks the session cookie Secure (sent over HTTPS
	// only) even when the request did not come over TLS here: for a
	// server behind an HTTPS reverse proxy.
	SecureCookie bool
}

// UI serves the inspector under [Prefix] and hands every other request to
// the API handler it wraps. It is safe for concurrent use.
type UI struct {
	api    http.Handler
	tokens *httpapi.Tokens
	log    *slog.Logger
	ttl    time.Duration
	max    int
	// maxPerToken is MaxSessionsPerToken (a test seam).
	maxPerToken int
	hosts       map[string]bool // empty: any
	secure      bool
	files       map[string]file
	now         func() time.Time // a test seam

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
	created time.Time
	expires time.Time // of idleness; never after created+DefaultMaxSessionAge
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
	u := &UI{api: api, tokens: tokens, log: opts.Logger, ttl: opts.SessionTTL, max: opts.MaxSessions,
		maxPerToken: MaxSessionsPerToken, secure: opts.SecureCookie, now: time.Now}
	if len(opts.Hosts) > 0 {
		u.hosts = map[string]bool{}
		for _, h := range opts.Hosts {
			u.hosts[strings.ToLower(h)] = true
		}
	}
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
	if !u.allowedHost(r.Host) {
		// Every path: a rebinding page could otherwise read /metrics,
		// /healthz and /openapi.json, which need no token (issue 26).
		setHeaders(w)
		jsonError(w, http.StatusMisdirectedRequest, "wrong_host", "this server does not answer for that host name")
		return
	}
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
	// slashes or escaped slashes (or backslashes) is refused, not
	// cleaned, so no check below can be walked around. Other escapes
	// (of '@' or ':' in an id) are the browser's business.
	if ep := strings.ToLower(r.URL.EscapedPath()); clean(p) != p || strings.Contains(ep, "%2f") || strings.Contains(ep, "%5c") {
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
		raw := ""
		if r.URL.RawPath != "" {
			raw = strings.TrimPrefix(r.URL.RawPath, Prefix+"api")
		}
		u.serveAPI(w, r, "/"+strings.TrimPrefix(rest, "api/"), raw)
	default:
		jsonError(w, http.StatusNotFound, "not_found", "no such page")
	}
}

// allowedHost reports whether the server answers for host, a request's
// Host header: any host when Options.Hosts is empty; else one named there,
// as host:port, or as a name alone, which allows it on any port.
func (u *UI) allowedHost(host string) bool {
	if u.hosts == nil {
		return true
	}
	host = strings.ToLower(host)
	if u.hosts[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	return err == nil && u.hosts[name]
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
	// same-origin, not no-referrer: under no-referrer Chrome sends
	// "Origin: null" on the page's own form posts and writes, which the
	// same-origin check must then refuse. No URL here holds a secret.
	h.Set("Referrer-Policy", "same-origin")
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
	now := u.now()
	s := &session{token: token, tenant: tenant, csrf: newSecret(), created: now, expires: now.Add(u.ttl)}
	u.mu.Lock()
	for _, c := range r.Cookies() {
		if c.Name == cookieName {
			// A new sign-in replaces the browser's session.
			delete(u.mu.sessions, sessionKey(c.Value))
		}
	}
	if !u.makeRoomLocked(token) {
		u.mu.Unlock()
		u.log.Warn("inspector: sign-in refused: the session table is full", "tenant", tenant, "client", name, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "60")
		jsonError(w, http.StatusServiceUnavailable, "too_many_sessions", "too many people are signed in; try again later")
		return
	}
	u.mu.sessions[sessionKey(id)] = s
	u.mu.Unlock()
	http.SetCookie(w, u.cookie(r, id))
	u.log.Info("inspector: signed in", "tenant", tenant, "client", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// makeRoomLocked makes room for a session of token: it drops expired
// sessions and, when token has maxPerToken, its own one closest to
// expiring. It reports false when the table is still full (of other
// tokens' live sessions, which it never ends).
func (u *UI) makeRoomLocked(token string) bool {
	now := u.now()
	var own []string
	for k, s := range u.mu.sessions {
		switch {
		case !s.live(now):
			delete(u.mu.sessions, k)
		case s.token == token:
			own = append(own, k)
		}
	}
	for len(own) >= u.maxPerToken {
		oldest := 0
		for i, k := range own {
			if u.mu.sessions[k].expires.Before(u.mu.sessions[own[oldest]].expires) {
				oldest = i
			}
		}
		delete(u.mu.sessions, own[oldest])
		own = append(own[:oldest], own[oldest+1:]...)
	}
	return len(u.mu.sessions) < u.max
}

// live reports whether s may still be used at now.
func (s *session) live(now time.Time) bool {
	return now.Before(s.expires) && now.Before(s.created.Add(DefaultMaxSessionAge))
}

// cookie is the session cookie holding id; an empty id clears it.
func (u *UI) cookie(r *http.Request, id string) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: id, Path: Prefix,
		HttpOnly: true, Secure: u.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode}
	if id == "" {
		c.MaxAge = -1
	}
	return c
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
	http.SetCookie(w, u.cookie(r, ""))
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

// serveAPI hands a signed-in browser's request to the API at apiPath
// (rawPath: its escaped form, when it differs), with the session's bearer
// token in place of its cookie.
func (u *UI) serveAPI(w http.ResponseWriter, r *http.Request, apiPath, rawPath string) {
	if !strings.HasPrefix(apiPath, "/v1/") {
		jsonError(w, http.StatusNotFound, "not_found", "only the /v1/ API is reachable from the inspector")
		return
	}
	if adminPath(apiPath) {
		jsonError(w, http.StatusForbidden, "admin_route", "the admin routes are not reachable from the inspector; call them with the admin token itself")
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
	r2.URL.Path, r2.URL.RawPath = apiPath, rawPath
	r2.RequestURI = r2.URL.RequestURI()
	// The API sees the session's token and nothing of the browser's
	// that could stand for another identity or route: not its cookie,
	// its own Authorization, or forwarding headers.
	for _, h := range []string{"Cookie", CSRFHeader, "X-Engram-Forwarded", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"} {
		r2.Header.Del(h)
	}
	r2.Header.Set("Authorization", "Bearer "+s.token)
	w.Header().Set("Cache-Control", "no-store")
	u.api.ServeHTTP(w, r2)
}

// adminPath reports whether apiPath (unescaped) is under /v1/admin, in any
// case. Those routes are store-wide (a backup or export of every tenant
// for an admin token, compaction and flushes for any): the page uses none
// of them, so a browser signed in with an admin token, or a script in it,
// must not reach them with the session's token.
func adminPath(apiPath string) bool {
	p := strings.ToLower(apiPath)
	return p == "/v1/admin" || strings.HasPrefix(p, "/v1/admin/")
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

// session returns the request's live session, extending it. A request
// with two session cookies has none: a cookie planted from a sibling
// domain must not choose the tenant, or sign the user out by coming first.
func (u *UI) session(r *http.Request) (*session, bool) {
	var id string
	for _, c := range r.Cookies() {
		if c.Name != cookieName {
			continue
		}
		if id != "" {
			return nil, false
		}
		if id = c.Value; id == "" {
			return nil, false
		}
	}
	if id == "" {
		return nil, false
	}
	key := sessionKey(id)
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.mu.sessions[key]
	if !ok {
		return nil, false
	}
	if !s.live(now) {
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

// safeMethod reports whether a request of method m changes nothing, and
// so needs no CSRF token.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead
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

package embedtest

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Hub is a fake Hugging Face Hub for tests of [embed.Pull]: serve it with
// httptest.NewServer and give the server's URL as the endpoint. It answers
// the two requests Pull sends:
//
//   - GET /api/models/{org}/{name}/revision/{revision}: the commit the
//     revision (a commit or a branch) is at, and each file's size and
//     checksums, in the shape of the real Hub's answer with blobs=true.
//     Files whose names end in ".safetensors" are reported as stored with
//     LFS (the SHA-256 of their content), the others by their git blob id,
//     as the Hub's default .gitattributes would have them.
//   - GET /{org}/{name}/resolve/{revision}/{file}: the file, honouring
//     Range requests (206).
//
// Anything else is a 404. It records every request. Its methods let a test
// serve other bytes than it reports, report another checksum, cut a
// download's connection midway, and require a token. A Hub is safe for
// concurrent use.
type Hub struct {
	mu       sync.Mutex
	repos    map[string]*hubRepo
	requests []HubRequest
	cuts     map[string]int64
	stalls   map[string]int64
	token    string
	noRange  bool
}

// HubRequest is one request a [Hub] received.
type HubRequest struct {
	// Path is the request's URL path, as sent (escaped).
	Path string
	// Range and Authorization are those headers, empty when absent.
	Range, Authorization string
}

type hubRepo struct {
	commits  map[string]map[string]*hubFile
	branches map[string]string
}

type hubFile struct {
	served []byte // what a download gets
	size   int64  // what the API reports
	sha256 string
	blobID string
	lfs    bool
}

// NewHub returns an empty Hub.
func NewHub() *Hub {
	return &Hub{repos: map[string]*hubRepo{}, cuts: map[string]int64{}, stalls: map[string]int64{}}
}

// Commit returns a 40-hex-digit commit id made from seed, for tests that
// need several distinct ones.
func Commit(seed string) string {
	s := sha1.Sum([]byte(seed))
	return hex.EncodeToString(s[:])
}

// AddCommit adds commit (40 lowercase hex digits) to the repository
// "org/name" with files, name to content; it reports and serves exactly
// those contents. Adding a commit again replaces its files.
func (h *Hub) AddCommit(repo, commit string, files map[string][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repo]
	if r == nil {
		r = &hubRepo{commits: map[string]map[string]*hubFile{}, branches: map[string]string{}}
		h.repos[repo] = r
	}
	fs := map[string]*hubFile{}
	for name, b := range files {
		sum := sha256.Sum256(b)
		blob := sha1.New()
		fmt.Fprintf(blob, "blob %d\x00", len(b))
		blob.Write(b)
		fs[name] = &hubFile{
			served: bytes.Clone(b),
			size:   int64(len(b)),
			sha256: hex.EncodeToString(sum[:]),
			blobID: hex.EncodeToString(blob.Sum(nil)),
			lfs:    strings.HasSuffix(name, ".safetensors"),
		}
	}
	r.commits[commit] = fs
}

// SetBranch points branch of repo at commit.
func (h *Hub) SetBranch(repo, branch, commit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.repos[repo]; r != nil {
		r.branches[branch] = commit
	}
}

// Tamper makes the Hub serve data for file of repo at commit, while it goes
// on reporting the size and checksums of the content it was added with.
func (h *Hub) Tamper(repo, commit, file string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.file(repo, commit, file); f != nil {
		f.served = bytes.Clone(data)
	}
}

// Report makes the Hub report sha256 (hex) as the SHA-256 of file of repo
// at commit, whatever it serves. Only a file reported as stored with LFS
// has a SHA-256 in the Hub's answer.
func (h *Hub) Report(repo, commit, file, sha256 string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.file(repo, commit, file); f != nil {
		f.sha256 = sha256
	}
}

// CutNext makes the next download of a file named file answer 200 with
// the whole file's Content-Length, send its first n bytes, and close the
// connection.
func (h *Hub) CutNext(file string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cuts[file] = n
}

// StallNext makes the next download of a file named file answer 200 with
// the whole file's Content-Length, send its first n bytes, and then send
// nothing more until the client gives up.
func (h *Hub) StallNext(file string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stalls[file] = n
}

// RequireToken makes the Hub answer 401 to every request without the
// header "Authorization: Bearer token".
func (h *Hub) RequireToken(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.token = token
}

// IgnoreRange makes the Hub answer every download with the whole file
// (200), as a server without Range support does.
func (h *Hub) IgnoreRange() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noRange = true
}

// Requests returns the requests received so far, in order.
func (h *Hub) Requests() []HubRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HubRequest(nil), h.requests...)
}

// file returns a file, nil if there is none. h.mu is held.
func (h *Hub) file(repo, rev, name string) *hubFile {
	r := h.repos[repo]
	if r == nil {
		return nil
	}
	if c, ok := r.branches[rev]; ok {
		rev = c
	}
	return r.commits[rev][name]
}

// commit resolves a revision of repo, "" if unknown. h.mu is held.
func (h *Hub) commit(repo, rev string) string {
	r := h.repos[repo]
	if r == nil {
		return ""
	}
	if c, ok := r.branches[rev]; ok {
		return c
	}
	if _, ok := r.commits[rev]; ok {
		return rev
	}
	return ""
}

// ServeHTTP answers one request.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	h.mu.Lock()
	h.requests = append(h.requests, HubRequest{Path: path, Range: r.Header.Get("Range"), Authorization: r.Header.Get("Authorization")})
	token := h.token
	h.mu.Unlock()
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "Invalid credentials in Authorization header", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if rest, ok := strings.CutPrefix(path, "/api/models/"); ok {
		h.serveRevision(w, rest)
		return
	}
	h.serveFile(w, r, strings.TrimPrefix(path, "/"))
}

// serveRevision answers {org}/{name}/revision/{revision}.
func (h *Hub) serveRevision(w http.ResponseWriter, rest string) {
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) != 4 || parts[2] != "revision" {
		http.NotFound(w, nil)
		return
	}
	repo := parts[0] + "/" + parts[1]
	rev, err := url.PathUnescape(parts[3])
	if err != nil {
		http.NotFound(w, nil)
		return
	}
	h.mu.Lock()
	commit := h.commit(repo, rev)
	type lfs struct {
		SHA256      string `json:"sha256"`
		Size        int64  `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
		Size      int64  `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *lfs   `json:"lfs,omitempty"`
	}
	var siblings []sibling
	if commit != "" {
		for name, f := range h.repos[repo].commits[commit] {
			s := sibling{RFilename: name, Size: f.size, BlobID: f.blobID}
			if f.lfs {
				s.BlobID = Commit("pointer " + f.sha256) // the pointer file's blob
				s.LFS = &lfs{SHA256: f.sha256, Size: f.size, PointerSize: 134}
			}
			siblings = append(siblings, s)
		}
	}
	h.mu.Unlock()
	if commit == "" {
		w.Header().Set("X-Error-Message", "Revision Not Found")
		http.Error(w, `{"error":"Revision Not Found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": repo, "modelId": repo, "sha": commit, "siblings": siblings})
}

// serveFile answers {org}/{name}/resolve/{revision}/{file}.
func (h *Hub) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo, name := parts[0]+"/"+parts[1], parts[4]
	h.mu.Lock()
	commit := h.commit(repo, parts[3])
	var data []byte
	f := h.file(repo, parts[3], name)
	if f != nil {
		data = f.served
	}
	noRange := h.noRange
	cut, isCut := h.cuts[name]
	stall, isStall := h.stalls[name]
	if f != nil {
		delete(h.cuts, name)
		delete(h.stalls, name)
	}
	h.mu.Unlock()
	if f == nil {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	switch {
	case isCut:
		cutConnection(w, data, cut)
		return
	case isStall:
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data[:min(max(stall, 0), int64(len(data)))])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
		return
	}
	if noRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// cutConnection answers 200 with data's length and only its first n bytes,
// then closes the connection.
func cutConnection(w http.ResponseWriter, data []byte, n int64) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot cut this connection", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	n = min(max(n, 0), int64(len(data)))
	bw := bufio.NewWriter(conn)
	fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", len(data))
	bw.Write(data[:n])
	_ = bw.Flush()
	_ = buf // the request was read whole: nothing buffered matters
}

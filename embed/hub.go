package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// DefaultHubEndpoint is the Hugging Face Hub that [Pull] downloads from
// when neither [PullOptions.Endpoint] nor $HF_ENDPOINT says otherwise.
const DefaultHubEndpoint = "https://huggingface.co"

// The environment variables [Pull] reads, as the Hub's own tools do.
const (
	// HubEndpointEnv names the Hub's base URL when
	// [PullOptions.Endpoint] is empty.
	HubEndpointEnv = "HF_ENDPOINT"
	// HubTokenEnv holds the token sent to the Hub when
	// [PullOptions.Token] is empty.
	HubTokenEnv = "HF_TOKEN"
)

// maxHubInfoBytes bounds the Hub's answer about a revision: its list of
// files, a few hundred bytes each.
const maxHubInfoBytes = 16 << 20

// hubClient talks to a Hugging Face Hub: the revision API and the file
// downloads.
type hubClient struct {
	endpoint string // no trailing slash
	token    string // sent as a bearer token when not empty
	client   *http.Client
}

// hubRevision is the part of the Hub's answer to GET
// /api/models/{repo}/revision/{revision}?blobs=true that [Pull] uses (the
// shape huggingface_hub's ModelInfo reads): the commit the revision is at,
// and per file its size, its git blob id and, for a file stored with LFS,
// the SHA-256 of its content.
type hubRevision struct {
	SHA      string       `json:"sha"`
	Siblings []hubSibling `json:"siblings"`
}

type hubSibling struct {
	RFilename string  `json:"rfilename"`
	Size      *int64  `json:"size"`
	BlobID    string  `json:"blobId"`
	LFS       *hubLFS `json:"lfs"`
}

type hubLFS struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// revision asks the Hub which commit revision of repo is at, and about its
// files.
func (h *hubClient) revision(ctx context.Context, repo, revision string) (*hubRevision, error) {
	u := h.endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(revision) + "?blobs=true"
	resp, err := h.get(ctx, u, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, hubStatusError(resp, repo+"@"+revision)
	}
	var info hubRevision
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxHubInfoBytes)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%w: %s@%s: decode the Hub's answer: %w", ErrHub, repo, revision, err)
	}
	info.SHA = strings.ToLower(info.SHA)
	if !commitRE.MatchString(info.SHA) {
		return nil, fmt.Errorf("%w: %s@%s: the Hub gave no commit (sha %q)", ErrHub, repo, revision, info.SHA)
	}
	if commitRE.MatchString(strings.ToLower(revision)) && info.SHA != strings.ToLower(revision) {
		return nil, fmt.Errorf("%w: %s: asked for commit %s, the Hub answered for %s", ErrHub, repo, revision, info.SHA)
	}
	return &info, nil
}

// sibling returns the Hub's entry for path, nil if it has none.
func (r *hubRevision) sibling(path string) *hubSibling {
	for i := range r.Siblings {
		if r.Siblings[i].RFilename == path {
			return &r.Siblings[i]
		}
	}
	return nil
}

// download starts the download of path at commit from byte offset on (a
// Range request when offset > 0). The caller closes the body. The answer
// is 200 (the whole file) or 206 (from offset); anything else is an error.
func (h *hubClient) download(ctx context.Context, repo, commit, path string, offset int64) (*http.Response, error) {
	u := h.endpoint + "/" + repo + "/resolve/" + commit + "/" + path
	rng := ""
	if offset > 0 {
		rng = "bytes=" + strconv.FormatInt(offset, 10) + "-"
	}
	resp, err := h.get(ctx, u, rng)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		defer resp.Body.Close()
		return nil, hubStatusError(resp, repo+"@"+commit+" "+path)
	}
	return resp, nil
}

// get sends a GET with the token and, when rng is not empty, a Range
// header. Go's client keeps both across the Hub's redirect to its file
// storage, but drops the token when the redirect leaves the Hub's host.
func (h *hubClient) get(ctx context.Context, u, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	req.Header.Set("User-Agent", "engram")
	// A transport error (a *url.Error) names the method and the URL.
	return h.client.Do(req)
}

// hubStatusError describes an error answer of the Hub, with a hint for
// the statuses a user can act on.
func hubStatusError(resp *http.Response, what string) error {
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		msg = strings.TrimSpace(string(b))
	}
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (a gated or private model needs a token in $" + HubTokenEnv + ")"
	case http.StatusNotFound:
		hint = " (no such repository, revision or file)"
	}
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Errorf("%w: %s: %s%s%s", ErrHub, what, resp.Status, msg, hint)
}

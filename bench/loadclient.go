package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxAnswerBytes bounds an answer the load client reads: a page of 1000
// messages of the load's size is about 300 KB.
const maxAnswerBytes = 64 << 20

// loadClient sends the load's requests to one loopback server. It is safe
// for concurrent use.
type loadClient struct {
	base string // the server's root, without a trailing slash
	auth string // the Authorization header
	http *http.Client
}

// newLoadClient returns a client of the server at baseURL, or an error
// wrapping ErrNotLoopback when its host is not loopback. conns is how many
// requests may run at once: the transport keeps that many idle
// connections, where net/http's default of two would make every other
// request open a new connection and, over a long run, fill the loopback's
// ports with TIME_WAIT sockets.
func newLoadClient(baseURL, token string, conns int, timeout time.Duration) (*loadClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: base URL: %v", ErrInvalidOptions, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: base URL %q is not http(s)://HOST:PORT[/PATH]", ErrInvalidOptions, baseURL)
	}
	if h := u.Hostname(); h != "localhost" {
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: %q (use 127.0.0.1, [::1] or localhost)", ErrNotLoopback, h)
		}
	}
	dialer := &net.Dialer{
		Timeout: 5 * time.Second,
		// Checked on every connection, after name resolution: localhost
		// that resolves elsewhere is refused too.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !ap.Addr().IsLoopback() {
				return fmt.Errorf("%w: connection to %s", ErrNotLoopback, address)
			}
			return nil
		},
	}
	tr := &http.Transport{
		Proxy:               nil, // never through a proxy
		DialContext:         dialer.DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
	}
	return &loadClient{
		base: strings.TrimSuffix(u.String(), "/"),
		auth: "Bearer " + token,
		http: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			// A redirect could lead off the loopback; an answer is
			// expected, never a redirect.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// close closes the idle connections, so no goroutine of the transport
// outlives the run.
func (c *loadClient) close() { c.http.CloseIdleConnections() }

// post sends body as JSON and returns the answer, or an error when the
// status is not want.
func (c *loadClient) post(ctx context.Context, path string, body any, want int) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodPost, path, b, want)
}

// get returns the answer to a GET of path, or an error when the status is
// not 200.
func (c *loadClient) get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil, http.StatusOK)
}

func (c *loadClient) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		e := &statusError{status: resp.StatusCode}
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(answer, &eb) == nil && eb.Error.Code != "" {
			e.code, e.message = eb.Error.Code, eb.Error.Message
		} else {
			e.message = string(answer[:min(len(answer), 200)])
		}
		return nil, e
	}
	return answer, nil
}

// statusError is an answer with an unexpected status.
type statusError struct {
	status        int
	code, message string
}

func (e *statusError) Error() string {
	if e.code == "" {
		return fmt.Sprintf("status %d: %q", e.status, e.message)
	}
	return fmt.Sprintf("status %d %s: %s", e.status, e.code, e.message)
}

// shapeError is a 2xx answer that is not what the API documents.
type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

func decodeJSON(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return &shapeError{fmt.Sprintf("answer is not the documented JSON: %v", err)}
	}
	return nil
}

// errorKind classifies a failed request for [LoadResult.ErrorKinds]:
// "409 conflict", "transport timeout", "bad answer" and so on.
func errorKind(err error) string {
	var se *statusError
	var sh *shapeError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return strings.TrimSpace(fmt.Sprintf("%d %s", se.status, se.code))
	case errors.As(err, &sh):
		return "bad answer"
	case errors.Is(err, ErrNotLoopback):
		return "transport not loopback"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "transport connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "transport connection reset"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "transport out of ports"
	case errors.As(err, &ne) && ne.Timeout():
		return "transport timeout"
	}
	return "transport other"
}

// sessionPath is the path of a session's messages.
func sessionPath(user, session string) string {
	return "/v1/users/" + url.PathEscape(user) + "/sessions/" + url.PathEscape(session) + "/messages"
}

// maxDrain bounds how long drain waits for the extraction backlog.
const maxDrain = 10 * time.Minute

// drain returns the server's extraction backlog (-1 when it will not
// say) and how long flushing it took (zero when it will not flush): the
// backlog a load leaves behind and the time the server needs to catch up.
func (c *loadClient) drain(ctx context.Context) (backlog int, took time.Duration, err error) {
	backlog = -1
	if body, err := c.get(ctx, "/v1/admin/stats"); err == nil {
		var st struct {
			Extraction struct{ Pending, Retrying int } `json:"extraction"`
		}
		if decodeJSON(body, &st) == nil {
			backlog = st.Extraction.Pending + st.Extraction.Retrying
		}
	}
	began := time.Now()
	for time.Since(began) < maxDrain {
		_, err := c.do(ctx, http.MethodPost, "/v1/admin/flush", nil, http.StatusNoContent)
		var se *statusError
		switch {
		case err == nil:
			return backlog, time.Since(began), nil
		case ctx.Err() != nil:
			return 0, 0, ctx.Err()
		case errors.As(err, &se) && se.status == http.StatusServiceUnavailable:
			continue // the flush's own deadline passed with work left: ask again
		}
		return backlog, 0, nil // no flush on this server
	}
	return backlog, time.Since(began), fmt.Errorf("extraction backlog not drained after %v", maxDrain)
}

// BackgroundUse is what one kind of the server's background work did in a
// load's timed phase.
type BackgroundUse struct {
	// Work is the kind: "extract", "sweep" or "snapshot".
	Work string
	// Busy is the time it worked (wall clock: its CPU is at most this),
	// and Paused the time it stood aside for requests.
	Busy, Paused time.Duration
}

// background reads the server's background work counters from /metrics:
// for each kind, its busy and paused seconds. Nil when the server does
// not publish them.
func (c *loadClient) background(ctx context.Context) map[string][2]float64 {
	body, err := c.get(ctx, "/metrics")
	if err != nil {
		return nil
	}
	return parseBackground(string(body))
}

// backgroundMetrics are the counters background reads, in BackgroundUse's
// order.
var backgroundMetrics = [2]string{"engram_background_busy_seconds_total", "engram_background_paused_seconds_total"}

// parseBackground picks the background counters out of a Prometheus text
// exposition: lines such as
//
//	engram_background_busy_seconds_total{work="extract"} 1.25
func parseBackground(text string) map[string][2]float64 {
	var out map[string][2]float64
	for line := range strings.Lines(text) {
		for i, name := range backgroundMetrics {
			rest, ok := strings.CutPrefix(line, name+`{work="`)
			if !ok {
				continue
			}
			work, value, ok := strings.Cut(rest, `"} `)
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if !ok || err != nil {
				continue
			}
			if out == nil {
				out = map[string][2]float64{}
			}
			e := out[work]
			e[i] = v
			out[work] = e
		}
	}
	return out
}

// backgroundUse returns what each kind of background work did between two
// readings, in name order; nil when either is missing.
func backgroundUse(before, after map[string][2]float64) []BackgroundUse {
	if before == nil || after == nil {
		return nil
	}
	var out []BackgroundUse
	for _, work := range slices.Sorted(maps.Keys(after)) {
		a, b := after[work], before[work]
		out = append(out, BackgroundUse{Work: work,
			Busy:   time.Duration((a[0] - b[0]) * float64(time.Second)),
			Paused: time.Duration((a[1] - b[1]) * float64(time.Second))})
	}
	return out
}

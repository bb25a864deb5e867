package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/fileio"
)

// Helpers of the commands that reach a running server instead of a store
// (backup, export and inspect --url): the admin routes of its HTTP API.

// defaultTokenEnv is the variable --token-env names by default.
const defaultTokenEnv = "ENGRAM_TOKEN"

// errNotAdmin is returned when the server refuses the token on an admin
// route (403 admin_required).
var errNotAdmin = errors.New(`the token is not an admin token: mark it "admin": true in the tokens file and restart the server`)

// remoteFlags are --url and --token-env.
type remoteFlags struct {
	url      string
	tokenEnv string
}

func (f *remoteFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "", "a running engram serve to read through its admin routes (http://HOST:PORT), instead of --dir or --postgres")
	cmd.Flags().StringVar(&f.tokenEnv, "token-env", defaultTokenEnv, "with --url: the environment variable that holds an admin token (the token itself never goes on the command line)")
}

// set reports whether --url is given.
func (f *remoteFlags) set() bool { return f.url != "" }

// check refuses --url beside the flags that name a store, and a URL or
// token that cannot work.
func (f *remoteFlags) check(cmd *cobra.Command) error {
	var errs []error
	for _, name := range []string{"dir", "postgres", "postgres-schema", "encryption-key-file"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			errs = append(errs, fmt.Errorf("--url reads a running server: --%s does not go with it", name))
		}
	}
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--url %q: want http://HOST:PORT or https://HOST:PORT", f.url))
	}
	return errors.Join(errs...)
}

// checkLocal refuses --token-env on a command that opens a store itself:
// the token would be silently left unused.
func (f *remoteFlags) checkLocal(cmd *cobra.Command) error {
	if cmd.Flags().Changed("token-env") {
		return errors.New("--token-env needs --url")
	}
	return nil
}

// get sends GET path?query to the server with the token and returns the
// response, whose body the caller closes; an answer other than 200 is an
// error that says what to do.
func (f *remoteFlags) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	token := os.Getenv(f.tokenEnv)
	if token == "" {
		return nil, fmt.Errorf("no token: $%s is empty; put an admin token there (or name another variable with --token-env)", f.tokenEnv)
	}
	u := strings.TrimSuffix(f.url, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, remoteError(resp, f.tokenEnv)
}

// remoteError turns an answer other than 200 into an error: the API's
// JSON envelope, with what to do for the token's refusals.
func remoteError(resp *http.Response, tokenEnv string) error {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(data, &body)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("the server refused the token in $%s (401): it is not in the server's tokens file", tokenEnv)
	case resp.StatusCode == http.StatusForbidden && body.Error.Code == "admin_required":
		return errNotAdmin
	case body.Error.Message != "":
		return fmt.Errorf("the server answered %d %s: %s", resp.StatusCode, body.Error.Code, body.Error.Message)
	case resp.StatusCode == http.StatusNotFound:
		return errors.New("the server answered 404: it has no admin routes (an older engram serve?)")
	}
	return fmt.Errorf("the server answered %s", resp.Status)
}

// download writes the body of GET path?query to out (- for w),
// atomically for a file: nothing is left at out unless the whole body
// arrived. It returns the bytes written.
func (f *remoteFlags) download(ctx context.Context, path string, query url.Values, out string, perm os.FileMode, w io.Writer, check func(io.Reader) (io.Reader, error)) (int64, error) {
	resp, err := f.get(ctx, path, query)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n int64
	copyBody := func(dst io.Writer) error {
		src, err := check(resp.Body)
		if err != nil {
			return err
		}
		n, err = io.Copy(dst, src)
		if err != nil {
			return fmt.Errorf("the transfer broke off after %d bytes: %w", n, err)
		}
		return nil
	}
	if out == "-" {
		return n, copyBody(w)
	}
	return n, fileio.WriteAtomicMode(out, perm, copyBody)
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// Listener returns ln with its connections wrapped so that the errors
// net/http answers by itself, before any handler runs, reach the client in
// the API's JSON error shape instead of as text/plain: 431 for request
// headers past http.Server.MaxHeaderBytes (code headers_too_large), 400 for
// a request it cannot parse (bad_request), 501 for an unknown transfer
// coding (not_implemented). Serve the [Handler] on it:
//
//	srv.Serve(httpapi.Listener(ln))
//
// net/http writes those answers straight to the connection, in one write
// and with headers no handler's answer can have (Content-Type before
// Connection, and no Date), which is how the wrapper knows them; every
// other byte passes through untouched.
func Listener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

// jsonErrorConn rewrites net/http's plain-text error answers.
type jsonErrorConn struct{ net.Conn }

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if b, ok := jsonServerError(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite passes through to the connection, which net/http uses to
// let a client read the 431 before the connection closes.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// The start and the headers of net/http's own error answers (net/http's
// conn.serve: "HTTP/1.1 " + status + errorHeaders + text).
const (
	plainPrefix  = "HTTP/1.1 "
	plainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
)

// jsonServerError returns the JSON answer for p when p is one of
// net/http's plain-text error answers.
func jsonServerError(p []byte) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte(plainPrefix)) {
		return nil, false
	}
	i := bytes.Index(p, []byte(plainHeaders))
	if i < 0 {
		return nil, false
	}
	statusLine := p[len(plainPrefix):i]
	if len(statusLine) < 4 || bytes.Contains(statusLine, []byte("\r\n")) || statusLine[3] != ' ' {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	text := string(p[i+len(plainHeaders):])
	code := "bad_request"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		code = "headers_too_large"
		text = "the request's headers are larger than this server accepts"
	case http.StatusNotImplemented:
		code = "not_implemented"
	}
	body, err := json.Marshal(errorBody{Error: errorDetail{Code: code, Message: text}})
	if err != nil {
		return nil, false
	}
	body = append(body, '\n')
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		status, http.StatusText(status), len(body))
	return append(out, body...), true
}

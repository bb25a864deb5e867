package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxErrorText bounds the text of a tool error and the message of a
// protocol error. The SDK's schema validation and its unknown-tool error
// quote the value they refuse whole (a 1 MiB kind came back in a 1 MiB
// error, issue 26); cut here, an error keeps its explanation and about the
// first 100 bytes of the value.
const maxErrorText = 200

// boundErrors is a receiving middleware that cuts long tool errors and
// protocol error messages to maxErrorText bytes, and names a null value
// the schema validation refused "null" (see nullText).
func boundErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			werr.Message = cut(nullText(werr.Message))
		} else if err != nil && (len(err.Error()) > maxErrorText || strings.Contains(err.Error(), invalidValue)) {
			err = errors.New(cut(nullText(err.Error())))
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					tc.Text = cut(nullText(tc.Text))
				}
			}
		}
		return res, err
	}
}

// cut returns s, or its first maxErrorText bytes (at a character
// boundary) and the size of the whole.
func cut(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	n := maxErrorText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes in all)", s[:n], len(s))
}

package transfer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The comment that opens an N-Quads file of Engram's says whose graph it
// is. N-Quads has no place for that in its quads (graph labels name facts),
// and other RDF tools skip comments.
const (
	headerUser   = "# engram:user "
	headerShared = "# engram:shared"
)

// graphOwner is whose graph a file holds.
type graphOwner struct {
	known  bool   // the file says (or the caller said)
	user   string // "" with known: the tenant's shared graph
	line   int    // the header's line, 0 when none
	shared bool
}

// writeHeader writes the comment for the graph of user ("": shared).
func writeHeader(w io.Writer, user string) error {
	if user == "" {
		_, err := io.WriteString(w, headerShared+"\n")
		return err
	}
	q, _ := json.Marshal(user) // a string always marshals
	_, err := fmt.Fprintf(w, "%s%s\n", headerUser, q)
	return err
}

// readHeader looks for the owner comment among the comment and blank lines
// that open r, and stops at the first quad.
func readHeader(r io.Reader) (graphOwner, error) {
	lr := newLineReader(r)
	var o graphOwner
	for {
		b, err := lr.next()
		if err == io.EOF {
			return o, nil
		}
		if err != nil {
			return o, err
		}
		s := strings.TrimSpace(string(b))
		switch {
		case s == "":
			continue
		case !strings.HasPrefix(s, "#"):
			return o, nil
		case strings.HasPrefix(s, headerUser):
			var user string
			if err := json.NewDecoder(strings.NewReader(s[len(headerUser):])).Decode(&user); err != nil || user == "" {
				return o, fmt.Errorf("line %d: %q: want %s\"USER\"", lr.line, s, headerUser)
			}
			if err := checkID("user", user); err != nil {
				return o, fmt.Errorf("line %d: %w", lr.line, err)
			}
			if o.known {
				return o, fmt.Errorf("line %d: a second %q line (the first is line %d)", lr.line, "# engram:", o.line)
			}
			o = graphOwner{known: true, user: user, line: lr.line}
		case s == headerShared:
			if o.known {
				return o, fmt.Errorf("line %d: a second %q line (the first is line %d)", lr.line, "# engram:", o.line)
			}
			o = graphOwner{known: true, shared: true, line: lr.line}
		case strings.HasPrefix(s, "# engram:"):
			return o, fmt.Errorf("line %d: unknown directive %q (want %s\"USER\" or %s)", lr.line, s, headerUser, headerShared)
		}
	}
}

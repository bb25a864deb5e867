package engine

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength is the longest tenant, user, agent or session id, in bytes.
const MaxIDLength = 256

// Scope says whose data a call reads or writes. Tenant is a hard partition:
// it is the first component of every key and no call reads across it. User
// owns long-term data; Session is one conversation thread; Agent marks which
// agent wrote something and never narrows a key.
//
// Ids must be valid UTF-8 of at most [MaxIDLength] bytes without control
// characters, and pass [ValidateScopeID]; which ids are required depends on
// the [Level] of the call.
type Scope struct {
	Tenant  string
	User    string
	Agent   string
	Session string
}

// Level is the depth of the key space a call works on.
type Level int

const (
	// LevelTenant needs Tenant.
	LevelTenant Level = iota + 1
	// LevelUser needs Tenant and User.
	LevelUser
	// LevelSession needs Tenant, User and Session.
	LevelSession
)

// String returns "tenant", "user" or "session".
func (l Level) String() string {
	switch l {
	case LevelTenant:
		return "tenant"
	case LevelUser:
		return "user"
	case LevelSession:
		return "session"
	default:
		return fmt.Sprintf("Level(%d)", int(l))
	}
}

// Level returns the deepest level the scope names: session if Session is
// set, user if User is, tenant otherwise. It does not validate.
func (s Scope) Level() Level {
	switch {
	case s.Session != "":
		return LevelSession
	case s.User != "":
		return LevelUser
	default:
		return LevelTenant
	}
}

// Validate checks the scope for a call at level l: the ids that level needs
// are present, and every id that is set is well formed. Errors wrap
// [ErrInvalidScope] and name the field.
func (s Scope) Validate(l Level) error {
	fields := [...]struct {
		name, value string
		required    bool
	}{
		{"Tenant", s.Tenant, true},
		{"User", s.User, l >= LevelUser},
		{"Session", s.Session, l >= LevelSession},
		{"Agent", s.Agent, false},
	}
	for _, f := range fields {
		if f.value == "" {
			if f.required {
				return fmt.Errorf("%w: %s is empty (a %s call needs it)", ErrInvalidScope, f.name, l)
			}
			continue
		}
		if err := ValidateScopeID(f.value); err != nil {
			return fmt.Errorf("%w: %s %w", ErrInvalidScope, f.name, err)
		}
	}
	if s.Session != "" && s.User == "" {
		return fmt.Errorf("%w: Session %q has no User", ErrInvalidScope, s.Session)
	}
	return nil
}

// ValidateID reports why id cannot be used as an id, or nil. An id is
// non-empty valid UTF-8 of at most [MaxIDLength] bytes without control
// characters. The key layout relies on the last rule: control bytes are the
// separators and namespace tags.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("is empty")
	case len(id) > MaxIDLength:
		return fmt.Errorf("is %d bytes; the limit is %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return fmt.Errorf("%q is not valid UTF-8", id)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%q has a control character at byte %d", id, i)
		}
	}
	return nil
}

// ValidateScopeID reports why id cannot be a tenant, user, agent or session
// id, or nil. On top of [ValidateID] it refuses what would let one id pass
// for another where ids travel:
//
//   - "." and "..", and any id holding '/': an HTTP path or a file path
//     resolves them away, so "/v1/users/..%2Fevil" would name one user to
//     a router and another to a reader of the path;
//   - invisible format characters (Unicode category Cf): the bidirectional
//     embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069,
//     the marks U+200E, U+200F and U+061C, the zero-width characters
//     U+200B–U+200D, U+2060 and U+FEFF, the soft hyphen U+00AD, and the
//     rest of the category. They render as nothing, or reorder what
//     follows, so "alice\u202e" shows as "alice" in a log or a listing.
//
// Tags, metadata keys and tool names are checked with [ValidateID] alone:
// "project/x" is an ordinary tag.
func ValidateScopeID(id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	switch {
	case id == "." || id == "..":
		return fmt.Errorf("%q is a path component (. and .. are not ids)", id)
	case strings.Contains(id, "/"):
		return fmt.Errorf("%q has a '/' at byte %d", id, strings.IndexByte(id, '/'))
	}
	for i, r := range id {
		if unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%+q has the invisible format character %U at byte %d", id, r, i)
		}
	}
	return nil
}

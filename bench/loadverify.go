package bench

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// verifyPageSize is the limit of each listing Verify reads: the API's
// largest (httpapi.MaxPageSize). Tests lower it to exercise paging.
var verifyPageSize = 1000

// maxVerifyExamples bounds Verification.Examples.
const maxVerifyExamples = 10

// Ack is an acknowledged append: a message the server answered 201 for,
// with the id it gave the message and the content sent.
type Ack struct {
	User, Session, ID, Content string
}

// Verification is what [Verify] found.
type Verification struct {
	// Acknowledged is how many appends were checked; Verified how many
	// were listed under their id with the content sent.
	Acknowledged int `json:"acknowledged"`
	Verified     int `json:"verified"`
	// Missing counts acknowledged ids absent from their session's
	// listing; Changed those listed with other content.
	Missing int `json:"missing"`
	Changed int `json:"changed"`
	// Examples name up to ten of the missing or changed messages.
	Examples []string `json:"examples,omitempty"`
	// Stored is how many messages the listings of the sessions held in
	// all: more than Acknowledged when a request failed on the client
	// (a timeout, say) after the server committed it.
	Stored int `json:"stored"`
}

// Err returns nil when every acknowledged append was verified, and
// otherwise an error wrapping [ErrLoadFailed] that counts what was not.
func (v *Verification) Err() error {
	if p := v.problem(); p != "" {
		return fmt.Errorf("%w: %s", ErrLoadFailed, p)
	}
	return nil
}

// problem says what was not read back, or "".
func (v *Verification) problem() string {
	if v.Verified == v.Acknowledged {
		return ""
	}
	return fmt.Sprintf("%d of %d acknowledged appends not read back (%d missing, %d changed; %s)",
		v.Acknowledged-v.Verified, v.Acknowledged, v.Missing, v.Changed, strings.Join(v.Examples, ", "))
}

// Verify lists, through the API of the loopback server at baseURL, every
// session that acks name, and checks that each ack's message is there
// with the content sent. It returns an error when a listing fails (or
// with [ErrNotLoopback] or [ErrInvalidOptions] for a bad baseURL); a
// message not read back is counted in the Verification, whose Err says
// whether all were.
func Verify(ctx context.Context, baseURL, token string, acks []Ack) (Verification, error) {
	c, err := newLoadClient(baseURL, token, 1, defaultRequestTimeout)
	if err != nil {
		return Verification{}, err
	}
	defer c.close()
	return c.verify(ctx, acks)
}

func (c *loadClient) verify(ctx context.Context, acks []Ack) (Verification, error) {
	type session struct{ user, id string }
	bySession := map[session][]Ack{}
	var order []session // sessions in first-ack order, for stable examples
	for _, a := range acks {
		s := session{a.User, a.Session}
		if bySession[s] == nil {
			order = append(order, s)
		}
		bySession[s] = append(bySession[s], a)
	}
	v := Verification{Acknowledged: len(acks)}
	for _, s := range order {
		stored, err := c.listMessages(ctx, s.user, s.id)
		if err != nil {
			return v, fmt.Errorf("verify: list %s/%s: %w", s.user, s.id, err)
		}
		v.Stored += len(stored)
		for _, a := range bySession[s] {
			content, ok := stored[a.ID]
			switch {
			case ok && content == a.Content:
				v.Verified++
				continue
			case ok:
				v.Changed++
			default:
				v.Missing++
			}
			if len(v.Examples) < maxVerifyExamples {
				what := "missing"
				if ok {
					what = "changed"
				}
				v.Examples = append(v.Examples, fmt.Sprintf("%s/%s/%s %s", a.User, a.Session, a.ID, what))
			}
		}
	}
	return v, nil
}

// listMessages returns the contents of a session's messages by id,
// reading every page.
func (c *loadClient) listMessages(ctx context.Context, user, session string) (map[string]string, error) {
	out := map[string]string{}
	after := ""
	for {
		q := url.Values{"limit": {fmt.Sprint(verifyPageSize)}}
		if after != "" {
			q.Set("after", after)
		}
		b, err := c.get(ctx, sessionPath(user, session)+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		var page struct {
			Messages []struct {
				ID      string `json:"id"`
				Content string `json:"content"`
			} `json:"messages"`
			Next string `json:"next"`
		}
		if err := decodeJSON(b, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Messages {
			if _, dup := out[m.ID]; dup {
				return nil, &shapeError{fmt.Sprintf("message %s listed twice", m.ID)}
			}
			out[m.ID] = m.Content
		}
		if page.Next == "" {
			return out, nil
		}
		if page.Next == after {
			return nil, &shapeError{"the listing's next cursor does not advance"}
		}
		after = page.Next
	}
}

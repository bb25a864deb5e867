package mcpserver

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// inflight counts the requests a stdio client has sent and the server has
// not answered yet, by id, so that the end of the input can wait for their
// answers. It is safe for concurrent use: the filter reads on the SDK's
// reading goroutine, and answers are written from the handlers'. A nil
// *inflight records nothing and never waits.
type inflight struct {
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[jsonrpc.ID]int
	// broken is set when a write failed: no answer can come any more.
	broken bool
}

func newInflight() *inflight {
	fl := &inflight{ids: map[jsonrpc.ID]int{}}
	fl.cond = sync.NewCond(&fl.mu)
	return fl
}

// read records the requests of a payload (a message or a batch) the
// filter passes on, and forgets those a notifications/cancelled names:
// the server need not answer a cancelled request.
func (fl *inflight) read(payload []byte) {
	if fl == nil {
		return
	}
	for _, m := range messages(payload) {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.IsCall() {
			fl.update(req.ID, 1)
			continue
		}
		if req.Method == "notifications/cancelled" {
			var params struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &params) != nil {
				continue
			}
			if id, err := jsonrpc.MakeID(params.RequestID); err == nil {
				fl.update(id, -1)
			}
		}
	}
}

// answered forgets the requests a written payload answers.
func (fl *inflight) answered(payload []byte) {
	if fl == nil {
		return
	}
	for _, m := range messages(payload) {
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID.IsValid() {
			fl.update(resp.ID, -1)
		}
	}
}

// update adds delta to the count of requests with id, never below zero,
// and wakes wait when none is left.
func (fl *inflight) update(id jsonrpc.ID, delta int) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if n := fl.ids[id] + delta; n > 0 {
		fl.ids[id] = n
	} else {
		delete(fl.ids, id)
	}
	if len(fl.ids) == 0 {
		fl.cond.Broadcast()
	}
}

// fail records that the output failed, and wakes wait.
func (fl *inflight) fail() {
	if fl == nil {
		return
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.broken = true
	fl.cond.Broadcast()
}

// wait returns once every request recorded has been answered, or the
// output has failed.
func (fl *inflight) wait() {
	if fl == nil {
		return
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for len(fl.ids) > 0 && !fl.broken {
		fl.cond.Wait()
	}
}

// messages decodes a payload, a JSON-RPC message or a batch of them,
// leaving out what does not decode.
func messages(payload []byte) []jsonrpc.Message {
	payload = bytes.TrimSpace(payload)
	if len(payload) > 0 && payload[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(payload, &batch) != nil {
			return nil
		}
		var out []jsonrpc.Message
		for _, raw := range batch {
			if m, err := jsonrpc.DecodeMessage(raw); err == nil {
				out = append(out, m)
			}
		}
		return out
	}
	if m, err := jsonrpc.DecodeMessage(payload); err == nil {
		return []jsonrpc.Message{m}
	}
	return nil
}

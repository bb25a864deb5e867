package mcpserver

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// inflight holds the ids of the requests a stdio client has sent and the
// server has not answered yet, so that the end of the input can wait for their
// answers. It is safe for concurrent use: the filter reads on the SDK's
// reading goroutine, and answers are written from the handlers'. A nil
// *inflight records nothing and never waits.
type inflight struct {
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[jsonrpc.ID]bool
	// broken is set when a write failed: no answer can come any more.
	broken bool
}

func newInflight() *inflight {
	fl := &inflight{ids: map[jsonrpc.ID]bool{}}
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
			fl.update(req.ID, true)
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
				fl.update(id, false)
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
			fl.update(resp.ID, false)
		}
	}
}

// update records that the request id is in flight or not, and wakes
// wait when none is left. An id is held once however often it is sent:
// the SDK does not answer a request whose id is already in flight (it
// cannot tell the two answers apart), so one answer settles it.
func (fl *inflight) update(id jsonrpc.ID, inFlight bool) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if inFlight {
		fl.ids[id] = true
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

package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

func TestSyntheticTurns(t *testing.T) {
	a, b := SyntheticTurns(100, 7), SyntheticTurns(100, 7)
	if len(a) != 100 || !reflect.DeepEqual(a, b) {
		t.Fatal("SyntheticTurns is not deterministic for a seed")
	}
	if reflect.DeepEqual(a, SyntheticTurns(100, 8)) {
		t.Error("two seeds gave the same conversation")
	}
	for i, tu := range a {
		want := memory.RoleUser
		if i%2 == 1 {
			want = memory.RoleAssistant
		}
		if tu.Message.Role != want || tu.Message.Content == "" || tu.User == "" || tu.Session == "" {
			t.Fatalf("turn %d = %+v", i, tu)
		}
	}
}

func TestLocomoTurns(t *testing.T) {
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	samples := []LocomoSample{{ID: "conv-1", Speakers: [2]string{"Caroline", "Melanie"}, Sessions: []LocomoSession{
		{N: 1, Time: day, Turns: []LocomoTurn{
			{Speaker: "Caroline", DiaID: "D1:1", Text: "I went to a support group yesterday."},
			{Speaker: "Melanie", DiaID: "D1:2", Text: "", Caption: "a photo of a lake"},
			{Speaker: "Melanie", DiaID: "D1:3", Text: ""},
		}},
	}}}
	got := LocomoTurns(samples)
	want := []ExtractTurn{
		{User: "conv-1", Session: "session_1", Message: memory.Message{Role: memory.RoleUser, Name: "Caroline",
			Content: "I went to a support group yesterday.", Time: day}},
		{User: "conv-1", Session: "session_1", Message: memory.Message{Role: memory.RoleAssistant, Name: "Melanie",
			Content: " [image: a photo of a lake]", Time: day.Add(time.Second)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LocomoTurns = %+v\nwant %+v", got, want)
	}
}

package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Count(0, "fact"), "0 facts"},
		{Count(1, "fact"), "1 fact"},
		{Count(2, "fact"), "2 facts"},
		{Count(-1, "fact"), "-1 fact"},
		{Count(int64(1), "memory"), "1 memory"},
		{Count(int64(3), "memory"), "3 memories"},
		{Count(2, "entity"), "2 entities"},
		{Count(2, "day"), "2 days"},
		{Count(2, "batch"), "2 batches"},
		{Count(2, "address"), "2 addresses"},
		{Count(5, "parked extraction job"), "5 parked extraction jobs"},
		{Count(1, "parked extraction job"), "1 parked extraction job"},
		{Count(uint(2), "token"), "2 tokens"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

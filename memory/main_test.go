package memory

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if runCrashChild() || runExtractCrashChild() || runExtractRepeatChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

package kv

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if runHelperProcess() || runDiskFullChild() || runCrashChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

package embed

import "time"

// SetStallTimeout sets how long a download of [Pull] may go without a
// byte, for tests that must not wait the default two minutes.
func SetStallTimeout(o *PullOptions, d time.Duration) { o.stallTimeout = d }

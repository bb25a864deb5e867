package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// fsyncBlock is what the probe writes before each fsync: one page, about
// the size of a small commit of the store (an appended message and its
// index entries).
const fsyncBlock = 4096

// fsyncFileBlocks is how many blocks each probe file holds (1 MiB).
const fsyncFileBlocks = 256

// FsyncRate is what [ProbeFsync] measured: how many write-and-fsync
// rounds a number of writers completed together, each on its own file.
type FsyncRate struct {
	// Writers is how many goroutines wrote at once, each to its own file.
	Writers int
	// Fsyncs is how many rounds of a 4 KiB write and an fsync they
	// completed, all writers together, in Elapsed, the probe's wall time.
	Fsyncs  int
	Elapsed time.Duration
	// PerSecond is Fsyncs over Elapsed.
	PerSecond float64
	// P50 and P99 are the latencies of one round (write and fsync), over
	// all writers.
	P50, P99 time.Duration
}

// ProbeFsync measures the disk under dir the way a store's commits use it:
// writers goroutines each write a file of their own, in a new directory
// under dir, and for duration write 4 KiB to it and fsync it, one round
// after another. It removes the files afterwards and returns the rounds
// completed per second, all writers together. One writer gives the
// disk's serial fsync rate (the cost of one synced commit that shares its
// fsync with nobody); many show how far the disk overlaps fsyncs of
// different files, the most group commit could gain.
//
// Each file is written whole (1 MiB) and synced before the clock starts,
// and the rounds overwrite its 4 KiB blocks in turn: the store's logs are
// preallocated files too (Badger's memtable WAL and value log are sized
// when created), so a commit's fsync flushes data, not new block
// allocations. Appending instead would measure the filesystem's
// allocation too: on the ext4 development VM, one writer appending
// managed 800-3,600 fsyncs/s against 4,900-9,300 overwriting, in
// alternating 2 s trials.
//
// ProbeFsync returns an error if a file cannot be created, written or
// synced, or wrapping [ErrInvalidOptions] for writers or duration below
// 1; it stops early, with ctx's error, when ctx ends.
func ProbeFsync(ctx context.Context, dir string, writers int, duration time.Duration) (FsyncRate, error) {
	if writers < 1 || duration <= 0 {
		return FsyncRate{}, fmt.Errorf("%w: fsync probe of %d writers for %v", ErrInvalidOptions, writers, duration)
	}
	probeDir, err := os.MkdirTemp(dir, "fsync-probe-*")
	if err != nil {
		return FsyncRate{}, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.RemoveAll(probeDir)
	files := make([]*os.File, writers)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	block := make([]byte, fsyncBlock)
	for i := range block {
		block[i] = byte(i*7 + 1) // not zeros, in case the filesystem treats them apart
	}
	for i := range files {
		if files[i], err = os.Create(filepath.Join(probeDir, "w"+strconv.Itoa(i))); err != nil {
			return FsyncRate{}, fmt.Errorf("fsync probe: %w", err)
		}
		for range fsyncFileBlocks {
			if _, err := files[i].Write(block); err != nil {
				return FsyncRate{}, fmt.Errorf("fsync probe: %w", err)
			}
		}
		if err := files[i].Sync(); err != nil {
			return FsyncRate{}, fmt.Errorf("fsync probe: %w", err)
		}
	}

	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	began := time.Now()
	deadline := began.Add(duration)
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				start := time.Now()
				if _, err := f.WriteAt(block, int64(n%fsyncFileBlocks)*fsyncBlock); err != nil {
					errs[i] = err
					return
				}
				if err := f.Sync(); err != nil {
					errs[i] = err
					return
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return FsyncRate{}, fmt.Errorf("fsync probe: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return FsyncRate{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return FsyncRate{
		Writers: writers, Fsyncs: len(all), Elapsed: elapsed,
		PerSecond: float64(len(all)) / elapsed.Seconds(),
		P50:       percentile(all, 50), P99: percentile(all, 99),
	}, nil
}

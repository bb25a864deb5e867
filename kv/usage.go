package kv

import (
	"io/fs"
	"path/filepath"
)

// Usage is what a store's files take on disk.
type Usage struct {
	// Total is every file under the directory, counted in allocated
	// blocks where the platform says, so a preallocated file that is mostly
	// holes (an open value log or memtable) counts what it holds.
	Total int64
	// LSM is the tables (.sst), VLog the value log (.vlog), both counted
	// as Total counts.
	LSM, VLog int64
}

// DiskUsage walks the files under dir, a store's directory, open or not.
// A file removed meanwhile (by a compaction) is skipped.
func DiskUsage(dir string) Usage {
	var u Usage
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		n := allocated(fi)
		u.Total += n
		switch filepath.Ext(path) {
		case ".sst":
			u.LSM += n
		case ".vlog":
			u.VLog += n
		}
		return nil
	})
	return u
}
